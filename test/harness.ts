// Test harness: a real server (in-process or as a child process) on a free port with a fresh
// data folder, and a raw JSON caller that shows exactly what a strict client sees.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadConfig, type Config } from "../src/config.js";
import { mintDevToken } from "../src/identity.js";
import { testIssuer } from "./issuer.js";
import { createLogger } from "../src/log.js";
import { launchCluster } from "../main/launcher.js";
import { startServer, type Bootstrap } from "../main/server.js";
import type { Store } from "../src/store/port.js";
import { cassandraContactPoint, cassandraPeer, kafkaBrokers } from "./cluster/endpoints.js";
import { cassandraClientOptions } from "../src/store/cassandra-store.js";
import { collectGarbageHere, collectGarbageIn } from "./gc.js";
import { idempotencyRecordId } from "../gateway/idempotency.js";

export const ROOT = path.resolve(import.meta.dirname, "..");

export function tempDataDir(): string {
  return mkdtempSync(path.join(tmpdir(), "media-test-"));
}

export function testConfig(dataDir: string, extra: Record<string, string> = {}): Config {
  return loadConfig({ MEDIA_DATA_DIR: dataDir, MEDIA_HTTP_PORT: "0", MEDIA_HTTP_HOST: "127.0.0.1", MEDIA_LOG_LEVEL: "silent", ...extra });
}

export interface Harness {
  /** The embedded server (its store reachable), or the cluster's first gateway. */
  readonly server: { readonly port: number; readonly store?: Store; close(): Promise<void> };
  readonly config: Config;
  readonly base: string;
  /** Every gateway's base URL (one in the embedded mode). */
  readonly bases: readonly string[];
  readonly boot: Bootstrap;
  token(email: string): Promise<string>;
  /** A full garbage collection in the process serving `base` (test/gc.ts), before measuring its memory. */
  collectGarbage(base: string): Promise<void>;
}

/** Which deployment the API suites run against: MEDIA_TEST_TARGET=cluster for Kafka and Cassandra. */
export const TARGET: "embedded" | "cluster" = process.env.MEDIA_TEST_TARGET === "cluster" ? "cluster" : "embedded";

/** A fresh keyspace per cluster, so suites never see each other's data. */
export const freshKeyspace = (): string => `media_test_${randomUUID().replace(/-/g, "").slice(0, 16)}`;

export async function startHarness(extra: Record<string, string> = {}, dataDir = tempDataDir()): Promise<Harness> {
  if (TARGET === "cluster") return startClusterHarness(extra, dataDir);
  const config = testConfig(dataDir, extra);
  const server = await startServer(config, createLogger(process.env.MEDIA_TEST_LOG_LEVEL ?? "silent"));
  const base = `http://127.0.0.1:${server.port}`;
  return {
    server,
    config,
    base,
    bases: [base],
    boot: server.bootstrap!,
    token: (email) => mintDevToken(config, email),
    collectGarbage: () => collectGarbageHere(),
  };
}

/**
 * Makes the embedded server forget an Idempotency-Key's claim for every API key of the caller, as a
 * call that failed without an answer (an ask timed out) releases it: the retry then runs again.
 */
export async function forgetIdempotencyKey(h: Harness, auth: Auth, method: string, key: string): Promise<void> {
  const store = h.server.store;
  if (!store) throw new Error("only the embedded server's store is reachable from a test");
  const keys = (await ok(call(h.base, "APIKeyService/List", { pagination: { limit: 100 } }, auth))).api_keys as { id: string }[];
  for (const k of keys) await store.commit({ writes: [{ table: "idempotency", id: idempotencyRecordId(k.id, method, key), value: null }] });
}

/** Environment of a test cluster's processes: its own keyspace (and so its own topics) and data folder. */
export function clusterEnv(dataDir: string, keyspace: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    MEDIA_MODE: "cluster",
    MEDIA_DATA_DIR: dataDir,
    MEDIA_HTTP_HOST: "127.0.0.1",
    MEDIA_LOG_LEVEL: "warn",
    MEDIA_KAFKA_BROKERS: kafkaBrokers().join(","),
    MEDIA_CASSANDRA_CONTACT_POINTS: cassandraContactPoint(),
    MEDIA_CASSANDRA_KEYSPACE: keyspace,
    MEDIA_COMMAND_PARTITIONS: "4",
    // The inspector, when a test opens it (SIGUSR1, test/gc.ts), on a free port.
    NODE_OPTIONS: [process.env.NODE_OPTIONS, "--inspect-port=0"].filter(Boolean).join(" "),
    ...extra,
  };
}

