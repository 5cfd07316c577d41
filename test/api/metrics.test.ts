// Metrics: a gateway answers GET /metrics in the Prometheus text format on its own port; calls move
// the RPC counters and latency histograms of their method (refusals before any service code too),
// Watch streams are counted while open, and the store's operations are timed. Both deployments.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, freePort, ok, startHarness, TARGET, until, type Auth, type Harness } from "../harness.js";
import { stream } from "../watch.js";
import { count, scrapeMetrics, series, value, type Scrape } from "../prometheus.js";

let h: Harness;
/** One gateway for every call and scrape: each process counts only what it served. */
let base: string;
let key: Auth;
const metricsPort = freePort();

beforeAll(async () => {
  h = await startHarness(TARGET === "embedded" ? { MEDIA_METRICS_PORT: String(metricsPort) } : {});
  base = h.bases[0]!;
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
});

afterAll(async () => {
  await h?.server.close();
});

/** GET /metrics of the gateway these tests call, parsed. */
const scrape = (url = `${base}/metrics`): Promise<Scrape> => scrapeMetrics(url);

describe("metrics", () => {
  it("counts and times calls by method and code, refusals before any service code included", async () => {
    const before = await scrape();
    for (let i = 0; i < 3; i++) await ok(call(base, "HealthService/Check", {}));
    for (let i = 0; i < 2; i++) await ok(call(base, "APIKeyService/List", {}, key));
    expect((await call(base, "APIKeyService/List", {})).status).toBe(401);
    expect((await call(base, "APIKeyService/List", "{not json", key)).status).toBe(400);
    const after = await scrape();

    const moved = (method: string, code: string) =>
      value(after, "media_rpc_requests_total", { method, code }) - value(before, "media_rpc_requests_total", { method, code });
    expect(moved("HealthService/Check", "ok")).toBe(3);
    expect(moved("APIKeyService/List", "ok")).toBe(2);
    expect(moved("APIKeyService/List", "unauthenticated")).toBe(1);
    expect(moved("APIKeyService/List", "invalid_argument")).toBe(1);
    const timed = (method: string) => count(after, "media_rpc_duration_seconds", { method }) - count(before, "media_rpc_duration_seconds", { method });
    expect(timed("HealthService/Check")).toBe(3);
    expect(timed("APIKeyService/List")).toBe(4);
    expect(after.types.get("media_rpc_duration_seconds")).toBe("histogram");
    expect(after.types.get("media_rpc_requests_total")).toBe("counter");
  });

  it("times the store's operations and shows the process's default metrics", async () => {
    await ok(call(base, "APIKeyService/List", {}, key));
    const metrics = await scrape();
    expect(metrics.types.get("media_store_operation_seconds")).toBe("histogram");
    const counted = series(metrics, "media_store_operation_seconds_count")
      .filter((s) => Number(s.value) > 0)
      .map((s) => s.labels?.operation ?? "");
    expect(counted.length).toBeGreaterThan(0);
    expect(counted.every((op) => ["get", "commit", "events", "scan", "latestSnapshot", "saveSnapshot"].includes(op))).toBe(true);
    expect(metrics.types.get("process_cpu_user_seconds_total")).toBe("counter");
    expect(metrics.types.has("nodejs_eventloop_lag_seconds")).toBe(true);
  });

  it("counts a Watch stream while it is open, and the call once it ends", async () => {
    const video = (
      await ok(call(base, "VideoService/CreateUpload", { app_id: h.boot.app_id, filename: "m.mp4", content_type: "video/mp4", size_bytes: 10 }, key))
    ).video;
    const before = await scrape();
    const open = (m: Scrape) => value(m, "media_watch_streams_open", { resource: "video" });
    const ended = (m: Scrape) => count(m, "media_rpc_duration_seconds", { method: "VideoService/Watch" });
    const abort = new AbortController();
    let snapshot: () => void = () => undefined;
    const first = new Promise<void>((resolve) => (snapshot = resolve));
    const watching = stream(base, "VideoService/Watch", { id: video.id }, key, () => snapshot(), abort.signal).catch(() => undefined);
    await first;
    expect(open(await scrape())).toBe(open(before) + 1);
    abort.abort();
    await watching;
    await until(
      "the Watch stream to close",
      async () => {
        const m = await scrape();
        return open(m) === open(before) && ended(m) === ended(before) + 1 ? true : undefined;
      },
      10_000,
    );
  });

  it.skipIf(TARGET === "cluster")("serves the same metrics on MEDIA_METRICS_PORT", async () => {
    const metrics = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(value(metrics, "media_rpc_requests_total", { method: "HealthService/Check", code: "ok" })).toBeGreaterThanOrEqual(3);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/other`)).status).toBe(404);
  });
});
