// The codec read from a segment's first bytes (encoder-node/codec-sniff.ts) against ffprobe's on
// the same segments, as the master writes it: H.264 in ts and fMP4 over profiles and levels, AAC in
// ts; what it cannot read exactly (HEVC, audio in fMP4, a file that is not media) it leaves to ffprobe.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { sniffStreamCodec } from "../../encoder-node/codec-sniff.js";
import { codecString } from "../../encoder-node/ffmpeg.js";
import { probeStreamCodec } from "../../encoder-node/probe.js";

const exec = promisify(execFile);
const dir = mkdtempSync(path.join(tmpdir(), "codec-sniff-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One HLS segment (and the init segment, for fMP4) of a short encode; returns the files ffprobe and the sniffer read. */
async function segment(name: string, args: string[], fmp4: boolean): Promise<{ sniffed: string; probed: string }> {
  const out = path.join(dir, name);
  await exec("mkdir", ["-p", out]);
  await exec("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y"],
    ...["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=1"],
    ...["-f", "lavfi", "-i", "sine=frequency=440:duration=1"],
    ...args,
    ...["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod"],
    ...(fmp4 ? ["-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4"] : []),
    ...["-hls_segment_filename", path.join(out, `seg_%03d.${fmp4 ? "m4s" : "ts"}`), path.join(out, "index.m3u8")],
  ]);
  const first = path.join(out, `seg_000.${fmp4 ? "m4s" : "ts"}`);
  return fmp4 ? { sniffed: path.join(out, "init.mp4"), probed: `concat:${path.join(out, "init.mp4")}|${first}` } : { sniffed: first, probed: first };
}

const H264 = (profile: string, level: string, extra: string[] = []) => ["-map", "0:v", "-c:v", "libx264", "-profile:v", profile, "-level:v", level, ...extra];

const CASES: { name: string; args: string[]; fmp4: boolean; readable: boolean }[] = [
  { name: "h264 baseline 3.0, ts", args: H264("baseline", "3.0"), fmp4: false, readable: true },
  { name: "h264 main 3.1, ts", args: H264("main", "3.1"), fmp4: false, readable: true },
  { name: "h264 high 4.0, ts", args: H264("high", "4.0"), fmp4: false, readable: true },
  { name: "h264 high 10 4.1, ts", args: H264("high10", "4.1", ["-pix_fmt", "yuv420p10le"]), fmp4: false, readable: true },
  { name: "h264 high 3.0, fMP4", args: H264("high", "3.0"), fmp4: true, readable: true },
  { name: "h264 main 4.2, fMP4", args: H264("main", "4.2"), fmp4: true, readable: true },
  { name: "aac, ts", args: ["-map", "1:a", "-c:a", "aac", "-b:a", "96k"], fmp4: false, readable: true },
  { name: "hevc, ts", args: ["-map", "0:v", "-c:v", "libx265", "-x265-params", "log-level=error"], fmp4: false, readable: false },
  { name: "aac, fMP4", args: ["-map", "1:a", "-c:a", "aac"], fmp4: true, readable: false },
];

describe("a segment's codec read from its first bytes", { timeout: 60_000 }, () => {
  for (const c of CASES) {
    it(`${c.name}: ${c.readable ? "the same codec string as ffprobe's" : "left to ffprobe"}`, async () => {
      const files = await segment(c.name.replace(/\W+/g, "-"), c.args, c.fmp4);
      const sniffed = await sniffStreamCodec(files.sniffed);
      if (!c.readable) return expect(sniffed).toBeUndefined();
      expect(sniffed).toBeDefined();
      expect(codecString(sniffed!, c.fmp4)).toBe(codecString(await probeStreamCodec(files.probed), c.fmp4));
    });
  }

  it("reads nothing from what is not a segment", async () => {
    const file = path.join(dir, "not-media.ts");
    writeFileSync(file, Buffer.alloc(4096, 0x47));
    expect(await sniffStreamCodec(file)).toBeUndefined();
    writeFileSync(file, "");
    expect(await sniffStreamCodec(file)).toBeUndefined();
  });
});
