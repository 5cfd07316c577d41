// JobActor: one persistent actor per transcoding job. Create decides the job from the request the
// gateway validated; encoder nodes report to it (probe, start, progress, outputs, finish) over the
// same command topic, so one writer owns the job. Money is settled here, once, when the job
// reaches a terminal state. Its effects are intents (JobIntent), carried out by jobIntentHandlers.
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { OutputSpecSchema, SubtitleSource } from "../../src/gen/media/v1/job_pb.js";
import { ladderOutputSpec, playPrefix } from "../../src/hosting.js";
import { sortKey } from "../../src/pagination.js";
import { amountMicros, outputRateIfKnown, PROCESSING_FEE_MICROS, TRANSCRIPTION_MICROS_PER_SECOND, transcribedSeconds } from "../../src/pricing.js";
import {
  ACTIVE_JOBS,
  ACTIVE_PARTITION,
  isJobErrorCode,
  JOB_ERROR_CODES,
  JOBS,
  processingFee,
  TERMINAL,
  type EncodeTask,
  type LegacyPost,
  type JobSignal,
  type Failure,
  type FeeState,
  type JobCommand,
  type JobCommandOf,
  type JobCommands,
  type JobEvent,
  type JobRecord,
  type JobState,
  type JobStatus,
  type OutputState,
  type ProbeData,
} from "./messages.js";
import type { OriginRecord } from "../../src/origins.js";
import type { RecordWrite, Store } from "../../src/store/port.js";
import type { Decision, EntityBehavior } from "../host.js";
import type { Bus } from "../../src/bus/port.js";
import type { Topics } from "../../src/bus/topics.js";
import { fanOut } from "../fanout.js";
import { ledgerRewrites, ledgerWrites, type EventRecord } from "../ledger.js";
import { jobLedgerEvents } from "./ledger-events.js";
import { tellVideoOutcome, tellVideoPublished } from "./outcome.js";
import type { IntentHandlers } from "../outbox.js";
import { publishUpdate, tell } from "../commands.js";
import { observeJobEnded } from "../../src/metrics.js";
import { Queue, QUEUE_ID } from "../scheduler/messages.js";
import { currentTraceparent } from "../../src/tracing.js";

const missing = { code: Code.NotFound, message: "job not found" } as const;
/** A running encode without progress still records a change this often: its updated_at and Watch streams show it alive. */
const KEEPALIVE_MS = 20_000;
const isTerminal = (j: JobRecord) => TERMINAL.has(j.status);

/** The job's progress: the mean of its outputs' progress. */
function jobProgress(outputs: readonly OutputState[]): number {
  if (outputs.length === 0) return 0;
  return Math.floor(outputs.reduce((s, o) => s + (o.status === "completed" ? 100 : o.progress), 0) / outputs.length);
}

/** The probed duration after the job's clip. */
function clippedMs(job: JobRecord, metadata: ProbeData): number {
  const start = job.clip?.startSeconds ?? 0;
  const end = job.clip && job.clip.endSeconds > 0 ? Math.min(job.clip.endSeconds * 1000, metadata.durationMs) : metadata.durationMs;
  return Math.max(0, end - start * 1000);
}

/** Estimated amount of each output for the probed (and clipped) duration. */
export function estimateOutputs(job: JobRecord, metadata: ProbeData): number[] {
  const durationMs = clippedMs(job, metadata);
  const input = metadata.video ? { width: metadata.video.width, height: metadata.video.height, frameRate: metadata.video.frameRate } : undefined;
  // A rate is unknown only for video outputs of an input without video: that encode fails, at no charge.
  return job.outputs.map((o) => amountMicros(outputRateIfKnown(fromJson(OutputSpecSchema, o.spec), input) ?? 0, durationMs));
}

/**
 * One transcription fee per generated subtitle track, quoted at probe from the clipped duration;
 * each is due only if its output is delivered. Ids follow from the output's, so a replay agrees.
 */
