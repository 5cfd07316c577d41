// MemoryBus: the bus contract, plus what only the embedded bus promises (Kafka-identical
// partitioning, no re-entrant delivery, bounded memory, backoff, draining rebalances).
import kafkajs from "kafkajs";
import { describe, expect, it } from "vitest";
import { busContract } from "./bus-contract.js";
import { MemoryBus } from "./memory-bus.js";
import { murmur2, partitionFor } from "./port.js";
import type { BusMessage } from "./port.js";

busContract("MemoryBus", async () => {
  const bus = new MemoryBus();
  await bus.start();
  return bus;
});

const enc = new TextEncoder();
const dec = new TextDecoder();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error("timed out");
    await sleep(5);
  }
}

async function started(options?: ConstructorParameters<typeof MemoryBus>[0]) {
  const bus = new MemoryBus(options);
  await bus.start();
  return bus;
}

describe("MemoryBus", () => {
  it("partitions exactly like kafkajs's (and the Java client's) default partitioner", () => {
    const kafkaPartition = kafkajs.Partitioners.DefaultPartitioner();
    const keys = ["", "a", "ab", "abc", "abcd", "abcde", "job_01HZY", "vid_Ω≈ç√", "🎬 emoji", ...range(2000).map((i) => `key-${i}-${(i * 2654435761) % 1e9}`)];
    for (const partitions of [1, 3, 4, 12, 50]) {
      const metadata = range(partitions).map((partitionId) => ({ partitionId, leader: 1 }));
      for (const key of keys) {
        const expected = kafkaPartition({ topic: "t", partitionMetadata: metadata as never, message: { key, value: null } });
        expect(partitionFor(key, partitions), `${key} / ${partitions}`).toBe(expected);
      }
    }
    // Reference values of org.apache.kafka.common.utils.Utils#murmur2.
    expect(murmur2(enc.encode("21"))).toBe(-973932308);
    expect(murmur2(enc.encode("foobar"))).toBe(-790332482);
  });

  it("never runs a handler inside publish", async () => {
    const bus = await started();
    await bus.ensureTopics([{ topic: "t", partitions: 2 }]);
    const seenInside: boolean[] = [];
    let inside = false;
    await bus.consume({ topic: "t", group: "g", handler: async () => void seenInside.push(inside) });
    inside = true;
    const published = bus.publish("t", [{ key: "k", value: enc.encode("v") }]);
    inside = false;
    await published;
    await until(() => seenInside.length === 1);
    expect(seenInside).toEqual([false]);
    await bus.close();
  });

  it("backs off a failing handler (100 ms doubling to 1 s), while other partitions flow", async () => {
    const bus = await started();
    await bus.ensureTopics([{ topic: "t", partitions: 4 }]);
    const attempts: number[] = [];
    const others: string[] = [];
    const t0 = Date.now();
    await bus.consume({
      topic: "t",
      group: "g",
      handler: async (m) => {
        if (m.key === "poison") {
          attempts.push(Date.now() - t0);
          throw new Error("always");
        }
        others.push(m.key);
      },
    });
    const other = range(50)
      .map((i) => `o${i}`)
      .filter((k) => partitionFor(k, 4) !== partitionFor("poison", 4));
    await bus.publish("t", [{ key: "poison", value: enc.encode("x") }]);
    await sleep(50);
    await bus.publish(
      "t",
      other.map((key) => ({ key, value: enc.encode(key) })),
    );
    await until(() => others.length === other.length);
    await sleep(2600);
    // attempts at ~0, 100, 300, 700, 1500, 2500 ms
    expect(attempts.length).toBeGreaterThanOrEqual(5);
    expect(attempts.length).toBeLessThanOrEqual(7);
    const gaps = attempts.slice(1).map((a, i) => a - attempts[i]!);
    expect(gaps[0]).toBeGreaterThanOrEqual(90);
    expect(Math.max(...gaps)).toBeLessThan(1600); // 1000 ms nominal, with room for a loaded machine
    await bus.close(); // does not hang on the retry loop
  });

  it("rebalances only after the moving partition's in-flight handler finished (one owner at a time)", async () => {
    const bus = await started();
    await bus.ensureTopics([{ topic: "t", partitions: 1 }]);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const log: string[] = [];
    const a = await bus.consume({
      topic: "t",
      group: "g",
      handler: async (m) => {
        log.push(`a:${dec.decode(m.value)}:start`);
        if (dec.decode(m.value) === "1") await gate;
        log.push(`a:${dec.decode(m.value)}:end`);
      },
    });
    await bus.publish(
      "t",
      ["1", "2"].map((v) => ({ key: "k", value: enc.encode(v) })),
    );
    await until(() => log.length === 1);
    let stopped = false;
    const stopping = a.stop().then(() => (stopped = true));
    const bAssigned: number[][] = [];
    const joining = bus.consume({
      topic: "t",
      group: "g",
      handler: async (m) => void log.push(`b:${dec.decode(m.value)}`),
      onAssigned: (p) => bAssigned.push([...p]),
    });
    await sleep(50);
    expect(stopped).toBe(false);
    expect(bAssigned).toEqual([]);
    release();
    await stopping;
    await joining;
    await until(() => log.includes("b:2"));
    expect(log).toEqual(["a:1:start", "a:1:end", "b:2"]);
    await bus.close();
  });

  it("keeps a topic's log while nobody reads it, and cuts it below the slowest group's offset", async () => {
    const bus = await started();
    await bus.ensureTopics([{ topic: "t", partitions: 1 }]);
    await bus.publish(
      "t",
      range(10).map((i) => ({ key: "k", value: enc.encode(`${i}`) })),
    );
    const first: BusMessage[] = [];
    const c = await bus.consume({ topic: "t", group: "g1", handler: async (m) => void first.push(m) });
    await until(() => first.length === 10); // the history was kept for the first reader
    await c.stop();
    const late: BusMessage[] = [];
    await bus.consume({ topic: "t", group: "g2", handler: async (m) => void late.push(m) });
    await sleep(30);
    expect(late).toEqual([]); // handled by every group, so truncated
    await bus.publish("t", [{ key: "k", value: enc.encode("10") }]);
    await until(() => late.length === 1);
    expect(late[0]!.offset).toBe("10"); // offsets keep counting after truncation
    await bus.close();
  });

  it("bounds a partition by maxRetainedPerPartition; a group left behind resumes at the log start", async () => {
    const bus = await started({ maxRetainedPerPartition: 5 });
    await bus.ensureTopics([{ topic: "t", partitions: 1 }]);
    await bus.publish(
      "t",
      range(20).map((i) => ({ key: "k", value: enc.encode(`${i}`) })),
    );
    const got: BusMessage[] = [];
    await bus.consume({ topic: "t", group: "g", handler: async (m) => void got.push(m) });
    await until(() => got.length === 5);
    expect(got.map((m) => m.offset)).toEqual(["15", "16", "17", "18", "19"]);
    await bus.close();
  });

  it("expires the offsets of a group that stayed empty, so it no longer holds the log", async () => {
    const bus = await started({ emptyGroupRetentionMs: 0 });
    await bus.ensureTopics([{ topic: "t", partitions: 1 }]);
    const a: BusMessage[] = [];
    const b: BusMessage[] = [];
    const ca = await bus.consume({ topic: "t", group: "a", handler: async (m) => void a.push(m) });
    await bus.consume({ topic: "t", group: "b", handler: async (m) => void b.push(m) });
    await bus.publish("t", [{ key: "k", value: enc.encode("0") }]);
    await until(() => a.length === 1 && b.length === 1);
    await ca.stop();
    await bus.publish(
      "t",
      range(5).map((i) => ({ key: "k", value: enc.encode(`${i + 1}`) })),
    );
    await until(() => b.length === 6);
    const again: BusMessage[] = [];
    await bus.consume({ topic: "t", group: "a", handler: async (m) => void again.push(m) });
    await sleep(30);
    expect(again).toEqual([]); // like Kafka after offsets.retention: the missed messages are gone
    await bus.close();
  });

  it("copies published values, refuses unknown topics, and refuses work after close", async () => {
    const bus = await started();
    await expect(bus.publish("nope", [{ key: "k", value: enc.encode("v") }])).rejects.toThrow(/unknown topic/);
    await expect(bus.consume({ topic: "nope", group: "g", handler: async () => {} })).rejects.toThrow(/unknown topic/);
    await expect(bus.ensureTopics([{ topic: "bad", partitions: 0 }])).rejects.toThrow(RangeError);
    await bus.ensureTopics([{ topic: "t", partitions: 1 }]);
    const value = enc.encode("before");
    const got: string[] = [];
    await bus.publish("t", [{ key: "k", value }]);
    value.set(enc.encode("AFTER!"));
    await bus.consume({ topic: "t", group: "g", handler: async (m) => void got.push(dec.decode(m.value)) });
    await until(() => got.length === 1);
    expect(got).toEqual(["before"]);
    await bus.close();
    expect((await bus.health()).ok).toBe(false);
    await expect(bus.publish("t", [{ key: "k", value }])).rejects.toThrow(/closed/);
  });
});
