// Traces (OpenTelemetry): one trace per request, across the gateway, the bus, the actors and the
// encoder nodes. Off by default; then no SDK is loaded, every helper here returns after one flag
// test, and the API's no-op tracer is all that is left. startTracing (main/) loads the SDK when an
// OTLP endpoint is configured. Spans are opened only inside a trace (an RPC, or a message or task
// that carries one): polls, timers and heartbeats start none.
import os from "node:os";
import { randomUUID } from "node:crypto";
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
} from "@opentelemetry/api";
import type { TracingSettings } from "./config.js";

export { SpanKind, type Attributes, type Context, type Span };

/** Set by startTracing: every helper tests it first, so tracing off costs one branch. */
let enabled = false;

/** Whether this process exports traces. */
export const tracingOn = (): boolean => enabled;

const tracer = () => trace.getTracer("media");

/** The active span, when it is recording: a child of it is worth making. */
function recordingParent(): Span | undefined {
  if (!enabled) return undefined;
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span : undefined;
}

/**
 * A child of the active span, or undefined outside a trace (or with tracing off). The caller runs
 * the work with inSpanContext(span, ...) when what it calls should nest under it, and ends it.
 */
export function childSpan(name: string, kind: SpanKind, attributes: Attributes): Span | undefined {
  if (!recordingParent()) return undefined;
  return tracer().startSpan(name, { kind, attributes });
}

/** A span under a given parent context (from a message, a task or a journal entry), made active while fn runs, ended when it settles. */
export async function inSpan<T>(parent: Context | undefined, name: string, kind: SpanKind, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  if (!enabled || parent === undefined) return fn();
  const span = tracer().startSpan(name, { kind, attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), fn);
  } catch (e) {
    failed(span, e);
    throw e;
  } finally {
    span.end();
  }
}

/** A span that is over already (from `startTime`, epoch ms, to now) under a given parent: a wait seen only at its end. */
export function pastSpan(parent: Context | undefined, name: string, kind: SpanKind, attributes: Attributes, startTime: number): void {
  if (!enabled || parent === undefined) return;
  tracer().startSpan(name, { kind, attributes, startTime }, parent).end();
}

/** Runs fn with the span active (what fn calls nests under it). */
export function inSpanContext<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Marks a span failed with the error (its message only: errors here carry no secrets, stacks add nothing a log lacks). */
export function failed(span: Span, e: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
}

/** Marks a span failed with a message. */
export function failedWith(span: Span, message: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** The active context when a span records in it (to hand to work that runs elsewhere), else undefined. */
export function activeTrace(): Context | undefined {
  return recordingParent() ? context.active() : undefined;
}

/** Runs fn in a context taken earlier with activeTrace (a callback that fires outside it); fn as it is when there is none. */
export function inContext<T>(ctx: Context | undefined, fn: () => T): T {
  return ctx === undefined ? fn() : context.with(ctx, fn);
}

/** The active span's W3C traceparent, for a record that carries it (an encode task); undefined outside a trace. */
export function currentTraceparent(): string | undefined {
  const headers = injectTrace(undefined);
  return headers?.traceparent;
}

/** The W3C trace context headers (traceparent, tracestate) of the active span, added to `headers`; undefined outside a trace. */
export function injectTrace(headers: Readonly<Record<string, string>> | undefined): Record<string, string> | undefined {
  if (!recordingParent()) return undefined;
  const carrier: Record<string, string> = { ...headers };
  propagation.inject(context.active(), carrier);
  return carrier;
}

const recordGetter: TextMapGetter<Readonly<Record<string, string>>> = {
  get: (carrier, key) => carrier[key],
  keys: (carrier) => Object.keys(carrier),
};

/** The context a message's headers carry, or undefined when they carry none (or tracing is off). */
export function extractTrace(headers: Readonly<Record<string, string>>): Context | undefined {
  if (!enabled || headers.traceparent === undefined) return undefined;
  return propagation.extract(ROOT_CONTEXT, headers, recordGetter);
}

/** The context of a traceparent kept with a record (an encode task). */
export function traceFrom(traceparent: string | undefined): Context | undefined {
  return traceparent === undefined ? undefined : extractTrace({ traceparent });
}

const headersGetter: TextMapGetter<Headers> = {
  get: (carrier, key) => carrier.get(key) ?? undefined,
  // The W3C propagator reads its two headers by name and never lists them.
  keys: () => [],
};

/**
 * A SERVER span for an incoming call, continuing the caller's traceparent when it sends one; `run`
 * runs the handler inside it. Undefined with tracing off.
 */
export function serverSpan(headers: Headers, name: string, attributes: Attributes): { span: Span; run<T>(fn: () => T): T } | undefined {
  if (!enabled) return undefined;
  const parent = propagation.extract(ROOT_CONTEXT, headers, headersGetter);
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  const active = trace.setSpan(parent, span);
  return { span, run: (fn) => context.with(active, fn) };
}

/** Sets an attribute on the active span (the request id the gateway mints, say); nothing outside a trace. */
export function annotate(key: string, value: string): void {
  recordingParent()?.setAttribute(key, value);
}

/**
 * trace_id and span_id of the active span, for log lines (pino's mixin); nothing outside a trace.
 * A new object each time: pino merges the line's own fields into it.
 */
export function logFields(): Record<string, string> {
  if (!enabled) return {};
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

export interface Tracing {
  /** Exports what is buffered and stops: the last step of a process's stop. */
  shutdown(): Promise<void>;
}

/**
 * Loads the SDK and exports spans to the OTLP endpoint (protobuf over HTTP, in batches). `roles`
 * name what this process runs (gateway, actor-host, encoder-node), in the resource of every span.
 */
export async function startTracing(settings: TracingSettings, roles: readonly string[], version: string): Promise<Tracing> {
  const [{ TracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, resources, { W3CTraceContextPropagator }, { AsyncLocalStorageContextManager }] =
    await Promise.all([
      import("@opentelemetry/sdk-trace"),
      import("@opentelemetry/exporter-trace-otlp-proto"),
      import("@opentelemetry/resources"),
      import("@opentelemetry/core"),
      import("@opentelemetry/context-async-hooks"),
    ]);
  const sampler = await samplerOf(settings.sampler);
  // The operator's OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win over these defaults.
  const resource = resources
    .resourceFromAttributes({
      "service.name": settings.serviceName,
      "service.version": version,
      "service.instance.id": randomUUID(),
      "host.name": os.hostname(),
      "process.pid": process.pid,
      "media.roles": roles.join(","),
    })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler,
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: settings.endpoint }), scheduledDelayMillis: settings.batchDelayMs })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  enabled = true;
  return {
    async shutdown() {
      enabled = false;
      await provider.shutdown();
    },
  };
}

async function samplerOf({ name, ratio }: TracingSettings["sampler"]) {
  const { AlwaysOnSampler, AlwaysOffSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = await import("@opentelemetry/sdk-trace");
  const root = name.endsWith("always_on") ? new AlwaysOnSampler() : name.endsWith("always_off") ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(ratio);
  return name.startsWith("parentbased_") ? new ParentBasedSampler({ root }) : root;
}
