// A shared frame is byte for byte the frame Connect's per-stream path writes for the same message,
// in each protocol and codec the gateway serves (through the JSON bridge, as the router mounts it).
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createConnectRouter, createContextValues } from "@connectrpc/connect";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { describe, expect, it } from "vitest";
import { JobSchema, JobService, JobStatus, OutputStatus, WatchJobRequestSchema, WatchJobResponseSchema } from "../../src/gen/media/v1/job_pb.js";
import { toBinary } from "@bufbuild/protobuf";
import { boundedGzip } from "../compression.js";
import { withSpecJson } from "../json-bridge.js";
import { envelope, frames } from "../wire-errors.js";
import { apiError } from "../../src/errors.js";
import { COMPRESS_MIN_BYTES, failedEnd, isEndFrame, isGrpcWeb, SharedMessage, wireFormatOf } from "./frames.js";

const job = (metadataBytes: number) =>
  create(JobSchema, { id: "job_1", status: JobStatus.PENDING, progress: 42, metadata: { note: "n".repeat(metadataBytes), ü: "é" } });

/** Connect's own handler, behind the JSON bridge, streaming `message` once (then failing with `error`, when given). */
function connectHandler(message: ReturnType<typeof create<typeof WatchJobResponseSchema>>, error?: ConnectError) {
  const router = createConnectRouter({ connect: true, grpcWeb: true, grpc: false, acceptCompression: [boundedGzip] });
  router.service(JobService, {
    async *watch(_req, ctx) {
      // Trailers, as the gateway's interceptors set them (request id, rate limits): a failed end keeps them.
      ctx.responseTrailer.set("x-request-id", "req_1");
      yield message;
      if (error) throw error;
    },
  });
  const h = router.handlers.find((x) => x.method.name === "Watch")!;
  return withSpecJson(h, { readMaxBytes: 1 << 20, maxTimeoutMs: 60_000 });
}

async function allFrames(res: UniversalServerResponse): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const f of frames(res.body as AsyncIterable<Uint8Array>)) out.push(envelope(f.flags, f.data));
  return out;
}

async function firstFrame(res: UniversalServerResponse): Promise<Uint8Array> {
  for await (const f of frames(res.body as AsyncIterable<Uint8Array>)) return envelope(f.flags, f.data);
  throw new Error("no frame");
}

const CALLS: { name: string; header: Record<string, string>; json: boolean }[] = [
  { name: "Connect JSON", header: { "content-type": "application/connect+json" }, json: true },
  { name: "Connect JSON, gzip accepted", header: { "content-type": "application/connect+json", "connect-accept-encoding": "gzip" }, json: true },
  { name: "Connect proto", header: { "content-type": "application/connect+proto" }, json: false },
  { name: "Connect proto, gzip accepted", header: { "content-type": "application/connect+proto", "connect-accept-encoding": "gzip" }, json: false },
  { name: "gRPC-web proto", header: { "content-type": "application/grpc-web+proto" }, json: false },
  { name: "gRPC-web (no codec named)", header: { "content-type": "application/grpc-web" }, json: false },
  { name: "gRPC-web proto, gzip accepted", header: { "content-type": "application/grpc-web+proto", "grpc-accept-encoding": "gzip" }, json: false },
  { name: "gRPC-web JSON", header: { "content-type": "application/grpc-web+json" }, json: true },
];

/** A completed job as the actor presents one: outputs, costs, timestamps, 64-bit sizes, optionals. */
const completedJob = () =>
  create(JobSchema, {
    id: "job_1",
    object: "job",
    appId: "app_1",
    inputUrl: "https://example.com/in.mp4",
    status: JobStatus.COMPLETED,
    progress: 100,
    outputs: [
      { id: "out_a", status: OutputStatus.COMPLETED, progress: 100, outputUrl: "s3://b/a/index.m3u8", outputSizeBytes: 2n ** 40n + 7n },
      { id: "out_b", status: OutputStatus.FAILED, errorCode: "encode_failed", errorMessage: "x" },
    ],
    totalEstimatedCost: 0.012345,
    totalActualCost: 0.01,
    costBreakdown: {
      lines: [{ description: "encode", estimatedAmountEur: 0.012345, actualAmountEur: 0.01 }],
      totalEstimatedCost: 0.012345,
      totalActualCost: 0.01,
    },
    execution: { probeDurationMs: 5n, encodeDurationMs: 1000n, totalDurationMs: 1005n },
    metadata: { customer: "c-1" },
    videoId: "vid_1",
    currency: "EUR",
    createdAt: { seconds: 1_700_000_000n, nanos: 123_000_000 },
    updatedAt: { seconds: 1_700_000_100n, nanos: 0 },
    completedAt: { seconds: 1_700_000_100n, nanos: 999_999_999 },
  });

