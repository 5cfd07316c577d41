// Benchmark: the uWS gateway against the same router on node:http (connect-node), each server in its
// own child process with its own data folder, one load tool (autocannon) driving both in alternation.
// Prints req/s (median of rounds), p99 latency, the server's CPU per request (from /proc, so less
// sensitive to other load on the machine) and the uWS/node ratios; writes test/bench/results/.
// A second suite runs APIKeyService/Get on two uWS servers, rate limiter off and on (limits high
// enough that nothing is refused, so every call pays for the buckets), and prints the on/off ratios.
// A third, the same with tracing off and on (exporting to the tests' OTLP receiver), and with
// BENCH_BEFORE=<another checkout> that checkout's server beside them.
// Run: npx tsx test/bench/gateway.bench.ts   (BENCH_SUITES=hosts,limiter,tracing, BENCH_BEFORE, BENCH_ROUNDS, BENCH_DURATION, BENCH_WARMUP, BENCH_CONNECTIONS, BENCH_PIPELINING)
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { call, freePort, readBootstrap, spawnServer, tempDataDir, type ChildServer } from "../harness.js";
import { startOtlpReceiver } from "../otlp-receiver.js";

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
const SUITES = (process.env.BENCH_SUITES ?? "hosts,limiter,tracing").split(",").map((s) => s.trim());

/** Every rate limit off: the host comparison measures the gateway, not the limiter. */
const LIMITS_OFF = { MEDIA_RATE_LIMIT_KEY: "0", MEDIA_RATE_LIMIT_ANONYMOUS: "0", MEDIA_RATE_LIMIT_HEALTH: "0" };
/** Every limiter on, none ever refusing: the key's bucket is taken and the address gate peeked on each call. */
const LIMITS_ON = {
  MEDIA_RATE_LIMIT_KEY: "1000000/s,burst=1000000",
  MEDIA_RATE_LIMIT_ANONYMOUS: "1000000/s,burst=1000000",
  MEDIA_RATE_LIMIT_HEALTH: "1000000/s,burst=1000000",
};

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
  readonly label: string;
  readonly server: ChildServer;
  readonly routes: Record<string, { headers: Record<string, string>; body: string }>;
}

async function startTarget(host: Host, label: string = host, env: Record<string, string> = LIMITS_OFF, checkout?: string): Promise<Target> {
  const dataDir = tempDataDir(); // one writer per data folder: each server bootstraps its own
  const server = await spawnServer(dataDir, freePort(), { MEDIA_HTTP_SERVER: host, ...env }, checkout);
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
    return { host, label, server, routes };
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
  if (t.server.child.exitCode !== null || t.server.child.signalCode !== null)
    throw new Error(`${t.host} server exited (${t.server.child.exitCode ?? t.server.child.signalCode}): ${t.server.output().slice(-2000)}`);
  const cpu1 = cpuMs(t.server.child.pid);
  const done = res["2xx"] + res.non2xx;
  return { ...res, cpuUsPerReq: cpu0 === undefined || cpu1 === undefined || done === 0 ? NaN : ((cpu1 - cpu0) * 1000) / done };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const meta = () => ({
  at: new Date().toISOString(),
  node: process.version,
  cpus: os.cpus().length,
  cpu: os.cpus()[0]?.model,
  rounds: ROUNDS,
  duration_s: DURATION,
  warmup_s: WARMUP,
  connections: CONNECTIONS,
  pipelining: PIPELINING,
  load_tool: "autocannon (same machine)",
});

function writeResults(name: string, data: object): void {
  const dir = path.join(import.meta.dirname, "results");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}-${new Date().toISOString().slice(0, 10)}.json`);
  writeFileSync(file, JSON.stringify(data, null, 2) + "\n");
  process.stdout.write(`results: ${path.relative(process.cwd(), file)}\n`);
}

async function main(): Promise<void> {
  process.stdout.write(
    `gateway bench: ${ROUNDS} rounds x ${DURATION}s per target after a ${WARMUP}s warm-up, ${CONNECTIONS} connections, pipelining ${PIPELINING}\n` +
      `note: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}); autocannon shares the machine with the server under test.\n\n`,
  );
  if (SUITES.includes("hosts")) await hostsSuite();
  if (SUITES.includes("limiter")) await limiterSuite();
  if (SUITES.includes("tracing")) await tracingSuite();
}

/** uWS against node:http on the same router, both routes. */
async function hostsSuite(): Promise<void> {
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
          process.stdout.write(
            `  ${route.padEnd(20)} ${t.host.padEnd(4)} round ${round + 1}: ${Math.round(res["2xx"] / res.duration)} req/s, p99 ${res.latency.p99} ms, server CPU ${Math.round(res.cpuUsPerReq)} µs/req\n`,
          );
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
        {
          rps_uws_over_node: round2(of(route, "uws").rps / of(route, "node").rps),
          cpu_per_req_node_over_uws: round2(of(route, "node").cpu_us_per_req / of(route, "uws").cpu_us_per_req),
        },
      ]),
    );
    const cols = (...c: [string, number][]) => c.map(([v, w], i) => (i < 2 ? v.padEnd(w) : v.padStart(w))).join("") + "\n";
    process.stdout.write(
      "\n" + cols(["method", 22], ["target", 8], ["req/s", 9], ["p50 ms", 8], ["p99 ms", 8], ["CPU µs/req", 12], ["req/s uWS/node", 16], ["CPU node/uWS", 14]),
    );
    for (const s of summary) {
      const r = ratios[s.route]!;
      const x = (v: number) => (s.host === "uws" ? `${v.toFixed(2)}x` : "");
      process.stdout.write(
        cols(
          [s.route, 22],
          [s.host, 8],
          [String(s.rps), 9],
          [String(s.p50_ms), 8],
          [String(s.p99_ms), 8],
          [String(s.cpu_us_per_req), 12],
          [x(r.rps_uws_over_node), 16],
          [x(r.cpu_per_req_node_over_uws), 14],
        ).trimEnd() +
          (s.failures ? `  (${s.failures} failed)` : "") +
          "\n",
      );
    }
    process.stdout.write(
      `\nreq/s, latency and CPU are medians of ${ROUNDS} rounds (req/s counts 2xx only); latency has 1 ms resolution.\n` +
        `CPU µs/req is the server process's user+system time per answered request. Goal: req/s uWS/node >= 2x on APIKeyService/Get.\n`,
    );

    writeResults("gateway", { ...meta(), ratios, results: summary });
  } finally {
    for (const t of targets) {
      await t.server.stop();
      rmSync(t.server.dataDir, { recursive: true, force: true });
    }
  }
}

