// planOutput's own decisions, before a kind's planner lays the output out: what an input must have,
// when a growing stream starts with a short segment, which containers are ISO-BMFF.
import { describe, expect, it } from "vitest";
import { EncryptionScheme, OutputType, type OutputSpec } from "../src/gen/media/v1/job_pb.js";
import { AudioCodec, SegmentFormat, VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { MediaError } from "./media-errors.js";
import { after, plan, probe, spec, type SpecInit } from "./plan.fixtures.js";
import type { PlanOptions } from "./plan.js";

const two = [
  { codec: VideoCodec.H264, resolution: "720p" },
  { codec: VideoCodec.H264, resolution: "480p" },
];

describe("planOutput: what the input must have", () => {
  it("audio alone needs the input's audio, and audio not disabled", () => {
    const refused = new MediaError("input_unsupported", "the output is audio-only but the input has no audio stream");
    expect(() => plan(spec({ type: OutputType.MP4, audio: [{ codec: AudioCodec.AAC }] }), probe({ audio: undefined }))).toThrow(refused);
    expect(() => plan(spec({ type: OutputType.MP4, disableAudio: true }))).toThrow(refused);
    expect(() => plan(spec({ type: OutputType.MP4, video: two }), probe({ video: undefined }))).toThrow(
      new MediaError("input_unsupported", "the output has video variants but the input has no video stream"),
    );
  });

  it("an output type no planner lays out is an unchecked specification", () => {
    expect(() => plan(spec({ type: OutputType.UNSPECIFIED, video: two }))).toThrow(
      new MediaError("internal", `output type ${OutputType.UNSPECIFIED} cannot be planned; the output specification was not checked`),
    );
  });
});

describe("planOutput: a growing stream's short first segment", () => {
  const ladder = (init: SpecInit = {}): OutputSpec => spec({ type: OutputType.HLS, hls: { segmentDurationSeconds: 4 }, video: two, ...init });
  /** Keyframes of the first rung: a short first segment's rule, or every segment's. */
  const keyframes = (s: OutputSpec, opts: Partial<PlanOptions>) => after(plan(s, probe({ durationMs: 130_000 }), opts).commands[0]!, "-force_key_frames:v:0");
  const short = "expr:if(lt(n_forced,2),gte(t,n_forced*1),gte(t,(n_forced-1)*4))";
  const whole = "expr:gte(t,n_forced*4)";

  it("only a growing HLS stream of separate segments, whole, clear or aes_128, starts short", () => {
    expect(keyframes(ladder(), { progressive: true })).toBe(short);
    expect(keyframes(ladder({ drm: { scheme: EncryptionScheme.AES_128 } }), { progressive: true })).toBe(short);
    expect(keyframes(ladder(), {})).toBe(whole);
    expect(keyframes(ladder({ segments: { singleFile: true } }), { progressive: true })).toBe(whole);
    expect(keyframes(ladder(), { progressive: true, chunk: { start: 0, end: 12 } })).toBe(whole);
    expect(keyframes(ladder({ hls: { segmentDurationSeconds: 4, segmentFormat: SegmentFormat.FMP4 }, drm: {} }), { progressive: true })).toBe(whole);
    expect(keyframes(ladder({ type: OutputType.DASH, dash: { segmentDurationSeconds: 4 } }), { progressive: true })).toBe(whole);
  });
});

describe("planOutput: ISO-BMFF containers", () => {
  it("HEVC is tagged hvc1 in MP4, MOV, DASH, adaptive and fmp4 HLS, not in Matroska", () => {
    const tag = (type: OutputType) => after(plan(spec({ type, video: [{ codec: VideoCodec.H265, resolution: "720p" }] })).commands[0]!, "-tag:v:0");
    expect([OutputType.MP4, OutputType.MOV, OutputType.DASH, OutputType.ADAPTIVE, OutputType.HLS, OutputType.MKV].map(tag)).toEqual([
      "hvc1",
      "hvc1",
      "hvc1",
      "hvc1",
      "hvc1",
      undefined,
    ]);
  });
});
