// The VideoActor: one hosted video. It is created uploading (direct or multipart upload) or
// processing (URL ingest, a managed job); it starts its ingest job once its source is there, and
// the job tells it how the transcode ended. Its intents carry Watch updates, the job's start, the
// video.* ledger events to the app's endpoints, and the removal of its files.
import { Code } from "@connectrpc/connect";
import type { Bus } from "../../src/bus/port.js";
import type { Topics } from "../../src/bus/topics.js";
import { partsPrefix, playPrefix, sourceKey, UPLOAD_URL_SECONDS } from "../../src/hosting.js";
import type { ManagedStorage } from "../../src/managed-storage.js";
import { sortKey } from "../../src/pagination.js";
import type { RecordWrite, Store } from "../../src/store/port.js";
import { publishUpdate, tell } from "../commands.js";
import type { Decision, EntityBehavior } from "../host.js";
import { API_VERSION, derivedId, ledgerRewrites, ledgerWrites, type EventRecord, type EventType } from "../ledger.js";
import type { IntentHandlers } from "../outbox.js";
import { fanOut } from "../fanout.js";
import { Job } from "../job/messages.js";
import {
  SOURCE_DELETIONS,
  SOURCE_DELETIONS_PARTITION,
  VIDEOS,
  type SourceDeletionRow,
  type JobOutcome,
  type StreamPublished,
  type VideoCommand,
  type VideoCommandOf,
  type VideoCommands,
  type VideoPatch,
  type VideoRecord,
  type VideoState,
} from "./messages.js";

export type VideoEvent =
  | { readonly type: "created"; readonly video: VideoRecord }
  | { readonly type: "uploaded"; readonly at: number; readonly sizeBytes: number }
  /** first: the video becomes playable with it (it was processing). */
  | { readonly type: "published"; readonly published: StreamPublished; readonly first?: boolean }
  /** playing: the video was ready before its job ended (a progressive stream). */
  | { readonly type: "ended"; readonly outcome: JobOutcome; readonly sourceDeleteAt?: number; readonly playing?: boolean }
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
    if (!state.video) return [{ type: "created", video: videoOf(c) }];
    return state.video.jobId === c.request.jobId && state.video.createdAt === c.at ? [] : { code: Code.AlreadyExists, message: `video ${c.id} already exists` };
  },
  complete_upload: onVideo((v, c) => {
    if (v.status === "processing" && v.inputSizeBytes === c.sizeBytes) return []; // a retried completion
    if (v.status !== "uploading") return refuse(`video ${v.id} is ${v.status}, not uploading`);
    return [{ type: "uploaded", at: c.at, sizeBytes: c.sizeBytes }];
  }),
  // Playable at the first report; a later one is news only with more complete rungs, while the job runs.
  playable: (state, { published: p }) => {
    const v = state.video;
    if (!v || v.jobId !== p.jobId) return [];
    if (v.status === "processing") return [{ type: "published", published: p, first: true }];
    if (v.status === "ready" && v.encoding === true && p.renditions.length > v.renditions.length) return [{ type: "published", published: p }];
    return [];
  },
  job_ended: (state, c) => {
    const v = state.video;
    // The job ends once; a repeated report, or one for another job, is no change. A video ready
    // before its job ended (a progressive stream) takes the end as well.
    if (!v || v.jobId !== c.outcome.jobId || !(v.status === "processing" || (v.status === "ready" && v.encoding === true))) return [];
    const ready = (c.outcome.status === "completed" || c.outcome.status === "partial") && c.outcome.playlistKey !== undefined;
    const due = ready ? sourceDeletionAt(v, c.outcome.at, c.retentionMs ?? 0) : undefined;
    return [{ type: "ended", outcome: c.outcome, ...(due !== undefined ? { sourceDeleteAt: due } : {}), ...(v.encoding === true ? { playing: true } : {}) }];
  },
  update: onVideo((v, c) =>
    v.status === "deleted"
      ? refuse(`video ${v.id} is deleted`)
      : [{ type: "updated", at: c.at, patch: c.patch, ...(c.deleteSourceAt !== undefined ? { deleteSourceAt: c.deleteSourceAt } : {}) }],
  ),
  archive: onVideo((v, c) => {
    if (v.status === "archived") return [];
    if (v.status !== "ready" && v.status !== "error") return refuse(`only ready or error videos can be archived; video ${v.id} is ${v.status}`);
    return [{ type: "archived", at: c.at }];
  }),
  delete: onVideo((v, c) => {
    if (v.status === "deleted") return [];
    if (v.status === "processing") return refuse(`video ${v.id} is processing; delete it once it is ready or has failed`);
    if (v.encoding === true)
      return refuse(`video ${v.id} is still encoding its renditions; delete it once encoded_at is set, or cancel its job ${v.jobId} first`);
    return [{ type: "deleted", at: c.at }];
  }),
  source_deleted: onVideo((v, c) => (v.sourceDeletedAt !== undefined ? [] : [{ type: "source_deleted", at: c.at }])),
};

