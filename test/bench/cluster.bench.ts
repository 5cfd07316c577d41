// Benchmark: cluster mode (gateways, actor hosts and an encoder node as processes on real Kafka and
// Cassandra) against the embedded mode (one process, file store, in-process bus, its own encoder),
// on the same machine.
// Per target, in alternating rounds:
//   - APIKeyService/Get at a fixed 200 requests/s (autocannon overallRate, 10 connections, 10 s)
//   - APIKeyService/Get at 200 requests/s evenly spaced (open loop, one request every 5 ms)
//   - APIKeyService/Get at max throughput (32 connections, 5 s)
//   - APIKeyService/Create at max throughput (16 connections, 5 s, a unique name per request)
//   - JobService/Create at max throughput (8 connections, 5 s; an output origin on MinIO, an input
//     the network guard refuses, so each job's probe fails at once on the target's one encoder):
//     the path through the outbox (marker, intents, relay), the encode queue, a lease and the
//     job's failure. Both targets do the same work per job: until 2026-11-30 the cluster ran no
//     encoder, so its jobs stayed queued while the embedded server's failed
//     (BENCH_ENCODER_NODES=0 runs the cluster so again)
// then one request at a time: 300 Gets, 300 Creates and 300 Revokes per target; and, in this
// process, the raw Kafka publish→consume round trip (KafkaBus, a fresh topic) and the latency of
// one Cassandra row read (CassandraStore.get) — the two things a cluster request is made of.
// Prints a table (and the CPU each process spent per request, with the JVM peers' JIT compiler and
// GC threads apart, and at max load the Cassandra requests, statements and messages per request) and writes
// test/bench/results/cluster-<date>.json. Starts Kafka and Cassandra with infra/*.sh when they are
// not running, and stops them again at the end only in that case.
// Run: npx tsx test/bench/cluster.bench.ts
// A create leaves work queued when its answer goes (the job's encode queue command, the outbox's
// intents, the marker removed once the entity is idle): after each Create measurement the bench
// waits until every process of the target reports none queued (media_outbox_intents_waiting and
// media_bus_consumer_lag_messages at 0), the outbox's idle time has passed and every process is
// back to its idle CPU, and counts that CPU too, less what each process spends idle over the same
// time (sampled just before the load). So a create's deferred work is its own, and does not disturb
// the Gets of the next round.
// Each target is warmed first (BENCH_WARMUP s of each kind of request), and the cluster again for
// BENCH_WARMUP_PEERS s more: its JVM peers compile for far longer than a Node process. With 5 s only,
// a flight recording of Cassandra and of Kafka through the measurements (jcmd JFR.start, profile
// settings, 2026-11-29) put about 45% of each JVM's CPU in its JIT compiler threads, not in serving;
// Cassandra's CPU per Get at 200/s was 3.8 ms after 5 s and 1.2 ms after 30 s
// (test/bench/results/cluster-2026-11-29-known-rows*). A longer warm-up of both targets slowed the
// embedded reference instead (its one-file store then held tens of thousands of keys and jobs), so
// only the cluster gets the extra time. Compare runs of the same warm-ups only.
//   BENCH_ROUNDS (3), BENCH_WARMUP (5), BENCH_WARMUP_PEERS (25), BENCH_GATEWAYS (1), BENCH_ACTOR_HOSTS (1), BENCH_ENCODER_NODES (1),
//   BENCH_SEQUENTIAL (300),
//   BENCH_RATE (200), BENCH_RATE_DURATION (10), BENCH_DURATION (5), MEDIA_KAFKA_BROKERS,
//   CASSANDRA_PORT, BENCH_PROFILE (a folder: CPU profiles of the cluster's Node processes through
//   each max-load measurement, summed by package and folder; the profiler's cost is in that run's figures)
import { execFileSync, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import cassandra from "cassandra-driver";
import kafkajs from "kafkajs";
import { API_KEYS } from "../../actors/api-key/messages.js";
import { KafkaBus } from "../../src/bus/kafka-bus.js";
import { kafkaConnection, kafkajsSecurity } from "../../src/bus/kafka-security.js";
import { clusterConfig } from "../../src/config.js";
import { launchCluster, type LocalCluster } from "../../main/launcher.js";
import { CassandraStore, cassandraClientOptions, cassandraConnection } from "../../src/store/cassandra-store.js";
import { call, freePort, freshKeyspace, readBootstrap, ROOT, spawnServer, tempDataDir, type ChildServer } from "../harness.js";
import { makeTestCa, startMinio, type MinioPeer } from "../peers.js";
import { cpuMs, jvmThreadsMs } from "./proc-cpu.js";
import { profile } from "./profile.js";

// ── settings ──

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ROUNDS = num("BENCH_ROUNDS", 3);
const GATEWAYS = num("BENCH_GATEWAYS", 1);
const ACTOR_HOSTS = num("BENCH_ACTOR_HOSTS", 1);
const ENCODER_NODES = num("BENCH_ENCODER_NODES", 1);
const SEQUENTIAL = num("BENCH_SEQUENTIAL", 300);
const RATE = num("BENCH_RATE", 200);
const RATE_DURATION = num("BENCH_RATE_DURATION", 10);
const DURATION = num("BENCH_DURATION", 5);
const WARMUP = num("BENCH_WARMUP", 5);
const WARMUP_PEERS = num("BENCH_WARMUP_PEERS", 25);
const PROFILE = process.env.BENCH_PROFILE;
const RATE_CONNECTIONS = 10;
const GET_CONNECTIONS = 32;
const CREATE_CONNECTIONS = 16;
const JOB_CONNECTIONS = 8;
const GOAL_P99_MS = 20;
/** The paced Gets at least this slow are listed with when they were sent. */
const PACED_SLOW_MS = 15;
/** The bench measures the service, not the rate limiter (gateway.bench.ts measures that). */
const LIMITS_OFF = { MEDIA_RATE_LIMIT_KEY: "off", MEDIA_RATE_LIMIT_ANONYMOUS: "off", MEDIA_RATE_LIMIT_HEALTH: "off" };
const KAFKA_BROKERS = (process.env.MEDIA_KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");
const CASSANDRA_CONTACT = `127.0.0.1:${process.env.CASSANDRA_PORT ?? "9042"}`;
// The login and TLS of the peers, as the service reads them (MEDIA_KAFKA_SASL_*, MEDIA_CASSANDRA_SSL...).
const KAFKA = { ...kafkaConnection(clusterConfig(process.env)), brokers: KAFKA_BROKERS };
const CASSANDRA = { ...cassandraConnection(clusterConfig(process.env)), contactPoints: [CASSANDRA_CONTACT] };
const INFRA_DIR = process.env.MEDIA_INFRA_DIR ?? path.join(ROOT, ".infra");

// ── autocannon ──

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  "2xx": number;
  latency: { p50: number; p99: number; max: number };
}
interface AutocannonRequest {
  method?: "POST";
  setupRequest?: (req: { body?: string }) => { body?: string };
}
type AutocannonInstance = PromiseLike<AutocannonResult> & {
  on(event: "response", listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): void;
};
type Autocannon = (opts: {
  url: string | string[];
  method: "POST";
  headers: Record<string, string>;
  body?: string;
  requests?: AutocannonRequest[];
  connections: number;
  duration: number;
  overallRate?: number;
}) => AutocannonInstance;
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

// ── small helpers ──

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round1 = (x: number) => (Number.isFinite(x) ? Math.round(x * 10) / 10 : NaN);
const round2 = (x: number) => (Number.isFinite(x) ? Math.round(x * 100) / 100 : NaN);
/** Nearest-rank percentile of samples in ms. */
function pct(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
const median = (xs: readonly number[]) => pct(xs, 50);
const maxOf = (xs: readonly number[]) => xs.reduce((m, x) => (x > m ? x : m), xs.length ? -Infinity : NaN);

const pidFile = (service: string) => {
  try {
    return Number(readFileSync(path.join(INFRA_DIR, service, `${service}.pid`), "utf8").trim());
  } catch {
    return undefined;
  }
};

/** One keep-alive POST with node:http; resolves with the status and the time it took. */
function post(agent: http.Agent, base: string, route: string, body: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}/media.v1.${route}`,
      { method: "POST", agent, headers: { ...headers, "content-length": String(Buffer.byteLength(body)) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

// ── infrastructure ──

const script = (name: string) => path.join(ROOT, "infra", name);
const infraRunning = (name: string) => spawnSync("bash", [script(name), "status"], { stdio: "ignore" }).status === 0;

function ensureInfra(): string[] {
  const started: string[] = [];
  for (const name of ["kafka.sh", "cassandra.sh"]) {
    if (infraRunning(name)) continue;
    const t0 = Date.now();
    execFileSync("bash", [script(name), "up"], { stdio: "inherit" });
    process.stdout.write(`[infra] ${name} up in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    started.push(name);
  }
  return started;
}

