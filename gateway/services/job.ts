// JobService: the gateway checks a create request's fields (inputs, origins, presets, output
// specs, thumbnails) and reads what the job needs (origins, presets, the app's hosting), then asks
// the JobActor to decide the job (its outputs' locations, fee and state); the encode queue and
// encoder nodes do the rest. Reads come from the read model; Watch follows the updates topic.
import { create, toJson, type JsonValue } from "@bufbuild/protobuf";
import { Code, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { Job as JobEntity, JOBS, TERMINAL, type JobRecord, type JobRequest, type JobState, type OutputVars } from "../../actors/job/messages.js";
import { Video, VIDEOS, type VideoRecord } from "../../actors/video/messages.js";
import type { Reply } from "../../actors/host.js";
import { apiError, failedPrecondition, notFound } from "../../src/errors.js";
import {
  CreateJobRequestSchema,
  DrmSystem,
  EncryptionScheme,
  JobPriority,
  OutputSpecSchema,
  OutputType,
  OutputTypeSchema,
  SubtitleSource,
  ThumbnailSpecSchema,
  WatchJobResponseSchema,
  type CreateJobRequest,
  type Job,
  type JobService,
  type OutputSpec,
  type WatchJobResponse,
} from "../../src/gen/media/v1/job_pb.js";
import { QualityTier, QualityTierSchema, VideoCodecSchema } from "../../src/gen/media/v1/preset_pb.js";
import type { AppRecord } from "../../src/directory.js";
import { newId, Prefix } from "../../src/ids.js";
import { parseStorageUrl, type BlobStore, type StorageUrl } from "../../src/blob/index.js";
import {
  ORIGINS,
  getOrigin,
  jobOriginReading,
  jobReadableBuckets,
  openOriginBlob,
  PATH_TEMPLATE_VARIABLES,
  readsStorageUrl,
  type JobOrigins,
  type OriginRecord,
} from "../../src/origins.js";
import { resolveOutputSpec } from "../../src/presets.js";
import { sha256 } from "../../src/secrets.js";
import { Check } from "../../src/validation.js";
import { checkOutputSpec, drmSchemeOf } from "../../src/spec-check.js";
import { checkThumbnailSpec } from "../../src/thumbnail-spec.js";
import { callerOf, REQUEST_ID, type Caller } from "../access.js";
import { IDEMPOTENCY_KEY } from "../idempotency.js";
import { enumWireName } from "../../wire/codec.js";
import { JOB_STATUS_NAMES, jobMessage } from "../../wire/present-job.js";
import { requireActingApp, visible } from "../tenancy.js";
import type { ServiceDeps } from "./deps.js";
import { watchEntity } from "./watch.js";
import type { WatchTopic } from "../watch/hub.js";

export const JOB_LIMITS = {
  outputs: 10,
  thumbnails: 5,
  idempotencyKey: 128,
  metadataEntries: 20,
  metadataKey: 64,
  metadataValue: 1024,
  template: 1024,
} as const;
/** Variables of a job's output path templates: an origin's, plus {format} and {quality}. */
const TEMPLATE_VARIABLES = [...PATH_TEMPLATE_VARIABLES, "format", "quality"] as const;

function accepted(reply: Reply<JobState>): JobRecord {
  if (reply.ok && reply.state.job) return reply.state.job;
  if (reply.ok) throw notFound("job", "");
  throw apiError(reply.rejection.code, reply.rejection.message, reply.rejection.violations);
}

async function visibleJob(d: ServiceDeps, caller: Caller, id: string): Promise<JobRecord> {
  new Check().id("id", id, Prefix.job).done();
  return visible(caller, (await d.store.get<JobRecord>(JOBS, id))?.value, "job", id);
}

/** An origin of the app that may be used for `permission`, or a violation on `field`. */
async function usableOrigin(
  d: ServiceDeps,
  check: Check,
  app: AppRecord,
  field: string,
  id: string,
  permission: "read" | "write",
): Promise<OriginRecord | undefined> {
  check.id(field, id, Prefix.origin);
  if (id === "" || !id.startsWith(Prefix.origin)) return undefined;
  const origin = await getOrigin(d.store, id);
  if (!origin || origin.appId !== app.id) return void check.add(field, `origin ${id} not found in app ${app.id}`);
  if (origin.status === "archived") return void check.add(field, `origin ${id} is archived`);
  if (origin.status === "failed")
    return void check.add(field, `origin ${id} failed its last validation (${origin.validationError ?? "unknown error"}); fix its credentials and validate it`);
  if (!origin.permissions.includes(permission)) return void check.add(field, `origin ${id} does not have ${permission} permission`);
  return origin;
}

/** The app's origin whose credentials can read an s3:// or gs:// URL of a given bucket. */
async function originForUrl(d: ServiceDeps, app: AppRecord, url: URL): Promise<OriginRecord | undefined> {
  const at = { provider: url.protocol === "gs:" ? ("gcs" as const) : ("s3" as const), bucket: url.hostname };
  const found = await d.store.scan<OriginRecord>(ORIGINS, app.id, {
    limit: 1,
    filter: (o) => o.status === "active" && readsStorageUrl(o, at),
  });
  return found.items[0]?.value;
}

/** A violation when a subtitle file's s3:// or gs:// URL names a bucket none of the job's origins reads. */
function storageUrlViolation(check: Check, field: string, url: string, origins: JobOrigins): void {
  if (!/^(s3|gs):\/\//.test(url) || check.violations.some((v) => v.field === field)) return;
  let parsed: StorageUrl;
  try {
    parsed = parseStorageUrl(url);
  } catch {
    return; // malformed: checkOutputSpec names it (past the track limit, the limit is the violation)
  }
  if (jobOriginReading(origins, parsed)) return;
  const read = jobReadableBuckets(origins);
  check.add(
    field,
    `no origin of the job reads bucket ${parsed.bucket} (its input origin, input_url's origin and output origin with read permission read ` +
      `${read.length > 0 ? read.join(", ") : "no bucket"}); put the file in one of those buckets, use an origin for bucket ${parsed.bucket} ` +
      `as the job's input (input_origin_id, or an input_url there) or as its output origin with read permission, or give an https URL`,
  );
}

function templateViolations(check: Check, field: string, template: string): void {
  for (const m of template.matchAll(/\{([^}]*)\}/g)) {
    if (!(TEMPLATE_VARIABLES as readonly string[]).includes(m[1]!))
      check.add(field, `unknown variable {${m[1]}}; expected one of ${TEMPLATE_VARIABLES.map((v) => `{${v}}`).join(", ")}`);
  }
  if (template.split("/").some((s) => s === "..")) check.add(field, "must not contain .. segments");
}

/** The template variables that follow from an output's spec (the job's actor adds its ids and date). */
function templateVars(spec: OutputSpec): OutputVars {
  const v = spec.video[0];
  const resolution = v ? v.resolution || (v.width && v.height ? `${v.width}x${v.height}` : "source") : "audio";
  return {
    format: enumWireName(OutputTypeSchema, spec.type),
    codec: v ? enumWireName(VideoCodecSchema, v.codec) : "audio",
    resolution,
    quality: v && v.quality !== QualityTier.UNSPECIFIED ? enumWireName(QualityTierSchema, v.quality) : "standard",
  };
}

/** A stable hash of the request body: field order and map order do not change it. */
function bodyHash(req: CreateJobRequest): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v && typeof v === "object"
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([k, x]) => [k, sorted(x)]),
          )
        : v;
  return sha256(JSON.stringify(sorted(toJson(CreateJobRequestSchema, req))));
}

