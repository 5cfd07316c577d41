// The job's records and messages: the state the JobActor keeps, the reports encoder nodes send it,
// the events it folds, and the encode task it publishes. Here in the kernel because the actor host
// and the encoder nodes both speak them, and neither imports the other.
import type { JsonValue } from "@bufbuild/protobuf";
import type { DrmScheme, TrackClass } from "../../src/drm/types.js";
import type { ContentLight, MasteringDisplay } from "../../src/hdr-metadata.js";
import type { OriginRecord } from "../../src/origins.js";
import { PROCESSING_FEE_MICROS } from "../../src/pricing.js";
import { entity, type CommandOf, type CommandUnion } from "../entity.js";

export const JOBS = "jobs";
/** Non-terminal jobs, one partition: what an actor host resumes after it takes partitions over. */
export const ACTIVE_JOBS = "active_jobs";
export const ACTIVE_PARTITION = "all";

export type JobStatus = "pending" | "probing" | "awaiting_confirmation" | "processing" | "completed" | "failed" | "canceled" | "partial";
export type OutputStatus = "pending" | "processing" | "completed" | "failed" | "canceled";
export const TERMINAL: ReadonlySet<JobStatus> = new Set(["completed", "failed", "canceled", "partial"]);

/**
 * The closed list of job error codes. Callers branch on these; messages are for people.
 */
export const JOB_ERROR_CODES = {
  input_unreachable: "The input could not be fetched (network error, not found, or access denied).",
  input_forbidden: "The input address is not allowed (private or internal network).",
  input_invalid: "The input is not a readable media file.",
  input_unsupported: "The input has no stream the outputs need, or uses an unsupported format.",
  encode_failed: "The encoder failed on this input and output settings.",
  output_write_denied: "The output origin refused the write (permissions or credentials).",
  output_write_failed: "Writing to the output origin failed.",
  origin_unavailable: "An origin of the job is archived or no longer valid.",
  subtitle_unreachable: "A provided subtitle track could not be fetched (network error, not found, or access denied).",
  subtitle_invalid: "A provided subtitle track is not valid WebVTT or SRT, or exceeds the size limits.",
  transcription_failed: "Speech recognition failed, or the recogniser is not installed on the encoder node.",
  drm_key_unavailable: "The key provider of a protected output failed or answered no usable keys; nothing unprotected was delivered.",
  encoder_lost:
    "The job's task was lost 3 times: each time its encoder node stopped (crashed, was killed, or went silent) while running it. It is not tried again.",
  internal: "An internal error stopped the job.",
} as const;
export type JobErrorCode = keyof typeof JOB_ERROR_CODES;
export const isJobErrorCode = (c: string): c is JobErrorCode => Object.hasOwn(JOB_ERROR_CODES, c);

/** What ffprobe found, as the encoder node reports it. */
export interface ProbeResult {
  format: string;
  durationMs: number;
  sizeBytes: number;
  bitRate: number;
  video?: {
    codec: string;
    width: number;
    height: number;
    frameRate: number;
    bitRate: number;
    pixelFormat: string;
    /** Pixel aspect (width of one pixel over its height), when not square. */
    sampleAspectRatio?: number;
    /** Display rotation in degrees from the stream's display matrix, when rotated. */
    rotation?: number;
    /** Colour signalling in ffprobe's names (e.g. bt2020, smpte2084 or arib-std-b67, bt2020nc); "" where the stream states none. */
    color?: { primaries: string; transfer: string; matrix: string };
    /** HDR static metadata of the stream (its container, else its first frame). */
    masteringDisplay?: MasteringDisplay;
    contentLight?: ContentLight;
  };
  audio?: { codec: string; sampleRate: number; channels: number; channelLayout: string; bitRate: number };
  /** Number of audio streams (tracks i of an output come from stream i when there are several). */
  audioStreams?: number;
}
export type ProbeData = ProbeResult;