// ── targets ──

type TargetName = "embedded" | "cluster";

interface Target {
  readonly name: TargetName;
  readonly bases: readonly string[];
  readonly auth: Record<string, string>;
  readonly keyId: string;
  /** An output origin on MinIO, for job creates. */
  readonly originId: string;
  /** Processes of this target, by role, for CPU accounting. */
  readonly pids: Readonly<Record<string, readonly number[]>>;
  /** The Prometheus pages of its processes: the work each still has queued (drain). */
  readonly metricsUrls: readonly string[];
  readonly agent: http.Agent;
  /** Throws when a process of the target has exited. */
  assertAlive(): void;
  stop(): Promise<void>;
}

const JSON_HEADERS = { "content-type": "application/json" };

/** MinIO for the job creates' output origin, and what the targets need to reach it. */
let minio: MinioPeer | undefined;
let storageEnv: Record<string, string> = {};

async function prepare(name: TargetName, base: string, dataDir: string): Promise<{ auth: Record<string, string>; keyId: string; originId: string }> {
  const boot = readBootstrap(dataDir);
  const created = await call(base, "APIKeyService/Create", { name: "bench target" }, { bearer: boot.api_key, org: boot.organization_id });
  if (created.status !== 200) throw new Error(`${name}: APIKeyService/Create answered ${created.status}: ${JSON.stringify(created.body)}`);
  const auth = { ...JSON_HEADERS, authorization: `Bearer ${boot.api_key}`, "x-organization-id": boot.organization_id };
  const keyId = created.body.api_key.id as string;
  const probe = await call(base, "APIKeyService/Get", JSON.stringify({ id: keyId }), { headers: auth });
  if (probe.status !== 200) throw new Error(`${name}: APIKeyService/Get answered ${probe.status}: ${JSON.stringify(probe.body)}`);
  const origin = await call(
    base,
    "OriginService/Create",
    {
      name: "bench out",
      permissions: ["write"],
      s3: {
        bucket: "bench-out",
        region: "us-east-1",
        credentials: { access_key_id: minio!.admin.accessKeyId, secret_access_key: minio!.admin.secretAccessKey },
      },
    },
    { bearer: boot.api_key, org: boot.organization_id },
  );
  if (origin.status !== 200) throw new Error(`${name}: OriginService/Create answered ${origin.status}: ${JSON.stringify(origin.body)}`);
  return { auth, keyId, originId: origin.body.origin.id as string };
}