const PRIORITY_NAMES: Partial<Record<JobPriority, JobRecord["priority"]>> = {
  [JobPriority.UNSPECIFIED]: "standard",
  [JobPriority.ECONOMY]: "economy",
  [JobPriority.STANDARD]: "standard",
  [JobPriority.PREMIUM]: "premium",
};

/** Thumbnail and subtitle URLs stay valid this long after the job is read. */
const SIGNED_URL_SECONDS = 6 * 3600;

/**
 * The job as callers see it, with signed thumbnail URLs made from the output origin's current
 * credentials (rotated keys sign new URLs). Signing is local computation; no request is made.
 */
function presenter(d: ServiceDeps): (job: JobRecord) => Promise<Job> {
  const guard = d.guard;
  const blobs = new Map<string, BlobStore>();
  return async (job) => {
    const keys = [...job.thumbnailResults, ...(job.subtitleResults ?? []), ...(job.chapterResults ?? [])].map((r) => r.key);
    if (keys.length === 0 || !job.outputOrigin) return jobMessage(job);
    const origin = (await getOrigin(d.store, job.outputOrigin.id)) ?? job.outputOrigin;
    const cacheKey = `${origin.id}:${origin.updatedAt}`;
    let blob = blobs.get(cacheKey);
    if (!blob) {
      if (blobs.size >= 100) blobs.clear();
      blob = openOriginBlob(origin, d.box, guard, d.config);
      blobs.set(cacheKey, blob);
    }
    const store = blob;
    return jobMessage(job, new Map(keys.map((key) => [key, store.signedUrl(key, SIGNED_URL_SECONDS) ?? ""])));
  };
}

