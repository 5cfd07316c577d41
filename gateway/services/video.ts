// VideoService: hosted videos. Creating one decides its ingest job up front (the app's ladder or a
// preset, a poster, hover previews when asked); the VideoActor starts that job once the source is
// in managed storage (URL ingest at once, uploads on CompleteUpload) and becomes ready or error
// when the job ends. Reads carry links computed per request (gateway/hosting.ts).
import { create, fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { Code, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { JobRequest } from "../../actors/job/messages.js";
import { derivedId } from "../../actors/ledger.js";
import {
  Video as VideoEntity,
  VIDEOS,
  type UploadRecord,
  type VideoPatch,
  type VideoRecord,
  type VideoRequest,
  type VideoState,
  type Visibility,
} from "../../actors/video/messages.js";
import type { AppRecord } from "../../src/directory.js";
import { apiError, failedPrecondition } from "../../src/errors.js";
import { PaginationRequestSchema } from "../../src/gen/media/v1/common_pb.js";
import { DrmConfigSchema, OutputSpecSchema, SubtitleSource, SubtitleTrackSchema, type DrmConfig, type SubtitleTrack } from "../../src/gen/media/v1/job_pb.js";
import { checkDrm, checkSubtitleTracks } from "../../src/spec-check.js";
import {
  CreateUploadResponseSchema,
  VideoVisibility,
  WatchVideoResponseSchema,
  type CompleteUploadRequest,
  type Video,
  type VideoService,
  type WatchVideoResponse,
} from "../../src/gen/media/v1/video_pb.js";
import { HOSTING_LIMITS, hoverPreviewSpecs, ladderOutputSpec, partsPrefix, posterThumbnailSpec, sourceKey, UPLOAD_URL_SECONDS } from "../../src/hosting.js";
import { Prefix, randomToken } from "../../src/ids.js";
import { resolveOutputSpec } from "../../src/presets.js";
import type { Reply } from "../../src/replies.js";
import { Check, LIMITS } from "../../src/validation.js";
import { REQUEST_ID, callerOf, type Caller } from "../access.js";
import { createdId, IDEMPOTENT_CALL, madeBefore } from "../idempotency.js";
import { uploadUrl, videoLinks, type Hosting } from "../hosting.js";
import { requireActingApp, visible } from "../tenancy.js";
import { VIDEO_STATUS_NAMES, VISIBILITY_NAMES, videoMessage } from "../../wire/present-video.js";
import type { ServiceDeps } from "./deps.js";
import { watchEntity } from "./watch.js";
import { uploadEnded } from "../../src/metrics-flow.js";
import type { WatchTopic } from "../watch/hub.js";

export const VIDEO_LIMITS = { title: 255, description: 2000, tags: 20, tag: 100, filename: 255 } as const;
const TERMINAL = new Set(["ready", "error", "archived", "deleted"]);
const MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(\s*;.*)?$/i;

function accepted(reply: Reply<VideoState>): VideoRecord {
  if (reply.ok && reply.state.video) return reply.state.video;
  if (reply.ok) throw apiError(Code.Internal, "the video actor answered without a video");
  throw apiError(reply.rejection.code, reply.rejection.message, reply.rejection.violations);
}

/** Common create fields, checked. */
interface Describing {
  title: string;
  description: string;
  tags: readonly string[];
  visibility: VideoVisibility;
  preset: string;
  hoverPreviews: boolean;
  subtitleTracks: readonly SubtitleTrack[];
  drm?: DrmConfig | undefined;
}

function checkDescribing(check: Check, r: Describing): void {
  check.length("title", r.title, 0, VIDEO_LIMITS.title).length("description", r.description, 0, VIDEO_LIMITS.description);
  if (r.tags.length > VIDEO_LIMITS.tags) check.add("tags", `at most ${VIDEO_LIMITS.tags} tags`);
  r.tags.slice(0, VIDEO_LIMITS.tags).forEach((t, i) => check.length(`tags[${i}]`, t, 1, VIDEO_LIMITS.tag));
  if (r.visibility !== VideoVisibility.UNSPECIFIED && !VISIBILITY_NAMES[r.visibility]) check.add("visibility", "must be public, unlisted or private");
}

export function videoService(d: ServiceDeps & { readonly hosting: Hosting }): ServiceImpl<typeof VideoService> {
  const publicUrl = () => d.hosting.publicUrl();

  /** The app a create acts on, with hosting enabled (spec: failed_precondition otherwise). */
  async function hostingApp(caller: Caller, appId: string): Promise<AppRecord> {
    new Check().id("app_id", appId, Prefix.app, caller.kind !== "key").done();
    const app = await requireActingApp(d.directory, caller, appId);
    if (app.status !== "active") throw failedPrecondition(`app ${app.id} is archived`);
    if (!app.hosting) throw failedPrecondition(`hosting is not enabled for app ${app.id}; call AppService/EnableHosting first`);
    return app;
  }

  async function visibleVideo(caller: Caller, id: string): Promise<{ video: VideoRecord; app: AppRecord }> {
    new Check().id("id", id, Prefix.video).done();
    const video = visible(caller, (await d.store.get<VideoRecord>(VIDEOS, id))?.value, "video", id);
    const app = await d.directory.app(video.appId);
    if (!app?.hosting) throw failedPrecondition(`hosting is not enabled for app ${video.appId}`);
    return { video, app };
  }

  const present = (v: VideoRecord, app: AppRecord | undefined): Video => videoMessage(v, videoLinks(v, app, d.box, publicUrl()));

  // The stream ends with the video's end by name; a ready video whose ladder still encodes goes on
  // until every rendition is done or the encode failed.
  const watchTopic: WatchTopic<VideoRecord, WatchVideoResponse> = {
    type: VideoEntity.type,
    schema: WatchVideoResponseSchema,
    record: (state) => (state as VideoState).video,
    terminal: (v) =>
      !TERMINAL.has(v.status) || v.encoding === true ? undefined : v.status === "ready" ? "completed" : v.status === "error" ? "failed" : v.status,
    message: async (eventType, video) => create(WatchVideoResponseSchema, { eventType, video: present(video, await d.directory.app(video.appId)) }),
  };

  /** The ingest job, decided with the video: a preset's output or the app's ladder, a poster, previews when asked. */
  async function ingestJob(
    app: AppRecord,
    videoId: string,
    r: Describing,
    input: { url?: string },
    requestId: string | undefined,
    check: Check,
  ): Promise<{ jobId: string; request: JobRequest }> {
    const jobId = `${Prefix.job}${d.box.deriveToken(`video-job:${videoId}`, 20)}`;
    let spec: { [field: string]: JsonValue };
    if (r.preset !== "") {
      // resolveOutputSpec names the field "<path>.preset"; the request's field is "preset".
      const local = new Check();
      const resolved = await resolveOutputSpec(d.store, app.id, create(OutputSpecSchema, { preset: r.preset }), "request", local);
      for (const v of local.violations) check.add(v.field.replace(/^request\./, ""), v.description);
      spec = toJson(OutputSpecSchema, resolved) as { [field: string]: JsonValue };
    } else {
      spec = ladderOutputSpec(app.hosting!.ladder, undefined, true);
    }
    // Subtitle tracks ride on the stream's output, whichever ladder it is; a hosted video has no input origin, so provided files are https URLs.
    const local = new Check();
    checkSubtitleTracks(local, "request", { subtitleTracks: [...r.subtitleTracks] });
    r.subtitleTracks.forEach((t, k) => {
      if (t.source === SubtitleSource.URL && t.url !== "" && !t.url.startsWith("https://"))
        local.add(`request.subtitle_tracks[${k}].url`, "must be an https URL (a hosted video has no origins to read a path, an s3:// or a gs:// URL with)");
    });
    for (const v of local.violations) check.add(v.field.replace(/^request\./, ""), v.description);
    const subtitleTracks = r.subtitleTracks.map((t) => toJson(SubtitleTrackSchema, t));
    if (subtitleTracks.length > 0) spec = { ...spec, subtitleTracks };
    // Protection rides on the stream's output as well; the ladder takes its type from the scheme (ladderOutputSpec).
    const drm = r.drm ? toJson(DrmConfigSchema, r.drm) : undefined;
    if (drm !== undefined) {
      spec =
        r.preset === ""
          ? { ...ladderOutputSpec(app.hosting!.ladder, undefined, true, drm), ...(subtitleTracks.length > 0 ? { subtitleTracks } : {}) }
          : { ...spec, drm };
      const local = new Check();
      checkDrm(local, "request", fromJson(OutputSpecSchema, spec));
      for (const v of local.violations) check.add(v.field.replace(/^request\./, ""), v.description);
    }
    const thumbnails = [posterThumbnailSpec(), ...(r.hoverPreviews ? hoverPreviewSpecs() : [])];
    const request: JobRequest = {
      appId: app.id,
      organizationId: app.organizationId,
      inputUrl: input.url ?? "",
      inputPath: "",
      inputVideoId: input.url ? "" : videoId,
      managed: {
        videoId,
        ...(r.preset === "" ? { ladder: app.hosting!.ladder } : {}),
        ...(subtitleTracks.length > 0 ? { subtitleTracks } : {}),
        ...(drm !== undefined ? { drm } : {}),
      },
      priority: "standard",
      outputs: [
        {
          id: derivedId(Prefix.output, `${videoId}:output:0`, 20),
          spec,
          pathTemplate: "",
          vars: { format: "hls", codec: "h264", resolution: "", quality: "standard" },
        },
      ],
      thumbnails,
      webhookUrl: "",
      metadata: {},
      outputPathTemplate: "",
      delayedStart: false,
      idempotencyKey: "",
      bodyHash: `video:${videoId}`,
      ...(requestId ? { requestId } : {}),
      feeId: derivedId(Prefix.fee, `${videoId}:fee`, 20),
    };
    return { jobId, request };
  }

  async function createVideo(
    ctx: HandlerContext,
    app: AppRecord,
    r: Describing,
    how: { url?: string; upload?: Omit<UploadRecord, "expiresAt">; contentType?: string },
    check: Check,
  ): Promise<VideoRecord> {
    const at = Date.now();
    const call = ctx.values.get(IDEMPOTENT_CALL);
    const id = createdId(d.box, call, Prefix.video);
    const requestId = ctx.values.get(REQUEST_ID) || undefined;
    const job = await ingestJob(app, id, r, how.url ? { url: how.url } : {}, requestId, check);
    check.done();
    const request: VideoRequest = {
      appId: app.id,
      organizationId: app.organizationId,
      source: "upload",
      visibility: VISIBILITY_NAMES[r.visibility] ?? "unlisted",
      ...(r.title !== "" ? { title: r.title } : {}),
      ...(r.description !== "" ? { description: r.description } : {}),
      tags: [...r.tags],
      inputContentType: how.contentType ?? "",
      jobId: job.jobId,
      ...(r.preset !== "" ? { preset: r.preset } : {}),
      hoverPreviews: r.hoverPreviews,
      ...(how.url ? { url: how.url } : {}),
      ...(how.upload ? { upload: how.upload } : {}),
      jobRequest: job.request,
      ...(requestId ? { requestId } : {}),
    };
    const reply = await d.actors.ask(VideoEntity, id, { type: "create", id, at, request });
    // A retry under the same Idempotency-Key whose first answer was lost: the video it made.
    if (call !== undefined && !reply.ok && reply.rejection.code === Code.AlreadyExists) return madeBefore<VideoRecord>(d.store, VIDEOS, id, "video");
    return accepted(reply);
  }

  function checkUploadSize(check: Check, size: bigint): number {
    if (size < 1n || size > BigInt(HOSTING_LIMITS.uploadBytes)) check.add("size_bytes", `must be 1 to ${HOSTING_LIMITS.uploadBytes} bytes (5 GB)`);
    return Number(size);
  }

  function checkFile(check: Check, filename: string, contentType: string): void {
    if (filename === "") check.required("filename", filename);
    else check.length("filename", filename, 1, VIDEO_LIMITS.filename);
    if (/[\0/\\]/.test(filename)) check.add("filename", "must be a file name, without / or \\");
    check.required("content_type", contentType);
    if (contentType !== "" && !MIME.test(contentType)) check.add("content_type", "must be a MIME type such as video/mp4");
  }

  return {
    async createFromUrl(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check();
      check.required("url", req.url).length("url", req.url, 0, LIMITS.url);
      checkDescribing(check, req);
      let url: URL | undefined;
      try {
        url = new URL(req.url);
      } catch {
        if (req.url !== "") check.add("url", "is not a valid URL");
      }
      if (url && url.protocol !== "http:" && url.protocol !== "https:")
        check.add("url", "must be an http:// or https:// URL (gs:// and s3:// sources are ingested by a managed job)");
      check.done();
      // Private and internal addresses are refused now, and again when the encoder connects.
      try {
        await d.guard.check(req.url, { allowHttp: true });
      } catch (e) {
        new Check().add("url", `is not allowed: ${(e as Error).message}`).done();
      }
      const app = await hostingApp(caller, req.appId);
      return { video: present(await createVideo(ctx, app, req, { url: req.url }, check), app) };
    },

    async createUpload(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check();
      checkFile(check, req.filename, req.contentType);
      const size = checkUploadSize(check, req.sizeBytes);
      checkDescribing(check, req);
      check.done();
      const app = await hostingApp(caller, req.appId);
      const video = await createVideo(
        ctx,
        app,
        req,
        { upload: { kind: "single", uploadId: "", filename: req.filename, sizeBytes: size, partSizeBytes: size }, contentType: req.contentType },
        check,
      );
      const expires = Math.floor(video.upload!.expiresAt / 1000);
      return create(CreateUploadResponseSchema, {
        video: present(video, app),
        uploadUrl: uploadUrl(d.box, publicUrl(), video.id, "", 0, expires),
        uploadExpiresAt: timestampFromMs(expires * 1000),
      });
    },

    async createMultipartUpload(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check();
      checkFile(check, req.filename, req.contentType);
      const size = checkUploadSize(check, req.sizeBytes);
      checkDescribing(check, req);
      // Default: 16 MiB parts, larger when a file would need more than 10,000.
      const partSize = req.partSizeBytes !== undefined ? Number(req.partSizeBytes) : Math.max(16 * 1024 * 1024, Math.ceil(size / HOSTING_LIMITS.maxParts));
      if (req.partSizeBytes !== undefined && (partSize < HOSTING_LIMITS.minPartBytes || partSize > HOSTING_LIMITS.uploadBytes))
        check.add("part_size_bytes", `must be ${HOSTING_LIMITS.minPartBytes} (5 MiB) to ${HOSTING_LIMITS.uploadBytes}`);
      else if (size > 0 && Math.ceil(size / partSize) > HOSTING_LIMITS.maxParts)
        check.add("part_size_bytes", `makes more than ${HOSTING_LIMITS.maxParts} parts; use at least ${Math.ceil(size / HOSTING_LIMITS.maxParts)}`);
      check.done();
      const app = await hostingApp(caller, req.appId);
      const uploadId = `upl_${randomToken(20)}`;
      const video = await createVideo(
        ctx,
        app,
        req,
        { upload: { kind: "multipart", uploadId, filename: req.filename, sizeBytes: size, partSizeBytes: partSize }, contentType: req.contentType },
        check,
      );
      // The video's own upload: a retry that met the first call's video answers with its upload.
      const upload = video.upload!;
      const expires = Math.floor(upload.expiresAt / 1000);
      const count = Math.ceil(size / partSize);
      return {
        video: present(video, app),
        uploadId: upload.uploadId,
        parts: Array.from({ length: count }, (_, i) => ({
          partNumber: i + 1,
          uploadUrl: uploadUrl(d.box, publicUrl(), video.id, upload.uploadId, i + 1, expires),
        })),
        partSizeBytes: BigInt(partSize),
        uploadExpiresAt: timestampFromMs(expires * 1000),
      };
    },

    async listUploadParts(req, ctx) {
      const { video } = await visibleVideo(callerOf(ctx.values), req.id);
      const upload = video.upload;
      if (!upload || upload.kind !== "multipart") throw failedPrecondition(`video ${video.id} was not created by CreateMultipartUpload`);
      if (req.uploadId !== upload.uploadId) new Check().add("upload_id", "is not this video's upload").done();
      if (video.status !== "uploading") throw failedPrecondition(`video ${video.id} is ${video.status}, not uploading`);
      const stored = await d.hosting.managed.parts(partsPrefix(video.id, upload.uploadId));
      const count = Math.ceil(upload.sizeBytes / upload.partSizeBytes);
      const sizeOf = (n: number) => (n < count ? upload.partSizeBytes : upload.sizeBytes - upload.partSizeBytes * (count - 1));
      const good = new Set(stored.filter((p) => p.part <= count && p.size === sizeOf(p.part)).map((p) => p.part));
      // Fresh URLs: a resumed upload may come after the first ones expired.
      const expires = Math.floor(Date.now() / 1000) + UPLOAD_URL_SECONDS;
      return {
        stored: stored.map((p) => ({ partNumber: p.part, sizeBytes: BigInt(p.size), etag: `"${p.md5}"` })),
        missing: Array.from({ length: count }, (_, i) => i + 1)
          .filter((n) => !good.has(n))
          .map((n) => ({ partNumber: n, uploadUrl: uploadUrl(d.box, publicUrl(), video.id, upload.uploadId, n, expires) })),
        partSizeBytes: BigInt(upload.partSizeBytes),
        uploadExpiresAt: timestampFromMs(expires * 1000),
      };
    },

    async completeUpload(req, ctx) {
      const { video, app } = await visibleVideo(callerOf(ctx.values), req.id);
      const upload = video.upload;
      if (!upload) throw failedPrecondition(`video ${video.id} was not created by an upload`);
      if (video.status === "processing" && video.inputSizeBytes !== undefined) return { video: present(video, app) }; // a retried completion
      if (video.status !== "uploading") throw failedPrecondition(`video ${video.id} is ${video.status}, not uploading`);
      const mismatch = (field: string, description: string) => {
        uploadEnded(upload.kind, "rejected");
        throw apiError(Code.FailedPrecondition, `${field}: ${description}`, [{ field, description }]);
      };
      let size: number;
      if (upload.kind === "single") {
        if (req.uploadId !== "" || req.parts.length > 0)
          new Check().add("upload_id", "is for multipart uploads; this video was created by CreateUpload").done();
        const info = await d.hosting.managed.stat(sourceKey(video.id));
        if (!info) mismatch("id", "no file has been uploaded yet; PUT it to upload_url first");
        size = info!.size;
      } else {
        size = await completeMultipart(d.hosting, video, upload, req, mismatch);
      }
      if (size !== upload.sizeBytes) mismatch("size_bytes", `the stored file has ${size} bytes, not the ${upload.sizeBytes} declared; upload it again`);
      const next = accepted(
        await d.actors.ask(VideoEntity, video.id, {
          type: "complete_upload",
          at: Date.now(),
          sizeBytes: size,
          ...(ctx.values.get(REQUEST_ID) ? { requestId: ctx.values.get(REQUEST_ID) } : {}),
        }),
      );
      uploadEnded(upload.kind, "completed");
      return { video: present(next, app) };
    },

    async get(req, ctx) {
      const { video, app } = await visibleVideo(callerOf(ctx.values), req.id);
      return { video: present(video, app) };
    },

    async list(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check();
      if (req.pageSize !== undefined && (req.pageSize < 1 || req.pageSize > 100)) check.add("page_size", "must be 1 to 100");
      const status = req.status === 0 ? undefined : VIDEO_STATUS_NAMES[req.status];
      if (req.status !== 0 && !status) check.add("status", "unknown video status");
      const visibility = req.visibility === 0 ? undefined : VISIBILITY_NAMES[req.visibility];
      if (req.visibility !== 0 && !visibility) check.add("visibility", "must be public, unlisted or private");
      if (req.appId !== "") check.id("app_id", req.appId, Prefix.app);
      check.length("title_query", req.titleQuery, 0, VIDEO_LIMITS.title).length("tag", req.tag, 0, VIDEO_LIMITS.tag);
      check.done();
      const app = await requireActingApp(d.directory, caller, req.appId);
      if (!app.hosting) throw failedPrecondition(`hosting is not enabled for app ${app.id}; call AppService/EnableHosting first`);
      const query = req.titleQuery.toLowerCase();
      let page;
      try {
        page = await d.paginator.page<VideoRecord>(
          VIDEOS,
          app.id,
          `videos:${app.id}:${status ?? ""}:${visibility ?? ""}:${query}:${req.tag}`,
          create(PaginationRequestSchema, { limit: req.pageSize ?? 20, cursor: req.pageToken }),
          (v) =>
            (!status || v.status === status) &&
            (!visibility || v.visibility === visibility) &&
            (!query || (v.title ?? "").toLowerCase().includes(query)) &&
            (!req.tag || v.tags.includes(req.tag)),
        );
      } catch (e) {
        // The paginator names its own request's field; the video list's is page_token.
        if (e instanceof Error && /cursor/.test(e.message)) new Check().add("page_token", "is not a token from a previous response of this list").done();
        throw e;
      }
      return { videos: page.items.map((r) => present(r.value, app)), nextPageToken: page.pagination?.nextCursor ?? "" };
    },

    async update(req, ctx) {
      const { video, app } = await visibleVideo(callerOf(ctx.values), req.id);
      const check = new Check().length("title", req.title, 0, VIDEO_LIMITS.title).length("description", req.description, 0, VIDEO_LIMITS.description);
      if (req.tags.length > VIDEO_LIMITS.tags) check.add("tags", `at most ${VIDEO_LIMITS.tags} tags`);
      req.tags.slice(0, VIDEO_LIMITS.tags).forEach((t, i) => check.length(`tags[${i}]`, t, 1, VIDEO_LIMITS.tag));
      if (req.clearTags && req.tags.length > 0) check.add("clear_tags", "is not combined with tags");
      if (req.visibility !== VideoVisibility.UNSPECIFIED && !VISIBILITY_NAMES[req.visibility]) check.add("visibility", "must be public, unlisted or private");
      check.done();
      const patch: VideoPatch = {
        ...(req.title !== undefined ? { title: req.title } : {}),
        ...(req.description !== undefined ? { description: req.description } : {}),
        ...(req.tags.length > 0 ? { tags: [...req.tags] } : req.clearTags ? { tags: [] } : {}),
        ...(req.visibility !== VideoVisibility.UNSPECIFIED ? { visibility: VISIBILITY_NAMES[req.visibility] as Visibility } : {}),
        ...(req.sourcePinned !== undefined ? { sourcePinned: req.sourcePinned } : {}),
      };
      // Pinning clears a pending source deletion; unpinning a ready video schedules it again.
      let deleteSourceAt: number | null | undefined;
      if (req.sourcePinned === true && video.sourceScheduledForDeletionAt !== undefined) deleteSourceAt = null;
      if (
        req.sourcePinned === false &&
        video.sourcePinned &&
        video.readyAt !== undefined &&
        video.encoding !== true &&
        video.sourceDeletedAt === undefined &&
        app.hosting!.deleteSourceAfterDays > 0
      ) {
        deleteSourceAt = (video.encodedAt ?? video.readyAt) + app.hosting!.deleteSourceAfterDays * d.config.sourceRetention.dayMs;
      }
      const next = accepted(
        await d.actors.ask(VideoEntity, video.id, { type: "update", at: Date.now(), patch, ...(deleteSourceAt !== undefined ? { deleteSourceAt } : {}) }),
      );
      d.hosting.playback.forget(video.id);
      return { video: present(next, app) };
    },

    async archive(req, ctx) {
      const { video, app } = await visibleVideo(callerOf(ctx.values), req.id);
      const archived = accepted(await d.actors.ask(VideoEntity, video.id, { type: "archive", at: Date.now() }));
      // This gateway's edge refuses the video from now on; the others learn it from the video's update.
      d.hosting.playback.forget(video.id);
      return { video: present(archived, app) };
    },

    async delete(req, ctx) {
      const { video, app } = await visibleVideo(callerOf(ctx.values), req.id);
      const deleted = accepted(await d.actors.ask(VideoEntity, video.id, { type: "delete", at: Date.now() }));
      if (video.status === "uploading" && video.upload) uploadEnded(video.upload.kind, "abandoned");
      d.hosting.playback.forget(video.id);
      return { video: present(deleted, app) };
    },

    watch(req, ctx: HandlerContext) {
      const caller = callerOf(ctx.values);
      new Check().id("id", req.id, Prefix.video).done();
      return watchEntity(d.watches, ctx, watchTopic, req.id, async () => (await visibleVideo(caller, req.id)).video, "video");
    },
  };
}

/** A multipart upload's parts, checked against what is stored, composed into the source; its size. */
async function completeMultipart(
  hosting: Hosting,
  video: VideoRecord,
  upload: UploadRecord,
  req: CompleteUploadRequest,
  mismatch: (field: string, description: string) => never,
): Promise<number> {
  const check = new Check();
  if (req.uploadId === "") check.add("upload_id", "is required for a multipart upload");
  else if (req.uploadId !== upload.uploadId) check.add("upload_id", "is not this video's upload");
  const count = Math.ceil(upload.sizeBytes / upload.partSizeBytes);
  if (req.parts.length !== count) check.add("parts", `must list all ${count} parts, in ascending part_number`);
  req.parts.forEach((p, i) => {
    if (p.partNumber !== i + 1) check.add(`parts[${i}].part_number`, `must be ${i + 1}: parts are listed in ascending order, each once`);
    if (p.etag === "") check.add(`parts[${i}].etag`, "is required: the ETag the part's PUT answered");
  });
  check.done();
  const prefix = partsPrefix(video.id, upload.uploadId);
  const stored = new Map((await hosting.managed.parts(prefix)).map((p) => [p.part, p]));
  const chosen = req.parts.map((p, i) => {
    const s = stored.get(p.partNumber);
    if (!s) mismatch(`parts[${i}]`, `part ${p.partNumber} has not been uploaded`);
    if (p.etag.replace(/"/g, "") !== s!.md5)
      mismatch(`parts[${i}].etag`, `does not match the stored part ${p.partNumber} ("${s!.md5}"); upload the part again or send its ETag`);
    const expected = p.partNumber < count ? upload.partSizeBytes : upload.sizeBytes - upload.partSizeBytes * (count - 1);
    if (s!.size !== expected) mismatch(`parts[${i}]`, `part ${p.partNumber} has ${s!.size} bytes, not ${expected}`);
    return s!;
  });
  const { size } = await hosting.managed.compose(sourceKey(video.id), prefix, chosen);
  return size;
}
