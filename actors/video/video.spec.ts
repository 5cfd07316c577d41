// The VideoActor's rules without I/O: which commands each state takes, what the fold makes of the
// job's outcome, the intents each change calls for, the ledger events.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { sortKey } from "../../src/pagination.js";
import type { Rejection } from "../host.js";
import type { DrmKeysData, JobRecord, JobRequest } from "../job/messages.js";
import { derivedId } from "../ledger.js";
import { createVideo, request, videoRecord } from "./video.fixtures.js";
import { sourceDeletionAt, VideoBehavior, videoEffects, type VideoEvent } from "./video.js";
import { SOURCE_DELETIONS, VIDEOS, type JobOutcome, type StreamPublished, type VideoCommand, type VideoRecord, type VideoState } from "./messages.js";

const video = videoRecord;

const outcome = (over: Partial<JobOutcome> = {}): JobOutcome => ({
  jobId: "job_1",
  at: 9000,
  status: "completed",
  durationSeconds: 6,
  actualMicros: 12_345,
  playlistKey: "play/vid_1/out_1/index.m3u8",
  renditions: [{ resolution: "480p", codec: "h264", bitrateKbps: 900, width: 854, height: 480, sizeBytes: 700_000 }],
  outputSizeBytes: 800_000,
  posterKey: "play/vid_1/job_1/thumbnails/poster.jpg",
  ...over,
});

function decided(state: VideoState, c: VideoCommand): readonly VideoEvent[] {
  const d = VideoBehavior.decide(state, c);
  if (!Array.isArray(d)) throw new Error((d as Rejection).message);
  return d;
}
const rejected = (state: VideoState, c: VideoCommand): Rejection => {
  const d = VideoBehavior.decide(state, c);
  if (Array.isArray(d)) throw new Error(`expected a rejection, got ${JSON.stringify(d)}`);
  return d as Rejection;
};
function run(state: VideoState, ...commands: VideoCommand[]): VideoState {
  for (const c of commands) state = decided(state, c).reduce(VideoBehavior.fold, state);
  return state;
}

/** A video as its create decides it, with `over` set on the record (a state reached by other means). */
const created = (over: Partial<VideoRecord> = {}): VideoState => ({ video: { ...run({}, createVideo({}, 1000, over.id ?? "vid_1")).video!, ...over } });
const processing = () => run(created(), { type: "complete_upload", at: 2000, sizeBytes: 100 });

