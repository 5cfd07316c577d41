// Scheduling overhead on real Kafka and Cassandra: from a task's enqueue (the job's task intent
// publishing it to the encode queue) to its start on an idle encoder node (lease granted, task
// started: the node's "task started" log line carries waited_ms), for probe and encode tasks of
// jobs run one at a time. The reference, run side by side on the same broker in rounds: one Kafka
// publish-to-consume round trip, the floor of any Kafka-borne dispatch (the design before the queue
// was one such hop). Prints p50/p99 and their ratio to the reference; writes
// test/bench/results/scheduling-<date>.json. Needs Kafka and Cassandra (npm run infra:up).
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import kafkajs from "kafkajs";
import { KafkaBus } from "../../src/bus/kafka-bus.js";
import { ROOT, waitForJob } from "../harness.js";
import { kafkaPeer, kafkajsOptions } from "../cluster/endpoints.js";
import { startFleet } from "../cluster/fleet.js";

const ROUNDS = Number(process.argv[2] ?? 5);
const JOBS_PER_ROUND = Number(process.argv[3] ?? 6);
const ECHOES_PER_ROUND = 30;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pct(samples: readonly number[], p: number): number {
  const s = [...samples].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

async function kafkaEcho(bus: KafkaBus, topic: string, count: number): Promise<number[]> {
  const waiting = new Map<string, () => void>();
  const consumer = await bus.consume({
    topic,
    group: `${topic}-g`,
    fromLatest: true,
    handler: async (m) => void (waiting.get(m.key)?.(), waiting.delete(m.key)),
  });
  const samples: number[] = [];
  const value = new TextEncoder().encode(JSON.stringify({ kind: "encode", jobId: "job_bench" }));
  for (let i = -5; i < count; i++) {
    const key = `echo-${randomUUID()}`;
    const got = new Promise<void>((resolve) => waiting.set(key, resolve));
    const t0 = performance.now();
    await bus.publish(topic, [{ key, value }]);
    await Promise.race([got, sleep(10_000).then(() => Promise.reject(new Error("echo not consumed in 10 s")))]);
    if (i >= 0) samples.push(performance.now() - t0);
  }
  await consumer.stop();
  return samples;
}

async function main(): Promise<void> {
  const load = os.loadavg();
  const fleet = await startFleet({ encoderNodes: 1, inputs: { short: 2 }, env: { MEDIA_LOG_LEVEL: "info" } });
  const node = fleet.cluster.encoderNodes[0]!;
  const suffix = randomUUID().slice(0, 8);
  const topic = `bench.sched.${suffix}`;
  const bus = new KafkaBus({ ...kafkaPeer(), clientId: `bench-sched-${suffix}` });
  await bus.start();
  await bus.ensureTopics([{ topic, partitions: 1 }]);
  const echo: number[] = [];
  const tasks: { kind: string; waited: number }[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      echo.push(...(await kafkaEcho(bus, topic, ECHOES_PER_ROUND)));
      for (let i = 0; i < JOBS_PER_ROUND; i++) {
        const id = await fleet.submit(fleet.a, fleet.inputs.short!);
        const job = await waitForJob(fleet.base, id, fleet.a, { ms: 60_000 });
        if (job.status !== "completed") throw new Error(`job ${id} ${job.status}`);
        // An idle node between jobs, as after a quiet spell.
        await sleep(300);
      }
      process.stdout.write(`round ${round + 1}/${ROUNDS} done\n`);
    }
    for (const line of node.output().split("\n")) {
      if (!line.includes('"task started"')) continue;
      const entry = JSON.parse(line) as { kind: string; waited_ms: number };
      tasks.push({ kind: entry.kind, waited: entry.waited_ms });
    }
  } finally {
    await bus.close();
    const admin = new kafkajs.Kafka({ ...kafkajsOptions(`bench-cleanup-${suffix}`), logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin
      .connect()
      .then(() => admin.deleteTopics({ topics: [topic] }))
      .catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    await fleet.stop(true);
  }
  const of = (kind?: string) => tasks.filter((t) => !kind || t.kind === kind).map((t) => t.waited);
  const row = (name: string, samples: number[]) => ({
    name,
    samples: samples.length,
    p50_ms: Math.round(pct(samples, 50) * 10) / 10,
    p99_ms: Math.round(pct(samples, 99) * 10) / 10,
  });
  const rows = [
    row("kafka round trip (reference)", echo),
    row("probe task: enqueue to start", of("probe")),
    row("encode task: enqueue to start", of("encode")),
    row("all tasks", of()),
  ];
  const ref = rows[0]!;
  console.table(rows.map((r) => ({ ...r, p50_vs_reference: (r.p50_ms / ref.p50_ms).toFixed(2), p99_vs_reference: (r.p99_ms / ref.p99_ms).toFixed(2) })));
  const after = os.loadavg();
  const result = {
    at: new Date().toISOString(),
    commit: execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT }).toString().trim(),
    node: process.version,
    cpus: os.cpus().length,
    load_average_before: load,
    load_average_after: after,
    disturbed: load[0]! > 1.5,
    setup:
      "1 gateway, 1 actor host, 1 encoder node (cluster mode, local Kafka and Cassandra); jobs one at a time, 2 s 320x240 input, one 256x192 mp4 output; reference interleaved per round on the same broker",
    rounds: ROUNDS,
    jobs_per_round: JOBS_PER_ROUND,
    rows,
    ratios: { all_p50: rows[3]!.p50_ms / ref.p50_ms, all_p99: rows[3]!.p99_ms / ref.p99_ms },
  };
  const dir = path.join(ROOT, "test/bench/results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `scheduling-${result.at.slice(0, 10)}.json`), JSON.stringify(result, null, 2) + "\n");
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
