// The metrics: the store and bus wrappers time every operation and count failures, keep the port's
// promises (the contracts pass through them), and label topics without the deployment prefix.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { busContract } from "./bus/bus-contract.js";
import { MemoryBus } from "./bus/memory-bus.js";
import type { Bus, BusMessage } from "./bus/port.js";
import { VersionConflict } from "./errors.js";
import {
  encoderActivity,
  knowJobErrorCodes,
  metricsRegistry,
  observeJobEnded,
  registerStoreGauges,
  timedBus,
  timedStore,
  topicLabel,
  watchOpened,
  type EncoderNodeRow,
  type QueueSummary,
} from "./metrics.js";
import { metricExists, metricValue as value } from "./metrics.fixtures.js";
import { FileStore } from "./store/file-store.js";
import type { StoredRecord, Store } from "./store/port.js";
import { storeContract, type ContractStore } from "./store/store-contract.js";

async function openedFileStore(dir = mkdtempSync(path.join(tmpdir(), "metrics-store-"))): Promise<ContractStore> {
  const store = new FileStore(dir);
  await store.open();
  const timed = timedStore(store);
  return Object.assign(timed, {
    reopen: async () => {
      await timed.close();
      return openedFileStore(dir);
    },
  });
}

storeContract("timedStore(FileStore)", () => openedFileStore());

busContract("timedBus(MemoryBus)", async () => {
  const bus = timedBus(new MemoryBus());
  await bus.start();
  return bus;
});

/** A store whose operations answer what the test says. */
function scripted(over: Partial<Store> = {}): Store {
  const nothing = async () => undefined;
  return {
    open: nothing,
    close: nothing,
    health: async () => ({ ok: true }),
    get: async () => undefined,
    commit: nothing,
    events: async () => [],
    latestSnapshot: async () => undefined,
    saveSnapshot: nothing,
    scan: async () => ({ items: [], more: false, total: 0 }),
    ...over,
  };
}

describe("timedStore", () => {
  it("times each operation under its name and counts failures, but not lost conditions", async () => {
    let fail: Error | undefined;
    const store = timedStore(
      scripted({
        commit: async () => {
          if (fail) throw fail;
        },
      }),
    );
    const before = {
      get: await value("media_store_operation_seconds_count", { operation: "get" }),
      commit: await value("media_store_operation_seconds_count", { operation: "commit" }),
      errors: await value("media_store_errors_total", { operation: "commit" }),
    };
    await store.get("t", "a");
    await store.get("t", "b");
    await store.scan("t", "p", { limit: 1 });
    await store.events("k", 0);
    await store.latestSnapshot("k");
    await store.saveSnapshot({ key: "k", seq: 1, data: {}, createdAt: 0 });
    await store.commit({});
    fail = new VersionConflict("k", 1, 2);
    await expect(store.commit({})).rejects.toBeInstanceOf(VersionConflict);
    fail = new Error("connection lost");
    await expect(store.commit({})).rejects.toThrow("connection lost");
    expect(await value("media_store_operation_seconds_count", { operation: "get" })).toBe(before.get + 2);
    expect(await value("media_store_operation_seconds_count", { operation: "commit" })).toBe(before.commit + 3);
    expect(await value("media_store_errors_total", { operation: "commit" })).toBe(before.errors + 1);
    for (const operation of ["scan", "events", "latestSnapshot", "saveSnapshot"])
      expect(await value("media_store_operation_seconds_count", { operation })).toBeGreaterThan(0);
  });

  it("records the time an operation took", async () => {
    const store = timedStore(scripted({ latestSnapshot: () => new Promise((r) => setTimeout(() => r(undefined), 30)) }));
    const before = await value("media_store_operation_seconds_sum", { operation: "latestSnapshot" });
    await store.latestSnapshot("slow");
    expect(await value("media_store_operation_seconds_sum", { operation: "latestSnapshot" })).toBeGreaterThanOrEqual(before + 0.025);
  });

  it("keeps orderedCommits as the adapter says it", () => {
    expect(timedStore(scripted({ orderedCommits: true })).orderedCommits).toBe(true);
    expect(timedStore(scripted()).orderedCommits).toBeUndefined();
  });
});

