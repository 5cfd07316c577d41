// Webhook records to wire messages: endpoints, deliveries and ledger events, the envelope a signed
// delivery carries, and the sample resources of test events. The delivery engine renders bodies
// with `envelope` too, so an event's data reads the same in RetrieveEvent and on the receiver's side.
import { create, toJson, type JsonValue } from "@bufbuild/protobuf";
import { JOB_ERROR_CODES, processingFee, type JobRecord, type JobStatus, type OutputState } from "../actors/job/messages.js";
import { derivedId, type EventRecord, type EventType } from "../actors/ledger.js";
import { endpointHealth, type DeliveryRecord, type DeliveryStatus, type EndpointRecord } from "../actors/webhook-endpoint/messages.js";
import { JobSchema, OutputSpecSchema, OutputType } from "../src/gen/media/v1/job_pb.js";
import { AudioCodec, VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { RenditionSchema, VideoSchema, VideoSource, VideoStatus, VideoVisibility } from "../src/gen/media/v1/video_pb.js";
import {
  EndpointHealthSchema,
  EventSchema,
  TransportError,
  WebhookDeliverySchema,
  WebhookDeliveryStatus,
  WebhookEndpointDisabledReason,
  WebhookEndpointSchema,
  WebhookEndpointStatus,
  type EndpointHealth,
  type Event,
  type WebhookDelivery,
  type WebhookEndpoint,
} from "../src/gen/media/v1/webhook_pb.js";
import { Prefix } from "../src/ids.js";
import { messageToJson } from "./codec.js";
import { jobMessage } from "./present-job.js";
import { videoMessage } from "./present-video.js";
import { ts } from "./present.js";

// ───────────────────────────── endpoints ─────────────────────────────

const DISABLED_REASON: Record<NonNullable<EndpointRecord["disabledReason"]>, WebhookEndpointDisabledReason> = {
  manual: WebhookEndpointDisabledReason.MANUAL,
  auto_failures: WebhookEndpointDisabledReason.AUTO_FAILURES,
};

export function healthMessage(e: EndpointRecord, now = Date.now()): EndpointHealth {
  return create(EndpointHealthSchema, endpointHealth(e, now));
}

/**
 * The endpoint as callers see it. `secret` is the plaintext of a secret just made (Create, Rotate);
 * no other answer carries one. `health` is shown only when asked for (List with include_health).
 */
export function endpointMessage(e: EndpointRecord, opts: { secret?: string; health?: boolean; now?: number } = {}): WebhookEndpoint {
  const now = opts.now ?? Date.now();
  const disabled = e.status === "disabled";
  // The secret that was current before the last rotation signs until its expiry: the overlap.
  const overlapEnds = e.secrets.slice(1).find((s) => s.expiresAt !== undefined && s.expiresAt > now)?.expiresAt;
  return create(WebhookEndpointSchema, {
    id: e.id,
    appId: e.appId,
    url: e.url,
    description: e.description === undefined || e.description === "" ? undefined : e.description,
    enabledEvents: [...e.enabledEvents],
    status: disabled ? WebhookEndpointStatus.DISABLED : WebhookEndpointStatus.ENABLED,
    disabledReason: disabled ? DISABLED_REASON[e.disabledReason ?? "manual"] : undefined,
    apiVersion: e.apiVersion,
    metadata: { ...e.metadata },
    secret: opts.secret,
    lastRotatedAt: ts(e.lastRotatedAt),
    previousSecretExpiresAt: ts(overlapEnds),
    health: opts.health ? healthMessage(e, now) : undefined,
    createdAt: ts(e.createdAt),
    updatedAt: ts(e.updatedAt),
    deleted: e.deletedAt !== undefined,
    deletedAt: ts(e.deletedAt),
  });
}

// ───────────────────────────── deliveries ─────────────────────────────

const DELIVERY_STATUS: Record<DeliveryStatus, WebhookDeliveryStatus> = {
  pending: WebhookDeliveryStatus.PENDING,
  succeeded: WebhookDeliveryStatus.SUCCEEDED,
  failed: WebhookDeliveryStatus.FAILED,
  exhausted: WebhookDeliveryStatus.EXHAUSTED,
};
export const DELIVERY_STATUS_NAMES: Partial<Record<WebhookDeliveryStatus, DeliveryStatus>> = Object.fromEntries(
  Object.entries(DELIVERY_STATUS).map(([k, v]) => [v, k]),
);

const TRANSPORT_ERROR: Readonly<Record<string, TransportError>> = {
  timeout: TransportError.TIMEOUT,
  connection_refused: TransportError.CONNECTION_REFUSED,
  connection_reset: TransportError.CONNECTION_RESET,
  connection_closed: TransportError.CONNECTION_CLOSED,
  host_unreachable: TransportError.HOST_UNREACHABLE,
  dns_failure: TransportError.DNS_FAILURE,
  tls_handshake_failed: TransportError.TLS_HANDSHAKE_FAILED,
  ssrf_blocked: TransportError.SSRF_BLOCKED,
  unknown: TransportError.UNKNOWN,
};

/**
 * One delivery. `attempt` is the 1-based number of the latest attempt; before the first one it is
 * 1, the attempt about to be made. The response fields are those of the latest attempt.
 */
export function deliveryMessage(d: DeliveryRecord): WebhookDelivery {
  const open = d.status === "pending" || d.status === "failed";
  const failing = d.status === "failed" || d.status === "exhausted";
  return create(WebhookDeliverySchema, {
    id: d.id,
    webhookEndpointId: d.endpointId,
    eventId: d.eventId,
    status: DELIVERY_STATUS[d.status],
    attempt: Math.max(d.attempt, 1),
    responseStatus: d.responseStatus,
    responseBody: d.responseBody,
    responseHeaders: d.responseHeaders,
    latencyMs: d.latencyMs,
    transportError: d.transportError === undefined ? TransportError.UNSPECIFIED : (TRANSPORT_ERROR[d.transportError] ?? TransportError.UNKNOWN),
    errorMessage: failing ? d.errorMessage : undefined,
    nextAttemptAt: open ? ts(d.nextAttemptAt) : undefined,
    createdAt: ts(d.createdAt),
    updatedAt: ts(d.updatedAt),
  });
}

// ───────────────────────────── events ─────────────────────────────

/**
 * The resource an event is about, as the API shows it: the job for job events; for output events
 * the output with its job's id, app and metadata (receivers route on them); a test event's sample.
 */
export function eventData(e: EventRecord): unknown {
  const s = e.subject;
  if (s.kind === "test") return s.data;
  // Video events carry the video without its per-request links (ARCHITECTURE, hosting decisions).
  if (s.kind === "video") return messageToJson(VideoSchema, videoMessage(s.video));
  const job = jobMessage(s.job);
  if (!e.type.startsWith("output.")) return messageToJson(JobSchema, job);
  const jobJson = messageToJson(JobSchema, job) as { outputs: Record<string, unknown>[] };
  // An output event follows probing, so the job shows its outputs; the id alone is the fallback.
  const output = jobJson.outputs.find((o) => o.id === s.outputId) ?? { id: s.outputId ?? "" };
  return { ...output, job_id: s.job.id, app_id: s.job.appId, metadata: { ...s.job.metadata } };
}

export function eventMessage(e: EventRecord, pendingWebhooks: number): Event {
  return create(EventSchema, {
    id: e.id,
    object: "event",
    appId: e.appId,
    type: e.type,
    data: JSON.stringify(eventData(e)),
    requestId: e.requestId,
    pendingWebhooks,
    apiVersion: e.apiVersion,
    createdAt: ts(e.createdAt),
  });
}

/** The body of a signed delivery (ARCHITECTURE "Event envelope"): data is the nested resource. */
export interface EventEnvelope {
  readonly id: string;
  readonly object: "event";
  readonly type: string;
  readonly api_version: string;
  readonly created_at: string;
  readonly data: unknown;
}

export function envelope(e: EventRecord): EventEnvelope {
  return { id: e.id, object: "event", type: e.type, api_version: e.apiVersion, created_at: new Date(e.createdAt).toISOString(), data: eventData(e) };
}

// ───────────────────────────── test events ─────────────────────────────

const SAMPLE_BASE = "https://storage.example.com/media";

/** The sample resource of a test event of `type`: a job, an output or a video, shaped as real ones. */
export function sampleEventData(type: EventType, appId: string, eventId: string, at: number): unknown {
  if (type.startsWith("video.")) return sampleVideo(type, appId, eventId, at);
  const job = sampleJob(type, appId, eventId, at);
  return eventData({
    id: eventId,
    appId,
    organizationId: "",
    type,
    subject: { kind: "job", job, ...(type.startsWith("output.") ? { outputId: job.outputs[0]!.id } : {}) },
    requestId: "",
    apiVersion: "",
    createdAt: at,
  });
}

const JOB_OUTCOME: Partial<Record<EventType, JobStatus>> = {
  "job.succeeded": "completed",
  "job.failed": "failed",
  "job.partial": "partial",
  "job.canceled": "canceled",
};

function sampleJob(type: EventType, appId: string, eventId: string, at: number): JobRecord {
  const status = JOB_OUTCOME[type] ?? "processing";
  const settled = status !== "processing";
  const jobId = derivedId(Prefix.job, `${eventId}:job`, 20);
  const failed = status === "failed" || type === "output.failed";
  const spec = toJson(
    OutputSpecSchema,
    create(OutputSpecSchema, {
      type: OutputType.MP4,
      video: [{ codec: VideoCodec.H264, width: 1280, height: 720 }],
      audio: [{ codec: AudioCodec.AAC, bitrateKbps: 128 }],
      effectivePathTemplate: "{job_id}/{output_id}",
    }),
  ) as JsonValue;
  const output = (i: number, ok: boolean): OutputState => {
    const id = derivedId(Prefix.output, `${eventId}:output:${i}`, 20);
    const done = ok && (settled || i === 0);
    return {
      id,
      spec,
      status: done ? "completed" : status === "canceled" ? "canceled" : failed || status === "partial" ? "failed" : "processing",
      progress: done ? 100 : 40,
      outputUrl: done ? `${SAMPLE_BASE}/${jobId}/${id}/video.mp4` : "",
      sizeBytes: done ? 2_621_440 : 0,
      keyPrefix: `${jobId}/${id}`,
      estimateMicros: 2_000,
      ...(settled ? { actualMicros: done ? 2_000 : 0 } : {}),
      ...(!done && (failed || status === "partial") ? { errorCode: "encode_failed", errorMessage: JOB_ERROR_CODES.encode_failed } : {}),
    };
  };
  const outputs = status === "partial" ? [output(0, true), output(1, false)] : [output(0, !failed && status !== "canceled")];
  const fee = processingFee(derivedId(Prefix.fee, `${eventId}:fee`, 20));
  return {
    id: jobId,
    appId,
    organizationId: "",
    version: 1,
    inputUrl: `${SAMPLE_BASE}/input/sample.mp4`,
    inputPath: "",
    inputVideoId: "",
    status,
    progress: settled ? 100 : 40,
    priority: "standard",
    inputMetadata: {
      format: "mov,mp4,m4a,3gp,3g2,mj2",
      durationMs: 10_000,
      sizeBytes: 5_242_880,
      bitRate: 4_194_304,
      video: { codec: "h264", width: 1920, height: 1080, frameRate: 25, bitRate: 4_000_000, pixelFormat: "yuv420p" },
      audio: { codec: "aac", sampleRate: 48_000, channels: 2, channelLayout: "stereo", bitRate: 128_000 },
    },
    outputs,
    thumbnails: [],
    thumbnailResults: [],
    fees: [settled ? { ...fee, actualMicros: fee.rateMicros } : fee],
    ...(status === "failed" ? { errorCode: "encode_failed", errorMessage: JOB_ERROR_CODES.encode_failed } : {}),
    webhookUrl: "",
    metadata: {},
    thumbnailPrefix: `${jobId}/thumbnails`,
    delayedStart: false,
    bodyHash: "",
    encoderStarted: true,
    createdAt: at - 60_000,
    updatedAt: at,
    probedAt: at - 55_000,
    startedAt: at - 50_000,
    probeDurationMs: 1_200,
    ...(settled ? { completedAt: at, encodeDurationMs: 48_000 } : {}),
  };
}

function sampleVideo(type: EventType, appId: string, eventId: string, at: number): unknown {
  const ready = type === "video.ready";
  const id = derivedId(Prefix.video, `${eventId}:video`, 20);
  return messageToJson(
    VideoSchema,
    create(VideoSchema, {
      id,
      object: "video",
      appId,
      source: VideoSource.UPLOAD,
      status: ready ? VideoStatus.READY : type === "video.failed" ? VideoStatus.ERROR : VideoStatus.PROCESSING,
      visibility: VideoVisibility.UNLISTED,
      title: "Sample video",
      tags: [],
      inputSizeBytes: 5_242_880n,
      inputContentType: "video/mp4",
      jobId: derivedId(Prefix.job, `${eventId}:job`, 20),
      durationSeconds: ready ? 10 : 0,
      renditions: ready
        ? [
            create(RenditionSchema, {
              id: derivedId(Prefix.rendition, `${eventId}:rendition`, 20),
              resolution: "720p",
              codec: VideoCodec.H264,
              bitrateKbps: 2_500,
              width: 1280,
              height: 720,
              sizeBytes: 2_621_440n,
            }),
          ]
        : [],
      outputSizeBytes: ready ? 2_621_440n : 0n,
      encodingCost: ready ? 0.002 : undefined,
      createdAt: ts(at - 60_000),
      updatedAt: ts(at),
      readyAt: ready ? ts(at) : undefined,
      sourcePinned: false,
    }),
  );
}
