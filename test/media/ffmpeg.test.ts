// runPlan and runFfmpeg with real ffmpeg: every output type and codec checked with ffprobe and the
// manifests read back (every named segment exists); then progress, abort and failures.
import { create } from "@bufbuild/protobuf";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { codecString, parseMediaPlaylist, runFfmpeg, runPlan } from "../../encoder-node/ffmpeg.js";
import { MediaError } from "../../encoder-node/media-errors.js";
import { FFMPEG_GLOBAL, planOutput, type OutputPlan, type PlanOptions } from "../../encoder-node/plan.js";
import { probe, type ProbeResult } from "../../encoder-node/probe.js";
import { EncodingMode, OutputSpecSchema, OutputType, type OutputSpec } from "../../src/gen/media/v1/job_pb.js";
import { AudioCodec, SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { audiosOf, durationOf, ffmpegProcessesWith, ffprobeJson, loudnessLufs, makeTestInput, parseMpd, readHls, topLevelBoxes, videoOf } from "../media.js";

const root = mkdtempSync(path.join(tmpdir(), "encode-spec-"));
let n = 0;
const inputs: Record<"main" | "small" | "quiet" | "lean", { file: string; probe: ProbeResult }> = {} as never;
const spec = (init: Parameters<typeof create<typeof OutputSpecSchema>>[1]): OutputSpec => create(OutputSpecSchema, init);
const fast = { encoderPreset: "veryfast" };

/** Plans and runs one output into a fresh folder; returns the plan and the progress seen. */
async function encode(s: OutputSpec, input = inputs.main, opts: Partial<PlanOptions> = {}) {
  const plan = planOutput(s, input, { outputId: `out_${++n}`, workDir: path.join(root, `out_${n}`), ...opts });
  const progress: number[] = [];
  await runPlan(plan, { onProgress: (f) => progress.push(f) });
  return { plan, progress, at: (f: string) => path.join(plan.dir, f) };
}

const near = (actual: number, expected: number, tolerance: number) => expect(Math.abs(actual - expected)).toBeLessThanOrEqual(tolerance);

beforeAll(async () => {
  const make = async (name: string, o: Parameters<typeof makeTestInput>[1]) => {
    const file = await makeTestInput(path.join(root, name), o);
    return { file, probe: await probe(file) };
  };
  inputs.main = await make("main.mp4", { seconds: 4, width: 640, height: 360, fps: 30, audio: true });
  inputs.small = await make("small.mp4", { seconds: 2, width: 320, height: 240, fps: 24, audio: true });
  inputs.quiet = await make("quiet.mp4", { seconds: 4, width: 320, height: 240, fps: 24, audio: true, volumeDb: -20 });
  inputs.lean = await make("lean.mp4", { seconds: 4, width: 640, height: 360, fps: 30, audio: false, videoBitrate: "150k" });
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("runPlan: progressive files", { timeout: 60_000 }, () => {
  it("mp4: one faststart file per variant, H.264 and AAC, sizes and duration as asked", async () => {
    const { plan, at } = await encode(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, width: 640, height: 360, h264: fast },
          { codec: VideoCodec.H264, width: 320, height: 180, h264: fast },
        ],
      }),
    );
    expect(plan.main).toBe("640x360.mp4");
    for (const [file, w, h] of [
      ["640x360.mp4", 640, 360],
      ["320x180.mp4", 320, 180],
    ] as const) {
      const boxes = topLevelBoxes(at(file));
      expect(boxes.indexOf("moov")).toBeLessThan(boxes.indexOf("mdat"));
      const p = await ffprobeJson(at(file));
      expect(videoOf(p)).toMatchObject({ codec_name: "h264", width: w, height: h, pix_fmt: "yuv420p" });
      expect(audiosOf(p).map((a) => a.codec_name)).toEqual(["aac"]);
      near(durationOf(p), 4, 0.15);
    }
  });

  it("webm: VP9 and Opus", async () => {
    const { at } = await encode(
      spec({ type: OutputType.WEBM, video: [{ codec: VideoCodec.VP9, resolution: "480p", vp9: { encoderPreset: "realtime" } }] }),
      inputs.small,
    );
    const p = await ffprobeJson(at("480p.webm"));
    expect(p.format.format_name).toContain("webm");
    expect(videoOf(p)).toMatchObject({ codec_name: "vp9", width: 320, height: 240 });
    expect(audiosOf(p).map((a) => a.codec_name)).toEqual(["opus"]);
    near(durationOf(p), 2, 0.15);
  });

  it("mkv: HEVC with two audio tracks (aac, mp3), languages kept", async () => {
    const { at } = await encode(
      spec({
        type: OutputType.MKV,
        video: [{ codec: VideoCodec.H265, h265: { encoderPreset: "ultrafast" } }],
        audio: [
          { codec: AudioCodec.AAC, language: "en" },
          { codec: AudioCodec.MP3, bitrateKbps: 96, language: "pt" },
        ],
      }),
      inputs.small,
    );
    const p = await ffprobeJson(at("320x240.mkv"));
    expect(videoOf(p)).toMatchObject({ codec_name: "hevc", width: 320, height: 240 });
    expect(audiosOf(p).map((a) => [a.codec_name, a.tags?.language])).toEqual([
      ["aac", "en"],
      ["mp3", "pt"],
    ]);
    near(durationOf(p), 2, 0.15);
  });

  it("mov: H.265 tagged hvc1, faststart", async () => {
    const { at } = await encode(
      spec({ type: OutputType.MOV, video: [{ codec: VideoCodec.H265, width: 320, height: 240, h265: { encoderPreset: "ultrafast" } }] }),
      inputs.small,
    );
    const p = await ffprobeJson(at("320x240.mov"));
    expect(p.format.format_name).toContain("mov");
    expect(videoOf(p)).toMatchObject({ codec_name: "hevc", codec_tag_string: "hvc1" });
    const boxes = topLevelBoxes(at("320x240.mov"));
    expect(boxes.indexOf("moov")).toBeLessThan(boxes.indexOf("mdat"));
  });

  it("mp4: AV1 (SVT-AV1) at a small size", async () => {
    const { at } = await encode(
      spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.AV1, width: 256, height: 144, av1: { encoderPreset: "12" } }] }),
      inputs.small,
    );
    const p = await ffprobeJson(at("256x144.mp4"));
    expect(videoOf(p)).toMatchObject({ codec_name: "av1", width: 256, height: 144 });
    near(durationOf(p), 2, 0.15);
  });

  it("one process per rendition writes the same files as the split", async () => {
    const { plan, at, progress } = await encode(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, width: 640, height: 360, h264: fast },
          { codec: VideoCodec.H264, width: 320, height: 180, h264: fast },
        ],
      }),
      inputs.main,
      { strategy: "per-rendition" },
    );
    expect(plan.commands.length).toBe(2);
    for (const file of ["640x360.mp4", "320x180.mp4"]) near(durationOf(await ffprobeJson(at(file))), 4, 0.15);
    expect(progress.at(-1)).toBe(1);
  });
});

