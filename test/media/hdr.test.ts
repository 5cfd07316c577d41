// HDR (a variant's hdr.mode) on real encodes of a synthetic HDR10 source (PQ, BT.2020, mastering
// display and content light level): passthrough keeps PQ and the metadata (h265 SEI, AV1 metadata
// OBUs; VP9 carries the colour in its container only), hdr10 and hlg convert to PQ and HLG from
// HLG and SDR inputs, tonemap makes 8-bit BT.709 whose mean luma stays within LUMA_BAND of the plain
// zscale+tonemap chain run on the same source. HLS masters say VIDEO-RANGE; MPDs, ffmpeg's and
// Shaka Packager's, carry DASH-IF's CICP descriptors.
import { create } from "@bufbuild/protobuf";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import * as HLS from "hls-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPlan } from "../../encoder-node/ffmpeg.js";
import { sdrStepsOf } from "../../encoder-node/hdr.js";
import { planOutput, type OutputPlan } from "../../encoder-node/plan.js";
import { probe, type ProbeResult } from "../../encoder-node/probe.js";
import { renderThumbnails } from "../../encoder-node/thumbnails.js";
import type { ContentKey, TrackClass } from "../../src/drm/types.js";
import { DrmSystem, HdrMode, OutputSpecSchema, OutputType, ThumbnailFormat, ThumbnailMode, ThumbnailSpecSchema } from "../../src/gen/media/v1/job_pb.js";
import { SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { makeTestInput } from "../media.js";

const exec = promisify(execFile);
const root = mkdtempSync(path.join(tmpdir(), "hdr-"));
let n = 0;

/** The source's HDR10 metadata, in x265's notation and as the values ffprobe reads back. */
const MASTER_DISPLAY = "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)";
const SOURCE_MD = { red: [0.68, 0.32], green: [0.265, 0.69], blue: [0.15, 0.06], whitePoint: [0.3127, 0.329], maxLuminance: 1000, minLuminance: 0.0001 };
const SOURCE_CLL = { maxCll: 1000, maxFall: 400 };
/** Mean luma of the tone-mapped output against the reference tone-map, in 8-bit code values. */
const LUMA_BAND = 3;

const x265Fast = { encoderPreset: "ultrafast" };
const hex = () => randomBytes(16).toString("hex");
const keys: ContentKey[] = (["audio", "sd", "hd"] as TrackClass[]).map((trackClass) => ({ trackClass, kid: hex(), key: hex() }));

/**
 * A 2 s 640x360 HDR10 clip: testsrc2 with its white at 1000 cd/m² (zscale's npl), PQ in BT.2020,
 * 10-bit HEVC with the mastering display and content light level SEI.
 */
async function makeHdr10(file: string): Promise<string> {
  const x265 = `log-level=error:hdr10=1:repeat-headers=1:master-display=${MASTER_DISPLAY}:max-cll=1000,400:colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc`;
  await exec("ffmpeg", [
    ...["-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=25:d=2"],
    ...["-vf", "zscale=tin=bt709:pin=bt709:min=bt709:t=smpte2084:p=bt2020:m=bt2020nc:r=tv:npl=1000,format=yuv420p10le"],
    ...["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", x265, "-g", "25", "-tag:v", "hvc1"],
    ...["-color_primaries", "bt2020", "-color_trc", "smpte2084", "-colorspace", "bt2020nc", file],
  ]);
  return file;
}

/** The same clip converted to HLG, without HDR metadata (HLG needs none). */
async function makeHlg(from: string, file: string): Promise<string> {
  await exec("ffmpeg", [
    ...["-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-i", from],
    ...["-vf", "zscale=t=arib-std-b67:p=bt2020:m=bt2020nc:r=tv,format=yuv420p10le"],
    ...["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error", "-g", "25", "-tag:v", "hvc1"],
    ...["-color_primaries", "bt2020", "-color_trc", "arib-std-b67", "-colorspace", "bt2020nc", file],
  ]);
  return file;
}

interface FrameColour {
  pix_fmt: string;
  color_primaries?: string;
  color_transfer?: string;
  color_space?: string;
  side_data_list?: Record<string, string | number>[];
}

/** The first decoded frame's colour and side data, of a file or a concat: URL (init segment and media segment). */
async function firstFrame(source: string): Promise<FrameColour> {
  const { stdout } = await exec("ffprobe", ["-v", "error", "-select_streams", "v:0", "-read_intervals", "%+#1", "-show_frames", "-of", "json", source]);
  const frame = (JSON.parse(stdout) as { frames: FrameColour[] }).frames[0];
  if (!frame) throw new Error(`ffprobe decoded no frame of ${source}`);
  return frame;
}

async function streamOf(source: string): Promise<{ codec_name: string; profile: string; pix_fmt: string }> {
  const { stdout } = await exec("ffprobe", [
    "-v",
    "error",
    "-select_streams",
    "v:0",
    "-show_entries",
    "stream=codec_name,profile,pix_fmt",
    "-of",
    "json",
    source,
  ]);
  return (JSON.parse(stdout) as { streams: { codec_name: string; profile: string; pix_fmt: string }[] }).streams[0]!;
}

const ratio = (r: string | number | undefined) => {
  const [a, b] = String(r).split("/").map(Number);
  return b === undefined ? a! : a! / b;
};
/** Mastering display and content light level of a frame's side data, as values (each codec has its own units). */
function hdrOf(frame: FrameColour) {
  const md = frame.side_data_list?.find((d) => d.side_data_type === "Mastering display metadata");
  const cll = frame.side_data_list?.find((d) => d.side_data_type === "Content light level metadata");
  return {
    md: md && {
      red: [ratio(md.red_x), ratio(md.red_y)],
      green: [ratio(md.green_x), ratio(md.green_y)],
      blue: [ratio(md.blue_x), ratio(md.blue_y)],
      whitePoint: [ratio(md.white_point_x), ratio(md.white_point_y)],
      maxLuminance: ratio(md.max_luminance),
      minLuminance: ratio(md.min_luminance),
    },
    cll: cll && { maxCll: Number(cll.max_content), maxFall: Number(cll.max_average) },
  };
}

/** Values equal within the codec's quantisation (AV1 stores chromaticity in 1/65536, luminance in 1/256 and 1/16384). */
function expectClose(actual: unknown, expected: unknown, what: string): void {
  if (typeof expected === "number")
    return void expect(Math.abs(Number(actual) - expected), `${what}: ${String(actual)} vs ${expected}`).toBeLessThan(1e-4 + expected * 1e-4);
  if (Array.isArray(expected)) return expected.forEach((e, i) => expectClose((actual as unknown[])[i], e, `${what}[${i}]`));
  for (const [k, v] of Object.entries(expected as object)) expectClose((actual as Record<string, unknown>)[k], v, `${what}.${k}`);
}

/** Mean YAVG (signalstats) over every frame of a file, after the filter steps given. */
async function meanLuma(file: string, filters = "", at?: number): Promise<number> {
  const vf = `${filters ? `${filters},` : ""}signalstats,metadata=print:key=lavfi.signalstats.YAVG:file=-`;
  const one = at === undefined ? [] : ["-ss", at.toFixed(3)];
  const frames = at === undefined ? [] : ["-frames:v", "1"];
  const { stdout } = await exec("ffmpeg", ["-hide_banner", "-nostdin", "-loglevel", "error", ...one, "-i", file, "-vf", vf, ...frames, "-f", "null", "-"], {
    maxBuffer: 8 * 1024 * 1024,
  });
  const values = [...stdout.matchAll(/YAVG=([\d.]+)/g)].map((m) => Number(m[1]));
  if (values.length === 0) throw new Error(`no signalstats of ${file}`);
  return values.reduce((a, b) => a + b, 0) / values.length;
}

async function encode(input: { file: string; probe: ProbeResult }, init: Parameters<typeof create<typeof OutputSpecSchema>>[1]): Promise<OutputPlan> {
  const plan = planOutput(create(OutputSpecSchema, init), input, { outputId: `out_${++n}`, workDir: path.join(root, `out_${n}`) });
  await runPlan(plan, { keys });
  return plan;
}

const text = (plan: OutputPlan, file: string) => readFileSync(path.join(plan.dir, file), "utf8");
/** A media playlist's init segment and first media segment, as one ffprobe concat: URL. */
function firstSegmentOf(plan: OutputPlan, playlist: string): string {
  const media = HLS.parse(text(plan, playlist)) as HLS.types.MediaPlaylist;
  const base = path.dirname(path.join(plan.dir, playlist));
  return `concat:${path.join(base, media.segments[0]!.map!.uri)}|${path.join(base, media.segments[0]!.uri)}`;
}
/** The CICP descriptors of an MPD's video adaptation sets: name → value. */
const cicpOf = (mpd: string) =>
  Object.fromEntries([...mpd.matchAll(/schemeIdUri="urn:mpeg:mpegB:cicp:(\w+)" value="(\d+)"/g)].map((m) => [m[1], Number(m[2])]));

let pq: { file: string; probe: ProbeResult };
let hlg: { file: string; probe: ProbeResult };
let sdr: { file: string; probe: ProbeResult };

beforeAll(async () => {
  const pqFile = await makeHdr10(path.join(root, "hdr10.mp4"));
  const [hlgFile, sdrFile] = await Promise.all([
    makeHlg(pqFile, path.join(root, "hlg.mp4")),
    makeTestInput(path.join(root, "sdr.mp4"), { seconds: 2, width: 640, height: 360, fps: 25, audio: false }),
  ]);
  const probed = async (file: string) => ({ file, probe: await probe(file) });
  [pq, hlg, sdr] = await Promise.all([probed(pqFile), probed(hlgFile), probed(sdrFile)]);
}, 120_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("HDR", { timeout: 120_000 }, () => {
  it("the source is HDR10, and the probe reads its colour and metadata", async () => {
    const frame = await firstFrame(pq.file);
    expect([frame.color_transfer, frame.color_primaries, frame.color_space]).toEqual(["smpte2084", "bt2020", "bt2020nc"]);
    const { md, cll } = hdrOf(frame);
    expectClose(md, SOURCE_MD, "source mastering display");
    expect(cll).toEqual(SOURCE_CLL);
    expect(pq.probe.video?.color).toEqual({ primaries: "bt2020", transfer: "smpte2084", matrix: "bt2020nc" });
    expectClose(pq.probe.video?.masteringDisplay, SOURCE_MD, "probed mastering display");
    expect(pq.probe.video?.contentLight).toEqual(SOURCE_CLL);
    expect(hlg.probe.video?.color?.transfer).toBe("arib-std-b67");
    expect(hlg.probe.video?.masteringDisplay).toBeUndefined();
    expect(sdr.probe.video?.color).toBeUndefined();
  });

  it("HLS: passthrough (h265, av1) keeps PQ and the metadata, hlg converts, tonemap is SDR; VIDEO-RANGE says which", async () => {
    const plan = await encode(pq, {
      type: OutputType.HLS,
      hls: { segmentFormat: SegmentFormat.FMP4, segmentDurationSeconds: 1 },
      video: [
        { codec: VideoCodec.H265, width: 640, height: 360, h265: x265Fast, hdr: { mode: HdrMode.PASSTHROUGH } },
        { codec: VideoCodec.AV1, width: 320, height: 180, av1: { encoderPreset: "12" }, hdr: { mode: HdrMode.PASSTHROUGH } },
        { codec: VideoCodec.H265, width: 320, height: 180, h265: x265Fast, hdr: { mode: HdrMode.HLG } },
        { codec: VideoCodec.H264, width: 320, height: 180, h264: { encoderPreset: "veryfast" }, hdr: { mode: HdrMode.TONEMAP } },
      ],
    });
    HLS.setOptions({ strictMode: true, silent: true });
    const master = HLS.parse(text(plan, plan.main)) as HLS.types.MasterPlaylist;
    const lines = text(plan, plan.main)
      .split("\n")
      .filter((l) => l.startsWith("#EXT-X-STREAM-INF"));
    expect(lines.map((l) => /VIDEO-RANGE=(\w+)/.exec(l)?.[1])).toEqual(["PQ", "PQ", "HLG", "SDR"]);
    expect(master.variants.map((v) => v.codecs)).toEqual([
      expect.stringMatching(/^hvc1\.2\.4\.L\d+\.B0$/),
      expect.stringMatching(/^av01\.0\.\d\dM\.10$/),
      expect.stringMatching(/^hvc1\.2\.4\.L\d+\.B0$/),
      expect.stringMatching(/^avc1\./),
    ]);
    const [h265, av1, hlgRung, tonemapped] = await Promise.all(master.variants.map((v) => firstFrame(firstSegmentOf(plan, v.uri))));
    for (const [frame, name] of [
      [h265!, "h265"],
      [av1!, "av1"],
    ] as const) {
      expect([frame.pix_fmt, frame.color_transfer, frame.color_primaries, frame.color_space], name).toEqual(["yuv420p10le", "smpte2084", "bt2020", "bt2020nc"]);
      const { md, cll } = hdrOf(frame);
      expectClose(md, SOURCE_MD, `${name} mastering display`);
      expect(cll, name).toEqual(SOURCE_CLL);
    }
    expect([hlgRung!.pix_fmt, hlgRung!.color_transfer, hlgRung!.color_primaries]).toEqual(["yuv420p10le", "arib-std-b67", "bt2020"]);
    expect([tonemapped!.pix_fmt, tonemapped!.color_transfer, tonemapped!.color_primaries, tonemapped!.color_space]).toEqual([
      "yuv420p",
      "bt709",
      "bt709",
      "bt709",
    ]);
  });

  it("DASH: vp9 passthrough is profile 2 PQ, and the MPD carries DASH-IF's CICP descriptors (PQ 16, HLG 18)", async () => {
    const [vp9, hlgDash] = await Promise.all([
      encode(pq, {
        type: OutputType.DASH,
        dash: { segmentDurationSeconds: 1 },
        video: [{ codec: VideoCodec.VP9, width: 320, height: 180, vp9: { encoderPreset: "realtime", cpuUsed: 8 }, hdr: { mode: HdrMode.PASSTHROUGH } }],
      }),
      encode(pq, {
        type: OutputType.DASH,
        dash: { segmentDurationSeconds: 1 },
        video: [{ codec: VideoCodec.H265, width: 320, height: 180, h265: x265Fast, hdr: { mode: HdrMode.HLG } }],
      }),
    ]);
    const mpd = text(vp9, vp9.main);
    expect(cicpOf(mpd)).toEqual({ ColourPrimaries: 9, TransferCharacteristics: 16, MatrixCoefficients: 9 });
    // Inside the video AdaptationSet, before its first Representation.
    expect(mpd).toMatch(/<AdaptationSet[^>]*contentType="video"[^>]*>\s*(<SupplementalProperty[^>]*\/>\s*){3}<Representation/);
    expect(mpd).toContain('codecs="vp09.02.');
    const chunk = `concat:${path.join(vp9.dir, "init-0.m4s")}|${path.join(vp9.dir, "chunk-0-00001.m4s")}`;
    expect(await streamOf(chunk)).toEqual({ codec_name: "vp9", profile: "Profile 2", pix_fmt: "yuv420p10le" });
    const frame = await firstFrame(chunk);
    // libvpx writes no HDR metadata and ffmpeg 5.1 has none to put in the container for an encoded stream: colour only.
    expect([frame.color_transfer, frame.color_primaries, frame.color_space]).toEqual(["smpte2084", "bt2020", "bt2020nc"]);
    expect(cicpOf(text(hlgDash, hlgDash.main))).toEqual({ ColourPrimaries: 9, TransferCharacteristics: 18, MatrixCoefficients: 9 });
  });

  it("cbcs DASH: Shaka Packager's MPD is signalled once (the packager writes the descriptors itself, from the stream)", async () => {
    const plan = await encode(pq, {
      type: OutputType.DASH,
      dash: { segmentDurationSeconds: 1 },
      video: [{ codec: VideoCodec.H265, width: 320, height: 180, h265: x265Fast, hdr: { mode: HdrMode.HDR10 } }],
      drm: { systems: [DrmSystem.CLEARKEY] },
    });
    const mpd = text(plan, plan.main);
    expect(cicpOf(mpd)).toEqual({ ColourPrimaries: 9, TransferCharacteristics: 16, MatrixCoefficients: 9 });
    expect(mpd.match(/urn:mpeg:mpegB:cicp:/g)).toHaveLength(3);
  });

  it("hdr10 converts HLG (h265) and SDR (av1) to PQ, with the caller's light levels or a BT.2020 1000 cd/m² mastering display", async () => {
    const [fromHlg, fromSdr] = await Promise.all([
      encode(hlg, { type: OutputType.MP4, video: [{ codec: VideoCodec.H265, h265: x265Fast, hdr: { mode: HdrMode.HDR10, maxCll: 800, maxFall: 200 } }] }),
      encode(sdr, {
        type: OutputType.MP4,
        video: [{ codec: VideoCodec.AV1, width: 320, height: 180, av1: { encoderPreset: "12" }, hdr: { mode: HdrMode.HDR10 } }],
      }),
    ]);
    const defaultMd = {
      red: [0.708, 0.292],
      green: [0.17, 0.797],
      blue: [0.131, 0.046],
      whitePoint: [0.3127, 0.329],
      maxLuminance: 1000,
      minLuminance: 0.0001,
    };
    for (const [plan, cll] of [
      [fromHlg, { maxCll: 800, maxFall: 200 }],
      [fromSdr, undefined],
    ] as const) {
      const frame = await firstFrame(path.join(plan.dir, plan.main));
      expect([frame.pix_fmt, frame.color_transfer, frame.color_primaries, frame.color_space], plan.main).toEqual([
        "yuv420p10le",
        "smpte2084",
        "bt2020",
        "bt2020nc",
      ]);
      const hdr = hdrOf(frame);
      expectClose(hdr.md, defaultMd, `${plan.main} mastering display`);
      expect(hdr.cll).toEqual(cll);
    }
    // The HLG source round-trips to about the PQ source's light: zscale converts in absolute light.
    expect(Math.abs((await meanLuma(path.join(fromHlg.dir, fromHlg.main))) - (await meanLuma(pq.file)))).toBeLessThan(12);
  });

  it("passthrough of an SDR input is SDR (its colour kept, 8-bit)", async () => {
    const plan = await encode(sdr, {
      type: OutputType.MP4,
      video: [{ codec: VideoCodec.H265, width: 320, height: 180, h265: x265Fast, hdr: { mode: HdrMode.PASSTHROUGH } }],
    });
    const frame = await firstFrame(path.join(plan.dir, plan.main));
    expect([frame.pix_fmt, frame.color_transfer, frame.color_primaries]).toEqual(["yuv420p", "bt709", "bt709"]);
    expect(hdrOf(frame)).toEqual({ md: undefined, cll: undefined });
  });

  it(`tonemap makes 8-bit BT.709 within ±${LUMA_BAND} of the reference tone-map's mean luma`, async () => {
    const plan = await encode(pq, {
      type: OutputType.MP4,
      video: [{ codec: VideoCodec.H264, h264: { encoderPreset: "veryfast" }, hdr: { mode: HdrMode.TONEMAP } }],
    });
    const out = path.join(plan.dir, plan.main);
    const frame = await firstFrame(out);
    expect([frame.pix_fmt, frame.color_transfer, frame.color_primaries, frame.color_space]).toEqual(["yuv420p", "bt709", "bt709", "bt709"]);
    const reference = await meanLuma(
      pq.file,
      "zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p",
    );
    const ours = await meanLuma(out);
    console.log(`tonemap mean luma: ${ours.toFixed(2)}, reference ${reference.toFixed(2)} (8-bit)`);
    expect(Math.abs(ours - reference)).toBeLessThanOrEqual(LUMA_BAND);
    // And it is a tone-map, not the PQ signal read as SDR (which is much darker here: ~PQ code values).
    expect(Math.abs(ours - (await meanLuma(pq.file, "format=yuv420p")))).toBeGreaterThan(10);
  });

  it(`thumbnails of an HDR input are tone-mapped as its SDR renditions are: within ±${LUMA_BAND} of the reference tone-map's mean luma`, async () => {
    const dir = mkdtempSync(path.join(root, "thumbs-"));
    const specs = [
      create(ThumbnailSpecSchema, { mode: ThumbnailMode.SINGLE, format: ThumbnailFormat.PNG, timeSeconds: 1 }),
      create(ThumbnailSpecSchema, { mode: ThumbnailMode.SPRITE, format: ThumbnailFormat.PNG, count: 4 }),
    ];
    const [single, sprite] = await renderThumbnails(specs, pq, { dir });
    const toneMap = "zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=hable:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv420p";
    const asTv = "scale=out_range=tv,format=yuv420p";
    // The single picture against the reference tone-map of the same frame.
    const reference = await meanLuma(pq.file, toneMap, 1);
    const luma = await meanLuma(path.join(dir, single!.file), asTv);
    console.log(`single thumbnail mean luma: ${luma.toFixed(2)}, reference ${reference.toFixed(2)}`);
    expect(Math.abs(luma - reference)).toBeLessThanOrEqual(LUMA_BAND);
    // The sprite's tiles (other frames) against the clip: near its tone-map, far from the PQ signal read as SDR (the thumbnails before).
    const [toneMapped, raw, tiles] = await Promise.all([
      meanLuma(pq.file, toneMap),
      meanLuma(pq.file, "format=yuv420p"),
      meanLuma(path.join(dir, sprite!.file), asTv),
    ]);
    console.log(`sprite mean luma: ${tiles.toFixed(2)}, clip tone-mapped ${toneMapped.toFixed(2)}, read as SDR ${raw.toFixed(2)}`);
    expect(Math.abs(tiles - toneMapped)).toBeLessThan(Math.abs(tiles - raw) / 2);
    // An SDR input's thumbnail has no colour step.
    expect(sdrStepsOf(sdr.probe)).toEqual([]);
    expect(sdrStepsOf(pq.probe).join(",")).toContain("tonemap=hable");
  });
});
