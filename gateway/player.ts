// The embeddable player page: one HTML document around a full-viewport <video>, its strict
// Content-Security-Policy (no inline script, no third-party origin), and the edge routes that serve
// its scripts: hls.js's dist files from node_modules and the page's own small player.js, which picks
// the engine (hls.js over Media Source Extensions, or the browser's native HLS where there is no
// MSE) and renews the signed playback URL before it expires or when the CDN answers 403.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { EdgeError, type EdgeRequest, type EdgeResponse, type EdgeRoute } from "./edge.js";

export interface PlayerPageInput {
  readonly videoId: string;
  readonly title: string;
  /** The signed master playlist: an absolute http(s) URL (the CDN) or a same-origin path. */
  readonly playbackUrl: string;
  /** The poster image: an absolute http(s) URL or a same-origin path. */
  readonly posterUrl?: string;
  /** Same-origin URL answering JSON {"playback_url": "...", "poster_url": "..."} with a fresh signed URL. */
  readonly renewUrl: string;
  /** Same-origin path the asset routes answer under, e.g. "/assets/player" (see playerAssetRoutes). */
  readonly assetBase: string;
  /** Clear Key protected (cbcs or cenc): Shaka Player plays it, with the license URL beside the manifest. AES-128 needs nothing: hls.js fetches the playlists' keys. */
  readonly drm?: "clearkey";
}

/** What player.js reads from the page's JSON block (id "player-config"). */
interface PlayerConfig {
  readonly videoId: string;
  readonly title: string;
  readonly playbackUrl: string;
  readonly renewUrl: string;
  readonly hlsScript: string;
  readonly hlsWorker: string;
  readonly drm?: "clearkey";
  readonly shakaScript?: string;
  /** The server's clock when the page was rendered (ms), to read the URL's `expires` against. */
  readonly serverNow: number;
}