describe("runPlan: options", { timeout: 60_000 }, () => {
  it("clip: encodes only the asked span", async () => {
    const { plan, at } = await encode(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, h264: fast }] }), inputs.main, {
      clip: { startSeconds: 1, endSeconds: 2.5 },
    });
    expect(plan.durationMs).toBe(1500);
    near(durationOf(await ffprobeJson(at("640x360.mp4"))), 1.5, 0.1);
  });

  it("disable_audio: no audio stream", async () => {
    const { at } = await encode(spec({ type: OutputType.MP4, disableAudio: true, video: [{ codec: VideoCodec.H264, h264: fast }] }), inputs.small);
    expect(audiosOf(await ffprobeJson(at("320x240.mp4")))).toEqual([]);
  });

  it("normalize: brings a quiet input to about -23 LUFS", async () => {
    const before = await loudnessLufs(inputs.quiet.file);
    const { at } = await encode(
      spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, h264: fast }], audio: [{ codec: AudioCodec.AAC, normalize: true }] }),
      inputs.quiet,
    );
    const after = await loudnessLufs(at("320x240.mp4"));
    expect(before).toBeLessThan(-30);
    near(after, -23, 2);
  });

  it("auto mode: caps the rate at a lean input's bitrate", async () => {
    const lean = inputs.lean;
    const { plan, at } = await encode(
      spec({ type: OutputType.MP4, encodingMode: EncodingMode.AUTO, video: [{ codec: VideoCodec.H264, resolution: "720p", h264: fast }] }),
      lean,
    );
    const cmd = plan.commands[0]!;
    const cap = Number.parseInt(cmd[cmd.indexOf("-maxrate:v:0") + 1]!, 10);
    expect(cap).toBeLessThanOrEqual(Math.ceil(lean.probe.video!.bitRate / 1000));
    expect(cap).toBeGreaterThanOrEqual(100);
    const out = videoOf(await ffprobeJson(at("720p.mp4")))!;
    expect(Number(out.bit_rate)).toBeLessThan(cap * 1000 * 1.3);
    // Without auto the same input at CRF spends more than the cap.
    const fixed = await encode(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, resolution: "720p", h264: fast }] }), lean);
    expect(Number(videoOf(await ffprobeJson(fixed.at("720p.mp4")))!.bit_rate)).toBeGreaterThan(cap * 1000 * 1.3);
  });

  it("audio-only output", async () => {
    const { plan, at } = await encode(spec({ type: OutputType.MP4, audio: [{ codec: AudioCodec.AAC, bitrateKbps: 64 }] }), inputs.small);
    const p = await ffprobeJson(at(plan.main));
    expect(videoOf(p)).toBeUndefined();
    expect(audiosOf(p).map((a) => a.codec_name)).toEqual(["aac"]);
  });
});

