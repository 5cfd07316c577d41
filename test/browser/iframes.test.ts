// I-frame playlists in a real player: Shaka Player (from node_modules) in Debian's Chromium loads
// HLS masters with EXT-X-I-FRAME-STREAM-INF (clear fMP4, and cbcs CMAF with Clear Key), takes each
// I-frame playlist as its variant's trick-mode video, and on fast-forward fetches the I-frames'
// byte ranges and decodes them (decrypting the cbcs ones) without an error. Served over a small
// node:http server that answers Range requests, as a CDN does.
import { create } from "@bufbuild/protobuf";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPlan } from "../../encoder-node/ffmpeg.js";
import { planOutput } from "../../encoder-node/plan.js";
import { probe } from "../../encoder-node/probe.js";
import type { ContentKey, TrackClass } from "../../src/drm/types.js";
import { DrmSystem, OutputSpecSchema, OutputType } from "../../src/gen/media/v1/job_pb.js";
import { SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { launchChromium, openPage } from "../browser.js";
import { makeTestInput } from "../media.js";

const require = createRequire(import.meta.url);
const SHAKA = require.resolve("shaka-player/dist/shaka-player.compiled.js");
const hex = () => randomBytes(16).toString("hex");
const keys: ContentKey[] = (["audio", "sd", "hd"] as TrackClass[]).map((trackClass) => ({ trackClass, kid: hex(), key: hex() }));

interface TrickState {
  loaded: boolean;
  errors: string[];
  /** Per variant: whether Shaka attached a trick-mode (I-frame) video stream. */
  trickModes: boolean[];
  /** currentTime after fast-forward. */
  time: number;
}

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><script src="/shaka.js"></script></head>
<body><video id="v" muted playsinline width="640" height="360"></video><script>
(async () => {
  const params = new URLSearchParams(location.search);
  const state = { loaded: false, errors: [], trickModes: [], time: 0 };
  window.__trick = state;
  const describe = (e) => (e && e.code !== undefined ? "shaka " + e.code + ": " + JSON.stringify(e.data).slice(0, 300) : String(e));
  shaka.polyfill.installAll();
  const player = new shaka.Player();
  player.addEventListener("error", (event) => state.errors.push(describe(event.detail)));
  const video = document.getElementById("v");
  try {
    await player.attach(video);
    // A short buffering goal: a slow machine would otherwise have the whole clip buffered from the
    // regular stream before fast-forward begins, leaving Shaka no I-frame to fetch.
    player.configure({ drm: { clearKeys: JSON.parse(params.get("keys") || "{}") }, streaming: { bufferingGoal: 2, rebufferingGoal: 1 } });
    await player.load(params.get("m3u8"));
    state.trickModes = player.getManifest().variants.map((v) => Boolean(v.video && v.video.trickModeVideo));
    state.loaded = true;
    await video.play();
    if (params.get("trick") === "1") player.trickPlay(4);
    setInterval(() => (state.time = video.currentTime), 100);
  } catch (e) {
    state.errors.push("load: " + describe(e));
  }
})();
</script></body></html>`;

describe("I-frame playlists in Shaka Player (Chromium)", { timeout: 90_000 }, () => {
  let root: string;
  let browser: Browser;
  let server: Server;
  let base: string;
  /** Range requests the server answered: "<path> <first>-<last>". */
  const ranges: string[] = [];
  const requests: string[] = [];

  function serve(): Server {
    return createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      if (url.pathname === "/") return void res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE);
      // The packager's playlists name each raw key beside them (the edge serves them in production).
      const kid = /\/drm\/([0-9a-f]{32})\.key$/.exec(url.pathname)?.[1];
      const key = keys.find((k) => k.kid === kid);
      if (kid)
        return void (key ? res.writeHead(200, { "content-type": "application/octet-stream" }).end(Buffer.from(key.key, "hex")) : res.writeHead(404).end());
      const file = url.pathname === "/shaka.js" ? SHAKA : path.join(root, path.normalize(decodeURIComponent(url.pathname)));
      if (file !== SHAKA && !file.startsWith(root + path.sep)) return void res.writeHead(404).end();
      let body: Buffer;
      try {
        body = readFileSync(file);
      } catch {
        return void res.writeHead(404).end();
      }
      const type = file.endsWith(".m3u8") ? "application/vnd.apple.mpegurl" : file.endsWith(".js") ? "text/javascript" : "video/mp4";
      const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
      requests.push(`${url.pathname} ${req.headers.range ?? ""}`);
      if (!range) return void res.writeHead(200, { "content-type": type, "content-length": String(body.length) }).end(body);
      const first = Number(range[1]);
      const last = range[2] ? Math.min(Number(range[2]), body.length - 1) : body.length - 1;
      ranges.push(`${url.pathname} ${first}-${last}`);
      res
        .writeHead(206, { "content-type": type, "content-range": `bytes ${first}-${last}/${body.length}`, "content-length": String(last - first + 1) })
        .end(body.subarray(first, last + 1));
    });
  }

  async function encode(name: string, init: Parameters<typeof create<typeof OutputSpecSchema>>[1], input: string): Promise<string> {
    const dir = path.join(root, name);
    mkdirSync(dir, { recursive: true });
    const plan = planOutput(create(OutputSpecSchema, init), { file: input, probe: await probe(input) }, { outputId: name, workDir: dir });
    await runPlan(plan, { keys });
    return `/${name}/${plan.main}`;
  }

  /** The I-frame byte ranges an I-frame playlist lists, as "<path> <first>-<last>". */
  function iframeRanges(playlist: string): string[] {
    const text = readFileSync(path.join(root, playlist), "utf8");
    return [...text.matchAll(/#EXT-X-BYTERANGE:(\d+)@(\d+)\n(\S+)/g)].map(
      (m) => `/${path.posix.join(path.posix.dirname(playlist), m[3]!)} ${m[2]}-${Number(m[2]) + Number(m[1]) - 1}`,
    );
  }

  let clear: string;
  let cbcs: string;

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), "iframes-browser-"));
    const [b, input] = await Promise.all([
      launchChromium(),
      makeTestInput(path.join(root, "in.mp4"), { seconds: 12, width: 640, height: 360, fps: 30, audio: true }),
    ]);
    browser = b;
    const video = [
      { codec: VideoCodec.H264, width: 640, height: 360, h264: { encoderPreset: "veryfast" } },
      { codec: VideoCodec.H264, width: 320, height: 180, h264: { encoderPreset: "veryfast" } },
    ];
    [clear, cbcs] = await Promise.all([
      encode("clear", { type: OutputType.HLS, hls: { iframePlaylists: true, segmentFormat: SegmentFormat.FMP4, segmentDurationSeconds: 2 }, video }, input),
      encode(
        "cbcs",
        { type: OutputType.ADAPTIVE, hls: { iframePlaylists: true }, segments: { segmentDurationSeconds: 2 }, video, drm: { systems: [DrmSystem.CLEARKEY] } },
        input,
      ),
    ]);
    server = serve();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("clear fMP4: every variant gets its trick-mode stream, and fast-forward fetches and decodes I-frame ranges", async () => {
    ranges.length = 0;
    const { page, status } = await openPage(browser, `${base}/?trick=1&m3u8=${encodeURIComponent(clear)}`);
    expect(status).toBe(200);
    const state = () => page.evaluate(() => (window as unknown as { __trick: TrickState }).__trick);
    await expect.poll(async () => (await state()).loaded || (await state()).errors.length > 0, { timeout: 20_000 }).toBe(true);
    expect((await state()).trickModes).toEqual([true, true]);
    // Fast-forward: Shaka switches to the I-frame stream and asks for its ranges.
    const listed = iframeRanges("clear/640x360/index_iframes.m3u8");
    await expect.poll(() => ranges.filter((r) => listed.includes(r)).length, { timeout: 20_000, message: requests.join("\n") }).toBeGreaterThan(1);
    await expect.poll(async () => (await state()).time, { timeout: 20_000 }).toBeGreaterThan(4);
    expect((await state()).errors).toEqual([]);
    await page.close();
  });

  // Shaka repairs clipped I-frame fragments (Apple's layout: moof, then the mdat cut after the key
  // frame) only when they are clear (ContentWorkarounds.fixBrokenIframes skips senc), so the
  // encrypted trick-mode streams are checked as loaded and listed, and the stream as still playing.
  it("cbcs CMAF with Clear Key: the master with its I-frame streams loads, every variant gets one, and plays", async () => {
    const clearKeys = Object.fromEntries(keys.map((k) => [k.kid, k.key]));
    const { page, status } = await openPage(browser, `${base}/?m3u8=${encodeURIComponent(cbcs)}&keys=${encodeURIComponent(JSON.stringify(clearKeys))}`);
    expect(status).toBe(200);
    const state = () => page.evaluate(() => (window as unknown as { __trick: TrickState }).__trick);
    await expect.poll(async () => (await state()).loaded || (await state()).errors.length > 0, { timeout: 20_000 }).toBe(true);
    expect((await state()).trickModes).toEqual([true, true]);
    await expect.poll(async () => (await state()).time, { timeout: 20_000 }).toBeGreaterThan(2);
    expect((await state()).errors).toEqual([]);
    await page.close();
  });
});
