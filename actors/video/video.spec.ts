// The VideoActor's rules without I/O: which commands each state takes, what the fold makes of the
// job's outcome, the intents each change calls for, the ledger events, and the outcome a managed
// job reports.
import { describe, expect, it } from "vitest";
import type { Rejection } from "../host.js";
import type { JobRecord, JobRequest } from "../job/messages.js";
import { jobOutcome, sourceDeletionAt, VideoBehavior, videoEffects, type JobOutcome, type VideoCommand, type VideoEvent, type VideoRecord, type VideoState } from "./video.js";

const request = { appId: "app_1", bodyHash: "video:vid_1" } as unknown as JobRequest;

function video(over: Partial<VideoRecord> = {}): VideoRecord {
  return {
    id: "vid_1",
    appId: "app_1",
    organizationId: "org_1",
    version: 1,
    source: "upload",
    status: "uploading",
    visibility: "unlisted",
    tags: [],
    inputContentType: "video/mp4",
    jobId: "job_1",
    hoverPreviews: false,
    upload: { kind: "single", uploadId: "", filename: "a.mp4", sizeBytes: 100, partSizeBytes: 100, expiresAt: 5000 },
    jobRequest: request,
    durationSeconds: 0,
    renditions: [],
    outputSizeBytes: 0,
    createdAt: 1000,
    updatedAt: 1000,
    sourcePinned: false,
    ...over,
  };
}

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

const created = (over: Partial<VideoRecord> = {}) => run({}, { type: "create", video: video(over) });
const processing = () => run(created(), { type: "complete_upload", at: 2000, sizeBytes: 100 });

