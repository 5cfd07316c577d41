// Benchmark: JobService/Watch fan-out on one gateway. N concurrent Watch streams of ONE job, over
// the Connect protocol on HTTP/1.1 (one connection per stream), against `media serve` (embedded, uWS)
// running as a child process, so its memory is its own. Goal (the issue): 10,000 concurrent streams
// of one job under 1 GiB RSS, every subscriber seeing each update within 250 ms p99.
//
// Per round (a fresh server and data folder for each N):
//  - the job: a managed mp4 (256x144 H.264) of a long tiny test pattern fetched from a local HTTPS
//    peer, created with delayed_start, so it waits in awaiting_confirmation while the streams open;
//  - the streams: N `POST /media.v1.JobService/Watch` calls (application/connect+json, enveloped
//    {"id"}), spread over client worker processes (node:http, keep-alive agent, no socket cap), at
//    most BENCH_OPEN_CONCURRENCY opening at once per worker; a stream is open once its snapshot came;
//  - memory: the server's VmRSS before any stream, once all are open, sampled every 200 ms while the
//    updates flow, and its VmHWM at the end (/proc/<pid>/status);
//  - the updates: JobService/Confirm starts the encode; ffmpeg reports progress every 0.1 s and the
//    job publishes one update per whole percent (so up to ~10 updates a second, about 100 in all,
//    then the terminal `completed`). Each streamed job carries its updated_at, the moment the encoder
//    (in the same server process) read the progress line (server clock = client clock, one machine);
//    latency of a (subscriber, update) pair is the client's receive time minus it (taken when the
//    chunk arrives, before any parsing), p50/p99/max over every pair. A server too busy to read
//    ffmpeg's output stamps late, so under overload this understates the delay. The first update
//    after Confirm meets no backlog: its latency is the cost of one fan-out. Spread: per update,
//    last subscriber's receive time minus the first's. Missed: (stream, update) pairs never
//    received, of the updates any stream received; ended: streams that got their end-of-stream;
//  - ffmpeg (and its threads) are reniced to 19 (BENCH_NICE_FFMPEG): on 2 cores the encode would
//    otherwise take CPU from the gateway under test; in production encoders are other machines.
// The clients share the machine with the server: latency is end to end, client work included.
// Load averages, the CPU others used meanwhile and other heavy work seen (stryker, vitest, a CI's
// Kafka/Cassandra) are recorded; a round others used more than 0.25 of a core in marks it disturbed.
// Writes test/bench/results/watch-<date>.json (BENCH_OUT overrides).
// Run: npx tsx test/bench/watch.bench.ts [streams ...]   (npm run bench:watch -- 1000 10000; default 1000 5000 10000)
//   BENCH_CODEC (json: application/connect+json, as the spec's callers; proto: application/connect+proto,
//   which skips the gateway's JSON bridge), BENCH_STREAMS_PER_WORKER (2500),
//   BENCH_OPEN_CONCURRENCY (128 per worker), BENCH_INPUT_SECONDS (360),
//   BENCH_OPEN_TIMEOUT (180 s), BENCH_RUN_TIMEOUT (600 s), BENCH_QUIET_WAIT (longest wait for a quiet
//   machine before a round, 30 s), BENCH_NICE_FFMPEG (19; "off" keeps ffmpeg's priority),
//   BENCH_SERVER_ROOT (the checkout whose bin/media.js serves; this one by default) and BENCH_SERVER_COMMIT
//   (its commit, when it is an export without .git), BENCH_NOTE, BENCH_OUT,
//   BENCH_SERVER_NODE_ARGS (node flags of the server only, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof")
import { execFileSync, fork, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(import.meta.dirname, "../..");
const num = (name: string, fallback: number) => (process.env[name] === undefined || process.env[name] === "" ? fallback : Number(process.env[name]));

const GOAL = { streams: 10_000, rssBytes: 1024 ** 3, p99Ms: 250 } as const;
/** Receive time on the wall clock (the one the server stamps updated_at with), sub-millisecond. */
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ═════════════════════════════ the client worker ═════════════════════════════

type ToWorker =
  | {
      type: "open";
      codec: Codec;
      port: number;
      path: string;
      headers: Record<string, string>;
      body: Uint8Array;
      count: number;
      concurrency: number;
      deadline: number;
    }
  | { type: "finish"; deadline: number };

/** One update as a worker saw it: every receive time of its subscribers. */
interface SeenUpdate {
  key: string;
  event: string;
  status: string;
  progress: number;
  updatedAt: string;
  updatedAtMs: number;
  times: Float64Array;
}

interface WorkerResult {
  type: "result";
  count: number;
  opened: number;
  openMs: Float64Array;
  updates: SeenUpdate[];
  /** Non-snapshot messages each opened stream got, and how many distinct updates among them. */
  eventsPerStream: Uint16Array;
  distinctPerStream: Uint16Array;
  /** Messages a stream had already received (same update key): byte-identical or not. */
  repeats: { identical: number; differing: number };
  repeatSamples: { key: string; identical: boolean; previous_key: string }[];
  endedOk: number;
  endedWithError: number;
  stillOpen: number;
  errors: Record<string, number>;
  parseChecks: number;
  cpuSeconds: number;
  rssKb: number;
}

interface Stream {
  req?: http.ClientRequest;
  started: number;
  snapshotAt: number;
  buf: Buffer | undefined;
  events: number;
  distinct: number;
  /** Which of the worker's updates (by index) this stream has received. */
  seen: Uint8Array;
  last: number;
  done: boolean;
  failed: boolean;
}

interface Entry {
  u: Omit<SeenUpdate, "times">;
  index: number;
  /** The message as first received (latin1), to tell a byte-identical repeat from a key clash. */
  text: string;
  times: number[];
}

type Codec = "json" | "proto";
/** Reads a binary WatchJobResponse (proto codec only; loaded on first use). */
let decodeProto: ((bytes: Uint8Array) => { event: string; status: string; progress: number; updatedAt: string; updatedAtMs: number }) | undefined;
async function loadProto(): Promise<void> {
  const [{ fromBinary }, { WatchJobResponseSchema, JobStatus }] = await Promise.all([import("@bufbuild/protobuf"), import("../../src/gen/media/v1/job_pb.js")]);
  decodeProto = (bytes) => {
    const m = fromBinary(WatchJobResponseSchema, bytes);
    const t = m.job?.updatedAt;
    const ms = t ? Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6) : NaN;
    return {
      event: m.eventType,
      status: JobStatus[m.job?.status ?? 0] ?? "",
      progress: m.job?.progress ?? 0,
      updatedAt: t ? new Date(ms).toISOString() : "",
      updatedAtMs: ms,
    };
  };
}

