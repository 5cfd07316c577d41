// KafkaBus against a real single-node Kafka (infra/kafka.sh): the bus contract, and fail-fast start.
// Starts the broker when it is not running, and stops it again afterwards in that case.
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busContract } from "../../src/bus/bus-contract.js";
import { KafkaBus } from "../../src/bus/kafka-bus.js";
import { ConfigError } from "../../src/config.js";
import { createLogger } from "../../src/log.js";
import { metricValue } from "../../src/metrics.fixtures.js";
import { infraProvider, kafkaPeer, kafkajsOptions } from "./endpoints.js";

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const script = path.join(root, "infra/kafka.sh");
let startedHere = false;

beforeAll(async () => {
  if (infraProvider() === "containers") return; // the global setup started it
  const running = await run("bash", [script, "status"], { cwd: root }).then(
    () => true,
    () => false,
  );
  if (!running) {
    await run("bash", [script, "up"], { cwd: root, timeout: 150_000 });
    startedHere = true;
  }
}, 160_000);

afterAll(async () => {
  if (startedHere) await run("bash", [script, "down"], { cwd: root, timeout: 60_000 });
}, 70_000);

// kafkajs's errors reach the test output (MEDIA_LOG_LEVEL=debug shows all of its logging).
const log = createLogger(process.env.MEDIA_LOG_LEVEL ?? "warn");
let clients = 0;
busContract(
  "KafkaBus",
  async () => {
    const bus = new KafkaBus({ ...kafkaPeer(), clientId: `bus-contract-${process.pid}-${++clients}`, log });
    await bus.start();
    return bus;
  },
  { timeoutMs: 30_000, settleMs: 1500 },
);

describe("KafkaBus start", () => {
  it("fails fast with a ConfigError naming MEDIA_KAFKA_BROKERS when no broker answers", async () => {
    const bus = new KafkaBus({ brokers: ["127.0.0.1:1"], clientId: "unreachable" });
    const t0 = Date.now();
    const error = await bus.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).setting).toBe("MEDIA_KAFKA_BROKERS");
    expect((error as Error).message).toMatch(/127\.0\.0\.1:1/);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await bus.health()).ok).toBe(false);
    await bus.close();
  }, 20_000);
});

describe("KafkaBus long handlers", () => {
  it("keeps a member whose handler runs past the session timeout (an encode): no rebalance, no redelivery", async () => {
    const bus = new KafkaBus({ ...kafkaPeer(), clientId: `long-handler-${process.pid}`, log, sessionTimeoutMs: 6000 });
    await bus.start();
    const topic = `media.test.long-handler-${process.pid}-${Date.now()}`;
    try {
      await bus.ensureTopics([{ topic, partitions: 1 }]);
      const deliveries: string[] = [];
      const assignments: number[][] = [];
      let finished!: () => void;
      const done = new Promise<void>((r) => (finished = r));
      const consumer = await bus.consume({
        topic,
        group: `${topic}-encoders`,
        onAssigned: (p) => assignments.push([...p]),
        handler: async (m) => {
          deliveries.push(m.offset);
          // Twice the session timeout: only heartbeats sent during the handler keep the member.
          await new Promise((r) => setTimeout(r, 12_000));
          finished();
        },
      });
      await bus.publish(topic, [{ key: "job_1", value: new TextEncoder().encode("task") }]);
      await done;
      await new Promise((r) => setTimeout(r, 3000));
      await consumer.stop();
      expect(deliveries).toEqual(["0"]);
      expect(assignments.filter((a) => a.length > 0)).toHaveLength(1);
    } finally {
      await bus.close();
    }
  }, 60_000);
});

