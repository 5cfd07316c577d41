// Protected hosted videos in a real browser: three uploads to the embedded server, transcoded by the
// auto ladder with DRM (aes_128 on ts HLS, cbcs CMAF and cenc DASH, keys from the built-in provider),
// played in Debian's Chromium with its built-in Clear Key CDM: hls.js on the player page for
// AES-128, Shaka Player for Clear Key (the player page for cbcs HLS and cenc DASH, a bare Shaka page
// on the gateway's origin for cbcs DASH and for keys given by hand). Each must advance past 3 s with
// the right key, and must not with a wrong key, a wrong key ID, or a license or key request whose
// token is missing or expired.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Browser, Page, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, startHarness, type Auth, type Harness } from "../harness.js";
import { stream } from "../watch.js";
import { launchChromium, openPage, playbackAdvances, playerState, startPlayback, videoState } from "../browser.js";

const run = promisify(execFile);
let h: Harness;
let key: Auth;
let browser: Browser;
let clip: string;
const videos: Record<"aes" | "cbcs" | "cenc", Promise<any>> = {} as never;

async function readyVideo(drm: object): Promise<any> {
  const size = statSync(clip).size;
  const created = await ok(
    call(
      h.base,
      "VideoService/CreateUpload",
      { app_id: h.boot.app_id, filename: "clip.mp4", content_type: "video/mp4", size_bytes: size, visibility: "unlisted", title: "Protected clip", drm },
      key,
    ),
  );
  expect((await fetch(created.upload_url, { method: "PUT", body: readFileSync(clip) })).status).toBe(200);
  await ok(call(h.base, "VideoService/CompleteUpload", { id: created.video.id }, key));
  const r = await stream(h.base, "VideoService/Watch", { id: created.video.id }, key);
  const video = r.messages.at(-1)!.body.video;
  expect(video.status, JSON.stringify(video)).toBe("ready");
  return video;
}

/** A URL of the same signed directory as `signed` (the playback URL), for `file` beside its manifest. */
const beside = (signed: string, file: string) => signed.slice(0, signed.lastIndexOf("/") + 1) + file;
/** The same URL with no token: the bare path under the gateway. */
const withoutToken = (signed: string) => signed.replace(/\/bcdn_token=[^/]*/, "");
/** The same URL with its expiry moved into the past (the signature no longer matches, and it has expired). */
const expired = (signed: string) => signed.replace(/expires=\d+/, `expires=${Math.floor(Date.now() / 1000) - 60}`);

const randomHex = () => Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");

/** Key IDs (hex) the MPD signals, and their keys from the license server. */
async function keysOf(mpdUrl: string): Promise<Map<string, string>> {
  const mpd = await (await fetch(mpdUrl)).text();
  const kids = [...new Set([...mpd.matchAll(/default_KID="([0-9a-fA-F-]{36})"/g)].map((m) => m[1]!.replace(/-/g, "").toLowerCase()))];
  expect(kids.length).toBeGreaterThan(0);
  const r = await fetch(beside(mpdUrl, "drm/clearkey"), {
    method: "POST",
    body: JSON.stringify({ kids: kids.map((k) => Buffer.from(k, "hex").toString("base64url")), type: "temporary" }),
  });
  expect(r.status).toBe(200);
  const license = (await r.json()) as { keys: { kid: string; k: string }[] };
  return new Map(license.keys.map((k) => [Buffer.from(k.kid, "base64url").toString("hex"), Buffer.from(k.k, "base64url").toString("hex")]));
}