describe("VideoActor decisions", () => {
  it("create: the record decided from the request, once; the same create again is no change, another is already_exists; commands need a video", () => {
    const s = run({}, createVideo());
    expect(s.video).toStrictEqual(video());
    expect(decided(s, createVideo())).toEqual([]);
    expect(rejected(s, createVideo({}, 2)).code).toBe(Code.AlreadyExists);
    expect(rejected(s, createVideo({ jobId: "job_2" }))).toEqual({ code: Code.AlreadyExists, message: "video vid_1 already exists" });
    expect(rejected({}, { type: "archive", at: 1 }).message).toBe("video not found");
    expect(decided({}, { type: "job_ended", outcome: outcome() })).toEqual([]);
  });

  it("create: a URL ingest or a managed job's video starts processing, omitted fields take their defaults; the caller's fields are kept", () => {
    const fromUrl = run({}, createVideo({ upload: undefined, url: "https://x/a.mp4" })).video!;
    expect(fromUrl).toMatchObject({ status: "processing", url: "https://x/a.mp4" });
    expect("upload" in fromUrl).toBe(false);
    const managed = run(
      {},
      { type: "create", id: "vid_2", at: 7, request: { appId: "app_1", organizationId: "org_1", source: "job", jobId: "job_9", jobRequest: request } },
    ).video!;
    expect(managed).toStrictEqual({
      id: "vid_2",
      appId: "app_1",
      organizationId: "org_1",
      version: 1,
      source: "job",
      status: "processing",
      visibility: "unlisted",
      tags: [],
      inputContentType: "",
      jobId: "job_9",
      hoverPreviews: false,
      jobRequest: request,
      durationSeconds: 0,
      renditions: [],
      outputSizeBytes: 0,
      createdAt: 7,
      updatedAt: 7,
      sourcePinned: false,
    });
    const described = run(
      {},
      createVideo({ title: "t", description: "d", tags: ["a", "b"], visibility: "private", preset: "p", hoverPreviews: true, requestId: "req_1" }, 50),
    ).video!;
    expect(described).toMatchObject({
      title: "t",
      description: "d",
      tags: ["a", "b"],
      visibility: "private",
      preset: "p",
      hoverPreviews: true,
      requestId: "req_1",
      createdAt: 50,
      updatedAt: 50,
    });
    expect(described.upload!.expiresAt).toBe(50 + 3_600_000);
  });

  it("complete_upload: uploading to processing with the verified size; a retry with the same size is no change; other states refused", () => {
    const s = processing();
    expect(s.video).toMatchObject({ status: "processing", inputSizeBytes: 100, version: 2, updatedAt: 2000 });
    expect(decided(s, { type: "complete_upload", at: 3000, sizeBytes: 100 })).toEqual([]);
    expect(rejected(s, { type: "complete_upload", at: 3000, sizeBytes: 99 }).message).toMatch(/processing, not uploading/);
  });

  it("complete_upload: a video whose job already ended refuses a completion, even one of the same size", () => {
    const ready = run(processing(), { type: "job_ended", outcome: outcome() });
    expect(ready.video!.inputSizeBytes).toBe(100);
    const r = rejected(ready, { type: "complete_upload", at: 9500, sizeBytes: 100 });
    expect(r).toEqual({ code: Code.FailedPrecondition, message: "video vid_1 is ready, not uploading" });
  });

  it("job_ended: ready with renditions, money and keys; error without a playlist or on failure; only once, only for its job", () => {
    const ready = run(processing(), { type: "job_ended", outcome: outcome() }).video!;
    expect(ready).toMatchObject({
      status: "ready",
      readyAt: 9000,
      durationSeconds: 6,
      encodingCostMicros: 12_345,
      outputSizeBytes: 800_000,
      playlistKey: "play/vid_1/out_1/index.m3u8",
      posterKey: "play/vid_1/job_1/thumbnails/poster.jpg",
    });
    expect(ready.renditions[0]).toMatchObject({ resolution: "480p", width: 854, height: 480, sizeBytes: 700_000 });
    expect(ready.renditions[0]!.id).toMatch(/^ren_/);
    expect(ready.sourceScheduledForDeletionAt).toBeUndefined();
    expect(decided({ video: ready }, { type: "job_ended", outcome: outcome() })).toEqual([]);
    expect(decided(processing(), { type: "job_ended", outcome: outcome({ jobId: "job_other" }) })).toEqual([]);
    const failed = run(processing(), {
      type: "job_ended",
      outcome: outcome({ status: "failed", errorCode: "input_invalid", errorMessage: "not a video", playlistKey: undefined }),
    }).video!;
    expect(failed).toMatchObject({ status: "error", errorCode: "input_invalid", errorMessage: "not a video", encodingCostMicros: 12_345 });
    expect(failed.readyAt).toBeUndefined();
    const noPlaylist = run(processing(), { type: "job_ended", outcome: outcome({ playlistKey: undefined }) }).video!;
    expect(noPlaylist).toMatchObject({ status: "error", errorCode: "encode_failed" });
    const partial = run(processing(), { type: "job_ended", outcome: outcome({ status: "partial" }) }).video!;
    expect(partial.status).toBe("ready");
  });

  it("job_ended: the ready video is exactly the processing one with the job's results; keys it does not name stay absent", () => {
    const before = processing().video!;
    const ready = run({ video: before }, { type: "job_ended", outcome: outcome() }).video!;
    expect(ready).toStrictEqual({
      ...before,
      version: 3,
      updatedAt: 9000,
      status: "ready",
      readyAt: 9000,
      encodedAt: 9000,
      encodingCostMicros: 12_345,
      durationSeconds: 6,
      renditions: [{ id: expect.stringMatching(/^ren_/), resolution: "480p", codec: "h264", bitrateKbps: 900, width: 854, height: 480, sizeBytes: 700_000 }],
      outputSizeBytes: 800_000,
      playlistKey: "play/vid_1/out_1/index.m3u8",
      posterKey: "play/vid_1/job_1/thumbnails/poster.jpg",
    });
    const drm: DrmKeysData = { scheme: "aes128", clearKey: true, kids: [{ trackClass: "sd", kid: "00112233445566778899aabbccddeeff" }], sealed: "sealed" };
    const full = run(
      { video: before },
      { type: "job_ended", outcome: outcome({ hoverWebpKey: "play/vid_1/loop.webp", hoverMp4Key: "play/vid_1/loop.mp4", drm }), retentionMs: 1000 },
    ).video!;
    expect(full).toMatchObject({ hoverWebpKey: "play/vid_1/loop.webp", hoverMp4Key: "play/vid_1/loop.mp4", drm, sourceScheduledForDeletionAt: 10_000 });
  });

  it("job_ended: a failed or canceled job is an error even when it names a playlist; the default error says why", () => {
    for (const status of ["failed", "canceled"] as const) {
      const v = run(processing(), { type: "job_ended", outcome: outcome({ status }), retentionMs: 5000 }).video!;
      expect(v).toMatchObject({
        status: "error",
        errorCode: "encode_failed",
        errorMessage: "the transcode produced no playable stream",
        encodingCostMicros: 12_345,
      });
      expect(v.readyAt).toBeUndefined();
      expect(v.playlistKey).toBeUndefined();
    }
    const noPlaylist = run(processing(), { type: "job_ended", outcome: outcome({ playlistKey: undefined }) }).video!;
    expect(noPlaylist.errorMessage).toBe("the transcode produced no playable stream");
  });

  it("job_ended: each rendition gets its own id, the same on every replay, distinct between videos", () => {
    const two = outcome({
      renditions: [outcome().renditions[0]!, { resolution: "720p", codec: "h264", bitrateKbps: 2000, width: 1280, height: 720, sizeBytes: 1_500_000 }],
    });
    const ids = (s: VideoState) => run(s, { type: "job_ended", outcome: { ...two, jobId: s.video!.jobId } }).video!.renditions.map((r) => r.id);
    const first = ids(processing());
    expect(new Set(first).size).toBe(2);
    expect(ids(processing())).toEqual(first);
    const other = run(created({ id: "vid_2" }), { type: "complete_upload", at: 2000, sizeBytes: 100 });
    expect(ids(other).filter((id) => first.includes(id))).toEqual([]);
  });

  it("job_ended: the ended event carries the source's due date only when the video becomes ready and a rule applies", () => {
    const s = processing();
    const ended = (o: JobOutcome, retentionMs?: number) => decided(s, { type: "job_ended", outcome: o, ...(retentionMs !== undefined ? { retentionMs } : {}) });
    expect(ended(outcome(), 5000)).toStrictEqual([{ type: "ended", outcome: outcome(), sourceDeleteAt: 14_000 }]);
    expect(ended(outcome({ status: "partial" }), 5000)).toStrictEqual([{ type: "ended", outcome: outcome({ status: "partial" }), sourceDeleteAt: 14_000 }]);
    for (const o of [outcome({ status: "failed" }), outcome({ status: "canceled" }), outcome({ playlistKey: undefined })]) {
      expect(ended(o, 5000)).toStrictEqual([{ type: "ended", outcome: o }]);
    }
    expect(ended(outcome())).toStrictEqual([{ type: "ended", outcome: outcome() }]);
    expect(ended(outcome(), 0)).toStrictEqual([{ type: "ended", outcome: outcome() }]);
  });

  it("retention: a ready video's source is due retentionMs after ready, unless pinned; never for a failed one", () => {
    const due = run(processing(), { type: "job_ended", outcome: outcome(), retentionMs: 5000 }).video!;
    expect(due.sourceScheduledForDeletionAt).toBe(14_000);
    const failed = run(processing(), { type: "job_ended", outcome: outcome({ status: "failed", playlistKey: undefined }), retentionMs: 5000 }).video!;
    expect(failed.sourceScheduledForDeletionAt).toBeUndefined();
    expect(sourceDeletionAt({ sourcePinned: true }, 10, 5)).toBeUndefined();
    expect(sourceDeletionAt({ sourcePinned: false, sourceDeletedAt: 3 }, 10, 5)).toBeUndefined();
    expect(sourceDeletionAt({ sourcePinned: false }, 10, 0)).toBeUndefined();
    expect(sourceDeletionAt({ sourcePinned: false }, 10, 5)).toBe(15);
    const gone = run({ video: due }, { type: "source_deleted", at: 20_000 }).video!;
    expect(gone.sourceDeletedAt).toBe(20_000);
    expect(gone.sourceScheduledForDeletionAt).toBeUndefined();
    expect(decided({ video: gone }, { type: "source_deleted", at: 30_000 })).toEqual([]);
  });

  it("update: title and description cleared by empty strings, tags replaced, visibility and pin set, the schedule set or cleared", () => {
    const s = run(created({ title: "t", description: "d", tags: ["a"] }), {
      type: "update",
      at: 5,
      patch: { title: "", description: "new", tags: ["x", "y"], visibility: "private", sourcePinned: true },
      deleteSourceAt: null,
    });
    expect(s.video).toMatchObject({ description: "new", tags: ["x", "y"], visibility: "private", sourcePinned: true, updatedAt: 5 });
    expect(s.video!.title).toBeUndefined();
    const titled = run(s, { type: "update", at: 6, patch: { title: "back" }, deleteSourceAt: 99 }).video!;
    expect(titled).toMatchObject({ title: "back", description: "new", sourceScheduledForDeletionAt: 99 });
    const cleared = run({ video: titled }, { type: "update", at: 7, patch: { description: "" } }).video!;
    expect(cleared.description).toBeUndefined();
    expect(cleared.sourceScheduledForDeletionAt).toBe(99);
  });

  it("update: what the patch does not name is kept as it was; the event names a schedule change only when asked", () => {
    const s = created({ title: "t", description: "d", tags: ["a"], visibility: "public", sourcePinned: true, sourceScheduledForDeletionAt: 50 });
    const { description: _d, ...rest } = s.video!;
    expect(run(s, { type: "update", at: 5, patch: { description: "" } }).video).toStrictEqual({ ...rest, version: 2, updatedAt: 5 });
    expect(run(s, { type: "update", at: 6, patch: {} }).video).toStrictEqual({ ...s.video, version: 2, updatedAt: 6 });
    expect(decided(s, { type: "update", at: 5, patch: { title: "x" } })).toStrictEqual([{ type: "updated", at: 5, patch: { title: "x" } }]);
    expect(decided(s, { type: "update", at: 5, patch: {}, deleteSourceAt: null })).toStrictEqual([{ type: "updated", at: 5, patch: {}, deleteSourceAt: null }]);
    expect(rejected({ video: { ...s.video!, status: "deleted" } }, { type: "update", at: 7, patch: {} })).toEqual({
      code: Code.FailedPrecondition,
      message: "video vid_1 is deleted",
    });
  });

  it("archive: ready or error only, once; delete: not while processing, once, marking the source deleted", () => {
    expect(rejected(created(), { type: "archive", at: 1 }).message).toMatch(/only ready or error/);
    const ready = run(processing(), { type: "job_ended", outcome: outcome(), retentionMs: 1 });
    const archived = run(ready, { type: "archive", at: 10_000 });
    expect(archived.video).toMatchObject({ status: "archived", archivedFrom: "ready" });
    expect(decided(archived, { type: "archive", at: 10_001 })).toEqual([]);
    expect(rejected(processing(), { type: "delete", at: 1 }).message).toMatch(/processing/);
    const deleted = run(archived, { type: "delete", at: 11_000 }).video!;
    expect(deleted).toMatchObject({ status: "deleted", sourceDeletedAt: 11_000 });
    expect(deleted.sourceScheduledForDeletionAt).toBeUndefined();
    expect(decided({ video: deleted }, { type: "delete", at: 12_000 })).toEqual([]);
    expect(rejected({ video: deleted }, { type: "update", at: 1, patch: { title: "x" } }).message).toMatch(/deleted/);
    const deletedFromUploading = run(created(), { type: "delete", at: 50 }).video!;
    expect(deletedFromUploading.status).toBe("deleted");
    const keptStamp = run({ video: { ...ready.video!, sourceDeletedAt: 5 } }, { type: "delete", at: 60 }).video!;
    expect(keptStamp.sourceDeletedAt).toBe(5);
  });

  it("archive: a failed video can be archived too, and remembers it was an error", () => {
    const failed = run(processing(), { type: "job_ended", outcome: outcome({ status: "failed", playlistKey: undefined }) });
    expect(run(failed, { type: "archive", at: 10_000 }).video).toMatchObject({ status: "archived", archivedFrom: "error", updatedAt: 10_000 });
    expect(rejected(processing(), { type: "archive", at: 1 })).toEqual({
      code: Code.FailedPrecondition,
      message: "only ready or error videos can be archived; video vid_1 is processing",
    });
  });
});

