// Playable in seconds: a source uploaded through the API plays in Chromium while its ladder still
// encodes. The video is ready (and its Watch goes on) as soon as the first rung has a segment; the
// master lists only variants that load; stock hls.js and Shaka Player start a growing playlist at
// 0, not at its live edge (checked on playlists cut as they were stored mid-way); playlists are not cached as final while they grow; at the end every
// playlist ends with EXT-X-ENDLIST, the master lists every rung, and every rung decodes whole.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, startHarness, type Auth, type Harness } from "../harness.js";
import { stream, type StreamMessage } from "../watch.js";
import { launchChromium, openPage, playbackAdvances, playerState } from "../browser.js";
import { decodedFrames, parseHlsMaster } from "../media.js";

const run = promisify(execFile);
const SECONDS = 40;
const FPS = 25;
let h: Harness;
let key: Auth;
let browser: Browser;
let clip: string;

beforeAll(async () => {
  h = await startHarness();
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  clip = path.join(mkdtempSync(path.join(tmpdir(), "progressive-clip-")), "clip.mp4");
  await run("ffmpeg", [
    ...["-hide_banner", "-loglevel", "error", "-y"],
    ...["-f", "lavfi", "-i", `testsrc2=size=1280x720:rate=${FPS}:duration=${SECONDS}`],
    ...["-f", "lavfi", "-i", `sine=frequency=440:duration=${SECONDS}`],
    ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", clip],
  ]);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await h?.server.close();
});

/** A playlist's URL beside another (relative URIs, as the edge serves them). */
const beside = (url: string, rel: string) => new URL(rel, url).toString();

/** Every variant and rendition a master names, each with its playlist's text; a problem for each that does not load or lists nothing. */
async function loadable(masterUrl: string): Promise<{ variants: string[]; problems: string[]; cacheControl: string[] }> {
  const res = await fetch(masterUrl);
  const problems: string[] = [];
  const cacheControl = [res.headers.get("cache-control") ?? ""];
  if (res.status !== 200) return { variants: [], problems: [`master: ${res.status}`], cacheControl };
  const master = parseHlsMaster(await res.text());
  const variants = master.variants.map((v) => v.uri);
  for (const uri of [...variants, ...master.media.map((m) => m.URI ?? "").filter(Boolean)]) {
    const r = await fetch(beside(masterUrl, uri));
    cacheControl.push(r.headers.get("cache-control") ?? "");
    if (r.status !== 200) {
      problems.push(`${uri}: ${r.status}`);
      continue;
    }
    const segments = (await r.text()).split("\n").filter((l) => l.trim() !== "" && !l.startsWith("#"));
    if (segments.length === 0) problems.push(`${uri}: no segment`);
    // The first segment of each: it is what a player loads first.
    else if ((await fetch(beside(beside(masterUrl, uri), segments[0]!), { method: "HEAD" })).status !== 200)
      problems.push(`${uri}: ${segments[0]} does not load`);
  }
  return { variants, problems, cacheControl };
}

