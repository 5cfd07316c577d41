// Benchmark: hosting against references run side by side on this machine (nginx from Debian).
//   segments: GET of one HLS segment through the edge (token checked on every request) vs nginx
//             serving the same file from the same folder, 64 connections, rounds alternated.
//   upload:   a 1 GiB PUT to the edge's upload URL vs nginx taking the same PUT (dav module), with
//             the media server's RSS growth during the upload.
//   ladder:   upload-to-ready of a 60 s 1080p clip (the auto ladder: 1080p, 720p, 480p, 360p) vs
//             the same rungs encoded by one hand-written ffmpeg command.
// Run: npx tsx test/bench/hosting.bench.ts   (BENCH_SUITES=segments,upload,ladder, BENCH_ROUNDS, BENCH_DURATION)
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createReadStream, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import { call, freePort, readBootstrap, spawnServer, tempDataDir } from "../harness.js";
import { parseHlsMaster, parseHlsMedia } from "../media.js";
import { tierTargetKbps } from "../../encoder-node/plan.js";

const run = promisify(execFile);
interface AutocannonResult {
  errors: number;
  non2xx: number;
  requests: { average: number };
  throughput: { average: number };
  latency: { p99: number };
}
const autocannon = createRequire(import.meta.url)("autocannon") as (o: { url: string; connections: number; duration: number }) => Promise<AutocannonResult>;
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ROUNDS = num("BENCH_ROUNDS", 3);
const DURATION = num("BENCH_DURATION", 5);
const SUITES = (process.env.BENCH_SUITES ?? "segments,upload,ladder").split(",");
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** CPU seconds (user + system) a process has used, threads included. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function rssKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
}

