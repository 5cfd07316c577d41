// Benchmark: the uWS gateway against the same router on node:http (connect-node), each server in its
// own child process with its own data folder, one load tool (autocannon) driving both in alternation.
// Prints req/s (median of rounds), p99 latency, the server's CPU per request (from /proc, so less
// sensitive to other load on the machine) and the uWS/node ratios; writes test/bench/results/.
// Run: npx tsx test/bench/gateway.bench.ts   (BENCH_ROUNDS, BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS, BENCH_PIPELINING)
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { call, freePort, readBootstrap, spawnServer, tempDataDir, type ChildServer } from "../harness.js";

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  "2xx": number;
  latency: { p50: number; p99: number; average: number };
}
type Autocannon = (opts: {
  url: string;
  method: "POST";
  headers: Record<string, string>;
  body: string;
  connections: number;
  duration: number;
  pipelining: number;
}) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ROUNDS = num("BENCH_ROUNDS", 3);
const DURATION = num("BENCH_DURATION", 5);
const WARMUP = num("BENCH_WARMUP", 2);
const CONNECTIONS = num("BENCH_CONNECTIONS", 32);
const PIPELINING = num("BENCH_PIPELINING", 1);

const TICK_MS = (() => {
  try {
    return 1000 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
  } catch {
    return 10;
  }
})();
/** CPU time (user + system) a process has used, in ms; undefined where /proc is missing. */
function cpuMs(pid: number | undefined): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return undefined;
  }
}

type Host = "uws" | "node";
const HOSTS: readonly Host[] = ["uws", "node"];

interface Target {
  readonly host: Host;
  readonly server: ChildServer;
  readonly routes: Record<string, { headers: Record<string, string>; body: string }>;
}

async function startTarget(host: Host): Promise<Target> {
  const dataDir = tempDataDir(); // one writer per data folder: each server bootstraps its own
  const server = await spawnServer(dataDir, freePort(), { MEDIA_HTTP_SERVER: host });
  try {
    const boot = readBootstrap(dataDir);
    const created = await call(server.base, "APIKeyService/Create", { name: "bench target" }, { bearer: boot.api_key, org: boot.organization_id });
    if (created.status !== 200) throw new Error(`${host}: APIKeyService/Create answered ${created.status}: ${JSON.stringify(created.body)}`);
    const json = { "content-type": "application/json" };
    const auth = { ...json, authorization: `Bearer ${boot.api_key}`, "x-organization-id": boot.organization_id };
    const routes = {
      "HealthService/Check": { headers: json, body: "{}" },
      "APIKeyService/Get": { headers: auth, body: JSON.stringify({ id: created.body.api_key.id }) },
    };
    for (const [route, r] of Object.entries(routes)) {
      const probe = await call(server.base, route, r.body, { headers: r.headers });
      if (probe.status !== 200 || typeof probe.body !== "object") throw new Error(`${host}: ${route} answered ${probe.status}: ${JSON.stringify(probe.body)}`);
    }
    return { host, server, routes };
  } catch (e) {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }
}

