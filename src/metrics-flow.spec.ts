// The flow series: encode speed by codec and height line, the consumer lag summed by topic and
// forgotten with its consumer, uploads, and every bounded label value shown at 0 before its first event.
import { describe, expect, it } from "vitest";
import { consumerLagOf, EDGE_KINDS, EDGE_REFUSALS, ENCODE_STAGES, heightBucket, observeEncodeSpeed, uploadEnded, uploadReceived } from "./metrics-flow.js";
import { metricExists, metricValue as value } from "./metrics.fixtures.js";

describe("flow metrics", () => {
  it("shows every bounded series at 0 before its first event", async () => {
    for (const kind of EDGE_KINDS) {
      expect(await metricExists("media_edge_requests_total", { kind, status_class: "4xx" })).toBe(true);
      expect(await metricExists("media_edge_response_bytes_total", { kind })).toBe(true);
    }
    for (const reason of EDGE_REFUSALS) expect(await metricExists("media_edge_refusals_total", { reason })).toBe(true);
    for (const stage of ENCODE_STAGES) expect(await metricExists("media_encode_stage_seconds_count", { stage })).toBe(true);
    expect(await metricExists("media_encode_realtime_factor_count", { codec: "av1", height: "2160" })).toBe(true);
    expect(await metricExists("media_uploads_total", { kind: "multipart", result: "abandoned" })).toBe(true);
    expect(await metricExists("media_upload_parts_received_total")).toBe(true);
    expect(await metricExists("media_outbox_intents_waiting")).toBe(true);
  });

  it("puts a height on the resolution line at or above it", () => {
    expect([144, 240, 360, 480, 720, 1080, 1088, 1440, 2160, 4320, 8000].map(heightBucket)).toEqual([
      "240",
      "240",
      "360",
      "480",
      "720",
      "1080",
      "1080",
      "1440",
      "2160",
      "4320",
      "4320",
    ]);
  });

  it("observes a command's realtime factor once per rendition it wrote, and nothing for an empty or instant run", async () => {
    const labels = { codec: "vp9", height: "720" };
    const before = { count: await value("media_encode_realtime_factor_count", labels), sum: await value("media_encode_realtime_factor_sum", labels) };
    observeEncodeSpeed(
      [
        { codec: "vp9", height: 720 },
        { codec: "vp9", height: 700 },
        { codec: "vp9", height: 480 },
      ],
      30,
      10,
    );
    observeEncodeSpeed([{ codec: "vp9", height: 720 }], 0, 10);
    observeEncodeSpeed([{ codec: "vp9", height: 720 }], 10, 0);
    expect(await value("media_encode_realtime_factor_count", labels)).toBe(before.count + 2);
    expect(await value("media_encode_realtime_factor_sum", labels)).toBeCloseTo(before.sum + 6);
    expect(await value("media_encode_realtime_factor_count", { codec: "vp9", height: "480" })).toBeGreaterThanOrEqual(1);
  });

  it("sums the consumer lag of a topic over its consumers and partitions, and forgets what a consumer leaves", async () => {
    const lag = () => value("media_bus_consumer_lag_messages", { topic: "lagtest" });
    const a = consumerLagOf({}, "lagtest");
    const b = consumerLagOf({}, "lagtest");
    const other = consumerLagOf({}, "lagother");
    a.set(0, 5);
    a.set(1, 7);
    b.set(0, 3);
    other.set(0, 100);
    expect(await lag()).toBe(15);
    a.set(1, 0);
    expect(await lag()).toBe(8);
    a.keep([1]); // partition 0 moved to another member
    expect(await lag()).toBe(3);
    b.stop();
    expect(await lag()).toBe(0);
    expect(await value("media_bus_consumer_lag_messages", { topic: "lagother" })).toBe(100);
    other.stop();
  });

  it("counts uploaded bytes by kind, parts, and uploads by result", async () => {
    const at = async () => ({
      single: await value("media_upload_received_bytes_total", { kind: "single" }),
      multi: await value("media_upload_received_bytes_total", { kind: "multipart" }),
      parts: await value("media_upload_parts_received_total"),
      completed: await value("media_uploads_total", { kind: "single", result: "completed" }),
    });
    const before = await at();
    uploadReceived("single", 1000);
    uploadReceived("multipart", 10);
    uploadReceived("multipart", 20);
    uploadEnded("single", "completed");
    const after = await at();
    expect(after.single - before.single).toBe(1000);
    expect(after.multi - before.multi).toBe(30);
    expect(after.parts - before.parts).toBe(2);
    expect(after.completed - before.completed).toBe(1);
  });
});
