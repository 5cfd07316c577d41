// planOutput without running ffmpeg: sizes, names, rate control, keyframes, layouts and strategies,
// and protected outputs: clear intermediates for the packager, or ffmpeg's own aes_128.
import { create } from "@bufbuild/protobuf";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DrmSystem, EncodingMode, EncryptionScheme, OutputSpecSchema, OutputType, type OutputSpec } from "../src/gen/media/v1/job_pb.js";
import { AudioCodec, BitrateMode, HlsPlaylistType, QualityTier, SegmentFormat, VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { MediaError } from "./media-errors.js";
import { chunkable, chunkSpans, DEFAULT_STRATEGY, drmSchemeOf, drmSystemsOf, planOutput, tierTargetKbps, type OutputPlan, type PlanOptions } from "./plan.js";
import type { ProbeResult } from "./probe.js";

const probe = (o: Partial<ProbeResult> = {}, video: Partial<NonNullable<ProbeResult["video"]>> = {}): ProbeResult => ({
  format: "mov,mp4,m4a,3gp,3g2,mj2",
  durationMs: 10_000,
  sizeBytes: 10_000_000,
  bitRate: 8_000_000,
  video: { codec: "h264", width: 1920, height: 1080, frameRate: 30, bitRate: 7_800_000, pixelFormat: "yuv420p", ...video },
  audio: { codec: "aac", sampleRate: 44100, channels: 2, channelLayout: "stereo", bitRate: 128_000 },
  audioStreams: 1,
  ...o,
});

const spec = (init: Parameters<typeof create<typeof OutputSpecSchema>>[1]): OutputSpec => create(OutputSpecSchema, init);
const plan = (s: OutputSpec, p: ProbeResult = probe(), opts: Partial<Parameters<typeof planOutput>[2]> = {}): OutputPlan =>
  planOutput(s, { file: "/in/input", probe: p }, { outputId: "out_1", workDir: "/work/out_1", ...opts });

/** Value following a flag in a command, e.g. after("-crf:v:0"). */
const after = (cmd: readonly string[], flag: string): string | undefined => {
  const i = cmd.indexOf(flag);
  return i >= 0 ? cmd[i + 1] : undefined;
};
const graph = (cmd: readonly string[]) => after(cmd, "-filter_complex") ?? "";

describe("planOutput: sizes and names", () => {
  it("names files by resolution, scales by height keeping the aspect, and picks the largest as main", () => {
    const p = plan(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, resolution: "480p" },
          { codec: VideoCodec.H264, resolution: "1080p" },
          { codec: VideoCodec.H264, resolution: "720p" },
        ],
      }),
    );
    expect(p.renditions?.map((r) => [r.file, r.width, r.height])).toEqual([
      ["480p.mp4", 854, 480],
      ["1080p.mp4", 1920, 1080],
      ["720p.mp4", 1280, 720],
    ]);
    expect(p.main).toBe("1080p.mp4");
    expect(p.dir).toBe("/work/out_1");
    // One decode split three ways; the 1080p rung needs no scaling.
    expect(graph(p.commands[0]!)).toBe(
      "[0:v:0]split=3[s0][s1][s2];[s0]scale=854:480:flags=bicubic,setsar=1,format=yuv420p[v0];[s1]format=yuv420p[v1];[s2]scale=1280:720:flags=bicubic,setsar=1,format=yuv420p[v2]",
    );
  });

  it("never upscales a named resolution, keeps custom sizes exactly, and names them WxH", () => {
    const p = plan(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, resolution: "1080p" },
          { codec: VideoCodec.H264, width: 640, height: 360 },
          { codec: VideoCodec.H264, width: 400 },
        ],
      }),
      probe({}, { width: 1280, height: 720 }),
    );
    expect(p.renditions?.map((r) => [r.file, r.width, r.height])).toEqual([
      ["1080p.mp4", 1280, 720],
      ["640x360.mp4", 640, 360],
      ["400x226.mp4", 400, 226],
    ]);
  });

  it("uses the short side for portrait inputs and honours rotation and non-square pixels", () => {
    const portrait = plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, resolution: "720p" }] }), probe({}, { width: 1080, height: 1920 }));
    expect([portrait.renditions![0]!.width, portrait.renditions![0]!.height]).toEqual([720, 1280]);
    const rotated = plan(
      spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, resolution: "720p" }] }),
      probe({}, { width: 1920, height: 1080, rotation: -90 }),
    );
    expect([rotated.renditions![0]!.width, rotated.renditions![0]!.height]).toEqual([720, 1280]);
    const anamorphic = plan(
      spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, resolution: "480p" }] }),
      probe({}, { width: 720, height: 480, sampleAspectRatio: 32 / 27 }),
    );
    expect([anamorphic.renditions![0]!.width, anamorphic.renditions![0]!.height]).toEqual([854, 480]);
  });

  it("keeps file names unique when two variants share a size", () => {
    const p = plan(
      spec({
        type: OutputType.MKV,
        video: [
          { codec: VideoCodec.H264, resolution: "720p" },
          { codec: VideoCodec.H265, resolution: "720p" },
          { codec: VideoCodec.H265, resolution: "720p" },
        ],
      }),
    );
    expect(p.renditions?.map((r) => r.file)).toEqual(["720p_h264.mkv", "720p_h265_1.mkv", "720p_h265_2.mkv"]);
  });

  it("lowers the frame rate with the fps filter but never raises it", () => {
    const p = plan(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, resolution: "720p", framerate: 24 },
          { codec: VideoCodec.H264, resolution: "480p", framerate: 60 },
        ],
      }),
    );
    expect(graph(p.commands[0]!)).toContain("[s0]fps=24,scale=1280:720");
    expect(graph(p.commands[0]!)).toContain("[s1]scale=854:480");
    expect(p.renditions?.map((r) => r.frameRate)).toEqual([24, 30]);
  });
});