export function transcriptionFees(job: JobRecord, metadata: ProbeData): FeeState[] {
  const seconds = transcribedSeconds(clippedMs(job, metadata));
  return job.outputs.flatMap((o) =>
    fromJson(OutputSpecSchema, o.spec).subtitleTracks.flatMap((t, k) =>
      t.source === SubtitleSource.GENERATED
        ? [
            {
              id: `fee_${o.id.slice(o.id.indexOf("_") + 1)}t${k}`,
              type: "transcription" as const,
              unit: "second" as const,
              outputId: o.id,
              description: `Captions of ${o.id}, track ${k}`,
              rateMicros: TRANSCRIPTION_MICROS_PER_SECOND,
              quantity: seconds,
              voided: false,
            },
          ]
        : [],
    ),
  );
}

/** The terminal status that follows from the outputs' states, with the failure that explains it. */
function settle(job: JobRecord, at: number, failure?: Failure, encodeDurationMs?: number): JobEvent {
  const done = job.outputs.filter((o) => o.status === "completed").length;
  const status: JobStatus = done === job.outputs.length ? "completed" : done > 0 ? "partial" : "failed";
  const failed = job.outputs.find((o) => o.status === "failed");
  const because: Failure | undefined =
    status === "completed"
      ? undefined
      : (failure ??
        (failed?.errorCode && isJobErrorCode(failed.errorCode)
          ? { code: failed.errorCode, message: failed.errorMessage ?? JOB_ERROR_CODES[failed.errorCode] }
          : { code: "encode_failed", message: JOB_ERROR_CODES.encode_failed }));
  return { type: "settled", at, status, ...(because ? { failure: because } : {}), ...(encodeDurationMs !== undefined ? { encodeDurationMs } : {}) };
}

type ProbedEvent = Extract<JobEvent, { type: "probed" }>;
const withFees = (e: ProbedEvent, fees: FeeState[]): ProbedEvent => (fees.length > 0 ? { ...e, fees } : e);

/** One decision per command type: a mapped type, so each handler gets its own command's fields. */
type Handlers = { readonly [K in keyof JobCommands]: (state: JobState, c: JobCommandOf<K>) => Decision<JobEvent> };

/** A command for a job that exists. */
const onJob =
  <K extends keyof JobCommands>(decide: (job: JobRecord, c: JobCommandOf<K>) => Decision<JobEvent>) =>
  (state: JobState, c: JobCommandOf<K>): Decision<JobEvent> =>
    state.job ? decide(state.job, c) : missing;

const fromCurrentAttempt = (job: JobRecord, attempt: string) => job.attempt === attempt;

/**
 * A start report of the phase's current attempt again, or of one that began before it: a copy that
 * came late (sent by Kafka while the bus or the store was away, and again by its node until
 * answered), from a node whose task has gone to another since. Taken, it would make the old
 * attempt current and the running one's reports count for nothing. A task moves only once its
 * lease has run out, so the clocks of two nodes would have to differ by a lease's time to mistake
 * a new start for an old one.
 */
const notNewStart = (job: JobRecord, c: { readonly attempt: string; readonly at: number }) =>
  c.attempt === job.attempt || (job.attemptAt !== undefined && c.at < job.attemptAt);