async function load(t: Target, route: string, duration: number): Promise<AutocannonResult & { cpuUsPerReq: number }> {
  const r = t.routes[route]!;
  const cpu0 = cpuMs(t.server.child.pid);
  const res = await autocannon({
    url: `${t.server.base}/media.v1.${route}`,
    method: "POST",
    headers: r.headers,
    body: r.body,
    connections: CONNECTIONS,
    duration,
    pipelining: PIPELINING,
  });
  if (t.server.child.exitCode !== null || t.server.child.signalCode !== null) throw new Error(`${t.host} server exited (${t.server.child.exitCode ?? t.server.child.signalCode}): ${t.server.output().slice(-2000)}`);
  const cpu1 = cpuMs(t.server.child.pid);
  const done = res["2xx"] + res.non2xx;
  return { ...res, cpuUsPerReq: cpu0 === undefined || cpu1 === undefined || done === 0 ? NaN : ((cpu1 - cpu0) * 1000) / done };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function main(): Promise<void> {
  process.stdout.write(
    `gateway bench: ${ROUNDS} rounds x ${DURATION}s per target after a ${WARMUP}s warm-up, ${CONNECTIONS} connections, pipelining ${PIPELINING}\n` +
      `note: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}); autocannon shares the machine with the server under test.\n\n`,
  );
  const targets: Target[] = [];
  try {
    for (const host of HOSTS) targets.push(await startTarget(host));
    type Row = { route: string; host: Host; rps: number[]; p50: number[]; p99: number[]; cpu: number[]; failures: number };
    const rows: Row[] = [];
    for (const route of Object.keys(targets[0]!.routes)) {
      for (const t of targets) await load(t, route, WARMUP);
      const byHost = new Map(targets.map((t): [Host, Row] => [t.host, { route, host: t.host, rps: [], p50: [], p99: [], cpu: [], failures: 0 }]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const t of targets) {
          const res = await load(t, route, DURATION);
          const row = byHost.get(t.host)!;
          row.rps.push(res["2xx"] / res.duration);
          row.p50.push(res.latency.p50);
          row.p99.push(res.latency.p99);
          row.cpu.push(res.cpuUsPerReq);
          row.failures += res.non2xx + res.errors + res.timeouts;
          process.stdout.write(`  ${route.padEnd(20)} ${t.host.padEnd(4)} round ${round + 1}: ${Math.round(res["2xx"] / res.duration)} req/s, p99 ${res.latency.p99} ms, server CPU ${Math.round(res.cpuUsPerReq)} µs/req\n`);
        }
      }
      rows.push(...byHost.values());
    }

    const summary = rows.map((r) => ({
      route: r.route,
      host: r.host,
      rps: Math.round(median(r.rps)),
      p50_ms: median(r.p50),
      p99_ms: median(r.p99),
      cpu_us_per_req: Math.round(median(r.cpu)),
      failures: r.failures,
      rounds_rps: r.rps.map(Math.round),
    }));
    const of = (route: string, host: Host) => summary.find((s) => s.route === route && s.host === host)!;
    const round2 = (x: number) => Math.round(x * 100) / 100;
    const ratios = Object.fromEntries(
      [...new Set(rows.map((r) => r.route))].map((route) => [
        route,
        { rps_uws_over_node: round2(of(route, "uws").rps / of(route, "node").rps), cpu_per_req_node_over_uws: round2(of(route, "node").cpu_us_per_req / of(route, "uws").cpu_us_per_req) },
      ]),
    );
    const cols = (...c: [string, number][]) => c.map(([v, w], i) => (i < 2 ? v.padEnd(w) : v.padStart(w))).join("") + "\n";
    process.stdout.write("\n" + cols(["method", 22], ["target", 8], ["req/s", 9], ["p50 ms", 8], ["p99 ms", 8], ["CPU µs/req", 12], ["req/s uWS/node", 16], ["CPU node/uWS", 14]));
    for (const s of summary) {
      const r = ratios[s.route]!;
      const x = (v: number) => (s.host === "uws" ? `${v.toFixed(2)}x` : "");
      process.stdout.write(
        cols([s.route, 22], [s.host, 8], [String(s.rps), 9], [String(s.p50_ms), 8], [String(s.p99_ms), 8], [String(s.cpu_us_per_req), 12], [x(r.rps_uws_over_node), 16], [x(r.cpu_per_req_node_over_uws), 14]).trimEnd() +
          (s.failures ? `  (${s.failures} failed)` : "") +
          "\n",
      );
    }
    process.stdout.write(
      `\nreq/s, latency and CPU are medians of ${ROUNDS} rounds (req/s counts 2xx only); latency has 1 ms resolution.\n` +
        `CPU µs/req is the server process's user+system time per answered request. Goal: req/s uWS/node >= 2x on APIKeyService/Get.\n`,
    );

    const dir = path.join(import.meta.dirname, "results");
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `gateway-${new Date().toISOString().slice(0, 10)}.json`);
    const meta = { at: new Date().toISOString(), node: process.version, cpus: os.cpus().length, cpu: os.cpus()[0]?.model, rounds: ROUNDS, duration_s: DURATION, warmup_s: WARMUP, connections: CONNECTIONS, pipelining: PIPELINING, load_tool: "autocannon (same machine)" };
    writeFileSync(file, JSON.stringify({ ...meta, ratios, results: summary }, null, 2) + "\n");
    process.stdout.write(`results: ${path.relative(process.cwd(), file)}\n`);
  } finally {
    for (const t of targets) {
      await t.server.stop();
      rmSync(t.server.dataDir, { recursive: true, force: true });
    }
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