describe("runPlan: streaming outputs", { timeout: 90_000 }, () => {
  const allExist = (dir: string, files: string[]) => expect(files.filter((f) => !existsSync(path.join(dir, f)))).toEqual([]);

  it("HLS (ts): a 3-rung ladder with 2 audio tracks, measured bandwidths, every segment present", async () => {
    const { plan, at } = await encode(
      spec({
        type: OutputType.HLS,
        hls: { segmentDurationSeconds: 2 },
        video: [
          { codec: VideoCodec.H264, width: 640, height: 360, h264: fast },
          { codec: VideoCodec.H264, width: 480, height: 270, h264: fast },
          { codec: VideoCodec.H264, width: 320, height: 180, h264: fast },
        ],
        audio: [
          { codec: AudioCodec.AAC, language: "en", name: "English" },
          { codec: AudioCodec.AAC, bitrateKbps: 64, language: "pt", name: "Português" },
        ],
      }),
    );
    const hls = readHls(plan.dir, plan.main);
    expect(hls.master.variants.map((v) => [v.uri, v.attributes.RESOLUTION, v.attributes.AUDIO])).toEqual([
      ["640x360/index.m3u8", "640x360", "audio"],
      ["480x270/index.m3u8", "480x270", "audio"],
      ["320x180/index.m3u8", "320x180", "audio"],
    ]);
    const bandwidths = hls.master.variants.map((v) => Number(v.attributes.BANDWIDTH));
    expect([...bandwidths].sort((a, b) => b - a)).toEqual(bandwidths);
    expect(hls.master.variants.every((v) => /^avc1\.[0-9A-F]{6},mp4a\.40\.2$/.test(v.attributes.CODECS ?? ""))).toBe(true);
    expect(hls.master.media.map((m) => [m.NAME, m.LANGUAGE, m.DEFAULT])).toEqual([
      ["English", "en", "YES"],
      ["Português", "pt", "NO"],
    ]);
    // 2 s segments of 4 s: two per video rendition; AAC frames may leave the audio a sliver longer.
    expect(hls.files.filter((f) => !f.startsWith("audio_")).length).toBe(3 * 2);
    expect(hls.files.every((f) => f.endsWith(".ts"))).toBe(true);
    allExist(plan.dir, hls.files);
    for (const media of hls.playlists.values()) {
      expect(media.endList).toBe(true);
      expect(media.playlistType).toBe("VOD");
      near(
        media.segments.reduce((s, x) => s + x.duration, 0),
        4,
        0.1,
      );
    }
    const seg = await ffprobeJson(at("320x180/seg_00000.ts"));
    expect(videoOf(seg)).toMatchObject({ codec_name: "h264", width: 320, height: 180 });
  });

  it("HLS (fmp4): HEVC and AV1 renditions with init segments and codec strings", async () => {
    const { plan } = await encode(
      spec({
        type: OutputType.HLS,
        hls: { segmentDurationSeconds: 1 },
        video: [
          { codec: VideoCodec.H265, width: 320, height: 240, h265: { encoderPreset: "ultrafast" } },
          { codec: VideoCodec.AV1, width: 256, height: 192, av1: { encoderPreset: "12" } },
        ],
      }),
      inputs.small,
    );
    const hls = readHls(plan.dir, plan.main);
    expect(hls.master.variants.map((v) => v.attributes.CODECS)).toEqual([
      expect.stringMatching(/^hvc1\.1\.6\.L\d+\.B0,mp4a\.40\.2$/),
      expect.stringMatching(/^av01\.0\.\d\dM\.08,mp4a\.40\.2$/),
    ]);
    expect([...hls.playlists.values()].every((m) => m.init !== undefined)).toBe(true);
    allExist(plan.dir, hls.files);
    expect(hls.files.filter((f) => f.endsWith(".m4s")).length).toBeGreaterThanOrEqual(3 * 2);
  });

  it("HLS per rendition: the same layout from separate processes", async () => {
    const { plan } = await encode(
      spec({
        type: OutputType.HLS,
        video: [
          { codec: VideoCodec.H264, width: 320, height: 240, h264: fast },
          { codec: VideoCodec.H264, width: 160, height: 120, h264: fast },
        ],
        segments: { segmentFormat: SegmentFormat.FMP4 },
      }),
      inputs.small,
      { strategy: "per-rendition" },
    );
    expect(plan.commands.length).toBe(3);
    const hls = readHls(plan.dir, plan.main);
    expect(hls.master.variants.length).toBe(2);
    expect(hls.master.media.length).toBe(1);
    allExist(plan.dir, hls.files);
  });

  it("DASH: H.264 and VP9 representations with Opus, SegmentTimeline expanded, minBufferTime set", async () => {
    const { plan } = await encode(
      spec({
        type: OutputType.DASH,
        dash: { segmentDurationSeconds: 1, segmentTimeline: true, minBufferTimeSeconds: 3 },
        video: [
          { codec: VideoCodec.H264, width: 320, height: 240, h264: fast },
          { codec: VideoCodec.VP9, width: 320, height: 240, vp9: { encoderPreset: "realtime" } },
        ],
        audio: [{ codec: AudioCodec.OPUS }],
      }),
      inputs.small,
    );
    const text = readFileSync(path.join(plan.dir, plan.main), "utf8");
    expect(text).toContain("SegmentTimeline");
    const mpd = parseMpd(text);
    expect(mpd.minBufferTimeSeconds).toBe(3);
    expect(mpd.representations.map((r) => [r.contentType, r.codecs.split(".")[0]])).toEqual([
      ["video", "avc1"],
      ["video", "vp09"],
      ["audio", "opus"],
    ]);
    for (const r of mpd.representations) {
      expect(r.files.length).toBeGreaterThanOrEqual(3);
      allExist(plan.dir, r.files);
    }
  });

  it("DASH: a fixed-duration $Number$ template expands to every segment", async () => {
    const { plan } = await encode(
      spec({ type: OutputType.DASH, dash: { segmentDurationSeconds: 1 }, video: [{ codec: VideoCodec.H264, h264: fast }] }),
      inputs.small,
    );
    const mpd = parseMpd(readFileSync(path.join(plan.dir, plan.main), "utf8"));
    expect(mpd.minBufferTimeSeconds).toBe(2);
    const files = mpd.representations.flatMap((r) => r.files);
    expect(files.filter((f) => f.startsWith("chunk-0-")).length).toBe(2);
    allExist(plan.dir, files);
  });

  it("single_file: one file per rendition, addressed by byte ranges (HLS) or one BaseURL (DASH)", async () => {
    const hls = await encode(
      spec({
        type: OutputType.HLS,
        segments: { singleFile: true, segmentDurationSeconds: 1 },
        video: [{ codec: VideoCodec.H264, h264: fast }],
        audio: [{ codec: AudioCodec.AAC, language: "de" }],
      }),
      inputs.small,
    );
    const tree = readHls(hls.plan.dir, hls.plan.main);
    expect(tree.files).toEqual(["320x240/media.ts", "audio_0/media.ts"]);
    expect([...tree.playlists.values()].every((m) => m.segments.length >= 2 && m.segments.every((s) => s.byteRange !== undefined))).toBe(true);
    expect(tree.master.media[0]).toMatchObject({ NAME: "German", LANGUAGE: "de" });
    const dash = await encode(spec({ type: OutputType.DASH, segments: { singleFile: true }, video: [{ codec: VideoCodec.H264, h264: fast }] }), inputs.small);
    const mpd = parseMpd(readFileSync(path.join(dash.plan.dir, dash.plan.main), "utf8"));
    expect(mpd.representations.map((r) => r.files)).toEqual([["stream-0.m4s"], ["stream-1.m4s"]]);
    allExist(dash.plan.dir, ["stream-0.m4s", "stream-1.m4s"]);
  });

  it("adaptive (CMAF): an HLS master and an MPD over the same fmp4 segments", async () => {
    const { plan } = await encode(
      spec({
        type: OutputType.ADAPTIVE,
        segments: { segmentDurationSeconds: 2 },
        video: [
          { codec: VideoCodec.H264, width: 640, height: 360, h264: fast },
          { codec: VideoCodec.H264, width: 320, height: 180, h264: fast },
        ],
      }),
    );
    expect(plan.main).toBe("index.m3u8");
    const hls = readHls(plan.dir, "index.m3u8");
    const mpd = parseMpd(readFileSync(path.join(plan.dir, "manifest.mpd"), "utf8"));
    const dashFiles = mpd.representations.flatMap((r) => r.files);
    allExist(plan.dir, hls.files);
    allExist(plan.dir, dashFiles);
    // Same files; the MPD counts segments from the period length, so an audio sliver past it is HLS-only.
    expect(dashFiles.filter((f) => !hls.files.includes(f))).toEqual([]);
    expect(hls.files.filter((f) => !dashFiles.includes(f) && !f.startsWith("chunk-2-"))).toEqual([]);
    expect(hls.master.variants.map((v) => v.attributes.RESOLUTION)).toEqual(["640x360", "320x180"]);
    expect(mpd.representations.map((r) => r.contentType)).toEqual(["video", "video", "audio"]);
  });

  it("DASH rungs whose even size is not quite the source's aspect (444x250 of 16:9) keep its display aspect, as the DASH muxer demands of one adaptation set", async () => {
    const { plan } = await encode(
      spec({
        type: OutputType.DASH,
        video: [
          { codec: VideoCodec.H264, height: 360, h264: fast },
          { codec: VideoCodec.H264, height: 250, h264: fast },
        ],
      }),
    );
    const mpd = readFileSync(path.join(plan.dir, plan.main), "utf8");
    expect(mpd).toMatch(/width="444" height="250"[^>]*sar="1000:999"|sar="1000:999"[^>]*width="444"/);
    expect(plan.renditions!.map((r) => `${r.width}x${r.height}`)).toEqual(["640x360", "444x250"]);
  });
});

