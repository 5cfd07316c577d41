// Benchmark: signed webhook deliveries from `media serve` (embedded, a child process) to a local
// HTTPS receiver on loopback.
//  - throughput: one real job event resent to 50 subscribed endpoints, 20 times (1,000 signed
//    deliveries through the endpoint actors, journaled before and after each attempt); deliveries
//    per second from the first ResendEvent call to the last delivery received;
//  - latency: 20 small jobs; the time from a job's completed_at to the receiver getting its
//    job.succeeded, p50 and p99 (one machine, one clock).
// Run: npx tsx test/bench/webhook.bench.ts   (npm run bench:webhook)
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { call, freePort, spawnServer, type Auth, type ChildServer } from "../harness.js";
import { makeTestInput } from "../media.js";
import { makeTestCa, startHttpsPeer, startMinio } from "../peers.js";

const ENDPOINTS = 50;
const RESENDS = 20;
const JOBS = 20;

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

async function ok(p: Promise<{ status: number; body: any }>): Promise<any> {
  const r = await p;
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  return r.body;
}

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(os.tmpdir(), "webhook-bench-"));
  const ca = makeTestCa();
  const minio = await startMinio(ca, ["bench-hooks"]);
  const input = path.join(work, "in.mp4");
  await makeTestInput(input, { seconds: 1, width: 320, height: 240, fps: 25, audio: false });
  const web = await startHttpsPeer(ca, (_req, res) => {
    const data = readFileSync(input);
    res.writeHead(200, { "content-length": data.length }).end(data);
  });
  // The receiver: answers 200 at once and notes when each event arrived.
  const arrivals: { id: string; type: string; at: number; data: any }[] = [];
  const receiver = await startHttpsPeer(ca, (req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const e = JSON.parse(body);
      arrivals.push({ id: e.id, type: e.type, at: Date.now(), data: e.data });
      res.writeHead(200).end("ok");
    });
  });
  let server: ChildServer | undefined;
  try {
    server = await spawnServer(path.join(work, "data"), freePort(), {
      MEDIA_NET_ALLOW: "127.0.0.1/32",
      MEDIA_TLS_CA_FILE: ca.caFile,
      MEDIA_S3_ENDPOINT: minio.endpoint,
      MEDIA_LOG_LEVEL: "error",
      MEDIA_RATE_LIMIT_KEY: "off",
      MEDIA_RATE_LIMIT_ANONYMOUS: "off",
      MEDIA_RATE_LIMIT_HEALTH: "off",
    });
    const boot = JSON.parse(readFileSync(path.join(work, "data", "bootstrap.json"), "utf8"));
    const key: Auth = { bearer: boot.api_key, org: boot.organization_id };
    const origin = (
      await ok(
        call(
          server.base,
          "OriginService/Create",
          {
            name: "bench",
            permissions: ["write"],
            s3: {
              bucket: "bench-hooks",
              region: "us-east-1",
              credentials: { access_key_id: minio.admin.accessKeyId, secret_access_key: minio.admin.secretAccessKey },
            },
          },
          key,
        ),
      )
    ).origin.id;
    const first = await ok(
      call(server.base, "WebhookService/CreateWebhookEndpoint", { url: `${receiver.url}/latency`, enabled_events: ["job.succeeded"] }, key),
    );

    // Latency: job completed_at → job.succeeded at the receiver.
    const latencies: number[] = [];
    for (let i = 0; i < JOBS; i++) {
      const { job } = await ok(
        call(
          server.base,
          "JobService/Create",
          {
            input_url: `${web.url}/in.mp4`,
            output_origin_id: origin,
            outputs: [{ type: "mp4", video: [{ codec: "h264", width: 256, height: 192 }], disable_audio: true }],
          },
          key,
        ),
      );
      const deadline = Date.now() + 60_000;
      let got: (typeof arrivals)[number] | undefined;
      while (!(got = arrivals.find((a) => a.type === "job.succeeded" && a.data.id === job.id))) {
        if (Date.now() > deadline) throw new Error(`no job.succeeded for ${job.id}`);
        await new Promise((r) => setTimeout(r, 2));
      }
      latencies.push(got.at - Date.parse(got.data.completed_at));
    }
    const eventId = arrivals.find((a) => a.type === "job.succeeded")!.id;
    process.stdout.write(`job completed → job.succeeded delivered: p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms (${JOBS} jobs)\n`);

    // Throughput: one event resent to every subscribed endpoint, again and again.
    await ok(call(server.base, "WebhookService/UpdateWebhookEndpoint", { id: first.endpoint.id, status: "disabled" }, key));
    for (let i = 0; i < ENDPOINTS; i++)
      await ok(call(server.base, "WebhookService/CreateWebhookEndpoint", { url: `${receiver.url}/e${i}`, enabled_events: ["*"] }, key));
    arrivals.length = 0;
    const t0 = performance.now();
    for (let i = 0; i < RESENDS; i++) {
      const r = await ok(call(server.base, "WebhookService/ResendEvent", { id: eventId }, key));
      if (r.deliveries.length !== ENDPOINTS) throw new Error(`resend made ${r.deliveries.length} deliveries`);
    }
    const total = ENDPOINTS * RESENDS;
    const deadline = Date.now() + 300_000;
    while (arrivals.length < total) {
      if (Date.now() > deadline) throw new Error(`only ${arrivals.length} of ${total} delivered`);
      await new Promise((r) => setTimeout(r, 5));
    }
    const seconds = (performance.now() - t0) / 1000;
    const perSecond = Math.round(total / seconds);
    process.stdout.write(`throughput: ${total} signed deliveries in ${seconds.toFixed(2)} s = ${perSecond}/s\n`);

    const dir = path.join(import.meta.dirname, "results");
    mkdirSync(dir, { recursive: true });
    const out = path.join(dir, `webhook-${new Date().toISOString().slice(0, 10)}.json`);
    writeFileSync(
      out,
      `${JSON.stringify(
        {
          at: new Date().toISOString(),
          commit: execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim(),
          cpus: os.cpus().length,
          mode: "embedded, media serve as a child process; receiver: HTTPS on loopback answering 200",
          throughput: { deliveries: total, endpoints: ENDPOINTS, seconds: Math.round(seconds * 1000) / 1000, per_second: perSecond },
          job_succeeded_latency_ms: {
            jobs: JOBS,
            p50: percentile(latencies, 50),
            p99: percentile(latencies, 99),
            max: Math.max(...latencies),
            samples: latencies,
          },
        },
        null,
        2,
      )}\n`,
    );
    process.stdout.write(`results: ${path.relative(process.cwd(), out)}\n`);
  } finally {
    await server?.stop();
    await receiver.stop();
    await web.stop();
    await minio.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
