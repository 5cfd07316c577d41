// The VMAF scorer (encoder-node/vmaf.ts) against Netflix's own vmaf tool, on clips made here the same
// way on every machine, before anything relies on it.
//
// Reference values: Netflix's `vmaf` command (libvmaf v3.2.0 from Netflix's repository, built with
// meson and ninja from PyPI, asm off) run on the same clips as raw frames: the distorted ones decoded
// (and, for half.mp4, scaled to 640x360 with bicubic) to y4m by the scorer's ffmpeg with
// `-cpuflags 0`, then `vmaf -r ref.y4m -d <dis>.y4m -m version=vmaf_v0.6.1 --json --threads 1
// [--subsample 5]`. That build first reproduced Netflix's published values on its own test clips
// (src01_hrc00/01 576x324, 10-bit: 82.564227 and 99.142826 in python/test/vmafexec_test.py), and so
// does the libvmaf in the scorer's ffmpeg (86da14d), to the log's 6 decimals.
//
// Any processor: the clips are made with `-cpuflags 0`, FFmpeg's C code, which is the same on every
// machine (swscale's SIMD is not bit-exact: half.mp4 scaled with it differed between an Intel and an
// AMD machine), and they are pinned by their decoded frames, not their container bytes.
// Tolerance 0.01 at the same size: both sides run libvmaf's integer features, which are bit-exact
// across builds and SIMD paths, so they agree to the printed 1e-6. 0.05 where the scorer scales the
// distorted clip up: its bicubic runs the processor's SIMD, which moved Netflix's score of half.mp4 by
// 0.026 against the C path on an AMD EPYC. Each fault tried moved same.mp4 or half.mp4 by far more: a
// frame off 48 points, reference and distorted swapped 2.8, lanczos in place of bicubic 0.7.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
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
// The pinned ffmpeg, FFmpeg's C code, one thread everywhere and one set of x264's SIMD make the same
// frames on any x86_64: checked first (sha256 of their framemd5), so a drift fails as a clip, not as
// a score. x264's SIMD is not bit-exact across instruction sets: on an AMD EPYC with AVX-512,
// half.mp4 came out different, and x264's C code or SSE2 alone differ again from SSE4.2, AVX2 and
// their machines. So x264 gets the x86-64-v2 set (SSE to SSE4.2), which reproduces the clips the
// reference values were computed on and which every x86_64 server since 2009 has.
const X264_V2 = [0, 1, 2, 3, 5, 6, 7, 8].reduce((mask, bit) => mask | (1 << bit), 0) | (1 << 18) | (1 << 20); // x264.h's X264_CPU_ bits: MMX to SSE42 (LZCNT left out), CACHELINE_64, SSE2_IS_FAST
const x264 = (crf: number) => ["-c:v", "libx264", "-threads", "1", "-preset", "veryfast", "-x264-params", `asm=${X264_V2}`, "-crf", String(crf)];
const CLIPS: Record<string, { args: string[]; frames: string }> = {
  "ref.y4m": {
    args: ["-f", "lavfi", "-i", "testsrc2=s=640x360:r=24:d=3,noise=alls=12:allf=t+u:all_seed=7", "-pix_fmt", "yuv420p"],
    frames: "1b6d36242fbedfc163b9986c2a7e196d6261b9faa3533279e21a084985ebbf62",
  },
  "same.mp4": { args: ["-i", at("ref.y4m"), ...x264(32)], frames: "0424948c2b54c1802839205c41cd07ceeda2cef68f4c26d1afb297901eb2a994" },
  "half.mp4": {
    args: ["-i", at("ref.y4m"), "-vf", "scale=320:180:flags=bilinear", ...x264(28)],
    frames: "2ae266efb95774f3af2ff375e696fe1c361726b01487d31788c44bfd32ec6d7a",
  },
  "heavy.mp4": { args: ["-i", at("ref.y4m"), ...x264(45)], frames: "e9ff1dfe72c405cd65211e9ecce75561f15ea7cc4b26529ac4316c2ccd88a7e9" },
  "seg.mp4": { args: ["-ss", "1", "-t", "1", "-i", at("ref.y4m"), ...x264(32)], frames: "3d5654630ec808433e7fccdbe401aa90fb3007b3587e196e70860ae009e38df9" },
};