describe("planOutput: encoder settings", () => {
  it("uses the quality tier's CRF and preset when unset, and the codec options when set", () => {
    const cmd = plan(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H264, resolution: "720p", quality: QualityTier.PREMIUM },
          {
            codec: VideoCodec.H264,
            resolution: "480p",
            h264: { crf: 30, encoderPreset: "veryfast", profile: "main", level: "3.1", tune: "film", bframes: 0, refs: 2, keyint: 48 },
          },
        ],
      }),
    ).commands[0]!;
    expect([after(cmd, "-crf:v:0"), after(cmd, "-preset:v:0")]).toEqual(["20", "slow"]);
    // Each file is its own output: the second variant is stream 0 of its file too.
    const second = cmd.slice(cmd.indexOf("[v1]"));
    expect([
      after(second, "-crf:v:0"),
      after(second, "-preset:v:0"),
      after(second, "-profile:v:0"),
      after(second, "-level:v:0"),
      after(second, "-tune:v:0"),
    ]).toEqual(["30", "veryfast", "main", "3.1", "film"]);
    expect([after(second, "-bf:v:0"), after(second, "-refs:v:0"), after(second, "-g:v:0")]).toEqual(["0", "2", "48"]);
  });

  it("writes cbr and vbr with VBV and a chosen target when the variant has no bitrate", () => {
    const cmd = plan(
      spec({
        type: OutputType.MKV,
        video: [
          { codec: VideoCodec.H264, resolution: "720p", bitrate: 3000, h264: { bitrateMode: BitrateMode.CBR } },
          { codec: VideoCodec.H264, resolution: "480p", h264: { bitrateMode: BitrateMode.VBR, maxBitrateKbps: 2500, bufferSizeKbps: 4000 } },
        ],
      }),
    ).commands[0]!;
    expect([after(cmd, "-b:v:0"), after(cmd, "-minrate:v:0"), after(cmd, "-maxrate:v:0"), after(cmd, "-bufsize:v:0"), after(cmd, "-x264-params:v:0")]).toEqual([
      "3000k",
      "3000k",
      "3000k",
      "3000k",
      "nal-hrd=cbr",
    ]);
    const second = cmd.slice(cmd.indexOf("[v1]"));
    const target = tierTargetKbps("h264", 854, 480, 30);
    expect([after(second, "-b:v:0"), after(second, "-maxrate:v:0"), after(second, "-bufsize:v:0")]).toEqual([`${target}k`, "2500k", "4000k"]);
  });

  it("writes each codec with its encoder: x265 tagged hvc1, vp9 with row-mt, SVT-AV1 capped CRF", () => {
    const cmd = plan(
      spec({
        type: OutputType.MP4,
        video: [
          { codec: VideoCodec.H265, resolution: "720p", h265: { profile: "main10", bframes: 4 } },
          { codec: VideoCodec.VP9, resolution: "480p", vp9: { crf: 33, encoderPreset: "realtime" } },
          { codec: VideoCodec.AV1, resolution: "480p", av1: { crf: 40, maxBitrateKbps: 900, encoderPreset: "10", tune: "psnr", filmGrain: 8 } },
        ],
      }),
    ).commands[0]!;
    expect(after(cmd, "-c:v:0")).toBe("libx265");
    expect(after(cmd, "-tag:v:0")).toBe("hvc1");
    expect(after(cmd, "-x265-params:v:0")).toBe("keyint=60:log-level=error:bframes=4");
    expect(graph(cmd)).toContain("format=yuv420p10le[v0]");
    const vp9 = cmd.slice(cmd.indexOf("[v1]"));
    expect([
      after(vp9, "-c:v:0"),
      after(vp9, "-deadline:v:0"),
      after(vp9, "-cpu-used:v:0"),
      after(vp9, "-row-mt:v:0"),
      after(vp9, "-crf:v:0"),
      after(vp9, "-b:v:0"),
    ]).toEqual(["libvpx-vp9", "realtime", "8", "1", "33", "0"]);
    const av1 = cmd.slice(cmd.indexOf("[v2]"));
    expect([after(av1, "-c:v:0"), after(av1, "-preset:v:0"), after(av1, "-crf:v:0"), after(av1, "-maxrate:v:0"), after(av1, "-svtav1-params:v:0")]).toEqual([
      "libsvtav1",
      "10",
      "40",
      "900k",
      "tune=1:film-grain=8",
    ]);
  });

  it("auto mode caps each rung's maxrate at the input's ceiling scaled by pixels", () => {
    // A 1080p input at 1 Mbps: the 720p rung may not spend more than 1 Mbps × 720²/1080² ≈ 444 kbps.
    const input = probe({ bitRate: 1_128_000 }, { bitRate: 1_000_000 });
    const p = plan(
      spec({
        type: OutputType.MP4,
        encodingMode: EncodingMode.AUTO,
        video: [
          { codec: VideoCodec.H264, resolution: "1080p" },
          { codec: VideoCodec.H264, resolution: "720p" },
          { codec: VideoCodec.H265, resolution: "720p" },
        ],
      }),
      input,
    );
    const cmd = p.commands[0]!;
    const rung = (i: number) => cmd.slice(cmd.indexOf(`[v${i}]`));
    expect(after(rung(0), "-maxrate:v:0")).toBe("1000k");
    expect(after(rung(1), "-maxrate:v:0")).toBe("444k");
    expect(after(rung(1), "-bufsize:v:0")).toBe("888k");
    // H.265 needs fewer bits than the H.264 source for the same quality.
    expect(after(rung(2), "-maxrate:v:0")).toBe("267k");
    // A rich source is capped by the tier's target instead.
    const rich = plan(
      spec({ type: OutputType.MP4, encodingMode: EncodingMode.AUTO, video: [{ codec: VideoCodec.H264, resolution: "720p" }] }),
      probe({}, { bitRate: 50_000_000 }),
    );
    expect(after(rich.commands[0]!, "-maxrate:v:0")).toBe(`${tierTargetKbps("h264", 1280, 720, 30)}k`);
    // Fixed mode leaves CRF uncapped.
    expect(plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, resolution: "720p" }] }), input).commands[0]).not.toContain("-maxrate:v:0");
  });
});