// The page's own script. Plain ES2017, no build step: it is served as it stands. Engines: hls.js
// wherever Media Source Extensions exist (it reports HTTP statuses, which renewal needs), the
// browser's native HLS where they do not (iPhone Safari); "?engine=native" or "?engine=hls.js" on
// the page's URL forces one (Chromium 141+ plays HLS natively too, so both are testable there).
// Renewal: a timer fires about 60 s before the `expires` in the URL (read against the server's
// clock), and a 403 from the current source renews at once; either way the new master URL is loaded
// and playback resumes where it was. window.__player is the state tests read.
// Clear Key protected videos (cbcs or cenc CMAF) play in Shaka Player, whose license requests go to
// "drm/clearkey" beside the manifest, under the same token; a renewal moves both.
const PLAYER_JS = `"use strict";
(function () {
  var LEAD_MS = 60000; // renew this long before the URL expires...
  var MIN_DELAY_MS = 5000; // ...but not sooner than this (or half the remaining lifetime) after a switch
  var MAX_DAY_MS = 86400000; // setTimeout overflows past 2^31 ms: long lifetimes are re-checked daily
  var MAX_FAILED = 3; // renewals in a row that did not bring playable data before giving up
  var STUCK_MS = 6000; // native engine: playing without progress this long asks why

  var config = JSON.parse(document.getElementById("player-config").textContent);
  var video = document.getElementById("player");
  var errorBox = document.getElementById("player-error");
  var state = { renewals: 0, engine: "", source: config.playbackUrl, resumedAt: null, error: null, autoplay: false };
  window.__player = state;
  var skewMs = typeof config.serverNow === "number" ? Date.now() - config.serverNow : 0;
  var Hls = null;
  var hls = null;
  var timer = 0;
  var renewing = false;
  var probing = false;
  var failed = 0;
  var mediaRecovered = false;
  var wantPlay = false;
  var loadWanted = false; // hls.js fetches segments only once the viewer presses play
  var manifestParsed = false;
  var resumeAt = -1;
  var resumePlay = false;
  var shakaPlayer = null;

  function expiresAt(url) {
    var m = /[?&\\/]expires=(\\d+)/.exec(url);
    return m ? Number(m[1]) * 1000 : 0;
  }

  function baseOf(url) {
    var abs = new URL(url, location.href).href.split("?")[0];
    return abs.slice(0, abs.lastIndexOf("/") + 1);
  }

  function play() {
    var p = video.play();
    if (p && p.catch) p.catch(function () {});
  }

  function fail(message) {
    clearTimeout(timer);
    state.error = message;
    errorBox.textContent = message;
    errorBox.hidden = false;
  }

  function schedule() {
    clearTimeout(timer);
    var expires = expiresAt(state.source);
    if (!expires) return;
    var remaining = expires - (Date.now() - skewMs);
    if (remaining <= 0) return; // already expired: the next 403 renews
    var delay = Math.max(remaining - LEAD_MS, Math.min(remaining / 2, MIN_DELAY_MS));
    timer = setTimeout(function () {
      if (delay > MAX_DAY_MS) schedule();
      else renew(false);
    }, Math.min(delay, MAX_DAY_MS));
  }

  function renew(after403) {
    if (renewing) return;
    if (after403 && ++failed > MAX_FAILED) {
      fail("This video could not be loaded.");
      return;
    }
    renewing = true;
    clearTimeout(timer);
    fetch(config.renewUrl, { credentials: "same-origin", cache: "no-store", headers: { accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("renewal answered HTTP " + r.status);
        var date = Date.parse(r.headers.get("date") || "");
        if (!isNaN(date)) skewMs = Date.now() - date;
        return r.json();
      })
      .then(function (body) {
        if (!body || typeof body.playback_url !== "string" || body.playback_url === "") throw new Error("renewal gave no playback_url");
        renewing = false;
        if (typeof body.poster_url === "string" && body.poster_url !== "") video.poster = body.poster_url;
        state.renewals++;
        switchTo(body.playback_url);
      })
      .catch(function (e) {
        renewing = false;
        if (after403) fail("This video could not be loaded (" + e.message + ").");
        else timer = setTimeout(function () { renew(false); }, 10000);
      });
  }

  function switchTo(url) {
    var at = video.currentTime;
    var playing = wantPlay && !video.ended;
    state.source = url;
    state.resumedAt = at;
    if (shakaPlayer) {
      loadShaka(url, at).then(function () { if (playing) play(); }, onShakaError);
    } else if (hls) {
      resumeAt = at;
      resumePlay = playing;
      manifestParsed = false;
      hls.loadSource(url); // a new URL re-creates the MediaSource; MANIFEST_PARSED resumes at resumeAt
    } else {
      video.src = url;
      if (at > 0) video.addEventListener("loadedmetadata", function () { video.currentTime = at; }, { once: true });
      if (playing) play();
    }
    schedule();
  }

  function startLoading() {
    if (!hls || !loadWanted || !manifestParsed) return;
    var at = resumeAt;
    var playing = resumePlay;
    resumeAt = -1;
    resumePlay = false;
    hls.startLoad(at);
    if (playing) play();
  }

  // A native player does not say why it fails: an error renews; a stall (Chromium stalls without an
  // error on a 403) asks the master playlist's URL, and renews when that answers 403.
  function probe() {
    if (renewing || probing) return;
    probing = true;
    fetch(state.source, { cache: "no-store" }).then(function (r) {
      probing = false;
      if (r.status === 403) renew(true);
    }, function () {
      probing = false;
    });
  }

  function startNative() {
    state.engine = "native";
    video.addEventListener("error", function () {
      var code = video.error ? video.error.code : 0;
      if (code === 2 || code === 4) renew(true);
      else fail("This video could not be played.");
    });
    video.addEventListener("stalled", probe);
    var lastTime = -1;
    var stuckSince = 0;
    setInterval(function () {
      if (video.paused || video.ended || video.currentTime !== lastTime) {
        lastTime = video.currentTime;
        stuckSince = 0;
      } else if (!stuckSince) {
        stuckSince = Date.now();
      } else if (Date.now() - stuckSince > STUCK_MS) {
        stuckSince = 0;
        probe();
      }
    }, 1000);
    video.src = state.source;
    schedule();
  }

  function startHls() {
    Hls = window.Hls;
    if (!Hls || !Hls.isSupported()) {
      if (video.canPlayType("application/vnd.apple.mpegurl") !== "") startNative();
      else fail("This browser cannot play this video.");
      return;
    }
    state.engine = "hls.js";
    hls = new Hls({ workerPath: config.hlsWorker, autoStartLoad: false });
    hls.on(Hls.Events.MANIFEST_PARSED, function () {
      manifestParsed = true;
      startLoading();
    });
    hls.on(Hls.Events.FRAG_LOADED, function () { failed = 0; });
    hls.on(Hls.Events.ERROR, function (_event, data) {
      var response = data.response;
      if (response && response.code === 403) {
        // hls.js does not retry a 4xx: it would try the other variants with the same expired token.
        var url = response.url || data.url || (data.frag && data.frag.url) || "";
        if (url && url.indexOf(baseOf(state.source)) !== 0) return; // a request of a previous source
        renew(true);
        return;
      }
      if (!data.fatal) return;
      if (data.type === Hls.ErrorTypes.MEDIA_ERROR && !mediaRecovered) {
        mediaRecovered = true;
        hls.recoverMediaError();
        return;
      }
      fail("This video could not be played.");
    });
    // Play may have been asked before this script loaded (a quick click, ?autoplay=1): then its
    // event has passed, and loading starts now.
    if (wantPlay || !video.paused) loadWanted = true;
    else video.addEventListener("play", function () {
      loadWanted = true;
      startLoading();
    }, { once: true });
    hls.attachMedia(video);
    hls.loadSource(state.source);
    schedule();
  }

  function loadShaka(url, at) {
    shakaPlayer.configure({ drm: { servers: { "org.w3.clearkey": baseOf(url) + "drm/clearkey" } } });
    return shakaPlayer.load(url, at > 0 ? at : null);
  }

  function httpStatusOf(error) {
    // BAD_HTTP_STATUS (1001) carries the status second; a failed license request (6007) wraps one.
    if (!error) return 0;
    if (error.code === 1001 && error.data) return error.data[1];
    if (error.code === 6007 && error.data) return httpStatusOf(error.data[0]);
    return 0;
  }

  function onShakaError(error) {
    if (error && error.code === 7000) return; // LOAD_INTERRUPTED: a renewal's load replaced this one
    if (httpStatusOf(error) === 403) {
      renew(true);
      return;
    }
    fail("This video could not be played." + (error && error.code ? " (" + error.code + ")" : ""));
  }

  function startShaka() {
    var shaka = window.shaka;
    if (!shaka) {
      fail("The player could not load.");
      return;
    }
    shaka.polyfill.installAll();
    if (!shaka.Player.isBrowserSupported()) {
      fail("This browser cannot play this video.");
      return;
    }
    state.engine = "shaka";
    shakaPlayer = new shaka.Player();
    shakaPlayer.addEventListener("error", function (event) { onShakaError(event.detail); });
    shakaPlayer.attach(video).then(function () { return loadShaka(state.source, 0); }).catch(onShakaError);
    schedule();
  }

  function loadScript(src, then) {
    var script = document.createElement("script");
    script.src = src;
    script.onload = then;
    script.onerror = function () { fail("The player could not load."); };
    document.head.appendChild(script);
  }

  video.addEventListener("loadeddata", function () { failed = 0; });
  // The viewer's intent, which a renewal keeps: Chromium pauses the element itself on a media error.
  video.addEventListener("play", function () { wantPlay = true; });
  video.addEventListener("pause", function () { if (!video.error) wantPlay = false; });
  video.addEventListener("ended", function () { wantPlay = false; });

  var params = new URLSearchParams(location.search);
  var forced = params.get("engine");
  // ?autoplay=1 starts at once, muted (browsers play only muted media without a gesture) unless ?muted=0.
  if (params.get("autoplay") === "1" || params.get("autoplay") === "true") {
    state.autoplay = true;
    video.muted = params.get("muted") !== "0" && params.get("muted") !== "false";
    play();
  }
  var mse = typeof window.MediaSource === "function" && typeof window.MediaSource.isTypeSupported === "function";
  if (config.drm === "clearkey") {
    loadScript(config.shakaScript, startShaka);
  } else if (forced === "native" || (forced !== "hls.js" && !mse && video.canPlayType("application/vnd.apple.mpegurl") !== "")) {
    startNative();
  } else {
    loadScript(config.hlsScript, startHls);
  }
})();
`;