/**
 * APIKeyService/Get on uWS with every rate limiter off and on, rounds alternating between the two
 * servers so drift in the machine's load falls on both alike. Goal: the limiter costs < 3%.
 */
async function limiterSuite(): Promise<void> {
  await sideBySide("limiter", "gateway-limiter", "Goal: cost < 3%.", [
    () => startTarget("uws", "limiter off", LIMITS_OFF),
    () => startTarget("uws", "limiter on", LIMITS_ON),
  ]);
}

/**
 * APIKeyService/Get on uWS with tracing off (the default) and on (every call sampled, spans
 * exported to the tests' OTLP receiver), and, with BENCH_BEFORE=<another checkout>, that
 * checkout's server as it was before tracing. Goal: off within noise of before; on, its cost noted.
 */
async function tracingSuite(): Promise<void> {
  const receiver = await startOtlpReceiver();
  const before = process.env.BENCH_BEFORE;
  try {
    await sideBySide("tracing", "gateway-tracing", "Goal: off within noise of before (their rounds' spread); on, its cost noted in docs/operations.md.", [
      ...(before ? [() => startTarget("uws", "before", LIMITS_OFF, before)] : []),
      () => startTarget("uws", "tracing off", LIMITS_OFF),
      () => startTarget("uws", "tracing on", { ...LIMITS_OFF, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }),
    ]);
    process.stdout.write(`spans received by the OTLP receiver: ${(await receiver.spans()).length}\n`);
  } finally {
    await receiver.stop();
  }
}

/**
 * APIKeyService/Get on several uWS servers, rounds alternating between them so drift in the
 * machine's load falls on all alike; each against the first, by req/s and server CPU per request.
 */
async function sideBySide(what: string, resultName: string, goal: string, starts: readonly (() => Promise<Target>)[]): Promise<void> {
  const route = "APIKeyService/Get";
  const targets: Target[] = [];
  try {
    for (const start of starts) targets.push(await start());
    for (const t of targets) await load(t, route, WARMUP);
    const rows = new Map(targets.map((t) => [t.label, { rps: [] as number[], p99: [] as number[], cpu: [] as number[], failures: 0 }]));
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so none always runs right after another's load.
      for (const t of round % 2 ? [...targets].reverse() : targets) {
        const res = await load(t, route, DURATION);
        const row = rows.get(t.label)!;
        row.rps.push(res["2xx"] / res.duration);
        row.p99.push(res.latency.p99);
        row.cpu.push(res.cpuUsPerReq);
        row.failures += res.non2xx + res.errors + res.timeouts;
        process.stdout.write(
          `  ${route.padEnd(20)} ${t.label.padEnd(12)} round ${round + 1}: ${Math.round(res["2xx"] / res.duration)} req/s, p99 ${res.latency.p99} ms, server CPU ${res.cpuUsPerReq.toFixed(1)} µs/req\n`,
        );
      }
    }
    const summary = [...rows].map(([label, r]) => ({
      route,
      target: label,
      rps: Math.round(median(r.rps)),
      p99_ms: median(r.p99),
      cpu_us_per_req: Math.round(median(r.cpu) * 10) / 10,
      failures: r.failures,
      rounds_rps: r.rps.map(Math.round),
    }));
    const first = summary[0]!;
    const round3 = (x: number) => Math.round(x * 1000) / 1000;
    const ratios = Object.fromEntries(
      summary
        .slice(1)
        .map((s) => [`${s.target} / ${first.target}`, { rps: round3(s.rps / first.rps), cpu_per_req: round3(s.cpu_us_per_req / first.cpu_us_per_req) }]),
    );
    process.stdout.write(`\n${"method".padEnd(22)}${"target".padEnd(14)}${"req/s".padStart(9)}${"p99 ms".padStart(8)}${"CPU µs/req".padStart(12)}\n`);
    for (const s of summary)
      process.stdout.write(
        `${s.route.padEnd(22)}${s.target.padEnd(14)}${String(s.rps).padStart(9)}${String(s.p99_ms).padStart(8)}${s.cpu_us_per_req.toFixed(1).padStart(12)}${s.failures ? `  (${s.failures} failed)` : ""}\n`,
      );
    process.stdout.write("\n");
    for (const [pair, r] of Object.entries(ratios))
      process.stdout.write(
        `${what}: ${pair}: req/s ${r.rps.toFixed(3)}x (cost ${((1 - r.rps) * 100).toFixed(1)}%), ` +
          `server CPU per request ${r.cpu_per_req.toFixed(3)}x (cost ${((r.cpu_per_req - 1) * 100).toFixed(1)}%)\n`,
      );
    process.stdout.write(`${goal}\n`);
    writeResults(resultName, { ...meta(), ratios, results: summary });
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
