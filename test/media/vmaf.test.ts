// The VMAF scorer (encoder-node/vmaf.ts) against Netflix's own vmaf tool, on clips made here the same
// way every time, before anything relies on it.
//
// Reference values: Netflix's `vmaf` command (libvmaf v3.2.0 from Netflix's repository, built with
// meson and ninja from PyPI, asm off) run on the same clips as raw frames: the distorted ones decoded
// (and, for half.mp4, scaled to 640x360 with bicubic) to y4m by the scorer's ffmpeg, then
// `vmaf -r ref.y4m -d <dis>.y4m -m version=vmaf_v0.6.1 --json --threads 1 [--subsample 5]`.
// That build first reproduced Netflix's published values on its own test clips (src01_hrc00/01
// 576x324, 10-bit: 82.564227 and 99.142826 in python/test/vmafexec_test.py), and so does the
// libvmaf in the scorer's ffmpeg (86da14d), to the log's 6 decimals.
// Tolerance 0.01: both sides run libvmaf's integer features, which are bit-exact across builds and
// SIMD paths, so they agree to the printed 1e-6; 0.01 leaves room for a libvmaf update's last digits,
// while each fault tried moved same.mp4 or half.mp4 by far more: a frame off 48 points, reference and
// distorted swapped 2.8, lanczos in place of bicubic 0.7.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MediaError } from "../../encoder-node/media-errors.js";
import { scoreVmaf, vmafBinary, type VmafRequest, type VmafScore } from "../../encoder-node/vmaf.js";

const exec = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), "vmaf-spec-"));
const at = (file: string) => path.join(dir, file);

// 3 s of a moving pattern with seeded noise (texture x264 has to spend bits on), and encodes of it.
// The pinned ffmpeg, one thread everywhere and bit-exact SIMD make the same bytes on any x86_64: checked
// first, so a drift fails as a clip, not as a score.
const x264 = (crf: number) => ["-c:v", "libx264", "-threads", "1", "-preset", "veryfast", "-crf", String(crf)];
const CLIPS: Record<string, { args: string[]; sha256: string }> = {
  "ref.y4m": {
    args: ["-f", "lavfi", "-i", "testsrc2=s=640x360:r=24:d=3,noise=alls=12:allf=t+u:all_seed=7", "-pix_fmt", "yuv420p"],
    sha256: "5a936f03d03290a2d4a42ded0c19f4dc7afd92459b32fd3603059dab4b0ea979",
  },
  "same.mp4": { args: ["-i", at("ref.y4m"), ...x264(32)], sha256: "b0772eb53aa3b6be1b3b4c0eaa06f9d1b81d64b52f8be10674a8bc2c002b468b" },
  "half.mp4": {
    args: ["-i", at("ref.y4m"), "-vf", "scale=320:180:flags=bilinear", ...x264(28)],
    sha256: "d1dffc5441d8c07933d20eb131a452a6e46cedd6aa3526da35bf92ad3dde375f",
  },
  "heavy.mp4": { args: ["-i", at("ref.y4m"), ...x264(45)], sha256: "80db879cee9b202318779cba2f065c83d8e5046bf2137feab687babf3d052eeb" },
  "seg.mp4": { args: ["-ss", "1", "-t", "1", "-i", at("ref.y4m"), ...x264(32)], sha256: "b212dabadec55affdf15d41e8755deb0bf58719d6b8057f419a3e4630a39448a" },
};

/** Netflix's vmaf v3.2.0 on the same frames (see the top): pooled mean, min, harmonic mean, frames scored. */
const REFERENCE = {
  same: { mean: 85.006285, min: 81.130179, harmonicMean: 84.983678, frames: 72 },
  half: { mean: 65.003095, min: 61.622101, harmonicMean: 64.984107, frames: 72 },
  heavy: { mean: 45.724158, min: 39.993989, harmonicMean: 45.588355, frames: 72 },
  segment: { mean: 83.923915, min: 81.681695, harmonicMean: 83.898786, frames: 24 },
  sameEvery5th: { mean: 85.016066, min: 82.633179, harmonicMean: 84.996292, frames: 15 },
};
const TOLERANCE = 0.01;

const score = (distorted: string, more: Partial<VmafRequest> = {}) =>
  scoreVmaf({ reference: at("ref.y4m"), distorted: at(distorted), width: 640, height: 360, threads: 2, ...more });

function expectReference(got: VmafScore, want: (typeof REFERENCE)[keyof typeof REFERENCE]): void {
  expect(got.frames).toHaveLength(want.frames);
  expect(Math.abs(got.mean - want.mean)).toBeLessThanOrEqual(TOLERANCE);
  expect(Math.abs(got.min - want.min)).toBeLessThanOrEqual(TOLERANCE);
  expect(Math.abs(got.harmonicMean - want.harmonicMean)).toBeLessThanOrEqual(TOLERANCE);
}

describe("scoreVmaf", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    const ffmpeg = vmafBinary();
    for (const [file, clip] of Object.entries(CLIPS)) {
      const flags = ["-fflags", "+bitexact", "-flags:v", "+bitexact", "-filter_threads", "1"];
      await exec(ffmpeg, ["-hide_banner", "-nostdin", "-loglevel", "error", "-y", ...clip.args, ...flags, at(file)]);
    }
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("makes the clips the reference values were computed on", () => {
    for (const [file, clip] of Object.entries(CLIPS))
      expect(
        createHash("sha256")
          .update(readFileSync(at(file)))
          .digest("hex"),
        file,
      ).toBe(clip.sha256);
  });

  it("agrees with Netflix's vmaf at the same size, and on a lower-resolution encode scaled up with bicubic", async () => {
    const same = await score("same.mp4");
    expectReference(same, REFERENCE.same);
    expect(same.version).toMatch(/^([0-9a-f]{7,}|\d+\.\d+\.\d+)/);
    expectReference(await score("half.mp4"), REFERENCE.half);
  });

  it("agrees on a heavier distortion, which scores lower", async () => {
    const heavy = await score("heavy.mp4");
    expectReference(heavy, REFERENCE.heavy);
    expect(heavy.mean).toBeLessThan(REFERENCE.half.mean - 10);
  });

  it("scores an encode of a segment against that segment of the reference", async () => {
    expectReference(await score("seg.mp4", { referenceSegment: { start: 1, duration: 1 } }), REFERENCE.segment);
    const misaligned = await score("seg.mp4", { referenceSegment: { start: 0, duration: 1 } });
    expect(misaligned.mean).toBeLessThan(REFERENCE.segment.mean - 20);
  });

  it("scores every 5th frame with subsample 5", async () => {
    expectReference(await score("same.mp4", { subsample: 5 }), REFERENCE.sameEvery5th);
  });

  it("gives identical clips 100, but 97.43 on the first frame, where vmaf_v0.6.1 sees no motion", async () => {
    const identical = await score("ref.y4m");
    expect(identical.frames[0]).toBeCloseTo(97.428, 2);
    expect(identical.frames.slice(1).every((s) => s === 100)).toBe(true);
    expect(identical.mean).toBeGreaterThan(99.9);
  });

  it("stops on abort, and names the setup script when the scorer is missing", async () => {
    const stop = new AbortController();
    const run = score("same.mp4", { signal: stop.signal });
    setTimeout(() => stop.abort(), 50);
    await expect(run).rejects.toSatisfy((e: unknown) => e instanceof MediaError && e.code === "canceled");
    expect(() => vmafBinary({ MEDIA_VMAF_FFMPEG: at("nowhere") })).toThrow(/vmaf-setup\.sh/);
  });
});