const decideBy: Handlers = {
  // The id derives from the idempotency key: a second create reaches the same actor.
  create: (state, c) => {
    if (!state.job) return created(c);
    if (state.job.bodyHash === c.request.bodyHash) return [];
    return {
      code: Code.AlreadyExists,
      message: "idempotency_key was used for a different request body",
      violations: [{ field: "idempotency_key", description: "already used with a different request body" }],
    };
  },
  // A redelivered probe task (its node died) starts a new attempt; the old one's reports are ignored.
  probe_started: onJob((job, c) =>
    job.status === "pending" || (job.status === "probing" && !notNewStart(job, c)) ? [{ type: "probe_started", attempt: c.attempt, at: c.at }] : [],
  ),
  probed: onJob((job, c) => {
    if (job.status !== "probing" || !fromCurrentAttempt(job, c.attempt)) return [];
    // A managed job's auto ladder is decided from the source: its rungs, then its estimate.
    const ladder = job.managed?.ladder;
    if (ladder && job.outputs.length > 0) {
      const spec = {
        ...(ladderOutputSpec(ladder, c.metadata.video, c.metadata.audio !== undefined, job.managed?.drm) as Record<string, JsonValue>),
        ...(job.managed?.subtitleTracks?.length ? { subtitleTracks: [...job.managed.subtitleTracks] } : {}),
        effectivePathTemplate: (job.outputs[0]!.spec as Record<string, JsonValue>)["effectivePathTemplate"] ?? "",
      };
      const resolved = { ...job, outputs: job.outputs.map((o, i) => (i === 0 ? { ...o, spec } : o)) };
      return [
        withFees(
          { type: "probed", at: c.at, metadata: c.metadata, durationMs: c.durationMs, estimates: estimateOutputs(resolved, c.metadata), specs: { 0: spec } },
          transcriptionFees(resolved, c.metadata),
        ),
      ];
    }
    return [
      withFees(
        { type: "probed", at: c.at, metadata: c.metadata, durationMs: c.durationMs, estimates: estimateOutputs(job, c.metadata) },
        transcriptionFees(job, c.metadata),
      ),
    ];
  }),
  probe_failed: onJob((job, c) => (job.status === "probing" && fromCurrentAttempt(job, c.attempt) ? [settle(job, c.at, c.failure)] : [])),
  confirm: onJob((job, c) => {
    if (job.status !== "awaiting_confirmation") {
      return { code: Code.FailedPrecondition, message: `job ${job.id} is ${job.status}; only a job awaiting_confirmation can be confirmed` };
    }
    return [{ type: "confirmed", at: c.at }];
  }),
  cancel: onJob((job, c) => {
    if (isTerminal(job)) return { code: Code.FailedPrecondition, message: `job ${job.id} is already ${job.status}` };
    return [{ type: "settled", at: c.at, status: "canceled" }];
  }),
  encode_started: onJob((job, c) => {
    if (job.status !== "processing" || (job.encoderStarted && notNewStart(job, c))) return [];
    return [{ type: "encode_started", attempt: c.attempt, at: c.at }];
  }),
  output_progress: onJob((job, c) => {
    if (job.status !== "processing" || !fromCurrentAttempt(job, c.attempt)) return [];
    const o = job.outputs.find((x) => x.id === c.outputId);
    const progress = Math.max(0, Math.min(99, Math.floor(c.progress)));
    if (!o || o.status !== "processing") return [];
    // No change is news only as a sign of life: once in a while, so readers see the encode alive.
    if (progress <= o.progress && c.at - job.updatedAt < KEEPALIVE_MS) return [];
    return [{ type: "output_progress", at: c.at, outputId: c.outputId, progress: Math.max(progress, o.progress) }];
  }),
  output_completed: onJob((job, c) => {
    const o = job.outputs.find((x) => x.id === c.outputId);
    if (job.status !== "processing" || !fromCurrentAttempt(job, c.attempt) || !o || o.status === "completed") return [];
    return [
      {
        type: "output_completed",
        at: c.at,
        outputId: c.outputId,
        url: c.url,
        sizeBytes: c.sizeBytes,
        ...(c.main !== undefined ? { main: c.main } : {}),
        ...(c.renditions ? { renditions: c.renditions } : {}),
        ...(c.subtitles?.length ? { subtitles: c.subtitles } : {}),
        ...(c.chapters?.length ? { chapters: c.chapters } : {}),
        ...(c.drm ? { drm: c.drm } : {}),
      },
    ];
  }),
  // News only when it plays for the first time or has more complete rungs: a later attempt starts its publishing over.
  output_published: onJob((job, c) => {
    const o = job.outputs.find((x) => x.id === c.outputId);
    if (job.status !== "processing" || !fromCurrentAttempt(job, c.attempt) || o?.status !== "processing") return [];
    if (o.playableAt !== undefined && c.renditions.length <= (o.renditions?.length ?? 0)) return [];
    return [{ type: "output_published", at: c.at, outputId: c.outputId, url: c.url, main: c.main, renditions: c.renditions, ...(c.drm ? { drm: c.drm } : {}) }];
  }),
  output_failed: onJob((job, c) => {
    const o = job.outputs.find((x) => x.id === c.outputId);
    if (job.status !== "processing" || !fromCurrentAttempt(job, c.attempt) || !o || o.status === "completed" || o.status === "failed") return [];
    return [{ type: "output_failed", at: c.at, outputId: c.outputId, failure: c.failure }];
  }),
  // The node running the encode split an output's ladder; the same chunks again (a later attempt) keep what is done.
  chunks_planned: onJob((job, c) => {
    const o = job.outputs.find((x) => x.id === c.outputId);
    if (job.status !== "processing" || !fromCurrentAttempt(job, c.attempt) || o?.status !== "processing") return [];
    if (!chunkSpansValid(c.spans)) return { code: Code.InvalidArgument, message: "chunks must follow one another from 0, every one but the last with an end" };
    if (job.chunked?.outputId === c.outputId && JSON.stringify(job.chunked.spans) === JSON.stringify(c.spans)) return [];
    return [{ type: "chunks_planned", at: c.at, outputId: c.outputId, spans: c.spans }];
  }),
  // Any node's result counts, once: a chunk encoded twice wrote the same segments to the same keys.
  chunk_done: onJob((job, c) =>
    openChunk(job, c.outputId, c.part) && job.chunked!.done[c.part] === null
      ? [{ type: "chunk_done", at: c.at, outputId: c.outputId, part: c.part, node: c.node, renditions: c.renditions }]
      : [],
  ),
  chunk_failed: onJob((job, c) => (openChunk(job, c.outputId, c.part) ? [{ type: "output_failed", at: c.at, outputId: c.outputId, failure: c.failure }] : [])),
  look: onJob(() => []),
  thumbnails_done: onJob((job, c) =>
    job.status === "processing" && fromCurrentAttempt(job, c.attempt) ? [{ type: "thumbnails_done", at: c.at, results: c.results }] : [],
  ),
  encode_finished: onJob((job, c) => {
    if (job.status !== "processing" || !fromCurrentAttempt(job, c.attempt)) return [];
    // Outputs the encoder did not report on failed with the job-level failure.
    const open = job.outputs.filter((o) => o.status === "pending" || o.status === "processing");
    const failure = c.failure ?? (open.length > 0 ? { code: "internal" as const, message: "the encoder finished without reporting every output" } : undefined);
    const events: JobEvent[] = open.map((o) => ({ type: "output_failed", at: c.at, outputId: o.id, failure: failure! }));
    const after = events.reduce((j, e) => foldJob(j, e), job);
    return [...events, settle(after, c.at, failure, c.durationMs)];
  }),
  task_abandoned: onJob((job, c) => {
    const failure: Failure = {
      code: "encoder_lost",
      message: `the ${c.task} task was lost ${c.lostOn.length} times, its encoder node (${[...new Set(c.lostOn)].join(", ")}) stopping while it ran; it is not tried again`,
    };
    if (c.task === "probe") return job.status === "pending" || job.status === "probing" ? [settle(job, c.at, failure)] : [];
    if (job.status !== "processing") return [];
    // A chunk lost too often fails its output; the node running the encode, waiting on it, reports the rest.
    if (c.task === "chunk") {
      const outputId = job.chunked?.outputId ?? "";
      return openChunk(job, outputId, c.part ?? -1) ? [{ type: "output_failed", at: c.at, outputId, failure }] : [];
    }
    const open = job.outputs.filter((o) => o.status === "pending" || o.status === "processing");
    const events: JobEvent[] = open.map((o) => ({ type: "output_failed", at: c.at, outputId: o.id, failure }));
    return [
      ...events,
      settle(
        events.reduce((j, e) => foldJob(j, e), job),
        c.at,
        failure,
      ),
    ];
  }),
  resume: onJob(() => []),
};

