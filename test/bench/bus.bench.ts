// Request and reply over Kafka through KafkaBus, as a gateway asks an actor host: a command
// published to a partitioned topic, handled by a consumer that publishes a reply, the reply read by
// the asker. 16 askers at once, closed loop, with the producers' linger off (0, the default) and on
// (3 ms), the two alternating on the same broker so the machine's noise falls on both.
//
// Per round trip: this process's CPU (both buses), the broker's CPU (its JIT compiler apart), and
// the Kafka requests sent by API. `npm run bench:bus`; BENCH_PAIRS (default 3), BENCH_SECONDS
// (default 8), BENCH_LINGER (default 3). Results in test/bench/results/bus-<date>.json.
import { execFileSync, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { KafkaBus } from "../../src/bus/kafka-bus.js";
import { partitionFor } from "../../src/bus/port.js";
import { metricsRegistry } from "../../src/metrics.js";
import { ROOT } from "../harness.js";
import { cpuMs, jvmThreadsMs } from "./proc-cpu.js";

const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const LINGER = Number(process.env.BENCH_LINGER ?? 3);
const ASKERS = 16;
const COMMAND_PARTITIONS = 12;
const REPLY_PARTITIONS = 16;
const BROKER = `127.0.0.1:${process.env.KAFKA_PORT ?? "9092"}`;
const INFRA_DIR = process.env.MEDIA_INFRA_DIR ?? path.join(ROOT, ".infra");
const script = path.join(ROOT, "infra", "kafka.sh");

/** The broker's CPU ms, and of it its JIT compiler threads'. */
const brokerMs = (pid: number) => ({ all: cpuMs(pid), jit: jvmThreadsMs("kafka", pid)["kafka: jit"]! });
async function kafkaRequests(): Promise<Map<string, number>> {
  const metric = (await metricsRegistry().getMetricsAsJSON()).find((m) => m.name === "media_kafka_requests_total");
  return new Map((metric?.values ?? []).map((v) => [String(v.labels.api), v.value]));
}

interface Phase {
  linger: number;
  round_trips_per_s: number;
  p50_ms: number;
  p99_ms: number;
  process_us: number;
  broker_us: number;
  broker_jit_us: number;
  requests: Record<string, number>;
}

async function phase(linger: number, prefix: string, brokerPid: number): Promise<Phase> {
  const asker = new KafkaBus({ brokers: [BROKER], clientId: `bench-asker-${linger}`, lingerMs: linger });
  const host = new KafkaBus({ brokers: [BROKER], clientId: `bench-host-${linger}`, lingerMs: linger });
  await Promise.all([asker.start(), host.start()]);
  const commands = `${prefix}.commands`;
  const replies = `${prefix}.replies`;
  await host.ensureTopics([
    { topic: commands, partitions: COMMAND_PARTITIONS },
    { topic: replies, partitions: REPLY_PARTITIONS },
  ]);
  const askerId = `asker-${linger}`;
  const pending = new Map<string, () => void>();
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const hostConsumer = await host.consume({
    topic: commands,
    group: `${commands}-hosts`,
    byKey: true,
    fromLatest: true,
    handler: async (m) => host.publish(replies, [{ key: askerId, value: m.value }]),
  });
  const replyConsumer = await asker.consume({
    topic: replies,
    group: `${replies}-${askerId}`,
    fromLatest: true,
    only: (n) => [partitionFor(askerId, n)],
    handler: async (m) => pending.get(decoder.decode(m.value))?.(),
  });
  const ask = () => {
    const id = randomUUID();
    const answered = new Promise<void>((resolve) => pending.set(id, resolve));
    return asker.publish(commands, [{ key: id, value: encoder.encode(id) }]).then(() => answered.finally(() => pending.delete(id)));
  };
  // Until both consumers have their partitions, and JIT on the hot path.
  for (const end = Date.now() + 3000; Date.now() < end;) await Promise.race([ask(), new Promise((r) => setTimeout(r, 1000))]);
  const samples: number[] = [];
  const before = { self: cpuMs(process.pid), broker: brokerMs(brokerPid), requests: await kafkaRequests() };
  const stopAt = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: ASKERS }, async () => {
      while (performance.now() < stopAt) {
        const t0 = performance.now();
        await ask();
        samples.push(performance.now() - t0);
      }
    }),
  );
  const after = { self: cpuMs(process.pid), broker: brokerMs(brokerPid), requests: await kafkaRequests() };
  await Promise.all([hostConsumer.stop(), replyConsumer.stop()]);
  await Promise.all([asker.close(), host.close()]);
  const n = samples.length;
  samples.sort((a, b) => a - b);
  const per = (ms: number) => Math.round((ms * 1000) / n);
  return {
    linger,
    round_trips_per_s: Math.round(n / SECONDS),
    p50_ms: Number(samples[Math.floor(n * 0.5)]!.toFixed(2)),
    p99_ms: Number(samples[Math.floor(n * 0.99)]!.toFixed(2)),
    process_us: per(after.self - before.self),
    broker_us: per(after.broker.all - before.broker.all),
    broker_jit_us: per(after.broker.jit - before.broker.jit),
    requests: Object.fromEntries(
      [...after.requests].map(([api, v]) => [api, Number(((v - (before.requests.get(api) ?? 0)) / n).toFixed(2))] as const).filter(([, v]) => v >= 0.01),
    ),
  };
}

