// The VideoActor: one hosted video. It is created uploading (direct or multipart upload) or
// processing (URL ingest, a managed job); it starts its ingest job once its source is there, and
// the job tells it how the transcode ended. Its intents carry Watch updates, the job's start, the
// video.* ledger events to the app's endpoints, and the removal of its files.
import { Code } from "@connectrpc/connect";
import type { Bus } from "../../src/bus/port.js";
import type { Topics } from "../../src/bus/topics.js";
import { partsPrefix, playPrefix, sourceKey } from "../../src/hosting.js";
import type { ManagedStorage } from "../../src/managed-storage.js";
import { sortKey } from "../../src/pagination.js";
import type { RecordWrite, Store } from "../../src/store/port.js";
import { publishUpdate, tell } from "../commands.js";
import type { Decision, EntityBehavior } from "../host.js";
import { API_VERSION, derivedId, ledgerWrites, type EventRecord, type EventType } from "../ledger.js";
import type { IntentHandlers } from "../outbox.js";
import { fanOut } from "../webhook-endpoint/fanout.js";
import { JobBehavior } from "../job/job.js";
import type { DrmKeysData, JobRecord, JobRequest } from "../job/messages.js";

export const VIDEOS = "videos";

export type VideoStatus = "uploading" | "processing" | "ready" | "error" | "archived" | "deleted";
export type Visibility = "public" | "unlisted" | "private";

export interface RenditionRecord {
  readonly id: string;
  readonly resolution: string;
  readonly codec: "h264" | "h265" | "vp9" | "av1";
  readonly bitrateKbps: number;
  readonly width: number;
  readonly height: number;
  readonly sizeBytes: number;
}

export interface UploadRecord {
  readonly kind: "single" | "multipart";
  /** Names the multipart upload (and its parts' folder); "" for single uploads. */
  readonly uploadId: string;
  readonly filename: string;
  /** Declared size: CompleteUpload checks the stored bytes against it. */
  readonly sizeBytes: number;
  readonly partSizeBytes: number;
  readonly expiresAt: number;
}

export interface VideoRecord {
  readonly id: string;
  readonly appId: string;
  readonly organizationId: string;
  /** Number of events folded: Watch streams order updates by it. */
  readonly version: number;
  readonly source: "upload" | "job";
  readonly status: VideoStatus;
  /** The status before an archive (ready or error). */
  readonly archivedFrom?: VideoStatus;
  readonly visibility: Visibility;
  readonly title?: string;
  readonly description?: string;
  readonly tags: readonly string[];
  readonly inputSizeBytes?: number;
  readonly inputContentType: string;
  readonly jobId: string;
  readonly preset?: string;
  readonly hoverPreviews: boolean;
  /** URL ingest: the source URL. */
  readonly url?: string;
  readonly upload?: UploadRecord;
  /** The ingest job, decided at creation; started once the source is there. */
  readonly jobRequest: JobRequest;
  readonly durationSeconds: number;
  readonly renditions: readonly RenditionRecord[];
  readonly outputSizeBytes: number;
  readonly encodingCostMicros?: number;
  /** Storage keys of what the player needs, under the playable directory. */
  readonly playlistKey?: string;
  readonly posterKey?: string;
  readonly hoverWebpKey?: string;
  readonly hoverMp4Key?: string;
  /** A protected stream's key IDs and sealed keys: what the edge's key server answers from. */
  readonly drm?: DrmKeysData;
  readonly errorCode?: string;
  readonly errorMessage?: string;
  readonly requestId?: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly readyAt?: number;
  readonly sourcePinned: boolean;
  readonly sourceScheduledForDeletionAt?: number;
  readonly sourceDeletedAt?: number;
}

export interface VideoState {
  readonly video?: VideoRecord;
}

/** How the video's job ended, as the job tells it (see the job's `video` intent). */
export interface JobOutcome {
  readonly jobId: string;
  readonly at: number;
  readonly status: "completed" | "partial" | "failed" | "canceled";
  readonly errorCode?: string;
  readonly errorMessage?: string;
  readonly durationSeconds: number;
  readonly actualMicros: number;
  readonly playlistKey?: string;
  readonly renditions: readonly Omit<RenditionRecord, "id">[];
  readonly outputSizeBytes: number;
  readonly posterKey?: string;
  readonly hoverWebpKey?: string;
  readonly hoverMp4Key?: string;
  readonly drm?: DrmKeysData;
}