describe("runFfmpeg and runPlan: progress, abort, failure", { timeout: 60_000 }, () => {
  const longCommand = (marker: string, size = "1280x720") => [
    ...FFMPEG_GLOBAL,
    "-f",
    "lavfi",
    "-i",
    `testsrc2=s=${size}:r=30:d=600`,
    "-c:v",
    "libx264",
    "-preset",
    "medium",
    path.join(root, `${marker}.mp4`),
  ];

  it("reports progress that never goes back and ends at 1, at least every second", async () => {
    const plan = planOutput(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, h264: { encoderPreset: "slow" } },
          { codec: VideoCodec.H264, width: 320, height: 180, h264: { encoderPreset: "slow" } },
        ],
      }),
      inputs.main,
      {
        outputId: "out_progress",
        workDir: path.join(root, "progress"),
      },
    );
    const seen: { f: number; t: number }[] = [];
    const r = await runPlan(plan, { onProgress: (f) => seen.push({ f, t: Date.now() }) });
    const fractions = seen.map((s) => s.f);
    expect(fractions.length).toBeGreaterThanOrEqual(3);
    expect(fractions.every((f, i) => i === 0 || f >= fractions[i - 1]!)).toBe(true);
    expect(fractions.at(-1)).toBe(1);
    expect(fractions.filter((f) => f === 1).length).toBe(1);
    const gaps = seen.slice(1).map((s, i) => s.t - seen[i]!.t);
    expect(Math.max(...gaps)).toBeLessThan(1500);
    expect(r.cpuSeconds).toBeGreaterThan(0);
  });

  it("abort kills ffmpeg: rejects with canceled and no process is left 2 s later", async () => {
    const marker = `abort-${process.pid}-one`;
    const c = new AbortController();
    let sawProgress = false;
    const run = runFfmpeg(longCommand(marker), {
      durationMs: 600_000,
      signal: c.signal,
      onProgress: (p) => {
        expect(p.outTimeMs).toBeGreaterThanOrEqual(0);
        if (!sawProgress && p.fraction > 0) {
          sawProgress = true;
          c.abort();
        }
      },
    });
    await expect(run).rejects.toMatchObject({ name: "MediaError", code: "canceled" });
    expect(sawProgress).toBe(true);
    await new Promise((r) => setTimeout(r, 2000));
    expect(ffmpegProcessesWith(marker)).toEqual([]);
  });

  it("abort of a parallel plan kills every process", async () => {
    const marker = `abort-${process.pid}-plan`;
    const plan: OutputPlan = {
      outputId: "out_abort",
      dir: path.join(root, "abort"),
      main: "a.mp4",
      commands: [longCommand(`${marker}-a`, "640x360"), longCommand(`${marker}-b`, "640x360")],
      parallel: true,
      durationMs: 600_000,
      strategy: "per-rendition",
    };
    const c = new AbortController();
    const run = runPlan(plan, { signal: c.signal });
    await new Promise((r) => setTimeout(r, 1500));
    expect(ffmpegProcessesWith(marker).length).toBe(2);
    c.abort();
    await expect(run).rejects.toMatchObject({ code: "canceled" });
    await new Promise((r) => setTimeout(r, 2000));
    expect(ffmpegProcessesWith(marker)).toEqual([]);
  });

  it("an already aborted signal starts nothing", async () => {
    const c = new AbortController();
    c.abort();
    await expect(runFfmpeg(longCommand("never"), { durationMs: 1, signal: c.signal })).rejects.toMatchObject({ code: "canceled" });
    expect(ffmpegProcessesWith("never")).toEqual([]);
  });

  it("a failing ffmpeg is encode_failed with its error lines; a failed parallel command stops the others", async () => {
    const bad = [...FFMPEG_GLOBAL, "-f", "lavfi", "-i", "testsrc2=d=1", "-c:v", "no-such-encoder", path.join(root, "bad.mp4")];
    const failure = await runFfmpeg(bad, { durationMs: 1000 }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(MediaError);
    expect(failure).toMatchObject({ code: "encode_failed", message: expect.stringContaining("Unknown encoder 'no-such-encoder'") });
    const badProfile = [...FFMPEG_GLOBAL, "-f", "lavfi", "-i", "testsrc2=d=1", "-c:v", "libx264", "-profile:v", "nonsense", path.join(root, "bad.mp4")];
    const message = ((await runFfmpeg(badProfile, { durationMs: 1000 }).catch((e: unknown) => e)) as MediaError).message;
    expect(message).toContain("[libx264 @ ");
    expect(message).toContain("Error setting profile nonsense.");
    expect(message).not.toContain("[info]");
    const marker = `fail-${process.pid}`;
    const plan: OutputPlan = {
      outputId: "out_fail",
      dir: path.join(root, "fail"),
      main: "a.mp4",
      commands: [longCommand(marker, "640x360"), bad],
      parallel: true,
      durationMs: 600_000,
      strategy: "per-rendition",
    };
    await expect(runPlan(plan, {})).rejects.toMatchObject({ code: "encode_failed" });
    await new Promise((r) => setTimeout(r, 2000));
    expect(ffmpegProcessesWith(marker)).toEqual([]);
  });
});