describe("VideoActor decisions", () => {
  it("create: once; the same create again is no change, another is already_exists; commands need a video", () => {
    const s = created();
    expect(s.video?.status).toBe("uploading");
    expect(decided(s, { type: "create", video: video() })).toEqual([]);
    expect(rejected(s, { type: "create", video: video({ createdAt: 2 }) }).code).toBeDefined();
    expect(rejected(s, { type: "create", video: video({ jobId: "job_2" }) }).message).toMatch(/already exists/);
    expect(rejected({}, { type: "archive", at: 1 }).message).toBe("video not found");
    expect(decided({}, { type: "job_ended", outcome: outcome() })).toEqual([]);
  });

  it("complete_upload: uploading to processing with the verified size; a retry with the same size is no change; other states refused", () => {
    const s = processing();
    expect(s.video).toMatchObject({ status: "processing", inputSizeBytes: 100, version: 2, updatedAt: 2000 });
    expect(decided(s, { type: "complete_upload", at: 3000, sizeBytes: 100 })).toEqual([]);
    expect(rejected(s, { type: "complete_upload", at: 3000, sizeBytes: 99 }).message).toMatch(/processing, not uploading/);
  });

  it("job_ended: ready with renditions, money and keys; error without a playlist or on failure; only once, only for its job", () => {
    const ready = run(processing(), { type: "job_ended", outcome: outcome() }).video!;
    expect(ready).toMatchObject({ status: "ready", readyAt: 9000, durationSeconds: 6, encodingCostMicros: 12_345, outputSizeBytes: 800_000, playlistKey: "play/vid_1/out_1/index.m3u8", posterKey: "play/vid_1/job_1/thumbnails/poster.jpg" });
    expect(ready.renditions[0]).toMatchObject({ resolution: "480p", width: 854, height: 480, sizeBytes: 700_000 });
    expect(ready.renditions[0]!.id).toMatch(/^ren_/);
    expect(ready.sourceScheduledForDeletionAt).toBeUndefined();
    expect(decided({ video: ready }, { type: "job_ended", outcome: outcome() })).toEqual([]);
    expect(decided(processing(), { type: "job_ended", outcome: outcome({ jobId: "job_other" }) })).toEqual([]);
    const failed = run(processing(), { type: "job_ended", outcome: outcome({ status: "failed", errorCode: "input_invalid", errorMessage: "not a video", playlistKey: undefined }) }).video!;
    expect(failed).toMatchObject({ status: "error", errorCode: "input_invalid", errorMessage: "not a video", encodingCostMicros: 12_345 });
    expect(failed.readyAt).toBeUndefined();
    const noPlaylist = run(processing(), { type: "job_ended", outcome: outcome({ playlistKey: undefined }) }).video!;
    expect(noPlaylist).toMatchObject({ status: "error", errorCode: "encode_failed" });
    const partial = run(processing(), { type: "job_ended", outcome: outcome({ status: "partial" }) }).video!;
    expect(partial.status).toBe("ready");
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
    const s = run(created({ title: "t", description: "d", tags: ["a"] }), { type: "update", at: 5, patch: { title: "", description: "new", tags: ["x", "y"], visibility: "private", sourcePinned: true }, deleteSourceAt: null });
    expect(s.video).toMatchObject({ description: "new", tags: ["x", "y"], visibility: "private", sourcePinned: true, updatedAt: 5 });
    expect(s.video!.title).toBeUndefined();
    const titled = run(s, { type: "update", at: 6, patch: { title: "back" }, deleteSourceAt: 99 }).video!;
    expect(titled).toMatchObject({ title: "back", description: "new", sourceScheduledForDeletionAt: 99 });
    const cleared = run({ video: titled }, { type: "update", at: 7, patch: { description: "" } }).video!;
    expect(cleared.description).toBeUndefined();
    expect(cleared.sourceScheduledForDeletionAt).toBe(99);
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
});

describe("VideoActor effects and ledger", () => {
  const effects = (before: VideoState, c: VideoCommand) => {
    const events = decided(before, c);
    const after = events.reduce(VideoBehavior.fold, before);
    return videoEffects(after, events, before);
  };

  it("an upload's completion starts the job and records video.uploaded; URL ingest starts at creation without it", () => {
    const kinds = (i: ReturnType<typeof effects>) => i.map((x) => x.kind);
    expect(kinds(effects({}, { type: "create", video: video() }))).toEqual(["update"]);
    const fromUrl = effects({}, { type: "create", video: video({ status: "processing", upload: undefined, url: "https://x/a.mp4" }) });
    expect(kinds(fromUrl)).toEqual(["update", "start_job"]);
    const completed = effects(created(), { type: "complete_upload", at: 2000, sizeBytes: 100 });
    expect(kinds(completed)).toEqual(["update", "start_job", "fanout"]);
    const fanout = completed.find((i) => i.kind === "fanout") as Extract<ReturnType<typeof effects>[number], { kind: "fanout" }>;
    expect(fanout.events.map((e) => [e.type, e.createdAt, e.subject.kind])).toEqual([["video.uploaded", 2000, "video"]]);
    expect(fanout.events[0]!.id).toMatch(/^evt_/);
  });

  it("the job's end records video.ready or video.failed; delete purges everything, a due source only the source; no change, no intents", () => {
    const ready = effects(processing(), { type: "job_ended", outcome: outcome() });
    expect(ready.map((i) => i.kind)).toEqual(["update", "fanout"]);
    const typesOf = (i: ReturnType<typeof effects>[number] | undefined) => (i?.kind === "fanout" ? i.events.map((e) => e.type) : []);
    expect(typesOf(ready[1])).toEqual(["video.ready"]);
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
    expect(rows.map((r) => [r.table, r.id, r.value === null])).toEqual([["videos", "vid_1", false], ["source_deletions", "vid_1", false]]);
    const none = VideoBehavior.repair(created());
    expect(none.map((r) => [r.table, r.value === null])).toEqual([["videos", false], ["source_deletions", true]]);
    expect(VideoBehavior.repair({})).toEqual([]);
  });
});

describe("a managed job's outcome", () => {
  const job = (over: Partial<JobRecord> = {}): JobRecord =>
    ({
      id: "job_1",
      status: "completed",
      completedAt: 7000,
      updatedAt: 6000,
      inputMetadata: { durationMs: 8000 },
      outputs: [
        { id: "out_0", status: "completed", keyPrefix: "play/vid_1/out_0", main: "index.m3u8", sizeBytes: 1000, actualMicros: 40, renditions: [{ name: "854x480", codec: "h264", width: 854, height: 480, sizeBytes: 800_000 }, { name: "360x640", codec: "h264", width: 360, height: 640, sizeBytes: 100_000 }] },
        { id: "out_1", status: "failed", keyPrefix: "play/vid_1/out_1", sizeBytes: 500, actualMicros: 0 },
      ],
      fees: [{ actualMicros: 2 }],
      thumbnailResults: [
        { key: "k/poster.jpg", mode: "single", format: "jpg", sizeBytes: 10 },
        { key: "k/loop.webp", mode: "animated", format: "webp", sizeBytes: 20 },
        { key: "k/loop.mp4", mode: "animated", format: "mp4", sizeBytes: 30 },
      ],
      ...over,
    }) as unknown as JobRecord;

  it("names the HLS playlist, measures each rendition's bitrate, sums sizes and money, finds the poster and loops", () => {
    const o = jobOutcome(job());
    expect(o).toMatchObject({ jobId: "job_1", at: 7000, status: "completed", durationSeconds: 8, actualMicros: 42, playlistKey: "play/vid_1/out_0/index.m3u8", outputSizeBytes: 1060, posterKey: "k/poster.jpg", hoverWebpKey: "k/loop.webp", hoverMp4Key: "k/loop.mp4" });
    // 800,000 bytes over 8 s: 800 kbps; a portrait rung is named by its short side.
    expect(o.renditions.map((r) => [r.resolution, r.bitrateKbps])).toEqual([["480p", 800], ["360p", 100]]);
  });

  it("without an HLS output, a duration or thumbnails: no playlist, 0 kbps, nothing named; canceled stays canceled", () => {
    const o = jobOutcome(job({ status: "canceled", completedAt: undefined, inputMetadata: undefined, errorCode: "internal", errorMessage: "x", outputs: [{ id: "o", status: "completed", keyPrefix: "p", main: "video.mp4", sizeBytes: 5, renditions: [] }] as never, thumbnailResults: [], fees: [] }));
    expect(o).toMatchObject({ status: "canceled", at: 6000, durationSeconds: 0, actualMicros: 0, outputSizeBytes: 5, renditions: [], errorCode: "internal", errorMessage: "x" });
    expect(o.playlistKey).toBeUndefined();
    expect(o.posterKey).toBeUndefined();
    const zero = jobOutcome(job({ inputMetadata: { durationMs: 0 } as never }));
    expect(zero.renditions[0]!.bitrateKbps).toBe(0);
  });
});
