// planOutput without running ffmpeg: clips, layouts (progressive files, HLS, DASH, CMAF), strategies, growing
// streams and split ladders.
import { describe, expect, it } from "vitest";
import { EncryptionScheme, OutputType, type OutputSpec } from "../src/gen/media/v1/job_pb.js";
import { AudioCodec, SegmentFormat, VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { MediaError } from "./media-errors.js";
import { chunkable, chunkSpans, DEFAULT_STRATEGY, planOutput, type PlanOptions } from "./plan.js";
import { after, plan, probe, spec } from "./plan.fixtures.js";

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
