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
import { infraProvider, kafkaBrokers } from "./endpoints.js";

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const script = path.join(root, "infra/kafka.sh");
const brokers = kafkaBrokers();
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
    const bus = new KafkaBus({ brokers, clientId: `bus-contract-${process.pid}-${++clients}`, log });
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
    const bus = new KafkaBus({ brokers, clientId: `long-handler-${process.pid}`, log, sessionTimeoutMs: 6000 });
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
