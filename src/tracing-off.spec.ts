// Tracing off (the default): no SDK is loaded, nothing is added to messages or log lines; and
// the OTEL_* settings that turn it on are checked at start like every other setting.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { ConfigError, tracingSettings } from "./config.js";
import { MemoryBus } from "./bus/memory-bus.js";
import type { BusMessage } from "./bus/port.js";
import { tracedBus } from "./bus/traced-bus.js";
import { createLogger } from "./log.js";
import { childSpan, currentTraceparent, inSpanContext, logFields, SpanKind, tracingOn } from "./tracing.js";

const ROOT = path.resolve(import.meta.dirname, "..");

/** Every TypeScript source of the service (not the specs, not generated code). */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory() && e.name !== "gen" && e.name !== "node_modules") walk(p);
      else if (e.isFile() && p.endsWith(".ts") && !p.endsWith(".spec.ts")) out.push(p);
    }
  };
  for (const dir of ["src", "actors", "wire", "gateway", "delivery", "encoder-node", "main"]) walk(path.join(ROOT, dir));
  return out;
}

describe("tracing off", () => {
  it("loads no SDK: only startTracing imports one, dynamically; the rest of the service uses the API alone", () => {
    const sdk = /(?:from\s+|import\s*\(\s*)["'](@opentelemetry\/(?!api["'])[^"']+)["']/g;
    const found = sources().flatMap((file) => [...readFileSync(file, "utf8").matchAll(sdk)].map((m) => `${path.relative(ROOT, file)}: ${m[0]}`));
    expect(found.length).toBeGreaterThan(0); // the pattern finds what it is for
    for (const hit of found) expect(hit).toMatch(/^src\/tracing\.ts: import\(/);
  });

  it("adds no header to a message, opens no span, and adds nothing to log lines, even inside a span of the API's no-op tracer", async () => {
    expect(tracingOn()).toBe(false);
    const bus = tracedBus(new MemoryBus());
    await bus.start();
    await bus.ensureTopics([{ topic: "t", partitions: 1 }]);
    const seen: BusMessage[] = [];
    await bus.consume({ topic: "t", group: "g", handler: async (m) => void seen.push(m) });
    const lines: Record<string, unknown>[] = [];
    const log = createLogger("info", { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const span = trace.getTracer("spec").startSpan("request");
    expect(span.isRecording()).toBe(false);
    await inSpanContext(span, async () => {
      expect(childSpan("x", SpanKind.INTERNAL, {})).toBeUndefined();
      expect(currentTraceparent()).toBeUndefined();
      expect(logFields()).toEqual({});
      await bus.publish("t", [{ key: "a", value: new Uint8Array([1]), headers: { correlation: "c1" } }]);
      log.info("inside");
    });
    expect(Object.keys(lines[0]!).sort()).toEqual(["level", "msg", "service", "time"]);
    await expect.poll(() => seen.length).toBe(1);
    expect(seen[0]!.headers).toEqual({ correlation: "c1" });
    await bus.close();
  });
});

describe("tracing settings", () => {
  const fails = (env: NodeJS.ProcessEnv, setting: string, message: RegExp) => {
    let error: unknown;
    try {
      tracingSettings(env);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).setting).toBe(setting);
    expect((error as ConfigError).message).toMatch(message);
  };

  it("is off without an endpoint, and with OTEL_SDK_DISABLED=true", () => {
    expect(tracingSettings({})).toBeUndefined();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" })).toBeUndefined();
  });

  it("joins /v1/traces to the general endpoint and takes the traces endpoint as it is; the service name defaults to media", () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })).toEqual({
      endpoint: "http://collector:4318/v1/traces",
      serviceName: "media",
      sampler: { name: "parentbased_always_on", ratio: 1 },
      batchDelayMs: 5000,
    });
    const s = tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://ignored:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://tempo.example/otlp/v1/traces",
      OTEL_SERVICE_NAME: "media-eu",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.25",
      OTEL_BSP_SCHEDULE_DELAY: "200",
    });
    expect(s).toEqual({
      endpoint: "https://tempo.example/otlp/v1/traces",
      serviceName: "media-eu",
      sampler: { name: "parentbased_traceidratio", ratio: 0.25 },
      batchDelayMs: 200,
    });
  });

  it("refuses an endpoint that is not an http(s) URL, an unknown sampler and a ratio outside [0, 1], naming the setting", () => {
    fails({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://[collector:4318" }, "OTEL_EXPORTER_OTLP_ENDPOINT", /is not a URL/);
    fails({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "grpc://collector:4317" }, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", /http:\/\/ or https:\/\//);
    fails({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_SAMPLER: "jaeger_remote" }, "OTEL_TRACES_SAMPLER", /must be one of always_on/);
    fails(
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.5" },
      "OTEL_TRACES_SAMPLER_ARG",
      /between 0 and 1/,
    );
  });

  it("stops `media serve` at start with exit 2 and one line naming the setting, before anything opens", () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "media-tracing-"));
    try {
      const run = spawnSync(process.execPath, [path.join(ROOT, "bin/media.js"), "serve"], {
        cwd: ROOT,
        env: { PATH: process.env.PATH, MEDIA_DATA_DIR: dataDir, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_TRACES_SAMPLER: "sometimes" },
        encoding: "utf8",
        timeout: 30_000,
      });
      expect(run.status).toBe(2);
      expect(run.stderr.trim().split("\n")).toEqual([
        'media: bad configuration: OTEL_TRACES_SAMPLER: must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio, got "sometimes"',
      ]);
      expect(readdirSync(dataDir)).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