const MESSAGES: { name: string; job: () => ReturnType<typeof job> }[] = [
  { name: "a small message", job: () => job(10) },
  { name: "a large message", job: () => job(COMPRESS_MIN_BYTES * 2) },
  { name: "a completed job", job: completedJob },
  // Connect's binary message carries a lone surrogate as U+FFFD, and so does the bridge's JSON.
  { name: "lone surrogates", job: () => create(JobSchema, { id: "job_\ud800", metadata: { "\udfff": "a\ud83d", b: "\\ud800 is not one" } }) },
];

/** One Watch call of `c`'s protocol and codec to Connect's handler. */
function callWatch(c: (typeof CALLS)[number], message: ReturnType<typeof create<typeof WatchJobResponseSchema>>, error?: ConnectError) {
  const request = toBinary(WatchJobRequestSchema, create(WatchJobRequestSchema, { id: "job_1" }));
  const body = c.json ? new TextEncoder().encode(JSON.stringify({ id: "job_1" })) : request;
  return connectHandler(
    message,
    error,
  )({
    httpVersion: "1.1",
    method: "POST",
    url: "http://localhost/media.v1.JobService/Watch",
    header: new Headers(c.header),
    body: (async function* () {
      yield envelope(0, body);
    })(),
    signal: new AbortController().signal,
    contextValues: createContextValues(),
  });
}

const ERRORS: { name: string; error: () => ConnectError }[] = [
  {
    name: "a stalled stream",
    error: () =>
      apiError(Code.ResourceExhausted, "the stream was ended: its client read nothing for 60 s while updates waited; watch again for the latest state"),
  },
  { name: "an update not presented", error: () => apiError(Code.Unavailable, "an update of this stream could not be read; watch again for the latest state") },
  { name: "the deadline", error: () => apiError(Code.DeadlineExceeded, "the operation timed out") },
  { name: "an error past the compression threshold", error: () => apiError(Code.Unavailable, "é".repeat(COMPRESS_MIN_BYTES)) },
  { name: "an error not in the API's shape", error: () => new ConnectError("plain", Code.Unavailable) },
];

describe("the end of a stream that failed after the hand-over", () => {
  for (const e of ERRORS) {
    for (const c of CALLS) {
      it(`${c.name}, ${e.name}: the end frame Connect and the error shaping write`, async () => {
        const message = create(WatchJobResponseSchema, { eventType: "updated", job: job(10) });
        const ok = await callWatch(c, message);
        const failed = await callWatch(c, message, e.error());
        const okFrames = await allFrames(ok);
        const expected = (await allFrames(failed)).at(-1)!;
        const grpcWeb = isGrpcWeb(new Headers(ok.header));
        expect(grpcWeb).toBe(c.name.startsWith("gRPC-web"));
        expect(isEndFrame(okFrames.at(-1)!, grpcWeb)).toBe(true);
        expect(isEndFrame(okFrames[0]!, grpcWeb)).toBe(false);
        const built = failedEnd(okFrames.at(-1)!, e.error(), grpcWeb, wireFormatOf(new Headers(ok.header))!);
        expect(Buffer.from(built).toString("latin1")).toBe(Buffer.from(expected).toString("latin1"));
      });
    }
  }
});

describe("shared frames", () => {
  for (const m of MESSAGES) {
    for (const c of CALLS) {
      it(`${c.name}, ${m.name}: the same bytes as Connect's`, async () => {
        const message = create(WatchJobResponseSchema, { eventType: "updated", job: m.job() });
        const res = await callWatch(c, message);
        expect(res.status).toBe(200);
        const format = wireFormatOf(new Headers(res.header));
        expect(format).toBe(c.json ? "json" : c.name.includes("gzip") ? "proto-gzip" : "proto");
        const expected = await firstFrame(res);
        const shared = new SharedMessage(WatchJobResponseSchema, message);
        expect(Buffer.from(shared.frame(format!))).toEqual(Buffer.from(expected));
        // Made once, then the same bytes for every stream.
        expect(shared.frame(format!)).toBe(shared.frame(format!));
      });
    }
  }

  it("is not a stream format for unary answers", () => {
    expect(wireFormatOf(new Headers({ "content-type": "application/json" }))).toBeUndefined();
    expect(wireFormatOf(new Headers({ "content-type": "application/proto" }))).toBeUndefined();
    expect(wireFormatOf(undefined)).toBeUndefined();
  });
});