async function main(): Promise<void> {
  const running = spawnSync("bash", [script, "status"], { stdio: "ignore" }).status === 0;
  if (!running) execFileSync("bash", [script, "up"], { stdio: "inherit" });
  try {
    const brokerPid = Number(readFileSync(path.join(INFRA_DIR, "kafka", "kafka.pid"), "utf8").trim());
    const run = `bench-bus-${Date.now()}`;
    const phases: Phase[] = [];
    process.stdout.write(
      `bus bench: ${ASKERS} askers, request and reply over Kafka (${BROKER}), linger 0 against ${LINGER} ms, ${PAIRS} pairs of ${SECONDS} s\n`,
    );
    for (let pair = 0; pair < PAIRS; pair++) {
      for (const linger of pair % 2 === 0 ? [0, LINGER] : [LINGER, 0]) {
        const p = await phase(linger, `${run}-${pair}-${linger}`, brokerPid);
        phases.push(p);
        process.stdout.write(
          `  linger ${String(p.linger).padStart(2)} ms  ${String(p.round_trips_per_s).padStart(5)}/s  p50 ${p.p50_ms} ms  p99 ${p.p99_ms} ms  ` +
            `process ${p.process_us} µs  broker ${p.broker_us} µs (jit ${p.broker_jit_us})  requests ${JSON.stringify(p.requests)}\n`,
        );
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const summary = Object.fromEntries(
      [0, LINGER].map((l) => {
        const of = phases.filter((p) => p.linger === l);
        return [
          `linger_${l}`,
          {
            round_trips_per_s: median(of.map((p) => p.round_trips_per_s)),
            process_us: median(of.map((p) => p.process_us)),
            broker_us: median(of.map((p) => p.broker_us)),
            broker_without_jit_us: median(of.map((p) => p.broker_us - p.broker_jit_us)),
            p50_ms: median(of.map((p) => p.p50_ms)),
            p99_ms: median(of.map((p) => p.p99_ms)),
          },
        ];
      }),
    );
    process.stdout.write(`medians: ${JSON.stringify(summary, null, 1)}\n`);
    const dir = path.join(import.meta.dirname, "results");
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `bus-${new Date().toISOString().slice(0, 10)}.json`);
    const commit = spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).stdout.trim();
    writeFileSync(
      file,
      JSON.stringify(
        { at: new Date().toISOString(), commit, node: process.version, cpus: os.cpus().length, askers: ASKERS, seconds: SECONDS, summary, phases },
        null,
        1,
      ) + "\n",
    );
    process.stdout.write(`results: ${path.relative(ROOT, file)}\n`);
  } finally {
    if (!running) execFileSync("bash", [script, "down"], { stdio: "inherit" });
  }
}

await main();
process.exit(0);
