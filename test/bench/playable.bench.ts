// Benchmark: time to playable, as a viewer sees it. From CompleteUpload answered to the first
// frame Chromium renders on the video's player page (requestVideoFrameCallback), for 1 min and
// 10 min 1080p30 sources, against a reference run side by side on this machine: the same server
// with MEDIA_ENCODER_PROGRESSIVE=false, where a video is ready only once its whole ladder is
// encoded (the behaviour before progressive readiness). Each played video is then canceled (a
// progressive one stays ready: it plays what was encoded). Mux publishes its median time to
// playable by input length: 2.0 s under 1 min, 9.0 s for 5-20 min.
// Run: npm run bench:playable   (BENCH_ROUNDS=3; BENCH_SOURCES=60,600; BENCH_REFERENCE=60 lists the
// source lengths the reference also runs: a 10 min reference takes about 15 min a round here)
import { createReadStream, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { Readable } from "node:stream";
import path from "node:path";
import type { Browser } from "playwright-core";
import { call, freePort, readBootstrap, spawnServer, tempDataDir } from "../harness.js";
import { launchChromium } from "../browser.js";
import { testPattern1080p } from "./sources.js";

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ROUNDS = num("BENCH_ROUNDS", 3);
const SOURCES = (process.env.BENCH_SOURCES ?? "60,600").split(",").map(Number);
const REFERENCE = (process.env.BENCH_REFERENCE ?? "60").split(",").filter(Boolean).map(Number);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const source = (seconds: number) => testPattern1080p("playable", seconds);

interface Round {
  playableMs: number;
  readyMs: number;
}

/** One upload on one server: CompleteUpload answered → ready → first frame rendered on the player page. */
async function round(base: string, key: { bearer: string; org: string }, browser: Browser, file: string): Promise<Round> {
  const created = (
    await call(
      base,
      "VideoService/CreateUpload",
      { filename: path.basename(file), content_type: "video/mp4", size_bytes: statSync(file).size, visibility: "public" },
      key,
    )
  ).body;
  // Streamed, so chunked: the edge takes no ten-digit Content-Length (a 10 min source is over 1 GB).
  const put = await fetch(created.upload_url, {
    method: "PUT",
    body: Readable.toWeb(createReadStream(file)) as ReadableStream,
    duplex: "half",
  } as RequestInit);
  if (put.status !== 200) throw new Error(`upload: ${put.status}`);
  const page = await browser.newPage();
  await page.goto("about:blank");
  const id = created.video.id as string;
  const completed = await call(base, "VideoService/CompleteUpload", { id }, key);
  if (completed.status !== 200) throw new Error(`CompleteUpload: ${JSON.stringify(completed.body)}`);
  const t0 = Date.now();
  let video: any;
  for (;;) {
    video = (await call(base, "VideoService/Get", { id }, key)).body.video;
    if (video.status === "ready") break;
    if (video.status === "error") throw new Error(`the video failed: ${video.error_message}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const readyMs = Date.now() - t0;
  await page.goto(`${video.embed_url}?autoplay=1`, { waitUntil: "domcontentloaded" });
  await page.evaluate(
    () =>
      new Promise<void>((resolve) => {
        const v = document.querySelector("video") as HTMLVideoElement & { requestVideoFrameCallback(cb: () => void): void };
        v.requestVideoFrameCallback(() => resolve());
      }),
  );
  const playableMs = Date.now() - t0;
  await page.close();
  await call(base, "JobService/Cancel", { id: video.job_id }, key);
  return { playableMs, readyMs };
}

async function main(): Promise<void> {
  const browser = await launchChromium();
  const results: Record<string, unknown> = { rounds: ROUNDS, mux: { under1MinS: 2.0, from5To20MinS: 9.0 } };
  for (const seconds of SOURCES) {
    const file = await source(seconds);
    const sides = REFERENCE.includes(seconds) ? (["progressive", "reference"] as const) : (["progressive"] as const);
    const bySide: Record<string, Round[]> = { progressive: [], reference: [] };
    const servers = new Map<string, { base: string; key: { bearer: string; org: string }; stop: () => Promise<void>; dir: string }>();
    for (const side of sides) {
      const dir = tempDataDir();
      const server = await spawnServer(dir, freePort(), {
        MEDIA_RATE_LIMIT_KEY: "0",
        MEDIA_RATE_LIMIT_ANONYMOUS: "0",
        MEDIA_ENCODER_PROGRESSIVE: side === "progressive" ? "true" : "false",
      });
      const boot = readBootstrap(dir);
      servers.set(side, { base: server.base, key: { bearer: boot.api_key, org: boot.organization_id }, stop: async () => void (await server.stop()), dir });
    }
    // The sides take turns at going first; one server at a time encodes (the other is idle).
    for (let r = 0; r < ROUNDS; r++) {
      for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
        const s = servers.get(side)!;
        const result = await round(s.base, s.key, browser, file);
        bySide[side]!.push(result);
        console.log(`${seconds} s source, ${side}, round ${r + 1}: ready ${result.readyMs} ms, first frame ${result.playableMs} ms`);
        // The canceled encode stops; give the node a moment before the next round.
        await new Promise((r2) => setTimeout(r2, 2000));
      }
    }
    for (const s of servers.values()) {
      await s.stop();
      rmSync(s.dir, { recursive: true, force: true });
    }
    const progressive = median(bySide.progressive!.map((x) => x.playableMs));
    const reference = bySide.reference!.length > 0 ? median(bySide.reference!.map((x) => x.playableMs)) : undefined;
    results[`source${seconds}s`] = {
      progressive: { medianPlayableMs: progressive, rounds: bySide.progressive },
      ...(reference !== undefined ? { reference: { medianPlayableMs: reference, rounds: bySide.reference }, ratio: progressive / reference } : {}),
    };
    console.log(
      `${seconds} s 1080p: time to playable, median ${progressive} ms` +
        (reference !== undefined ? `; reference (ready when the whole ladder is done) ${reference} ms; ratio ${(progressive / reference).toFixed(3)}` : ""),
    );
  }
  await browser.close();
  const dir = path.join(import.meta.dirname, "results");
  mkdirSync(dir, { recursive: true });
  // Sources run separately on one day add up in one file.
  const out = path.join(dir, `playable-${new Date().toISOString().slice(0, 10)}.json`);
  const earlier = existsSync(out) ? (JSON.parse(readFileSync(out, "utf8")) as Record<string, unknown>) : {};
  writeFileSync(out, JSON.stringify({ ...earlier, ...results }, null, 2) + "\n");
}

await main();