export interface OutputState {
  readonly id: string;
  /** The resolved output specification, proto JSON (OutputSpec), with effective_path_template. */
  readonly spec: JsonValue;
  readonly status: OutputStatus;
  readonly progress: number;
  readonly outputUrl: string;
  readonly sizeBytes: number;
  readonly errorCode?: string;
  readonly errorMessage?: string;
  /** Key prefix of this output's files in the output origin. */
  readonly keyPrefix: string;
  /** The main file (playlist, manifest or file) under keyPrefix, once completed (or playable). */
  readonly main?: string;
  /** A progressive stream (a hosted video's): when its first rung became playable, before it completed. */
  readonly playableAt?: number;
  /** What each video rendition became, once completed. */
  readonly renditions?: readonly RenditionResult[];
  readonly estimateMicros?: number;
  readonly actualMicros?: number;
  /** A protected output's keys, once completed; never shown. */
  readonly drm?: DrmKeysData;
}

/**
 * The content keys of a protected output: their IDs in the clear (the key server answers only
 * these), the keys sealed with the server secret (src/drm/keys.ts sealKeys), in the job's journal
 * and never beside the media.
 */
export interface DrmKeysData {
  readonly scheme: DrmScheme;
  /** Whether viewers get the keys from our key server: aes_128, or a Clear Key system (others' license services hold their own copy). */
  readonly clearKey: boolean;
  readonly kids: readonly { readonly trackClass: TrackClass; readonly kid: string }[];
  readonly sealed: string;
}

/** One encoded video rendition of an output, as the encoder reports it. */
export interface RenditionResult {
  readonly name: string;
  readonly codec: "h264" | "h265" | "vp9" | "av1";
  readonly width: number;
  readonly height: number;
  readonly sizeBytes: number;
  /** content_aware: what the analysis chose for this rendition and what the final encode measured. */
  readonly contentAware?: ContentAwareResult;
}

/** A rendition of a content-aware output (see encoder-node/content-aware.ts); shown in its spec's content_aware.rungs. */
export interface ContentAwareResult {
  readonly targetVmaf: number;
  readonly crf: number;
  readonly maxKbps: number;
  readonly predictedVmaf: number;
  readonly predictedKbps: number;
  readonly measuredVmaf?: number;
  /** The output's analysis time (the same on each of its renditions). */
  readonly analysisMs: number;
}

/** A job that writes to managed hosting: its video, and the auto ladder's rungs when no preset was given. */
export interface ManagedTarget {
  readonly videoId: string;
  /** Rung heights: output 0's spec is decided from the probed source (see ladderOutputSpec). */
  readonly ladder?: readonly number[];
  /** SubtitleTrack proto JSON of the video's stream, kept on the ladder decided at probe. */
  readonly subtitleTracks?: readonly JsonValue[];
  /** DrmConfig proto JSON of the video's stream: the ladder decided at probe is protected with it. */
  readonly drm?: JsonValue;
}

export interface FeeState {
  readonly id: string;
  /** processing: one per job an encoder starts; transcription: one per generated subtitle track, per second of audio. */
  readonly type: "processing" | "transcription";
  /** What quantity counts: "job" (the default) or "second". */
  readonly unit?: "job" | "second";
  /** A fee for one output's work: due only when that output is delivered. */
  readonly outputId?: string;
  readonly description: string;
  readonly rateMicros: number;
  readonly quantity: number;
  readonly voided: boolean;
  readonly actualMicros?: number;
}

export interface ThumbnailResultData {
  readonly url: string;
  readonly key: string;
  readonly mode: string;
  readonly index: number;
  readonly thumbnailIndex: number;
  readonly format: string;
  readonly width: number;
  readonly height: number;
  readonly timeSeconds: number;
  readonly sizeBytes: number;
}

/** One subtitle track of a delivered output (see SubtitleResult). */
export interface SubtitleResultData {
  readonly outputId: string;
  readonly trackIndex: number;
  readonly source: "url" | "generated";
  readonly language: string;
  readonly name: string;
  readonly url: string;
  /** Storage key of the WebVTT file, for signed URLs. */
  readonly key: string;
  /** Generated tracks: the segment-level transcript. */
  readonly transcript?: readonly { readonly start: number; readonly end: number; readonly text: string }[];
}