describe("planOutput: audio", () => {
  it("adds one default track when the input has audio; none with disable_audio or a silent input", () => {
    const withAudio = plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264 }] })).commands[0]!;
    expect([after(withAudio, "-c:a:0"), after(withAudio, "-b:a:0"), after(withAudio, "-ar:a:0")]).toEqual(["aac", "128k", "44100"]);
    expect(plan(spec({ type: OutputType.MP4, disableAudio: true, video: [{ codec: VideoCodec.H264 }] })).commands[0]).not.toContain("-c:a:0");
    expect(plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264 }] }), probe({ audio: undefined, audioStreams: 0 })).commands[0]).not.toContain(
      "-c:a:0",
    );
    const webm = plan(spec({ type: OutputType.WEBM, video: [{ codec: VideoCodec.VP9 }] })).commands[0]!;
    expect([after(webm, "-c:a:0"), after(webm, "-ar:a:0")]).toEqual(["libopus", "48000"]);
  });

  it("normalizes loudness with loudnorm and maps track i to input stream i when there are several", () => {
    const cmd = plan(
      spec({
        type: OutputType.MKV,
        video: [{ codec: VideoCodec.H264 }],
        audio: [
          { codec: AudioCodec.AAC, normalize: true, language: "en" },
          { codec: AudioCodec.MP3, channels: 2, sampleRate: 44100, language: "pt", name: "Português" },
        ],
      }),
      probe({ audioStreams: 2 }),
    ).commands[0]!;
    expect([after(cmd, "-filter:a:0"), after(cmd, "-ar:a:0")]).toEqual(["loudnorm=I=-23:TP=-1:LRA=7", "44100"]);
    expect(cmd.join(" ")).toContain("-map 0:a:0 -map 0:a:1");
    expect([after(cmd, "-c:a:1"), after(cmd, "-metadata:s:a:0")]).toEqual(["libmp3lame", "language=en"]);
  });

  it("plans an audio-only output from audio tracks and no variants", () => {
    const p = plan(spec({ type: OutputType.MP4, audio: [{ codec: AudioCodec.AAC, bitrateKbps: 96 }] }));
    expect(p.main).toBe("audio.mp4");
    expect(p.commands[0]).toContain("-vn");
    expect(() => plan(spec({ type: OutputType.MP4, audio: [{ codec: AudioCodec.AAC }] }), probe({ audio: undefined }))).toThrow(MediaError);
  });
});