export interface VideoPatch {
  readonly title?: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  readonly visibility?: Visibility;
  readonly sourcePinned?: boolean;
}

export interface VideoCommands {
  readonly create: { readonly video: VideoRecord };
  /** The gateway verified the stored upload: the source is in place. */
  readonly complete_upload: { readonly at: number; readonly sizeBytes: number; readonly requestId?: string };
  /** retentionMs: the app's delete_source_after_days when the job ended, in ms (0 keeps the source). */
  readonly job_ended: { readonly outcome: JobOutcome; readonly retentionMs?: number };
  readonly update: { readonly at: number; readonly patch: VideoPatch; readonly deleteSourceAt?: number | null };
  readonly archive: { readonly at: number };
  readonly delete: { readonly at: number };
  readonly source_deleted: { readonly at: number };
}
export type VideoCommandOf<K extends keyof VideoCommands> = { readonly type: K } & VideoCommands[K];
export type VideoCommand = { [K in keyof VideoCommands]: VideoCommandOf<K> }[keyof VideoCommands];

export type VideoEvent =
  | { readonly type: "created"; readonly video: VideoRecord }
  | { readonly type: "uploaded"; readonly at: number; readonly sizeBytes: number }
  | { readonly type: "ended"; readonly outcome: JobOutcome; readonly sourceDeleteAt?: number }
  | { readonly type: "updated"; readonly at: number; readonly patch: VideoPatch; readonly deleteSourceAt?: number | null }
  | { readonly type: "archived"; readonly at: number }
  | { readonly type: "deleted"; readonly at: number }
  | { readonly type: "source_deleted"; readonly at: number };

export type VideoIntent =
  | { readonly kind: "update" }
  | { readonly kind: "start_job" }
  | { readonly kind: "fanout"; readonly events: readonly EventRecord[] }
  | { readonly kind: "purge"; readonly what: "all" | "source" };

const missing = { code: Code.NotFound, message: "video not found" } as const;

const refuse = (message: string) => ({ code: Code.FailedPrecondition, message });

type Handlers = { readonly [K in keyof VideoCommands]: (state: VideoState, c: VideoCommandOf<K>) => Decision<VideoEvent> };

const onVideo =
  <K extends keyof VideoCommands>(f: (video: VideoRecord, c: VideoCommandOf<K>) => Decision<VideoEvent>) =>
  (state: VideoState, c: VideoCommandOf<K>): Decision<VideoEvent> =>
    state.video ? f(state.video, c) : missing;

const HANDLERS: Handlers = {
  // The same create again (a retried call, the job and the gateway both creating a managed job's video) is no change.
  create: (state, c) => {
    if (!state.video) return [{ type: "created", video: c.video }];
    return state.video.jobId === c.video.jobId && state.video.createdAt === c.video.createdAt ? [] : { code: Code.AlreadyExists, message: `video ${c.video.id} already exists` };
  },
  complete_upload: onVideo((v, c) => {
    if (v.status === "processing" && v.inputSizeBytes === c.sizeBytes) return []; // a retried completion
    if (v.status !== "uploading") return refuse(`video ${v.id} is ${v.status}, not uploading`);
    return [{ type: "uploaded", at: c.at, sizeBytes: c.sizeBytes }];
  }),
  job_ended: (state, c) => {
    const v = state.video;
    // The job ends once; a repeated report, or one for another job, is no change.
    if (!v || v.status !== "processing" || v.jobId !== c.outcome.jobId) return [];
    const ready = (c.outcome.status === "completed" || c.outcome.status === "partial") && c.outcome.playlistKey !== undefined;
    const due = ready ? sourceDeletionAt(v, c.outcome.at, c.retentionMs ?? 0) : undefined;
    return [{ type: "ended", outcome: c.outcome, ...(due !== undefined ? { sourceDeleteAt: due } : {}) }];
  },
  update: onVideo((v, c) => (v.status === "deleted" ? refuse(`video ${v.id} is deleted`) : [{ type: "updated", at: c.at, patch: c.patch, ...(c.deleteSourceAt !== undefined ? { deleteSourceAt: c.deleteSourceAt } : {}) }])),
  archive: onVideo((v, c) => {
    if (v.status === "archived") return [];
    if (v.status !== "ready" && v.status !== "error") return refuse(`only ready or error videos can be archived; video ${v.id} is ${v.status}`);
    return [{ type: "archived", at: c.at }];
  }),
  delete: onVideo((v, c) => {
    if (v.status === "deleted") return [];
    if (v.status === "processing") return refuse(`video ${v.id} is processing; delete it once it is ready or has failed`);
    return [{ type: "deleted", at: c.at }];
  }),
  source_deleted: onVideo((v, c) => (v.sourceDeletedAt !== undefined ? [] : [{ type: "source_deleted", at: c.at }])),
};