const effects = (before: VideoState, c: VideoCommand) => {
  const events = decided(before, c);
  const after = events.reduce(VideoBehavior.fold, before);
  return videoEffects(after, events, before);
};

describe("VideoActor effects and ledger", () => {
  it("an upload's completion starts the job and records video.uploaded; URL ingest starts at creation without it", () => {
    const kinds = (i: ReturnType<typeof effects>) => i.map((x) => x.kind);
    expect(kinds(effects({}, createVideo()))).toEqual(["update"]);
    const fromUrl = effects({}, createVideo({ upload: undefined, url: "https://x/a.mp4" }));
    expect(kinds(fromUrl)).toEqual(["update", "start_job"]);
    const completed = effects(created(), { type: "complete_upload", at: 2000, sizeBytes: 100 });
    expect(kinds(completed)).toEqual(["update", "start_job", "fanout"]);
    const fanout = completed.find((i) => i.kind === "fanout") as Extract<ReturnType<typeof effects>[number], { kind: "fanout" }>;
    expect(fanout.events.map((e) => [e.type, e.createdAt, e.subject.kind])).toEqual([["video.uploaded", 2000, "video"]]);
    expect(fanout.events[0]!.id).toMatch(/^evt_/);
  });

  it("the job's end records video.ready and video.encoded, or video.failed; delete purges everything, a due source only the source; no change, no intents", () => {
    const ready = effects(processing(), { type: "job_ended", outcome: outcome() });
    expect(ready.map((i) => i.kind)).toEqual(["update", "fanout"]);
    const typesOf = (i: ReturnType<typeof effects>[number] | undefined) => (i?.kind === "fanout" ? i.events.map((e) => e.type) : []);
    expect(typesOf(ready[1])).toEqual(["video.ready", "video.encoded"]);
    const failed = effects(processing(), { type: "job_ended", outcome: outcome({ status: "failed", playlistKey: undefined }) });
    expect(typesOf(failed[1])).toEqual(["video.failed"]);
    const readyState = run(processing(), { type: "job_ended", outcome: outcome() });
    expect(effects(readyState, { type: "delete", at: 1 })).toEqual([{ kind: "update" }, { kind: "purge", what: "all" }]);
    expect(effects(readyState, { type: "source_deleted", at: 1 })).toEqual([{ kind: "update" }, { kind: "purge", what: "source" }]);
    expect(effects(readyState, { type: "job_ended", outcome: outcome() })).toEqual([]);
  });

  it("read models: the video row by app, and a due-deletion row only while one is pending", () => {
    const s = run(processing(), { type: "job_ended", outcome: outcome(), retentionMs: 10 });
    const rows = VideoBehavior.readModel(s, { type: "archived", at: 1 });
    expect(rows.map((r) => [r.table, r.id, r.value === null])).toEqual([
      ["videos", "vid_1", false],
      ["source_deletions", "vid_1", false],
    ]);
    const none = VideoBehavior.repair(created());
    expect(none.map((r) => [r.table, r.value === null])).toEqual([
      ["videos", false],
      ["source_deletions", true],
    ]);
    expect(VideoBehavior.repair({})).toEqual([]);
  });

  it("read models: the due-deletion row names the video, its app and its due time, in the one partition, sorted by due time", () => {
    const s = run(processing(), { type: "job_ended", outcome: outcome(), retentionMs: 10 });
    expect(VideoBehavior.repair(s)).toEqual([
      { table: VIDEOS, id: "vid_1", value: s.video, partition: "app_1", sort: sortKey(1000, "vid_1") },
      { table: SOURCE_DELETIONS, id: "vid_1", value: { videoId: "vid_1", appId: "app_1", due: 9010 }, partition: "all", sort: sortKey(9010, "vid_1") },
    ]);
  });

  it("ledger events: one id per video and type, the same on every replay; the request id of the call that made the video", () => {
    const fanned = (before: VideoState, c: VideoCommand) => effects(before, c).flatMap((i) => (i.kind === "fanout" ? i.events : []));
    const uploaded = fanned(created({ requestId: "req_1" }), { type: "complete_upload", at: 2000, sizeBytes: 100 })[0]!;
    expect(uploaded).toMatchObject({ type: "video.uploaded", appId: "app_1", organizationId: "org_1", requestId: "req_1", createdAt: 2000 });
    expect(fanned(created({ requestId: "req_1" }), { type: "complete_upload", at: 2500, sizeBytes: 100 })[0]!.id).toBe(uploaded.id);
    const ready = fanned(processing(), { type: "job_ended", outcome: outcome() })[0]!;
    expect(ready).toMatchObject({ type: "video.ready", requestId: "" });
    const other = fanned(created({ id: "vid_2" }), { type: "complete_upload", at: 2000, sizeBytes: 100 })[0]!;
    expect(new Set([uploaded.id, ready.id, other.id]).size).toBe(3);
  });

  it("the intents of a change look at each of its events, wherever it comes in the list", () => {
    const s = processing();
    const v = s.video!;
    const kinds = (events: VideoEvent[]) => videoEffects({ video: v }, events, s).map((i) => (i.kind === "purge" ? `purge:${i.what}` : i.kind));
    const touch: VideoEvent = { type: "updated", at: 3000, patch: { title: "x" } };
    expect(kinds([touch, { type: "uploaded", at: 3000, sizeBytes: 100 }])).toEqual(["update", "start_job", "fanout"]);
    expect(kinds([touch, { type: "created", video: { ...v, status: "processing" } }])).toEqual(["update", "start_job"]);
    expect(kinds([touch, { type: "deleted", at: 3000 }])).toEqual(["update", "purge:all"]);
    expect(kinds([touch, { type: "source_deleted", at: 3000 }])).toEqual(["update", "purge:source"]);
    expect(kinds([touch])).toEqual(["update"]);
  });
});