describe("manifest helpers", () => {
  it("parses media playlists with byte ranges and writes RFC 6381 codec strings", () => {
    const media = parseMediaPlaylist(
      '#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-MAP:URI="init.mp4"\n#EXTINF:2.0,\n#EXT-X-BYTERANGE:1000@0\nmedia.m4s\n#EXTINF:1.5,\n#EXT-X-BYTERANGE:800@1000\nmedia.m4s\n#EXT-X-ENDLIST\n',
    );
    expect(media).toEqual({
      version: 7,
      init: "init.mp4",
      segments: [
        { uri: "media.m4s", duration: 2, bytes: 1000 },
        { uri: "media.m4s", duration: 1.5, bytes: 800 },
      ],
    });
    expect(codecString({ codec: "h264", profile: "High", level: 31, pixelFormat: "yuv420p" }, true)).toBe("avc1.64001F");
    expect(codecString({ codec: "h264", profile: "Constrained Baseline", level: 30, pixelFormat: "yuv420p" }, false)).toBe("avc1.42E01E");
    expect(codecString({ codec: "hevc", profile: "Main 10", level: 120, pixelFormat: "yuv420p10le" }, true)).toBe("hvc1.2.4.L120.B0");
    expect(codecString({ codec: "av1", profile: "Main", level: 8, pixelFormat: "yuv420p" }, true)).toBe("av01.0.08M.08");
    expect(codecString({ codec: "aac", profile: "LC", level: -99, pixelFormat: "" }, true)).toBe("mp4a.40.2");
  });
});