/** The record a create decides: uploading while an upload is awaited, else processing; nothing encoded yet. */
function videoOf({ id, at, request: r }: VideoCommandOf<"create">): VideoRecord {
  return {
    id,
    appId: r.appId,
    organizationId: r.organizationId,
    version: 1,
    source: r.source,
    status: r.upload ? "uploading" : "processing",
    visibility: r.visibility ?? "unlisted",
    ...(r.title !== undefined ? { title: r.title } : {}),
    ...(r.description !== undefined ? { description: r.description } : {}),
    tags: [...(r.tags ?? [])],
    inputContentType: r.inputContentType ?? "",
    jobId: r.jobId,
    ...(r.preset !== undefined ? { preset: r.preset } : {}),
    hoverPreviews: r.hoverPreviews ?? false,
    ...(r.url !== undefined ? { url: r.url } : {}),
    ...(r.upload ? { upload: { ...r.upload, expiresAt: at + UPLOAD_URL_SECONDS * 1000 } } : {}),
    jobRequest: r.jobRequest,
    durationSeconds: 0,
    renditions: [],
    outputSizeBytes: 0,
    ...(r.requestId !== undefined ? { requestId: r.requestId } : {}),
    createdAt: at,
    updatedAt: at,
    sourcePinned: false,
  };
}

function decide<K extends keyof VideoCommands>(state: VideoState, command: VideoCommandOf<K>): Decision<VideoEvent> {
  return HANDLERS[command.type](state, command);
}

/** When the source of a video that became ready is deleted: its app's rule, unless pinned. */
export function sourceDeletionAt(v: Pick<VideoRecord, "sourcePinned" | "sourceDeletedAt">, readyAt: number, retentionMs: number): number | undefined {
  if (v.sourcePinned || v.sourceDeletedAt !== undefined || retentionMs <= 0) return undefined;
  return readyAt + retentionMs;
}

