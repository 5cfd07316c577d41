// The stage wrapper: each stage observed in media_encode_stage_seconds and run in a span named
// encode.<stage> that ends whatever the outcome, a failure recorded on it and rethrown. The spans
// are read by a tracer provider of the test's own, registered as the API's global one.
import { SpanStatusCode, trace, type Span, type SpanStatus, type Tracer, type TracerProvider } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { metricValue as value } from "../src/metrics.fixtures.js";
import { stage } from "./stage-timing.js";

interface Seen {
  readonly name: string;
  ended: boolean;
  status?: SpanStatus;
  exceptions: unknown[];
}
const seen: Seen[] = [];

/** A span that remembers what the wrapper did to it; the rest of the Span interface is never called. */
function recording(name: string): Span {
  const s: Seen = { name, ended: false, exceptions: [] };
  seen.push(s);
  const span = {
    end: () => void (s.ended = true),
    setStatus: (status: SpanStatus) => ((s.status = status), span),
    recordException: (e: unknown) => void s.exceptions.push(e),
    isRecording: () => true,
  };
  return span as unknown as Span;
}

const tracer = {
  startSpan: (name: string) => recording(name),
  startActiveSpan: (name: string, ...rest: unknown[]) => (rest.at(-1) as (span: Span) => unknown)(recording(name)),
} as unknown as Tracer;
const provider: TracerProvider = { getTracer: () => tracer };
trace.setGlobalTracerProvider(provider);

describe("stage", () => {
  it("times a stage and runs it in its span, ended", async () => {
    const before = await value("media_encode_stage_seconds_count", { stage: "vmaf" });
    const sum = await value("media_encode_stage_seconds_sum", { stage: "vmaf" });
    const answer = await stage("vmaf", async () => {
      await new Promise((r) => setTimeout(r, 30));
      return 42;
    });
    expect(answer).toBe(42);
    expect(await value("media_encode_stage_seconds_count", { stage: "vmaf" })).toBe(before + 1);
    expect(await value("media_encode_stage_seconds_sum", { stage: "vmaf" })).toBeGreaterThanOrEqual(sum + 0.025);
    const span = [...seen].reverse().find((s) => s.name === "encode.vmaf")!;
    expect(span.ended).toBe(true);
    expect(span.status).toBeUndefined();
    expect(span.exceptions).toEqual([]);
  });

  it("records a failure on the span, sets its error status, ends it, times the stage and rethrows", async () => {
    const before = await value("media_encode_stage_seconds_count", { stage: "captions" });
    const failure = new Error("the recogniser is not installed");
    await expect(
      stage("captions", () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await value("media_encode_stage_seconds_count", { stage: "captions" })).toBe(before + 1);
    const span = [...seen].reverse().find((s) => s.name === "encode.captions")!;
    expect(span.ended).toBe(true);
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: "the recogniser is not installed" });
    expect(span.exceptions).toEqual([failure]);
  });
});
