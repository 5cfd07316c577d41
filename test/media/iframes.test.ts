// I-frame playlists (hls.iframe_playlists), on real encodes: ts with several key frames per
// segment, fMP4 in one file addressed by byte ranges, and cbcs-encrypted CMAF. Each master and
// I-frame playlist is parsed by hls-parser in strict mode (an outside reader of RFC 8216); every
// byte range must decode, alone (ts) or after its init segment (fMP4), as a key frame in ffprobe;
// the playlist lists exactly the stream's key frames, at their times. The encrypted ranges carry
// their fragment's sample encryption; test/browser/iframes.test.ts plays them in Shaka.
import { create } from "@bufbuild/protobuf";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import * as HLS from "hls-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPlan } from "../../encoder-node/ffmpeg.js";
import { planOutput, type OutputPlan } from "../../encoder-node/plan.js";
import { probe, type ProbeResult } from "../../encoder-node/probe.js";
import type { ContentKey, TrackClass } from "../../src/drm/types.js";
import { DrmSystem, OutputSpecSchema, OutputType, type OutputSpec } from "../../src/gen/media/v1/job_pb.js";
import { SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { makeTestInput } from "../media.js";

const exec = promisify(execFile);
const root = mkdtempSync(path.join(tmpdir(), "iframes-"));
let input: { file: string; probe: ProbeResult };
let n = 0;
const spec = (init: Parameters<typeof create<typeof OutputSpecSchema>>[1]): OutputSpec => create(OutputSpecSchema, init);
const hex = () => randomBytes(16).toString("hex");
const keys: ContentKey[] = (["audio", "sd", "hd"] as TrackClass[]).map((trackClass) => ({ trackClass, kid: hex(), key: hex() }));

HLS.setOptions({ strictMode: true, silent: true });

async function encode(s: OutputSpec): Promise<OutputPlan> {
  const plan = planOutput(s, input, { outputId: `out_${++n}`, workDir: path.join(root, `out_${n}`) });
  await runPlan(plan, { keys });
  return plan;
}

const text = (plan: OutputPlan, file: string) => readFileSync(path.join(plan.dir, file), "utf8");

/** The master's I-frame variants, read strictly. */
function iframeVariants(plan: OutputPlan): HLS.types.Variant[] {
  const master = HLS.parse(text(plan, plan.main));
  if (!master.isMasterPlaylist) throw new Error("not a master playlist");
  return master.variants.filter((v) => v.isIFrameOnly);
}

interface Range {
  uri: string;
  offset: number;
  length: number;
  duration: number;
}

/** An I-frame playlist read strictly: its ranges, and its init section's bytes (fMP4). */
function iframePlaylist(plan: OutputPlan, uri: string): { ranges: Range[]; init?: Buffer; playlist: HLS.types.MediaPlaylist } {
  const playlist = HLS.parse(text(plan, uri));
  if (playlist.isMasterPlaylist || !playlist.isIFrame) throw new Error(`${uri} is not an I-frame playlist`);
  const base = path.dirname(path.join(plan.dir, uri));
  const ranges = playlist.segments.map((s) => ({
    uri: path.join(base, s.uri),
    offset: s.byterange!.offset!,
    length: s.byterange!.length,
    duration: s.duration,
  }));
  const map = playlist.segments[0]?.map;
  let init: Buffer | undefined;
  if (map) {
    const whole = readFileSync(path.join(base, map.uri));
    init = map.byterange ? whole.subarray(map.byterange.offset!, map.byterange.offset! + map.byterange.length) : whole;
  }
  return { ranges, playlist, ...(init ? { init } : {}) };
}

/** The first video frame ffprobe decodes from a file: key or not, and its picture type. */
async function firstFrame(file: string): Promise<{ key: boolean; type: string }> {
  const { stdout } = await exec("ffprobe", [
    "-v",
    "error",
    "-select_streams",
    "v:0",
    "-show_entries",
    "frame=key_frame,pict_type",
    "-read_intervals",
    "%+#1",
    "-of",
    "json",
    file,
  ]);
  const frame = (JSON.parse(stdout) as { frames: { key_frame: number; pict_type: string }[] }).frames[0];
  if (!frame) throw new Error(`ffprobe decoded no frame of ${file}`);
  return { key: frame.key_frame === 1, type: frame.pict_type };
}

/** Presentation times of the key frames of a media playlist's stream (its segments joined), from ffprobe. */
async function keyFrameTimes(plan: OutputPlan, playlist: string): Promise<number[]> {
  const media = HLS.parse(text(plan, playlist)) as HLS.types.MediaPlaylist;
  const base = path.dirname(path.join(plan.dir, playlist));
  const files = [...new Set([...(media.segments[0]?.map ? [media.segments[0].map.uri] : []), ...media.segments.map((s) => s.uri)])];
  const joined = path.join(root, `joined_${++n}`);
  writeFileSync(joined, Buffer.concat(files.map((f) => readFileSync(path.join(base, f)))));
  const { stdout } = await exec("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags", "-of", "json", joined], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return (JSON.parse(stdout) as { packets: { pts_time: string; flags: string }[] }).packets
    .filter((p) => p.flags.startsWith("K"))
    .map((p) => Number(p.pts_time));
}

/** Checks every range of an I-frame playlist: it decodes as a key frame; the ranges are the stream's key frames. */
async function checkRanges(plan: OutputPlan, uri: string): Promise<Range[]> {
  const mediaPlaylist = uri.replace("_iframes", "");
  const { ranges, init } = iframePlaylist(plan, uri);
  for (const [i, r] of ranges.entries()) {
    const bytes = readFileSync(r.uri).subarray(r.offset, r.offset + r.length);
    expect(bytes.length, `${uri} range ${i}`).toBe(r.length);
    const file = path.join(root, `range_${n}_${i}.${init ? "mp4" : "ts"}`);
    writeFileSync(file, init ? Buffer.concat([init, bytes]) : bytes);
    expect(await firstFrame(file), `${uri} range ${i} (${r.length}@${r.offset})`).toEqual({ key: true, type: "I" });
    rmSync(file);
  }
  // One entry per key frame, each lasting until the next.
  const times = await keyFrameTimes(plan, mediaPlaylist);
  expect(ranges).toHaveLength(times.length);
  const total = (HLS.parse(text(plan, mediaPlaylist)) as HLS.types.MediaPlaylist).segments.reduce((sum, s) => sum + s.duration, 0);
  ranges.forEach((r, i) => expect(r.duration).toBeCloseTo((times[i + 1] ?? times[0]! + total) - times[i]!, 2));
  return ranges;
}

beforeAll(async () => {
  const file = await makeTestInput(path.join(root, "in.mp4"), { seconds: 6, width: 640, height: 360, fps: 30, audio: true });
  input = { file, probe: await probe(file) };
}, 60_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("I-frame playlists", { timeout: 120_000 }, () => {
  it("ts: a key frame every second in 3 s segments, each range the PAT, PMT and key frame, decodable alone", async () => {
    const plan = await encode(
      spec({
        type: OutputType.HLS,
        hls: { segmentDurationSeconds: 3, iframePlaylists: true },
        video: [
          { codec: VideoCodec.H264, width: 640, height: 360, h264: { encoderPreset: "veryfast", keyint: 30 } },
          { codec: VideoCodec.H264, width: 320, height: 180, h264: { encoderPreset: "veryfast", keyint: 30 } },
        ],
      }),
    );
    const variants = iframeVariants(plan);
    expect(variants.map((v) => [v.uri, v.resolution, v.codecs])).toEqual([
      ["640x360/index_iframes.m3u8", { width: 640, height: 360 }, expect.stringMatching(/^avc1\.[0-9A-F]{6}$/)],
      ["320x180/index_iframes.m3u8", { width: 320, height: 180 }, expect.stringMatching(/^avc1\.[0-9A-F]{6}$/)],
    ]);
    for (const [i, v] of variants.entries()) {
      const ranges = await checkRanges(plan, v.uri);
      expect(ranges).toHaveLength(6);
      // Two key frames in each segment, and ranges inside it: byte ranges, not whole segments.
      expect(new Set(ranges.map((r) => r.uri)).size).toBe(2);
      expect(ranges.filter((r) => r.offset > 0)).toHaveLength(4);
      const { playlist } = iframePlaylist(plan, v.uri);
      // The media playlist's version (ffmpeg's 6), at least the 4 EXT-X-I-FRAMES-ONLY needs.
      expect([playlist.version, playlist.playlistType, playlist.endlist]).toEqual([6, "VOD", true]);
      // BANDWIDTH is the peak of the ranges' bit rates.
      expect(v.bandwidth).toBe(Math.ceil(Math.max(...ranges.map((r) => (r.length * 8) / r.duration))));
      expect(v.bandwidth).toBeLessThan(HLS_BANDWIDTH(plan, i) * 4);
    }
  });

  it("fMP4 in one file per rendition: ranges of moof and key frame after the EXT-X-MAP's init range", async () => {
    const plan = await encode(
      spec({
        type: OutputType.HLS,
        hls: { segmentDurationSeconds: 2, iframePlaylists: true, segmentFormat: SegmentFormat.FMP4 },
        segments: { singleFile: true },
        video: [{ codec: VideoCodec.H264, width: 640, height: 360, h264: { encoderPreset: "veryfast" } }],
      }),
    );
    const [v] = iframeVariants(plan);
    const { init, playlist } = iframePlaylist(plan, v!.uri);
    expect(playlist.segments[0]!.map?.uri).toBe("media.m4s");
    expect(init!.subarray(4, 8).toString()).toBe("ftyp");
    const ranges = await checkRanges(plan, v!.uri);
    expect(ranges).toHaveLength(3);
    for (const r of ranges)
      expect(
        readFileSync(r.uri)
          .subarray(r.offset + 4, r.offset + 8)
          .toString(),
      ).toBe("moof");
  });

  it("cbcs CMAF (adaptive): the I-frame playlists carry the SAMPLE-AES keys, and each range its fragment's senc", async () => {
    const plan = await encode(
      spec({
        type: OutputType.ADAPTIVE,
        hls: { iframePlaylists: true },
        segments: { segmentDurationSeconds: 2 },
        video: [
          { codec: VideoCodec.H264, width: 640, height: 360, h264: { encoderPreset: "veryfast" } },
          { codec: VideoCodec.H264, width: 320, height: 180, h264: { encoderPreset: "veryfast" } },
        ],
        drm: { systems: [DrmSystem.CLEARKEY] },
      }),
    );
    const variants = iframeVariants(plan);
    expect(variants.map((v) => v.uri)).toEqual(["media_0_iframes.m3u8", "media_1_iframes.m3u8"]);
    for (const v of variants) {
      const { ranges, playlist } = iframePlaylist(plan, v.uri);
      expect(ranges).toHaveLength(3);
      expect(playlist.segments[0]!.key?.method).toBe("SAMPLE-AES");
      expect(text(plan, v.uri)).toContain(text(plan, v.uri.replace("_iframes", "")).match(/#EXT-X-KEY:[^\n]+/)![0]);
      for (const r of ranges) {
        const bytes = readFileSync(r.uri).subarray(r.offset, r.offset + r.length);
        expect(bytes.subarray(4, 8).toString()).toBe("moof");
        expect(bytes.includes(Buffer.from("senc"))).toBe(true);
      }
    }
  });
});

/** A variant's BANDWIDTH in the master (the media stream's peak, with audio). */
function HLS_BANDWIDTH(plan: OutputPlan, index: number): number {
  const master = HLS.parse(text(plan, plan.main)) as HLS.types.MasterPlaylist;
  return master.variants.filter((v) => !v.isIFrameOnly)[index]!.bandwidth;
}
