// The whole product in a real browser: a file uploaded to the embedded server, transcoded by the
// auto ladder on real ffmpeg, and its player page ({player_base}/v/{id}) opened in Debian's
// Chromium, where playback must advance through the signed stream. A private video's page is 404.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, startHarness, type Auth, type Harness } from "../harness.js";
import { stream } from "../watch.js";
import { launchChromium, openPage, playbackAdvances, playerState, startPlayback, waitForCurrentTime } from "../browser.js";
import { synthesizeSpeech } from "../speech.js";

const run = promisify(execFile);
let h: Harness;
let key: Auth;
let browser: Browser;
let clip: string;
let shortClip: string;

async function readyVideo(visibility: string, file = clip, extra: object = {}): Promise<any> {
  const size = statSync(file).size;
  const created = await ok(
    call(
      h.base,
      "VideoService/CreateUpload",
      { app_id: h.boot.app_id, filename: "clip.mp4", content_type: "video/mp4", size_bytes: size, visibility, title: "Browser clip", ...extra },
      key,
    ),
  );
  expect((await fetch(created.upload_url, { method: "PUT", body: readFileSync(file) })).status).toBe(200);
  await ok(call(h.base, "VideoService/CompleteUpload", { id: created.video.id }, key));
  const r = await stream(h.base, "VideoService/Watch", { id: created.video.id }, key);
  const video = r.messages.at(-1)!.body.video;
  expect(video.status).toBe("ready");
  return video;
}

beforeAll(async () => {
  // The page is reached as a viewer would: the public URL names the gateway's own address.
  h = await startHarness();
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  clip = path.join(mkdtempSync(path.join(tmpdir(), "browser-clip-")), "clip.mp4");
  await run("ffmpeg", [
    "-hide_banner",
    "-loglevel",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=854x480:rate=25:duration=12",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:duration=12",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-shortest",
    clip,
  ]);
  // For a test that needs a ready video but plays none of it.
  shortClip = path.join(path.dirname(clip), "short.mp4");
  await run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", clip, "-t", "2", "-c", "copy", shortClip]);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await h?.server.close();
});

describe("the player page of a hosted video", () => {
  it("plays in Chromium: the page loads our own player over the signed stream and playback advances", async () => {
    const video = await readyVideo("public");
    const { page, status, log } = await openPage(browser, video.embed_url);
    expect(status).toBe(200);
    const reached = await playbackAdvances(page, 3, { timeoutMs: 60_000 });
    expect(reached).toBeGreaterThan(3);
    const state = await playerState(page);
    expect(state.error).toBeNull();
    expect(state.source).toContain("/bcdn_token=HS256-");
    expect(log.cspViolations()).toEqual([]);
    await page.close();
  }, 180_000);

  // hls.js is held back, so the viewer's play comes before the engine exists: the race a quick
  // click or an autoplay embed hits on a slow connection.
  async function pageWithSlowEngine(url: string): Promise<{ page: Page; held: Promise<void> }> {
    const page = await browser.newPage();
    let released!: () => void;
    const held = new Promise<void>((r) => (released = r));
    await page.route(/\/assets\/player\/hls\.min\.js/, async (route) => {
      await new Promise((r) => setTimeout(r, 1_500));
      released();
      await route.continue();
    });
    await page.goto(url, { waitUntil: "domcontentloaded" });
    return { page, held };
  }

  it("starts when play is pressed as soon as the page is parsed, before hls.js has loaded", async () => {
    const video = await readyVideo("public");
    const { page, held } = await pageWithSlowEngine(video.embed_url);
    await startPlayback(page);
    await held;
    expect(await waitForCurrentTime(page, 2, { timeoutMs: 60_000 })).toBeGreaterThan(2);
    expect((await playerState(page)).engine).toBe("hls.js");
    await page.close();
  }, 180_000);

  it("an ?autoplay=1 embed starts by itself, muted, though hls.js loads late", async () => {
    const video = await readyVideo("public");
    const { page, held } = await pageWithSlowEngine(`${video.embed_url}?autoplay=1`);
    await held;
    expect(await waitForCurrentTime(page, 2, { timeoutMs: 60_000 })).toBeGreaterThan(2);
    expect(await page.$eval("video", (v) => (v as HTMLVideoElement).muted)).toBe(true);
    expect((await playerState(page)).autoplay).toBe(true);
    await page.close();
  }, 180_000);

  it("shows the captions of a hosted video, timed as the WebVTT file says (the HLS timestamp map lines them up)", async () => {
    const speech = await synthesizeSpeech(mkdtempSync(path.join(tmpdir(), "browser-speech-")));
    const video = await readyVideo("unlisted", speech.mp4, { subtitle_tracks: [{ source: "generated", language: "en", is_default: true }] });
    const { page, status } = await openPage(browser, video.embed_url);
    expect(status).toBe(200);
    expect(await playbackAdvances(page, 4, { timeoutMs: 60_000 })).toBeGreaterThan(4);
    const tracks = await page
      .waitForFunction(
        () => {
          const list = Array.from(document.querySelector("video")!.textTracks);
          const shown = list.find((t) => t.mode === "showing" && t.cues && t.cues.length > 0);
          return (
            shown &&
            list.map((t) => ({
              kind: t.kind,
              language: t.language,
              label: t.label,
              mode: t.mode,
              cues: Array.from(t.cues ?? []).map((c) => ({ start: c.startTime, end: c.endTime, text: (c as VTTCue).text })),
            }))
          );
        },
        undefined,
        { timeout: 30_000 },
      )
      .then((handle) => handle.jsonValue());
    const shown = tracks!.find((t) => t.mode === "showing")!;
    expect(shown).toMatchObject({ language: "en", label: "English" });
    // The same cues as the track's WebVTT file (no timestamp map), at the same times.
    const file = await fetch(video.playback_url.replace(/index\.m3u8$/, "subtitles/track_0.vtt"));
    expect(file.status).toBe(200);
    const times = [...(await file.text()).matchAll(/(\d+):(\d\d):(\d\d\.\d{3}) --> (\d+):(\d\d):(\d\d\.\d{3})\n(.+)/g)].map((m) => ({
      start: Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]),
      text: m[7]!,
    }));
    for (const cue of shown.cues.slice(0, 3)) {
      const same = times.find((t) => cue.text.startsWith(t.text));
      expect(same, cue.text).toBeDefined();
      expect(Math.abs(cue.start - same!.start)).toBeLessThan(0.1);
    }
    await page.close();
  }, 240_000);

  it("a private video's page is 404", async () => {
    const video = await readyVideo("private", shortClip);
    const { page, status } = await openPage(browser, `${h.base.replace("127.0.0.1", "localhost")}/v/${video.id}`);
    expect(status).toBe(404);
    await page.close();
  }, 180_000);
});