describe("planOutput: clip, layouts and strategies", () => {
  it("seeks the input for a clip and reports the clipped duration", () => {
    const p = plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264 }] }), probe(), { clip: { startSeconds: 2, endSeconds: 5.5 } });
    const cmd = p.commands[0]!;
    expect(cmd.slice(cmd.indexOf("-ss"), cmd.indexOf("-i") + 2)).toEqual(["-ss", "2.000", "-to", "5.500", "-i", "/in/input"]);
    expect(p.durationMs).toBe(3500);
    expect(plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264 }] }), probe(), { clip: { startSeconds: 4, endSeconds: 0 } }).durationMs).toBe(
      6000,
    );
    const past = () => plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264 }] }), probe(), { clip: { startSeconds: 12, endSeconds: 0 } });
    expect(past).toThrow(expect.objectContaining({ code: "input_unsupported" }));
  });

  it("fails an output with video variants on an input without video", () => {
    expect(() => plan(spec({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264 }] }), probe({ video: undefined }))).toThrow(
      expect.objectContaining({ code: "input_unsupported" }),
    );
  });

  it(`splits one decode by default (${DEFAULT_STRATEGY}) and runs one process per rendition on request`, () => {
    const ladder = spec({
      type: OutputType.MP4,
      video: [
        { codec: VideoCodec.H264, resolution: "1080p" },
        { codec: VideoCodec.H264, resolution: "480p" },
      ],
    });
    const split = plan(ladder);
    expect([split.strategy, split.commands.length, split.parallel]).toEqual(["split", 1, false]);
    const per = plan(ladder, probe(), { strategy: "per-rendition" });
    expect([per.strategy, per.commands.length, per.parallel]).toEqual(["per-rendition", 2, true]);
    // The bigger rung is the bigger share of progress.
    expect(per.weights![0]! / per.weights![1]!).toBeCloseTo((1920 * 1080) / (854 * 480), 5);
    expect(per.commands.every((c) => c.includes("-progress") && c.includes("-benchmark"))).toBe(true);
  });

  it("progressive HLS (a hosted video's stream): the lowest rung and the audio first, the other rungs niced beside it, every playlist growing, the first segment short", () => {
    const ladder = spec({
      type: OutputType.HLS,
      hls: { segmentDurationSeconds: 4 },
      video: [
        { codec: VideoCodec.H264, resolution: "1080p" },
        { codec: VideoCodec.H264, resolution: "480p" },
        { codec: VideoCodec.H264, resolution: "720p" },
      ],
    });
    const p = plan(ladder, probe(), { progressive: true });
    expect([p.commands.length, p.parallel, p.nice, p.main]).toEqual([3, true, [0, 0, 10], "index.m3u8"]);
    const [first, sound, rest] = [p.commands[0]!, p.commands[1]!, p.commands[2]!];
    expect(after(first, "-var_stream_map")).toBe("v:0,name:480p,agroup:audio");
    expect(after(sound, "-var_stream_map")).toBe("a:0,name:audio_0,agroup:audio");
    expect(after(rest, "-var_stream_map")).toBe("v:0,name:1080p,agroup:audio v:1,name:720p,agroup:audio");
    expect([first, sound, rest].map((c) => c.includes("0:a:0"))).toEqual([false, true, false]);
    expect(sound.includes("-vn") && !sound.includes("-filter_complex")).toBe(true);
    for (const c of [first, sound, rest])
      expect([after(c, "-hls_playlist_type"), after(c, "-hls_flags"), after(c, "-hls_time")]).toEqual(["event", "independent_segments+temp_file", "4"]);
    // Video segments: 1 s, then 3 s, then 4 s; the audio's all 4 s (a first short one would make every one short).
    expect([first, sound, rest].map((c) => (c.includes("-hls_init_time") ? after(c, "-hls_init_time") : undefined))).toEqual(["1", undefined, "1"]);
    // Segments line up across the processes: the same keyframe rule in both.
    expect(after(first, "-force_key_frames:v:0")).toBe("expr:if(lt(n_forced,2),gte(t,n_forced*1),gte(t,(n_forced-1)*4))");
    expect(after(first, "-force_key_frames:v:0")).toBe(after(rest, "-force_key_frames:v:1"));
    expect(p.progressive).toEqual({ first: ["480p/index.m3u8", "audio_0/index.m3u8"], rest: ["1080p/index.m3u8", "720p/index.m3u8"] });
    expect(p.hlsMaster?.variants.map((v) => v.playlist)).toEqual(["1080p/index.m3u8", "480p/index.m3u8", "720p/index.m3u8"]);
    expect(p.weights![0]! < p.weights![2]!).toBe(true);
    expect(p.weights![1]! < p.weights![0]!).toBe(true);
    // One rung: it and its audio, not niced; without the option, or for a single-file output, the plan is as before.
    const one = plan(spec({ type: OutputType.HLS, video: [{ codec: VideoCodec.H264, resolution: "720p" }] }), probe(), { progressive: true });
    expect([one.commands.length, one.nice, one.progressive?.rest]).toEqual([2, undefined, []]);
    expect(plan(ladder).progressive).toBeUndefined();
    expect(after(plan(ladder).commands[0]!, "-hls_playlist_type")).toBe("vod");
    expect(plan(ladder).commands[0]!.includes("-hls_init_time")).toBe(false);
    expect(after(plan(ladder).commands[0]!, "-force_key_frames:v:0")).toBe("expr:gte(t,n_forced*4)");
    // Segments of 1 s or less have no shorter first one.
    const ladderOf = (segmentDurationSeconds: number, codec = VideoCodec.H264, keyint = 0) =>
      spec({
        type: OutputType.HLS,
        hls: { segmentDurationSeconds },
        video: [
          { codec, resolution: "720p", ...(keyint > 0 ? { h264: { keyint } } : {}) },
          { codec, resolution: "360p" },
        ],
      });
    const shortFirst = (s: OutputSpec, opts: Partial<PlanOptions> = {}) =>
      plan(s, probe(), { progressive: true, ...opts }).commands[0]!.includes("-hls_init_time");
    // Keyframes only where segments end after the first: a whole segment's GOP (120 frames at 30 fps), not 2 s.
    expect(after(p.commands[0]!, "-g:v:0")).toBe("120");
    expect(after(plan(ladder).commands[0]!, "-g:v:0")).toBe("60");
    // Segments of 1 s or less, a codec other than H.264, a GOP of the caller's, a split ladder: equal segments.
    expect([shortFirst(ladderOf(4)), shortFirst(ladderOf(1)), shortFirst(ladderOf(4, VideoCodec.H265)), shortFirst(ladderOf(4, VideoCodec.H264, 48))]).toEqual([
      true,
      false,
      false,
      false,
    ]);
    expect(shortFirst(ladderOf(4), { chunked: true })).toBe(false);
    const single = spec({ type: OutputType.HLS, segments: { singleFile: true }, video: [{ codec: VideoCodec.H264, resolution: "720p" }] });
    expect(plan(single, probe(), { progressive: true }).progressive).toBeUndefined();
  });

  it("chunks: whole segments, split only when two of the asked length fit, finer to make 8 (not under 12 s), shared out evenly", () => {
    const lengths = (spans: { start: number; end?: number }[], seconds: number) => spans.map((c) => (c.end ?? seconds) - c.start);
    // 130 s, 60 s asked: two fit, so split; 8 chunks of 16 s (4 segments), the last to the end.
    expect(lengths(chunkSpans(130_000, 4, 60), 130)).toEqual([16, 16, 16, 16, 16, 16, 16, 18]);
    // 300 s, 50 s asked (48 s in segments of 6): 8 chunks of 6 segments, the 2 left over to the first two.
    expect(chunkSpans(300_000, 6, 50)).toEqual([
      { start: 0, end: 42 },
      { start: 42, end: 84 },
      { start: 84, end: 120 },
      { start: 120, end: 156 },
      { start: 156, end: 192 },
      { start: 192, end: 228 },
      { start: 228, end: 264 },
      { start: 264 },
    ]);
    // Long enough for 8 of the asked length: that length.
    expect(lengths(chunkSpans(600_000, 4, 60), 600)).toEqual(Array(10).fill(60));
    // Fewer than 8 where 12 s chunks would not make 8: 120 s is 7 chunks of at least 16 s.
    expect(lengths(chunkSpans(120_000, 4, 24), 120)).toEqual([20, 20, 16, 16, 16, 16, 16]);
    // Shorter asked lengths than 12 s are kept: the tests' 6 s chunks.
    expect(chunkSpans(48_000, 6, 6)).toHaveLength(8);
    expect(chunkSpans(30_000, 4, 1)).toHaveLength(7);
    // Not worth splitting: fewer than two of the asked length, or none asked.
    expect(chunkSpans(119_000, 4, 60)).toEqual([]);
    expect(chunkSpans(30_000, 4, 0)).toEqual([]);
  });

  it("a split ladder: the audio whole and every rung in chunks; a hosted stream's lowest rung whole with the audio", () => {
    const ladder = spec({
      type: OutputType.HLS,
      hls: { segmentDurationSeconds: 4 },
      video: [
        { codec: VideoCodec.H264, resolution: "1080p" },
        { codec: VideoCodec.H264, resolution: "480p" },
      ],
    });
    const p = probe({ durationMs: 130_000 }, { frameRate: 30 });
    // Chunked whole: the source is decoded once, by the chunks; the encode's own command is the audio.
    const main = plan(ladder, p, { chunked: true });
    expect([main.commands.length, main.chunked?.rest.map((r) => r.name), main.progressive]).toEqual([1, ["1080p", "480p"], undefined]);
    expect(main.commands[0]!.includes("-vn") && !main.commands[0]!.includes("-filter_complex")).toBe(true);
    expect([after(main.commands[0]!, "-var_stream_map"), after(main.commands[0]!, "-output_ts_offset")]).toEqual(["a:0,name:audio_0,agroup:audio", "1.000000"]);
    expect(main.hlsMaster?.variants).toHaveLength(2);
    expect(after(plan(ladder, p, { chunk: { start: 60, end: 120 } }).commands[0]!, "-var_stream_map")).toBe("v:0,name:1080p v:1,name:480p");
    // A hosted stream (wholeLowestRung), or a ladder without audio: the lowest rung stays whole.
    const hosted = plan(ladder, p, { chunked: true, wholeLowestRung: true });
    expect([hosted.chunked?.rest.map((r) => r.name), after(hosted.commands[0]!, "-var_stream_map")]).toEqual([
      ["1080p"],
      "v:0,name:480p,agroup:audio a:0,name:audio_0,agroup:audio",
    ]);
    expect(after(plan(ladder, p, { chunk: { start: 60, end: 120 }, wholeLowestRung: true }).commands[0]!, "-var_stream_map")).toBe("v:0,name:1080p");
    const silent = spec({ type: OutputType.HLS, hls: { segmentDurationSeconds: 4 }, disableAudio: true, video: ladder.video });
    expect(plan(silent, p, { chunked: true }).chunked?.rest.map((r) => r.name)).toEqual(["1080p"]);
  });

  it("a hosted stream's split ladder: the lowest rung and the audio whole; a chunk its other rungs over its frames, numbered and timed as in the whole", () => {
    const init = {
      type: OutputType.HLS,
      hls: { segmentDurationSeconds: 4 },
      video: [
        { codec: VideoCodec.H264, resolution: "1080p" },
        { codec: VideoCodec.H264, resolution: "480p" },
        { codec: VideoCodec.H264, resolution: "720p", framerate: 15 },
      ],
    };
    const ladder = spec(init);
    const p = probe({ durationMs: 130_000 }, { frameRate: 30 });
    expect(chunkable(ladder, p)).toBe(true);
    const main = plan(ladder, p, { chunked: true, wholeLowestRung: true });
    expect([main.commands.length, main.chunked?.rest.map((r) => r.name), main.chunked?.segmentSeconds]).toEqual([1, ["1080p", "720p"], 4]);
    expect(after(main.commands[0]!, "-var_stream_map")).toBe("v:0,name:480p,agroup:audio a:0,name:audio_0,agroup:audio");
    expect([after(main.commands[0]!, "-output_ts_offset"), after(main.commands[0]!, "-hls_playlist_type")]).toEqual(["1.000000", "vod"]);
    expect(main.hlsMaster?.variants).toHaveLength(3);
    // Progressive too: the publisher has only the lowest rung to grow.
    expect(plan(ladder, p, { chunked: true, progressive: true }).progressive).toEqual({ first: ["480p/index.m3u8", "audio_0/index.m3u8"], rest: [] });
    const middle = plan(ladder, p, { chunk: { start: 60, end: 120 }, wholeLowestRung: true }).commands[0]!;
    expect([after(middle, "-ss"), after(middle, "-to"), after(middle, "-start_number"), after(middle, "-output_ts_offset")]).toEqual([
      "60.000000",
      "120.016667",
      "15",
      "61.000000",
    ]);
    expect([after(middle, "-frames:v:0"), after(middle, "-frames:v:1")]).toEqual(["1800", "900"]);
    expect(middle.includes("-map") && !middle.includes("0:a:0")).toBe(true);
    expect(after(middle, "-var_stream_map")).toBe("v:0,name:1080p v:1,name:720p");
    const last = plan(ladder, p, { chunk: { start: 120 }, wholeLowestRung: true });
    expect([after(last.commands[0]!, "-to"), after(last.commands[0]!, "-frames:v:0"), last.durationMs]).toEqual([undefined, undefined, 10_000]);
    // Within a clip: the chunk's times are the clip's.
    const clipped = plan(ladder, p, { chunk: { start: 8, end: 16 }, clip: { startSeconds: 10, endSeconds: 100 }, wholeLowestRung: true }).commands[0]!;
    expect([after(clipped, "-ss"), after(clipped, "-to"), after(clipped, "-output_ts_offset")]).toEqual(["18.000000", "26.016667", "9.000000"]);
    // What cannot be split: one rung, a single file, keys, no video.
    expect(chunkable(spec({ type: OutputType.HLS, video: [{ codec: VideoCodec.H264, resolution: "720p" }] }), p)).toBe(false);
    expect(chunkable(spec({ ...init, segments: { singleFile: true } }), p)).toBe(false);
    expect(chunkable(spec({ ...init, drm: { scheme: EncryptionScheme.AES_128 } }), p)).toBe(false);
    expect(chunkable(spec({ ...init, type: OutputType.DASH }), p)).toBe(false);
    expect(chunkable(ladder, probe({ video: undefined }))).toBe(false);
    expect(() => plan(spec({ type: OutputType.HLS, video: [{ codec: VideoCodec.H264, resolution: "720p" }] }), p, { chunked: true })).toThrow(MediaError);
  });

  it("HLS: ts for H.264, fmp4 for HEVC or AV1 or when asked, keyframes aligned to the segment length", () => {
    const h264 = plan(
      spec({
        type: OutputType.HLS,
        hls: { segmentDurationSeconds: 4 },
        video: [
          { codec: VideoCodec.H264, resolution: "720p" },
          { codec: VideoCodec.H264, resolution: "480p" },
        ],
      }),
    );
    const cmd = h264.commands[0]!;
    expect([
      after(cmd, "-hls_segment_type"),
      after(cmd, "-hls_time"),
      after(cmd, "-g:v:1"),
      after(cmd, "-sc_threshold:v:1"),
      after(cmd, "-force_key_frames:v:0"),
    ]).toEqual(["mpegts", "4", "60", "0", "expr:gte(t,n_forced*4)"]);
    expect(after(cmd, "-var_stream_map")).toBe("v:0,name:720p,agroup:audio v:1,name:480p,agroup:audio a:0,name:audio_0,agroup:audio");
    expect(h264.main).toBe("index.m3u8");
    expect(h264.hlsMaster?.variants.map((v) => v.playlist)).toEqual(["720p/index.m3u8", "480p/index.m3u8"]);
    // A 5 s segment is not a multiple of 2 s: GOPs of 1 s.
    expect(after(plan(spec({ type: OutputType.HLS, hls: { segmentDurationSeconds: 5 }, video: [{ codec: VideoCodec.H264 }] })).commands[0]!, "-g:v:0")).toBe(
      "30",
    );
    const hevc = plan(spec({ type: OutputType.HLS, hls: { manifestName: "master" }, video: [{ codec: VideoCodec.H265 }] }));
    expect([after(hevc.commands[0]!, "-hls_segment_type"), after(hevc.commands[0]!, "-tag:v:0"), hevc.main]).toEqual(["fmp4", "hvc1", "master.m3u8"]);
    expect(after(hevc.commands[0]!, "-x265-params:v:0")).toBe("keyint=60:log-level=error:min-keyint=60:scenecut=0:open-gop=0");
    const asked = plan(spec({ type: OutputType.HLS, segments: { segmentFormat: SegmentFormat.FMP4 }, video: [{ codec: VideoCodec.H264 }] }));
    expect(after(asked.commands[0]!, "-hls_segment_type")).toBe("fmp4");
  });

  it("HLS per rendition: one process per video rendition and one for the audio tracks", () => {
    const p = plan(
      spec({
        type: OutputType.HLS,
        video: [
          { codec: VideoCodec.H264, resolution: "720p" },
          { codec: VideoCodec.H264, resolution: "480p" },
        ],
        audio: [{ codec: AudioCodec.AAC }, { codec: AudioCodec.AAC, bitrateKbps: 64 }],
      }),
      probe(),
      { strategy: "per-rendition" },
    );
    expect(p.commands.map((c) => after(c, "-var_stream_map"))).toEqual(["v:0,name:720p", "v:0,name:480p", "a:0,name:audio_0 a:1,name:audio_1"]);
    expect(p.parallel).toBe(true);
  });

  it("DASH and adaptive: one dash muxer, audio sets per language, HLS playlists over the same segments for adaptive", () => {
    const dash = plan(
      spec({
        type: OutputType.DASH,
        dash: { segmentTimeline: true, minBufferTimeSeconds: 4, manifestName: "stream" },
        video: [{ codec: VideoCodec.VP9 }, { codec: VideoCodec.H264, resolution: "480p" }],
        audio: [
          { codec: AudioCodec.OPUS, language: "en" },
          { codec: AudioCodec.AAC, language: "en" },
          { codec: AudioCodec.OPUS, language: "de" },
        ],
      }),
      probe(),
      {
        strategy: "per-rendition",
      },
    );
    const cmd = dash.commands[0]!;
    expect([dash.main, dash.strategy, after(cmd, "-use_timeline"), after(cmd, "-adaptation_sets")]).toEqual([
      "stream.mpd",
      "split",
      "1",
      "id=0,streams=v id=1,streams=2 id=2,streams=3 id=3,streams=4",
    ]);
    expect(dash.dashManifest).toEqual({ file: "stream.mpd", minBufferTimeSeconds: 4 });
    const adaptive = plan(
      spec({
        type: OutputType.ADAPTIVE,
        segments: { segmentDurationSeconds: 4 },
        video: [
          { codec: VideoCodec.H264, resolution: "720p" },
          { codec: VideoCodec.H264, resolution: "480p" },
        ],
      }),
    );
    expect([adaptive.main, after(adaptive.commands[0]!, "-hls_playlist"), after(adaptive.commands[0]!, "-seg_duration")]).toEqual(["index.m3u8", "1", "4"]);
    expect(adaptive.hlsMaster?.variants.map((v) => v.playlist)).toEqual(["media_0.m3u8", "media_1.m3u8"]);
    expect(adaptive.hlsMaster?.audio.map((a) => a.playlist)).toEqual(["media_2.m3u8"]);
  });
});

