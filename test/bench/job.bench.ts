// Benchmark: the 4-rung H.264 ladder of ladder.bench.ts run THROUGH THE SERVICE, side by side with
// the two hand-written references on the same machine, and the latency of progress from ffmpeg to
// a Watch subscriber.
//
// The service is `media serve` (embedded mode) as a child process; the job reads the clip from a
// local HTTPS server and writes to MinIO, both on loopback. Service wall time runs from the Create
// call to the Watch stream's terminal event (probe, fetch, encode and upload included). Service
// CPU is the server's own user+sys plus its reaped children's (every ffprobe and ffmpeg), read
// from /proc/<pid>/stat around the job; MinIO and the HTTPS server are not counted. The
// references are timed by ladder.bench.ts's measure(). Rounds alternate the order; medians.
//
// Progress latency: each `updated` event carries the job's updated_at, which is the moment the
// encoder node read ffmpeg's progress line; the subscriber's receive time minus it is the latency
// (one machine, one clock).
//
// Run: npx tsx test/bench/job.bench.ts   (npm run bench:job)   BENCH_ROUNDS (3), BENCH_SECONDS (20)
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { probe } from "../../encoder-node/probe.js";
import { call, freePort, spawnServer, type Auth, type ChildServer } from "../harness.js";
import { makeTestInput } from "../media.js";
import { makeTestCa, startHttpsPeer, startMinio } from "../peers.js";
import { stream } from "../watch.js";
import { LADDER, measure, REFERENCE_RUNNERS, SETTINGS, waitForQuiet, type BenchInput, type Measurement } from "./ladder.bench.js";

const TICK = 1 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

/** utime + stime + cutime + cstime of a process, in seconds. */
function processTreeCpu(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * TICK;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};
const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** The ladder as a job output, in the spec's JSON. */
const ladderOutput = {
  type: "mp4",
  video: LADDER.map((r) => ({
    codec: "h264",
    width: r.width,
    height: r.height,
    h264: { crf: SETTINGS.crf, encoder_preset: SETTINGS.preset, keyint: SETTINGS.keyint },
  })),
  audio: [{ codec: "aac", bitrate_kbps: SETTINGS.audioKbps }],
};

interface ServiceRun extends Measurement {
  latenciesMs: number[];
}

async function runService(server: ChildServer, key: Auth, inputUrl: string, originId: string, round: number): Promise<ServiceRun> {
  const pid = server.child.pid!;
  const cpu0 = processTreeCpu(pid);
  const t0 = performance.now();
  const created = await call(server.base, "JobService/Create", { input_url: inputUrl, output_origin_id: originId, outputs: [ladderOutput] }, key);
  if (created.status !== 200) throw new Error(`create: ${JSON.stringify(created.body)}`);
  const latenciesMs: number[] = [];
  const watched = await stream(server.base, "JobService/Watch", { id: created.body.job.id }, key, (m) => {
    if (m.body.event_type === "updated" && m.body.job.status === "processing" && m.body.job.progress > 0)
      latenciesMs.push(m.receivedAt - Date.parse(m.body.job.updated_at));
  });
  const wallSeconds = (performance.now() - t0) / 1000;
  const last = watched.messages.at(-1)?.body;
  if (last?.event_type !== "completed") throw new Error(`job ended ${last?.event_type}: ${JSON.stringify(last?.job)}`);
  // The ffmpeg children are reaped by now: their CPU is in the server's cutime.
  const cpuSeconds = processTreeCpu(pid) - cpu0;
  return { runner: "service", round, wallSeconds, cpuSeconds, otherCpuSeconds: 0, latenciesMs };
}