describe("VideoActor: a progressive stream (ready while its ladder encodes)", () => {
  const published = (over: Partial<StreamPublished> = {}): StreamPublished => ({
    jobId: "job_1",
    at: 3000,
    playlistKey: "play/vid_1/out_1/index.m3u8",
    durationSeconds: 6,
    renditions: [],
    outputSizeBytes: 0,
    ...over,
  });
  const rung = (height: number, sizeBytes: number) => ({
    resolution: `${height}p`,
    codec: "h264" as const,
    bitrateKbps: 100,
    width: Math.round((height * 16) / 9 / 2) * 2,
    height,
    sizeBytes,
  });
  const typesOf = (s: VideoState, c: VideoCommand) => effects(s, c).flatMap((i) => (i.kind === "fanout" ? i.events.map((e) => [e.type, e.createdAt]) : []));

  it("the first report makes it ready (video.ready, once), still encoding; later ones add rungs with ids that do not move", () => {
    const first = run(processing(), { type: "playable", published: published() }).video!;
    expect(first).toMatchObject({
      status: "ready",
      readyAt: 3000,
      encoding: true,
      playlistKey: "play/vid_1/out_1/index.m3u8",
      durationSeconds: 6,
      renditions: [],
    });
    expect(first.encodedAt).toBeUndefined();
    expect(typesOf(processing(), { type: "playable", published: published() })).toEqual([["video.ready", 3000]]);
    // The same report again, or one with no more rungs, is no change; another job's is ignored.
    expect(decided({ video: first }, { type: "playable", published: published() })).toEqual([]);
    expect(decided(processing(), { type: "playable", published: published({ jobId: "job_other" }) })).toEqual([]);
    const one = run({ video: first }, { type: "playable", published: published({ renditions: [rung(360, 10)], outputSizeBytes: 10 }) }).video!;
    expect(one).toMatchObject({ readyAt: 3000, encoding: true, outputSizeBytes: 10 });
    expect(typesOf({ video: first }, { type: "playable", published: published({ renditions: [rung(360, 10)] }) })).toEqual([]);
    const all = run({ video: one }, { type: "playable", published: published({ renditions: [rung(720, 30), rung(360, 10)], outputSizeBytes: 40 }) }).video!;
    expect(all.renditions.map((r) => r.resolution)).toEqual(["720p", "360p"]);
    expect(all.renditions[1]!.id).toBe(one.renditions[0]!.id);
    expect(decided({ video: all }, { type: "playable", published: published({ renditions: [rung(360, 10)] }) })).toEqual([]);
    // Not while uploading, nor once its job ended.
    expect(decided(created(), { type: "playable", published: published() })).toEqual([]);
    const ended = run({ video: all }, { type: "job_ended", outcome: outcome() }).video!;
    expect(decided({ video: ended }, { type: "playable", published: published({ renditions: [rung(720, 1), rung(480, 1), rung(360, 1)] }) })).toEqual([]);
  });

  it("its job's end: every rendition done (encoded_at, video.encoded), ready_at kept; a failure keeps it ready and says why (video.encoding_failed)", () => {
    const playing = run(processing(), { type: "playable", published: published({ renditions: [rung(360, 10)], outputSizeBytes: 10 }) });
    const done = run(playing, {
      type: "job_ended",
      outcome: outcome({ renditions: [rung(720, 30), rung(360, 10)], outputSizeBytes: 40 }),
      retentionMs: 5000,
    }).video!;
    expect(done).toMatchObject({
      status: "ready",
      readyAt: 3000,
      encodedAt: 9000,
      outputSizeBytes: 40,
      encodingCostMicros: 12_345,
      sourceScheduledForDeletionAt: 14_000,
    });
    expect(done.encoding).toBeUndefined();
    expect(done.renditions[1]!.id).toBe(playing.video!.renditions[0]!.id);
    expect(typesOf(playing, { type: "job_ended", outcome: outcome() })).toEqual([["video.encoded", 9000]]);
    for (const status of ["failed", "canceled"] as const) {
      const failed = run(playing, {
        type: "job_ended",
        outcome: outcome({ status, errorCode: "encode_failed", errorMessage: "ffmpeg died", playlistKey: undefined }),
      }).video!;
      expect(failed).toMatchObject({ status: "ready", readyAt: 3000, errorCode: "encode_failed", errorMessage: "ffmpeg died", encodingCostMicros: 12_345 });
      expect([failed.encoding, failed.encodedAt, failed.sourceScheduledForDeletionAt]).toEqual([undefined, undefined, undefined]);
      expect(failed.playlistKey).toBe("play/vid_1/out_1/index.m3u8");
      expect(typesOf(playing, { type: "job_ended", outcome: outcome({ status, playlistKey: undefined }) })).toEqual([["video.encoding_failed", 9000]]);
    }
    const silent = run(playing, { type: "job_ended", outcome: outcome({ status: "failed", playlistKey: undefined }) }).video!;
    expect([silent.errorCode, silent.errorMessage]).toEqual(["encode_failed", "the transcode stopped before every rendition was done"]);
    // Ended once.
    expect(decided({ video: done }, { type: "job_ended", outcome: outcome() })).toEqual([]);
  });

  it("keeps a protected stream's keys from the first report; ids are distinct per rung and, for a video ready at its end, by position as they always were", () => {
    const drm: DrmKeysData = { scheme: "aes128", clearKey: true, kids: [{ trackClass: "sd", kid: "00112233445566778899aabbccddeeff" }], sealed: "sealed" };
    expect(run(processing(), { type: "playable", published: published({ drm }) }).video!.drm).toEqual(drm);
    expect(run(processing(), { type: "playable", published: published() }).video!).not.toHaveProperty("drm");
    const all = run(processing(), { type: "playable", published: published({ renditions: [rung(720, 30), rung(360, 10)] }) }).video!;
    expect(new Set(all.renditions.map((r) => r.id)).size).toBe(2);
    const atEnd = run(processing(), { type: "job_ended", outcome: outcome() }).video!;
    expect(atEnd.renditions[0]!.id).toBe(derivedId("ren_", "vid_1:0:480p"));
  });

  it("a later report never moves updated_at back; an archived video takes neither reports nor its job's end", () => {
    const playing = run(processing(), { type: "playable", published: published() });
    const touched = run(playing, { type: "update", at: 5000, patch: { title: "t" } });
    expect(run(touched, { type: "playable", published: published({ renditions: [rung(360, 10)] }) }).video!.updatedAt).toBe(5000);
    const archived = run(playing, { type: "archive", at: 6000 });
    expect(decided(archived, { type: "playable", published: published({ renditions: [rung(360, 10)] }) })).toEqual([]);
    expect(decided(archived, { type: "job_ended", outcome: outcome() })).toEqual([]);
  });

  it("delete waits for the end of the encode; archive does not", () => {
    const playing = run(processing(), { type: "playable", published: published() });
    expect(rejected(playing, { type: "delete", at: 5000 })).toMatchObject({ code: Code.FailedPrecondition, message: expect.stringMatching(/still encoding/) });
    expect(run(playing, { type: "archive", at: 5000 }).video!.status).toBe("archived");
  });
});
