// probe over real files: a generated clip, an audio-only file, a corrupt file and a missing one.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probe, probeStreamCodec } from "../../encoder-node/probe.js";
import { makeTestInput } from "../media.js";

const exec = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), "probe-spec-"));
const clip = path.join(dir, "clip.mp4");

/** Writes a 90° display matrix into the (version 0) tkhd box: ffmpeg 5.1 has no option for it. */
function rotate90(mp4: Buffer): Buffer {
  const at = mp4.indexOf("tkhd", 0, "latin1");
  if (at < 0 || mp4[at + 4] !== 0) throw new Error("no version 0 tkhd box");
  const matrix = at + 4 + 4 + 4 * 5 + 8 + 8;
  [0, 0x00010000, 0, -0x00010000, 0, 0, 0, 0, 0x40000000].forEach((v, i) => mp4.writeInt32BE(v, matrix + i * 4));
  return mp4;
}

describe("probe", { timeout: 30_000 }, () => {
  beforeAll(async () => {
    await makeTestInput(clip, { seconds: 2, width: 320, height: 240, fps: 25, audio: true, extraAudioStreams: 1 });
  }, 30_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reports container, duration, size and the first video and audio streams", async () => {
    const r = await probe(clip);
    expect(r.format).toContain("mp4");
    expect(r.durationMs).toBeGreaterThan(1900);
    expect(r.durationMs).toBeLessThan(2200);
    expect(r.sizeBytes).toBe(readFileSync(clip).length);
    expect(r.bitRate).toBeGreaterThan(0);
    expect(r.video).toMatchObject({ codec: "h264", width: 320, height: 240, frameRate: 25, pixelFormat: "yuv420p" });
    expect(r.video!.bitRate).toBeGreaterThan(0);
    expect(r.video!.sampleAspectRatio).toBeUndefined();
    expect(r.audio).toMatchObject({ codec: "aac", sampleRate: 48000, channels: 2, channelLayout: "stereo" });
    expect(r.audioStreams).toBe(2);
  });

  it("reads an audio-only file, non-square pixels and rotation", async () => {
    const audio = path.join(dir, "tone.m4a");
    await exec("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "sine=d=1", "-c:a", "aac", audio]);
    const a = await probe(audio);
    expect(a.video).toBeUndefined();
    expect(a.audio?.codec).toBe("aac");
    const odd = path.join(dir, "odd.mp4");
    await exec("ffmpeg", [
      "-v",
      "error",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=s=352x288:d=0.5",
      "-vf",
      "setsar=12/11",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      odd,
    ]);
    writeFileSync(odd, rotate90(readFileSync(odd)));
    const v = (await probe(odd)).video!;
    expect(v.sampleAspectRatio).toBeCloseTo(12 / 11, 3);
    expect(Math.abs(v.rotation ?? 0)).toBe(90);
  });

  it("calls a corrupt or non-media file input_invalid and a missing file input_unreachable", async () => {
    const garbage = path.join(dir, "garbage");
    writeFileSync(garbage, Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => (i * 7919) % 256)));
    await expect(probe(garbage)).rejects.toMatchObject({ name: "MediaError", code: "input_invalid" });
    // The first 20 KB of an mp4 whose index (moov) is at the end.
    const truncated = path.join(dir, "truncated.mp4");
    await exec("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=d=1", "-c:v", "libx264", "-preset", "ultrafast", path.join(dir, "whole.mp4")]);
    writeFileSync(truncated, readFileSync(path.join(dir, "whole.mp4")).subarray(0, 20_000));
    await expect(probe(truncated)).rejects.toMatchObject({ code: "input_invalid" });
    await expect(probe(path.join(dir, "nothing-here.mp4"))).rejects.toMatchObject({ code: "input_unreachable" });
  });

  it("stops on abort", async () => {
    const c = new AbortController();
    c.abort();
    await expect(probe(clip, c.signal)).rejects.toMatchObject({ code: "canceled" });
  });

  it("reads the codec details of an encoded stream", async () => {
    expect(await probeStreamCodec(clip)).toMatchObject({ codec: "h264", pixelFormat: "yuv420p" });
  });
});
