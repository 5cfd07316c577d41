// A job's encode tasks carry the trace of the command that queued them (the node that runs one
// continues that trace), with tracing on; outside a trace, and with tracing off (every other spec),
// a task carries none.
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OutgoingMessage } from "../../src/bus/port.js";
import { MemoryBus } from "../../src/bus/memory-bus.js";
import { tracingSettings } from "../../src/config.js";
import { FileStore } from "../../src/store/file-store.js";
import { topicsFor } from "../../src/bus/topics.js";
import { trace } from "@opentelemetry/api";
import { currentTraceparent, inSpanContext, startTracing, type Tracing } from "../../src/tracing.js";
import { createJob, origin, run } from "./job.fixtures.js";
import { jobIntentHandlers } from "./job.js";
import type { JobState } from "./messages.js";

class RecordingBus extends MemoryBus {
  readonly tasks: { traceparent?: string; part?: number }[] = [];
  override async publish(_topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    for (const m of messages) this.tasks.push(JSON.parse(new TextDecoder().decode(m.value)).command.task);
  }
}

// Spans go to a collector that answers and keeps nothing.
const collector = createServer((req, res) => req.resume().on("end", () => res.writeHead(200).end()));
let tracing: Tracing;
beforeAll(async () => {
  await new Promise<void>((r) => collector.listen(0, "127.0.0.1", r));
  tracing = await startTracing(
    tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}` })!,
    ["actor-host"],
    "test",
  );
});
afterAll(async () => {
  await tracing.shutdown();
  await new Promise<void>((r) => collector.close(() => r()));
});

describe("a job's tasks and the trace", () => {
  const s: JobState = run({}, createJob({ outputOrigin: origin() }));
  const ctx = { type: "job", id: "job_1", state: s, seq: 7, recovered: false };

  it("a task or chunk queued inside a trace carries its traceparent; outside one, none", async () => {
    const bus = new RecordingBus();
    const store = new FileStore(mkdtempSync(path.join(tmpdir(), "job-trace-")));
    await store.open();
    const handlers = jobIntentHandlers({ bus, topics: topicsFor("t"), store, legacy: async () => {}, retentionDayMs: 86_400_000 });
    const span = trace.getTracer("spec").startSpan("decision");
    const traceparent = inSpanContext(span, () => currentTraceparent());
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    await inSpanContext(span, async () => {
      await handlers.task({ kind: "task", task: "encode" }, ctx);
      await handlers.chunk_tasks({ kind: "chunk_tasks", parts: [0, 1] }, ctx);
    });
    span.end();
    await handlers.task({ kind: "task", task: "encode" }, ctx);
    await handlers.chunk_tasks({ kind: "chunk_tasks", parts: [2] }, ctx);
    expect(bus.tasks.map((t) => t.traceparent)).toEqual([traceparent, traceparent, traceparent, undefined, undefined]);
    expect(bus.tasks.slice(3).every((t) => !("traceparent" in t))).toBe(true);
  });
});