/** Netflix's vmaf v3.2.0 on the same frames (see the top): pooled mean, min, harmonic mean, frames scored. */
const REFERENCE = {
  same: { mean: 85.006285, min: 81.130179, harmonicMean: 84.983678, frames: 72 },
  half: { mean: 64.710167, min: 61.506562, harmonicMean: 64.685874, frames: 72 },
  heavy: { mean: 45.724158, min: 39.993989, harmonicMean: 45.588355, frames: 72 },
  segment: { mean: 83.923915, min: 81.681695, harmonicMean: 83.898786, frames: 24 },
  sameEvery5th: { mean: 85.016066, min: 82.633179, harmonicMean: 84.996292, frames: 15 },
};
const TOLERANCE = 0.01;
const SCALED_TOLERANCE = 0.05;

const score = (distorted: string, more: Partial<VmafRequest> = {}) =>
  scoreVmaf({ reference: at("ref.y4m"), distorted: at(distorted), width: 640, height: 360, threads: 2, ...more });

function expectReference(got: VmafScore, want: (typeof REFERENCE)[keyof typeof REFERENCE], tolerance = TOLERANCE): void {
  expect(got.frames).toHaveLength(want.frames);
  expect(Math.abs(got.mean - want.mean)).toBeLessThanOrEqual(tolerance);
  expect(Math.abs(got.min - want.min)).toBeLessThanOrEqual(tolerance);
  expect(Math.abs(got.harmonicMean - want.harmonicMean)).toBeLessThanOrEqual(tolerance);
}

/** sha256 of a clip's decoded frames (ffmpeg's framemd5 lines, comments left out). */
async function framesOf(file: string): Promise<string> {
  const { stdout } = await exec(vmafBinary(), ["-hide_banner", "-nostdin", "-loglevel", "error", "-cpuflags", "0", "-i", file, "-f", "framemd5", "-"], {
    maxBuffer: 16 * 1024 * 1024,
  });
  const lines = stdout.split("\n").filter((l) => l !== "" && !l.startsWith("#"));
  return createHash("sha256")
    .update(lines.map((l) => `${l}\n`).join(""))
    .digest("hex");
}

describe("scoreVmaf", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    // x264 told to use instructions the processor lacks would stop on an illegal instruction.
    if (process.arch === "x64" && existsSync("/proc/cpuinfo")) {
      const flags = new Set(/^flags\s*:(.*)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]?.trim().split(/\s+/));
      const lacking = ["pni", "ssse3", "sse4_1", "sse4_2"].filter((f) => !flags.has(f));
      if (lacking.length > 0) throw new Error(`the clips are made with x86-64-v2 instructions; this processor lacks ${lacking.join(", ")}`);
    }
    const ffmpeg = vmafBinary();
    for (const [file, clip] of Object.entries(CLIPS)) {
      const flags = ["-fflags", "+bitexact", "-flags:v", "+bitexact", "-filter_threads", "1"];
      await exec(ffmpeg, ["-hide_banner", "-nostdin", "-loglevel", "error", "-cpuflags", "0", "-y", ...clip.args, ...flags, at(file)]);
    }
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("makes the clips the reference values were computed on", async () => {
    for (const [file, clip] of Object.entries(CLIPS)) expect(await framesOf(at(file)), file).toBe(clip.frames);
  });

  it("agrees with Netflix's vmaf at the same size, and on a lower-resolution encode scaled up with bicubic", async () => {
    const same = await score("same.mp4");
    expectReference(same, REFERENCE.same);
    expect(same.version).toMatch(/^([0-9a-f]{7,}|\d+\.\d+\.\d+)/);
    expectReference(await score("half.mp4"), REFERENCE.half, SCALED_TOLERANCE);
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