const EVENT_TYPE = '"event_type":"';
const UPDATED_AT = '"updated_at":"';
const PROGRESS = '"progress":';

async function runWorker(): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 16 });
  const streams: Stream[] = [];
  const updates = new Map<string, Entry>();
  const byIndex: Entry[] = [];
  const repeats = { identical: 0, differing: 0 };
  const repeatSamples: WorkerResult["repeatSamples"] = [];
  /** One message of an update to a stream: the first receipt counts (latency), a repeat is counted apart. */
  const record = (s: Stream, entry: Entry, text: string, at: number) => {
    s.events++;
    if (entry.index >= s.seen.length) {
      const bigger = new Uint8Array(Math.max(entry.index + 1, s.seen.length * 2));
      bigger.set(s.seen);
      s.seen = bigger;
    }
    if (s.seen[entry.index]) {
      const identical = text === entry.text;
      repeats[identical ? "identical" : "differing"]++;
      if (repeatSamples.length < 5) repeatSamples.push({ key: entry.u.key, identical, previous_key: byIndex[s.last]?.u.key ?? "" });
    } else {
      s.seen[entry.index] = 1;
      s.distinct++;
      entry.times.push(at);
    }
    s.last = entry.index;
  };
  const newEntry = (key: string, u: Omit<SeenUpdate, "times">, text: string): Entry => {
    const entry: Entry = { u, index: byIndex.length, text, times: [] };
    byIndex.push(entry);
    updates.set(key, entry);
    return entry;
  };
  const errors: Record<string, number> = {};
  let parseChecks = 0;
  let pendingOpen = 0;
  let finished = 0;
  let onProgress: () => void = () => undefined;
  let codec: Codec = "json";
  const fail = (s: Stream, why: string) => {
    if (s.done) return;
    s.done = true;
    s.failed = true;
    errors[why] = (errors[why] ?? 0) + 1;
    if (s.started > 0 && s.snapshotAt === 0) pendingOpen--;
    finished++;
    onProgress();
  };

  const frame = (s: Stream, flags: number, payload: Buffer, at: number) => {
    if (flags & 0x02) {
      // End of stream: {} or {"error": {...}}.
      const end = JSON.parse(payload.toString("utf8")) as { error?: { code: string; message: string } };
      if (end.error) return fail(s, `end-stream ${end.error.code}: ${end.error.message.slice(0, 80)}`);
      s.done = true;
      finished++;
      onProgress();
      return;
    }
    if (codec === "proto") {
      // Every subscriber gets the same bytes for one update: the bytes are its key.
      const bytesKey = payload.toString("latin1");
      let seen = updates.get(bytesKey);
      if (!seen) {
        const m = decodeProto!(payload);
        parseChecks++;
        seen = newEntry(
          bytesKey,
          {
            key: `${m.event}|${m.updatedAt}|${m.progress}|${payload.length}`,
            event: m.event,
            status: m.status,
            progress: m.progress,
            updatedAt: m.updatedAt,
            updatedAtMs: m.updatedAtMs,
          },
          bytesKey,
        );
      }
      if (seen.u.event === "snapshot") {
        if (s.snapshotAt === 0) {
          s.snapshotAt = at;
          pendingOpen--;
          onProgress();
        }
        return;
      }
      record(s, seen, bytesKey, at);
      return;
    }
    const text = payload.toString("latin1");
    const e = text.indexOf(EVENT_TYPE);
    const event = e < 0 ? "" : text.slice(e + EVENT_TYPE.length, text.indexOf('"', e + EVENT_TYPE.length));
    if (event === "snapshot") {
      if (s.snapshotAt === 0) {
        s.snapshotAt = at;
        pendingOpen--;
        onProgress();
      }
      return;
    }
    const a = text.indexOf(UPDATED_AT);
    const updatedAt = a < 0 ? "" : text.slice(a + UPDATED_AT.length, text.indexOf('"', a + UPDATED_AT.length));
    // The job's own progress is its first "progress" (outputs come later); two updates can share an
    // updated_at (the encoder read several progress lines in one millisecond), not also a progress.
    const p = text.indexOf(PROGRESS);
    const progress = p < 0 ? "" : text.slice(p + PROGRESS.length, text.indexOf(",", p));
    const key = `${event}|${updatedAt}|${progress}|${payload.length}`;
    let seen = updates.get(key);
    if (!seen) {
      // First sight of this update in this worker: parse it whole, and check the quick reading.
      const m = JSON.parse(payload.toString("utf8")) as { event_type: string; job: { status: string; progress: number; updated_at: string } };
      parseChecks++;
      if (m.event_type !== event || m.job.updated_at !== updatedAt || String(m.job.progress) !== progress)
        throw new Error(`quick parse disagrees: ${event} ${updatedAt} ${progress} vs ${m.event_type} ${m.job.updated_at} ${m.job.progress}`);
      seen = newEntry(key, { key, event, status: m.job.status, progress: m.job.progress, updatedAt, updatedAtMs: Date.parse(updatedAt) }, text);
    }
    record(s, seen, text, at);
  };

  const open = (m: Extract<ToWorker, { type: "open" }>, s: Stream) => {
    const req = http.request({
      agent,
      host: "127.0.0.1",
      port: m.port,
      method: "POST",
      path: m.path,
      headers: { ...m.headers, "content-length": String(m.body.length) },
    });
    s.req = req;
    req.on("error", (e: NodeJS.ErrnoException) => fail(s, `request ${e.code ?? e.message}`));
    req.on("response", (res) => {
      if (res.statusCode !== 200 || !String(res.headers["content-type"]).startsWith(`application/connect+${m.codec}`)) {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (body += d));
        res.on("end", () => fail(s, `http ${res.statusCode} ${body.slice(0, 120)}`));
        return;
      }
      res.on("data", (chunk: Buffer) => {
        const at = now();
        let buf = s.buf ? Buffer.concat([s.buf, chunk]) : chunk;
        let off = 0;
        while (buf.length - off >= 5) {
          const len = buf.readUInt32BE(off + 1);
          if (buf.length - off < 5 + len) break;
          frame(s, buf[off]!, buf.subarray(off + 5, off + 5 + len), at);
          off += 5 + len;
        }
        s.buf = off === buf.length ? undefined : buf.subarray(off);
        buf = undefined as unknown as Buffer;
      });
      res.on("end", () => {
        if (!s.done) fail(s, "closed without an end-stream frame");
      });
      res.on("error", (e: NodeJS.ErrnoException) => fail(s, `response ${e.code ?? e.message}`));
    });
    req.end(m.body);
  };

  process.on("message", (msg: ToWorker) => {
    if (msg.type === "open") {
      void (async () => {
        codec = msg.codec;
        if (codec === "proto") await loadProto();
        for (let i = 0; i < msg.count; i++)
          streams.push({ started: 0, snapshotAt: 0, buf: undefined, events: 0, distinct: 0, seen: new Uint8Array(128), last: -1, done: false, failed: false });
        let next = 0;
        await new Promise<void>((resolve) => {
          let timer: NodeJS.Timeout | undefined;
          const settle = () => {
            clearInterval(timer);
            for (const s of streams) if (s.started === 0) fail(s, "not started before the open deadline");
            onProgress = () => undefined;
            resolve();
          };
          const pump = () => {
            while (next < streams.length && pendingOpen < msg.concurrency && now() < msg.deadline) {
              const s = streams[next++]!;
              s.started = now();
              pendingOpen++;
              open(msg, s);
            }
            if ((next === streams.length || now() >= msg.deadline) && pendingOpen <= 0) settle();
          };
          onProgress = pump;
          timer = setInterval(() => {
            if (now() < msg.deadline) return pump();
            for (const s of streams) if (s.started && !s.snapshotAt && !s.done) (s.req?.destroy(), fail(s, "no snapshot before the open deadline"));
            settle();
          }, 250);
          pump();
        });
        const opened = streams.filter((s) => s.snapshotAt > 0 && !s.failed).length;
        process.send!({ type: "opened", opened, failed: streams.length - opened, errors });
      })();
    } else if (msg.type === "finish") {
      void (async () => {
        while (finished < streams.length && now() < msg.deadline) await sleep(100);
        let stillOpen = 0;
        for (const s of streams) {
          if (!s.done) {
            stillOpen++;
            s.req?.destroy();
          }
        }
        agent.destroy();
        const openedStreams = streams.filter((s) => s.snapshotAt > 0);
        const cpu = process.cpuUsage();
        const result: WorkerResult = {
          type: "result",
          count: streams.length,
          opened: openedStreams.length,
          openMs: Float64Array.from(openedStreams.map((s) => s.snapshotAt - s.started)),
          updates: byIndex.map(({ u, times }) => ({ ...u, times: Float64Array.from(times) })),
          eventsPerStream: Uint16Array.from(openedStreams.map((s) => s.events)),
          distinctPerStream: Uint16Array.from(openedStreams.map((s) => s.distinct)),
          repeats,
          repeatSamples,
          endedOk: streams.filter((s) => s.done && !s.failed).length,
          endedWithError: streams.filter((s) => s.failed).length,
          stillOpen,
          errors,
          parseChecks,
          cpuSeconds: (cpu.user + cpu.system) / 1e6,
          rssKb: Math.round(process.memoryUsage.rss() / 1024),
        };
        process.send!(result, () => process.exit(0));
      })();
    }
  });
  process.send!({ type: "ready" });
}

