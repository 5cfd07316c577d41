// Benchmark: Watch fan-out at a set update rate, without an encoder. The server (embedded, uWS,
// test/bench/watch-server.ts) runs in a child process of its own; the bench puts N jobs in its
// store (clones of one created job) and has it publish their updates on its in-process updates
// topic as the relay does, 1 a second per job (BENCH_RATE), for BENCH_SECONDS, then, spread over one more second, each job's
// terminal update. Cases (BENCH_CASES, default "one,many"):
//  - one: N streams of ONE job (1 update a second, to every stream);
//  - many: N streams of N different jobs, one stream each (N updates a second in all).
// Streams are Connect JSON (BENCH_CODEC=proto for binary) over HTTP/1.1, one connection each, from
// client worker processes (BENCH_STREAMS_PER_WORKER, 2500). Latency of a delivered message: the
// client's receive time (when the chunk arrives) minus the job's updated_at (stamped when it was
// published; one clock); p50/p99/max over every message. Each stream checks its messages: snapshot
// first, progress only up (no repeat, none out of order), the terminal `completed` last.
// Server CPU per delivered message: the server process's CPU between the first publish and the last
// stream's end, over the messages delivered (publishing, in the same process, included); split
// into the updates (until the terminal updates start) and, per stream, its terminal message and end. Memory:
// the server's VmRSS before the streams, once open, sampled every 200 ms, and VmHWM.
// Run: npx tsx test/bench/watch-fanout.bench.ts [streams]   (npm run bench:watch-fanout -- 10000; default 10000)
//   BENCH_SERVER_ROOT (the checkout whose code serves; this one by default), BENCH_SECONDS (60),
//   BENCH_MODE=cluster (a local cluster of BENCH_GATEWAYS (2) gateways on Kafka and Cassandra, which
//   infra/*.sh start when they are not running and stop again; streams spread over the gateways;
//   CPU and memory are the gateways'), BENCH_RATE (1), BENCH_CASES, BENCH_CODEC, BENCH_OUT, BENCH_NOTE, BENCH_SERVER_NODE_ARGS (node flags of the
//   server only, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
import { execFileSync, fork, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(import.meta.dirname, "../..");
const num = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (sorted: Float64Array, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const r1 = (x: number) => Math.round(x * 10) / 10;
/** The sorted latencies of every message less the terminal ones (both sorted; equal values are interchangeable). */
function withoutTerminals(all: Float64Array, terminal: Float64Array): Float64Array {
  const out = new Float64Array(all.length - terminal.length);
  let t = 0;
  let o = 0;
  for (const x of all) {
    if (t < terminal.length && terminal[t] === x) t++;
    else if (o < out.length) out[o++] = x;
  }
  return out;
}

// ═════════════════════════════ the client worker ═════════════════════════════

type ToWorker =
  { type: "open"; port: number; ids: string[]; headers: Record<string, string>; codec: "json" | "proto"; concurrency: number } | { type: "collect" };

interface Stream {
  buf: Buffer | undefined;
  snapshot: boolean;
  lastProgress: number;
  updates: number;
  ended: boolean;
  error?: string;
}

async function runWorker(): Promise<void> {
  const streams: Stream[] = [];
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  let disorder = 0;
  let terminals = 0;
  const terminalLatencies: number[] = [];
  let decode: ((b: Buffer) => { event: string; progress: number; updatedAtMs: number }) | undefined;
  const PROGRESS = '"progress":';
  const UPDATED_AT = '"updated_at":"';
  const EVENT = '"event_type":"';
  const readJson = (b: Buffer) => {
    const t = b.toString("latin1");
    const e = t.indexOf(EVENT);
    const p = t.indexOf(PROGRESS);
    const u = t.indexOf(UPDATED_AT);
    return {
      event: t.slice(e + EVENT.length, t.indexOf('"', e + EVENT.length)),
      progress: p < 0 ? 0 : parseInt(t.slice(p + PROGRESS.length, p + PROGRESS.length + 4), 10),
      updatedAtMs: Date.parse(t.slice(u + UPDATED_AT.length, t.indexOf('"', u + UPDATED_AT.length))),
    };
  };
  const frame = (s: Stream, flags: number, data: Buffer, at: number) => {
    if (flags & 0x02) {
      const end = JSON.parse(data.toString("utf8")) as { error?: { code: string } };
      s.ended = true;
      if (end.error) s.error = end.error.code;
      return;
    }
    const m = decode!(data);
    if (m.event === "snapshot") return void (s.snapshot = true);
    if (count === latencies.length) {
      const bigger = new Float64Array(latencies.length * 2);
      bigger.set(latencies);
      latencies = bigger;
    }
    latencies[count++] = at - m.updatedAtMs;
    s.updates++;
    if (m.event === "completed") (terminals++, terminalLatencies.push(at - m.updatedAtMs));
    else if (m.progress <= s.lastProgress && m.progress < 99) disorder++;
    s.lastProgress = m.progress;
  };
  process.on("message", (msg: ToWorker) => {
    if (msg.type === "collect") {
      const sorted = latencies.slice(0, count);
      process.send!({
        type: "result",
        latencies: Array.from(sorted),
        opened: streams.filter((s) => s.snapshot).length,
        ended: streams.filter((s) => s.ended && !s.error).length,
        errors: streams.filter((s) => s.error).length,
        terminals,
        terminalLatencies,
        disorder,
        cpu: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
      });
      return;
    }
    void (async () => {
      if (msg.codec === "proto") {
        const [{ fromBinary }, { WatchJobResponseSchema }] = await Promise.all([import("@bufbuild/protobuf"), import("../../src/gen/media/v1/job_pb.js")]);
        decode = (b) => {
          const m = fromBinary(WatchJobResponseSchema, b);
          const t = m.job?.updatedAt;
          return { event: m.eventType, progress: m.job?.progress ?? 0, updatedAtMs: t ? Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6) : NaN };
        };
      } else decode = readJson;
      let pending = 0;
      let next = 0;
      await new Promise<void>((resolve) => {
        const pump = () => {
          while (next < msg.ids.length && pending < msg.concurrency) {
            const id = msg.ids[next++]!;
            const s: Stream = { buf: undefined, snapshot: false, lastProgress: -1, updates: 0, ended: false };
            streams.push(s);
            pending++;
            const json = Buffer.from(JSON.stringify({ id }));
            const body = Buffer.alloc(5 + json.length);
            body.writeUInt32BE(json.length, 1);
            json.copy(body, 5);
            let counted = false;
            const opened = () => {
              if (counted) return;
              counted = true;
              pending--;
              if (next < msg.ids.length) pump();
              else if (pending === 0) resolve();
            };
            // A raw HTTP/1.1 socket, the chunked body parsed here: lighter than node:http, whose
            // parser and streams cost the clients (on this same machine) more CPU than the server.
            const socket = net.connect(msg.port, "127.0.0.1");
            socket.setNoDelay(true);
            const head = [`POST /media.v1.JobService/Watch HTTP/1.1`, `host: 127.0.0.1:${msg.port}`, `content-length: ${body.length}`];
            for (const [k, v] of Object.entries(msg.headers)) head.push(`${k}: ${v}`);
            socket.write(`${head.join("\r\n")}\r\n\r\n`);
            socket.write(body);
            let raw: Buffer | undefined;
            let inHead = true;
            let chunkLeft = 0; // bytes of the current chunk still to come
            const frameBytes = (chunk: Buffer, at: number) => {
              let buf = s.buf ? Buffer.concat([s.buf, chunk]) : chunk;
              let off = 0;
              while (buf.length - off >= 5) {
                const len = buf.readUInt32BE(off + 1);
                if (buf.length - off < 5 + len) break;
                frame(s, buf[off]!, buf.subarray(off + 5, off + 5 + len), at);
                off += 5 + len;
              }
              s.buf = off === buf.length ? undefined : Buffer.from(buf.subarray(off));
              buf = undefined as unknown as Buffer;
            };
            socket.on("data", (data: Buffer) => {
              const at = now();
              let b = raw ? Buffer.concat([raw, data]) : data;
              raw = undefined;
              let off = 0;
              if (inHead) {
                const end = b.indexOf("\r\n\r\n");
                if (end < 0) return void (raw = b);
                if (!b.subarray(0, 12).toString("latin1").startsWith("HTTP/1.1 200")) {
                  s.error = "status";
                  socket.destroy();
                  return opened();
                }
                inHead = false;
                off = end + 4;
              }
              while (off < b.length) {
                if (chunkLeft > 0) {
                  const take = Math.min(chunkLeft, b.length - off);
                  frameBytes(b.subarray(off, off + take), at);
                  off += take;
                  chunkLeft -= take;
                  continue;
                }
                // A chunk's size line, after the previous chunk's CRLF.
                const eol = b.indexOf("\r\n", off);
                if (eol < 0) break;
                const line = b.subarray(off, eol).toString("latin1");
                if (line === "") {
                  off = eol + 2;
                  continue;
                }
                const size = parseInt(line, 16);
                off = eol + 2;
                if (size === 0) {
                  socket.end();
                  break;
                }
                chunkLeft = size;
              }
              if (off < b.length && chunkLeft === 0) raw = Buffer.from(b.subarray(off));
              b = undefined as unknown as Buffer;
              if (s.snapshot || s.ended) opened();
            });
            socket.on("error", () => ((s.error ??= "socket"), opened()));
            socket.on("close", () => opened());
          }
        };
        pump();
      });
      process.send!({ type: "opened" });
    })();
  });
}

// ═════════════════════════════ the bench ═════════════════════════════

const TICK = 1 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
/** A process's CPU seconds, user and system (kernel: on loopback, a write also pays the receiving side's TCP). */
function processCpu(pid: number, which: "all" | "system" = "all"): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((which === "all" ? Number(f[11]) : 0) + Number(f[12])) * TICK;
  } catch {
    return 0;
  }
}
function statusKb(pid: number, field: string): number {
  try {
    const m = readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}
function gitCommit(dir: string): string {
  try {
    return execFileSync("git", ["-C", dir, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    return process.env.BENCH_SERVER_COMMIT ?? "unknown";
  }
}

/** Waits for one IPC message of `type` from a child. */
function nextMessage<T>(child: ChildProcess, type: string, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} within ${ms} ms`)), ms);
    const on = (m: { type: string }) => {
      if (m.type !== type) return;
      clearTimeout(timer);
      child.off("message", on);
      resolve(m as T);
    };
    child.on("message", on);
    child.once("exit", (code) => reject(new Error(`child exited (${code}) before ${type}`)));
  });
}

const CLUSTER = process.env.BENCH_MODE === "cluster";

/** Kafka and Cassandra (infra/*.sh) for a cluster round; returns how to stop what was started here. */
function clusterInfra(): () => void {
  const script = (name: string, ...args: string[]) => spawnSync("bash", [path.join(ROOT, "infra", name), ...args], { stdio: "inherit" }).status;
  const started = ["kafka.sh", "cassandra.sh"].filter((s) => spawnSync("bash", [path.join(ROOT, "infra", s), "status"], { stdio: "ignore" }).status !== 0);
  for (const s of started) if (script(s, "up") !== 0) throw new Error(`infra/${s} up failed`);
  return () => {
    for (const s of started) script(s, "down", "--clean");
  };
}

async function round(kind: "one" | "many", streams: number): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "bench-watch-fanout-"));
  const serverRoot = path.resolve(process.env.BENCH_SERVER_ROOT ?? ROOT);
  const cluster = CLUSTER
    ? {
        MEDIA_MODE: "cluster",
        MEDIA_KAFKA_BROKERS: process.env.MEDIA_KAFKA_BROKERS ?? "127.0.0.1:9092",
        MEDIA_CASSANDRA_CONTACT_POINTS: process.env.MEDIA_CASSANDRA_CONTACT_POINTS ?? "127.0.0.1:9042",
        MEDIA_CASSANDRA_KEYSPACE: `bench_watch_${Math.random().toString(36).slice(2, 10)}`,
        MEDIA_COMMAND_PARTITIONS: "4",
      }
    : {};
  const server = fork(path.join(ROOT, "test/bench/watch-server.ts"), [], {
    cwd: serverRoot,
    env: {
      ...process.env,
      MEDIA_DATA_DIR: dataDir,
      MEDIA_HTTP_PORT: "0",
      MEDIA_HTTP_HOST: "127.0.0.1",
      MEDIA_LOG_LEVEL: "warn",
      MEDIA_RATE_LIMIT_KEY: "off",
      MEDIA_RATE_LIMIT_ANONYMOUS: "off",
      MEDIA_RATE_LIMIT_HEALTH: "off",
      ...cluster,
    },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    execArgv: [...process.execArgv, ...(process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter(Boolean)],
  });
  const workers: ChildProcess[] = [];
  try {
    const ready = await nextMessage<{ ports: number[]; pids: number[]; bootstrap: { api_key: string; organization_id: string; app_id: string } }>(
      server,
      "ready",
      300_000,
    );
    // The gateways: the server process (embedded), or the cluster's gateway processes.
    const pids = ready.pids;
    const cpuOf = () => pids.reduce((n, p) => n + processCpu(p), 0);
    const systemCpuOf = () => pids.reduce((n, p) => n + processCpu(p, "system"), 0);
    const rssOf = (field: string) => pids.map((p) => statusKb(p, field));
    const base = `http://127.0.0.1:${ready.ports[0]}`;
    const auth = { authorization: `Bearer ${ready.bootstrap.api_key}`, "x-organization-id": ready.bootstrap.organization_id };
    // The template: a managed job whose input is never fetched (the bench publishes its updates).
    const created = await fetch(`${base}/media.v1.JobService/Create`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({
        app_id: ready.bootstrap.app_id,
        input_url: "https://bench.invalid/in.mp4",
        managed: true,
        outputs: [{ type: "hls", video: [{ codec: "h264", width: 256, height: 144 }] }],
      }),
    });
    if (created.status !== 200) throw new Error(`Create: ${created.status} ${await created.text()}`);
    const template = ((await created.json()) as { job: { id: string } }).job.id;
    const jobs = kind === "one" ? 1 : streams;
    server.send({ type: "seed", template, count: jobs });
    const { ids } = await nextMessage<{ ids: string[] }>(server, "seeded", 300_000);
    const rssBefore = rssOf("VmRSS");

    const perWorker = num("BENCH_STREAMS_PER_WORKER", 2500);
    const codec = process.env.BENCH_CODEC === "proto" ? "proto" : "json";
    const headers = { ...auth, "content-type": `application/connect+${codec}`, "connect-protocol-version": "1" };
    const openStart = performance.now();
    for (let w = 0; w * perWorker < streams; w++) {
      const worker = fork(fileURLToPath(import.meta.url), ["--worker"], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit", "ipc"] });
      workers.push(worker);
      const mine = Array.from({ length: Math.min(perWorker, streams - w * perWorker) }, (_, i) => ids[kind === "one" ? 0 : w * perWorker + i]!);
      worker.send({ type: "open", port: ready.ports[w % ready.ports.length]!, ids: mine, headers, codec, concurrency: 128 } satisfies ToWorker);
    }
    await Promise.all(workers.map((w) => nextMessage(w, "opened", 600_000)));
    const openSeconds = (performance.now() - openStart) / 1000;
    const rssOpen = rssOf("VmRSS");

    const peak = [...rssOpen];
    const sampler = setInterval(() => rssOf("VmRSS").forEach((kb, i) => (peak[i] = Math.max(peak[i]!, kb))), 200);
    const seconds = num("BENCH_SECONDS", 60);
    const cpu0 = cpuOf();
    const system0 = systemCpuOf();
    const t0 = performance.now();
    // The CPU of the updates alone, before the terminal updates (which also end every stream).
    const cpuAtTerminals = nextMessage(server, "terminals", (seconds + 600) * 1000).then(() => ({ all: cpuOf() - cpu0, system: systemCpuOf() - system0 }));
    server.send({ type: "publish", ids, seconds, perSecond: num("BENCH_RATE", 1) });
    const { publishMs } = await nextMessage<{ publishMs: number }>(server, "published", (seconds + 600) * 1000);
    // Until every stream has its end (or 10 minutes).
    const deadline = Date.now() + 600_000;
    let results: {
      latencies: number[];
      terminalLatencies: number[];
      opened: number;
      ended: number;
      errors: number;
      terminals: number;
      disorder: number;
      cpu: number;
    }[] = [];
    for (;;) {
      results = await Promise.all(
        workers.map((w) => {
          const r = nextMessage<(typeof results)[number]>(w, "result", 60_000);
          w.send({ type: "collect" } satisfies ToWorker);
          return r;
        }),
      );
      if (results.reduce((n, r) => n + r.ended + r.errors, 0) >= streams || Date.now() > deadline) break;
      await sleep(1000);
    }
    const runSeconds = (performance.now() - t0) / 1000;
    const cpu = cpuOf() - cpu0;
    const systemCpu = systemCpuOf() - system0;
    clearInterval(sampler);
    const all = Float64Array.from(results.flatMap((r) => r.latencies)).sort();
    const delivered = all.length;
    const { all: updatesCpu, system: updatesSystemCpu } = await cpuAtTerminals;
    const updatesDelivered = streams * seconds * num("BENCH_RATE", 1); // in either case, each stream gets each of its job's updates
    const terminal = Float64Array.from(results.flatMap((r) => r.terminalLatencies)).sort();
    const published = (kind === "one" ? 1 : streams) * seconds * num("BENCH_RATE", 1) + jobs;
    return {
      case: `${kind === "one" ? `${streams} streams of one job` : `${streams} streams of ${streams} different jobs`}${CLUSTER ? `, cluster: ${pids.length} gateways` : ""}`,
      streams,
      jobs,
      opened: results.reduce((n, r) => n + r.opened, 0),
      open_seconds: r1(openSeconds),
      updates_published: published,
      messages_delivered: delivered,
      messages_expected: kind === "one" ? streams * (seconds * num("BENCH_RATE", 1) + 1) : published,
      latency_ms: { p50: r1(percentile(all, 50)), p90: r1(percentile(all, 90)), p99: r1(percentile(all, 99)), max: r1(all[all.length - 1] ?? NaN) },
      // The terminal messages alone: each also ends its stream, which costs more than an update.
      terminal_latency_ms: { p50: r1(percentile(terminal, 50)), p99: r1(percentile(terminal, 99)) },
      // The `updated` messages alone (every message but the terminal ones).
      updated_latency_ms: (() => {
        const updated = withoutTerminals(all, terminal);
        return { p50: r1(percentile(updated, 50)), p90: r1(percentile(updated, 90)), p99: r1(percentile(updated, 99)) };
      })(),
      ended_ok: results.reduce((n, r) => n + r.ended, 0),
      ended_with_error: results.reduce((n, r) => n + r.errors, 0),
      terminal_messages: results.reduce((n, r) => n + r.terminals, 0),
      out_of_order_or_repeated: results.reduce((n, r) => n + r.disorder, 0),
      // Per gateway process.
      rss_mb: {
        before_streams: rssBefore.map((kb) => Math.round(kb / 1024)),
        all_open: rssOpen.map((kb) => Math.round(kb / 1024)),
        peak_sampled: peak.map((kb) => Math.round(kb / 1024)),
        hwm: rssOf("VmHWM").map((kb) => Math.round(kb / 1024)),
      },
      // Of every gateway together.
      server_cpu_seconds: r1(cpu),
      server_cpu_system_seconds: r1(systemCpu),
      server_cpu_cores: Math.round((cpu / runSeconds) * 100) / 100,
      server_cpu_us_per_message: Math.round((cpu / Math.max(1, delivered)) * 1e6 * 10) / 10,
      // Until the terminal updates: every update published by then, delivered to each stream of its job.
      server_cpu_us_per_update_message: Math.round((updatesCpu / Math.max(1, updatesDelivered)) * 1e6 * 10) / 10,
      // Of which the kernel's (system time): the socket writes, on loopback with the receiving side's TCP.
      server_system_cpu_us_per_update_message: Math.round((updatesSystemCpu / Math.max(1, updatesDelivered)) * 1e6 * 10) / 10,
      // The terminal message and the end of one stream (Connect's end of the call, the socket's end).
      server_cpu_us_per_stream_end: Math.round(((cpu - updatesCpu) / streams) * 1e6),
      publish_ms_in_server: Math.round(publishMs),
      client_cpu_seconds: r1(results.reduce((n, r) => n + r.cpu, 0)),
      run_seconds: r1(runSeconds),
      load_average_after: os.loadavg().map((x) => Math.round(x * 100) / 100),
    };
  } finally {
    for (const w of workers) w.kill("SIGKILL");
    if (server.connected) server.send({ type: "stop" });
    await Promise.race([new Promise((r) => server.once("exit", r)), sleep(15_000)]);
    server.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const streams = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 10_000);
  const cases = (process.env.BENCH_CASES ?? "one,many").split(",") as ("one" | "many")[];
  const serverRoot = path.resolve(process.env.BENCH_SERVER_ROOT ?? ROOT);
  const rounds = [];
  for (const kind of cases) {
    process.stdout.write(`${kind}: ${streams} streams…\n`);
    const stopInfra = CLUSTER ? clusterInfra() : () => undefined;
    let r;
    try {
      r = await round(kind, streams);
    } finally {
      stopInfra();
    }
    process.stdout.write(`${JSON.stringify(r)}\n`);
    rounds.push(r);
  }
  const out = process.env.BENCH_OUT ?? path.join(ROOT, `test/bench/results/watch-fanout-${new Date().toISOString().slice(0, 10)}.json`);
  const result = {
    at: new Date().toISOString(),
    commit: gitCommit(ROOT),
    server_root: serverRoot === ROOT ? "this checkout" : serverRoot,
    server_commit: serverRoot === ROOT ? gitCommit(ROOT) : (process.env.BENCH_SERVER_COMMIT ?? gitCommit(serverRoot)),
    note: process.env.BENCH_NOTE ?? "",
    node: process.version,
    cpus: os.availableParallelism(),
    load_average_before: os.loadavg(),
    setup: {
      server: CLUSTER
        ? "a local cluster (gateways and one actor host as processes on Kafka and Cassandra), rate limits off; jobs cloned into Cassandra; updates published on the Kafka updates topic by the bench (test/bench/watch-server.ts), spread evenly over each second"
        : "media serve (embedded, uWS) in a child process, rate limits off; jobs cloned into its store; updates published on its in-process updates topic by the bench (test/bench/watch-server.ts), spread evenly over each second",
      seconds: num("BENCH_SECONDS", 60),
      updates_per_job_per_second: num("BENCH_RATE", 1),
      streams: `Connect ${process.env.BENCH_CODEC === "proto" ? "binary" : "JSON"} over HTTP/1.1, one connection each, ${num("BENCH_STREAMS_PER_WORKER", 2500)} per client worker process`,
    },
    rounds,
  };
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`results: ${path.relative(process.cwd(), out)}\n`);
}

if (process.argv.includes("--worker")) void runWorker();
else
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