/** The chapters generated from one caption track. */
export interface ChapterResultData {
  readonly outputId: string;
  readonly trackIndex: number;
  readonly language: string;
  readonly url: string;
  readonly key: string;
  readonly chapters: readonly { readonly start: number; readonly end: number; readonly title: string }[];
}

/** One rung of one chunk, as the node that encoded it reports it: its segments (file names in the rung's folder, seconds, bytes) and codec string. */
export interface ChunkRendition {
  readonly playlist: string;
  readonly codecs: string;
  readonly segments: readonly { readonly uri: string; readonly duration: number; readonly bytes: number }[];
}

/** A chunk of a chunked output: seconds on the output's timeline, a whole number of segments; the last is open. */
export interface ChunkSpanData {
  readonly start: number;
  readonly end?: number;
}

/**
 * An output whose ladder is split across encoder nodes: the node running the job's encode plans
 * the chunks (each then a task of its own) and joins them once every one is done.
 */
export interface ChunkedOutput {
  readonly outputId: string;
  readonly spans: readonly ChunkSpanData[];
  /** By chunk: what it produced, and on which node, once done. */
  readonly done: readonly ({ readonly node: string; readonly at: number; readonly renditions: readonly ChunkRendition[] } | null)[];
}

export interface JobRecord {
  readonly id: string;
  readonly appId: string;
  readonly organizationId: string;
  /** Number of events folded: Watch streams order updates by it. */
  readonly version: number;
  readonly inputUrl: string;
  readonly inputPath: string;
  readonly inputVideoId: string;
  readonly inputOrigin?: OriginRecord;
  /** The app's origin whose credentials read an s3:// or gs:// input_url; never shown. */
  readonly inputUrlOrigin?: OriginRecord;
  readonly outputOrigin?: OriginRecord;
  /** Set for managed jobs: outputs go to managed storage under the video's playable directory. */
  readonly managed?: ManagedTarget;
  readonly status: JobStatus;
  readonly progress: number;
  readonly priority: "economy" | "standard" | "premium";
  readonly inputMetadata?: ProbeData;
  readonly outputs: readonly OutputState[];
  /** ThumbnailSpec proto JSON, as requested. */
  readonly thumbnails: readonly JsonValue[];
  readonly thumbnailResults: readonly ThumbnailResultData[];
  /** Subtitle and chapter tracks of delivered outputs (absent on jobs recorded before captions). */
  readonly subtitleResults?: readonly SubtitleResultData[];
  readonly chapterResults?: readonly ChapterResultData[];
  readonly fees: readonly FeeState[];
  readonly errorCode?: string;
  readonly errorMessage?: string;
  readonly webhookUrl: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly outputPathTemplate?: string;
  /** Key prefix of the job's thumbnails in the output origin. */
  readonly thumbnailPrefix: string;
  readonly clip?: { readonly startSeconds: number; readonly endSeconds: number };
  readonly delayedStart: boolean;
  readonly idempotencyKey?: string;
  /** Hash of the create request body, compared when the idempotency key is reused. */
  readonly bodyHash: string;
  /** The Create request (x-request-id): its events name it as their cause. */
  readonly requestId?: string;
  /** The encode attempt whose reports count; a redelivered task starts a new one. */
  readonly attempt?: string;
  /** When that attempt started (its start report's time, on its node's clock). */
  readonly attemptAt?: number;
  /** The output whose ladder is split into chunks, if any. */
  readonly chunked?: ChunkedOutput;
  /** An encoder picked the job up: the processing fee is due whatever happens next. */
  readonly encoderStarted: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly probedAt?: number;
  readonly startedAt?: number;
  readonly completedAt?: number;
  readonly confirmedAt?: number;
  readonly probeDurationMs?: number;
  readonly encodeDurationMs?: number;
}

export interface JobState {
  readonly job?: JobRecord;
}

export interface Failure {
  readonly code: JobErrorCode;
  readonly message: string;
}

/** Template variables of an output path that follow from its spec alone. */
export interface OutputVars {
  readonly format: string;
  readonly codec: string;
  readonly resolution: string;
  readonly quality: string;
}