async function main(): Promise<void> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const seconds = Number(process.env.BENCH_SECONDS ?? 20);
  const work = mkdtempSync(path.join(os.tmpdir(), "job-bench-"));
  const ca = makeTestCa();
  const minio = await startMinio(ca, ["bench-out"]);
  const inputFile = path.join(work, "input.mp4");
  const web = await startHttpsPeer(ca, (req, res) => {
    const data = readFileSync(inputFile);
    res.writeHead(req.url === "/input.mp4" ? 200 : 404, { "content-length": data.length }).end(data);
  });
  let server: ChildServer | undefined;
  try {
    process.stdout.write(`generating a ${seconds} s 1080p30 input…\n`);
    await makeTestInput(inputFile, { seconds, width: 1920, height: 1080, fps: 30, audio: true });
    const input: BenchInput = { file: inputFile, probe: await probe(inputFile) };
    server = await spawnServer(path.join(work, "data"), freePort(), {
      MEDIA_NET_ALLOW: "127.0.0.1/32",
      MEDIA_S3_ENDPOINT: minio.endpoint,
      MEDIA_TLS_CA_FILE: ca.caFile,
      MEDIA_LOG_LEVEL: "error",
      MEDIA_RATE_LIMIT_KEY: "off",
      MEDIA_RATE_LIMIT_ANONYMOUS: "off",
      MEDIA_RATE_LIMIT_HEALTH: "off",
    });
    const boot = JSON.parse(readFileSync(path.join(work, "data", "bootstrap.json"), "utf8"));
    const key: Auth = { bearer: boot.api_key, org: boot.organization_id };
    const origin = await call(
      server.base,
      "OriginService/Create",
      {
        name: "bench",
        permissions: ["read", "write"],
        s3: {
          bucket: "bench-out",
          region: "us-east-1",
          credentials: { access_key_id: minio.admin.accessKeyId, secret_access_key: minio.admin.secretAccessKey },
        },
      },
      key,
    );
    if (origin.status !== 200) throw new Error(`origin: ${JSON.stringify(origin.body)}`);
    const inputUrl = `${web.url}/input.mp4`;

    const runners = ["service", ...REFERENCE_RUNNERS.map((r) => r.name)];
    const results: Measurement[] = [];
    const latencies: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const order = runners.map((_, i) => runners[(i + round) % runners.length]!);
      for (const name of order) {
        await waitForQuiet();
        let m: Measurement;
        if (name === "service") {
          const s = await runService(server, key, inputUrl, origin.body.origin.id, round);
          latencies.push(...s.latenciesMs);
          m = s;
        } else {
          const dir = path.join(work, name);
          mkdirSync(dir, { recursive: true });
          m = await measure(
            REFERENCE_RUNNERS.find((r) => r.name === name)!,
            input,
            dir,
            round,
          );
        }
        results.push({ runner: m.runner, round: m.round, wallSeconds: m.wallSeconds, cpuSeconds: m.cpuSeconds, otherCpuSeconds: m.otherCpuSeconds });
        process.stdout.write(`round ${round + 1} ${name.padEnd(14)} wall ${m.wallSeconds.toFixed(2)} s  cpu ${m.cpuSeconds.toFixed(2)} s\n`);
      }
    }
    const medians = Object.fromEntries(
      runners.map((n) => {
        const mine = results.filter((m) => m.runner === n);
        return [n, { wallSeconds: r3(median(mine.map((m) => m.wallSeconds))), cpuSeconds: r3(median(mine.map((m) => m.cpuSeconds))) }];
      }),
    );
    const refs = REFERENCE_RUNNERS.map((r) => r.name);
    const fasterRef = refs.reduce((a, b) => (medians[a]!.wallSeconds <= medians[b]!.wallSeconds ? a : b));
    const cheaperRef = refs.reduce((a, b) => (medians[a]!.cpuSeconds <= medians[b]!.cpuSeconds ? a : b));
    const ratios = {
      wallVsFasterReference: r3(medians.service!.wallSeconds / medians[fasterRef]!.wallSeconds),
      cpuVsCheaperReference: r3(medians.service!.cpuSeconds / medians[cheaperRef]!.cpuSeconds),
    };
    const progress = {
      samples: latencies.length,
      p50Ms: r3(percentile(latencies, 50)),
      p99Ms: r3(percentile(latencies, 99)),
      maxMs: r3(Math.max(...latencies)),
    };
    process.stdout.write(`\nmedians of ${rounds} rounds (${seconds} s 1080p30 → ${LADDER.map((r) => r.name).join(", ")}):\n`);
    for (const [n, m] of Object.entries(medians))
      process.stdout.write(`  ${n.padEnd(14)} wall ${m.wallSeconds.toFixed(2)} s   cpu ${m.cpuSeconds.toFixed(2)} s\n`);
    process.stdout.write(`service wall / faster reference (${fasterRef}): ${ratios.wallVsFasterReference}  goal ≤ 1.10\n`);
    process.stdout.write(`service cpu / cheaper reference (${cheaperRef}): ${ratios.cpuVsCheaperReference}  goal ≤ 1.05\n`);
    process.stdout.write(`progress latency ffmpeg → Watch subscriber: p50 ${progress.p50Ms} ms, p99 ${progress.p99Ms} ms (${progress.samples} updates)\n`);

    const dir = path.join(import.meta.dirname, "results");
    mkdirSync(dir, { recursive: true });
    const out = path.join(dir, `job-${new Date().toISOString().slice(0, 10)}.json`);
    writeFileSync(
      out,
      `${JSON.stringify(
        {
          at: new Date().toISOString(),
          commit: execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim(),
          cpus: os.cpus().length,
          input: { seconds, width: 1920, height: 1080, fps: 30 },
          ladder: LADDER,
          settings: SETTINGS,
          service: "media serve (embedded) as a child process; input over local HTTPS, outputs to MinIO; wall from Create to the terminal Watch event",
          cpu_method: "service: utime+stime+cutime+cstime of the server process around the job; references: cutime+cstime of the bench process",
          rounds,
          medians,
          faster_reference: fasterRef,
          cheaper_reference: cheaperRef,
          ratios,
          goals: { wall: 1.1, cpu: 1.05 },
          progress_latency: progress,
          runs: results.map((m) => ({ ...m, wallSeconds: r3(m.wallSeconds), cpuSeconds: r3(m.cpuSeconds) })),
        },
        null,
        2,
      )}\n`,
    );
    process.stdout.write(`results: ${path.relative(process.cwd(), out)}\n`);
  } finally {
    await server?.stop();
    await web.stop();
    await minio.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