/** Drops a test keyspace; best effort, a leftover one is harmless. */
export async function dropKeyspace(keyspace: string, contactPoint = cassandraContactPoint()): Promise<void> {
  const { default: cassandra } = await import("cassandra-driver");
  const client = new cassandra.Client(cassandraClientOptions({ ...cassandraPeer(), contactPoints: [contactPoint] }));
  try {
    await client.connect();
    await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`, [], { readTimeout: 60_000 });
  } catch {
    /* best effort */
  } finally {
    await client.shutdown();
  }
}

/** 2 gateways and 2 actor hosts as processes, on the Kafka and Cassandra the cluster setup started. */
async function startClusterHarness(extra: Record<string, string>, dataDir: string): Promise<Harness> {
  // A cluster refuses the development issuer: its people sign in through an issuer of the test's.
  const issuer = await testIssuer();
  const env = clusterEnv(dataDir, freshKeyspace(), { ...issuer.env, ...extra });
  const config = loadConfig(env);
  const basePort = freePort();
  nextPort += 4;
  const cluster = await launchCluster({ gateways: 2, actorHosts: 2, encoderNodes: 1, basePort, env });
  const bases = cluster.gateways.map((g) => `http://127.0.0.1:${g.port}`);
  let turn = 0;
  return {
    server: { port: cluster.gateways[0]!.port!, close: () => cluster.stop() },
    config,
    // Calls alternate between the gateways, so every suite also checks that they agree.
    get base() {
      return bases[turn++ % bases.length]!;
    },
    bases,
    boot: readBootstrap(dataDir),
    token: (email) => issuer.token(email),
    collectGarbage: async (base) => {
      const gateway = cluster.gateways[bases.indexOf(base)];
      if (!gateway) throw new Error(`no gateway of this cluster serves ${base}`);
      await collectGarbageIn(gateway.child.pid!, gateway.output);
    },
  };
}

export interface Reply {
  readonly status: number;
  readonly body: any;
  readonly headers: Headers;
}

export interface Auth {
  readonly bearer?: string;
  readonly org?: string;
  readonly headers?: Record<string, string>;
}

/** The body of a 200 reply; any other status fails the test, showing the status and body. */
export async function ok(reply: Promise<Pick<Reply, "status" | "body">>): Promise<any> {
  const r = await reply;
  if (r.status !== 200) throw new Error(`expected 200, got ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Polls `probe` every 100 ms until it gives a value (not undefined), for at most `ms`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The statuses a job ends in. */
export const ENDED: readonly string[] = ["completed", "failed", "canceled", "partial"];

/** Polls JobService/Get until the job has ended (or `until` holds); throws with its state when it has not after `ms`. */
export async function waitForJob(base: string, id: string, auth: Auth, options: { until?: (job: any) => boolean; ms?: number } = {}): Promise<any> {
  const done = options.until ?? ((j: any) => ENDED.includes(j.status));
  const deadline = Date.now() + (options.ms ?? 150_000);
  for (;;) {
    const job = (await ok(call(base, "JobService/Get", { id }, auth))).job;
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} stuck in ${job.status}: ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** An S3 origin (OriginService/Create) on a bucket of a MinIO peer, with its admin's credentials; answers its ID. */
export async function createS3Origin(
  base: string,
  auth: Auth,
  minio: { readonly admin: { readonly accessKeyId: string; readonly secretAccessKey: string } },
  name: string,
  bucket: string,
  permissions: string[],
): Promise<string> {
  const credentials = { access_key_id: minio.admin.accessKeyId, secret_access_key: minio.admin.secretAccessKey };
  return (await ok(call(base, "OriginService/Create", { name, permissions, s3: { bucket, region: "us-east-1", credentials } }, auth))).origin.id as string;
}

/** POSTs JSON to /media.v1.<Service>/<Method>, as the spec's wire format says. */
export async function call(base: string, route: string, body: unknown, auth: Auth = {}): Promise<Reply> {
  const headers: Record<string, string> = { "content-type": "application/json", ...auth.headers };
  if (auth.bearer) headers.authorization = `Bearer ${auth.bearer}`;
  if (auth.org) headers["x-organization-id"] = auth.org;
  const res = await fetch(`${base}/media.v1.${route}`, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON: left as text */
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** Decodes the media.v1.ErrorDetails of an error body. */
export async function errorDetails(body: any): Promise<{ code: string; message: string; fieldViolations: { field: string; description: string }[] }> {
  const { fromBinary } = await import("@bufbuild/protobuf");
  const { ErrorDetailsSchema } = await import("../src/gen/media/v1/common_pb.js");
  const detail = body.details?.find((d: any) => d.type === "media.v1.ErrorDetails");
  if (!detail) throw new Error(`no ErrorDetails in ${JSON.stringify(body)}`);
  return fromBinary(ErrorDetailsSchema, Buffer.from(detail.value, "base64"));
}

/** The service as a user runs it: `node bin/media.js serve` in a child process. */
export interface ChildServer {
  readonly child: ChildProcess;
  readonly base: string;
  readonly dataDir: string;
  readonly output: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `checkout`: another checkout's server (a bench's "before"); this one's by default. */
export async function spawnServer(dataDir: string, port: number, env: Record<string, string> = {}, checkout: string = ROOT): Promise<ChildServer> {
  const child = spawn(process.execPath, [path.join(checkout, "bin/media.js"), "serve"], {
    cwd: checkout,
    env: { ...process.env, MEDIA_DATA_DIR: dataDir, MEDIA_HTTP_PORT: String(port), MEDIA_HTTP_HOST: "127.0.0.1", MEDIA_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early: ${out}`);
    try {
      const res = await fetch(`${base}/media.v1.HealthService/Check`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      if (res.ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`server did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    base,
    dataDir,
    output: () => out,
    stop: (signal = "SIGTERM") =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once("exit", (code) => resolve(code));
        child.kill(signal);
      }),
  };
}

export function readBootstrap(dataDir: string): Bootstrap {
  const file = path.join(dataDir, "bootstrap.json");
  if (!existsSync(file)) throw new Error("no bootstrap.json");
  return JSON.parse(readFileSync(file, "utf8")) as Bootstrap;
}

// Below Linux's ephemeral range (32768+), so an outbound socket never holds a port handed out here.
let nextPort = 20000 + Math.floor(Math.random() * 11000);
export const freePort = (): number => nextPort++;