const PAGE_STYLE =
  "html,body{margin:0;height:100%;background:#000;overflow:hidden}" +
  "video{position:fixed;inset:0;width:100%;height:100%;object-fit:contain;background:#000}" +
  "#player-error{position:fixed;left:0;right:0;bottom:0;margin:0;padding:12px 16px;font:14px/1.4 system-ui,sans-serif;color:#fff;background:rgba(0,0,0,.8)}" +
  "#player-error[hidden]{display:none}";
const STYLE_HASH = `'sha256-${createHash("sha256").update(PAGE_STYLE).digest("base64")}'`;

const require = createRequire(import.meta.url);
const ASSETS: Readonly<Record<string, () => Promise<Uint8Array>>> = {
  "hls.min.js": () => readFile(require.resolve("hls.js/dist/hls.min.js")),
  "hls.worker.js": () => readFile(require.resolve("hls.js/dist/hls.worker.js")),
  "shaka-player.compiled.js": () => readFile(require.resolve("shaka-player/dist/shaka-player.compiled.js")),
  "player.js": () => Promise.resolve(new TextEncoder().encode(PLAYER_JS)),
};

let versions: { readonly hls: string; readonly shaka: string; readonly player: string } | undefined;

/** Cache-busting versions for the asset URLs (they are cached as immutable): the engines' package versions and player.js's hash. */
function assetVersions(): { readonly hls: string; readonly shaka: string; readonly player: string } {
  versions ??= {
    hls: String((require("hls.js/package.json") as { version: unknown }).version),
    shaka: String((require("shaka-player/package.json") as { version: unknown }).version),
    player: createHash("sha256").update(PLAYER_JS).digest("hex").slice(0, 12),
  };
  return versions;
}