/** One output of a Create request, its spec resolved (a preset filled in) and its id chosen. */
export interface OutputRequest {
  readonly id: string;
  /** The OutputSpec echoed on the job (proto JSON): as requested, or as resolved from a preset. */
  readonly spec: { readonly [field: string]: JsonValue };
  /** The output's own path_template; "" for the job's, the origin's or the default. */
  readonly pathTemplate: string;
  readonly vars: OutputVars;
}

/**
 * What JobService/Create asks for, validated and resolved at the gateway (origins and presets
 * looked up, ids derived from the idempotency key); the job's actor decides the job from it.
 */
export interface JobRequest {
  readonly appId: string;
  readonly organizationId: string;
  readonly inputUrl: string;
  readonly inputPath: string;
  readonly inputVideoId: string;
  readonly inputOrigin?: OriginRecord;
  readonly inputUrlOrigin?: OriginRecord;
  readonly outputOrigin?: OriginRecord;
  readonly managed?: ManagedTarget;
  readonly priority: JobRecord["priority"];
  readonly outputs: readonly OutputRequest[];
  /** ThumbnailSpec proto JSON, as requested. */
  readonly thumbnails: readonly JsonValue[];
  readonly webhookUrl: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly outputPathTemplate: string;
  readonly clip?: { readonly startSeconds: number; readonly endSeconds: number };
  readonly delayedStart: boolean;
  readonly idempotencyKey: string;
  readonly bodyHash: string;
  readonly requestId?: string;
  readonly feeId: string;
}

/** The job's commands by type: what each carries. */
export interface JobCommands {
  readonly create: { readonly id: string; readonly at: number; readonly request: JobRequest };
  readonly probe_started: { readonly attempt: string; readonly at: number };
  readonly probed: { readonly attempt: string; readonly at: number; readonly metadata: ProbeData; readonly durationMs: number };
  readonly probe_failed: { readonly attempt: string; readonly at: number; readonly failure: Failure };
  readonly confirm: { readonly at: number };
  readonly cancel: { readonly at: number };
  readonly encode_started: { readonly attempt: string; readonly at: number };
  readonly output_progress: { readonly attempt: string; readonly at: number; readonly outputId: string; readonly progress: number };
  readonly output_completed: {
    readonly attempt: string;
    readonly at: number;
    readonly outputId: string;
    readonly url: string;
    readonly sizeBytes: number;
    readonly main?: string;
    readonly renditions?: readonly RenditionResult[];
    readonly subtitles?: readonly SubtitleResultData[];
    readonly chapters?: readonly ChapterResultData[];
    readonly drm?: DrmKeysData;
  };
  /**
   * A progressive stream (a hosted video's) is published so far: first when its first rung and
   * audio have a segment each (it plays while the rest encodes), then as each rung is complete.
   */
  readonly output_published: {
    readonly attempt: string;
    readonly at: number;
    readonly outputId: string;
    readonly url: string;
    readonly main: string;
    /** The rungs complete so far. */
    readonly renditions: readonly RenditionResult[];
    readonly drm?: DrmKeysData;
  };
  readonly output_failed: { readonly attempt: string; readonly at: number; readonly outputId: string; readonly failure: Failure };
  /** The node running the encode split an output's ladder into these chunks: each is queued as a task. */
  readonly chunks_planned: { readonly attempt: string; readonly at: number; readonly outputId: string; readonly spans: readonly ChunkSpanData[] };
  /** A chunk was encoded and its segments stored (by any node: the same chunk encoded twice is the same). */
  readonly chunk_done: {
    readonly at: number;
    readonly outputId: string;
    readonly part: number;
    readonly node: string;
    readonly renditions: readonly ChunkRendition[];
  };
  /** A chunk could not be encoded: its output fails. */
  readonly chunk_failed: { readonly at: number; readonly outputId: string; readonly part: number; readonly failure: Failure };
  /** No change: the job as it is (a node waiting on chunks looks). */
  readonly look: Readonly<Record<never, never>>;
  readonly thumbnails_done: { readonly attempt: string; readonly at: number; readonly results: readonly ThumbnailResultData[] };
  readonly encode_finished: { readonly attempt: string; readonly at: number; readonly durationMs: number; readonly failure?: Failure };
  /** The encode queue gave up on the job's task: its lease was lost on these nodes, once each loss. */
  readonly task_abandoned: { readonly task: "probe" | "encode" | "chunk"; readonly part?: number; readonly lostOn: readonly string[]; readonly at: number };
  /** No change: brings a recovered actor to life so it hands out the task it waits on. */
  readonly resume: Readonly<Record<never, never>>;
}
export type JobCommandOf<K extends keyof JobCommands> = CommandOf<JobCommands, K>;
export type JobCommand = CommandUnion<JobCommands>;

