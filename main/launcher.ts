// Local launcher: N gateways, M actor hosts and E encoder nodes as separate processes on one machine, for
// development and tests. Shared material (server secret, development issuer key) is made once,
// here, before any child starts, so the children never race to create it.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../src/config.js";
import { ensureServerSecret } from "./server.js";

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../bin/media.js");

export interface ClusterProcess {
  readonly role: "gateway" | "actor-host" | "encoder-node";
  readonly index: number;
  readonly port: number | undefined;
  /** Its metrics listener (MEDIA_METRICS_PORT): GET /metrics, every role. */
  readonly metricsPort: number;
  readonly child: ChildProcess;
  output(): string;
}

export interface LocalCluster {
  readonly gateways: readonly ClusterProcess[];
  readonly actorHosts: readonly ClusterProcess[];
  readonly encoderNodes: readonly ClusterProcess[];
  /** Starts one more process of a role (after a crash, say). */
  spawn(role: ClusterProcess["role"]): Promise<ClusterProcess>;
  /** Every process started, the spawned ones too, in the order started. */
  readonly processes: readonly ClusterProcess[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface LaunchOptions {
  readonly gateways: number;
  readonly actorHosts: number;
  /** Default 0. */
  readonly encoderNodes?: number;
  /** First gateway port; the others follow. */
  readonly basePort: number;
  /** Environment of every child: MEDIA_MODE=cluster, brokers, contact points, keyspace, data folder. */
  readonly env: Readonly<Record<string, string>>;
  readonly inheritOutput?: boolean;
}

async function waitHealthy(port: number, child: ChildProcess, out: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway on ${port} exited: ${out()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/media.v1.HealthService/Check`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`gateway on ${port} did not become healthy: ${out()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Whether a port can be listened on now. */
function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/**
 * A free port for a child's metrics listener, below Linux's ephemeral range (32768+) so that no
 * outbound socket takes it before the child listens, and outside 20000-31999 where the tests pick theirs.
 */
async function freeMetricsPort(host: string, taken: Set<number>): Promise<number> {
  for (;;) {
    const port = 12000 + Math.floor(Math.random() * 8000);
    if (taken.has(port) || !(await canListen(port, host))) continue;
    taken.add(port);
    return port;
  }
}

/** Waits for a line on the child's output that says it is ready. */
async function waitReady(child: ChildProcess, out: () => string, marker: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!out().includes(marker)) {
    if (child.exitCode !== null) throw new Error(`process exited: ${out()}`);
    if (Date.now() > deadline) throw new Error(`process not ready: ${out()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function launchCluster(options: LaunchOptions): Promise<LocalCluster> {
  // No load balancer probes a local cluster's gateways, so none waits out a drain delay unless told to.
  const env = { MEDIA_DRAIN_DELAY_SECONDS: "0", ...process.env, ...options.env, MEDIA_MODE: "cluster" };
  const config = loadConfig(env);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  // The processes share the server secret through the data folder; a cluster has no development issuer.
  ensureServerSecret(config);

  const all: ClusterProcess[] = [];
  let nextPort = options.basePort;
  const metricsPorts = new Set<number>();
  const start = async (role: ClusterProcess["role"], index: number): Promise<ClusterProcess> => {
    const port = role === "gateway" ? nextPort++ : undefined;
    const metricsPort = await freeMetricsPort(config.httpHost, metricsPorts);
    const child = spawn(process.execPath, [BIN, role], {
      env: { ...env, MEDIA_METRICS_PORT: String(metricsPort), ...(port !== undefined ? { MEDIA_HTTP_PORT: String(port) } : {}) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let text = "";
    const collect = (d: Buffer) => {
      text += d.toString();
      if (options.inheritOutput) process.stderr.write(`[${role}-${index}] ${d.toString()}`);
    };
    child.stdout!.on("data", collect);
    child.stderr!.on("data", collect);
    const proc: ClusterProcess = { role, index, port, metricsPort, child, output: () => text };
    all.push(proc);
    if (port !== undefined) await waitHealthy(port, child, proc.output);
    else await waitReady(child, proc.output, role === "actor-host" ? "actor host ready" : "encoder node ready");
    return proc;
  };

  // Actor hosts first: a gateway's bootstrap sends commands that need one. The first one alone,
  // so that one process applies the schema to an empty keyspace before the others look for it.
  const actorHosts: ClusterProcess[] = [];
  if (options.actorHosts > 0) actorHosts.push(await start("actor-host", 0));
  // Encoder nodes need only the schema and the bus: they start beside the other processes, which
  // takes about 3 s off every launch (each process takes 2 to 3 s to be ready here).
  const starting = Promise.all(Array.from({ length: options.encoderNodes ?? 0 }, (_, i) => start("encoder-node", i)));
  starting.catch(() => undefined); // awaited below; a failure before then must not go unhandled
  actorHosts.push(...(await Promise.all(Array.from({ length: options.actorHosts - 1 }, (_, i) => start("actor-host", i + 1)))));
  const gateways: ClusterProcess[] = [];
  // The first gateway may bootstrap an empty keyspace; the rest start once it is up.
  if (options.gateways > 0) gateways.push(await start("gateway", 0));
  gateways.push(...(await Promise.all(Array.from({ length: options.gateways - 1 }, (_, i) => start("gateway", i + 1)))));
  const encoderNodes = await starting;

  return {
    gateways,
    actorHosts,
    encoderNodes,
    processes: all,
    spawn: (role) => start(role, all.filter((p) => p.role === role).length),
    async stop(signal = "SIGTERM") {
      await Promise.all(
        all.map(
          (p) =>
            new Promise<void>((resolve) => {
              if (p.child.exitCode !== null || p.child.signalCode !== null) return resolve();
              const timer = setTimeout(() => p.child.kill("SIGKILL"), 15_000);
              p.child.once("exit", () => {
                clearTimeout(timer);
                resolve();
              });
              p.child.kill(signal);
            }),
        ),
      );
    },
  };
}
