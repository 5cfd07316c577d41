// The gateway's span of an RPC: a SERVER span named service/method with the RPC conventions'
// attributes, continuing the caller's traceparent, and its error code when the call fails.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { ConnectError, Code } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { trace } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tracingSettings } from "../src/config.js";
import { SpanKind, startTracing, type Tracing } from "../src/tracing.js";
import { withRpcMetrics } from "./rpc-metrics.js";

let tracing: Tracing;
// The spans are read in process; a collector that takes everything stands in for the real one.
const collector = createServer((req, res) => req.resume().on("end", () => res.writeHead(200).end()));
beforeAll(async () => {
  await new Promise<void>((r) => collector.listen(0, "127.0.0.1", r));
  const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  tracing = await startTracing(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint })!, ["gateway"], "test");
});
afterAll(async () => {
  await tracing.shutdown();
  await new Promise<void>((r) => collector.close(() => r()));
});

/** A handler of JobService/Create that notes the span it runs in, answering or failing as told. */
function handler(seen: ReadableSpan[], fail?: ConnectError): UniversalHandler {
  const fn = async (): Promise<UniversalServerResponse> => {
    seen.push(trace.getActiveSpan() as unknown as ReadableSpan);
    if (fail) throw fail;
    return { status: 200, header: new Headers({ "content-type": "application/json" }) };
  };
  return Object.assign(fn, {
    protocolNames: ["connect"],
    service: { typeName: "media.v1.JobService", name: "JobService" },
    method: { name: "Create" },
    requestPath: "/media.v1.JobService/Create",
    allowedMethods: ["POST"],
    supportedContentType: { challenge: () => true },
  }) as unknown as UniversalHandler;
}

const request = (headers: Record<string, string>) =>
  ({
    httpVersion: "1.1",
    method: "POST",
    url: "http://gw/media.v1.JobService/Create",
    header: new Headers(headers),
    body: undefined,
    signal: new AbortController().signal,
  }) as unknown as UniversalServerRequest;

describe("the gateway's RPC span", () => {
  it("continues the caller's traceparent as a SERVER span with rpc.system, rpc.service and rpc.method", async () => {
    const seen: ReadableSpan[] = [];
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    await withRpcMetrics(handler(seen))(request({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` }));
    const span = seen[0]!;
    expect(span.spanContext().traceId).toBe(traceId);
    expect(span.parentSpanContext?.spanId).toBe("00f067aa0ba902b7");
    expect(span.parentSpanContext?.isRemote).toBe(true);
    expect(span.kind).toBe(SpanKind.SERVER);
    expect(span.name).toBe("media.v1.JobService/Create");
    expect(span.attributes).toMatchObject({ "rpc.system": "connect_rpc", "rpc.service": "media.v1.JobService", "rpc.method": "Create" });
    expect(span.ended).toBe(true);
    expect(span.attributes["rpc.connect_rpc.error_code"]).toBeUndefined();
  });

  it("starts a trace of its own without a traceparent, and names the error code of a failed call", async () => {
    const seen: ReadableSpan[] = [];
    await expect(withRpcMetrics(handler(seen, new ConnectError("no", Code.NotFound)))(request({}))).rejects.toThrow();
    const span = seen[0]!;
    expect(span.parentSpanContext).toBeUndefined();
    expect(span.attributes["rpc.connect_rpc.error_code"]).toBe("not_found");
    expect(span.ended).toBe(true);
  });
});