/** Chunks that follow one another from 0 and up, each with an end but the last: at least two. */
function chunkSpansValid(spans: JobCommandOf<"chunks_planned">["spans"]): boolean {
  if (!Array.isArray(spans) || spans.length < 2 || spans[0]?.start !== 0) return false;
  return spans.every((s, k) => {
    const last = k === spans.length - 1;
    return Number.isFinite(s.start) && (last ? s.end === undefined : Number.isFinite(s.end) && s.end! > s.start && spans[k + 1]!.start === s.end);
  });
}

/** A chunk of the job's chunked output that may still change: the job processing, the output open, the part one of its chunks. */
function openChunk(job: JobRecord, outputId: string, part: number): boolean {
  const o = job.outputs.find((x) => x.id === outputId);
  return (
    job.status === "processing" &&
    job.chunked?.outputId === outputId &&
    o?.status === "processing" &&
    Number.isInteger(part) &&
    part >= 0 &&
    part < job.chunked.spans.length
  );
}

function decide<K extends keyof JobCommands>(state: JobState, command: JobCommandOf<K>): Decision<JobEvent> {
  return decideBy[command.type](state, command);
}

const DEFAULT_TEMPLATE = "{job_id}/{output_id}";
/** Key parts joined with single slashes, without empty or "." segments. */
const joinKey = (...parts: string[]) =>
  parts
    .flatMap((p) => p.split("/"))
    .filter((p) => p !== "" && p !== ".")
    .join("/");