export function jobService(d: ServiceDeps): ServiceImpl<typeof JobService> {
  const present = presenter(d);
  const watchTopic: WatchTopic<JobRecord, WatchJobResponse> = {
    type: JobEntity.type,
    schema: WatchJobResponseSchema,
    record: (state) => (state as JobState).job,
    terminal: (job) => (TERMINAL.has(job.status) ? job.status : undefined),
    message: async (eventType, job) => create(WatchJobResponseSchema, { eventType, job: await present(job) }),
  };
  return {
    async create(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check();
      if (req.appId !== "") check.id("app_id", req.appId, Prefix.app);
      check.done();
      const app = await requireActingApp(d.directory, caller, req.appId);
      if (app.status !== "active") throw failedPrecondition(`app ${app.id} is archived`);
      if (req.managed && !app.hosting) throw failedPrecondition(`managed: true needs hosting; app ${app.id} has none (AppService/EnableHosting)`);

      // Exactly one input.
      const inputs = [req.inputUrl !== "", req.inputOriginId !== "", req.inputVideoId !== ""].filter(Boolean).length;
      if (inputs === 0) check.add("input_url", "one of input_url, input_origin_id or input_video_id is required");
      if (inputs > 1) check.add(req.inputUrl !== "" ? "input_url" : "input_origin_id", "give only one of input_url, input_origin_id and input_video_id");
      let inputUrl: URL | undefined;
      if (req.inputUrl !== "") {
        try {
          inputUrl = new URL(req.inputUrl);
          if (!["https:", "s3:", "gs:"].includes(inputUrl.protocol)) check.add("input_url", "scheme must be https://, s3:// or gs://");
          else if (inputUrl.protocol !== "https:" && (inputUrl.hostname === "" || inputUrl.pathname.length <= 1))
            check.add("input_url", "must name a bucket and an object, e.g. s3://bucket/path/file.mp4");
        } catch {
          check.add("input_url", "must be a valid URL");
        }
        check.length("input_url", req.inputUrl, 0, 2048);
      }
      if (req.inputOriginId !== "" && req.inputPath === "") check.add("input_path", "is required with input_origin_id");
      if (req.inputPath !== "" && req.inputOriginId === "") check.add("input_path", "is only valid with input_origin_id");
      check.length("input_path", req.inputPath, 0, 1024);
      if (req.inputVideoId !== "") check.id("input_video_id", req.inputVideoId, Prefix.video);
      const inputOrigin = req.inputOriginId !== "" ? await usableOrigin(d, check, app, "input_origin_id", req.inputOriginId, "read") : undefined;
      if (req.outputOriginId === "" && !req.managed) check.add("output_origin_id", "is required unless managed is true");
      if (req.outputOriginId !== "" && req.managed) check.add("output_origin_id", "is not combined with managed: managed outputs go to managed hosting");
      const outputOrigin = req.outputOriginId !== "" ? await usableOrigin(d, check, app, "output_origin_id", req.outputOriginId, "write") : undefined;
      let inputUrlOrigin: OriginRecord | undefined;
      if (inputUrl && inputUrl.protocol !== "https:" && check.violations.length === 0) {
        inputUrlOrigin = await originForUrl(d, app, inputUrl);
        if (!inputUrlOrigin)
          check.add("input_url", `no active origin of app ${app.id} with read permission covers bucket ${inputUrl.hostname}; create one with its credentials`);
      }

      // The job's origins, once each one asked for is resolved: s3:// and gs:// subtitle files are read with them.
      const resolved =
        (req.inputOriginId === "" || inputOrigin) &&
        (req.outputOriginId === "" || outputOrigin) &&
        (!inputUrl || inputUrl.protocol === "https:" || inputUrlOrigin);
      const origins: JobOrigins | undefined = resolved ? { inputOrigin, inputUrlOrigin, outputOrigin } : undefined;

      // Outputs: presets resolved first, then every rule of the output specification.
      if (req.outputs.length < 1 || req.outputs.length > JOB_LIMITS.outputs) check.add("outputs", `must have 1 to ${JOB_LIMITS.outputs} outputs`);
      const specs: OutputSpec[] = [];
      for (const [i, requested] of req.outputs.slice(0, JOB_LIMITS.outputs).entries()) {
        const spec = await resolveOutputSpec(d.store, app.id, requested, `outputs[${i}]`, check);
        checkOutputSpec(check, `outputs[${i}]`, spec);
        // A provided track named by a path is read from the input origin, which the job must have.
        spec.subtitleTracks.forEach((t, k) => {
          if (t.source === SubtitleSource.URL && t.url !== "" && !/^[A-Za-z][A-Za-z0-9+.-]*:/.test(t.url) && req.inputOriginId === "")
            check.add(
              `outputs[${i}].subtitle_tracks[${k}].url`,
              "is a path, read from the job's input origin, but the job has no input_origin_id; give an https URL",
            );
          if (t.source === SubtitleSource.URL && origins) storageUrlViolation(check, `outputs[${i}].subtitle_tracks[${k}].url`, t.url, origins);
        });
        // Clear Key licenses and AES-128 keys come from our key server, behind managed hosting's playback token.
        if (spec.drm && !req.managed) {
          const own =
            "outputs in your own storage are protected with cbcs or cenc for widevine, playready or fairplay, whose license service gets the keys from your key_provider_url";
          if (drmSchemeOf(spec) === EncryptionScheme.AES_128)
            check.add(`outputs[${i}].drm.scheme`, `aes_128 keys are served by the key server of managed hosting (managed: true); ${own}`);
          spec.drm.systems.forEach((system, k) => {
            if (system === DrmSystem.CLEARKEY)
              check.add(`outputs[${i}].drm.systems[${k}]`, `clearkey licenses are served by the key server of managed hosting (managed: true); ${own}`);
          });
        }
        if (spec.pathTemplate !== "") templateViolations(check, `outputs[${i}].path_template`, spec.pathTemplate);
        specs.push(spec);
      }
      // A managed job's video plays as an adaptive stream: files alone would complete the job and
      // leave its video in error. Files may go beside a stream.
      const streams = [OutputType.HLS, OutputType.DASH, OutputType.ADAPTIVE];
      if (req.managed && specs.length > 0 && !specs.some((s) => streams.includes(s.type)))
        check.add(
          "outputs",
          "a managed job needs an hls, dash or adaptive output: its video plays as a stream (mp4, webm, mkv and mov outputs may go beside one)",
        );
      if (req.thumbnails.length > JOB_LIMITS.thumbnails) check.add("thumbnails", `at most ${JOB_LIMITS.thumbnails} thumbnail specifications`);
      req.thumbnails.slice(0, JOB_LIMITS.thumbnails).forEach((t, i) => checkThumbnailSpec(check, `thumbnails[${i}]`, t));
      if (req.webhookUrl !== "") check.httpsUrl("webhook_url", req.webhookUrl);
      check.length("idempotency_key", req.idempotencyKey, 0, JOB_LIMITS.idempotencyKey);
      const metadata = Object.entries(req.metadata);
      if (metadata.length > JOB_LIMITS.metadataEntries) check.add("metadata", `at most ${JOB_LIMITS.metadataEntries} entries`);
      for (const [k, v] of metadata) {
        check.length(`metadata.${k}`, k, 1, JOB_LIMITS.metadataKey).length(`metadata.${k}`, v, 0, JOB_LIMITS.metadataValue);
      }
      check.length("output_path_template", req.outputPathTemplate, 0, JOB_LIMITS.template);
      if (req.outputPathTemplate !== "") templateViolations(check, "output_path_template", req.outputPathTemplate);
      if (req.clip) {
        if (!(req.clip.startSeconds >= 0)) check.add("clip.start_seconds", "must not be negative");
        if (!(req.clip.endSeconds >= 0)) check.add("clip.end_seconds", "must not be negative");
        if (req.clip.endSeconds > 0 && req.clip.endSeconds <= req.clip.startSeconds)
          check.add("clip.end_seconds", "must be after start_seconds (or 0 for the end of the input)");
      }
      const priority = PRIORITY_NAMES[req.priority];
      if (!priority) check.add("priority", "must be economy, standard or premium");
      check.done();

      // A hosted video as input: the app's own, with its source still stored.
      if (req.inputVideoId !== "") {
        const input = (await d.store.get<VideoRecord>(VIDEOS, req.inputVideoId))?.value;
        if (!input || input.appId !== app.id) throw notFound("video", req.inputVideoId);
        if (input.sourceDeletedAt !== undefined)
          throw apiError(Code.FailedPrecondition, `video ${input.id}'s source was deleted`, [
            {
              field: "input_video_id",
              description: "the video's source file was deleted (delete_source_after_days); pin sources with source_pinned to keep them",
            },
          ]);
        if (input.status === "uploading" || input.status === "deleted")
          throw apiError(Code.FailedPrecondition, `video ${input.id} is ${input.status}`, [
            { field: "input_video_id", description: `the video is ${input.status}: it has no source to read` },
          ]);
      }
      // A key (the body's, or the Idempotency-Key header's) makes every id derived: a retry of a
      // create that failed without an answer reaches the job the first one may have made.
      const header = ctx.values.get(IDEMPOTENCY_KEY);
      const key = req.idempotencyKey !== "" ? `job:${app.id}:${req.idempotencyKey}` : header !== undefined ? `job:${app.id}:header:${header}` : undefined;
      const id = key !== undefined ? `${Prefix.job}${d.box.deriveToken(key, 20)}` : newId(Prefix.job);
      const derived = (what: string, prefix: Prefix) => (key !== undefined ? `${prefix}${d.box.deriveToken(`${id}:${what}`, 20)}` : newId(prefix));
      const request: JobRequest = {
        appId: app.id,
        organizationId: app.organizationId,
        inputUrl: req.inputUrl,
        inputPath: req.inputPath,
        inputVideoId: req.inputVideoId,
        ...(inputOrigin ? { inputOrigin } : {}),
        ...(inputUrlOrigin ? { inputUrlOrigin } : {}),
        ...(outputOrigin ? { outputOrigin } : {}),
        ...(req.managed ? { managed: { videoId: derived("video", Prefix.video) } } : {}),
        priority: priority!,
        outputs: specs.map((spec, i) => ({
          id: derived(`output:${i}`, Prefix.output),
          spec: toJson(OutputSpecSchema, requestedSpec(req.outputs[i]!, spec)) as { [field: string]: JsonValue },
          pathTemplate: spec.pathTemplate,
          vars: templateVars(spec),
        })),
        thumbnails: req.thumbnails.map((t) => toJson(ThumbnailSpecSchema, t) as JsonValue),
        webhookUrl: req.webhookUrl,
        metadata: { ...req.metadata },
        outputPathTemplate: req.outputPathTemplate,
        ...(req.clip ? { clip: { startSeconds: req.clip.startSeconds, endSeconds: req.clip.endSeconds } } : {}),
        delayedStart: req.delayedStart,
        idempotencyKey: req.idempotencyKey,
        bodyHash: bodyHash(req),
        ...(ctx.values.get(REQUEST_ID) ? { requestId: ctx.values.get(REQUEST_ID) } : {}),
        feeId: derived("fee", Prefix.fee),
      };
      const at = Date.now();
      if (request.managed) {
        // The video first, holding the job's request: it starts the job itself, so a crash between
        // the two leaves a video whose outbox still creates its job.
        await managedVideo(d, request, id, at);
      }
      // The job's actor decides the job from the request: its outputs' locations, its fee, its state.
      // A job id minted here for this call is new, unless its managed video's outbox creates it too.
      const fresh = key === undefined && !request.managed;
      const job = accepted(await d.actors.ask(JobEntity, id, { type: "create", id, at, request }, { fresh }));
      return { job: jobMessage(job), ...(job.managed ? { videoId: job.managed.videoId } : {}) };
    },

    async get(req, ctx) {
      return { job: await present(await visibleJob(d, callerOf(ctx.values), req.id)) };
    },

    async list(req, ctx) {
      const caller = callerOf(ctx.values);
      const status = req.status === 0 ? undefined : JOB_STATUS_NAMES[req.status];
      if (req.status !== 0 && !status) new Check().add("status", "unknown job status").done();
      // API keys list their app's jobs; portal sessions list the organization's first app's, as Create does.
      const app = await requireActingApp(d.directory, caller, "");
      const page = await d.paginator.page<JobRecord>(
        JOBS,
        app.id,
        `jobs:${app.id}:${status ?? ""}`,
        req.pagination,
        status ? (j) => j.status === status : undefined,
      );
      return { jobs: await Promise.all(page.items.map((r) => present(r.value))), pagination: page.pagination };
    },

    async cancel(req, ctx) {
      const job = await visibleJob(d, callerOf(ctx.values), req.id);
      return { job: await present(accepted(await d.actors.ask(JobEntity, job.id, { type: "cancel", at: Date.now() }))) };
    },

    async confirm(req, ctx) {
      const job = await visibleJob(d, callerOf(ctx.values), req.id);
      return { job: jobMessage(accepted(await d.actors.ask(JobEntity, job.id, { type: "confirm", at: Date.now() }))) };
    },

    watch(req, ctx: HandlerContext) {
      const caller = callerOf(ctx.values);
      new Check().id("id", req.id, Prefix.job).done();
      return watchEntity(d.watches, ctx, watchTopic, req.id, () => visibleJob(d, caller, req.id), "job");
    },
  };
}

/** The video of a managed job (source job, processing), created once: a retried Create finds it. */
async function managedVideo(d: ServiceDeps, request: JobRequest, jobId: string, at: number): Promise<void> {
  const videoId = request.managed!.videoId;
  const existing = (await d.store.get<VideoRecord>(VIDEOS, videoId))?.value;
  if (existing) return;
  const video = {
    appId: request.appId,
    organizationId: request.organizationId,
    source: "job",
    jobId,
    jobRequest: request,
    ...(request.requestId ? { requestId: request.requestId } : {}),
  } as const;
  const reply = await d.actors.ask(Video, videoId, { type: "create", id: videoId, at, request: video });
  if (!reply.ok && reply.rejection.code !== Code.AlreadyExists) throw apiError(reply.rejection.code, reply.rejection.message, reply.rejection.violations);
}

/** The spec echoed on the job: the request as submitted, with what a preset filled in. */
function requestedSpec(requested: OutputSpec, resolved: OutputSpec): OutputSpec {
  return requested.preset !== "" ? resolved : requested;
}