/** A bare Shaka Player page on the gateway's origin (served by the browser from this test), its script from the player's assets. */
const SHAKA_PAGE = `<!doctype html><html><head><meta charset="utf-8"><script src="/assets/player/shaka-player.compiled.js"></script></head>
<body><video id="v" muted playsinline width="640" height="360"></video><script>
window.__load = async (manifest, drm) => {
  const state = { loaded: false, errors: [] };
  window.__shaka = state;
  const describe = (e) => (e && e.code !== undefined ? "shaka " + e.code + ": " + JSON.stringify(e.data).slice(0, 300) : String(e));
  shaka.polyfill.installAll();
  const player = new shaka.Player();
  player.addEventListener("error", (event) => state.errors.push(describe(event.detail)));
  await player.attach(document.getElementById("v"));
  player.configure({ drm });
  try {
    await player.load(manifest);
    state.loaded = true;
  } catch (e) {
    state.errors.push(describe(e));
  }
};
</script></body></html>`;

/** The page on the origin of `manifest` (the public URL's, which may name the gateway otherwise than h.base), so its requests are same-origin. */
async function shakaPage(manifest: string): Promise<Page> {
  const page = await browser.newPage();
  const at = `${new URL(manifest).origin}/__drm-test`;
  await page.route(at, (route) => route.fulfill({ status: 200, contentType: "text/html", body: SHAKA_PAGE }));
  await page.goto(at);
  return page;
}

async function shakaLoad(page: Page, manifest: string, drm: object): Promise<{ loaded: boolean; errors: string[] }> {
  await page.evaluate(([m, d]) => (window as any).__load(m, d), [manifest, drm] as const);
  return page.evaluate(() => (window as any).__shaka);
}

/** Presses play and answers where playback got to after `ms`: a protected stream the browser cannot decrypt stays at (about) 0. */
async function stuckAt(page: Page, ms = 8_000): Promise<number> {
  await startPlayback(page).catch(() => undefined);
  await page.waitForTimeout(ms);
  return (await videoState(page)).currentTime;
}

/** Answers every request matching `pattern` with what the server says to `rewrite(url)` (a real answer, for another URL). */
async function redirectRequests(page: Page, pattern: RegExp, rewrite: (url: string) => string): Promise<void> {
  await page.route(pattern, async (route: Route) => {
    const request = route.request();
    const response = await route.fetch({ url: rewrite(request.url()) });
    await route.fulfill({ response });
  });
}

