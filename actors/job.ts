// JobActor: one persistent actor per transcoding job. The gateway creates it; encoder nodes report
// to it (probe, start, progress, outputs, finish) over the same command topic, so one writer owns
// the job. Money is settled here, once, when the job reaches a terminal state.
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { OutputSpecSchema } from "../src/gen/media/v1/job_pb.js";
import { sortKey } from "../src/pagination.js";
import { amountMicros, outputRateIfKnown, PROCESSING_FEE_MICROS } from "../src/pricing.js";
import type { ProbeResult } from "../encoder-node/probe.js";
import type { OriginRecord } from "../src/origins.js";
import type { RecordWrite } from "../src/store/port.js";
import type { Decision, EntityBehavior } from "./host.js";
import { jobLedgerEvents, ledgerWrites } from "./ledger.js";

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
  internal: "An internal error stopped the job.",
} as const;
export type JobErrorCode = keyof typeof JOB_ERROR_CODES;
export const isJobErrorCode = (c: string): c is JobErrorCode => Object.hasOwn(JOB_ERROR_CODES, c);

/** What ffprobe found, as the encoder node reports it. */
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
  readonly estimateMicros?: number;
  readonly actualMicros?: number;
}

export interface FeeState {
  readonly id: string;
  readonly type: "processing";
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
  readonly status: JobStatus;
  readonly progress: number;
  readonly priority: "economy" | "standard" | "premium";
  readonly inputMetadata?: ProbeData;
  readonly outputs: readonly OutputState[];
  /** ThumbnailSpec proto JSON, as requested. */
  readonly thumbnails: readonly JsonValue[];
  readonly thumbnailResults: readonly ThumbnailResultData[];
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

export type JobCommand =
  | { readonly type: "create"; readonly job: JobRecord }
  | { readonly type: "probe_started"; readonly attempt: string; readonly at: number }
  | { readonly type: "probed"; readonly attempt: string; readonly at: number; readonly metadata: ProbeData; readonly durationMs: number }
  | { readonly type: "probe_failed"; readonly attempt: string; readonly at: number; readonly failure: Failure }
  | { readonly type: "confirm"; readonly at: number }
  | { readonly type: "cancel"; readonly at: number }
  | { readonly type: "encode_started"; readonly attempt: string; readonly at: number }
  | { readonly type: "output_progress"; readonly attempt: string; readonly at: number; readonly outputId: string; readonly progress: number }
  | { readonly type: "output_completed"; readonly attempt: string; readonly at: number; readonly outputId: string; readonly url: string; readonly sizeBytes: number }
  | { readonly type: "output_failed"; readonly attempt: string; readonly at: number; readonly outputId: string; readonly failure: Failure }
  | { readonly type: "thumbnails_done"; readonly attempt: string; readonly at: number; readonly results: readonly ThumbnailResultData[] }
  | { readonly type: "encode_finished"; readonly attempt: string; readonly at: number; readonly durationMs: number; readonly failure?: Failure }
  /** No change: brings a recovered actor to life so it re-dispatches its pending work. */
  | { readonly type: "resume" };

export type JobEvent =
  | { readonly type: "created"; readonly job: JobRecord }
  | { readonly type: "probe_started"; readonly attempt: string; readonly at: number }
  | { readonly type: "probed"; readonly at: number; readonly metadata: ProbeData; readonly durationMs: number; readonly estimates: readonly number[] }
  | { readonly type: "confirmed"; readonly at: number }
  | { readonly type: "encode_started"; readonly attempt: string; readonly at: number }
  | { readonly type: "output_progress"; readonly at: number; readonly outputId: string; readonly progress: number }
  | { readonly type: "output_completed"; readonly at: number; readonly outputId: string; readonly url: string; readonly sizeBytes: number }
  | { readonly type: "output_failed"; readonly at: number; readonly outputId: string; readonly failure: Failure }
  | { readonly type: "thumbnails_done"; readonly at: number; readonly results: readonly ThumbnailResultData[] }
  /** Terminal: the status reached and the money settled, decided once. */
  | { readonly type: "settled"; readonly at: number; readonly status: JobStatus; readonly failure?: Failure; readonly encodeDurationMs?: number };

const missing = { code: Code.NotFound, message: "job not found" } as const;
/** A running encode without progress still records a change this often (see the stall sweep). */
const KEEPALIVE_MS = 20_000;
const isTerminal = (j: JobRecord) => TERMINAL.has(j.status);

/** The job's progress: the mean of its outputs' progress. */
function jobProgress(outputs: readonly OutputState[]): number {
  if (outputs.length === 0) return 0;
  return Math.floor(outputs.reduce((s, o) => s + (o.status === "completed" ? 100 : o.progress), 0) / outputs.length);
}

/** Estimated amount of each output for the probed (and clipped) duration. */
export function estimateOutputs(job: JobRecord, metadata: ProbeData): number[] {
  const start = job.clip?.startSeconds ?? 0;
  const end = job.clip && job.clip.endSeconds > 0 ? Math.min(job.clip.endSeconds * 1000, metadata.durationMs) : metadata.durationMs;
  const durationMs = Math.max(0, end - start * 1000);
  const input = metadata.video ? { width: metadata.video.width, height: metadata.video.height, frameRate: metadata.video.frameRate } : undefined;
  // A rate is unknown only for video outputs of an input without video: that encode fails, at no charge.
  return job.outputs.map((o) => amountMicros(outputRateIfKnown(fromJson(OutputSpecSchema, o.spec), input) ?? 0, durationMs));
}

/** The terminal status that follows from the outputs' states, with the failure that explains it. */
function settle(job: JobRecord, at: number, failure?: Failure, encodeDurationMs?: number): JobEvent {
  const done = job.outputs.filter((o) => o.status === "completed").length;
  const status: JobStatus = done === job.outputs.length ? "completed" : done > 0 ? "partial" : "failed";
  const failed = job.outputs.find((o) => o.status === "failed");
  const because: Failure | undefined =
    status === "completed"
      ? undefined
      : (failure ?? (failed?.errorCode && isJobErrorCode(failed.errorCode) ? { code: failed.errorCode, message: failed.errorMessage ?? JOB_ERROR_CODES[failed.errorCode] } : { code: "encode_failed", message: JOB_ERROR_CODES.encode_failed }));
  return { type: "settled", at, status, ...(because ? { failure: because } : {}), ...(encodeDurationMs !== undefined ? { encodeDurationMs } : {}) };
}

type Handlers = { [K in JobCommand["type"]]: (job: JobRecord, c: Extract<JobCommand, { type: K }>) => Decision<JobEvent> };

const fromCurrentAttempt = (job: JobRecord, attempt: string) => job.attempt === attempt;

const decideBy: Omit<Handlers, "create"> = {
  // A redelivered probe task (its node died) starts a new attempt; the old one's reports are ignored.
  probe_started: (job, c) => (job.status === "pending" || job.status === "probing" ? [{ type: "probe_started", attempt: c.attempt, at: c.at }] : []),
  probed: (job, c) => {
    if (job.status !== "probing" || !fromCurrentAttempt(job, c.attempt)) return [];
    return [{ type: "probed", at: c.at, metadata: c.metadata, durationMs: c.durationMs, estimates: estimateOutputs(job, c.metadata) }];
  },
  probe_failed: (job, c) => (job.status === "probing" && fromCurrentAttempt(job, c.attempt) ? [settle(job, c.at, c.failure)] : []),
  confirm: (job, c) => {
    if (job.status !== "awaiting_confirmation") {
      return { code: Code.FailedPrecondition, message: `job ${job.id} is ${job.status}; only a job awaiting_confirmation can be confirmed` };
    }
    return [{ type: "confirmed", at: c.at }];
  },
  cancel: (job, c) => {
    if (isTerminal(job)) return { code: Code.FailedPrecondition, message: `job ${job.id} is already ${job.status}` };
    return [{ type: "settled", at: c.at, status: "canceled" }];
  },
  encode_started: (job, c) => {
    if (job.status !== "processing") return [];
    return [{ type: "encode_started", attempt: c.attempt, at: c.at }];
  },
  output_progress: (job, c) => {
    if (job.status !== "processing" || !fromCurrentAttempt(job, c.attempt)) return [];
    const o = job.outputs.find((x) => x.id === c.outputId);
    const progress = Math.max(0, Math.min(99, Math.floor(c.progress)));
    if (!o || o.status !== "processing") return [];
    // No change is news only as a sign of life: once in a while, so the stall sweep sees the encode.
    if (progress <= o.progress && c.at - job.updatedAt < KEEPALIVE_MS) return [];
    return [{ type: "output_progress", at: c.at, outputId: c.outputId, progress: Math.max(progress, o.progress) }];
  },
  output_completed: (job, c) => {
    const o = job.outputs.find((x) => x.id === c.outputId);
    if (job.status !== "processing" || !fromCurrentAttempt(job, c.attempt) || !o || o.status === "completed") return [];
    return [{ type: "output_completed", at: c.at, outputId: c.outputId, url: c.url, sizeBytes: c.sizeBytes }];
  },
  output_failed: (job, c) => {
    const o = job.outputs.find((x) => x.id === c.outputId);
    if (job.status !== "processing" || !fromCurrentAttempt(job, c.attempt) || !o || o.status === "completed" || o.status === "failed") return [];
    return [{ type: "output_failed", at: c.at, outputId: c.outputId, failure: c.failure }];
  },
  thumbnails_done: (job, c) => (job.status === "processing" && fromCurrentAttempt(job, c.attempt) ? [{ type: "thumbnails_done", at: c.at, results: c.results }] : []),
  encode_finished: (job, c) => {
    if (job.status !== "processing" || !fromCurrentAttempt(job, c.attempt)) return [];
    // Outputs the encoder did not report on failed with the job-level failure.
    const open = job.outputs.filter((o) => o.status === "pending" || o.status === "processing");
    const failure = c.failure ?? (open.length > 0 ? { code: "internal" as const, message: "the encoder finished without reporting every output" } : undefined);
    const events: JobEvent[] = open.map((o) => ({ type: "output_failed", at: c.at, outputId: o.id, failure: failure! }));
    const after = events.reduce((j, e) => foldJob(j, e), job);
    return [...events, settle(after, c.at, failure, c.durationMs)];
  },
  resume: () => [],
};

function decide(state: JobState, command: JobCommand): Decision<JobEvent> {
  if (command.type === "create") {
    // The id derives from the idempotency key: a second create reaches the same actor.
    if (!state.job) return [{ type: "created", job: command.job }];
    if (state.job.bodyHash === command.job.bodyHash) return [];
    return { code: Code.AlreadyExists, message: "idempotency_key was used for a different request body", violations: [{ field: "idempotency_key", description: "already used with a different request body" }] };
  }
  if (!state.job) return missing;
  return (decideBy[command.type] as (j: JobRecord, c: JobCommand) => Decision<JobEvent>)(state.job, command);
}

function patchOutput(job: JobRecord, id: string, patch: (o: OutputState) => OutputState): readonly OutputState[] {
  return job.outputs.map((o) => (o.id === id ? patch(o) : o));
}

/** Money at settlement: which lines are due for the outcome (spec: "Actual-side contents by outcome"). */
function settleMoney(job: JobRecord, status: JobStatus): Pick<JobRecord, "outputs" | "fees"> {
  const feeDue = status === "completed" || status === "partial" || (status === "canceled" && job.encoderStarted);
  const outputs = job.outputs.map((o) => ({ ...o, actualMicros: feeDue && o.status === "completed" ? (o.estimateMicros ?? 0) : 0 }));
  const fees = job.fees.map((f) => ({ ...f, voided: !feeDue, actualMicros: feeDue ? f.rateMicros * f.quantity : 0 }));
  return { outputs, fees };
}

export function foldJob(job: JobRecord, event: JobEvent): JobRecord {
  const base = { ...job, version: job.version + 1, updatedAt: "at" in event ? event.at : job.updatedAt };
  switch (event.type) {
    case "created":
      return event.job;
    case "probe_started":
      return { ...base, status: "probing", attempt: event.attempt };
    case "probed": {
      const outputs = job.outputs.map((o, i) => ({ ...o, estimateMicros: event.estimates[i] ?? 0 }));
      return {
        ...base,
        status: job.delayedStart ? "awaiting_confirmation" : "processing",
        probedAt: event.at,
        probeDurationMs: event.durationMs,
        inputMetadata: event.metadata,
        outputs,
      };
    }
    case "confirmed":
      return { ...base, status: "processing", confirmedAt: event.at };
    case "encode_started":
      return {
        ...base,
        attempt: event.attempt,
        encoderStarted: true,
        startedAt: job.startedAt ?? event.at,
        outputs: job.outputs.map((o) => (o.status === "completed" ? o : { ...o, status: "processing", progress: o.status === "processing" ? o.progress : 0 })),
      };
    case "output_progress": {
      const outputs = patchOutput(job, event.outputId, (o) => ({ ...o, progress: event.progress }));
      return { ...base, outputs, progress: jobProgress(outputs) };
    }
    case "output_completed": {
      const outputs = patchOutput(job, event.outputId, (o) => ({ ...o, status: "completed", progress: 100, outputUrl: event.url, sizeBytes: event.sizeBytes }));
      return { ...base, outputs, progress: jobProgress(outputs) };
    }
    case "output_failed":
      return { ...base, outputs: patchOutput(job, event.outputId, (o) => ({ ...o, status: "failed", errorCode: event.failure.code, errorMessage: event.failure.message })) };
    case "thumbnails_done":
      return { ...base, thumbnailResults: event.results };
    case "settled": {
      // Outputs still open stop with the job: canceled when the job was, failed otherwise.
      const open = event.status === "canceled" ? ("canceled" as const) : ("failed" as const);
      const stopped = job.outputs.map((o): OutputState => (o.status === "pending" || o.status === "processing" ? { ...o, status: open } : o));
      const money = settleMoney({ ...job, outputs: stopped }, event.status);
      return {
        ...base,
        status: event.status,
        ...money,
        progress: event.status === "completed" ? 100 : jobProgress(money.outputs),
        completedAt: event.at,
        ...(event.failure ? { errorCode: event.failure.code, errorMessage: event.failure.message } : {}),
        ...(event.encodeDurationMs !== undefined ? { encodeDurationMs: event.encodeDurationMs } : {}),
      };
    }
  }
}

/** The processing fee every job quotes; it is voided when no encoder ever starts the job. */
export function processingFee(id: string): FeeState {
  return { id, type: "processing", description: "Processing fee", rateMicros: PROCESSING_FEE_MICROS, quantity: 1, voided: false };
}

export const JobBehavior: EntityBehavior<JobState, JobCommand, JobEvent> = {
  type: "job",
  initial: {},
  decide,
  fold: (state, event) => ({ job: state.job ? foldJob(state.job, event) : event.type === "created" ? event.job : undefined }),
  repair(state): RecordWrite[] {
    const job = state.job;
    if (!job) return [];
    return [
      { table: JOBS, id: job.id, value: job, partition: job.appId, sort: sortKey(job.createdAt, job.id) },
      isTerminal(job)
        ? { table: ACTIVE_JOBS, id: job.id, value: null }
        : { table: ACTIVE_JOBS, id: job.id, value: { jobId: job.id }, partition: ACTIVE_PARTITION, sort: sortKey(job.createdAt, job.id) },
    ];
  },
  readModel(state, event) {
    const writes = JobBehavior.repair(state);
    // The active-jobs row changes only when the job starts or ends. Ledger events are written in
    // the same commit as the job event they follow from, so none is lost between the two.
    const ledger = jobLedgerEvents(state.job!, event).flatMap(ledgerWrites);
    return [...(event.type === "created" || event.type === "settled" ? writes : writes.slice(0, 1)), ...ledger];
  },
};

/** Work an actor hands to encoder nodes after a change, or after recovery. */
export type EncodeTask = { readonly kind: "probe" | "encode"; readonly job: JobRecord };

/** The task a job needs now, if any: after create (probe) and once processing (encode). */
export function taskFor(job: JobRecord, events: readonly JobEvent[] | "recovered"): EncodeTask | undefined {
  if (events === "recovered") {
    if (job.status === "pending" || job.status === "probing") return { kind: "probe", job };
    if (job.status === "processing") return { kind: "encode", job };
    return undefined;
  }
  if (events.some((e) => e.type === "created")) return { kind: "probe", job };
  if (job.status === "processing" && events.some((e) => e.type === "probed" || e.type === "confirmed")) return { kind: "encode", job };
  return undefined;
}
