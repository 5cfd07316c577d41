// A real Prometheus (built from the Go module proxy, deploy/observe/setup.sh) scraping every process
// of a running cluster, with deploy/observe's rules loaded: while a job encodes and an uploaded
// video is ingested and played, every query of the Grafana dashboard and every recording rule must
// return data. What each query answered is written to docs/observe-panels.md, which
// docs/operations.md links to.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, ROOT, until } from "../harness.js";
import { makeTestInput, parseHlsMaster, parseHlsMedia } from "../media.js";
import { freeLoopbackPort } from "../peers.js";
import { startRecordingReceiver, type RecordingReceiver } from "../receivers.js";
import { stream } from "../watch.js";
import { dashboardQueries, RULES, ruleFile } from "../observe/queries.js";
import { startFleet, type Fleet } from "./fleet.js";

// Scrapes and rule evaluations every second, so the test sees in a minute what a 30 s deployment
// shows in minutes; Grafana's $__rate_interval as the whole test, so the answers written to the docs
// cover everything it did.
const RATE_INTERVAL = "2m";

let fleet: Fleet;
let receiver: RecordingReceiver;
let prometheus: ChildProcess;
let promBase = "";
let promLog = "";
let passed = false;
const work = mkdtempSync(path.join(tmpdir(), "media-prometheus-"));

beforeAll(async () => {
  const { stdout, stderr } = await promisify(execFile)("bash", [path.join(ROOT, "deploy/observe/setup.sh")], { encoding: "utf8" });
  if (stderr) process.stderr.write(stderr);
  const [binary = ""] = stdout.trim().split("\n");

  fleet = await startFleet({ encoderNodes: 2, inputs: { long: 120 }, hosting: true });
  receiver = await startRecordingReceiver(fleet.ca);

  // The rules as shipped, evaluated every second instead of every 30 s.
  writeFileSync(path.join(work, "rules.yml"), readFileSync(RULES, "utf8").replace(/^(\s+)interval: 30s$/m, "$1interval: 1s"));
  const targets = [...fleet.cluster.gateways, ...fleet.cluster.actorHosts, ...fleet.cluster.encoderNodes].map((p) => `"127.0.0.1:${p.metricsPort}"`);
  writeFileSync(
    path.join(work, "prometheus.yml"),
    [
      "global:",
      "  scrape_interval: 1s",
      "  evaluation_interval: 1s",
      "rule_files:",
      "  - rules.yml",
      "scrape_configs:",
      "  - job_name: media",
      `    static_configs: [{ targets: [${targets.join(", ")}] }]`,
      "",
    ].join("\n"),
  );
  const port = await freeLoopbackPort();
  promBase = `http://127.0.0.1:${port}`;
  prometheus = spawn(
    binary,
    [`--config.file=${path.join(work, "prometheus.yml")}`, `--storage.tsdb.path=${path.join(work, "data")}`, `--web.listen-address=127.0.0.1:${port}`],
    { cwd: work, stdio: ["ignore", "pipe", "pipe"] },
  );
  prometheus.stdout!.on("data", (d) => (promLog += d));
  prometheus.stderr!.on("data", (d) => (promLog += d));
  await until("Prometheus ready", async () => ((await fetch(`${promBase}/-/ready`).catch(() => undefined))?.ok ? true : undefined), 60_000);
}, 600_000);

afterAll(async () => {
  if (!passed) console.log(`── prometheus ──\n${promLog.slice(-4000)}`);
  prometheus?.kill("SIGTERM");
  await receiver?.stop();
  await fleet?.stop(passed);
  rmSync(work, { recursive: true, force: true });
});

interface Answer {
  readonly series: number;
  readonly sample: string;
}

/** An instant query: how many series it returned, and the three of highest value as `labels value`. */
async function query(expr: string): Promise<Answer> {
  const res = await fetch(`${promBase}/api/v1/query?${new URLSearchParams({ query: expr })}`);
  const body = (await res.json()) as {
    status: string;
    error?: string;
    data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
  };
  if (body.status !== "success") throw new Error(`${expr}: ${body.error}`);
  const result = body.data!.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  const rank = (v: number) => (Number.isNaN(v) ? -Infinity : v);
  result.sort((a, b) => rank(b.value) - rank(a.value));
  const sample = result
    .slice(0, 3)
    .map(({ metric, value }) => {
      const labels = Object.entries(metric)
        .filter(([k]) => k !== "job" && k !== "__name__" && k !== "instance")
        .map(([k, v]) => `${k}=${v}`)
        .join(",");
      return `${labels ? `{${labels}} ` : ""}${Number.isInteger(value) ? value : value.toPrecision(3)}`;
    })
    .join("; ");
  return { series: result.length, sample: result.length > 3 ? `${sample}; …` : sample };
}

