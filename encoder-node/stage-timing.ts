// One stage of an encode (probe, analysis, encode, packager, captions, VMAF, upload, ...), timed
// into media_encode_stage_seconds and run inside an OpenTelemetry span named encode.<stage>, so
// the metrics and the traces agree on what a stage is. Without a registered SDK (tracing off)
// the API's tracer is a no-op: the span costs a few allocations.
import { SpanStatusCode, trace } from "@opentelemetry/api";
import { observeEncodeStage, type EncodeStage } from "../src/metrics-flow.js";

const tracer = trace.getTracer("media");

/** Runs `fn` as the stage `name`: its wall time observed and its span ended whatever the outcome; a failure is recorded on the span and rethrown. */
export function stage<T>(name: EncodeStage, fn: () => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(`encode.${name}`, async (span) => {
    const started = performance.now();
    try {
      return await fn();
    } catch (e) {
      span.recordException(e instanceof Error ? e : String(e));
      span.setStatus({ code: SpanStatusCode.ERROR, ...(e instanceof Error ? { message: e.message } : {}) });
      throw e;
    } finally {
      observeEncodeStage(name, (performance.now() - started) / 1000);
      span.end();
    }
  });
}