async function startNginx(root: string, port: number): Promise<ChildProcess> {
  const dir = tempDataDir();
  mkdirSync(path.join(dir, "logs"), { recursive: true });
  mkdirSync(path.join(root, "put"), { recursive: true });
  const conf = path.join(dir, "nginx.conf");
  writeFileSync(
    conf,
    `user root; worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/logs/error.log;
events { worker_connections 1024; }
http { access_log off; sendfile on; tcp_nopush on; client_max_body_size 0; client_body_temp_path ${dir}/body;
  types { video/mp2t ts; application/vnd.apple.mpegurl m3u8; }
  server { listen 127.0.0.1:${port}; root ${root};
    location /put/ { dav_methods PUT; create_full_put_path on; client_body_buffer_size 1m; } } }
`,
  );
  const child = spawn("nginx", ["-c", conf, "-p", dir], { stdio: "ignore" });
  for (let i = 0; i < 50; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      return child;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error("nginx did not start");
}

type Client = "fetch" | "curl";

/**
 * A PUT of a file, chunked (uWS refuses a Content-Length of ten digits, 1 GB and up, on any
 * request), by Node's own fetch (what our CLI uses; it spends more CPU than either server, so on two
 * cores it measures a server's share of the CPU) or by curl (lean: it measures the servers).
 */
async function put(client: Client, url: string, file: string): Promise<void> {
  if (client === "curl") {
    await run("curl", ["-sS", "--fail", "-o", "/dev/null", "-T", file, "-H", "Transfer-Encoding: chunked", url]);
    return;
  }
  const res = await fetch(url, { method: "PUT", body: createReadStream(file) as unknown as BodyInit, duplex: "half" } as RequestInit);
  if (res.status >= 300) throw new Error(`PUT ${url}: ${res.status}`);
  await res.arrayBuffer();
}

async function clip(file: string, seconds: number, size: string): Promise<void> {
  await run("ffmpeg", [
    "-hide_banner",
    "-loglevel",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    `testsrc2=size=${size}:rate=30:duration=${seconds}`,
    "-f",
    "lavfi",
    "-i",
    `sine=frequency=440:duration=${seconds}`,
    "-c:v",
    "libx264",
    "-preset",
    "veryfast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-shortest",
    file,
  ]);
}

async function main(): Promise<void> {
  const dataDir = tempDataDir();
  // Every folder made here goes at the end: a run writes gigabytes (the 1 GiB file, twice uploaded).
  const scratch = [dataDir];
  const server = await spawnServer(dataDir, freePort(), { MEDIA_RATE_LIMIT_KEY: "0", MEDIA_RATE_LIMIT_ANONYMOUS: "0" });
  const boot = readBootstrap(dataDir);
  const key = { bearer: boot.api_key, org: boot.organization_id };
  const results: Record<string, unknown> = {};
  const upload = async (file: string, title: string, client: Client = "fetch") => {
    const size = statSync(file).size;
    const created = (
      await call(
        server.base,
        "VideoService/CreateUpload",
        { filename: path.basename(file), content_type: "video/mp4", size_bytes: size, title, visibility: "public" },
        key,
      )
    ).body;
    const started = Date.now();
    await put(client, created.upload_url, file);
    const putMs = Date.now() - started;
    return { id: created.video.id as string, putMs, started };
  };
  const ready = async (id: string) => {
    for (;;) {
      const v = (await call(server.base, "VideoService/Get", { id }, key)).body.video;
      // Every rendition done: a ready video may still be encoding its ladder (encoded_at comes last).
      if ((v.status === "ready" && (v.encoded_at !== undefined || v.error_code !== undefined)) || v.status === "error") return v;
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  if (SUITES.includes("segments")) {
    const file = path.join(dataDir, "seg-clip.mp4");
    await clip(file, 12, "640x360");
    const { id } = await upload(file, "segments");
    await call(server.base, "VideoService/CompleteUpload", { id }, key);
    const v = await ready(id);
    const master = parseHlsMaster(await (await fetch(v.playback_url.replace("localhost", "127.0.0.1"))).text());
    const variantUrl = new URL(master.variants.at(-1)!.uri, v.playback_url.replace("localhost", "127.0.0.1"));
    const media = parseHlsMedia(await (await fetch(variantUrl)).text());
    const segUrl = new URL(media.segments[0]!.uri, variantUrl).href;
    const segPath = new URL(segUrl).pathname.slice(new URL(segUrl).pathname.indexOf("/play/"));
    const nginxPort = freePort();
    const nginx = await startNginx(path.join(dataDir, "managed"), nginxPort);
    const nginxUrl = `http://127.0.0.1:${nginxPort}${segPath}`;
    const size = statSync(path.join(dataDir, "managed", segPath)).size;
    const edge: number[] = [];
    const ref: number[] = [];
    await autocannon({ url: segUrl, connections: 64, duration: 2 });
    await autocannon({ url: nginxUrl, connections: 64, duration: 2 });
    for (let r = 0; r < ROUNDS; r++) {
      const a = await autocannon({ url: segUrl, connections: 64, duration: DURATION });
      const b = await autocannon({ url: nginxUrl, connections: 64, duration: DURATION });
      if (a.non2xx || a.errors || b.non2xx || b.errors) throw new Error(`errors: edge ${a.non2xx}/${a.errors}, nginx ${b.non2xx}/${b.errors}`);
      edge.push(a.requests.average);
      ref.push(b.requests.average);
      console.log(
        `round ${r + 1}: edge ${a.requests.average.toFixed(0)} req/s (p99 ${a.latency.p99} ms), nginx ${b.requests.average.toFixed(0)} req/s (p99 ${b.latency.p99} ms)`,
      );
    }
    nginx.kill();
    results.segments = { segmentBytes: size, edgeReqPerSec: median(edge), nginxReqPerSec: median(ref), ratio: median(edge) / median(ref) };
    console.log(
      `segments (${size} bytes, 64 connections): edge ${median(edge).toFixed(0)} req/s, nginx ${median(ref).toFixed(0)} req/s, ratio ${(median(edge) / median(ref)).toFixed(2)}`,
    );
  }

  if (SUITES.includes("upload")) {
    const big = path.join(dataDir, "big.bin");
    await run("dd", ["if=/dev/urandom", `of=${big}`, "bs=1M", "count=1024", "status=none"]);
    const nginxPort = freePort();
    const nginxRoot = tempDataDir();
    scratch.push(nginxRoot);
    const nginx = await startNginx(nginxRoot, nginxPort);
    const byClient: Record<string, unknown> = {};
    for (const client of ["fetch", "curl"] as const) {
      const edgeMs: number[] = [];
      const refMs: number[] = [];
      const serverCpu: number[] = [];
      let rssGrowthMb = 0;
      // Each PUT starts with the disk's dirty pages written back (both sides write the gigabyte to
      // disk, and the one that went second paid for the first's writeback), and the sides take turns
      // at going first.
      const edgeRound = async (r: number) => {
        const before = rssKb(server.child.pid!);
        let peak = before;
        const sampler = setInterval(() => (peak = Math.max(peak, rssKb(server.child.pid!))), 50);
        const cpuBefore = cpuSeconds(server.child.pid!);
        const { putMs } = await upload(big, `upload ${client} ${r}`, client);
        clearInterval(sampler);
        serverCpu.push(cpuSeconds(server.child.pid!) - cpuBefore);
        rssGrowthMb = Math.max(rssGrowthMb, (peak - before) / 1024);
        edgeMs.push(putMs);
        return (peak - before) / 1024;
      };
      const nginxRound = async (r: number) => {
        const started = Date.now();
        await put(client, `http://127.0.0.1:${nginxPort}/put/big-${r % 2}.bin`, big);
        refMs.push(Date.now() - started);
      };
      for (let r = 0; r < ROUNDS; r++) {
        let growth = 0;
        for (const side of r % 2 === 0 ? ["edge", "nginx"] : ["nginx", "edge"]) {
          await run("sync");
          if (side === "edge") growth = await edgeRound(r);
          else await nginxRound(r);
        }
        console.log(
          `${client} round ${r + 1}: edge ${edgeMs.at(-1)} ms, nginx ${refMs.at(-1)} ms, server RSS growth ${growth.toFixed(1)} MB, server CPU ${serverCpu.at(-1)!.toFixed(1)} s`,
        );
      }
      const ratio = median(refMs) / median(edgeMs);
      byClient[client] = {
        edgeMs: median(edgeMs),
        nginxMs: median(refMs),
        throughputRatio: ratio,
        serverRssGrowthMb: rssGrowthMb,
        serverCpuSeconds: median(serverCpu),
      };
      console.log(
        `upload 1 GiB by ${client}: edge ${median(edgeMs)} ms, nginx ${median(refMs)} ms, throughput ratio ${ratio.toFixed(2)}, RSS growth ${rssGrowthMb.toFixed(1)} MB, server CPU ${median(serverCpu).toFixed(1)} s`,
      );
    }
    nginx.kill();
    results.upload = { bytes: statSync(big).size, rounds: ROUNDS, ...byClient };
  }

  if (SUITES.includes("ladder")) {
    const file = path.join(dataDir, "ladder-1080p.mp4");
    await clip(file, 60, "1920x1080");
    const { id, started } = await upload(file, "ladder");
    await call(server.base, "VideoService/CompleteUpload", { id }, key);
    const v = await ready(id);
    const serviceMs = Date.now() - started;
    // The same rungs by hand, as a careful engineer writes them for HLS: one decode split four
    // ways, x264 "fast" at CRF 23 capped at the same per-rung rate (VBV), 2 s GOPs without scene cuts.
    const out = tempDataDir();
    scratch.push(out);
    const t0 = Date.now();
    const rungs = v.renditions.map((r: { width: number; height: number }) => r);
    const split =
      `[0:v]split=${rungs.length}${rungs.map((_: unknown, i: number) => `[s${i}]`).join("")};` +
      rungs.map((r: { width: number; height: number }, i: number) => `[s${i}]scale=${r.width}:${r.height}[v${i}]`).join(";");
    await run("ffmpeg", [
      "-hide_banner",
      "-loglevel",
      "error",
      "-y",
      "-i",
      file,
      "-filter_complex",
      split,
      ...rungs.flatMap((r: { width: number; height: number }, i: number) => {
        const cap = tierTargetKbps("h264", r.width, r.height, 30);
        return [
          "-map",
          `[v${i}]`,
          `-c:v:${i}`,
          "libx264",
          `-preset:v:${i}`,
          "fast",
          `-crf:v:${i}`,
          "23",
          `-maxrate:v:${i}`,
          `${cap}k`,
          `-bufsize:v:${i}`,
          `${cap * 2}k`,
          `-g:v:${i}`,
          "60",
          `-keyint_min:v:${i}`,
          "60",
          `-sc_threshold:v:${i}`,
          "0",
        ];
      }),
      "-map",
      "0:a",
      "-c:a",
      "aac",
      "-b:a",
      "128k",
      "-f",
      "hls",
      "-hls_time",
      "4",
      "-hls_playlist_type",
      "vod",
      "-var_stream_map",
      [...rungs.map((_: unknown, i: number) => `v:${i}`), "a:0"].join(" "),
      "-master_pl_name",
      "index.m3u8",
      path.join(out, "%v", "index.m3u8"),
    ]);
    const handMs = Date.now() - t0;
    results.ladder = { rungs: rungs.map((r: { height: number }) => r.height), serviceMs, handMs, ratio: serviceMs / handMs };
    console.log(`upload-to-ready 60 s 1080p: service ${serviceMs} ms, hand-written ffmpeg ${handMs} ms, ratio ${(serviceMs / handMs).toFixed(2)}`);
  }

  await server.stop();
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
  const resultsDir = path.join(import.meta.dirname, "results");
  mkdirSync(resultsDir, { recursive: true });
  // Suites run separately on one day add up in one file.
  const out = path.join(resultsDir, `hosting-${new Date().toISOString().slice(0, 10)}.json`);
  const earlier = existsSync(out) ? (JSON.parse(readFileSync(out, "utf8")) as Record<string, unknown>) : {};
  writeFileSync(out, JSON.stringify({ ...earlier, ...results }, null, 2) + "\n");
}

await main();