// ═════════════════════════════ the bench ═════════════════════════════

const PER_WORKER = num("BENCH_STREAMS_PER_WORKER", 2500);
const OPEN_CONCURRENCY = num("BENCH_OPEN_CONCURRENCY", 128);
const INPUT_SECONDS = num("BENCH_INPUT_SECONDS", 360);
const OPEN_TIMEOUT_S = num("BENCH_OPEN_TIMEOUT", 180);
const RUN_TIMEOUT_S = num("BENCH_RUN_TIMEOUT", 600);
const QUIET_WAIT_S = num("BENCH_QUIET_WAIT", 30);
const NICE_FFMPEG = process.env.BENCH_NICE_FFMPEG === "off" ? undefined : num("BENCH_NICE_FFMPEG", 19);
const SERVER_ROOT = path.resolve(process.env.BENCH_SERVER_ROOT ?? ROOT);
const INPUT = { width: 320, height: 180, fps: 10 } as const;
const CODEC: Codec = process.env.BENCH_CODEC === "proto" ? "proto" : "json";
const OUTPUT = { type: "mp4", video: [{ codec: "h264", width: 256, height: 144 }] } as const;

const TICK = 1 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

function statFields(pid: number | "self"): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}
/** utime + stime (+ reaped children's with `children`), in seconds; 0 when the process is gone. */
function processCpu(pid: number | "self" | undefined, children = false): number {
  if (pid === undefined) return 0;
  try {
    const f = statFields(pid);
    return (Number(f[11]) + Number(f[12]) + (children ? Number(f[13]) + Number(f[14]) : 0)) * TICK;
  } catch {
    return 0;
  }
}
/** A field of /proc/<pid>/status in kB (VmRSS, VmHWM); 0 when the process is gone. */
function statusKb(pid: number | undefined, field: string): number {
  if (pid === undefined) return 0;
  try {
    const m = readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}
/** Busy CPU seconds of the whole machine (/proc/stat). */
function machineBusy(): number {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = cpu;
  return (user + nice + system + irq + softirq + steal) * TICK;
}
async function waitForQuiet(cores: number, maxSeconds: number): Promise<number> {
  const start = performance.now();
  while ((performance.now() - start) / 1000 < maxSeconds) {
    const before = machineBusy();
    await sleep(1000);
    if (machineBusy() - before < cores) break;
  }
  return (performance.now() - start) / 1000;
}

/** Every process: pid → [ppid, command line]. */
function processTable(): Map<number, { ppid: number; comm: string; cmd: string }> {
  const table = new Map<number, { ppid: number; comm: string; cmd: string }>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      table.set(Number(name), { ppid, comm, cmd: "" });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}
/** Processes below `root` (its children, their children, ...). */
function descendants(root: number, table = processTable()): number[] {
  const out: number[] = [];
  const walk = (pid: number) => {
    for (const [p, v] of table) if (v.ppid === pid) (out.push(p), walk(p));
  };
  walk(root);
  return out;
}
/** Others' heavy work: mutation tests, test runners, a Kafka or Cassandra (a CI run) — not ours. */
function otherHeavyWork(ours: ReadonlySet<number>): string[] {
  const seen = new Set<string>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || ours.has(Number(name))) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ");
      if (/stryker run|@stryker-mutator/.test(cmd)) seen.add("stryker");
      else if (/(^|[/ ])vitest\b/.test(cmd)) seen.add("vitest");
      else if (/kafka\.Kafka\b/.test(cmd)) seen.add("kafka");
      else if (/CassandraDaemon/.test(cmd)) seen.add("cassandra");
      else if (/bin\/media\.js (serve|gateway|actor-host|encoder-node|cluster)/.test(cmd)) seen.add("another media server");
    } catch {
      // gone meanwhile
    }
  }
  return [...seen].sort();
}

