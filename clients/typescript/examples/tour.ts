// The SDK's tour, run by test/clients/sdks.test.ts against a live server (and a template for yours):
// an origin and a job followed with Watch to completion, a refused request and its field, a clip
// uploaded in parts (interrupted after the first, then resumed) and followed until it plays, a list
// read page by page, and the job's webhook received over HTTPS and verified with the helper.
// Prints one JSON line of what it saw. Environment: MEDIA_URL, MEDIA_API_KEY, MEDIA_ORGANIZATION_ID,
// S3_BUCKET, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, INPUT_URL, CLIP, WEBHOOK_TLS_CERT, WEBHOOK_TLS_KEY.
import { readFileSync } from "node:fs";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import {
  allVideos,
  createMediaClient,
  followJob,
  MediaApiError,
  paginate,
  uploadFile,
  verifyWebhook,
  waitUntilPlayable,
  WebhookVerificationError,
  type UploadState,
  type WebhookEvent,
} from "../src/index.js";
import { JobStatus, OutputType } from "../src/gen/media/v1/job_pb.js";
import { OriginPermission } from "../src/gen/media/v1/origin_pb.js";
import { AudioCodec, VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { VideoStatus } from "../src/gen/media/v1/video_pb.js";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name}`);
  return value;
};

const client = createMediaClient({ baseUrl: env("MEDIA_URL"), apiKey: env("MEDIA_API_KEY"), organizationId: env("MEDIA_ORGANIZATION_ID") });
const seen: Record<string, unknown> = { sdk: "typescript" };

// A webhook receiver: every delivery verified with the helper before it is believed.
let secrets: string[] = [];
const events: WebhookEvent[] = [];
const receiver = createServer({ cert: readFileSync(env("WEBHOOK_TLS_CERT")), key: readFileSync(env("WEBHOOK_TLS_KEY")) }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const raw = Buffer.concat(chunks);
    try {
      events.push(verifyWebhook(raw, req.headers["media-signature"], secrets));
      res.writeHead(200).end("ok");
    } catch (e) {
      res.writeHead(e instanceof WebhookVerificationError ? 400 : 500).end(String(e));
    }
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const hook = await client.webhooks.createWebhookEndpoint({
  url: `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
  enabledEvents: ["job.succeeded"],
});
secrets = [hook.endpoint!.secret!];

// An origin, and a request the service refuses: the error names the field.
const origin = await client.origins.create({
  name: "sdk tour (typescript)",
  permissions: [OriginPermission.READ, OriginPermission.WRITE],
  s3: { bucket: env("S3_BUCKET"), region: "us-east-1", credentials: { accessKeyId: env("S3_ACCESS_KEY_ID"), secretAccessKey: env("S3_SECRET_ACCESS_KEY") } },
});
seen.origin_id = origin.origin!.id;
try {
  await client.jobs.create({ inputUrl: env("INPUT_URL"), outputOriginId: origin.origin!.id, outputs: [] });
  seen.refused = "not refused";
} catch (e) {
  if (!(e instanceof MediaApiError)) throw e;
  seen.refused = { code: e.errorCode, fields: e.fieldViolations.map((v) => v.field) };
}

// A job, followed with Watch until it ends.
const created = await client.jobs.create({
  inputUrl: env("INPUT_URL"),
  outputOriginId: origin.origin!.id,
  outputs: [{ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, width: 320, height: 180 }], audio: [{ codec: AudioCodec.AAC, bitrateKbps: 64 }] }],
  metadata: { tour: "typescript" },
});
const watched: string[] = [];
const job = await followJob(client, created.job!.id, { onUpdate: (_job, eventType) => watched.push(eventType) });
Object.assign(seen, { job_id: job.id, job_status: JobStatus[job.status]!.toLowerCase(), watch_events: watched });

// A clip uploaded in parts: the first call stops after one part, the second resumes from the state.
let state: UploadState | undefined;
const stop = new AbortController();
try {
  await uploadFile(client, env("CLIP"), {
    title: "sdk tour (typescript)",
    partSizeBytes: 5 * 1024 * 1024,
    onState: (s) => void (state = s),
    onProgress: () => stop.abort(),
    signal: stop.signal,
  });
  seen.interrupted = false;
} catch {
  seen.interrupted = true;
}
if (!state) throw new Error("the upload did not start");
const resumed = (await client.videos.listUploadParts({ id: state.videoId, uploadId: state.uploadId })).stored.length;
const uploaded = await uploadFile(client, env("CLIP"), { resume: state });
const video = await waitUntilPlayable(client, uploaded.id);
Object.assign(seen, {
  video_id: video.id,
  video_status: VideoStatus[video.status]!.toLowerCase(),
  parts_before_resume: resumed,
  playback_url: video.playbackUrl ?? "",
});

// A list read two at a time, every page.
for (const name of ["tour key 1", "tour key 2"]) await client.apiKeys.create({ name });
let pages = 0;
const keys: string[] = [];
for await (const key of paginate(
  (r) => (pages++, client.apiKeys.list(r)),
  {},
  (r) => r.apiKeys,
  2,
))
  keys.push(key.id);
const videos: string[] = [];
for await (const v of allVideos(client, {}, 1)) videos.push(v.id);
Object.assign(seen, { listed_keys: keys.length, key_pages: pages, listed_videos: videos });

// The job's webhook, verified; and a tampered copy refused.
const deadline = Date.now() + 60_000;
while (!events.some((e) => (e.data as { id?: string }).id === job.id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
const event = events.find((e) => (e.data as { id?: string }).id === job.id);
seen.webhook = event ? { type: event.type, job_id: (event.data as { id: string }).id, id: event.id } : null;
try {
  verifyWebhook(`{"tampered":true}`, `t=${Math.floor(Date.now() / 1000)},v1=${"0".repeat(64)}`, secrets);
  seen.tampered = "accepted";
} catch (e) {
  seen.tampered = (e as WebhookVerificationError).reason;
}
receiver.close();
console.log(JSON.stringify(seen));