beforeAll(async () => {
  h = await startHarness();
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  clip = path.join(mkdtempSync(path.join(tmpdir(), "drm-clip-")), "clip.mp4");
  await run("ffmpeg", [
    "-hide_banner",
    "-loglevel",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=640x360:rate=25:duration=12",
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
  // The encoder takes them one after another; each test waits for its own.
  videos.aes = readyVideo({});
  videos.cbcs = readyVideo({ scheme: "cbcs", systems: ["clearkey"] });
  videos.cenc = readyVideo({ scheme: "cenc", systems: ["clearkey"] });
  for (const v of Object.values(videos)) v.catch(() => undefined);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await h?.server.close();
});

describe("AES-128 on ts HLS (the hosted ladder's default protection), in hls.js", () => {
  it("plays on the player page; its segments are encrypted and their key is served only under the token", async () => {
    const video = await videos.aes;
    const master = await (await fetch(video.playback_url)).text();
    const media = beside(
      video.playback_url,
      master.split("\n").find((l) => l.endsWith(".m3u8"))!,
    );
    const playlist = await (await fetch(media)).text();
    const line = /#EXT-X-KEY:METHOD=AES-128,URI="(drm\/([0-9a-f]{32})\.key)",IV=0x([0-9a-fA-F]{32})/.exec(playlist);
    expect(line, playlist).not.toBeNull();
    const keyUrl = beside(media, line![1]!);
    const got = await fetch(keyUrl);
    expect(got.status).toBe(200);
    expect(got.headers.get("cache-control")).toBe("no-store");
    const aesKey = Buffer.from(await got.arrayBuffer());
    expect(aesKey).toHaveLength(16);
    // The first segment is not a clear transport stream, and decrypts to one with the served key.
    const segment = Buffer.from(
      await (
        await fetch(
          beside(
            media,
            playlist.split("\n").find((l) => l.endsWith(".ts"))!,
          ),
        )
      ).arrayBuffer(),
    );
    expect(segment[0]).not.toBe(0x47);
    const dir = mkdtempSync(path.join(tmpdir(), "drm-seg-"));
    writeFileSync(path.join(dir, "seg.ts"), segment);
    await run("openssl", [
      "aes-128-cbc",
      "-d",
      "-K",
      aesKey.toString("hex"),
      "-iv",
      line![3]!,
      "-in",
      path.join(dir, "seg.ts"),
      "-out",
      path.join(dir, "clear.ts"),
    ]);
    expect(readFileSync(path.join(dir, "clear.ts"))[0]).toBe(0x47);
    // No token, an expired token, another video's key ID: no key.
    expect((await fetch(withoutToken(keyUrl))).status).toBeGreaterThanOrEqual(400);
    expect((await fetch(expired(keyUrl))).status).toBe(403);
    expect((await fetch(beside(media, `drm/${randomHex()}.key`))).status).toBe(404);

    const { page, status, log } = await openPage(browser, video.embed_url);
    expect(status).toBe(200);
    expect(await playbackAdvances(page, 3, { timeoutMs: 60_000 })).toBeGreaterThan(3);
    expect((await playerState(page)).engine).toBe("hls.js");
    expect(log.cspViolations()).toEqual([]);
    await page.close();
  }, 240_000);

  const cases: [string, (page: Page) => Promise<void>][] = [
    [
      "a wrong key",
      async (page) => {
        await page.route(/\/drm\/[0-9a-f]{32}\.key$/, (route) =>
          route.fulfill({ status: 200, contentType: "application/octet-stream", body: Buffer.from(randomHex(), "hex") }),
        );
      },
    ],
    ["a wrong key ID", (page) => redirectRequests(page, /\/drm\/[0-9a-f]{32}\.key$/, (url) => url.replace(/[0-9a-f]{32}\.key$/, `${randomHex()}.key`))],
    ["a key request without a token", (page) => redirectRequests(page, /\/drm\/[0-9a-f]{32}\.key$/, withoutToken)],
    ["a key request with an expired token", (page) => redirectRequests(page, /\/drm\/[0-9a-f]{32}\.key$/, expired)],
  ];
  for (const [what, spoil] of cases) {
    it(`does not play with ${what}`, async () => {
      const video = await videos.aes;
      const page = await browser.newPage();
      await spoil(page);
      await page.goto(video.embed_url);
      expect(await stuckAt(page)).toBeLessThan(1);
      await page.close();
    }, 240_000);
  }
});

describe("cbcs CMAF with Clear Key, in Shaka Player", () => {
  it("plays as HLS on the player page and as DASH from the same segments", async () => {
    const video = await videos.cbcs;
    expect(video.playback_url).toMatch(/index\.m3u8$/);
    const { page, status, log } = await openPage(browser, video.embed_url);
    expect(status).toBe(200);
    expect(await playbackAdvances(page, 3, { timeoutMs: 60_000 })).toBeGreaterThan(3);
    const state = await playerState(page);
    expect(state.engine).toBe("shaka");
    expect(state.error).toBeNull();
    expect(log.cspViolations()).toEqual([]);
    await page.close();

    const mpd = beside(video.playback_url, "manifest.mpd");
    const dash = await shakaPage(mpd);
    const loaded = await shakaLoad(dash, mpd, { servers: { "org.w3.clearkey": beside(mpd, "drm/clearkey") } });
    expect(loaded, JSON.stringify(loaded)).toMatchObject({ loaded: true, errors: [] });
    expect(await playbackAdvances(dash, 3, { timeoutMs: 60_000 })).toBeGreaterThan(3);
    await dash.close();
  }, 240_000);

  it("the license server answers only this video's key IDs, and only under the token", async () => {
    const video = await videos.cbcs;
    const mpd = beside(video.playback_url, "manifest.mpd");
    const keys = await keysOf(mpd);
    expect([...keys.values()].every((k) => /^[0-9a-f]{32}$/.test(k))).toBe(true);
    const license = beside(mpd, "drm/clearkey");
    const body = JSON.stringify({ kids: [Buffer.from([...keys.keys()][0]!, "hex").toString("base64url")], type: "temporary" });
    expect((await fetch(license, { method: "POST", body })).status).toBe(200);
    expect((await fetch(withoutToken(license), { method: "POST", body })).status).toBeGreaterThanOrEqual(400);
    expect((await fetch(expired(license), { method: "POST", body })).status).toBe(403);
    expect(
      (await fetch(license, { method: "POST", body: JSON.stringify({ kids: [Buffer.from(randomHex(), "hex").toString("base64url")], type: "temporary" }) }))
        .status,
    ).toBe(403);
    expect((await fetch(license, { method: "POST", body: "{not json" })).status).toBe(400);
    // Another protected video's token does not open this one's keys.
    const other = beside((await videos.cenc).playback_url, "drm/clearkey");
    expect((await fetch(other, { method: "POST", body })).status).toBe(403);
  }, 240_000);

  it("does not play with a wrong key, a wrong key ID, or a license request whose token is missing or expired", async () => {
    const video = await videos.cbcs;
    const mpd = beside(video.playback_url, "manifest.mpd");
    const keys = await keysOf(mpd);
    const wrongKey = Object.fromEntries([...keys.keys()].map((kid) => [kid, randomHex()]));
    const wrongKid = Object.fromEntries([...keys.values()].map((k) => [randomHex(), k]));
    const license = beside(mpd, "drm/clearkey");
    for (const [what, drm] of [
      ["wrong key", { clearKeys: wrongKey }],
      ["wrong key ID", { clearKeys: wrongKid }],
      ["no token", { servers: { "org.w3.clearkey": withoutToken(license) } }],
      ["expired token", { servers: { "org.w3.clearkey": expired(license) } }],
    ] as const) {
      const page = await shakaPage(mpd);
      const loaded = await shakaLoad(page, mpd, drm);
      // The manifest was read: what fails is the key, not the page's reach (a network error would be 1002).
      expect(loaded.loaded || loaded.errors.some((e) => /^shaka [36]\d{3}/.test(e)), `${what}: ${JSON.stringify(loaded)}`).toBe(true);
      expect(await stuckAt(page), what).toBeLessThan(1);
      await page.close();
    }
    // The same page with the right keys by hand plays: the failures above are the keys'.
    const page = await shakaPage(mpd);
    expect(await shakaLoad(page, mpd, { clearKeys: Object.fromEntries(keys) })).toMatchObject({ loaded: true, errors: [] });
    expect(await playbackAdvances(page, 3, { timeoutMs: 60_000 })).toBeGreaterThan(3);
    await page.close();
  }, 300_000);
});

describe("cenc DASH with Clear Key, in Shaka Player", () => {
  it("plays on the player page, and not with a wrong key", async () => {
    const video = await videos.cenc;
    expect(video.playback_url).toMatch(/\.mpd$/);
    const { page, status } = await openPage(browser, video.embed_url);
    expect(status).toBe(200);
    expect(await playbackAdvances(page, 3, { timeoutMs: 60_000 })).toBeGreaterThan(3);
    expect((await playerState(page)).engine).toBe("shaka");
    await page.close();

    const keys = await keysOf(video.playback_url);
    const wrong = await shakaPage(video.playback_url);
    const loaded = await shakaLoad(wrong, video.playback_url, { clearKeys: Object.fromEntries([...keys.keys()].map((kid) => [kid, randomHex()])) });
    expect(loaded.loaded || loaded.errors.some((e) => /^shaka [36]\d{3}/.test(e)), JSON.stringify(loaded)).toBe(true);
    expect(await stuckAt(wrong)).toBeLessThan(1);
    await wrong.close();
    const expiredToken = await browser.newPage();
    await redirectRequests(expiredToken, /\/drm\/clearkey$/, expired);
    await expiredToken.goto(video.embed_url);
    expect(await stuckAt(expiredToken)).toBeLessThan(1);
    await expiredToken.close();
  }, 240_000);
});