export function foldVideo(v: VideoRecord, e: VideoEvent): VideoRecord {
  const base = {
    ...v,
    version: v.version + 1,
    updatedAt: "at" in e ? e.at : e.type === "ended" ? e.outcome.at : e.type === "published" ? Math.max(v.updatedAt, e.published.at) : v.updatedAt,
  };
  switch (e.type) {
    case "created":
      return e.video;
    case "uploaded":
      return { ...base, status: "processing", inputSizeBytes: e.sizeBytes };
    case "published": {
      const p = e.published;
      return {
        ...base,
        status: "ready",
        readyAt: v.readyAt ?? p.at,
        encoding: true,
        durationSeconds: p.durationSeconds,
        renditions: renditionsOf(v, p.renditions, true),
        outputSizeBytes: p.outputSizeBytes,
        playlistKey: p.playlistKey,
        ...(p.drm ? { drm: p.drm } : {}),
      };
    }
    case "ended": {
      const o = e.outcome;
      const ok = (o.status === "completed" || o.status === "partial") && o.playlistKey !== undefined;
      const money = { encodingCostMicros: o.actualMicros };
      if (!ok && e.playing === true) {
        // It failed after it became playable: it stays ready (ready is terminal) with what was
        // published, which plays to where the encode stopped, and says why.
        const { encoding: _e, ...rest } = base;
        return {
          ...rest,
          ...money,
          errorCode: o.errorCode ?? "encode_failed",
          errorMessage: o.errorMessage ?? "the transcode stopped before every rendition was done",
        };
      }
      if (!ok) {
        return {
          ...base,
          ...money,
          status: "error",
          errorCode: o.errorCode ?? "encode_failed",
          errorMessage: o.errorMessage ?? "the transcode produced no playable stream",
        };
      }
      const { encoding: _e, ...rest } = base;
      return {
        ...rest,
        ...money,
        status: "ready",
        readyAt: v.readyAt ?? o.at,
        encodedAt: o.at,
        durationSeconds: o.durationSeconds,
        renditions: renditionsOf(v, o.renditions, e.playing === true),
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
      let next: VideoRecord = {
        ...base,
        ...(p.tags ? { tags: p.tags } : {}),
        ...(p.visibility ? { visibility: p.visibility } : {}),
        ...(p.sourcePinned !== undefined ? { sourcePinned: p.sourcePinned } : {}),
      };
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

/**
 * Rendition records with stable ids. A progressive stream's list grows, so its rungs are named by
 * what they are; a video ready at its job's end keeps the ids it always had (by position).
 */
function renditionsOf(v: Pick<VideoRecord, "id">, renditions: JobOutcome["renditions"], growing: boolean): VideoRecord["renditions"] {
  return renditions.map((r, i) => ({
    ...r,
    id: derivedId("ren_", growing ? `${v.id}:${r.resolution}:${r.width}x${r.height}:${r.codec}` : `${v.id}:${i}:${r.resolution}`),
  }));
}

/**
 * The ledger events a video event produces, given the video after it: video.uploaded; video.ready
 * when it becomes playable; video.failed when it ends without playing; video.encoded when every
 * rendition is done, and video.encoding_failed when its job fails after it became playable.
 */
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
  if (e.type === "published") return e.first === true ? [make("video.ready", e.published.at)] : [];
  if (e.type === "ended") {
    if (v.status !== "ready") return [make("video.failed", e.outcome.at)];
    if (v.encodedAt === undefined) return [make("video.encoding_failed", e.outcome.at)];
    // Ready at its end (no progressive stream): playable and encoded at once.
    return e.playing === true ? [make("video.encoded", e.outcome.at)] : [make("video.ready", e.outcome.at), make("video.encoded", e.outcome.at)];
  }
  return [];
}

/** Rows of the video's read model: one per video, listed by app, newest first; its pending source deletion. */
function videoRows(v: VideoRecord): RecordWrite[] {
  return [
    { table: VIDEOS, id: v.id, value: v, partition: v.appId, sort: sortKey(v.createdAt, v.id) },
    v.sourceScheduledForDeletionAt !== undefined
      ? {
          table: SOURCE_DELETIONS,
          id: v.id,
          value: { videoId: v.id, appId: v.appId, due: v.sourceScheduledForDeletionAt } satisfies SourceDeletionRow,
          partition: SOURCE_DELETIONS_PARTITION,
          sort: sortKey(v.sourceScheduledForDeletionAt, v.id),
        }
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
      await tell(d.bus, d.topics, Job, v.jobId, { type: "create", id: v.jobId, at: v.updatedAt, request: v.jobRequest });
    },
    fanout: async (intent, { recovered }) => {
      if (recovered) await d.store.commit({ writes: intent.events.flatMap(ledgerRewrites) });
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