/** A job entity: asked with a JobCommand, it answers its whole state. */
export const Job = entity<JobCommand, JobState>("job");

/** The processing fee every job quotes; it is voided when no encoder ever starts the job. */
export function processingFee(id: string): FeeState {
  return { id, type: "processing", description: "Processing fee", rateMicros: PROCESSING_FEE_MICROS, quantity: 1, voided: false };
}

/** The legacy per-job callbacks (a job's `callback_url`): what is posted, when. */
export type LegacyEvent = "job.completed" | "job.failed" | "job.progress" | "job.canceled" | "output.completed" | "output.failed";
export interface LegacyPost {
  readonly event: LegacyEvent;
  readonly outputId?: string;
  readonly at: number;
}

export type JobEvent =
  | { readonly type: "created"; readonly job: JobRecord }
  | { readonly type: "probe_started"; readonly attempt: string; readonly at: number }
  /** specs: outputs whose spec follows from the probe (a managed job's auto ladder), by index; fees: quoted from the duration (transcription). */
  | {
      readonly type: "probed";
      readonly at: number;
      readonly metadata: ProbeData;
      readonly durationMs: number;
      readonly estimates: readonly number[];
      readonly specs?: Readonly<Record<number, JsonValue>>;
      readonly fees?: readonly FeeState[];
    }
  | { readonly type: "confirmed"; readonly at: number }
  | { readonly type: "encode_started"; readonly attempt: string; readonly at: number }
  | { readonly type: "output_progress"; readonly at: number; readonly outputId: string; readonly progress: number }
  | {
      readonly type: "output_completed";
      readonly at: number;
      readonly outputId: string;
      readonly url: string;
      readonly sizeBytes: number;
      readonly main?: string;
      readonly renditions?: readonly RenditionResult[];
      readonly subtitles?: readonly SubtitleResultData[];
      readonly chapters?: readonly ChapterResultData[];
      readonly drm?: DrmKeysData;
    }
  | {
      readonly type: "output_published";
      readonly at: number;
      readonly outputId: string;
      readonly url: string;
      readonly main: string;
      readonly renditions: readonly RenditionResult[];
      readonly drm?: DrmKeysData;
    }
  | { readonly type: "output_failed"; readonly at: number; readonly outputId: string; readonly failure: Failure }
  | { readonly type: "chunks_planned"; readonly at: number; readonly outputId: string; readonly spans: readonly ChunkSpanData[] }
  | {
      readonly type: "chunk_done";
      readonly at: number;
      readonly outputId: string;
      readonly part: number;
      readonly node: string;
      readonly renditions: readonly ChunkRendition[];
    }
  | { readonly type: "thumbnails_done"; readonly at: number; readonly results: readonly ThumbnailResultData[] }
  /** Terminal: the status reached and the money settled, decided once. */
  | { readonly type: "settled"; readonly at: number; readonly status: JobStatus; readonly failure?: Failure; readonly encodeDurationMs?: number };

/**
 * Work a job hands to the encoder nodes: which step, of which job. The node learns the job itself
 * from the reply to its first report (probe_started, encode_started), which also makes it the
 * job's current attempt.
 */
export interface EncodeTask {
  readonly kind: "probe" | "encode" | "chunk";
  readonly jobId: string;
  /** A chunk task: which chunk. */
  readonly part?: number;
}

/** Sent on the signals topic when a job ends: the node running it stops. */
export interface JobSignal {
  readonly jobId: string;
  readonly signal: "stop";
}