describe("a hosted video plays while its ladder encodes", () => {
  it("is ready with its first rung, plays from 0 in hls.js (ours and stock) and Shaka, and ends whole", async () => {
    const created = await ok(
      call(
        h.base,
        "VideoService/CreateUpload",
        { app_id: h.boot.app_id, filename: "clip.mp4", content_type: "video/mp4", size_bytes: statSync(clip).size, visibility: "public" },
        key,
      ),
    );
    const id = created.video.id as string;
    expect((await fetch(created.upload_url, { method: "PUT", body: readFileSync(clip) })).status).toBe(200);
    const seen: StreamMessage[] = [];
    const watched = stream(h.base, "VideoService/Watch", { id }, key, (m) => seen.push(m));
    watched.catch(() => undefined); // awaited below; a failed test must not leave it unhandled
    await ok(call(h.base, "VideoService/CompleteUpload", { id }, key));

    // Ready while encoding: no encoded_at yet, the first rung only.
    let video: any;
    for (const until = Date.now() + 90_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
      video = (await ok(call(h.base, "VideoService/Get", { id }, key))).video;
      if (video.status !== "processing") break;
    }
    expect(video.status).toBe("ready");
    expect(video.encoded_at).toBeUndefined();
    expect(video.ready_at).toBeDefined();
    const playback = video.playback_url as string;

    // Loadable at every moment until the end: each read of the master names only what loads.
    const masters: string[][] = [];
    const problems: string[] = [];
    const growing: string[] = [];
    let done = false;
    const watching = (async () => {
      while (!done) {
        const m = await loadable(playback);
        masters.push(m.variants);
        problems.push(...m.problems);
        growing.push(...m.cacheControl);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    watching.catch(() => undefined); // awaited below; a failed test closes the server under it

    // Our player page (hls.js) plays it from the start while it encodes.
    const { page } = await openPage(browser, video.embed_url);
    expect(await playbackAdvances(page, 2, { timeoutMs: 60_000 })).toBeGreaterThan(2);
    // Where playback began: the first range the element played (the position at "playing" is read
    // when the event runs, later under load).
    expect(await page.$eval("video", (v) => (v as HTMLVideoElement).played.start(0))).toBeLessThan(0.5);
    expect((await playerState(page)).error).toBeNull();
    // Stock hls.js and Shaka Player, default settings. A growing playlist shorter than three
    // segments has its live edge at 0 anyway, and a complete one plays from 0: so once the first
    // rung has 6 segments, the players get every media playlist as it was stored when it had 6
    // (24 s), still growing, where their live edge is 12 s in or later.
    const firstRung = beside(playback, parseHlsMaster(await (await fetch(playback)).text()).variants.at(-1)!.uri);
    const SEGMENTS = 6;
    for (const until = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 250))) {
      const listed = (await (await fetch(firstRung)).text()).split("\n").filter((l) => l !== "" && !l.startsWith("#")).length;
      if (listed >= SEGMENTS) break;
      if (Date.now() > until) throw new Error(`the first rung has ${listed} segments after a minute`);
    }
    await page.route(/\/index\.m3u8(\?|$)/, async (route) => {
      const res = await route.fetch();
      const text = await res.text();
      if (text.includes("#EXT-X-STREAM-INF")) return route.fulfill({ response: res, body: text });
      const kept: string[] = [];
      let segments = 0;
      for (const line of text.split("\n")) {
        if (line.startsWith("#EXT-X-ENDLIST") || segments === SEGMENTS) continue;
        kept.push(line);
        if (line !== "" && !line.startsWith("#")) segments++;
      }
      await route.fulfill({ response: res, body: `${kept.join("\n")}\n` });
    });
    const starts = await page.evaluate(async (url) => {
      const w = window as any;
      // Where playback starts: the start of the first range played, once it has really advanced.
      const startOf = (video: HTMLVideoElement) =>
        new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no playback: readyState ${video.readyState}`)), 30_000);
          let start: number | undefined;
          video.addEventListener("playing", () => (start ??= video.currentTime), { once: true });
          video.addEventListener("timeupdate", function check() {
            if (start !== undefined && video.currentTime > start + 0.5) {
              clearTimeout(timer);
              video.removeEventListener("timeupdate", check);
              resolve(video.played.start(0));
            }
          });
          video.muted = true;
          void video.play();
        });
      // Three times: where a player starts depends on when it reads what.
      const stock: number[] = [];
      for (let i = 0; i < 3; i++) {
        const a = document.createElement("video");
        document.body.append(a);
        const hls = new w.Hls();
        hls.loadSource(url);
        hls.attachMedia(a);
        stock.push(await startOf(a));
        hls.destroy();
        a.remove();
      }
      await new Promise<void>((resolve, reject) => {
        const s = document.createElement("script");
        s.src = "/assets/player/shaka-player.compiled.js";
        s.onload = () => resolve();
        s.onerror = () => reject(new Error("shaka did not load"));
        document.head.append(s);
      });
      const b = document.createElement("video");
      document.body.append(b);
      const player = new w.shaka.Player();
      await player.attach(b);
      await player.load(url);
      const shaka = await startOf(b);
      await player.destroy();
      return { stock, shaka };
    }, playback);
    for (const start of [...starts.stock, starts.shaka]) expect(start).toBeLessThan(0.5);
    const meanwhile = (await ok(call(h.base, "VideoService/Get", { id }, key))).video;
    expect(meanwhile.encoded_at).toBeUndefined();
    // The players may still be reloading playlists: a route call the closing page cuts off would
    // throw after the test ("Response has been disposed").
    await page.unrouteAll({ behavior: "ignoreErrors" });
    await page.close();

    // Watch goes on past ready, to the end of the encode.
    const result = await watched;
    done = true;
    await watching;
    const types = result.messages.map((m) => m.body.event_type);
    expect(types[0]).toBe("snapshot");
    expect(types.at(-1)).toBe("completed");
    const readyUpdate = result.messages.findIndex((m) => m.body.video?.status === "ready");
    expect(result.messages[readyUpdate]!.body.event_type).toBe("updated");
    expect(result.messages[readyUpdate]!.body.video.encoded_at).toBeUndefined();
    const last = result.messages.at(-1)!.body.video;
    expect(last.encoded_at).toBeDefined();
    expect(last.renditions.map((r: any) => r.resolution).sort()).toEqual(["360p", "480p", "720p"]);
    expect(seen.length).toBe(result.messages.length);

    expect(problems).toEqual([]);
    expect(masters[0]).toHaveLength(1);
    expect(growing.filter((c) => c !== "no-cache" && c !== "public, max-age=60")).toEqual([]);
    expect(growing).toContain("no-cache");
    // At the end: every rung listed, every playlist ended, cached as final, every rung whole.
    const final = (await ok(call(h.base, "VideoService/Get", { id }, key))).video;
    const end = await loadable(final.playback_url);
    expect(end.problems).toEqual([]);
    expect(end.variants).toHaveLength(3);
    expect(new Set(end.cacheControl)).toEqual(new Set(["public, max-age=60"]));
    for (const uri of end.variants) {
      const url = beside(final.playback_url, uri);
      expect(await (await fetch(url)).text()).toMatch(/#EXT-X-ENDLIST\s*$/);
      expect(await decodedFrames(url)).toBe(SECONDS * FPS);
    }
  }, 240_000);
});