/** Renices ffmpeg below `serverPid`, every thread (Linux nice is per thread). */
function reniceFfmpeg(serverPid: number, nice: number, done: Set<number>): void {
  const table = processTable();
  for (const pid of descendants(serverPid, table)) {
    if (table.get(pid)?.comm !== "ffmpeg") continue;
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const t = Number(tid);
        if (done.has(t)) continue;
        os.setPriority(t, nice);
        done.add(t);
      }
    } catch {
      // ended meanwhile
    }
  }
}

/** Every child this bench started and has not seen exit: killed if the bench itself is stopped. */
const live = new Set<ChildProcess>();
function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once("exit", () => live.delete(child));
  return child;
}
process.on("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    process.stderr.write(`${signal}: stopping the server and the clients\n`);
    process.exit(130); // the exit handler kills them
  });
}

interface Server {
  child: ChildProcess;
  pid: number;
  base: string;
  port: number;
  dataDir: string;
  output(): string;
  stop(): Promise<string>;
}

/** A port below Linux's ephemeral range (32768+), so none of the client's sockets holds it. */
function freePort(): number {
  return 20000 + Math.floor(Math.random() * 11000);
}

/** `node bin/media.js serve` with its own data folder; its file limit raised to the hard limit. */
async function startServer(dataDir: string, env: Record<string, string>): Promise<Server> {
  for (let attempt = 0; ; attempt++) {
    const port = freePort();
    // exec keeps the pid: the shell becomes node, whose /proc/<pid>/status is the server's.
    const child = spawn(
      "bash",
      [
        "-c",
        'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"',
        process.execPath,
        ...(process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter(Boolean),
        path.join(SERVER_ROOT, "bin/media.js"),
        "serve",
      ],
      {
        cwd: SERVER_ROOT,
        env: { ...process.env, MEDIA_DATA_DIR: dataDir, MEDIA_HTTP_PORT: String(port), MEDIA_HTTP_HOST: "127.0.0.1", MEDIA_LOG_LEVEL: "warn", ...env },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    track(child);
    let out = "";
    const keep = (d: Buffer) => {
      out = (out + d.toString()).slice(-20_000);
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    const base = `http://127.0.0.1:${port}`;
    /** SIGTERM, then SIGKILL after 15 s; says how it went. */
    const stop = async (): Promise<string> => {
      if (child.exitCode !== null || child.signalCode !== null) return `had exited (${child.exitCode ?? child.signalCode})`;
      const t0 = performance.now();
      const cpu0 = processCpu(child.pid);
      const exited = new Promise<boolean>((r) => child.once("exit", () => r(true)));
      child.kill("SIGTERM");
      if (await Promise.race([exited, sleep(15_000).then(() => false)])) return `exited on SIGTERM in ${Math.round(performance.now() - t0)} ms`;
      const spun = processCpu(child.pid) - cpu0;
      child.kill("SIGKILL");
      await exited;
      return `still running 15 s after SIGTERM (it used ${spun.toFixed(1)} s of CPU meanwhile); killed`;
    };
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) break;
      try {
        const res = await fetch(`${base}/media.v1.HealthService/Check`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
        if (res.ok) return { child, pid: child.pid!, base, port, dataDir, output: () => out, stop };
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`server did not start: ${out}`);
      }
      await sleep(100);
    }
    if (attempt < 3 && /port is taken|EADDRINUSE/.test(out)) continue;
    throw new Error(`server exited early: ${out}`);
  }
}

interface Auth {
  bearer: string;
  org: string;
}
async function call(base: string, route: string, body: unknown, auth: Auth): Promise<any> {
  const res = await fetch(`${base}/media.v1.${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${auth.bearer}`, "x-organization-id": auth.org },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${route} answered ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text);
}

const percentile = (sorted: ArrayLike<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
const r1 = (x: number) => Math.round(x * 10) / 10;
const mb = (kb: number) => Math.round(kb / 1024);

interface Worker {
  proc: ChildProcess;
  messages: unknown[];
  waiters: ((m: unknown) => void)[];
}
function startWorker(): Worker {
  const proc = fork(fileURLToPath(import.meta.url), ["--worker"], {
    cwd: ROOT,
    execArgv: ["--import", "tsx"],
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  track(proc);
  const w: Worker = { proc, messages: [], waiters: [] };
  proc.on("message", (m) => {
    const waiter = w.waiters.shift();
    if (waiter) waiter(m);
    else w.messages.push(m);
  });
  return w;
}
function nextMessage<T>(w: Worker, what: string, timeoutMs: number): Promise<T> {
  const queued = w.messages.shift();
  if (queued) return Promise.resolve(queued as T);
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker ${w.proc.pid}: no ${what} after ${timeoutMs / 1000} s`)), timeoutMs);
    const exit = (code: number | null) => reject(new Error(`worker ${w.proc.pid} exited (${code}) before ${what}`));
    w.proc.once("exit", exit);
    w.waiters.push((m) => {
      clearTimeout(timer);
      w.proc.off("exit", exit);
      resolve(m as T);
    });
  });
}

interface Round {
  streams: number;
  workers: number;
  opened: number;
  open_failed: number;
  open_seconds: number;
  open_ms: { p50: number; p99: number; max: number };
  rss_mb: { baseline: number; all_open: number; peak_sampled: number; end: number; hwm: number };
  kb_per_stream: number;
  updates: number;
  update_span_seconds: number;
  updates_per_second: number;
  pairs: number;
  missed_pairs: number;
  /** Messages of an update a stream had already received: byte-identical repeats, or other bytes under the same key. */
  repeated_messages: { identical: number; differing: number };
  repeat_samples: { key: string; identical: boolean; previous_key: string }[];
  latency_ms: { p50: number; p90: number; p99: number; max: number };
  /** The first update after Confirm, which meets no backlog: the cost of one fan-out. */
  first_update_ms: { p50: number; p99: number; max: number; spread: number };
  spread_ms: { p50: number; p99: number; max: number };
  worst_updates: { event: string; progress: number; updated_at: string; p99_ms: number; spread_ms: number }[];
  /** The job as JobService/Get saw it once the streams had ended (or the run deadline came). */
  job_at_end: { status: string; progress: number };
  ended_ok: number;
  ended_with_error: number;
  still_open_at_deadline: number;
  errors: Record<string, number>;
  server_cpu_seconds: number;
  server_cpu_cores: number;
  server_cpu_us_per_message: number;
  ffmpeg_cpu_seconds: number;
  server_stop?: string;
  client_cpu_seconds: number;
  client_rss_mb: number;
  ffmpeg_reniced_threads: number;
  run_seconds: number;
  others_cpu_cores: number;
  other_heavy_work: string[];
  load_average_before: number[];
  load_average_after: number[];
  quiet_wait_seconds: number;
  disturbed: boolean;
  goal_met: boolean;
  server_exit?: string;
}

async function runRound(n: number, inputUrl: string, caFile: string, work: string): Promise<Round> {
  const quietWait = await waitForQuiet(0.5, QUIET_WAIT_S);
  const loadBefore = os.loadavg();
  const dataDir = mkdtempSync(path.join(work, "data-"));
  const server = await startServer(dataDir, {
    MEDIA_NET_ALLOW: "127.0.0.1/32",
    MEDIA_TLS_CA_FILE: caFile,
    MEDIA_RATE_LIMIT_KEY: "off",
    MEDIA_RATE_LIMIT_ANONYMOUS: "off",
    MEDIA_RATE_LIMIT_HEALTH: "off",
  });
  const workers: Worker[] = [];
  const reniced = new Set<number>();
  let sampler: NodeJS.Timeout | undefined;
  try {
    const boot = JSON.parse(readFileSync(path.join(dataDir, "bootstrap.json"), "utf8")) as { api_key: string; organization_id: string };
    const auth: Auth = { bearer: boot.api_key, org: boot.organization_id };
    const job = (
      await call(server.base, "JobService/Create", { input_url: inputUrl, managed: true, delayed_start: true, outputs: [{ ...OUTPUT, type: "hls" }] }, auth)
    ).job;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const j = (await call(server.base, "JobService/Get", { id: job.id }, auth)).job;
      if (j.status === "awaiting_confirmation") break;
      if (j.status !== "pending" && j.status !== "probing") throw new Error(`job ${job.id} is ${j.status}: ${JSON.stringify(j).slice(0, 800)}`);
      if (Date.now() > deadline) throw new Error(`job ${job.id} still ${j.status} after 120 s; server says: ${server.output().slice(-2000)}`);
      await sleep(200);
    }
    await sleep(500);
    const rssBaseline = statusKb(server.pid, "VmRSS");

    // ── open the streams ──
    const nWorkers = Math.max(1, Math.ceil(n / PER_WORKER));
    for (let i = 0; i < nWorkers; i++) workers.push(startWorker());
    await Promise.all(workers.map((w) => nextMessage(w, "ready", 30_000)));
    // The request message: {"id": ...} in JSON, or field 1 (a string) in binary protobuf.
    const id = new TextEncoder().encode(job.id);
    const message = CODEC === "json" ? new TextEncoder().encode(JSON.stringify({ id: job.id })) : Uint8Array.from([0x0a, id.length, ...id]);
    const body = new Uint8Array(5 + message.length);
    new DataView(body.buffer).setUint32(1, message.length);
    body.set(message, 5);
    const headers = {
      "content-type": `application/connect+${CODEC}`,
      "connect-protocol-version": "1",
      authorization: `Bearer ${auth.bearer}`,
      "x-organization-id": auth.org,
    };
    const t0 = performance.now();
    const openDeadline = now() + OPEN_TIMEOUT_S * 1000;
    workers.forEach((w, i) => {
      const count = Math.floor(n / nWorkers) + (i < n % nWorkers ? 1 : 0);
      w.proc.send({
        type: "open",
        codec: CODEC,
        port: server.port,
        path: "/media.v1.JobService/Watch",
        headers,
        body,
        count,
        concurrency: OPEN_CONCURRENCY,
        deadline: openDeadline,
      } satisfies ToWorker);
    });
    const opened = await Promise.all(
      workers.map((w) => nextMessage<{ opened: number; failed: number; errors: Record<string, number> }>(w, "opened", (OPEN_TIMEOUT_S + 30) * 1000)),
    );
    const openSeconds = (performance.now() - t0) / 1000;
    const openedCount = opened.reduce((a, o) => a + o.opened, 0);
    process.stdout.write(
      `  ${n} streams: ${openedCount} open in ${openSeconds.toFixed(1)} s` +
        (openedCount < n ? ` (${n - openedCount} failed: ${JSON.stringify(Object.assign({}, ...opened.map((o) => o.errors)))})` : "") +
        "\n",
    );
    await sleep(1000);
    const rssOpen = statusKb(server.pid, "VmRSS");

    // ── the updates ──
    let peakRss = rssOpen;
    sampler = setInterval(() => {
      peakRss = Math.max(peakRss, statusKb(server.pid, "VmRSS"));
      if (NICE_FFMPEG !== undefined) reniceFfmpeg(server.pid, NICE_FFMPEG, reniced);
    }, 200);
    const ours = () => new Set([process.pid, server.pid, ...descendants(server.pid), ...workers.map((w) => w.proc.pid!)]);
    const heavyBefore = otherHeavyWork(ours());
    const busy0 = machineBusy();
    const cpu0 = { server: processCpu(server.pid), serverTree: processCpu(server.pid, true), self: processCpu("self", true) };
    const r0 = performance.now();
    await call(server.base, "JobService/Confirm", { id: job.id }, auth);
    const finishDeadline = now() + RUN_TIMEOUT_S * 1000;
    for (const w of workers) w.proc.send({ type: "finish", deadline: finishDeadline } satisfies ToWorker);
    const results = await Promise.all(workers.map((w) => nextMessage<WorkerResult>(w, "result", (RUN_TIMEOUT_S + 60) * 1000)));
    const runSeconds = (performance.now() - r0) / 1000;
    const jobAtEnd = (
      await call(server.base, "JobService/Get", { id: job.id }, auth).catch((e: unknown) => ({ job: { status: `unknown (${String(e)})`, progress: -1 } }))
    ).job as { status: string; progress: number };
    clearInterval(sampler);
    sampler = undefined;
    const rssEnd = statusKb(server.pid, "VmRSS");
    const hwm = statusKb(server.pid, "VmHWM");
    peakRss = Math.max(peakRss, rssEnd);
    // The encode is over: its ffmpeg is reaped, its CPU in the server's cutime + cstime.
    const serverCpu = processCpu(server.pid) - cpu0.server;
    const ffmpegCpu = processCpu(server.pid, true) - cpu0.serverTree - serverCpu;
    // The workers have exited: their CPU is in this process's cutime + cstime.
    await Promise.all(workers.map((w) => (w.proc.exitCode === null ? new Promise((r) => w.proc.once("exit", r)) : undefined)));
    const selfCpu = processCpu("self", true) - cpu0.self;
    const busy = machineBusy() - busy0;
    const othersCores = Math.max(0, busy - serverCpu - ffmpegCpu - selfCpu) / runSeconds;
    const heavy = [...new Set([...heavyBefore, ...otherHeavyWork(ours())])].sort();
    const loadAfter = os.loadavg();

    // ── figures ──
    const byKey = new Map<string, { u: SeenUpdate; times: number[] }>();
    for (const r of results) {
      for (const u of r.updates) {
        const g = byKey.get(u.key);
        if (u.event === "snapshot") continue;
        if (g) g.times.push(...u.times);
        else byKey.set(u.key, { u, times: [...u.times] });
      }
    }
    const ups = [...byKey.values()].sort((a, b) => a.u.updatedAtMs - b.u.updatedAtMs);
    let pairs = 0;
    for (const g of ups) pairs += g.times.length;
    const latency = new Float64Array(pairs);
    const spreads: number[] = [];
    let k = 0;
    const perUpdate: Round["worst_updates"] = [];
    for (const g of ups) {
      let min = Infinity;
      let max = -Infinity;
      const mine = new Float64Array(g.times.length);
      g.times.forEach((t, i) => {
        latency[k++] = t - g.u.updatedAtMs;
        mine[i] = t - g.u.updatedAtMs;
        if (t < min) min = t;
        if (t > max) max = t;
      });
      mine.sort();
      spreads.push(max - min);
      perUpdate.push({ event: g.u.event, progress: g.u.progress, updated_at: g.u.updatedAt, p99_ms: r1(percentile(mine, 99)), spread_ms: r1(max - min) });
    }
    latency.sort();
    spreads.sort((a, b) => a - b);
    const first = ups[0] ? Float64Array.from(ups[0].times, (t) => t - ups[0]!.u.updatedAtMs).sort() : new Float64Array(0);
    const openMs = Float64Array.from(results.flatMap((r) => [...r.openMs])).sort();
    const openedStreams = results.reduce((a, r) => a + r.opened, 0);
    // Pairs count first receipts only; a stream that got an update twice has one pair and one repeat.
    let missed = 0;
    for (const r of results) for (const d of r.distinctPerStream) missed += ups.length - d;
    const repeated = { identical: 0, differing: 0 };
    for (const r of results) ((repeated.identical += r.repeats.identical), (repeated.differing += r.repeats.differing));
    const errors: Record<string, number> = {};
    for (const r of results) for (const [e, c] of Object.entries(r.errors)) errors[e] = (errors[e] ?? 0) + c;
    const span = ups.length > 1 ? (ups.at(-1)!.u.updatedAtMs - ups[0]!.u.updatedAtMs) / 1000 : 0;
    const p99 = percentile(latency, 99);
    const endedOk = results.reduce((a, r) => a + r.endedOk, 0);
    const disturbed = othersCores > 0.25 || heavy.length > 0;
    const round: Round = {
      streams: n,
      workers: nWorkers,
      opened: openedStreams,
      open_failed: n - openedStreams,
      open_seconds: r1(openSeconds),
      open_ms: { p50: r1(percentile(openMs, 50)), p99: r1(percentile(openMs, 99)), max: r1(percentile(openMs, 100)) },
      rss_mb: { baseline: mb(rssBaseline), all_open: mb(rssOpen), peak_sampled: mb(peakRss), end: mb(rssEnd), hwm: mb(hwm) },
      kb_per_stream: openedStreams ? r1((rssOpen - rssBaseline) / openedStreams) : NaN,
      updates: ups.length,
      update_span_seconds: r1(span),
      updates_per_second: span ? r1((ups.length - 1) / span) : 0,
      pairs,
      missed_pairs: missed,
      repeated_messages: repeated,
      repeat_samples: results.flatMap((r) => r.repeatSamples).slice(0, 5),
      latency_ms: { p50: r1(percentile(latency, 50)), p90: r1(percentile(latency, 90)), p99: r1(p99), max: r1(percentile(latency, 100)) },
      first_update_ms: {
        p50: r1(percentile(first, 50)),
        p99: r1(percentile(first, 99)),
        max: r1(percentile(first, 100)),
        spread: r1(percentile(first, 100) - percentile(first, 0)),
      },
      spread_ms: { p50: r1(percentile(spreads, 50)), p99: r1(percentile(spreads, 99)), max: r1(percentile(spreads, 100)) },
      worst_updates: [...perUpdate].sort((a, b) => b.p99_ms - a.p99_ms).slice(0, 5),
      job_at_end: { status: jobAtEnd.status, progress: jobAtEnd.progress },
      ended_ok: endedOk,
      ended_with_error: results.reduce((a, r) => a + r.endedWithError, 0),
      still_open_at_deadline: results.reduce((a, r) => a + r.stillOpen, 0),
      errors,
      server_cpu_seconds: r1(serverCpu),
      server_cpu_cores: Math.round((serverCpu / runSeconds) * 100) / 100,
      server_cpu_us_per_message: pairs ? Math.round((serverCpu * 1e6) / pairs) : NaN,
      ffmpeg_cpu_seconds: r1(ffmpegCpu),
      client_cpu_seconds: r1(results.reduce((a, r) => a + r.cpuSeconds, 0)),
      client_rss_mb: mb(results.reduce((a, r) => a + r.rssKb, 0)),
      ffmpeg_reniced_threads: reniced.size,
      run_seconds: r1(runSeconds),
      others_cpu_cores: Math.round(othersCores * 100) / 100,
      other_heavy_work: heavy,
      load_average_before: loadBefore.map((x) => Math.round(x * 100) / 100),
      load_average_after: loadAfter.map((x) => Math.round(x * 100) / 100),
      quiet_wait_seconds: r1(quietWait),
      disturbed,
      // Every stream opened, saw every update and the end, within the latency and memory goals.
      goal_met: openedStreams === n && endedOk === n && hwm * 1024 < GOAL.rssBytes && p99 <= GOAL.p99Ms && missed === 0 && ups.length > 0,
    };
    if (server.child.exitCode !== null || server.child.signalCode !== null)
      round.server_exit = `${server.child.exitCode ?? server.child.signalCode}: ${server.output().slice(-1000)}`;
    // Stopped right after the last terminal event, as a deploy would: how the server takes it is part of the result.
    round.server_stop = await server.stop();
    return round;
  } finally {
    if (sampler) clearInterval(sampler);
    for (const w of workers) if (w.proc.exitCode === null) w.proc.kill("SIGKILL");
    const leftovers = descendants(server.pid);
    await server.stop();
    for (const pid of leftovers) {
      try {
        process.kill(pid, "SIGKILL"); // an ffmpeg the server left behind
      } catch {
        // gone
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** HEAD and whether tracked files differ from it, of the checkout at `dir` (read only: no index refresh). */
function gitInfo(dir: string): { commit: string; dirty: boolean | undefined } {
  const git = (...args: string[]) =>
    execFileSync("git", ["--no-optional-locks", ...args], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  try {
    return { commit: git("rev-parse", "--short", "HEAD"), dirty: git("status", "--porcelain", "--untracked-files=no").length > 0 };
  } catch {
    return { commit: "", dirty: undefined };
  }
}

async function main(): Promise<void> {
  const args = process.argv
    .slice(2)
    .filter((a) => /^\d+$/.test(a))
    .map(Number);
  const counts = args.length ? args : (process.env.BENCH_STREAMS ?? "1000,5000,10000").split(",").map(Number);
  const { makeTestInput } = await import("../media.js");
  const { makeTestCa, startHttpsPeer } = await import("../peers.js");
  const work = mkdtempSync(path.join(os.tmpdir(), "watch-bench-"));
  const ca = makeTestCa();
  const loadBefore = os.loadavg();
  const rounds: Round[] = [];
  const failedRounds: { streams: number; error: string; load_average: number[] }[] = [];
  let web: { url: string; stop(): Promise<void> } | undefined;
  const stopAll = () => {
    rmSync(work, { recursive: true, force: true });
    ca.remove();
  };
  try {
    process.stdout.write(
      `watch bench: rounds of ${counts.join(", ")} streams of one job; ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}), load ${loadBefore.map((x) => x.toFixed(2)).join(" ")}, ` +
        `file limit ${execFileSync("bash", ["-c", "ulimit -n"], { encoding: "utf8" }).trim()} (server: ${execFileSync("bash", ["-c", "ulimit -Hn"], { encoding: "utf8" }).trim()})\n` +
        `server: ${path.relative(process.cwd(), path.join(SERVER_ROOT, "bin/media.js")) || SERVER_ROOT} serve (uWS); clients: ${PER_WORKER} streams per worker process\n`,
    );
    const inputFile = path.join(work, "input.mp4");
    await makeTestInput(inputFile, { seconds: INPUT_SECONDS, ...INPUT, audio: false });
    const data = readFileSync(inputFile);
    web = await startHttpsPeer(ca, (req, res) => {
      res.writeHead(req.url === "/input.mp4" ? 200 : 404, { "content-type": "video/mp4", "content-length": data.length }).end(data);
    });
    for (const n of counts) {
      process.stdout.write(`round: ${n} streams\n`);
      let r: Round;
      try {
        r = await runRound(n, `${web.url}/input.mp4`, ca.caFile, work);
      } catch (e) {
        const error = e instanceof Error ? e.message : String(e);
        failedRounds.push({ streams: n, error: error.slice(0, 4000), load_average: os.loadavg().map((x) => Math.round(x * 100) / 100) });
        process.stdout.write(`  FAILED: ${error.slice(0, 2000)}\n`);
        continue;
      }
      rounds.push(r);
      process.stdout.write(
        `  RSS ${r.rss_mb.baseline} → ${r.rss_mb.all_open} MB open (${r.kb_per_stream} kB/stream), peak ${r.rss_mb.hwm} MB; ${r.updates} updates at ${r.updates_per_second}/s; ` +
          `latency p50 ${r.latency_ms.p50} p99 ${r.latency_ms.p99} max ${r.latency_ms.max} ms (first update alone: p99 ${r.first_update_ms.p99} ms); spread p99 ${r.spread_ms.p99} ms; missed ${r.missed_pairs}; repeated ${r.repeated_messages.identical + r.repeated_messages.differing}; ${r.ended_ok} ended, ${r.still_open_at_deadline} still open at the deadline (job ${r.job_at_end.status} ${r.job_at_end.progress}%); server CPU ${r.server_cpu_cores} cores (${r.server_cpu_us_per_message} µs/message), ffmpeg ${r.ffmpeg_cpu_seconds} s; stop: ${r.server_stop}` +
          `${r.disturbed ? `; DISTURBED (others ${r.others_cpu_cores} cores${r.other_heavy_work.length ? `, ${r.other_heavy_work.join(", ")}` : ""})` : ""}\n`,
      );
      if (r.server_exit) process.stdout.write(`  server exited: ${r.server_exit}\n`);
    }
  } finally {
    await web?.stop();
    stopAll();
  }

  const cols = (...c: [string | number, number][]) => c.map(([v, w], i) => (i === 0 ? String(v).padEnd(w) : String(v).padStart(w))).join("") + "\n";
  let table =
    "\n" +
    cols(
      ["streams", 8],
      ["opened", 8],
      ["ended", 8],
      ["open s", 8],
      ["RSS base", 10],
      ["RSS open", 10],
      ["RSS peak", 10],
      ["kB/str", 8],
      ["upd", 5],
      ["upd/s", 7],
      ["p50 ms", 10],
      ["p99 ms", 10],
      ["max ms", 10],
      ["1st p99", 8],
      ["spread99", 9],
      ["missed", 8],
      ["goal", 6],
      ["", 11],
    );
  for (const r of rounds) {
    table += cols(
      [r.streams, 8],
      [r.opened, 8],
      [r.ended_ok, 8],
      [r.open_seconds, 8],
      [r.rss_mb.baseline, 10],
      [r.rss_mb.all_open, 10],
      [r.rss_mb.hwm, 10],
      [r.kb_per_stream, 8],
      [r.updates, 5],
      [r.updates_per_second, 7],
      [r.latency_ms.p50, 10],
      [r.latency_ms.p99, 10],
      [r.latency_ms.max, 10],
      [r.first_update_ms.p99, 8],
      [r.spread_ms.p99, 9],
      [r.missed_pairs, 8],
      [r.goal_met ? "met" : "no", 6],
      [r.disturbed ? "disturbed" : "", 11],
    );
  }
  for (const f of failedRounds) table += cols([f.streams, 8], [`failed: ${f.error.slice(0, 100)}`, 0]);
  const goalRound = rounds.filter((r) => r.streams >= GOAL.streams).at(-1);
  const goalMet = failedRounds.some((f) => f.streams >= GOAL.streams) ? false : goalRound ? goalRound.goal_met : undefined;
  const disturbed = rounds.some((r) => r.disturbed);
  table +=
    `RSS in MB (peak = VmHWM); latency = subscriber receive time − the update's updated_at, over every (stream, update) pair; 1st = the first update after Confirm\n` +
    `alone (no backlog yet: one fan-out); spread = last − first subscriber per update; missed = (stream, update) pairs never received;\n` +
    `repeated (in the results file) = messages of an update the stream had already received.\n` +
    `Goal: ${GOAL.streams} streams of one job under 1 GiB RSS, p99 ≤ ${GOAL.p99Ms} ms, none missed: ${goalMet === undefined ? `not measured (no round of ${GOAL.streams}+)` : goalMet ? "MET" : "NOT MET"}` +
    `${disturbed ? "  (DISTURBED: others used the machine meanwhile)" : ""}\n`;
  process.stdout.write(table);

  const git = gitInfo(ROOT);
  // The server's code: this checkout, or another one (BENCH_SERVER_ROOT; an export without .git names its commit in BENCH_SERVER_COMMIT).
  const serverGit =
    SERVER_ROOT === ROOT ? git : process.env.BENCH_SERVER_COMMIT ? { commit: process.env.BENCH_SERVER_COMMIT, dirty: undefined } : gitInfo(SERVER_ROOT);
  const out = process.env.BENCH_OUT ?? path.join(import.meta.dirname, "results", `watch-${new Date().toISOString().slice(0, 10)}.json`);
  mkdirSync(path.dirname(out), { recursive: true });
  const full = {
    at: new Date().toISOString(),
    commit: git.commit,
    working_tree_dirty: git.dirty,
    server_root: SERVER_ROOT === ROOT ? "this checkout" : SERVER_ROOT,
    server_commit: serverGit.commit,
    server_tree_dirty: serverGit.dirty ?? null,
    ...(process.env.BENCH_NOTE ? { note: process.env.BENCH_NOTE } : {}),
    node: process.version,
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model ?? "",
    memory_gb: Math.round(os.totalmem() / 1024 ** 3),
    file_limit: {
      bench: Number(execFileSync("bash", ["-c", "ulimit -n"], { encoding: "utf8" })),
      server: Number(execFileSync("bash", ["-c", "ulimit -Hn"], { encoding: "utf8" })),
    },
    load_average_before: loadBefore.map((x) => Math.round(x * 100) / 100),
    load_average_after: os.loadavg().map((x) => Math.round(x * 100) / 100),
    disturbed,
    goal: { streams: GOAL.streams, rss_mb: 1024, p99_ms: GOAL.p99Ms, missed: 0 },
    goal_met: goalMet ?? null,
    setup: {
      server: "media serve (embedded, uWS host) as a child process, rate limits off, log level warn; a fresh data folder per round",
      job: `managed mp4 ${OUTPUT.video[0].width}x${OUTPUT.video[0].height} h264 of a ${INPUT_SECONDS} s ${INPUT.width}x${INPUT.height} ${INPUT.fps} fps test pattern from a local HTTPS peer; delayed_start, confirmed once every stream is open`,
      codec: CODEC,
      streams: `Connect ${CODEC === "json" ? "JSON" : "binary protobuf"} server stream over HTTP/1.1, one connection per stream, node:http keep-alive agent; ${PER_WORKER} streams per client worker process, at most ${OPEN_CONCURRENCY} opening at once per worker`,
      latency:
        "client receive time (performance.timeOrigin + now(), when the chunk arrives) minus the streamed job's updated_at (the encoder's progress read), one clock",
      ffmpeg_nice: NICE_FFMPEG ?? "unchanged",
      disturbed_when:
        "others (neither the server, its children, the bench nor its workers) used > 0.25 core on average during a round, or stryker/vitest/Kafka/Cassandra/another media server ran",
    },
    rounds,
    ...(failedRounds.length ? { failed_rounds: failedRounds } : {}),
  };
  writeFileSync(out, `${JSON.stringify(full, null, 2)}\n`);
  process.stdout.write(`results: ${path.relative(process.cwd(), out)}\n`);
}

if (process.argv.includes("--worker")) {
  void runWorker();
} else {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