describe("KafkaBus byKey", () => {
  const until = async (check: () => boolean, ms: number, what: string) => {
    for (const end = Date.now() + ms; !check();) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const text = (v: string) => new TextEncoder().encode(v);
  /** A fresh topic of one partition and a group for it. */
  const oneTopic = async (bus: KafkaBus, name: string) => {
    const topic = `${name}-${Date.now()}`;
    await bus.ensureTopics([{ topic, partitions: 1 }]);
    return { topic, group: `${topic}-g` };
  };

  it("handles the keys of one partition side by side, each in order, and commits only what every earlier message reached", async () => {
    const bus = new KafkaBus({ ...kafkaPeer(), clientId: `by-key-${process.pid}`, log });
    await bus.start();
    const { topic, group } = await oneTopic(bus, "by-key");
    const done: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let failures = 1;
    const consumer = await bus.consume({
      topic,
      group,
      byKey: true,
      handler: async (m) => {
        const v = new TextDecoder().decode(m.value);
        if (v === "slow0") await held; // key "slow" waits; the others must not
        if (v === "flaky0" && failures-- > 0) throw new Error("first attempt fails");
        done.push(v);
      },
    });
    await bus.publish(topic, [
      { key: "slow", value: text("slow0") },
      { key: "slow", value: text("slow1") },
      { key: "fast", value: text("fast0") },
      { key: "flaky", value: text("flaky0") },
      { key: "fast", value: text("fast1") },
      { key: "flaky", value: text("flaky1") },
    ]);
    await until(() => done.length >= 4, 20_000, "the keys behind the held one");
    expect(done).not.toContain("slow0");
    expect(done.filter((v) => v.startsWith("fast"))).toEqual(["fast0", "fast1"]);
    expect(done.filter((v) => v.startsWith("flaky"))).toEqual(["flaky0", "flaky1"]); // retried, in order
    // Nothing is committed past the held message (offset 0): a new member of the group gets it all again.
    await new Promise((r) => setTimeout(r, 500));
    release();
    await until(() => done.length === 6, 20_000, "the held key");
    expect(done.filter((v) => v.startsWith("slow"))).toEqual(["slow0", "slow1"]);
    await consumer.stop();
    // Everything handled and committed: a new member of the group gets nothing.
    const again: string[] = [];
    const second = await bus.consume({ topic, group, byKey: true, handler: async (m) => void again.push(new TextDecoder().decode(m.value)) });
    await bus.publish(topic, [{ key: "after", value: text("after0") }]);
    await until(() => again.length >= 1, 20_000, "the message after");
    expect(again).toEqual(["after0"]);
    await second.stop();
    await bus.close();
  }, 90_000);

  it("keeps an offset uncommitted while an earlier message of another key is unhandled", async () => {
    const bus = new KafkaBus({ ...kafkaPeer(), clientId: `by-key-mark-${process.pid}`, log, commitIntervalMs: 20 });
    await bus.start();
    const { topic, group } = await oneTopic(bus, "by-key-mark");
    const done: string[] = [];
    const consumer = await bus.consume({
      topic,
      group,
      byKey: true,
      handler: async (m) => {
        const v = new TextDecoder().decode(m.value);
        if (v === "stuck") await new Promise(() => undefined); // never handled in this member
        done.push(v);
      },
    });
    await bus.publish(topic, [
      { key: "a", value: text("stuck") },
      { key: "b", value: text("b0") },
      { key: "c", value: text("c0") },
    ]);
    await until(() => done.length === 2, 20_000, "the others");
    await new Promise((r) => setTimeout(r, 300)); // commits of the marks so far
    const admin = new (await import("kafkajs")).default.Kafka({ ...kafkajsOptions("by-key-admin"), logLevel: 0 }).admin();
    await admin.connect();
    const [offsets] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    await admin.disconnect();
    // Offset 0 ("stuck") is not handled: the group's committed offset may not pass it.
    expect(Number(offsets!.partitions[0]!.offset)).toBeLessThanOrEqual(0);
    void consumer.stop();
    await bus.close().catch(() => undefined);
  }, 90_000);
});

describe("KafkaBus consumer lag", () => {
  it("shows the messages behind the high watermark as of each fetched batch, by topic without its prefix", async () => {
    const bus = new KafkaBus({ ...kafkaPeer(), clientId: `lag-${process.pid}`, log });
    await bus.start();
    const topic = `lag-${process.pid}-${Date.now()}.lagged`;
    await bus.ensureTopics([{ topic, partitions: 1 }]);
    const lag = () => metricValue("media_bus_consumer_lag_messages", { topic: "lagged" });
    const waitFor = async (want: number, what: string) => {
      for (const end = Date.now() + 20_000; (await lag()) !== want;) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}: the lag is ${await lag()}, not ${want}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const text = (v: string) => new TextEncoder().encode(v);
    // 25 messages wait before the consumer starts (a consumer that was down); it holds the first, then one later.
    await bus.publish(
      topic,
      Array.from({ length: 25 }, (_, i) => ({ key: `k${i}`, value: text(`m${i}`) })),
    );
    const gates = new Map<string, () => void>();
    const held = (v: string) => new Promise<void>((r) => gates.set(v, r));
    let handled = 0;
    const consumer = await bus.consume({
      topic,
      group: `${topic}-g`,
      handler: async (m) => {
        const v = new TextDecoder().decode(m.value);
        if (v === "m0" || v === "hold") await held(v);
        handled++;
      },
    });
    await waitFor(25, "the backlog");
    gates.get("m0")!();
    await waitFor(0, "the backlog handled");
    expect(handled).toBe(25);
    // Five more while the consumer is caught up: it holds the first of them.
    await bus.publish(topic, [{ key: "h", value: text("hold") }, ...Array.from({ length: 4 }, (_, i) => ({ key: `n${i}`, value: text(`n${i}`) }))]);
    await waitFor(5, "the five behind the held one");
    gates.get("hold")!();
    await waitFor(0, "the five handled");
    await consumer.stop();
    await bus.close();
  }, 90_000);
});

describe("KafkaBus requests", () => {
  it("counts the requests it sends to the broker by API, so messages per Produce and per Fetch can be read off", async () => {
    const bus = new KafkaBus({ ...kafkaPeer(), clientId: `requests-${process.pid}`, log });
    await bus.start();
    const topic = `requests-${process.pid}-${Date.now()}.counted`;
    await bus.ensureTopics([{ topic, partitions: 1 }]);
    const requests = async (api: string) => (await metricValue("media_kafka_requests_total", { api })) ?? 0;
    const before = { produce: await requests("Produce"), fetch: await requests("Fetch"), metadata: await requests("Metadata") };
    // 40 publishes at once: one goes out, the rest wait for it and go together.
    const text = (v: string) => new TextEncoder().encode(v);
    await Promise.all(Array.from({ length: 40 }, (_, i) => bus.publish(topic, [{ key: `k${i}`, value: text(`m${i}`) }])));
    const produced = (await requests("Produce")) - before.produce;
    expect(produced).toBeGreaterThanOrEqual(1);
    expect(produced).toBeLessThan(40);
    let handled = 0;
    const consumer = await bus.consume({ topic, group: `${topic}-g`, handler: async () => void handled++ });
    for (const end = Date.now() + 20_000; handled < 40; await new Promise((r) => setTimeout(r, 20))) {
      if (Date.now() > end) throw new Error(`handled ${handled} of 40`);
    }
    expect((await requests("Fetch")) - before.fetch).toBeGreaterThanOrEqual(1);
    expect(await requests("Metadata")).toBeGreaterThan(before.metadata);
    await consumer.stop();
    await bus.close();
  }, 60_000);
});

describe("KafkaBus lingering", () => {
  const text = (v: string) => new TextEncoder().encode(v);
  const produces = async () => (await metricValue("media_kafka_requests_total", { api: "Produce" })) ?? 0;
  /** Sends one publish into the idle producer, then 30 more, one every 0.5 ms, while it is in flight: how many Produce requests carried them. */
  const burst = async (lingerMs: number) => {
    const bus = new KafkaBus({ ...kafkaPeer(), clientId: `linger-${process.pid}-${lingerMs}`, lingerMs, log });
    await bus.start();
    const topic = `linger-${process.pid}-${lingerMs}-${Date.now()}.lingered`;
    await bus.ensureTopics([{ topic, partitions: 1 }]);
    await bus.publish(topic, [{ key: "warm", value: text("warm") }]); // connections and metadata in place
    const before = await produces();
    const t0 = performance.now();
    const first = bus.publish(topic, [{ key: "first", value: text("first") }]).then(() => performance.now() - t0);
    const rest: Promise<void>[] = [];
    for (let i = 0; i < 30; i++) {
      rest.push(bus.publish(topic, [{ key: `k${i}`, value: text(`m${i}`) }]));
      await new Promise((r) => setTimeout(r, 0.5));
    }
    const firstMs = await first;
    await Promise.all(rest);
    const requests = (await produces()) - before;
    await bus.close();
    return { firstMs, requests };
  };

  it("sends a publish into an idle producer at once, and gathers those that arrive while a send is in flight for lingerMs", async () => {
    const lingering = await burst(300);
    // The first went alone, without waiting; the 30 behind it waited 300 ms and went together.
    expect(lingering.firstMs).toBeLessThan(250);
    expect(lingering.requests).toBe(2);
    // Without lingering the same burst takes a request per send's round trip.
    const eager = await burst(0);
    expect(eager.requests).toBeGreaterThan(2);
  }, 60_000);
});
