// Benchmark: the TypeScript SDK's throughput beside curl's for the same work: 1,000 JobService/Create
// calls, 16 at a time, against `media serve` (embedded mode) as a child process. The SDK sends
// binary (its codec) with an Idempotency-Key per call; curl sends the same requests in JSON with
// the same header, from one process (--parallel --parallel-max 16, one connection per slot), so the
// gap is the SDK's own cost (connect-es, fetch, its interceptors) on the machine that also runs
// the server. The jobs read an input at a name that does not resolve, so each fails at its probe
// in a moment instead of encoding (the same background work for both clients). Rounds alternate
// the order; medians. Prints creates per second and writes test/bench/results/clients-<date>.json.
// Run: npx tsx test/bench/clients.bench.ts   BENCH_JOBS (1000), BENCH_CONCURRENCY (16), BENCH_ROUNDS (3)
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { createMediaClient } from "../../clients/typescript/src/index.js";
import { OutputType } from "../../clients/typescript/src/gen/media/v1/job_pb.js";
import { VideoCodec } from "../../clients/typescript/src/gen/media/v1/preset_pb.js";
import { call, freePort, readBootstrap, spawnServer, tempDataDir, ROOT } from "../harness.js";
import { makeTestCa, startMinio } from "../peers.js";

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const JOBS = num("BENCH_JOBS", 1000);
const CONCURRENCY = num("BENCH_CONCURRENCY", 16);
const ROUNDS = num("BENCH_ROUNDS", 3);
const INPUT = "https://media-bench.invalid/in.mp4";
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const ca = makeTestCa();
const minio = await startMinio(ca, ["bench-out"]);
const dataDir = tempDataDir();
const server = await spawnServer(dataDir, freePort(), {
  MEDIA_NET_ALLOW: "127.0.0.1/32",
  MEDIA_TLS_CA_FILE: ca.caFile,
  MEDIA_S3_ENDPOINT: minio.endpoint,
  MEDIA_LOG_LEVEL: "error",
});
const boot = readBootstrap(dataDir);
const auth = { bearer: boot.api_key, org: boot.organization_id };
const credentials = { access_key_id: minio.admin.accessKeyId, secret_access_key: minio.admin.secretAccessKey };
const created = await call(
  server.base,
  "OriginService/Create",
  { name: "bench", permissions: ["write"], s3: { bucket: "bench-out", region: "us-east-1", credentials } },
  auth,
);
if (created.status !== 200) throw new Error(`origin: ${JSON.stringify(created.body)}`);
const originId: string = created.body.origin.id;

async function sdk(): Promise<number> {
  const client = createMediaClient({ baseUrl: server.base, apiKey: boot.api_key, organizationId: boot.organization_id });
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < JOBS) {
        next++;
        await client.jobs.create({
          inputUrl: INPUT,
          outputOriginId: originId,
          outputs: [{ type: OutputType.MP4, video: [{ codec: VideoCodec.H264, width: 320, height: 180 }] }],
        });
      }
    }),
  );
  return JOBS / ((performance.now() - start) / 1000);
}

async function curl(work: string): Promise<number> {
  const body = JSON.stringify({
    input_url: INPUT,
    output_origin_id: originId,
    outputs: [{ type: "mp4", video: [{ codec: "h264", width: 320, height: 180 }] }],
  });
  const config = path.join(work, `curl-${Date.now()}.conf`);
  const one = (i: number) =>
    [
      `url = "${server.base}/media.v1.JobService/Create"`,
      `header = "content-type: application/json"`,
      `header = "authorization: Bearer ${boot.api_key}"`,
      `header = "x-organization-id: ${boot.organization_id}"`,
      `header = "idempotency-key: bench-${config}-${i}"`,
      `data = ${JSON.stringify(body)}`,
      `output = "/dev/null"`,
      `write-out = "%{http_code}\\n"`,
    ].join("\n");
  writeFileSync(config, Array.from({ length: JOBS }, (_, i) => one(i)).join("\nnext\n"));
  const start = performance.now();
  const { stdout } = await promisify(execFile)("curl", ["-sS", "--parallel", "--parallel-max", String(CONCURRENCY), "-K", config], { maxBuffer: 64 << 20 });
  const seconds = (performance.now() - start) / 1000;
  const codes = stdout.trim().split("\n");
  const failed = codes.filter((c) => c !== "200").length;
  if (codes.length !== JOBS || failed > 0) throw new Error(`curl: ${failed} of ${codes.length} creates failed (${codes.find((c) => c !== "200")})`);
  return JOBS / seconds;
}

const work = mkdtempSync(path.join(os.tmpdir(), "media-bench-clients-"));
const results: { sdk: number[]; curl: number[] } = { sdk: [], curl: [] };
try {
  await sdk(); // warm-up: the gateway's JIT and the SDK's first connections
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (["curl", "sdk"] as const) : (["sdk", "curl"] as const);
    for (const client of order) {
      const rate = client === "sdk" ? await sdk() : await curl(work);
      results[client].push(rate);
      console.log(`round ${round + 1}: ${client.padEnd(4)} ${rate.toFixed(0)} creates/s`);
    }
  }
} finally {
  await server.stop();
  await minio.stop();
  ca.remove();
}
const summary = {
  date: new Date().toISOString(),
  jobs: JOBS,
  concurrency: CONCURRENCY,
  rounds: ROUNDS,
  cpus: os.cpus().length,
  sdk_creates_per_second: Math.round(median(results.sdk)),
  curl_creates_per_second: Math.round(median(results.curl)),
  sdk_to_curl: Math.round((median(results.sdk) / median(results.curl)) * 100) / 100,
  each: results,
};
console.log(JSON.stringify(summary, null, 2));
mkdirSync(path.join(ROOT, "test/bench/results"), { recursive: true });
writeFileSync(path.join(ROOT, `test/bench/results/clients-${summary.date.slice(0, 10)}.json`), `${JSON.stringify(summary, null, 2)}\n`);
