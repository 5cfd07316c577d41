// The embeddable player page: one HTML document around a full-viewport <video>, its strict
// Content-Security-Policy (no inline script, no third-party origin), and the edge routes that serve
// its scripts: hls.js's dist files from node_modules and the page's own small player.js, which picks
// the engine (hls.js over Media Source Extensions, or the browser's native HLS where there is no
// MSE) and renews the signed playback URL before it expires or when the CDN answers 403.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { acceptsGzip, EdgeError, type EdgeRequest, type EdgeResponse, type EdgeRoute } from "./edge.js";

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

/** What player.js reads from the page's JSON block (id "player-config"); its PlayerConfig typedef says the same. */
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

// The page's own script, served as it stands: gateway/player/player.js (what it does is said there).
const PLAYER_JS_FILE = fileURLToPath(new URL("./player/player.js", import.meta.url));
let playerJs: Uint8Array | undefined;
const playerScript = (): Uint8Array => (playerJs ??= readFileSync(PLAYER_JS_FILE));

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
  "player.js": () => Promise.resolve(playerScript()),
};

let versions: { readonly hls: string; readonly shaka: string; readonly player: string } | undefined;

/** Cache-busting versions for the asset URLs (they are cached as immutable): the engines' package versions and player.js's hash. */
function assetVersions(): { readonly hls: string; readonly shaka: string; readonly player: string } {
  versions ??= {
    hls: String((require("hls.js/package.json") as { version: unknown }).version),
    shaka: String((require("shaka-player/package.json") as { version: unknown }).version),
    player: createHash("sha256").update(playerScript()).digest("hex").slice(0, 12),
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
  // data: for the empty WebVTT (`data:,WEBVTT`) of the <track> element hls.js makes per subtitle
  // track (it adds the cues itself); without it the page logs a CSP violation per track.
  const media = ["'self'", "blob:", "data:", ...(playbackOrigin ? [playbackOrigin] : [])].join(" ");
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
