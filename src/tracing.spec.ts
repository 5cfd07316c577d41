// Tracing on: the trace crosses the bus in message headers (W3C traceparent) from a PRODUCER span
// to the CONSUMER span of its handler, log lines name it, and spans leave by OTLP/HTTP protobuf.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { trace } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tracingSettings } from "./config.js";
import { MemoryBus } from "./bus/memory-bus.js";
import type { BusMessage } from "./bus/port.js";
import { tracedBus } from "./bus/traced-bus.js";
import { createLogger } from "./log.js";
import { childSpan, currentTraceparent, inSpanContext, logFields, SpanKind, startTracing, traceFrom, tracingOn, type Tracing } from "./tracing.js";

const posts: { path: string; type: string; bytes: number }[] = [];
const collector = createServer((req: IncomingMessage, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    posts.push({ path: req.url ?? "", type: req.headers["content-type"] ?? "", bytes: Buffer.concat(chunks).length });
    res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
  });
});
let tracing: Tracing;

beforeAll(async () => {
  await new Promise<void>((r) => collector.listen(0, "127.0.0.1", r));
  const settings = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}` })!;
  tracing = await startTracing(settings, ["gateway"], "test");
});
afterAll(() => new Promise<void>((r) => collector.close(() => r())));

const bytes = (s: string) => new TextEncoder().encode(s);

describe("tracing on", () => {
  it("carries the trace through the bus: the handler runs in a CONSUMER span whose parent is the publish's PRODUCER span", async () => {
    expect(tracingOn()).toBe(true);
    const bus = tracedBus(new MemoryBus());
    await bus.start();
    await bus.ensureTopics([{ topic: "t", partitions: 1 }]);
    const seen: { message: BusMessage; span: ReadableSpan | undefined }[] = [];
    await bus.consume({
      topic: "t",
      group: "g",
      handler: async (message) => {
        seen.push({ message, span: trace.getActiveSpan() as unknown as ReadableSpan | undefined });
      },
    });
    // Outside a trace (a poll, a heartbeat): nothing is added, no span opened.
    await bus.publish("t", [{ key: "a", value: bytes("outside") }]);
    const root = trace.getTracer("spec").startSpan("request");
    await inSpanContext(root, () => bus.publish("t", [{ key: "a", value: bytes("inside"), headers: { correlation: "c1" } }]));
    root.end();
    await expect.poll(() => seen.length).toBe(2);
    await bus.close();

    expect(seen[0]!.message.headers).toEqual({});
    expect(seen[0]!.span).toBeUndefined();
    const { message, span } = seen[1]!;
    const traceId = root.spanContext().traceId;
    // The caller's own headers stay; traceparent is version-traceid-spanid-flags.
    expect(message.headers.correlation).toBe("c1");
    const [, carriedTrace, producerId, flags] = message.headers.traceparent!.split("-");
    expect([carriedTrace, flags]).toEqual([traceId, "01"]);
    expect(span!.spanContext().traceId).toBe(traceId);
    expect(span!.kind).toBe(SpanKind.CONSUMER);
    expect(span!.parentSpanContext?.spanId).toBe(producerId);
    expect(span!.name).toBe("process t");
    expect(span!.attributes["messaging.destination.name"]).toBe("t");
    expect(span!.attributes["messaging.consumer.group.name"]).toBe("g");
  });

  it("names the active span in log lines and in a task's traceparent", () => {
    expect(logFields()).toEqual({});
    expect(currentTraceparent()).toBeUndefined();
    const root = trace.getTracer("spec").startSpan("request");
    inSpanContext(root, () => {
      expect(logFields()).toEqual({ trace_id: root.spanContext().traceId, span_id: root.spanContext().spanId });
      const traceparent = currentTraceparent()!;
      expect(traceparent).toBe(`00-${root.spanContext().traceId}-${root.spanContext().spanId}-01`);
      // A node continuing the task's trace makes its span a child of the one that queued it.
      const child = inSpanContext(trace.getTracer("spec").startSpan("task", {}, traceFrom(traceparent)), () => childSpan("stage", SpanKind.INTERNAL, {}));
      expect((child as unknown as ReadableSpan).parentSpanContext?.traceId).toBe(root.spanContext().traceId);
      child!.end();
    });
    root.end();
  });

  it("writes trace_id and span_id on a log line written inside a trace, and nothing more outside one", () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger("info", { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    log.info({ job_id: "job_1" }, "outside");
    const root = trace.getTracer("spec").startSpan("request");
    inSpanContext(root, () => log.info({ job_id: "job_1" }, "inside"));
    root.end();
    expect(lines[0]).not.toHaveProperty("trace_id");
    expect(lines[0]).not.toHaveProperty("span_id");
    expect(lines[1]).toMatchObject({ msg: "inside", job_id: "job_1", trace_id: root.spanContext().traceId, span_id: root.spanContext().spanId });
  });

  it("exports the spans by OTLP/HTTP protobuf to the traces path, all of them by the end of shutdown", async () => {
    await tracing.shutdown();
    expect(posts.length).toBeGreaterThan(0);
    expect(posts.every((p) => p.path === "/v1/traces" && p.type === "application/x-protobuf" && p.bytes > 0)).toBe(true);
    expect(tracingOn()).toBe(false);
  });
});