/**
 * The player page for one video: a complete HTML5 document. Text is HTML-escaped; the config
 * player.js reads is a JSON block escaped so that no value can close the <script> element. Throws
 * for URLs the page must not carry: a playback or poster URL neither http(s) nor a same-origin
 * path, a renew URL or asset base that is not a same-origin path.
 */
export function renderPlayerPage(p: PlayerPageInput): string {
  const playbackOrigin = urlOrigin(p.playbackUrl, "playbackUrl");
  const posterOrigin = p.posterUrl === undefined ? undefined : urlOrigin(p.posterUrl, "posterUrl");
  sameOriginPath(p.renewUrl, "renewUrl");
  sameOriginPath(p.assetBase, "assetBase");
  const base = p.assetBase.replace(/\/+$/, "");
  const v = assetVersions();
  const config: PlayerConfig = {
    videoId: p.videoId,
    title: p.title,
    playbackUrl: p.playbackUrl,
    renewUrl: p.renewUrl,
    hlsScript: `${base}/hls.min.js?v=${v.hls}`,
    hlsWorker: `${base}/hls.worker.js?v=${v.hls}`,
    ...(p.drm ? { drm: p.drm, shakaScript: `${base}/shaka-player.compiled.js?v=${v.shaka}` } : {}),
    serverNow: Date.now(),
  };
  const media = ["'self'", "blob:", ...(playbackOrigin ? [playbackOrigin] : [])].join(" ");
  const csp = [
    "default-src 'none'",
    "script-src 'self'",
    "worker-src 'self'",
    `style-src ${STYLE_HASH}`,
    `img-src 'self' data:${posterOrigin ? ` ${posterOrigin}` : ""}`,
    `media-src ${media}`,
    `connect-src ${["'self'", ...(playbackOrigin ? [playbackOrigin] : [])].join(" ")}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
  const poster = p.posterUrl === undefined ? "" : ` poster="${escapeHtml(p.posterUrl)}"`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp, false)}">
<link rel="icon" href="data:,">
<title>${escapeHtml(p.title)}</title>
<style>${PAGE_STYLE}</style>
<script type="application/json" id="player-config">${scriptJson(config)}</script>
<script src="${escapeHtml(`${base}/player.js?v=${v.player}`)}" defer></script>
</head>
<body>
<video id="player" controls playsinline preload="metadata"${poster} aria-label="${escapeHtml(p.title)}"></video>
<p id="player-error" role="alert" hidden></p>
</body>
</html>
`;
}

interface Asset {
  readonly body: Uint8Array;
  readonly gzip: Uint8Array;
  readonly etag: string;
}

const gzipAsync = promisify(gzip);

/**
 * GET /assets/player/:file: hls.min.js and hls.worker.js (from the hls.js package), shaka-player.compiled.js (Shaka Player, for Clear Key protected videos) and player.js,
 * each read and gzipped once at first use and served from memory as immutable (the page's URLs
 * carry a version), with a strong ETag (If-None-Match answers 304). Other names answer 404.
 */
export function playerAssetRoutes(): EdgeRoute[] {
  const loaded = new Map<string, Promise<Asset>>();
  const load = (file: string, read: () => Promise<Uint8Array>): Promise<Asset> => {
    let asset = loaded.get(file);
    if (!asset) {
      asset = read().then(async (body) => ({
        body,
        gzip: new Uint8Array(await gzipAsync(body, { level: 9 })),
        etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`,
      }));
      asset.catch(() => loaded.delete(file)); // a failed read is tried again on the next request
      loaded.set(file, asset);
    }
    return asset;
  };
  const handler = async (req: EdgeRequest): Promise<EdgeResponse> => {
    const file = req.params["file"] ?? "";
    const read = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
    if (!read) throw new EdgeError(404, "no such player asset");
    const asset = await load(file, read);
    const header = new Headers({
      "cache-control": "public, max-age=31536000, immutable",
      etag: asset.etag,
      vary: "accept-encoding",
    });
    const match = req.header.get("if-none-match");
    if (match !== null && match.split(",").some((t) => t.trim() === asset.etag || t.trim() === "*")) return { status: 304, header };
    const gzipped = acceptsGzip(req.header.get("accept-encoding"));
    const body = gzipped ? asset.gzip : asset.body;
    header.set("content-type", "text/javascript; charset=utf-8");
    header.set("x-content-type-options", "nosniff");
    header.set("content-length", String(body.byteLength));
    if (gzipped) header.set("content-encoding", "gzip");
    return { status: 200, header, body };
  };
  return [{ method: "GET", pattern: "/assets/player/:file", handler }];
}

/** Whether an Accept-Encoding header takes gzip (named, or "*", with a q above 0). */
function acceptsGzip(header: string | null): boolean {
  if (header === null) return false;
  for (const part of header.split(",")) {
    const [name, ...params] = part.split(";").map((s) => s.trim().toLowerCase());
    if (name !== "gzip" && name !== "*") continue;
    const q = params.find((s) => s.startsWith("q="));
    if (q === undefined || Number(q.slice(2)) > 0) return true;
  }
  return false;
}

/** The origin an absolute http(s) URL adds to the policy; undefined for a same-origin path. */
function urlOrigin(url: string, name: string): string | undefined {
  if (url.startsWith("/") && !url.startsWith("//")) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`${name} is neither an absolute URL nor a path: ${url}`);
  }
  // Hosts may hold ";" and ","; the policy takes only plain origins.
  if ((parsed.protocol !== "https:" && parsed.protocol !== "http:") || !/^https?:\/\/[A-Za-z0-9.\-[\]:]+$/.test(parsed.origin)) {
    throw new Error(`${name} must be an http(s) URL: ${url}`);
  }
  return parsed.origin;
}

function sameOriginPath(url: string, name: string): void {
  if (!url.startsWith("/") || url.startsWith("//") || url.includes("\\")) throw new Error(`${name} must be a same-origin path: ${url}`);
}

/** Text for an element or a double-quoted attribute; `quotes` false leaves "'" as it is (the policy's keywords read better). */
function escapeHtml(s: string, quotes = true): string {
  return s.replace(quotes ? /[&<>"']/g : /[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON for a <script> data block: "<", ">" and "&" as \u escapes, so "</script>" or "<!--" in a value cannot end or alter it. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