function decide(state: VideoState, command: VideoCommand): Decision<VideoEvent> {
  return (HANDLERS[command.type] as (s: VideoState, c: VideoCommand) => Decision<VideoEvent>)(state, command);
}

/** When the source of a video that became ready is deleted: its app's rule, unless pinned. */
export function sourceDeletionAt(v: Pick<VideoRecord, "sourcePinned" | "sourceDeletedAt">, readyAt: number, retentionMs: number): number | undefined {
  if (v.sourcePinned || v.sourceDeletedAt !== undefined || retentionMs <= 0) return undefined;
  return readyAt + retentionMs;
}

export function foldVideo(v: VideoRecord, e: VideoEvent): VideoRecord {
  const base = { ...v, version: v.version + 1, updatedAt: "at" in e ? e.at : e.type === "ended" ? e.outcome.at : v.updatedAt };
  switch (e.type) {
    case "created":
      return e.video;
    case "uploaded":
      return { ...base, status: "processing", inputSizeBytes: e.sizeBytes };
    case "ended": {
      const o = e.outcome;
      const ok = (o.status === "completed" || o.status === "partial") && o.playlistKey !== undefined;
      const money = { encodingCostMicros: o.actualMicros };
      if (!ok) {
        return { ...base, ...money, status: "error", errorCode: o.errorCode ?? "encode_failed", errorMessage: o.errorMessage ?? "the transcode produced no playable stream" };
      }
      return {
        ...base,
        ...money,
        status: "ready",
        readyAt: o.at,
        durationSeconds: o.durationSeconds,
        renditions: o.renditions.map((r, i) => ({ ...r, id: derivedId("ren_", `${v.id}:${i}:${r.resolution}`) })),
        outputSizeBytes: o.outputSizeBytes,
        playlistKey: o.playlistKey!,
        ...(o.posterKey ? { posterKey: o.posterKey } : {}),
        ...(o.hoverWebpKey ? { hoverWebpKey: o.hoverWebpKey } : {}),
        ...(o.hoverMp4Key ? { hoverMp4Key: o.hoverMp4Key } : {}),
        ...(o.drm ? { drm: o.drm } : {}),
        ...(e.sourceDeleteAt !== undefined ? { sourceScheduledForDeletionAt: e.sourceDeleteAt } : {}),
      };
    }
    case "updated": {
      const p = e.patch;
      let next: VideoRecord = { ...base, ...(p.tags ? { tags: p.tags } : {}), ...(p.visibility ? { visibility: p.visibility } : {}), ...(p.sourcePinned !== undefined ? { sourcePinned: p.sourcePinned } : {}) };
      if (p.title !== undefined) {
        const { title: _t, ...rest } = next;
        next = p.title === "" ? rest : { ...rest, title: p.title };
      }
      if (p.description !== undefined) {
        const { description: _d, ...rest } = next;
        next = p.description === "" ? rest : { ...rest, description: p.description };
      }
      if (e.deleteSourceAt !== undefined) {
        const { sourceScheduledForDeletionAt: _s, ...rest } = next;
        next = e.deleteSourceAt === null ? rest : { ...rest, sourceScheduledForDeletionAt: e.deleteSourceAt };
      }
      return next;
    }
    case "archived":
      return { ...base, status: "archived", archivedFrom: v.status };
    case "deleted": {
      const { sourceScheduledForDeletionAt: _s, ...rest } = base;
      return { ...rest, status: "deleted", ...(v.sourceDeletedAt === undefined ? { sourceDeletedAt: e.at } : {}) };
    }
    case "source_deleted": {
      const { sourceScheduledForDeletionAt: _s, ...rest } = base;
      return { ...rest, sourceDeletedAt: e.at };
    }
  }
}

