// Metrics: a gateway answers GET /metrics in the Prometheus text format on its own port; calls move
// the RPC counters and latency histograms of their method (refusals before any service code too),
// Watch streams are counted while open, and the store's operations are timed. A hosted video
// uploaded and played moves the edge's and the uploads' series (and, embedded, where the encoder
// and the actors run in the same process, the encode stages, its speed and the outbox's lag).
// Both deployments, but the hosted video embedded only (see below).
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, freePort, ok, startHarness, TARGET, until, type Auth, type Harness } from "../harness.js";
import { parseHlsMaster, parseHlsMedia } from "../media.js";
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

/** A short test clip: 2 s of 320x240 H.264 and AAC. */
async function makeClip(): Promise<string> {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "metrics-clip-")), "clip.mp4");
  const lavfi = (source: string) => ["-f", "lavfi", "-i", source];
  await promisify(execFile)("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y"],
    ...lavfi("testsrc2=size=320x240:rate=25:duration=2"),
    ...lavfi("sine=frequency=440:duration=2"),
    ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", file],
  ]);
  return file;
}

// Embedded only: a cluster's encoder node reads uploads from a shared bucket (MinIO), which this
// file's harness does not start (test/api/hosting.test.ts does); the lead's Prometheus test over a
// running cluster reads the same series there.
describe.skipIf(TARGET === "cluster")("metrics of hosted videos", () => {
  it("counts an upload and a playback at the edge: bytes, parts, results, kinds, refusals by reason", async () => {
    const clip = await makeClip();
    const size = statSync(clip).size;
    const before = await scrape();

    // A single upload, completed; a multipart one with one part stored, then deleted while uploading.
    const created = await ok(
      call(base, "VideoService/CreateUpload", { app_id: h.boot.app_id, filename: "clip.mp4", content_type: "video/mp4", size_bytes: size }, key),
    );
    expect((await fetch(created.upload_url, { method: "PUT", body: readFileSync(clip) })).status).toBe(200);
    await ok(call(base, "VideoService/CompleteUpload", { id: created.video.id }, key));
    const partSize = 5 * 1024 * 1024;
    const multi = await ok(
      call(
        base,
        "VideoService/CreateMultipartUpload",
        { app_id: h.boot.app_id, filename: "big.mp4", content_type: "video/mp4", size_bytes: partSize + 10, part_size_bytes: partSize },
        key,
      ),
    );
    expect((await fetch(multi.parts[1].upload_url, { method: "PUT", body: Buffer.alloc(10) })).status).toBe(200);
    await ok(call(base, "VideoService/Delete", { id: multi.video.id }, key));

    // Played as a player does, once ready: the master, its first variant, that variant's first segment.
    const done = await stream(base, "VideoService/Watch", { id: created.video.id }, key);
    const video = done.messages.at(-1)!.body.video;
    expect(video.status).toBe("ready");
    const master = await fetch(video.playback_url);
    expect(master.status).toBe(200);
    const variantUrl = new URL(parseHlsMaster(await master.text()).variants[0]!.uri, video.playback_url);
    const variant = await fetch(variantUrl);
    expect(variant.status).toBe(200);
    const segment = await fetch(new URL(parseHlsMedia(await variant.text()).segments[0]!.uri, variantUrl));
    expect(segment.status).toBe(200);
    const segmentBytes = (await segment.arrayBuffer()).byteLength;
    // Refused: a tampered token (the master, unknown before the token passed, counts as a media playlist), and a file the video does not have.
    const tampered = video.playback_url.replace(/HS256-(.)/, (_: string, c: string) => `HS256-${c === "A" ? "B" : "A"}`);
    expect((await fetch(tampered)).status).toBe(403);
    expect((await fetch(new URL("no-such-file.ts", variantUrl))).status).toBe(404);
    // A video that is not there is refused as any token that does not cover its path, but counted as not found.
    expect((await fetch(video.playback_url.replace(`/play/${video.id}/`, "/play/vid_0000000000000000/"))).status).toBe(403);

    const after = await scrape();
    const moved = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
    expect(moved("media_upload_received_bytes_total", { kind: "single" })).toBe(size);
    expect(moved("media_upload_received_bytes_total", { kind: "multipart" })).toBe(10);
    expect(moved("media_upload_parts_received_total")).toBe(1);
    expect(moved("media_uploads_total", { kind: "single", result: "completed" })).toBe(1);
    expect(moved("media_uploads_total", { kind: "multipart", result: "abandoned" })).toBe(1);
    expect(moved("media_edge_requests_total", { kind: "upload", status_class: "2xx" })).toBe(1);
    expect(moved("media_edge_requests_total", { kind: "upload_part", status_class: "2xx" })).toBe(1);
    expect(moved("media_edge_requests_total", { kind: "master_playlist", status_class: "2xx" })).toBe(1);
    expect(moved("media_edge_requests_total", { kind: "media_playlist", status_class: "2xx" })).toBe(1);
    expect(moved("media_edge_requests_total", { kind: "segment", status_class: "2xx" })).toBe(1);
    expect(moved("media_edge_response_bytes_total", { kind: "segment" })).toBe(segmentBytes);
    expect(moved("media_edge_requests_total", { kind: "segment", status_class: "4xx" })).toBe(1);
    expect(moved("media_edge_requests_total", { kind: "media_playlist", status_class: "4xx" })).toBe(2); // the tampered token's, the missing video's
    expect(moved("media_edge_refusals_total", { reason: "token_signature" })).toBe(1);
    expect(moved("media_edge_refusals_total", { reason: "not_found" })).toBe(2);
    expect(after.types.get("media_edge_requests_total")).toBe("counter");

    // The encoder node and the actors of this process: every stage the upload's encode passed, its speed, the outbox.
    for (const stage of ["fetch", "probe", "encode", "upload"]) expect(moved("media_encode_stage_seconds_count", { stage }), stage).toBeGreaterThan(0);
    const speeds = series(after, "media_encode_realtime_factor_count").filter((s) => s.labels?.codec === "h264" && Number(s.value) > 0);
    expect(speeds.map((s) => s.labels?.height)).toContain("240");
    expect(moved("media_outbox_relay_lag_seconds_count", { entity: "video", kind: "update" })).toBeGreaterThan(0);
    expect(after.types.get("media_encode_realtime_factor")).toBe("histogram");
  }, 120_000);

  it("counts a failed job by its error_code", async () => {
    const text = new TextEncoder().encode("this is text, not a video");
    const created = await ok(
      call(base, "VideoService/CreateUpload", { app_id: h.boot.app_id, filename: "x.mp4", content_type: "video/mp4", size_bytes: text.length }, key),
    );
    const before = await scrape();
    expect((await fetch(created.upload_url, { method: "PUT", body: text })).status).toBe(200);
    await ok(call(base, "VideoService/CompleteUpload", { id: created.video.id }, key));
    const done = await stream(base, "VideoService/Watch", { id: created.video.id }, key);
    expect(done.messages.at(-1)!.body.video.status).toBe("error");
    const failures = (m: Scrape) => value(m, "media_job_failures_total", { outcome: "failed", error_code: "input_invalid" });
    await until("the failed job counted", async () => (failures(await scrape()) === failures(before) + 1 ? true : undefined), 10_000);
    // Every code of the spec's list is there from the start, at 0 until a job fails with it.
    expect(series(before, "media_job_failures_total").some((s) => s.labels?.error_code === "encoder_lost")).toBe(true);
  }, 60_000);
});