describe("planOutput: protected outputs", () => {
  const ladder = [
    { codec: VideoCodec.H264, resolution: "720p" },
    { codec: VideoCodec.H264, resolution: "480p" },
  ];
  const outputs = (cmd: string[]) => cmd.filter((a) => a.endsWith(".mp4"));

  it("drmSchemeOf: the scheme asked, else aes128 on ts HLS and cbcs on CMAF; undefined when clear", () => {
    expect(drmSchemeOf(spec({ type: OutputType.HLS, video: ladder }))).toBeUndefined();
    expect(drmSchemeOf(spec({ type: OutputType.HLS, video: ladder, drm: {} }))).toBe("aes128");
    expect(drmSchemeOf(spec({ type: OutputType.HLS, video: ladder, hls: { segmentFormat: SegmentFormat.FMP4 }, drm: {} }))).toBe("cbcs");
    expect(drmSchemeOf(spec({ type: OutputType.HLS, video: [{ codec: VideoCodec.H265 }], drm: {} }))).toBe("cbcs");
    expect(drmSchemeOf(spec({ type: OutputType.DASH, video: ladder, drm: {} }))).toBe("cbcs");
    expect(drmSchemeOf(spec({ type: OutputType.ADAPTIVE, video: ladder, drm: { scheme: EncryptionScheme.CENC } }))).toBe("cenc");
    expect(drmSchemeOf(spec({ type: OutputType.HLS, video: ladder, drm: { scheme: EncryptionScheme.AES_128 } }))).toBe("aes128");
  });

  it("drmSystemsOf: the systems by name, in the order asked, each once", () => {
    expect(drmSystemsOf(spec({ type: OutputType.DASH }))).toEqual([]);
    const systems = [DrmSystem.PLAYREADY, DrmSystem.CLEARKEY, DrmSystem.UNSPECIFIED, DrmSystem.WIDEVINE, DrmSystem.FAIRPLAY, DrmSystem.CLEARKEY];
    expect(drmSystemsOf(spec({ type: OutputType.DASH, drm: { systems } }))).toEqual(["playready", "clearkey", "widevine", "fairplay"]);
  });

  it("adaptive cbcs: clear MP4s per rendition and audio track for the packager, the clear layout's names, classes by size", () => {
    const p = plan(
      spec({
        type: OutputType.ADAPTIVE,
        segments: { segmentDurationSeconds: 4 },
        video: ladder,
        audio: [{ codec: AudioCodec.AAC, language: "pt-BR" }],
        drm: { systems: [DrmSystem.CLEARKEY, DrmSystem.WIDEVINE] },
      }),
    );
    const cmd = p.commands[0]!;
    expect([p.commands.length, p.strategy, p.parallel]).toEqual([1, "split", false]);
    expect(cmd).not.toContain("dash");
    expect(cmd).not.toContain("-hls_playlist");
    expect(outputs(cmd)).toEqual(["/work/out_1/_clear/720p.mp4", "/work/out_1/_clear/480p.mp4", "/work/out_1/_clear/audio_0.mp4"]);
    // Each file holds one stream: the video files no audio, the audio file no video.
    const first = cmd.slice(cmd.indexOf("[v0]") - 1, cmd.indexOf("/work/out_1/_clear/720p.mp4") + 1);
    expect(first.filter((a) => a === "-map")).toHaveLength(1);
    expect(cmd.slice(cmd.indexOf("/work/out_1/_clear/480p.mp4") + 1)).toEqual([
      "-map",
      "0:a:0",
      "-c:a:0",
      "aac",
      "-b:a:0",
      "128k",
      "-ar:a:0",
      "44100",
      "-metadata:s:a:0",
      "language=pt-BR",
      "-max_muxing_queue_size",
      "4096",
      "-f",
      "mp4",
      "/work/out_1/_clear/audio_0.mp4",
    ]);
    // Keyframes on the segment grid in every rendition: the packager cuts segments at them.
    expect([after(first, "-force_key_frames:v:0"), after(first, "-sc_threshold:v:0"), after(first, "-g:v:0")]).toEqual(["expr:gte(t,n_forced*4)", "0", "60"]);
    expect(p.packaging).toEqual({
      scheme: "cbcs",
      systems: ["clearkey", "widevine"],
      segmentSeconds: 4,
      singleFile: false,
      dir: "/work/out_1",
      clearDir: "/work/out_1/_clear",
      secretsDir: "/work/out_1.keys",
      streams: [
        {
          input: "/work/out_1/_clear/720p.mp4",
          kind: "video",
          trackClass: "hd",
          name: "720p",
          language: "",
          init: "init-0.m4s",
          segmentTemplate: "chunk-0-$Number%05d$.m4s",
          playlist: "media_0.m3u8",
        },
        {
          input: "/work/out_1/_clear/480p.mp4",
          kind: "video",
          trackClass: "sd",
          name: "480p",
          language: "",
          init: "init-1.m4s",
          segmentTemplate: "chunk-1-$Number%05d$.m4s",
          playlist: "media_1.m3u8",
        },
        {
          input: "/work/out_1/_clear/audio_0.mp4",
          kind: "audio",
          trackClass: "audio",
          name: "audio_0",
          language: "pt-BR",
          init: "init-2.m4s",
          segmentTemplate: "chunk-2-$Number%05d$.m4s",
          playlist: "media_2.m3u8",
        },
      ],
      mpd: "manifest.mpd",
      hls: { master: "index.m3u8", playlistType: "VOD" },
    });
    expect([p.main, p.renditions?.map((r) => r.file)]).toEqual(["index.m3u8", ["media_0.m3u8", "media_1.m3u8"]]);
    expect([p.hlsMaster?.variants.map((v) => v.playlist), p.hlsMaster?.audio.map((a) => a.playlist)]).toEqual([
      ["media_0.m3u8", "media_1.m3u8"],
      ["media_2.m3u8"],
    ]);
    expect(p.dashManifest).toEqual({ file: "manifest.mpd", minBufferTimeSeconds: 2 });
    expect(p.aes128).toBeUndefined();
  });

  it("dash cenc: the MPD only; a portrait 720x1280 rung is HD and a 480x854 one SD, by their short side", () => {
    const p = plan(
      spec({
        type: OutputType.DASH,
        dash: { manifestName: "stream" },
        video: ladder,
        disableAudio: true,
        drm: { scheme: EncryptionScheme.CENC, systems: [DrmSystem.PLAYREADY] },
      }),
      probe({}, { width: 1080, height: 1920 }),
    );
    expect([p.main, p.renditions?.map((r) => r.file), p.hlsMaster, p.dashManifest?.file]).toEqual([
      "stream.mpd",
      ["stream.mpd", "stream.mpd"],
      undefined,
      "stream.mpd",
    ]);
    expect(p.packaging?.streams.map((s) => [s.name, s.trackClass, s.init, s.playlist])).toEqual([
      ["720p", "hd", "init-0.m4s", undefined],
      ["480p", "sd", "init-1.m4s", undefined],
    ]);
    expect([p.packaging?.scheme, p.packaging?.mpd, p.packaging?.hls]).toEqual(["cenc", "stream.mpd", undefined]);
  });

  it("hls fmp4 cbcs per rendition: one process per rendition and one for the audio, rendition folders, EVENT kept", () => {
    const p = plan(
      spec({
        type: OutputType.HLS,
        hls: { segmentFormat: SegmentFormat.FMP4, playlistType: HlsPlaylistType.EVENT, manifestName: "master" },
        video: ladder,
        audio: [{ codec: AudioCodec.AAC }, { codec: AudioCodec.AAC, bitrateKbps: 64 }],
        drm: { systems: [DrmSystem.CLEARKEY] },
      }),
      probe(),
      { strategy: "per-rendition" },
    );
    expect([p.strategy, p.parallel, p.commands.map(outputs)]).toEqual([
      "per-rendition",
      true,
      [["/work/out_1/_clear/720p.mp4"], ["/work/out_1/_clear/480p.mp4"], ["/work/out_1/_clear/audio_0.mp4", "/work/out_1/_clear/audio_1.mp4"]],
    ]);
    expect(p.commands[2]).not.toContain("-filter_complex");
    expect(p.weights?.length).toBe(3);
    expect(p.packaging?.streams.map((s) => [s.init, s.segmentTemplate, s.playlist])).toEqual([
      ["720p/init.mp4", "720p/seg_$Number%05d$.m4s", "720p/index.m3u8"],
      ["480p/init.mp4", "480p/seg_$Number%05d$.m4s", "480p/index.m3u8"],
      ["audio_0/init.mp4", "audio_0/seg_$Number%05d$.m4s", "audio_0/index.m3u8"],
      ["audio_1/init.mp4", "audio_1/seg_$Number%05d$.m4s", "audio_1/index.m3u8"],
    ]);
    expect([p.packaging?.hls, p.packaging?.mpd, p.dashManifest, p.main]).toEqual([
      { master: "master.m3u8", playlistType: "EVENT" },
      undefined,
      undefined,
      "master.m3u8",
    ]);
    expect(p.hlsMaster?.variants.map((v) => v.playlist)).toEqual(["720p/index.m3u8", "480p/index.m3u8"]);
  });

  it("single file: one file per stream, no segment template", () => {
    const hls = plan(
      spec({
        type: OutputType.HLS,
        segments: { singleFile: true, segmentFormat: SegmentFormat.FMP4 },
        video: [{ codec: VideoCodec.H264 }],
        drm: { systems: [DrmSystem.CLEARKEY] },
      }),
    );
    expect(hls.packaging?.streams.map((s) => [s.init, s.segmentTemplate])).toEqual([
      ["1920x1080/media.m4s", undefined],
      ["audio_0/media.m4s", undefined],
    ]);
    const dash = plan(
      spec({ type: OutputType.DASH, segments: { singleFile: true }, video: [{ codec: VideoCodec.H264 }], drm: { systems: [DrmSystem.CLEARKEY] } }),
    );
    expect([dash.packaging?.singleFile, dash.packaging?.streams.map((s) => s.init)]).toEqual([true, ["stream-0.m4s", "stream-1.m4s"]]);
  });

  it("hls ts aes_128: ffmpeg's muxer encrypts with a key info file outside the output folder, in every command", () => {
    const s = spec({ type: OutputType.HLS, video: ladder, drm: {} });
    const split = plan(s);
    expect(split.aes128).toEqual({ keyInfoFile: "/work/out_1.keys/aes128.keyinfo" });
    expect([split.packaging, after(split.commands[0]!, "-hls_key_info_file"), after(split.commands[0]!, "-hls_segment_type")]).toEqual([
      undefined,
      "/work/out_1.keys/aes128.keyinfo",
      "mpegts",
    ]);
    const per = plan(s, probe(), { strategy: "per-rendition" });
    expect(per.commands.map((c) => after(c, "-hls_key_info_file"))).toEqual(Array(3).fill("/work/out_1.keys/aes128.keyinfo"));
    // The key info file names the key file: neither may be among the files uploaded from dir.
    expect(path.relative(per.dir, per.aes128!.keyInfoFile).startsWith("..")).toBe(true);
  });

  it("a clear output has neither packaging nor aes_128", () => {
    for (const type of [OutputType.HLS, OutputType.DASH, OutputType.ADAPTIVE]) {
      const p = plan(spec({ type, video: ladder }));
      expect([p.packaging, p.aes128, p.commands.flat().includes("-hls_key_info_file")]).toEqual([undefined, undefined, false]);
    }
  });
});
