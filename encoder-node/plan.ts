// Planning: one output specification and a probed input become ffmpeg argument vectors and the
// layout of the files they write: progressive files, HLS, or DASH and CMAF, clear or protected.
// The planners, one per concern, live in planners/; each stream's own encoder arguments come from
// renditions.ts, colour from hdr.ts. Pure: no file system, no processes, no executor. This file is
// the one entry point (planOutput) and names what callers use.
import path from "node:path";
import { OutputType, type OutputSpec } from "../src/gen/media/v1/job_pb.js";
import { AudioCodec, SegmentFormat } from "../src/gen/media/v1/preset_pb.js";
import { MediaError } from "./media-errors.js";
import { planAudio, planRenditions, shortFirstSegmentFits, type RenditionContext } from "./renditions.js";
import { resolveClip } from "./planners/commands.js";
import { drmSchemeOf, secretsDirOf } from "./planners/drm.js";
import { dashPlan } from "./planners/dash.js";
import { PROGRESSIVE, progressivePlan } from "./planners/files.js";
import { hlsPlan } from "./planners/hls.js";
import type { Layout } from "./planners/layout.js";
import { packagedPlan } from "./planners/packaged.js";
import { FIRST_SEGMENT_SECONDS, segmentFormatOf, segmentSecondsOf } from "./planners/segments.js";
import type { LadderStrategy, OutputPlan, PlanInput, PlanOptions } from "./planners/types.js";

// Codec names and named sizes are the shared codec rules, target rates are decided per stream;
// exported here too, so callers keep one planning entry point.
export { CODEC_NAMES, RESOLUTION_LINES } from "../src/codec-rules.js";
export { tierTargetKbps, type RenditionPlan } from "./renditions.js";
export type {
  ChunkPlan,
  ChunkSpan,
  DashManifestPlan,
  DashPlan,
  FilePlan,
  HlsMasterPlan,
  HlsPlan,
  LadderStrategy,
  OutputPlan,
  PackagedPlan,
  PackagedStream,
  PackagingPlan,
  PlanInput,
  PlanKind,
  PlanOf,
  PlanOptions,
  ProgressivePlan,
} from "./planners/types.js";
export { chunkable, chunkSpans, MIN_CHUNK_SECONDS, MIN_CHUNKS, wholeRung } from "./planners/chunking.js";
export { FFMPEG_GLOBAL } from "./planners/commands.js";
export { drmSchemeOf, drmSystemsOf } from "./planners/drm.js";
export { PROGRESSIVE_NICE } from "./planners/hls.js";
export { languageName } from "./planners/master.js";
export { FIRST_SEGMENT_SECONDS, segmentFormatOf, segmentSecondsOf } from "./planners/segments.js";

/**
 * Default ladder strategy, from test/bench/ladder.bench.ts on 2 cores (20 s 1080p30 source, four
 * H.264 rungs 1080p-360p, veryfast; results/ladder-2026-11-22.json): one decode split four ways
 * took 26.1 s of CPU and 14.5 s of wall time, one ffmpeg per rendition 32.1 s and 16.6 s. The
 * three extra decodes cost more than the parallelism buys: x264's own threads already keep both
 * cores busy inside one process.
 */
export const DEFAULT_STRATEGY: LadderStrategy = "split";

/**
 * Plans one output. Expects a specification that passed checkOutputSpec; input problems the
 * check could not see (no video stream for video variants, a clip past the end) are MediaErrors.
 */
export function planOutput(spec: OutputSpec, input: PlanInput, opts: PlanOptions): OutputPlan {
  const probe = input.probe;
  if (spec.video.length > 0 && !probe.video) throw new MediaError("input_unsupported", "the output has video variants but the input has no video stream");
  if (spec.video.length === 0 && (spec.disableAudio || !probe.audio))
    throw new MediaError("input_unsupported", "the output is audio-only but the input has no audio stream");
  const { clip, durationMs } = resolveClip(opts, probe);
  const type = spec.type;
  const container = PROGRESSIVE[type];
  const segmentSeconds = segmentSecondsOf(spec);
  // A growing stream starts with a short segment, so a player has something to play sooner. A split
  // ladder keeps equal segments: its chunks are numbered by them.
  const shortFirst =
    opts.progressive === true &&
    type === OutputType.HLS &&
    spec.segments?.singleFile !== true &&
    opts.chunked !== true &&
    opts.chunk === undefined &&
    segmentSeconds !== undefined &&
    segmentSeconds > FIRST_SEGMENT_SECONDS &&
    drmSchemeOf(spec) !== "cbcs" &&
    shortFirstSegmentFits(spec.video);
  const ctx: RenditionContext = {
    input: probe,
    spec,
    ...(segmentSeconds !== undefined ? { segmentSeconds } : {}),
    ...(shortFirst ? { firstSegmentSeconds: FIRST_SEGMENT_SECONDS } : {}),
    ...(opts.contentAware ? { contentAware: opts.contentAware } : {}),
    isoBmff:
      type === OutputType.MP4 ||
      type === OutputType.MOV ||
      type === OutputType.DASH ||
      type === OutputType.ADAPTIVE ||
      (type === OutputType.HLS && segmentFormatOf(spec, type) === SegmentFormat.FMP4),
  };
  const layout: Layout = {
    ctx,
    input,
    renditions: planRenditions(ctx),
    audio: planAudio(spec, probe, type === OutputType.WEBM ? AudioCodec.OPUS : AudioCodec.AAC),
    base: { outputId: opts.outputId, dir: opts.workDir, durationMs },
    clip,
    strategy: opts.strategy ?? DEFAULT_STRATEGY,
  };
  if (container) return progressivePlan(layout, container);
  const scheme = drmSchemeOf(spec);
  if ((scheme === "cbcs" || scheme === "cenc") && segmentSeconds !== undefined) return packagedPlan(layout, scheme, segmentSeconds);
  if (type === OutputType.HLS)
    return hlsPlan({ ...layout, keyInfoFile: scheme === "aes128" ? path.join(secretsDirOf(opts.workDir), "aes128.keyinfo") : undefined, opts });
  if (type === OutputType.DASH || type === OutputType.ADAPTIVE) return dashPlan(layout, type === OutputType.ADAPTIVE);
  throw new MediaError("internal", `output type ${type} cannot be planned; the output specification was not checked`);
}