describe("timedBus", () => {
  it("labels topics without the deployment prefix", () => {
    expect(topicLabel("media.commands")).toBe("commands");
    expect(topicLabel("test_abc.commands")).toBe("commands");
    expect(topicLabel("media.media_test_0123.actor-hosts")).toBe("actor-hosts");
    expect(topicLabel("plain")).toBe("plain");
  });

  it("times publishes and handlers by topic and counts failed publishes", async () => {
    let fail = false;
    let handler: ((m: BusMessage) => Promise<void>) | undefined;
    const inner: Bus = {
      start: async () => undefined,
      close: async () => undefined,
      health: async () => ({ ok: true }),
      ensureTopics: async () => undefined,
      publish: async () => {
        if (fail) throw new Error("broker down");
      },
      consume: async (options) => {
        handler = options.handler;
        return { stop: async () => undefined };
      },
    };
    const bus = timedBus(inner);
    const before = {
      published: await value("media_bus_publish_seconds_count", { topic: "updates" }),
      errors: await value("media_bus_publish_errors_total", { topic: "updates" }),
      handled: await value("media_bus_handler_seconds_count", { topic: "updates" }),
    };
    await bus.publish("test_abc.updates", [{ key: "k", value: new Uint8Array() }]);
    fail = true;
    await expect(bus.publish("media.updates", [])).rejects.toThrow("broker down");
    let seen: string | undefined;
    await bus.consume({ topic: "media.updates", group: "g", handler: async (m) => void (seen = m.key) });
    await handler!({ topic: "media.updates", partition: 0, offset: "0", key: "k1", value: new Uint8Array(), headers: {} });
    expect(seen).toBe("k1");
    expect(await value("media_bus_publish_seconds_count", { topic: "updates" })).toBe(before.published + 2);
    expect(await value("media_bus_publish_errors_total", { topic: "updates" })).toBe(before.errors + 1);
    expect(await value("media_bus_handler_seconds_count", { topic: "updates" })).toBe(before.handled + 1);
  });
});

