// Segments of a streaming output: their container, their length, a growing stream's short first one.
import { type OutputSpec, OutputType } from "../../src/gen/media/v1/job_pb.js";
import { SegmentFormat } from "../../src/gen/media/v1/preset_pb.js";
import { hlsSegmentFormat } from "../../src/spec-check.js";

/**
 * The first segment of a growing stream, in seconds: how much of the lowest rung must be encoded
 * before a video is playable. Shorter than the hosted 4 s segment, it makes a 1080p source
 * playable about 2 s sooner on 2 cores; the next segment ends where a whole first one would have.
 */
export const FIRST_SEGMENT_SECONDS = 1;

/** Segment container: fmp4 for DASH and adaptive; for HLS the request, else ts unless a codec needs fmp4. */
export function segmentFormatOf(spec: OutputSpec, type: OutputType): SegmentFormat {
  return type === OutputType.HLS ? hlsSegmentFormat(spec) : SegmentFormat.FMP4;
}

/** Segment length of a streaming output: the type's own setting, then the shared one, then 6 s. */
export function segmentSecondsOf(spec: OutputSpec): number | undefined {
  const shared = spec.segments?.segmentDurationSeconds || 0;
  switch (spec.type) {
    case OutputType.HLS:
      return spec.hls?.segmentDurationSeconds || shared || 6;
    case OutputType.DASH:
      return spec.dash?.segmentDurationSeconds || shared || 6;
    case OutputType.ADAPTIVE:
      return shared || spec.hls?.segmentDurationSeconds || spec.dash?.segmentDurationSeconds || 6;
    default:
      return undefined;
  }
}