/** The ledger events a video event produces (video.uploaded, video.ready, video.failed), given the video after it. */
export function videoLedgerEvents(v: VideoRecord, e: VideoEvent): EventRecord[] {
  const make = (type: EventType, at: number): EventRecord => ({
    id: derivedId("evt_", `${v.id}:${type}`),
    appId: v.appId,
    organizationId: v.organizationId,
    type,
    subject: { kind: "video", video: v },
    requestId: v.requestId ?? "",
    apiVersion: API_VERSION,
    createdAt: at,
  });
  if (e.type === "uploaded") return [make("video.uploaded", e.at)];
  if (e.type === "ended") return [make(v.status === "ready" ? "video.ready" : "video.failed", e.outcome.at)];
  return [];
}

/** Sources due for deletion, one partition: what the retention sweep of each actor host reads. */
export const SOURCE_DELETIONS = "source_deletions";
export const SOURCE_DELETIONS_PARTITION = "all";
/** A pending source deletion (rows written before appId was kept lack it). */
export interface SourceDeletionRow {
  readonly videoId: string;
  readonly appId?: string;
  readonly due: number;
}

/** Rows of the video's read model: one per video, listed by app, newest first; its pending source deletion. */
function videoRows(v: VideoRecord): RecordWrite[] {
  return [
    { table: VIDEOS, id: v.id, value: v, partition: v.appId, sort: sortKey(v.createdAt, v.id) },
    v.sourceScheduledForDeletionAt !== undefined
      ? { table: SOURCE_DELETIONS, id: v.id, value: { videoId: v.id, appId: v.appId, due: v.sourceScheduledForDeletionAt } satisfies SourceDeletionRow, partition: SOURCE_DELETIONS_PARTITION, sort: sortKey(v.sourceScheduledForDeletionAt, v.id) }
      : { table: SOURCE_DELETIONS, id: v.id, value: null },
  ];
}

export const VideoBehavior: EntityBehavior<VideoState, VideoCommand, VideoEvent, VideoIntent> = {
  type: "video",
  initial: {},
  decide,
  fold: (state, event) => ({ video: state.video ? foldVideo(state.video, event) : event.type === "created" ? event.video : undefined }),
  repair: (state) => (state.video ? videoRows(state.video) : []),
  readModel: (state, event) => [...videoRows(state.video!), ...videoLedgerEvents(state.video!, event).flatMap(ledgerWrites)],
  effects: (state, events, _command, before) => videoEffects(state, events, before),
};

/**
 * What a video change calls for: its new state to Watch subscribers; its job's start once the
 * source is there (created processing, or an accepted upload); its ledger events; and the removal
 * of files (all of them on delete, the source when it is due).
 */
export function videoEffects(state: VideoState, events: readonly VideoEvent[], before: VideoState): VideoIntent[] {
  const v = state.video;
  if (!v || events.length === 0) return [];
  const intents: VideoIntent[] = [{ kind: "update" }];
  if (events.some((e) => e.type === "uploaded" || (e.type === "created" && e.video.status === "processing"))) intents.push({ kind: "start_job" });
  const ledger: EventRecord[] = [];
  let step = before;
  for (const event of events) {
    step = VideoBehavior.fold(step, event);
    ledger.push(...videoLedgerEvents(step.video!, event));
  }
  if (ledger.length > 0) intents.push({ kind: "fanout", events: ledger });
  if (events.some((e) => e.type === "deleted")) intents.push({ kind: "purge", what: "all" });
  else if (events.some((e) => e.type === "source_deleted")) intents.push({ kind: "purge", what: "source" });
  return intents;
}

