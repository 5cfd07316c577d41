// Splitting a ladder across encoder nodes: whether an output can be, its chunks, and the input
// and timestamps of one chunk's command.
import { type OutputSpec, OutputType } from "../../src/gen/media/v1/job_pb.js";
import type { ProbeResult } from "../probe.js";
import type { RenditionContext } from "../renditions.js";
import type { Clip } from "./commands.js";
import { segmentSecondsOf } from "./segments.js";
import type { ChunkSpan, OutputPlan, PlanInput } from "./types.js";

/**
 * Finer chunks where `chunkSeconds` gives fewer than this many, down to MIN_CHUNK_SECONDS: the
 * ladder is ready when its last chunk is, so a split finishes at about half the work plus half a
 * chunk on two nodes (bench:chunks: 5 chunks of a 120 s ladder took 0.66x the time of one node).
 */
export const MIN_CHUNKS = 8;
export const MIN_CHUNK_SECONDS = 12;

/**
 * The chunks of an output of this duration, each a whole number of segments. Worth splitting when
 * two chunks of `chunkSeconds` fit (rounded to whole segments); then chunks of that length, or
 * finer ones where that length gives fewer than MIN_CHUNKS (not shorter than MIN_CHUNK_SECONDS),
 * the segments shared out evenly (the first chunks get one more where they do not divide) and the
 * last one open, to the end.
 */
export function chunkSpans(durationMs: number, segmentSeconds: number, chunkSeconds: number): ChunkSpan[] {
  if (!(segmentSeconds > 0) || !(chunkSeconds > 0)) return [];
  const segmentsOf = (seconds: number) => Math.max(1, Math.round(seconds / segmentSeconds));
  const whole = Math.floor(durationMs / 1000 / segmentSeconds + 1e-9);
  const most = segmentsOf(chunkSeconds);
  if (Math.floor(whole / most) < 2) return [];
  const per = Math.min(most, segmentsOf(Math.max(MIN_CHUNK_SECONDS, durationMs / 1000 / MIN_CHUNKS)));
  const n = Math.floor(whole / per);
  const [base, extra] = [Math.floor(whole / n), whole % n];
  const spans: ChunkSpan[] = [];
  for (let k = 0, at = 0; k < n; k++) {
    const next = at + base + (k < extra ? 1 : 0);
    spans.push(k === n - 1 ? { start: at * segmentSeconds } : { start: at * segmentSeconds, end: next * segmentSeconds });
    at = next;
  }
  return spans;
}

/**
 * Whether an output's ladder can be split into chunks: clear HLS segments (a single file, or keys
 * applied per command, cannot be joined), more than one rung, a video to cut at frames, no
 * I-frame playlists and no content-aware rates.
 */
export function chunkable(spec: OutputSpec, probe: ProbeResult): boolean {
  return (
    spec.type === OutputType.HLS &&
    !spec.drm &&
    // I-frame playlists are read from the segments, which a chunked ladder's nodes store, not the encode node.
    spec.hls?.iframePlaylists !== true &&
    // The content-aware rates are the encode node's analysis: a chunk, planned elsewhere from the job, has none.
    spec.contentAware?.enabled !== true &&
    spec.segments?.singleFile !== true &&
    spec.video.length > 1 &&
    (probe.video?.frameRate ?? 0) > 0 &&
    segmentSecondsOf(spec) !== undefined
  );
}

/**
 * The input of one chunk: from its start (ffmpeg decodes from the keyframe before and drops the
 * frames before the start) to half a frame after its end; the command keeps the chunk's frames by
 * count (see hlsPlan). Frames of a constant integral rate sit exactly on the boundaries, which
 * are whole segments; at 29.97 fps a chunk starts on the frame at or after its start.
 */
export function chunkInputArgs(input: PlanInput, clip: Clip | undefined, chunk: ChunkSpan, ctx: RenditionContext): string[] {
  const half = 0.5 / ctx.input.video!.frameRate;
  const base = clip?.start ?? 0;
  const from = base + chunk.start;
  const to = chunk.end !== undefined ? Math.min(base + chunk.end + half, clip?.end ?? Infinity) : clip?.end;
  return [...(from > 0 ? ["-ss", from.toFixed(6)] : []), ...(to !== undefined ? ["-to", to.toFixed(6)] : []), "-i", input.file];
}

/**
 * Where the timestamps of a chunked ladder's command start: a chunk's first frame (at 0 after the
 * cut) at the time it has in the whole output, plus CHUNKED_START_SECONDS for every command. A
 * stream whose first timestamps would be negative (an encoder's reordering delay, AAC's priming)
 * is shifted by ffmpeg, by that delay: the first chunk would be, the others not, and their frames
 * would not line up; audio encoded alone would be shifted by its priming, not by the video's
 * delay, and so play 43 ms early. Started a second in, none is. Every command of a plan whose
 * streams are encoded apart (chunks; a growing stream with a short first segment) starts there.
 */
export function chunkOffset(chunk: ChunkSpan | undefined): string {
  return ((chunk?.start ?? 0) + CHUNKED_START_SECONDS).toFixed(6);
}
const CHUNKED_START_SECONDS = 1;

/** The rung a chunked plan encodes whole (the one rendition the chunks do not), if any. */
export function wholeRung(plan: OutputPlan): string | undefined {
  const rest = new Set(plan.chunked!.rest.map((r) => r.file));
  return (plan.renditions ?? []).find((r) => !rest.has(r.file))?.file;
}
