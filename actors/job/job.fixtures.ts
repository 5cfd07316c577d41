// Builders the job actor's specs share: a Create as the gateway sends it, probe results, and a run
// of commands through decide and fold the way the actor host applies them.
import { create, toJson, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { OutputSpecSchema, OutputType } from "../../src/gen/media/v1/job_pb.js";
import { VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import type { OriginRecord } from "../../src/origins.js";
import type { Rejection } from "../host.js";
import { JobBehavior } from "./job.js";
import type { JobCommand, JobEvent, JobRequest, JobState, OutputRequest, ProbeData } from "./messages.js";

/** An OutputSpec as proto JSON, the form a job keeps it in. */
export function specJson(init: MessageInitShape<typeof OutputSpecSchema>): JsonObject {
  const json = toJson(OutputSpecSchema, create(OutputSpecSchema, init));
  if (json === null || typeof json !== "object" || Array.isArray(json)) throw new Error("an OutputSpec is a JSON object");
  return json;
}

/** One H.264 MP4 output at a named resolution bucket. */
export function output(id: string, resolution: string, over: Partial<OutputRequest> = {}): OutputRequest {
  return {
    id,
    spec: specJson({ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, resolution }] }),
    pathTemplate: "",
    vars: { format: "mp4", codec: "h264", resolution, quality: "standard" },
    ...over,
  };
}

/** A Create of a two-output job (H.264 720p and 480p), as the gateway sends it. */
export function createJob(over: Partial<JobRequest> = {}, at = 1000): JobCommand {
  const request: JobRequest = {
    appId: "app_1",
    organizationId: "org_1",
    inputUrl: "https://example.test/in.mp4",
    inputPath: "",
    inputVideoId: "",
    priority: "standard",
    outputs: [output("out_a", "720p"), output("out_b", "480p")],
    thumbnails: [],
    webhookUrl: "",
    metadata: {},
    outputPathTemplate: "",
    delayedStart: false,
    idempotencyKey: "",
    bodyHash: "h1",
    feeId: "fee_1",
    ...over,
  };
  return { type: "create", id: "job_1", at, request };
}

/** An S3 origin with sealed credentials. */
export function origin(over: Partial<OriginRecord> = {}): OriginRecord {
  return {
    id: "or_1",
    appId: "app_1",
    organizationId: "org_1",
    name: "media",
    description: "",
    provider: "s3",
    permissions: ["read", "write"],
    status: "active",
    basePath: "",
    pathTemplate: "",
    bucket: "media",
    region: "eu-west-1",
    endpoint: "",
    accountId: "",
    jurisdiction: "",
    baseUrl: "",
    sealedCredentials: "sealed",
    createdAt: 1,
    updatedAt: 1,
    ...over,
  };
}

/** A 90 s 1280x720 30 fps input. */
export const probe: ProbeData = {
  format: "mov,mp4",
  durationMs: 90_000,
  sizeBytes: 1_000_000,
  bitRate: 2_000_000,
  video: { codec: "h264", width: 1280, height: 720, frameRate: 30, bitRate: 1_800_000, pixelFormat: "yuv420p" },
};

/** The events a command decides; throws on a rejection. */
export function decided(state: JobState, command: JobCommand): readonly JobEvent[] {
  const d = JobBehavior.decide(state, command);
  if ("code" in d) throw new Error(d.message);
  return d;
}

/** The rejection a command meets; throws when it is decided instead. */
export function rejected(state: JobState, command: JobCommand): Rejection {
  const d = JobBehavior.decide(state, command);
  if (!("code" in d)) throw new Error(`decided ${JSON.stringify(d)}`);
  return d;
}

/** Runs commands through decide and fold, as the actor host does; throws on a rejection. */
export function run(state: JobState, ...commands: JobCommand[]): JobState {
  for (const c of commands) state = decided(state, c).reduce((s, e) => JobBehavior.fold(s, e), state);
  return state;
}

export const at = 2000;

/** A job probed by attempt p1 (processing, or awaiting confirmation when delayed). */
export const probedJob = (over: Partial<JobRequest> = {}, metadata: ProbeData = probe) =>
  run({}, createJob(over), { type: "probe_started", attempt: "p1", at }, { type: "probed", attempt: "p1", at, metadata, durationMs: 5 });

/** A probed job whose encode attempt e1 has started. */
export const encodingJob = (over: Partial<JobRequest> = {}) => run(probedJob(over), { type: "encode_started", attempt: "e1", at });
