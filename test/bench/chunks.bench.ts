// Benchmark: one ladder, many encoder nodes. Time to ready of a 4-rung HLS ladder (1080p, 720p,
// 480p, 360p H.264 and AAC) of a 1080p30 source in cluster mode (real Kafka, Cassandra, MinIO), on
// two encoder nodes each pinned to one core with taskset (the ladder split into chunks) against a
// reference run on one node pinned to one core (MEDIA_ENCODER_CHUNK_SECONDS=0: the ladder encoded
// whole, as before chunks), side by side on this machine. Also the CPU seconds the encoder nodes
// and their ffmpeg spent (their /proc times, children included): chunks must not cost more work.
// Time to ready: JobService/Create answered to the job seen completed (polled every 250 ms).
// Run: npm run bench:chunks   (BENCH_SECONDS=300: the issue's 5 min source; BENCH_ROUNDS=1;
// BENCH_CHUNK_SECONDS=60, the cluster default). Starts Kafka and Cassandra as the cluster tests do.
// Writes test/bench/results/chunks-<date>.json.
import { execFile, execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { startFleet, type Fleet } from "../cluster/fleet.js";
import infraSetup from "../cluster/infra.setup.js";
import { until } from "../harness.js";
import { testPattern1080p } from "./sources.js";

const run = promisify(execFile);
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const SECONDS = num("BENCH_SECONDS", 300);
const ROUNDS = num("BENCH_ROUNDS", 1);
const CHUNK_SECONDS = num("BENCH_CHUNK_SECONDS", 60);
const GOAL_RATIO = 0.6;
const TICKS = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

const LADDER = {
  outputs: [
    {
      type: "hls",
      video: [
        { codec: "h264", width: 1920, height: 1080 },
        { codec: "h264", width: 1280, height: 720 },
        { codec: "h264", width: 854, height: 480 },
        { codec: "h264", width: 640, height: 360 },
      ],
      audio: [{ codec: "aac", bitrate_kbps: 128 }],
    },
  ],
};

const source = (seconds: number) => testPattern1080p("chunks", seconds);

/** CPU seconds a process and its waited-for children spent (utime, stime, cutime, cstime). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14-17 of stat(5); after the command name, index 11 is utime.
  return [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0) / TICKS;
}

interface Run {
  readonly nodes: number;
  readonly readySeconds: number;
  readonly cpuSeconds: number;
  readonly chunksPerNode: number[];
  readonly timeline: string[][];
}

async function once(file: string, nodes: 1 | 2): Promise<Run> {
  const fleet: Fleet = await startFleet({
    encoderNodes: nodes,
    inputs: { src: file },
    env: { MEDIA_ENCODER_CHUNK_SECONDS: nodes === 1 ? "0" : String(CHUNK_SECONDS), MEDIA_LOG_LEVEL: "info", MEDIA_ENCODE_LEASE_SECONDS: "30" },
  });
  let passed = false;
  try {
    // Each node and everything it starts (ffmpeg inherits the affinity) on a core of its own.
    const pids = fleet.cluster.encoderNodes.map((n) => n.child.pid!);
    for (const [i, pid] of pids.entries()) await run("taskset", ["-a", "-p", "-c", String(i), String(pid)]);
    const cpuBefore = pids.map(cpuSeconds);
    const started = performance.now();
    const id = await fleet.submit(fleet.a, fleet.inputs.src!, "standard", LADDER);
    const job = await until(
      "the ladder's end",
      async () => {
        const j = await fleet.job(id, fleet.a);
        return ["completed", "failed", "partial", "canceled"].includes(j.status) ? j : undefined;
      },
      4 * 3600_000,
    );
    const readySeconds = (performance.now() - started) / 1000;
    if (job.status !== "completed") throw new Error(`the job ended ${job.status}: ${job.error_message}`);
    const cpu = pids.reduce((sum, pid, i) => sum + cpuSeconds(pid) - cpuBefore[i]!, 0);
    const chunksPerNode = fleet.cluster.encoderNodes.map(
      (n) =>
        n
          .output()
          .split("\n")
          .filter((l) => l.includes("chunk encoded") && l.includes(id)).length,
    );
    // Each node's timeline of the job (seconds after Create): its tasks, chunks and outputs, as logged.
    const submittedAt = Date.now() - readySeconds * 1000;
    const timeline = fleet.cluster.encoderNodes.map((n) =>
      n
        .output()
        .split("\n")
        .filter((l) => l.includes(id))
        .flatMap((l) => {
          try {
            const e = JSON.parse(l) as { time: number; msg: string; kind?: string; part?: number };
            if (!/task started|chunk started|chunk encoded|output (published|completed|stored)|encode finished/.test(e.msg)) return [];
            return [`${((e.time - submittedAt) / 1000).toFixed(1)} ${e.msg}${e.kind ? ` ${e.kind}` : ""}${e.part !== undefined ? ` ${e.part}` : ""}`];
          } catch {
            return [];
          }
        }),
    );
    passed = true;
    return { nodes, readySeconds, cpuSeconds: cpu, chunksPerNode, timeline };
  } finally {
    await fleet.stop(passed);
  }
}

const file = await source(SECONDS);
// Kafka and Cassandra as the cluster tests get them (started here unless running, stopped after).
const teardown = await infraSetup();
const runs: Run[] = [];
for (let round = 0; round < ROUNDS; round++) {
  // Alternating which goes first, so a drift of the machine's speed touches both alike.
  for (const nodes of round % 2 === 0 ? ([1, 2] as const) : ([2, 1] as const)) {
    const r = await once(file, nodes);
    runs.push(r);
    console.log(
      `round ${round + 1}, ${nodes} node(s): ready in ${r.readySeconds.toFixed(1)} s, ${r.cpuSeconds.toFixed(1)} CPU s, chunks per node ${r.chunksPerNode.join("/")}`,
    );
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const of = (n: number, k: "readySeconds" | "cpuSeconds") => median(runs.filter((r) => r.nodes === n).map((r) => r[k]));
const ratio = of(2, "readySeconds") / of(1, "readySeconds");
const cpuRatio = of(2, "cpuSeconds") / of(1, "cpuSeconds");
const results = {
  date: new Date().toISOString(),
  machine: { cores: (await import("node:os")).availableParallelism() },
  source: { seconds: SECONDS, size: "1920x1080", fps: 30 },
  ladder: "HLS 1080p/720p/480p/360p H.264 + AAC 128k",
  chunkSeconds: CHUNK_SECONDS,
  runs,
  medians: {
    oneNode: { readySeconds: of(1, "readySeconds"), cpuSeconds: of(1, "cpuSeconds") },
    twoNodes: { readySeconds: of(2, "readySeconds"), cpuSeconds: of(2, "cpuSeconds") },
  },
  ratio,
  cpuRatio,
  goal: { ratio: GOAL_RATIO, cpuWithin: 0.05 },
};
mkdirSync(path.join(import.meta.dirname, "results"), { recursive: true });
const out = path.join(import.meta.dirname, "results", `chunks-${results.date.slice(0, 10)}.json`);
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
console.log(
  `time to ready, 2 nodes against 1 (each on one core): ${of(2, "readySeconds").toFixed(1)} s / ${of(1, "readySeconds").toFixed(1)} s = ${ratio.toFixed(3)} (goal <= ${GOAL_RATIO}); CPU ${cpuRatio.toFixed(3)}x (goal within 5%)`,
);
console.log(`results in ${out}`);
await teardown();
process.exit(0);
