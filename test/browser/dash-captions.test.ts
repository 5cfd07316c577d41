// DASH captions as the encoder writes them, in a real DASH player: a short H.264 + AAC clip planned
// and encoded (planOutput, runPlan) as DASH and as adaptive (CMAF: MPD and HLS playlists), one
// provided English track written beside it by writeTracks (subtitles/track_0.vtt and a text/vtt
// AdaptationSet in the MPD), then the MPD played by Shaka Player (served from node_modules) in
// Debian's Chromium over a small node:http server. Checked: Shaka lists the one English track,
// with its label, selects it, and the cues it hands the video element show at their times.
import { create } from "@bufbuild/protobuf";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Cue } from "../../encoder-node/captions.js";
import { runPlan } from "../../encoder-node/ffmpeg.js";
import { planOutput, segmentSecondsOf } from "../../encoder-node/plan.js";
import { probe, type ProbeResult } from "../../encoder-node/probe.js";
import { writeTracks, type PreparedTrack } from "../../encoder-node/subtitles.js";
import { OutputSpecSchema, OutputType, SubtitleSource, SubtitleTrackSchema } from "../../src/gen/media/v1/job_pb.js";
import { AudioCodec, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { launchChromium, openPage, playbackAdvances } from "../browser.js";

const exec = promisify(execFile);
const require = createRequire(import.meta.url);
const SHAKA = require.resolve("shaka-player/dist/shaka-player.compiled.js");

const CUES: Cue[] = [
  { start: 1, end: 3, text: "First cue" },
  { start: 4, end: 6, text: "Second cue" },
  { start: 8, end: 10, text: "Third cue" },
];

/** What the page exposes as window.__shaka. */
interface ShakaState {
  version: string;
  loaded: boolean;
  errors: string[];
  textTracks: { language: string; label: string | null; active: boolean; kind: string | null; mimeType: string | null }[];
  /** The cues of the video's showing text tracks: what Shaka handed the browser to render. */
  cues: { start: number; end: number; text: string }[];
  /** Every cue text seen among the showing tracks' activeCues while playing. */
  shown: string[];
}

/** The page: Shaka on a muted video, the MPD of ?mpd= loaded, its English text track selected and shown. */
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>DASH captions</title><script src="/shaka.js"></script></head>
<body><video id="v" muted playsinline width="640" height="360"></video>
<script>
(async () => {
  const state = { version: shaka.Player.version, loaded: false, errors: [], textTracks: [], cues: [], shown: [] };
  window.__shaka = state;
  const describe = (e) => e && e.code !== undefined ? "shaka " + e.code + " (category " + e.category + ", severity " + e.severity + "): " + JSON.stringify(e.data) : String(e);
  const video = document.getElementById("v");
  const showing = () => Array.from(video.textTracks).filter((t) => t.mode === "showing");
  const refresh = () => {
    state.textTracks = player.getTextTracks().map((t) => ({ language: t.language, label: t.label, active: t.active, kind: t.kind, mimeType: t.mimeType }));
    state.cues = showing().flatMap((t) => Array.from(t.cues || [], (c) => ({ start: c.startTime, end: c.endTime, text: c.text })));
    for (const t of showing()) for (const c of Array.from(t.activeCues || [])) if (!state.shown.includes(c.text)) state.shown.push(c.text);
  };
  shaka.polyfill.installAll();
  const player = new shaka.Player();
  window.__player = player;
  player.addEventListener("error", (ev) => state.errors.push(describe(ev.detail)));
  try {
    await player.attach(video);
    await player.load(new URLSearchParams(location.search).get("mpd"));
    const english = player.getTextTracks().find((t) => t.language === "en");
    if (english) player.selectTextTrack(english);
    if (typeof player.setTextTrackVisibility === "function") await player.setTextTrackVisibility(true);
    state.loaded = true;
  } catch (e) {
    state.errors.push("load: " + describe(e));
  }
  setInterval(refresh, 50);
})();
</script></body></html>`;

const TYPES: Record<string, string> = {
  ".mpd": "application/dash+xml",
  ".m4s": "video/mp4",
  ".vtt": "text/vtt; charset=utf-8",
  ".m3u8": "application/vnd.apple.mpegurl",
  ".js": "text/javascript; charset=utf-8",
};

/** Serves the page, Shaka's compiled build, and the output folders under /out/<name>/. */
function serve(root: string): Server {
  return createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE);
      return;
    }
    const file = url.pathname === "/shaka.js" ? SHAKA : path.join(root, path.normalize(decodeURIComponent(url.pathname)));
    if (file !== SHAKA && !file.startsWith(root + path.sep)) {
      res.writeHead(404).end();
      return;
    }
    let body: Buffer;
    try {
      body = readFileSync(file);
    } catch {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": TYPES[path.extname(file)] ?? "application/octet-stream", "content-length": String(body.length) }).end(body);
  });
}

/** Encodes `type` into root/out/<name> and writes the English track beside it; answers the MPD's path under /out. */
async function encodeWithCaptions(root: string, name: string, type: OutputType, input: { file: string; probe: ProbeResult }): Promise<string> {
  const spec = create(OutputSpecSchema, { type, video: [{ codec: VideoCodec.H264, width: 640, height: 360 }], audio: [{ codec: AudioCodec.AAC }] });
  const dir = path.join(root, "out", name);
  mkdirSync(dir, { recursive: true });
  const plan = planOutput(spec, input, { outputId: `out_${name}`, workDir: dir });
  const signal = new AbortController().signal;
  await runPlan(plan, { signal });
  const track: PreparedTrack = {
    index: 0,
    source: "url",
    language: "en",
    name: "English",
    track: create(SubtitleTrackSchema, { source: SubtitleSource.URL, language: "en", isDefault: true }),
    cues: CUES,
  };
  const { files } = await writeTracks(plan, [track], segmentSecondsOf(spec), signal);
  expect(files).toEqual([{ index: 0, file: "subtitles/track_0.vtt" }]);
  const mpd = readFileSync(path.join(dir, plan.dashManifest!.file), "utf8");
  expect(mpd).toContain('mimeType="text/vtt" lang="en"');
  return `/out/${name}/${plan.dashManifest!.file}`;
}

describe("DASH captions in Shaka Player (Chromium)", { timeout: 60_000 }, () => {
  let root: string;
  let browser: Browser;
  let server: Server;
  let base: string;
  const mpds: Record<string, string> = {};

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), "dash-captions-"));
    const clip = path.join(root, "clip.mp4");
    const make = exec("ffmpeg", [
      "-hide_banner",
      "-nostdin",
      "-y",
      "-loglevel",
      "error",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=s=640x360:r=30:d=12",
      "-f",
      "lavfi",
      "-i",
      "sine=f=440:sample_rate=48000:d=12",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-g",
      "30",
      "-c:a",
      "aac",
      "-b:a",
      "96k",
      "-shortest",
      clip,
    ]);
    const [b] = await Promise.all([launchChromium(), make]);
    browser = b;
    const input = { file: clip, probe: await probe(clip) };
    const [dash, adaptive] = await Promise.all([
      encodeWithCaptions(root, "dash", OutputType.DASH, input),
      encodeWithCaptions(root, "adaptive", OutputType.ADAPTIVE, input),
    ]);
    Object.assign(mpds, { dash, adaptive });
    server = serve(root);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it.each(["dash", "adaptive"])("%s: Shaka lists the English track, selects it, and shows its cues at their times", async (name) => {
    const { page, status, log } = await openPage(browser, `${base}/?mpd=${encodeURIComponent(mpds[name]!)}`);
    expect(status).toBe(200);
    const state = () => page.evaluate(() => (window as unknown as { __shaka: ShakaState }).__shaka);
    await page.waitForFunction(
      () => {
        const s = (window as unknown as { __shaka?: ShakaState }).__shaka;
        return s !== undefined && (s.loaded || s.errors.length > 0);
      },
      undefined,
      { timeout: 20_000, polling: 100 },
    );
    const loaded = await state();
    expect(loaded.errors, JSON.stringify({ loaded, log: log.console }, null, 1)).toEqual([]);
    const reached = await playbackAdvances(page, 6.2, { timeoutMs: 20_000 });
    expect(reached).toBeGreaterThan(6.2);
    const s = await state();
    const context = JSON.stringify({ s, log: log.console, errors: log.errors }, null, 1);
    expect(s.version, context).toMatch(/^v5\.2\./);
    expect(s.errors, context).toEqual([]);
    expect(s.textTracks, context).toEqual([expect.objectContaining({ language: "en", label: "English", active: true, mimeType: "text/vtt" })]);
    for (const want of CUES.slice(0, 2)) {
      const cue = s.cues.find((c) => c.text === want.text);
      expect(cue, context).toBeDefined();
      expect(Math.abs(cue!.start - want.start), context).toBeLessThanOrEqual(0.1);
      expect(Math.abs(cue!.end - want.end), context).toBeLessThanOrEqual(0.1);
    }
    // Shown while playing, one after the other, as the playhead passed them.
    expect(s.shown.slice(0, 2), context).toEqual(["First cue", "Second cue"]);
    expect(log.errors, context).toEqual([]);
    await page.close();
  });
});