describe("process metrics", () => {
  it("observes a job's duration by outcome and ignores a status that is not an end", async () => {
    const before = {
      completed: await value("media_job_duration_seconds_count", { outcome: "completed" }),
      sum: await value("media_job_duration_seconds_sum", { outcome: "completed" }),
    };
    observeJobEnded({ status: "completed", createdAt: 1_000, completedAt: 61_000 });
    observeJobEnded({ status: "processing", createdAt: 1_000 });
    expect(await value("media_job_duration_seconds_count", { outcome: "completed" })).toBe(before.completed + 1);
    expect(await value("media_job_duration_seconds_sum", { outcome: "completed" })).toBeCloseTo(before.sum + 60);
    expect(await value("media_job_duration_seconds_count", { outcome: "processing" })).toBe(0);
  });

  it("counts failed and partial jobs by error_code, and each failed output by its own; codes outside the list as other", async () => {
    knowJobErrorCodes(["encode_failed", "input_invalid", "internal"]);
    // Known codes show at 0 before any job failed, so rate() sees them.
    expect(await metricExists("media_job_failures_total", { outcome: "partial", error_code: "input_invalid" })).toBe(true);
    expect(await metricExists("media_job_output_failures_total", { error_code: "other" })).toBe(true);
    const at = async () => ({
      failed: await value("media_job_failures_total", { outcome: "failed", error_code: "input_invalid" }),
      partial: await value("media_job_failures_total", { outcome: "partial", error_code: "encode_failed" }),
      other: await value("media_job_failures_total", { outcome: "failed", error_code: "other" }),
      outputs: await value("media_job_output_failures_total", { error_code: "encode_failed" }),
      completed: await value("media_job_output_failures_total", { error_code: "internal" }),
    });
    const before = await at();
    observeJobEnded({ status: "failed", createdAt: 0, errorCode: "input_invalid", outputs: [] });
    // A partial job without a code of its own: its first failed output's.
    observeJobEnded({
      status: "partial",
      createdAt: 0,
      outputs: [{ status: "completed" }, { status: "failed", errorCode: "encode_failed" }, { status: "failed", errorCode: "encode_failed" }],
    });
    observeJobEnded({ status: "failed", createdAt: 0, errorCode: "made_up_code" });
    observeJobEnded({ status: "completed", createdAt: 0, outputs: [{ status: "completed" }] });
    const after = await at();
    expect(after.failed - before.failed).toBe(1);
    expect(after.partial - before.partial).toBe(1);
    expect(after.other - before.other).toBe(1);
    expect(after.outputs - before.outputs).toBe(2);
    expect(after.completed - before.completed).toBe(0);
  });

  it("marks an encoder busy while a task runs and adds its busy seconds, during the task too", async () => {
    const node = encoderActivity("large");
    expect(await value("media_encoder_busy", { class: "large" })).toBe(0);
    const idle = node.start();
    expect(await value("media_encoder_busy", { class: "large" })).toBe(1);
    await new Promise((r) => setTimeout(r, 40));
    const during = await value("media_encoder_busy_seconds_total", { class: "large" });
    expect(during).toBeGreaterThanOrEqual(0.03);
    await new Promise((r) => setTimeout(r, 20));
    idle();
    idle(); // a second call changes nothing
    expect(await value("media_encoder_busy", { class: "large" })).toBe(0);
    const after = await value("media_encoder_busy_seconds_total", { class: "large" });
    expect(after).toBeGreaterThanOrEqual(during + 0.015);
    await new Promise((r) => setTimeout(r, 20));
    expect(await value("media_encoder_busy_seconds_total", { class: "large" })).toBe(after);
  });

  it("counts open Watch streams", async () => {
    const before = await value("media_watch_streams_open", { resource: "video" });
    const closed = watchOpened("video");
    expect(await value("media_watch_streams_open", { resource: "video" })).toBe(before + 1);
    closed();
    closed();
    expect(await value("media_watch_streams_open", { resource: "video" })).toBe(before);
  });

  it("reads the encode queue gauges from the store, zero when the scheduler has written nothing", async () => {
    const now = Date.now();
    const summary: QueueSummary = {
      at: now,
      priorities: {
        premium: { depth: 2, oldestEnqueuedAt: now - 90_000 },
        standard: { depth: 0, oldestEnqueuedAt: 0 },
        economy: { depth: 7, oldestEnqueuedAt: now - 5_000 },
      },
      leases: { small: 0, standard: 3, large: 1 },
    };
    const row = (nodeId: string, cls: EncoderNodeRow["class"]): StoredRecord<EncoderNodeRow> => ({
      id: nodeId,
      version: 1,
      partition: "all",
      sort: nodeId,
      expiresAt: 0,
      value: { nodeId, class: cls, busy: false, at: now },
    });
    let stored: QueueSummary | undefined = summary;
    const asked: string[] = [];
    const store = scripted({
      get: async <T>(table: string, id: string) => {
        asked.push(`${table}/${id}`);
        return (stored ? { id, version: 1, partition: "", sort: "", expiresAt: 0, value: stored } : undefined) as StoredRecord<T> | undefined;
      },
      scan: async <T>(table: string, partition: string) => {
        asked.push(`${table}/${partition}`);
        const items = stored ? [row("n1", "standard"), row("n2", "standard"), row("n3", "large")] : [];
        return { items: items as unknown as StoredRecord<T>[], more: false, total: items.length };
      },
    });
    const stop = registerStoreGauges(store);
    try {
      expect(await value("media_encode_queue_depth", { priority: "economy" })).toBe(7);
      expect(await value("media_encode_queue_depth", { priority: "standard" })).toBe(0);
      expect(await value("media_encode_queue_oldest_age_seconds", { priority: "premium" })).toBeGreaterThanOrEqual(90);
      expect(await value("media_encode_queue_oldest_age_seconds", { priority: "standard" })).toBe(0);
      expect(await value("media_encode_leases", { class: "standard" })).toBe(3);
      expect(await value("media_encoder_nodes", { class: "standard" })).toBe(2);
      expect(await value("media_encoder_nodes", { class: "small" })).toBe(0);
      expect(asked).toContain("encode_queue/summary");
      expect(asked).toContain("encoder_nodes/all");

      stored = undefined;
      registerStoreGauges(store); // a fresh registration reads again at once
      expect(await value("media_encode_queue_depth", { priority: "economy" })).toBe(0);
      expect(await value("media_encode_queue_oldest_age_seconds", { priority: "premium" })).toBe(0);
      expect(await value("media_encoder_nodes", { class: "large" })).toBe(0);
    } finally {
      stop();
    }
  });

  it("serves the whole registry in the text format", async () => {
    const text = await metricsRegistry().metrics();
    expect(text).toContain("# TYPE media_rpc_requests_total counter");
    expect(text).toContain("# TYPE media_store_operation_seconds histogram");
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
  });
});