describe("Prometheus against a running cluster", () => {
  it("every dashboard query and every recording rule returns data while a job and an upload are in flight", async () => {
    const key = { bearer: fleet.a.bearer, org: fleet.a.org };
    await ok(call(fleet.base, "WebhookService/CreateWebhookEndpoint", { url: `${receiver.url}/hook`, enabled_events: ["*"] }, key));

    // A 120 s job to the caller's bucket, watched as a subscriber would.
    const jobId = await fleet.submit(fleet.a, fleet.inputs.long!);
    const watching = new AbortController();
    const watch = stream(fleet.base, "JobService/Watch", { id: jobId }, key, undefined, watching.signal).catch(() => undefined);

    // An upload to managed hosting, ingested, then played as a player would.
    const clip = path.join(work, "clip.mp4");
    await makeTestInput(clip, { seconds: 6, width: 320, height: 240, fps: 25, audio: true });
    const created = await ok(
      call(
        fleet.base,
        "VideoService/CreateUpload",
        { app_id: fleet.a.app, filename: "clip.mp4", content_type: "video/mp4", size_bytes: statSync(clip).size },
        key,
      ),
    );
    const put = await fetch(created.upload_url, { method: "PUT", body: readFileSync(clip), headers: { "content-type": "video/mp4" } });
    expect(put.headers.get("etag")).toBe(`"${createHash("md5").update(readFileSync(clip)).digest("hex")}"`);
    await ok(call(fleet.base, "VideoService/CompleteUpload", { id: created.video.id }, key));
    const video = await until(
      "the uploaded video is playable",
      async () => {
        const v = (await ok(call(fleet.base, "VideoService/Get", { id: created.video.id }, key))).video;
        return v.playback_url && (v.status === "ready" || v.status === "processing") ? v : undefined;
      },
      180_000,
    );
    const master = await fetch(video.playback_url);
    expect(master.status).toBe(200);
    const variant = new URL(parseHlsMaster(await master.text()).variants[0]!.uri, video.playback_url);
    const media = parseHlsMedia(await (await fetch(variant)).text());
    expect((await fetch(new URL(media.segments[0]!.uri, variant))).status).toBe(200);
    // A refused playback (a tampered token) and a refused call (a field violation), as clients make them.
    expect((await fetch(video.playback_url.replace(/token=(.)/, (_: string, c: string) => `token=${c === "A" ? "B" : "A"}`))).status).toBe(403);
    expect((await call(fleet.base, "JobService/Create", { outputs: [] }, key)).status).toBe(400);

    // Every query until each returns a series, or until the job ends (the work is no longer in flight).
    const queries = [
      ...ruleFile()
        .groups.flatMap((g) => g.rules)
        .filter((r) => r.record)
        .map((r) => ({ section: "Recording rules", panel: r.record!, legend: "", expr: r.record! })),
      ...dashboardQueries(RATE_INTERVAL),
    ];
    const answers = new Map<string, Answer>();
    const deadline = Date.now() + 120_000;
    while (answers.size < queries.length && Date.now() < deadline) {
      for (const q of queries) {
        if (answers.has(q.expr)) continue;
        const a = await query(q.expr);
        if (a.series > 0) answers.set(q.expr, a);
      }
      if (answers.size < queries.length) await new Promise((r) => setTimeout(r, 2000));
    }
    // What each answered once all had data, while the work is still in flight: for the docs.
    for (const q of queries) if (answers.has(q.expr)) answers.set(q.expr, await query(q.expr));
    const job = await fleet.job(jobId, fleet.a);
    watching.abort();
    await watch;

    writeFileSync(
      path.join(ROOT, "docs/observe-panels.md"),
      [
        "# What the dashboard's queries answered",
        "",
        "Written by `test/cluster/prometheus.test.ts`: a real Prometheus scraping a cluster of one gateway, one actor",
        "host and two encoder nodes every second, with `deploy/observe/prometheus/rules.yml` evaluated every second,",
        `while a 120 s job encoded and a 6 s upload was ingested and played. \`$__rate_interval\` is ${RATE_INTERVAL} here.`,
        "`instance` labels are left out; the three series of highest value are shown per query.",
        "",
        "| section | panel or rule | query | answered |",
        "|---|---|---|---|",
        ...queries.map((q) => {
          const a = answers.get(q.expr);
          const cell = (s: string) => s.replaceAll("|", "\\|").replaceAll("\n", " ");
          return `| ${q.section} | ${cell(q.panel)}${q.legend ? ` (${cell(q.legend)})` : ""} | \`${cell(q.expr.replace(/\s+/g, " ").trim())}\` | ${a ? cell(a.sample) : "no data"} |`;
        }),
        "",
      ].join("\n"),
    );

    const empty = queries.filter((q) => !answers.has(q.expr)).map((q) => `${q.section} / ${q.panel}: ${q.expr}`);
    expect(empty).toEqual([]);
    // The job was in flight while the queries answered, or ended well.
    expect(["pending", "probing", "processing", "completed"]).toContain(job.status);
    passed = true;
  });
});