async function startEmbedded(): Promise<Target> {
  const dataDir = tempDataDir();
  const server: ChildServer = await spawnServer(dataDir, freePort(), { MEDIA_LOG_LEVEL: "warn", ...LIMITS_OFF, ...storageEnv });
  const stop = async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const { auth, keyId, originId } = await prepare("embedded", server.base, dataDir);
    return {
      name: "embedded",
      bases: [server.base],
      auth,
      keyId,
      originId,
      pids: { server: [server.child.pid!] },
      metricsUrls: [`${server.base}/metrics`],
      agent: new http.Agent({ keepAlive: true, maxSockets: RATE_CONNECTIONS }),
      assertAlive() {
        if (server.child.exitCode !== null || server.child.signalCode !== null) throw new Error(`embedded server exited: ${server.output().slice(-2000)}`);
      },
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

async function startCluster(keyspace: string): Promise<Target & { cluster: LocalCluster }> {
  const dataDir = tempDataDir();
  const basePort = freePort();
  for (let i = 1; i < GATEWAYS; i++) freePort(); // the other gateways take the ports after basePort
  const env: Record<string, string> = {
    ...LIMITS_OFF,
    ...storageEnv,
    MEDIA_MODE: "cluster",
    MEDIA_DATA_DIR: dataDir,
    MEDIA_HTTP_HOST: "127.0.0.1",
    MEDIA_LOG_LEVEL: "warn",
    MEDIA_CASSANDRA_KEYSPACE: keyspace,
    MEDIA_KAFKA_BROKERS: KAFKA_BROKERS.join(","),
    MEDIA_CASSANDRA_CONTACT_POINTS: CASSANDRA_CONTACT,
    // An inspector on a free port when SIGUSR1 opens it (BENCH_PROFILE).
    ...(PROFILE ? { NODE_OPTIONS: [process.env.NODE_OPTIONS, "--inspect-port=0"].filter(Boolean).join(" ") } : {}),
  };
  const cluster = await launchCluster({ gateways: GATEWAYS, actorHosts: ACTOR_HOSTS, encoderNodes: ENCODER_NODES, basePort, env });
  const stop = async () => {
    await cluster.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const bases = cluster.gateways.map((g) => `http://127.0.0.1:${g.port}`);
    const { auth, keyId, originId } = await prepare("cluster", bases[0]!, dataDir);
    const all = [...cluster.gateways, ...cluster.actorHosts, ...cluster.encoderNodes];
    return {
      name: "cluster",
      bases,
      auth,
      keyId,
      originId,
      cluster,
      pids: {
        gateway: cluster.gateways.map((g) => g.child.pid!),
        "actor host": cluster.actorHosts.map((a) => a.child.pid!),
        ...(cluster.encoderNodes.length > 0 ? { "encoder node": cluster.encoderNodes.map((e) => e.child.pid!) } : {}),
      },
      metricsUrls: all.map((p) => `http://127.0.0.1:${p.metricsPort}/metrics`),
      agent: new http.Agent({ keepAlive: true, maxSockets: RATE_CONNECTIONS }),
      assertAlive() {
        const dead = all.find((p) => p.child.exitCode !== null || p.child.signalCode !== null);
        if (dead) throw new Error(`cluster ${dead.role}-${dead.index} exited: ${dead.output().slice(-2000)}`);
      },
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

// ── CPU accounting: every process that takes part, including the JVMs and this one ──

type CpuSample = Record<string, number>;
function cpuSample(t: Target): CpuSample {
  const s: CpuSample = {};
  for (const [role, pids] of Object.entries(t.pids)) s[role] = pids.reduce((sum, p) => sum + cpuMs(p), 0);
  s.cassandra = cpuMs(pidFile("cassandra"));
  s.kafka = cpuMs(pidFile("kafka"));
  Object.assign(s, jvmThreadsMs("cassandra", pidFile("cassandra")), jvmThreadsMs("kafka", pidFile("kafka")));
  s["load generator"] = cpuMs(process.pid);
  return s;
}
/** Work a target still has queued: outbox intents not yet run and bus messages not yet read, over its processes. */
async function backlog(t: Target): Promise<number> {
  let n = 0;
  for (const url of t.metricsUrls) {
    const text = await (await fetch(url)).text();
    for (const line of text.split("\n")) {
      const m = /^(?:media_outbox_intents_waiting|media_bus_consumer_lag_messages)(?:\{[^}]*\})? (\S+)$/.exec(line);
      if (m) n += Number(m[1]);
    }
  }
  return n;
}

/** The outbox removes an idle entity's marker after this long (actors/outbox.ts, idleMs): part of a create's work. */
const RELAY_IDLE_MS = 5_000;
const IDLE_SAMPLE_MS = 2_000;

/** A process is quiet when, over QUIET_WINDOW_MS, it spends at most its idle rate and this share of a core more. */
const QUIET_WINDOW_MS = 500;
const QUIET_SLACK = 0.05;

/**
 * Waits until the target has done what the load left it (its backlog empty twice in a row, then
 * the outbox's idle time for the markers' removal, then every process back to its idle CPU twice
 * in a row), so that a create's deferred work (the encode queue's commands, the relay's intents,
 * the markers) counts as the create's and does not spill into the next measurement. The metrics
 * alone do not see all of it: an actor's mailbox is no bus lag, and the embedded server's encode
 * queue kept one core busy for 10 to 20 s after its job creates, through the cluster's Gets that
 * came next (a tail of 30 to 110 ms there, 2026-11-30).
 */
async function drain(t: Target, idle: CpuSample): Promise<void> {
  const deadline = Date.now() + 180_000;
  const late = () => {
    if (Date.now() > deadline) throw new Error(`${t.name}: still busy 180 s after the load`);
  };
  for (let quiet = 0; quiet < 2;) {
    late();
    quiet = (await backlog(t)) === 0 ? quiet + 1 : 0;
    await sleep(250);
  }
  await sleep(RELAY_IDLE_MS + 1_000);
  for (let quiet = 0, a = cpuSample(t); quiet < 2;) {
    late();
    await sleep(QUIET_WINDOW_MS);
    const b = cpuSample(t);
    const busy = Object.keys(b).some(
      (role) => !role.includes(":") && role !== "load generator" && b[role]! - a[role]! > ((idle[role] ?? 0) + QUIET_SLACK) * QUIET_WINDOW_MS,
    );
    quiet = busy ? 0 : quiet + 1;
    a = b;
  }
}

/** Each process's CPU while idle, ms per ms, over IDLE_SAMPLE_MS: subtracted from a drain's time. */
async function idleRates(t: Target): Promise<CpuSample> {
  const a = cpuSample(t);
  await sleep(IDLE_SAMPLE_MS);
  const b = cpuSample(t);
  return Object.fromEntries(Object.keys(b).map((role) => [role, Math.max(0, (b[role]! - a[role]!) / IDLE_SAMPLE_MS)]));
}

/** CPU µs per answered request, per process role, and the share of both cores used. */
function cpuPerRequest(t: Target, before: CpuSample, after: CpuSample, requests: number, wallMs: number) {
  const perReq: Record<string, number> = {};
  let total = 0;
  for (const role of Object.keys(after)) {
    const ms = after[role]! - before[role]!;
    if (!role.includes(":")) total += ms; // "kafka: jit" is part of "kafka"
    perReq[role] = requests > 0 ? Math.round((ms * 1000) / requests) : NaN;
  }
  return { us_per_req: perReq, machine_busy_pct: Math.round((100 * total) / (wallMs * os.cpus().length)) };
}

// ── the measurements ──

interface LoadResult {
  /** answered 2xx per second */
  rps: number;
  /** per-request latencies of 2xx answers, ms (autocannon's 'response' event: no coordinated-omission correction) */
  samples: number[];
  failures: number;
  autocannon_p99_ms: number;
  cpu: ReturnType<typeof cpuPerRequest> & { readonly drain_s?: number };
}

/** Statements, requests and messages per request at max load (cluster only), by measurement, from the last round. */
const perRequestAtLoad: Record<string, Record<string, number>> = {};

async function load(
  t: Target,
  opts: {
    route: string;
    body?: string;
    requests?: AutocannonRequest[];
    connections: number;
    duration: number;
    overallRate?: number;
    counted?: string;
    /** Count what the load left queued too (drain), less each process's idle CPU over that time. */
    drained?: boolean;
  },
): Promise<LoadResult> {
  const cluster = opts.counted !== undefined && "cluster" in t ? (t as Target & { cluster: LocalCluster }).cluster : undefined;
  const counters = cluster ? await scrapeCounters(cluster) : undefined;
  const profiling =
    cluster && PROFILE
      ? await profile(
          PROFILE,
          ROOT,
          [...cluster.gateways, ...cluster.actorHosts].map((p) => ({
            name: `${opts.counted!.replace(/\W+/g, "-")}${p.role}-${p.index}`,
            pid: p.child.pid!,
            output: p.output,
          })),
        )
      : undefined;
  // Idle CPU sampled with the profiler on, when it is: a drain waits for the processes to be back to it.
  const idle = opts.drained ? await idleRates(t) : undefined;
  const before = cpuSample(t);
  const t0 = performance.now();
  const samples: number[] = [];
  const instance = autocannon({
    url: t.bases.map((b) => `${b}/media.v1.${opts.route}`),
    method: "POST",
    headers: t.auth,
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    ...(opts.requests ? { requests: opts.requests } : {}),
    connections: opts.connections,
    duration: opts.duration,
    ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
  });
  instance.on("response", (_client, status, _bytes, ms) => {
    if (status >= 200 && status < 300) samples.push(ms);
  });
  const res = await instance;
  const wall = performance.now() - t0;
  t.assertAlive();
  const answered = res["2xx"] + res.non2xx;
  const atEnd = cpuSample(t);
  let after = atEnd;
  let drainMs = 0;
  if (idle) {
    const loadEnd = performance.now();
    await drain(t, idle);
    drainMs = performance.now() - loadEnd;
    const drained = cpuSample(t);
    after = Object.fromEntries(Object.keys(drained).map((role) => [role, Math.max(atEnd[role]!, drained[role]! - idle[role]! * drainMs)]));
  }
  // CPU per request with the drain; how busy the cores were, over the load alone.
  const cpu = {
    ...cpuPerRequest(t, before, after, answered, wall),
    machine_busy_pct: cpuPerRequest(t, before, atEnd, answered, wall).machine_busy_pct,
    ...(idle ? { drain_s: round2(drainMs / 1000) } : {}),
  };
  if (profiling) {
    for (const { name, byOrigin } of await profiling.stop()) {
      process.stdout.write(
        `  profile ${name} (µs per request, self time): ${byOrigin
          .slice(0, 14)
          .map(([o, us]) => `${o} ${Math.round(us / Math.max(1, answered))}`)
          .join(", ")}\n`,
      );
    }
  }
  if (cluster && counters && answered > 0) {
    perRequestAtLoad[opts.counted!] = perRequestOf(counters, await scrapeCounters(cluster), answered, 0.005);
  }
  return {
    rps: res["2xx"] / res.duration,
    samples,
    failures: res.non2xx + res.errors + res.timeouts,
    autocannon_p99_ms: res.latency.p99,
    cpu,
  };
}

/**
 * Open loop: one request every 1000/rate ms whatever the answers; latency counted from the planned
 * send time. The sender runs on its own thread (paced-worker.mjs), so this thread's work does not
 * delay sends; its largest stall is printed with the round.
 */
async function paced(t: Target, route: string, body: string, rate: number, seconds: number): Promise<{ rps: number; samples: number[]; failures: number }> {
  const worker = new Worker(new URL("./paced-worker.mjs", import.meta.url), {
    workerData: { bases: t.bases, route, body, headers: t.auth, rate, seconds, sockets: RATE_CONNECTIONS, slowMs: PACED_SLOW_MS },
  });
  const r = await new Promise<{ samples: number[]; failures: number; elapsedMs: number; stallMaxMs: number; slow: { at: number; ms: number }[] }>(
    (resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
      worker.once("exit", (code) => reject(new Error(`the paced sender exited (${code}) without results`)));
    },
  );
  await worker.terminate();
  t.assertAlive();
  process.stdout.write(`  (the paced sender's largest stall: ${r.stallMaxMs.toFixed(1)} ms)\n`);
  // When the slow ones were sent, to line up with the peers' logs (Cassandra's flushes and compactions, GC).
  if (r.slow.length > 0) {
    const shown = r.slow.slice(0, 20).map((x) => `${new Date(x.at).toISOString().slice(11, 23)} ${x.ms.toFixed(0)}`);
    process.stdout.write(`  (${r.slow.length} at ${PACED_SLOW_MS} ms or more, sent at (UTC, ms): ${shown.join(", ")}${r.slow.length > 20 ? ", ..." : ""})\n`);
  }
  return { rps: r.samples.length / (r.elapsedMs / 1000), samples: r.samples, failures: r.failures };
}

/** One call at a time; each one's latency (ms) and the answers' bodies. */
async function sequential(t: Target, route: string, bodies: readonly string[]): Promise<{ samples: number[]; failures: number; answers: any[] }> {
  const samples: number[] = [];
  const answers: any[] = [];
  let failures = 0;
  for (let i = 0; i < bodies.length; i++) {
    const t0 = performance.now();
    const r = await post(t.agent, t.bases[i % t.bases.length]!, route, bodies[i]!, t.auth).catch(() => ({ status: 0, text: "" }));
    const ms = performance.now() - t0;
    if (r.status === 200) {
      samples.push(ms);
      answers.push(JSON.parse(r.text));
    } else failures++;
  }
  t.assertAlive();
  return { samples, failures, answers };
}

let createCounter = 0;
const createRequests = (): AutocannonRequest[] => [
  { method: "POST", setupRequest: (req) => ({ ...req, body: JSON.stringify({ name: `bench create ${++createCounter}` }) }) },
];

/** Kafka publish→consume round trip, measured in this process: KafkaBus on a fresh one-partition topic. */
async function kafkaEcho(count: number): Promise<number[]> {
  const suffix = randomUUID().slice(0, 8);
  const topic = `bench.echo.${suffix}`;
  const group = `bench-echo-${suffix}`;
  const bus = new KafkaBus({ ...KAFKA, clientId: `bench-echo-${suffix}` });
  const waiting = new Map<string, () => void>();
  const samples: number[] = [];
  try {
    await bus.start();
    await bus.ensureTopics([{ topic, partitions: 1 }]);
    const consumer = await bus.consume({
      topic,
      group,
      fromLatest: true,
      handler: async (m) => {
        waiting.get(m.key)?.();
        waiting.delete(m.key);
      },
    });
    const value = new TextEncoder().encode(JSON.stringify({ type: "echo", id: "x".repeat(24), command: { type: "touch", at: Date.now() } }));
    for (let i = -20; i < count; i++) {
      const key = `echo-${i}`;
      const received = new Promise<void>((resolve) => waiting.set(key, resolve));
      const t0 = performance.now();
      await bus.publish(topic, [{ key, value, headers: { "reply-to": "bench", correlation: key } }]);
      await Promise.race([received, sleep(10_000).then(() => Promise.reject(new Error(`echo ${i} not consumed within 10 s`)))]);
      if (i >= 0) samples.push(performance.now() - t0); // the first 20 warm up the connections
    }
    await consumer.stop();
  } finally {
    await bus.close();
    const admin = new kafkajs.Kafka({
      brokers: KAFKA_BROKERS,
      ...kafkajsSecurity(KAFKA),
      clientId: `bench-cleanup-${suffix}`,
      logLevel: kafkajs.logLevel.NOTHING,
    }).admin();
    try {
      await admin.connect();
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.deleteGroups([group]).catch(() => undefined);
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
  return samples;
}

/** One Cassandra row read as the gateway does it (CassandraStore.get, LOCAL_QUORUM, prepared), from this process. */
async function cassandraRead(keyspace: string, id: string, count: number): Promise<number[]> {
  const store = new CassandraStore({ ...CASSANDRA, keyspace, createSchema: false });
  await store.open();
  const samples: number[] = [];
  try {
    for (let i = -20; i < count; i++) {
      const t0 = performance.now();
      if (!(await store.get(API_KEYS, id))) throw new Error(`api key ${id} not found in ${keyspace}`);
      if (i >= 0) samples.push(performance.now() - t0);
    }
  } finally {
    await store.close();
  }
  return samples;
}

async function dropKeyspace(keyspace: string): Promise<void> {
  const client = new cassandra.Client(cassandraClientOptions(CASSANDRA));
  try {
    await client.connect();
    await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`, [], { readTimeout: 60_000 });
  } finally {
    await client.shutdown();
  }
}

// ── what else ran on the machine meanwhile ──

/**
 * Samples, once a second, the processes that are not ours but would skew the figures: other
 * media servers, test runners, type checks; and notes when Kafka or Cassandra changed pid
 * (restarted by someone else). Both are reported with the results.
 */
function watchInterference(ours: () => ReadonlySet<number>) {
  const infraPids = { kafka: pidFile("kafka"), cassandra: pidFile("cassandra") };
  const seen = new Map<string, number>(); // command line -> seconds seen
  let samples = 0;
  const parentOf = (pid: number): number | undefined => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    } catch {
      return undefined;
    }
  };
  const ancestors = new Set<number>();
  for (let pid: number | undefined = process.ppid, i = 0; pid !== undefined && pid > 1 && i < 10; i++, pid = parentOf(pid)) ancestors.add(pid);
  const timer = setInterval(() => {
    samples++;
    let pids: string[];
    try {
      pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
    } catch {
      return;
    }
    const mine = ours();
    for (const d of pids) {
      const pid = Number(d);
      if (pid === process.pid || mine.has(pid) || ancestors.has(pid)) continue;
      let cmd: string;
      try {
        cmd = readFileSync(`/proc/${d}/cmdline`, "utf8").replaceAll("\0", " ").trim();
      } catch {
        continue;
      }
      if (!/bin\/media\.js|vitest|\btsc\b|\.bench\.ts/.test(cmd)) continue;
      if (parentOf(pid) === process.pid) continue; // a target starting up
      const name = cmd.replace(/^\S*node\S*\s+/, "").slice(0, 100);
      seen.set(name, (seen.get(name) ?? 0) + 1);
    }
  }, 1000);
  timer.unref();
  return {
    report() {
      clearInterval(timer);
      const restarted = Object.entries(infraPids)
        .filter(([service, pid]) => pidFile(service) !== pid)
        .map(([service]) => service);
      const others = [...seen].sort((a, b) => b[1] - a[1]).map(([command, seconds]) => ({ command, seconds }));
      return { seconds_watched: samples, restarted, other_processes: others, quiet: restarted.length === 0 && others.length === 0 };
    },
  };
}

// ── main ──

const TARGET_ORDER: readonly Row["target"][] = ["embedded", "cluster", "bench process"];
const ROLE_ORDER = ["server", "gateway", "actor host", "encoder node", "cassandra", "kafka", "load generator"];

interface Row {
  measurement: string;
  target: TargetName | "bench process";
  /** answered per second (2xx) */
  rate: number | null;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  samples: number;
  failures: number;
  rounds?: { rate: number; p50_ms: number; p99_ms: number; max_ms: number }[];
  extra?: Record<string, unknown>;
}

/** Statements and messages per request, by counter, from the last run of main(). */
let perRequest: Record<string, Record<string, number>> | undefined;

/** Each counter's growth from `before` to `after` per request (n), those of at least `least`, by name. */
function perRequestOf(before: Map<string, number>, after: Map<string, number>, n: number, least: number): Record<string, number> {
  return Object.fromEntries(
    [...after]
      .map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / n] as const)
      .filter(([, v]) => v >= least)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

/**
 * The Cassandra statement, Kafka request and bus message counters of every process of a cluster, summed by series;
 * the messages handled by topic ("bus_handled", every reader counted: a reply every gateway reads
 * counts once per gateway).
 */
async function scrapeCounters(cluster: LocalCluster): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const wanted =
    /^(media_cassandra_statements_total|media_cassandra_requests_total|media_kafka_requests_total|media_bus_messages_published_total|media_bus_published_bytes_total|media_bus_handler_seconds_count)(?:\{([^}]*)\})? (\S+)$/;
  for (const p of [...cluster.gateways, ...cluster.actorHosts, ...cluster.encoderNodes]) {
    const text = await (await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`)).text();
    for (const line of text.split("\n")) {
      const m = wanted.exec(line);
      if (!m) continue;
      const name = m[1] === "media_bus_handler_seconds_count" ? "bus_handled" : m[1]!.replace(/^media_/, "").replace(/_total$/, "");
      const k = `${name} ${(m[2] ?? "").replace(/^\w+="([^"]*)"$/, "$1")}`.trim();
      out.set(k, (out.get(k) ?? 0) + Number(m[3]));
    }
  }
  return out;
}

async function main(): Promise<void> {
  const cpus = os.cpus();
  process.stdout.write(
    `cluster bench: embedded (1 process) vs cluster (${GATEWAYS} gateway${GATEWAYS > 1 ? "s" : ""} + ${ACTOR_HOSTS} actor host${ACTOR_HOSTS > 1 ? "s" : ""} + ${ENCODER_NODES} encoder node${ENCODER_NODES === 1 ? "" : "s"} on Kafka + Cassandra), ` +
      `${ROUNDS} alternating rounds\n` +
      `note: ${cpus.length} cores (${cpus[0]?.model ?? "?"}) shared by the load generator (this process), Kafka, Cassandra and every Node process.\n\n`,
  );
  const startedInfra = ensureInfra();
  const ca = makeTestCa();
  minio = await startMinio(ca, ["bench-out"]);
  storageEnv = { MEDIA_NET_ALLOW: "127.0.0.1/32", MEDIA_TLS_CA_FILE: ca.caFile, MEDIA_S3_ENDPOINT: minio.endpoint };
  const keyspace = freshKeyspace();
  const targets: Target[] = [];
  const watch = watchInterference(() => new Set(targets.flatMap((t) => Object.values(t.pids).flat())));
  const rows: Row[] = [];
  const cpuRows: { measurement: string; target: TargetName; machine_busy_pct: number; us_per_req: Record<string, number> }[] = [];
  try {
    targets.push(await startEmbedded());
    process.stdout.write(`embedded: ${targets[0]!.bases.join(", ")}\n`);
    const t0 = Date.now();
    targets.push(await startCluster(keyspace));
    process.stdout.write(`cluster: gateways ${targets[1]!.bases.join(", ")}, keyspace ${keyspace} (started in ${((Date.now() - t0) / 1000).toFixed(1)} s)\n\n`);

    const getBody = (t: Target) => JSON.stringify({ id: t.keyId });
    // 192.0.2.0/24 is documentation space: the network guard refuses it without a connection.
    const jobBody = (t: Target) =>
      JSON.stringify({
        input_url: "https://192.0.2.10/in.mp4",
        output_origin_id: t.originId,
        outputs: [{ type: "mp4", video: [{ codec: "h264", width: 256, height: 144 }] }],
      });

    // Warm-up: JIT (the gateways' and the JVMs'), connection pools, prepared statements, the actor of the target key.
    process.stdout.write(`warm-up: ${WARMUP} s of Get, key Create and job Create per target, then ${WARMUP_PEERS} s more of them on the cluster\n`);
    for (const t of targets) {
      const idle = await idleRates(t);
      // Seconds of each kind (the cluster's extra time shared among the three), in rounds of at
      // most WARMUP s of each, so each peer warms on each kind.
      let left = Math.round(WARMUP + (t.name === "cluster" ? WARMUP_PEERS / 3 : 0));
      while (left > 0) {
        const each = WARMUP > 0 ? Math.min(left, WARMUP) : left;
        left -= each;
        await load(t, { route: "APIKeyService/Get", body: getBody(t), connections: GET_CONNECTIONS, duration: each });
        await load(t, { route: "APIKeyService/Create", requests: createRequests(), connections: CREATE_CONNECTIONS, duration: each });
        await load(t, { route: "JobService/Create", body: jobBody(t), connections: JOB_CONNECTIONS, duration: each });
      }
      await sequential(
        t,
        "APIKeyService/Get",
        Array.from({ length: 50 }, () => getBody(t)),
      );
      // What the warm-up's creates left queued is done before the first measurement.
      await drain(t, idle);
    }

    type Acc = { rate: number[]; samples: number[]; failures: number; rounds: NonNullable<Row["rounds"]>; autocannonP99: number[]; cpu: LoadResult["cpu"][] };
    const acc = new Map<string, Acc>();
    const add = (
      measurement: string,
      t: Target,
      r: { rps: number; samples: number[]; failures: number; autocannon_p99_ms?: number; cpu?: LoadResult["cpu"] },
    ) => {
      const k = `${measurement}\0${t.name}`;
      let a = acc.get(k);
      if (!a) acc.set(k, (a = { rate: [], samples: [], failures: 0, rounds: [], autocannonP99: [], cpu: [] }));
      a.rate.push(r.rps);
      a.samples.push(...r.samples);
      a.failures += r.failures;
      if (r.autocannon_p99_ms !== undefined) a.autocannonP99.push(r.autocannon_p99_ms);
      if (r.cpu) a.cpu.push(r.cpu);
      const one = { rate: Math.round(r.rps), p50_ms: round2(pct(r.samples, 50)), p99_ms: round2(pct(r.samples, 99)), max_ms: round2(maxOf(r.samples)) };
      a.rounds.push(one);
      process.stdout.write(
        `  round ${a.rounds.length}  ${measurement.padEnd(34)} ${t.name.padEnd(9)} ${(Number.isNaN(one.rate) ? "-" : String(one.rate)).padStart(6)}/s  p50 ${one.p50_ms} ms  p99 ${one.p99_ms} ms  max ${one.max_ms} ms` +
          (r.failures ? `  (${r.failures} failed)` : "") +
          (r.cpu ? `  [busy ${r.cpu.machine_busy_pct}%${r.cpu.drain_s !== undefined ? `, drained in ${r.cpu.drain_s} s` : ""}]` : "") +
          "\n",
      );
    };

    const M = {
      rate: `Get @${RATE}/s autocannon (${RATE_CONNECTIONS} conn)`,
      paced: `Get @${RATE}/s evenly paced`,
      getMax: `Get max (${GET_CONNECTIONS} conn)`,
      createMax: `Create max (${CREATE_CONNECTIONS} conn)`,
      jobCreateMax: `Job create max (${JOB_CONNECTIONS} conn)`,
      seqGet: "Get, one at a time",
      seqCreate: "Create, one at a time",
      seqRevoke: "Revoke, one at a time",
    };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) {
        add(
          M.rate,
          t,
          await load(t, { route: "APIKeyService/Get", body: getBody(t), connections: RATE_CONNECTIONS, duration: RATE_DURATION, overallRate: RATE }),
        );
        add(M.paced, t, await paced(t, "APIKeyService/Get", getBody(t), RATE, RATE_DURATION));
        add(M.getMax, t, await load(t, { route: "APIKeyService/Get", body: getBody(t), connections: GET_CONNECTIONS, duration: DURATION }));
        add(
          M.createMax,
          t,
          await load(t, {
            route: "APIKeyService/Create",
            requests: createRequests(),
            connections: CREATE_CONNECTIONS,
            duration: DURATION,
            counted: M.createMax,
            drained: true,
          }),
        );
        add(
          M.jobCreateMax,
          t,
          await load(t, {
            route: "JobService/Create",
            body: jobBody(t),
            connections: JOB_CONNECTIONS,
            duration: DURATION,
            counted: M.jobCreateMax,
            drained: true,
          }),
        );
      }
    }

    // One at a time: Gets, then Creates, then Revokes of the keys just created; in chunks, alternating targets.
    const created = new Map<TargetName, string[]>(targets.map((t) => [t.name, []]));
    const chunk = Math.ceil(SEQUENTIAL / ROUNDS);
    for (let done = 0; done < SEQUENTIAL; done += chunk) {
      const n = Math.min(chunk, SEQUENTIAL - done);
      for (const t of done % (2 * chunk) === 0 ? targets : [...targets].reverse()) {
        const g = await sequential(
          t,
          "APIKeyService/Get",
          Array.from({ length: n }, () => getBody(t)),
        );
        add(M.seqGet, t, { rps: NaN, ...g });
        const c = await sequential(
          t,
          "APIKeyService/Create",
          Array.from({ length: n }, (_, i) => JSON.stringify({ name: `bench sequential ${done + i}` })),
        );
        add(M.seqCreate, t, { rps: NaN, ...c });
        created.get(t.name)!.push(...c.answers.map((a) => a.api_key.id as string));
      }
    }
    for (let done = 0; done < SEQUENTIAL; done += chunk) {
      for (const t of done % (2 * chunk) === 0 ? targets : [...targets].reverse()) {
        const ids = created.get(t.name)!.slice(done, done + chunk);
        const r = await sequential(
          t,
          "APIKeyService/Revoke",
          ids.map((id) => JSON.stringify({ id, reason: "bench" })),
        );
        add(M.seqRevoke, t, { rps: NaN, ...r });
      }
    }

    // What one request costs in statements and messages: every cluster process's counters around
    // requests sent one at a time, read again once the deferred effects (outbox marker) are done.
    const cluster = targets.find((t) => t.name === "cluster") as (Target & { cluster: LocalCluster }) | undefined;
    if (cluster) {
      const count = async (route: string, bodies: readonly string[]) => {
        const before = await scrapeCounters(cluster.cluster);
        await sequential(cluster, route, bodies);
        await new Promise((r) => setTimeout(r, 6_000));
        return perRequestOf(before, await scrapeCounters(cluster.cluster), bodies.length, Number.MIN_VALUE);
      };
      const n = 100;
      perRequest = {
        "APIKeyService/Get": await count(
          "APIKeyService/Get",
          Array.from({ length: n }, () => getBody(cluster)),
        ),
        "APIKeyService/Create": await count(
          "APIKeyService/Create",
          Array.from({ length: n }, (_, i) => JSON.stringify({ name: `bench counted ${i}` })),
        ),
        "JobService/Create": await count(
          "JobService/Create",
          Array.from({ length: n }, () => jobBody(cluster)),
        ),
      };
      process.stdout.write(`\nPer request, cluster (${n} one at a time; all processes):\n`);
      for (const [route, counts] of Object.entries(perRequest)) {
        process.stdout.write(`  ${route}\n`);
        for (const [k, v] of Object.entries(counts)) process.stdout.write(`    ${k.padEnd(52)} ${v.toFixed(2)}\n`);
      }
      process.stdout.write(`\nPer request at max load, cluster (last round; concurrent commits share requests; all processes):\n`);
      for (const [measurement, counts] of Object.entries(perRequestAtLoad)) {
        process.stdout.write(`  ${measurement}\n`);
        for (const [k, v] of Object.entries(counts)) process.stdout.write(`    ${k.padEnd(52)} ${v.toFixed(2)}\n`);
      }
    }

    for (const [k, a] of acc) {
      const [measurement, target] = k.split("\0") as [string, TargetName];
      const isLoad = !measurement.includes("one at a time");
      rows.push({
        measurement,
        target,
        rate: isLoad ? Math.round(median(a.rate)) : null,
        p50_ms: round2(pct(a.samples, 50)),
        p99_ms: round2(pct(a.samples, 99)),
        max_ms: round2(maxOf(a.samples)),
        samples: a.samples.length,
        failures: a.failures,
        rounds: a.rounds,
        ...(a.autocannonP99.length ? { extra: { autocannon_p99_ms_per_round: a.autocannonP99 } } : {}),
      });
      if (a.cpu.length) {
        const roles = Object.keys(a.cpu[0]!.us_per_req);
        cpuRows.push({
          measurement,
          target,
          machine_busy_pct: Math.round(median(a.cpu.map((c) => c.machine_busy_pct))),
          us_per_req: Object.fromEntries(roles.map((r) => [r, Math.round(median(a.cpu.map((c) => c.us_per_req[r]!)))])),
        });
      }
    }

    // The two ingredients of a cluster request, measured alone from this process.
    process.stdout.write(`\n  Kafka publish→consume round trip x${SEQUENTIAL} ...\n`);
    const echo = await kafkaEcho(SEQUENTIAL);
    rows.push({
      measurement: "Kafka publish→consume round trip",
      target: "bench process",
      rate: null,
      p50_ms: round2(pct(echo, 50)),
      p99_ms: round2(pct(echo, 99)),
      max_ms: round2(maxOf(echo)),
      samples: echo.length,
      failures: 0,
    });
    process.stdout.write(`  Cassandra row read (CassandraStore.get) x${SEQUENTIAL} ...\n`);
    const reads = await cassandraRead(keyspace, targets[1]!.keyId, SEQUENTIAL);
    rows.push({
      measurement: "Cassandra row read (store.get)",
      target: "bench process",
      rate: null,
      p50_ms: round2(pct(reads, 50)),
      p99_ms: round2(pct(reads, 99)),
      max_ms: round2(maxOf(reads)),
      samples: reads.length,
      failures: 0,
    });

    // ── report ──
    const cols = (...c: [string, number][]) =>
      c
        .map(([v, w], i) => (i < 2 ? v.padEnd(w) : v.padStart(w)))
        .join("")
        .trimEnd() + "\n";
    const order = Object.values(M);
    rows.sort((a, b) => {
      const ia = order.indexOf(a.measurement);
      const ib = order.indexOf(b.measurement);
      return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || TARGET_ORDER.indexOf(a.target) - TARGET_ORDER.indexOf(b.target);
    });
    let out = "\n" + cols(["measurement", 36], ["target", 14], ["req/s", 8], ["p50 ms", 9], ["p99 ms", 9], ["max ms", 9], ["n", 7], ["failed", 8]);
    for (const r of rows) {
      out += cols(
        [r.measurement, 36],
        [r.target, 14],
        [r.rate === null ? "-" : String(r.rate), 8],
        [r.p50_ms.toFixed(2), 9],
        [r.p99_ms.toFixed(2), 9],
        [r.max_ms.toFixed(2), 9],
        [String(r.samples), 7],
        [String(r.failures), 8],
      );
    }
    const roles = ROLE_ORDER.filter((r) => cpuRows.some((c) => c.us_per_req[r] !== undefined));
    out += "\nCPU µs per answered request, by process (median of rounds), and how busy both cores were:\n";
    out += cols(["measurement", 36], ["target", 10], ...roles.map((r): [string, number] => [r, Math.max(10, r.length + 2)]), ["busy", 7]);
    for (const c of cpuRows.sort(
      (a, b) => order.indexOf(a.measurement) - order.indexOf(b.measurement) || TARGET_ORDER.indexOf(a.target) - TARGET_ORDER.indexOf(b.target),
    )) {
      out += cols(
        [c.measurement, 36],
        [c.target, 10],
        ...roles.map((r): [string, number] => [c.us_per_req[r] === undefined ? "" : String(c.us_per_req[r]), Math.max(10, r.length + 2)]),
        [`${c.machine_busy_pct}%`, 7],
      );
    }
    const jvm = ["cassandra: jit", "cassandra: gc", "kafka: jit", "kafka: gc"];
    out += "\nOf the JVMs' CPU above, µs per request in their JIT compiler and GC threads (cluster):\n";
    out += cols(["measurement", 36], ...jvm.map((r): [string, number] => [r, r.length + 2]));
    for (const c of cpuRows.filter((r) => r.target === "cluster")) {
      out += cols([c.measurement, 36], ...jvm.map((r): [string, number] => [String(c.us_per_req[r] ?? ""), r.length + 2]));
    }
    const goalRow = rows.find((r) => r.measurement === M.rate && r.target === "cluster");
    if (!goalRow) return; // counted only (BENCH_ROUNDS=0)
    const pacedRow = rows.find((r) => r.measurement === M.paced && r.target === "cluster")!;
    const goalMet = goalRow.p99_ms < GOAL_P99_MS && goalRow.failures === 0;
    const interference = watch.report();
    out +=
      `\nLatencies are per request, pooled over all rounds (${ROUNDS}), without coordinated-omission correction` +
      ` (autocannon's own corrected p99 is in the JSON); "evenly paced" counts from the planned send time.\n` +
      `req/s: median of rounds, 2xx only. autocannon's overallRate sends each connection's share at the start of every second, back to back,\n` +
      `so "@${RATE}/s autocannon" arrives as bursts of ${RATE_CONNECTIONS} concurrent requests; "evenly paced" sends one every ${1000 / RATE} ms.\n` +
      `The load generator (this process), Kafka, Cassandra and all Node processes share the same ${cpus.length} cores.\n` +
      (interference.quiet
        ? `Nothing else ran meanwhile (no other media server, test runner or type check; Kafka and Cassandra kept their pids).\n`
        : `WARNING: the machine was not quiet, the figures are disturbed:` +
          (interference.restarted.length ? ` ${interference.restarted.join(" and ")} restarted during the run;` : "") +
          interference.other_processes
            .slice(0, 5)
            .map((o) => ` "${o.command}" (${o.seconds} s)`)
            .join(",") +
          "\n") +
      `Goal: Get p99 < ${GOAL_P99_MS} ms in cluster mode at ${RATE} req/s: ${goalMet ? "MET" : "NOT MET"} (p99 ${goalRow.p99_ms} ms autocannon, ` +
      `per round ${goalRow.rounds!.map((r) => r.p99_ms).join(" / ")} ms; ${pacedRow.p99_ms} ms evenly paced).\n`;
    process.stdout.write(out);

    const dir = path.join(import.meta.dirname, "results");
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `cluster-${new Date().toISOString().slice(0, 10)}.json`);
    const git = (...args: string[]) => spawnSync("git", args, { cwd: ROOT, encoding: "utf8" }).stdout?.trim() ?? "";
    const meta = {
      at: new Date().toISOString(),
      commit: git("rev-parse", "--short", "HEAD"),
      changed_files: git("status", "--porcelain", "--untracked-files=no").split("\n").filter(Boolean).length,
      node: process.version,
      cpus: cpus.length,
      cpu_model: cpus[0]?.model,
      cluster: {
        gateways: GATEWAYS,
        actor_hosts: ACTOR_HOSTS,
        encoder_nodes: ENCODER_NODES,
        kafka: "3.9.2 single node (infra/kafka.sh)",
        cassandra: "5.0.9 single node (infra/cassandra.sh)",
      },
      rounds: ROUNDS,
      warmup_s: WARMUP,
      warmup_peers_s: WARMUP_PEERS,
      rate_per_s: RATE,
      rate_duration_s: RATE_DURATION,
      duration_s: DURATION,
      connections: { rate: RATE_CONNECTIONS, get_max: GET_CONNECTIONS, create_max: CREATE_CONNECTIONS },
      sequential: SEQUENTIAL,
      load_tool: "autocannon 8 and node:http, in the bench process, same machine",
      shared_cores: `load generator, Kafka, Cassandra and the Node processes all share ${cpus.length} cores`,
    };
    const goal = {
      p99_limit_ms: GOAL_P99_MS,
      rate_per_s: RATE,
      cluster_p99_ms: goalRow.p99_ms,
      cluster_p99_ms_per_round: goalRow.rounds!.map((r) => r.p99_ms),
      cluster_p99_ms_evenly_paced: pacedRow.p99_ms,
      met: goalMet,
    };
    writeFileSync(
      file,
      JSON.stringify(
        {
          ...meta,
          goal,
          interference,
          results: rows,
          cpu_us_per_request: cpuRows,
          ...(perRequest ? { per_request: perRequest, per_request_at_load: perRequestAtLoad } : {}),
        },
        null,
        2,
      ) + "\n",
    );
    process.stdout.write(`results: ${path.relative(process.cwd(), file)}\n`);
  } finally {
    for (const t of targets) {
      t.agent.destroy();
      await t.stop().catch((e: unknown) => process.stderr.write(`stopping ${t.name}: ${String(e)}\n`));
    }
    await dropKeyspace(keyspace).catch((e: unknown) => process.stderr.write(`dropping keyspace ${keyspace}: ${String(e)}\n`));
    await minio?.stop();
    for (const name of startedInfra.reverse()) {
      if (existsSync(script(name))) execFileSync("bash", [script(name), "down"], { stdio: "inherit" });
    }
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
    process.exit(1);
  },
);
