// The small rules the layout planners share: the clip, a command's input, chunks and their inputs,
// segment lengths, names of tracks and playlists, where keys live, what a split ladder refuses.
import { describe, expect, it } from "vitest";
import { HdrMode, OutputType } from "../../src/gen/media/v1/job_pb.js";
import { SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { MediaError } from "../media-errors.js";
import type { AudioPlan } from "../renditions.js";
import { plan, probe, spec, type SpecInit } from "../plan.fixtures.js";
import { chunkable, chunkInputArgs, chunkOffset, chunkSpans, wholeRung } from "./chunking.js";
import { audioMaps, inputArgs, resolveClip } from "./commands.js";
import { secretsDirOf } from "./drm.js";
import { iframePlaylistOf, languageName } from "./master.js";
import { segmentFormatOf, segmentSecondsOf } from "./segments.js";

const input = { file: "/in/input", probe: probe() };
const clipOf = (startSeconds: number, endSeconds: number, durationMs = 10_000) =>
  resolveClip({ outputId: "o", workDir: "/w", clip: { startSeconds, endSeconds } }, probe({ durationMs }));

describe("the clip and a command's input", () => {
  it("resolveClip: none when unset or both ends 0; a start before 0 is 0; an end past the input is its end", () => {
    expect(resolveClip({ outputId: "o", workDir: "/w" }, probe())).toEqual({ durationMs: 10_000 });
    expect(clipOf(0, 0)).toEqual({ durationMs: 10_000 });
    expect(clipOf(-1, 4)).toEqual({ clip: { start: 0, end: 4 }, durationMs: 4000 });
    expect(clipOf(2.25, 50)).toEqual({ clip: { start: 2.25, end: 10 }, durationMs: 7750 });
    expect(clipOf(2, 0)).toEqual({ clip: { start: 2 }, durationMs: 8000 });
    // An input of unknown length: the end is the clip's; without one, nothing is left to measure.
    expect(clipOf(2, 50, 0)).toEqual({ clip: { start: 2, end: 50 }, durationMs: 48_000 });
    expect(clipOf(2, 0, 0)).toEqual({ clip: { start: 2 }, durationMs: 0 });
  });

  it("resolveClip: a clip starting at or after the input's end, or ending before it starts, is the input's fault", () => {
    expect(() => clipOf(10, 0)).toThrow(new MediaError("input_unsupported", "the clip starts at 10 s but the input is 10.000 s long"));
    expect(() => clipOf(5, 3)).toThrow(new MediaError("input_unsupported", "the clip ends at 3 s, before it starts at 5 s"));
    expect(() => clipOf(5, 5)).toThrow(MediaError);
  });

  it("inputArgs: a seek only past 0, an end only when set, to the millisecond", () => {
    expect(inputArgs(input, undefined)).toEqual(["-i", "/in/input"]);
    expect(inputArgs(input, { start: 0, end: 5 })).toEqual(["-to", "5.000", "-i", "/in/input"]);
    expect(inputArgs(input, { start: 2.5 })).toEqual(["-ss", "2.500", "-i", "/in/input"]);
    const tracks = [{ source: 0 }, { source: 1 }] as AudioPlan[];
    expect(audioMaps(tracks)).toEqual(["-map", "0:a:0", "-map", "0:a:1"]);
  });
});

describe("chunks", () => {
  const hls = (init: SpecInit = {}) =>
    spec({
      type: OutputType.HLS,
      video: [
        { codec: VideoCodec.H264, resolution: "720p" },
        { codec: VideoCodec.H264, resolution: "480p" },
      ],
      ...init,
    });

  it("chunkable: not with I-frame playlists, content-aware rates or an input without a frame rate", () => {
    expect(chunkable(hls(), probe())).toBe(true);
    expect(chunkable(hls({ hls: { iframePlaylists: true } }), probe())).toBe(false);
    expect(chunkable(hls({ contentAware: { enabled: true } }), probe())).toBe(false);
    expect(chunkable(hls(), probe({}, { frameRate: 0 }))).toBe(false);
    expect(chunkable(hls({ type: OutputType.MP4 }), probe())).toBe(false);
  });

  it("chunkSpans: nothing without a segment or a chunk length", () => {
    expect(chunkSpans(130_000, 0, 60)).toEqual([]);
    expect(chunkSpans(130_000, Number.NaN, 60)).toEqual([]);
    expect(chunkSpans(130_000, 4, -1)).toEqual([]);
  });

  it("chunkInputArgs: from the chunk's start to half a frame after its end, within the clip; the last one to the clip's end", () => {
    const ctx = { input: probe({}, { frameRate: 25 }), spec: hls(), isoBmff: false };
    expect(chunkInputArgs(input, undefined, { start: 0, end: 12 }, ctx)).toEqual(["-to", "12.020000", "-i", "/in/input"]);
    expect(chunkInputArgs(input, undefined, { start: 12 }, ctx)).toEqual(["-ss", "12.000000", "-i", "/in/input"]);
    expect(chunkInputArgs(input, { start: 1, end: 13 }, { start: 0, end: 12 }, ctx)).toEqual(["-ss", "1.000000", "-to", "13.000000", "-i", "/in/input"]);
    expect(chunkInputArgs(input, { start: 1, end: 40 }, { start: 12 }, ctx)).toEqual(["-ss", "13.000000", "-to", "40.000000", "-i", "/in/input"]);
  });

  it("chunkOffset: every command of a split ladder starts a second in, a chunk at its own start after that", () => {
    expect([chunkOffset(undefined), chunkOffset({ start: 0, end: 12 }), chunkOffset({ start: 36 })]).toEqual(["1.000000", "1.000000", "37.000000"]);
  });

  it("wholeRung: the rung the split plan encodes itself, if any", () => {
    const long = probe({ durationMs: 130_000 });
    expect(wholeRung(plan(hls(), long, { chunked: true, wholeLowestRung: true }))).toBe("480p/index.m3u8");
    expect(wholeRung(plan(hls(), long, { chunked: true }))).toBeUndefined();
    // A plan of no renditions (its type allows one) has no rung either.
    expect(wholeRung({ ...plan(hls(), long, { chunked: true }), renditions: undefined })).toBeUndefined();
  });
});

describe("segments, names and keys", () => {
  it("segmentSecondsOf: the type's own length, then the shared one, then 6 s; adaptive the shared one first; none for files", () => {
    const of = (type: OutputType, hls: number, dash: number, shared: number) =>
      segmentSecondsOf(
        spec({ type, hls: { segmentDurationSeconds: hls }, dash: { segmentDurationSeconds: dash }, segments: { segmentDurationSeconds: shared } }),
      );
    expect([of(OutputType.HLS, 4, 3, 5), of(OutputType.HLS, 0, 3, 5), of(OutputType.HLS, 0, 3, 0)]).toEqual([4, 5, 6]);
    expect([of(OutputType.DASH, 4, 3, 5), of(OutputType.DASH, 4, 0, 5), of(OutputType.DASH, 4, 0, 0)]).toEqual([3, 5, 6]);
    expect([of(OutputType.ADAPTIVE, 4, 3, 5), of(OutputType.ADAPTIVE, 4, 3, 0), of(OutputType.ADAPTIVE, 0, 3, 0), of(OutputType.ADAPTIVE, 0, 0, 0)]).toEqual([
      5, 4, 3, 6,
    ]);
    expect(of(OutputType.MP4, 4, 3, 5)).toBeUndefined();
  });

  it("segmentFormatOf: fmp4 for DASH and adaptive, HLS as asked or as its codecs need", () => {
    expect(segmentFormatOf(spec({ type: OutputType.DASH }), OutputType.DASH)).toBe(SegmentFormat.FMP4);
    expect(segmentFormatOf(spec({ type: OutputType.HLS, video: [{ codec: VideoCodec.H264 }] }), OutputType.HLS)).toBe(SegmentFormat.TS);
  });

  it("names: a language's English name (the tag itself when not one), an I-frame playlist beside its media playlist, keys beside the folder", () => {
    expect([languageName(""), languageName("pt-BR"), languageName("de"), languageName("not a tag")]).toEqual([
      "",
      "Brazilian Portuguese",
      "German",
      "not a tag",
    ]);
    expect([iframePlaylistOf("v0/index.m3u8"), iframePlaylistOf("v.m3u8/index.m3u8")]).toEqual(["v0/index_iframes.m3u8", "v.m3u8/index_iframes.m3u8"]);
    expect(secretsDirOf("/work/jobs/out_1")).toBe("/work/jobs/out_1.keys");
  });

  it("a variant with a colour plan says its range in the master; one without says nothing (SDR)", () => {
    const pq = probe({}, { codec: "hevc", pixelFormat: "yuv420p10le", color: { primaries: "bt2020", transfer: "smpte2084", matrix: "bt2020nc" } });
    const p = plan(spec({ type: OutputType.HLS, video: [{ codec: VideoCodec.H265, resolution: "720p", hdr: { mode: HdrMode.PASSTHROUGH } }] }), pq);
    expect(p.hlsMaster?.variants.map((v) => v.videoRange)).toEqual(["PQ"]);
    expect(plan(spec({ type: OutputType.HLS, video: [{ codec: VideoCodec.H264 }] })).hlsMaster?.variants[0]).not.toHaveProperty("videoRange");
  });
});

describe("what grows and what a split ladder refuses", () => {
  it("a hosted stream of audio alone does not grow: one VOD command, as without progress", () => {
    const sound = plan(spec({ type: OutputType.HLS, video: [] }), probe(), { progressive: true });
    expect([sound.progressive, sound.commands.length]).toEqual([undefined, 1]);
    expect(sound.commands[0]).toContain("vod");
    expect(sound.commands[0]).not.toContain("-output_ts_offset");
  });

  it("one rung, a single file, or aes_128 keys applied per command cannot be split", () => {
    const long = probe({ durationMs: 130_000 });
    const refused = new MediaError("internal", "only a clear HLS ladder of separate segments and more than one rung can be split into chunks");
    const two = [
      { codec: VideoCodec.H264, resolution: "720p" },
      { codec: VideoCodec.H264, resolution: "480p" },
    ];
    expect(() => plan(spec({ type: OutputType.HLS, video: two.slice(1) }), long, { chunked: true })).toThrow(refused);
    expect(() => plan(spec({ type: OutputType.HLS, segments: { singleFile: true }, video: two }), long, { chunk: { start: 0, end: 12 } })).toThrow(refused);
    expect(() => plan(spec({ type: OutputType.HLS, drm: {}, video: two }), long, { chunked: true })).toThrow(refused);
  });
});