/**
 * The job a Create request makes: each output's files go under the origin's base path, then its
 * template (its own, else the job's, else the origin's, else the default) with the variables
 * filled; two outputs may not resolve to the same place.
 */
function created(c: JobCommandOf<"create">): Decision<JobEvent> {
  const r = c.request;
  // A managed job writes under its video's playable directory, one folder per output.
  const template = r.outputPathTemplate || r.outputOrigin?.pathTemplate || (r.managed ? "{output_id}" : DEFAULT_TEMPLATE);
  const basePath = r.managed ? playPrefix(r.managed.videoId) : (r.outputOrigin?.basePath ?? "");
  const date = new Date(c.at).toISOString().slice(0, 10);
  const prefixes = new Map<string, number>();
  const violations: { field: string; description: string }[] = [];
  const outputs = r.outputs.map((o, i): OutputState => {
    const effective = o.pathTemplate || template;
    const vars: Record<string, string> = { ...o.vars, job_id: c.id, output_id: o.id, date };
    const keyPrefix = joinKey(
      basePath,
      effective.replace(/\{([a-z_]+)\}/g, (_, name: string) => vars[name] ?? ""),
    );
    const clash = prefixes.get(keyPrefix);
    if (clash !== undefined)
      violations.push({
        field: `outputs[${i}].path_template`,
        description: `resolves to the same location as outputs[${clash}] (${keyPrefix}); add {output_id} or {resolution}`,
      });
    prefixes.set(keyPrefix, i);
    return { id: o.id, spec: { ...o.spec, effectivePathTemplate: effective }, status: "pending", progress: 0, outputUrl: "", sizeBytes: 0, keyPrefix };
  });
  if (violations.length > 0) return { code: Code.InvalidArgument, message: violations.map((v) => `${v.field}: ${v.description}`).join("; "), violations };
  const job: JobRecord = {
    id: c.id,
    appId: r.appId,
    organizationId: r.organizationId,
    version: 1,
    inputUrl: r.inputUrl,
    inputPath: r.inputPath,
    inputVideoId: r.inputVideoId,
    ...(r.inputOrigin ? { inputOrigin: r.inputOrigin } : {}),
    ...(r.inputUrlOrigin ? { inputUrlOrigin: r.inputUrlOrigin } : {}),
    ...(r.outputOrigin ? { outputOrigin: r.outputOrigin } : {}),
    ...(r.managed ? { managed: r.managed } : {}),
    status: "pending",
    progress: 0,
    priority: r.priority,
    outputs,
    thumbnails: r.thumbnails,
    thumbnailResults: [],
    fees: [processingFee(r.feeId)],
    webhookUrl: r.webhookUrl,
    metadata: r.metadata,
    ...(r.outputPathTemplate !== "" ? { outputPathTemplate: r.outputPathTemplate } : {}),
    thumbnailPrefix: joinKey(basePath, c.id, "thumbnails"),
    ...(r.clip ? { clip: r.clip } : {}),
    delayedStart: r.delayedStart,
    ...(r.idempotencyKey !== "" ? { idempotencyKey: r.idempotencyKey } : {}),
    bodyHash: r.bodyHash,
    ...(r.requestId ? { requestId: r.requestId } : {}),
    encoderStarted: false,
    createdAt: c.at,
    updatedAt: c.at,
  };
  return [{ type: "created", job }];
}

function patchOutput(job: JobRecord, id: string, patch: (o: OutputState) => OutputState): readonly OutputState[] {
  return job.outputs.map((o) => (o.id === id ? patch(o) : o));
}