export interface VideoEffectDeps {
  readonly bus: Bus;
  readonly topics: Topics;
  readonly store: Store;
  readonly managed: ManagedStorage;
}

/** How each video intent is carried out; the outbox runs them at least once, and each is idempotent. */
export function videoIntentHandlers(d: VideoEffectDeps): IntentHandlers<VideoIntent, VideoState> {
  return {
    update: async (_intent, { id, state }) => {
      if (state.video) await publishUpdate(d.bus, d.topics, { type: VideoBehavior.type, id, version: state.video.version, state });
    },
    // The job's create is idempotent (same id, same body): a second start is no change.
    start_job: async (_intent, { state }) => {
      const v = state.video;
      if (!v) return;
      await tell(d.bus, d.topics, JobBehavior, v.jobId, { type: "create", id: v.jobId, at: v.updatedAt, request: v.jobRequest });
    },
    fanout: async (intent, { recovered }) => {
      if (recovered) await d.store.commit({ writes: intent.events.flatMap(ledgerWrites) });
      await fanOut(d.store, d.bus, d.topics, intent.events);
    },
    purge: async (intent, { state }) => {
      const v = state.video;
      if (!v) return;
      await d.managed.blob.delete(sourceKey(v.id));
      if (v.upload?.uploadId) await d.managed.deletePrefix(partsPrefix(v.id, v.upload.uploadId));
      if (intent.what === "all") await d.managed.deletePrefix(playPrefix(v.id));
    },
  };
}

/** How a managed job ended, as its video needs it: the stream (HLS master, else a DASH MPD), the renditions, the money, the poster and previews, the keys. */
export function jobOutcome(job: JobRecord): JobOutcome {
  const durationSeconds = Math.round((job.inputMetadata?.durationMs ?? 0) / 10) / 100;
  // Stryker disable next-line MethodExpression,ConditionalExpression: an output names its main file only once completed (actors/job), so no other output matches below; the filter states the intent
  const completed = job.outputs.filter((o) => o.status === "completed");
  const stream = completed.find((o) => o.main?.endsWith(".m3u8")) ?? completed.find((o) => o.main?.endsWith(".mpd"));
  const renditions = (stream?.renditions ?? []).map((r) => ({
    resolution: `${Math.min(r.width, r.height)}p`,
    codec: r.codec,
    bitrateKbps: durationSeconds > 0 ? Math.round((r.sizeBytes * 8) / durationSeconds / 1000) : 0,
    width: r.width,
    height: r.height,
    sizeBytes: r.sizeBytes,
  }));
  const thumbs = job.thumbnailResults;
  const poster = thumbs.find((t) => t.mode === "single");
  const webp = thumbs.find((t) => t.mode === "animated" && t.format === "webp");
  // MP4 is a format of animated thumbnails only (ThumbnailFormat.MP4).
  const mp4 = thumbs.find((t) => t.format === "mp4");
  const actualMicros = job.outputs.reduce((s, o) => s + (o.actualMicros ?? 0), 0) + job.fees.reduce((s, f) => s + (f.actualMicros ?? 0), 0);
  return {
    jobId: job.id,
    at: job.completedAt ?? job.updatedAt,
    status: job.status === "completed" || job.status === "partial" || job.status === "failed" ? job.status : "canceled",
    ...(job.errorCode ? { errorCode: job.errorCode } : {}),
    ...(job.errorMessage ? { errorMessage: job.errorMessage } : {}),
    durationSeconds,
    actualMicros,
    ...(stream ? { playlistKey: `${stream.keyPrefix}/${stream.main}` } : {}),
    renditions,
    // The spec's "total stored rendition size": the renditions listed, so the field is their sum.
    outputSizeBytes: renditions.reduce((s, r) => s + r.sizeBytes, 0),
    ...(poster ? { posterKey: poster.key } : {}),
    ...(webp ? { hoverWebpKey: webp.key } : {}),
    ...(mp4 ? { hoverMp4Key: mp4.key } : {}),
    ...(stream?.drm ? { drm: stream.drm } : {}),
  };
}