/** Money at settlement: which lines are due for the outcome (spec: "Actual-side contents by outcome"). */
function settleMoney(job: JobRecord, status: JobStatus): Pick<JobRecord, "outputs" | "fees"> {
  const feeDue = status === "completed" || status === "partial" || (status === "canceled" && job.encoderStarted);
  const outputs = job.outputs.map((o) => ({ ...o, actualMicros: feeDue && o.status === "completed" ? (o.estimateMicros ?? 0) : 0 }));
  // A fee for one output's work (its captions) is due only with that output.
  const fees = job.fees.map((f) => {
    const due = feeDue && (f.outputId === undefined || job.outputs.some((o) => o.id === f.outputId && o.status === "completed"));
    return { ...f, voided: !due, actualMicros: due ? f.rateMicros * f.quantity : 0 };
  });
  return { outputs, fees };
}

export function foldJob(job: JobRecord, event: JobEvent): JobRecord {
  const base = { ...job, version: job.version + 1, updatedAt: "at" in event ? event.at : job.updatedAt };
  switch (event.type) {
    case "created":
      return event.job;
    case "probe_started":
      return { ...base, status: "probing", attempt: event.attempt, attemptAt: event.at };
    case "probed": {
      const outputs = job.outputs.map((o, i) => ({
        ...o,
        ...(event.specs?.[i] !== undefined ? { spec: event.specs[i] } : {}),
        estimateMicros: event.estimates[i] ?? 0,
      }));
      return {
        ...base,
        status: job.delayedStart ? "awaiting_confirmation" : "processing",
        probedAt: event.at,
        probeDurationMs: event.durationMs,
        inputMetadata: event.metadata,
        outputs,
        ...(event.fees ? { fees: [...job.fees.filter((f) => !event.fees!.some((n) => n.id === f.id)), ...event.fees] } : {}),
      };
    }
    case "confirmed":
      return { ...base, status: "processing", confirmedAt: event.at };
    case "encode_started":
      return {
        ...base,
        attempt: event.attempt,
        attemptAt: event.at,
        encoderStarted: true,
        startedAt: job.startedAt ?? event.at,
        outputs: job.outputs.map((o) => (o.status === "completed" ? o : { ...o, status: "processing", progress: o.status === "processing" ? o.progress : 0 })),
      };
    case "output_progress": {
      const outputs = patchOutput(job, event.outputId, (o) => ({ ...o, progress: event.progress }));
      return { ...base, outputs, progress: jobProgress(outputs) };
    }
    case "output_completed": {
      const outputs = patchOutput(job, event.outputId, (o) => ({
        ...o,
        status: "completed",
        progress: 100,
        outputUrl: event.url,
        sizeBytes: event.sizeBytes,
        ...(event.main !== undefined ? { main: event.main } : {}),
        ...(event.renditions ? { renditions: event.renditions } : {}),
        ...(event.drm ? { drm: event.drm } : {}),
      }));
      const tracks = {
        ...(event.subtitles ? { subtitleResults: [...(job.subtitleResults ?? []), ...event.subtitles] } : {}),
        ...(event.chapters ? { chapterResults: [...(job.chapterResults ?? []), ...event.chapters] } : {}),
      };
      return { ...base, outputs, progress: jobProgress(outputs), ...tracks };
    }
    case "output_published":
      return {
        ...base,
        outputs: patchOutput(job, event.outputId, (o) => ({
          ...o,
          playableAt: o.playableAt ?? event.at,
          outputUrl: event.url,
          main: event.main,
          renditions: event.renditions,
          ...(event.drm ? { drm: event.drm } : {}),
        })),
      };
    case "output_failed":
      return {
        ...base,
        outputs: patchOutput(job, event.outputId, (o) => ({ ...o, status: "failed", errorCode: event.failure.code, errorMessage: event.failure.message })),
      };
    case "chunks_planned":
      return { ...base, chunked: { outputId: event.outputId, spans: event.spans, done: event.spans.map(() => null) } };
    case "chunk_done":
      return {
        ...base,
        ...(job.chunked
          ? {
              chunked: {
                ...job.chunked,
                done: job.chunked.done.map((d, k) => (k === event.part ? { node: event.node, at: event.at, renditions: event.renditions } : d)),
              },
            }
          : {}),
      };
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

/** The effects of a job change, each run by the outbox at least once (see jobEffects). */
export type JobIntent =
  | { readonly kind: "update" }
  | { readonly kind: "task"; readonly task: EncodeTask["kind"] }
  /** The chunks of a split ladder not done yet, each its own task. */
  | { readonly kind: "chunk_tasks"; readonly parts: readonly number[] }
  | { readonly kind: "stop" }
  | { readonly kind: "fanout"; readonly events: readonly EventRecord[] }
  | { readonly kind: "legacy"; readonly posts: readonly LegacyPost[] }
  /** A managed job's end, told to its video. */
  | { readonly kind: "video" }
  /** A managed job's stream plays (and has more rungs): its video is ready while the rest encodes. */
  | { readonly kind: "video_published"; readonly outputId: string };

export const JobBehavior: EntityBehavior<JobState, JobCommand, JobEvent, JobIntent> = {
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
  effects: (state, events, command, before) => jobEffects(state, events, command, before),
};

/** The task a job needs now, after a change or when it is resumed: probe first, encode once processing. */
export function taskFor(job: JobRecord, events: readonly JobEvent[] | "resumed"): EncodeTask["kind"] | undefined {
  if (events === "resumed") {
    if (job.status === "pending" || job.status === "probing") return "probe";
    if (job.status === "processing") return "encode";
    return undefined;
  }
  if (events.some((e) => e.type === "created")) return "probe";
  if (job.status === "processing" && events.some((e) => e.type === "probed" || e.type === "confirmed")) return "encode";
  return undefined;
}

/** The chunks of the job's split ladder still to encode. */
function openParts(job: JobRecord): number[] {
  return (job.chunked?.done ?? []).flatMap((d, k) => (d === null ? [k] : []));
}

/** Legacy webhook events of a job change; partial jobs did not finish all outputs, so they are job.failed. */
function legacyPosts(job: JobRecord, event: JobEvent): LegacyPost[] {
  const at = "at" in event ? event.at : job.updatedAt;
  switch (event.type) {
    case "output_progress":
      return [{ event: "job.progress", at }];
    case "output_completed":
      return [{ event: "output.completed", outputId: event.outputId, at }];
    case "output_failed":
      return [{ event: "output.failed", outputId: event.outputId, at }];
    case "settled":
      return [{ event: job.status === "completed" ? "job.completed" : job.status === "canceled" ? "job.canceled" : "job.failed", at }];
    default:
      return [];
  }
}

/**
 * What a job change calls for, in this order: its new state to Watch subscribers, the next task to
 * the encoders, a stop to the encoder of a canceled job, its ledger events to the app's webhook
 * endpoints, and its legacy webhook posts. A resume asks only for the task the job is waiting on.
 */
export function jobEffects(state: JobState, events: readonly JobEvent[], command: JobCommand, before: JobState): JobIntent[] {
  const job = state.job;
  if (!job) return [];
  if (command.type === "resume") {
    const task = taskFor(job, "resumed");
    const parts = task === "encode" ? openParts(job) : [];
    return [...(task ? [{ kind: "task" as const, task }] : []), ...(parts.length > 0 ? [{ kind: "chunk_tasks" as const, parts }] : [])];
  }
  if (events.length === 0) return [];
  const intents: JobIntent[] = [{ kind: "update" }];
  const task = taskFor(job, events);
  if (task) intents.push({ kind: "task", task });
  if (events.some((e) => e.type === "chunks_planned")) intents.push({ kind: "chunk_tasks", parts: openParts(job) });
  // Every other end is reported by the encoder itself; a cancel must reach the one running the job.
  if (command.type === "cancel") intents.push({ kind: "stop" });
  // Ledger events freeze the job as it was right after the event that produced them.
  const ledger: EventRecord[] = [];
  let step = before;
  for (const event of events) {
    step = JobBehavior.fold(step, event);
    ledger.push(...jobLedgerEvents(step.job!, event));
  }
  if (ledger.length > 0) intents.push({ kind: "fanout", events: ledger });
  const posts = events.flatMap((e) => legacyPosts(job, e));
  if (posts.length > 0) intents.push({ kind: "legacy", posts });
  for (const e of events) if (job.managed && e.type === "output_published") intents.push({ kind: "video_published", outputId: e.outputId });
  if (job.managed && events.some((e) => e.type === "settled")) intents.push({ kind: "video" });
  return intents;
}

const json = new TextEncoder();
const encoded = (value: unknown) => json.encode(JSON.stringify(value));

/** A job as its updates carry it: origins without their sealed credentials. */
export function withoutSecrets(job: JobRecord): JobRecord {
  const bare = (o: OriginRecord | undefined) => o && { ...o, sealedCredentials: "" };
  return {
    ...job,
    ...(job.inputOrigin ? { inputOrigin: bare(job.inputOrigin) } : {}),
    ...(job.inputUrlOrigin ? { inputUrlOrigin: bare(job.inputUrlOrigin) } : {}),
    ...(job.outputOrigin ? { outputOrigin: bare(job.outputOrigin) } : {}),
  };
}

export interface JobEffectDeps {
  readonly bus: Bus;
  readonly topics: Topics;
  readonly store: Store;
  /** Records (and arms) the legacy webhook posts of a job change. */
  readonly legacy: (job: JobRecord, seq: number, posts: readonly LegacyPost[]) => Promise<void>;
  /** The length of a day of source retention in ms (shortened by tests): see tellVideoOutcome. */
  readonly retentionDayMs: number;
}

/** The trace a task goes on in (the node that runs it continues it), inside one; nothing otherwise. */
function carriedTrace(): { traceparent?: string } {
  const traceparent = currentTraceparent();
  return traceparent === undefined ? {} : { traceparent };
}

/** How each job intent is carried out; the outbox runs them at least once, and each is idempotent. */
export function jobIntentHandlers(d: JobEffectDeps): IntentHandlers<JobIntent, JobState> {
  return {
    // Subscribers order updates by version and drop what they have shown.
    update: async (_intent, { id, state, recovered }) => {
      // Once per job in the metrics (a rerun after a crash is not a second end).
      if (state.job && !recovered && TERMINAL.has(state.job.status)) observeJobEnded(state.job);
      if (state.job)
        await publishUpdate(d.bus, d.topics, { type: JobBehavior.type, id, version: state.job.version, state: { job: withoutSecrets(state.job) } });
    },
    // The task joins the encode queue, which hands it to a node by priority, class and app; the
    // queue keeps one of each kind per job, and a task that still runs twice is a second attempt,
    // of which the job counts only the latest.
    task: async (intent, { id, state }) => {
      const job = state.job;
      if (!job) return;
      const task: EncodeTask = { kind: intent.task, jobId: id };
      await tell(d.bus, d.topics, Queue, QUEUE_ID, {
        type: "enqueue",
        task: { ...task, appId: job.appId, priority: job.priority, order: job.createdAt, ...carriedTrace() },
        at: Date.now(),
      });
    },
    // Each chunk its own task, so every idle node takes part; the queue keeps one of each.
    chunk_tasks: async (intent, { id, state }) => {
      const job = state.job;
      if (!job) return;
      for (const part of intent.parts)
        await tell(d.bus, d.topics, Queue, QUEUE_ID, {
          type: "enqueue",
          task: { kind: "chunk", jobId: id, part, appId: job.appId, priority: job.priority, order: job.createdAt, ...carriedTrace() },
          at: Date.now(),
        });
    },
    stop: async (_intent, { id }) => {
      const signal: JobSignal = { jobId: id, signal: "stop" };
      await d.bus.publish(d.topics.signals, [{ key: id, value: encoded(signal) }]);
      await tell(d.bus, d.topics, Queue, QUEUE_ID, { type: "cancel", jobId: id, at: Date.now() });
    },
    // Endpoints enqueue an event once. A recovered entry writes its ledger rows again: the write
    // that followed its append may not have happened.
    fanout: async (intent, { recovered }) => {
      if (recovered) await d.store.commit({ writes: intent.events.flatMap(ledgerRewrites) });
      await fanOut(d.store, d.bus, d.topics, intent.events);
    },
    legacy: async (intent, { state, seq }) => {
      if (state.job) await d.legacy(state.job, seq, intent.posts);
    },
    video: async (_intent, { state }) => {
      if (state.job) await tellVideoOutcome({ bus: d.bus, topics: d.topics, store: d.store, dayMs: d.retentionDayMs }, state.job);
    },
    video_published: async (intent, { state }) => {
      if (state.job) await tellVideoPublished({ bus: d.bus, topics: d.topics }, state.job, intent.outputId);
    },
  };
}
