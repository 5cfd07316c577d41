// The player page (gateway/player.ts) in Debian's Chromium: a short HLS (H.264 + AAC, 2 s
// segments, a master playlist of 2 variants with relative URIs) made by ffmpeg, served by a small
// node:http server that mimics the edge and the CDN: path tokens ("/tok<N>/...") valid only for the
// current generation, 403 for the others, and a renew URL that answers the current one. Checked:
// playback through a 403 and a renewal with hls.js (from another origin, as from a CDN) and with
// Chromium's native HLS, a renewal ahead of `expires` that resumes where playback was, and the page's
// escaping and policy.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EdgeError, EdgeRouter, edgeErrorResponse, edgeRequest, type EdgeResponse } from "../../gateway/edge.js";
import { playerAssetRoutes, renderPlayerPage, type PlayerPageInput } from "../../gateway/player.js";
import { launchChromium, openPage, playbackAdvances, playerState, videoState, waitForCurrentTime, waitForRenewals } from "../browser.js";

const exec = promisify(execFile);
const require = createRequire(import.meta.url);
const HOSTILE = `</script><script>alert(1)</script><!-- & "q" 'a' \u2028`;

function input(over: Partial<PlayerPageInput> = {}): PlayerPageInput {
  return {
    videoId: "vid_x",
    title: "A title",
    playbackUrl: "https://cdn.example.com/tok/play/vid_x/index.m3u8",
    renewUrl: "/v/vid_x/renew",
    assetBase: "/assets/player",
    ...over,
  };
}

/** Headers as a plain object (the project's lib has DOM without DOM.Iterable). */
function headerObject(h: Headers): Record<string, string> {
  const o: Record<string, string> = {};
  h.forEach((v, k) => (o[k] = v));
  return o;
}

function configBlock(html: string): string {
  const m = /<script type="application\/json" id="player-config">([\s\S]*?)<\/script>/.exec(html);
  if (!m) throw new Error("no config block");
  return m[1]!;
}

describe("player page", () => {
  it("escapes the title in <title> and in the JSON config, which no value can break out of", () => {
    const html = renderPlayerPage(input({ title: HOSTILE, videoId: "</script>" }));
    expect(html).toContain("<title>&#60;/script&#62;&#60;script&#62;alert(1)&#60;/script&#62;&#60;!-- &#38; &#34;q&#34; &#39;a&#39; \u2028</title>");
    expect(html).toContain('aria-label="&#60;/script&#62;');
    // Only the config block and the player.js tag close a script element; no inline script runs.
    expect(html.match(/<\/script>/g)).toHaveLength(2);
    expect(html.match(/<script/g)).toHaveLength(2);
    const block = configBlock(html);
    expect(block).not.toMatch(/[<>&\u2028\u2029]/);
    const config = JSON.parse(block) as Record<string, unknown>;
    expect(config).toMatchObject({
      title: HOSTILE,
      videoId: "</script>",
      renewUrl: "/v/vid_x/renew",
      playbackUrl: "https://cdn.example.com/tok/play/vid_x/index.m3u8",
    });
    expect(config["hlsScript"]).toMatch(/^\/assets\/player\/hls\.min\.js\?v=\d+\.\d+\.\d+/);
  });

  it("has a strict policy: scripts from itself only, media and connections from itself and the playback origin", () => {
    const html = renderPlayerPage(input({ posterUrl: "https://img.example.com/p.jpg" }));
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(html)?.[1] ?? "";
    const directives = new Map(csp.split("; ").map((d) => [d.split(" ")[0]!, d.split(" ").slice(1).join(" ")]));
    expect(Object.fromEntries(directives)).toMatchObject({
      "default-src": "'none'",
      "script-src": "'self'",
      "worker-src": "'self'",
      "media-src": "'self' blob: data: https://cdn.example.com",
      "connect-src": "'self' https://cdn.example.com",
      "img-src": "'self' data: https://img.example.com",
      "base-uri": "'none'",
    });
    expect(directives.get("style-src")).toMatch(/^'sha256-[A-Za-z0-9+/]+=*'$/);
    expect(csp).not.toContain("unsafe");
    // No origin but the playback's and the poster's: no third-party CDN.
    const origins = new Set([...html.matchAll(/https?:\/\/[^/"'\s;]+/g)].map((m) => m[0]));
    expect([...origins].sort()).toEqual(["https://cdn.example.com", "https://img.example.com"]);
    expect(html).toMatch(/<video id="player" controls playsinline [^>]*poster="https:\/\/img\.example\.com\/p\.jpg"/);
    expect(html).toMatch(/<script src="\/assets\/player\/player\.js\?v=[0-9a-f]{12}" defer><\/script>/);
    // A same-origin playback path adds no origin.
    const local = renderPlayerPage(input({ playbackUrl: "/tok1/play/vid_x/index.m3u8" }));
    expect(local).toContain("media-src 'self' blob: data:; connect-src 'self';");
  });

  it.each([
    ["a javascript: playback URL", { playbackUrl: "javascript:alert(1)" }],
    ["a host that would add directives", { playbackUrl: "https://a;script-src *.example.com/x.m3u8" }],
    ["a protocol-relative renew URL", { renewUrl: "//evil.example.com/renew" }],
    ["an absolute asset base", { assetBase: "https://cdn.example.com/assets" }],
    ["a data: poster", { posterUrl: "data:image/png;base64,AAAA" }],
  ] as const)("refuses %s", (_name, over) => {
    expect(() => renderPlayerPage(input(over))).toThrow();
  });
});

describe("player asset routes", () => {
  const router = new EdgeRouter(playerAssetRoutes());
  const get = (file: string, header: Record<string, string> = {}, method = "GET"): Promise<EdgeResponse> => {
    const path = `/assets/player/${file}`;
    const m = router.match(method, path);
    if (m?.kind !== "route") throw new EdgeError(404, "no route");
    return m.route.handler(
      edgeRequest(m.route, m.params, method, path, "v=1", new Headers(header), (async function* () {})(), new AbortController().signal, "127.0.0.1"),
    );
  };
  const bytes = (r: EdgeResponse): Buffer => Buffer.from(r.body as Uint8Array);

  it("serves hls.js's dist files as immutable JavaScript, gzipped when asked, 304 for the same ETag", async () => {
    const plain = await get("hls.min.js");
    expect(plain.status).toBe(200);
    expect(headerObject(plain.header)).toMatchObject({
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": "public, max-age=31536000, immutable",
      vary: "accept-encoding",
    });
    expect(bytes(plain).equals(readFileSync(require.resolve("hls.js/dist/hls.min.js")))).toBe(true);
    expect(plain.header.get("content-length")).toBe(String(bytes(plain).length));
    const zipped = await get("hls.min.js", { "accept-encoding": "gzip, deflate, br" });
    expect(zipped.header.get("content-encoding")).toBe("gzip");
    expect(gunzipSync(bytes(zipped)).equals(bytes(plain))).toBe(true);
    expect((await get("hls.min.js", { "accept-encoding": "gzip;q=0" })).header.get("content-encoding")).toBeNull();
    const again = await get("hls.min.js", { "if-none-match": plain.header.get("etag")! });
    expect([again.status, again.body]).toEqual([304, undefined]);
    expect((await get("hls.worker.js")).status).toBe(200);
  });

  it("serves player.js, which parses", async () => {
    const r = await get("player.js");
    expect(r.header.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(() => new Function(bytes(r).toString("utf8"))).not.toThrow();
  });

  it.each(["hls.js", "constructor", "__proto__", "player.js.map"])("answers 404 for %s", async (file) => {
    await expect(get(file)).rejects.toMatchObject({ status: 404 });
  });
});

/** How the mimic CDN invalidates tokens. */
interface EdgeMode {
  /** Segment requests a generation's token serves before the next generation replaces it. */
  readonly bumpAfterSegments: number;
  /** The generation from which tokens no longer expire by count. */
  readonly lastGeneration: number;
  /** Tokens carry `expires` this many seconds ahead (Bunny style, in the path token); renewals mint a new generation. */
  readonly expiresInSeconds?: number;
  /** Playback URLs on this origin ("http://localhost:<port>") instead of the page's: a CDN elsewhere (CORS needed). */
  readonly cdnHost?: string;
}

/** A node:http stand-in for the gateway's edge and the CDN, on 127.0.0.1. */
class MimicEdge {
  generation = 1;
  private segments = 0;
  readonly forbidden: string[] = [];
  readonly requests: string[] = [];
  private readonly server: Server;
  private readonly assets = new EdgeRouter(playerAssetRoutes());

  constructor(
    private readonly dir: string,
    private readonly mode: EdgeMode,
  ) {
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${this.port}`;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** The current generation's signed master playlist URL. */
  playbackUrl(): string {
    const expires = this.mode.expiresInSeconds === undefined ? "" : `&expires=${Math.floor(Date.now() / 1000) + this.mode.expiresInSeconds}`;
    const origin = this.mode.cdnHost === undefined ? "" : `http://${this.mode.cdnHost}:${this.port}`;
    return `${origin}/tok${this.generation}${expires}/play/vid_test/index.m3u8`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://edge.invalid");
    this.requests.push(url.pathname);
    if (url.pathname === "/v/vid_test") {
      const html = renderPlayerPage({
        videoId: "vid_test",
        title: "Test <video>",
        playbackUrl: this.playbackUrl(),
        posterUrl: this.playbackUrl().replace("index.m3u8", "poster.jpg"),
        renewUrl: "/v/vid_test/renew",
        assetBase: "/assets/player",
      });
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(html);
      return;
    }
    if (url.pathname === "/v/vid_test/renew") {
      if (this.mode.expiresInSeconds !== undefined) this.generation++; // a renewal ahead of expiry: the old token dies
      res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify({ playback_url: this.playbackUrl() }));
      return;
    }
    const m = /^\/tok(\d+)(?:&expires=(\d+))?\/play\/vid_test\/(.+)$/.exec(decodeURIComponent(url.pathname));
    if (m) return this.media(res, Number(m[1]), m[2] === undefined ? undefined : Number(m[2]), m[3]!);
    const route = this.assets.match(req.method ?? "GET", url.pathname);
    let out: EdgeResponse;
    if (route?.kind === "route") {
      const header = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") header.set(k, v);
      const edgeReq = edgeRequest(
        route.route,
        route.params,
        req.method ?? "GET",
        url.pathname,
        url.search.slice(1),
        header,
        req,
        new AbortController().signal,
        "127.0.0.1",
      );
      out = await route.route.handler(edgeReq).catch(edgeErrorResponse);
    } else {
      out = edgeErrorResponse(new EdgeError(404, "not found"));
    }
    res.writeHead(out.status, headerObject(out.header)).end(out.body instanceof Uint8Array ? out.body : undefined);
  }

  private media(res: ServerResponse, generation: number, expires: number | undefined, file: string): void {
    const cors = { "access-control-allow-origin": "*" };
    if (generation !== this.generation || (expires !== undefined && expires * 1000 < Date.now())) {
      this.forbidden.push(`tok${generation}/${file}`);
      res.writeHead(403, cors).end("token expired");
      return;
    }
    const full = path.join(this.dir, path.normalize(file));
    if (!full.startsWith(this.dir + path.sep)) {
      res.writeHead(404, cors).end();
      return;
    }
    let body: Buffer;
    try {
      body = readFileSync(full);
    } catch {
      res.writeHead(404, cors).end();
      return;
    }
    const type = file.endsWith(".m3u8") ? "application/vnd.apple.mpegurl" : file.endsWith(".ts") ? "video/mp2t" : "image/jpeg";
    res.writeHead(200, { ...cors, "content-type": type, "content-length": String(body.length) }).end(body);
    if (file.endsWith(".ts") && this.generation < this.mode.lastGeneration && ++this.segments >= this.mode.bumpAfterSegments) {
      this.generation++;
      this.segments = 0;
    }
  }
}

/** ~12 s of testsrc2 and a tone as HLS: 2 variants (360p, 180p) with muxed AAC, 2 s segments, relative URIs, and a poster. */
async function makeHls(dir: string): Promise<void> {
  const ff = (args: string[]) => exec("ffmpeg", ["-hide_banner", "-nostdin", "-y", "-loglevel", "error", ...args], { cwd: dir });
  await ff([
    "-f",
    "lavfi",
    "-i",
    "testsrc2=s=640x360:r=30:d=12",
    "-f",
    "lavfi",
    "-i",
    "sine=f=440:sample_rate=48000:d=12",
    "-filter_complex",
    "[0:v]split=2[hi][lo0];[lo0]scale=320:180[lo]",
    "-map",
    "[hi]",
    "-map",
    "1:a",
    "-map",
    "[lo]",
    "-map",
    "1:a",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-g",
    "60",
    "-keyint_min",
    "60",
    "-sc_threshold",
    "0",
    "-b:v:0",
    "800k",
    "-b:v:1",
    "300k",
    "-c:a",
    "aac",
    "-b:a",
    "64k",
    "-f",
    "hls",
    "-hls_time",
    "2",
    "-hls_playlist_type",
    "vod",
    "-var_stream_map",
    "v:0,a:0,name:360p v:1,a:1,name:180p",
    "-master_pl_name",
    "index.m3u8",
    "-hls_segment_filename",
    "%v/seg%d.ts",
    "%v/index.m3u8",
  ]);
  await ff(["-f", "lavfi", "-i", "testsrc2=s=640x360:d=1", "-frames:v", "1", "poster.jpg"]);
}

describe("player in Chromium", () => {
  let dir: string;
  let browser: Browser;
  const edges: MimicEdge[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "media-player-"));
    const [b] = await Promise.all([launchChromium(), makeHls(dir)]);
    browser = b;
    const master = readFileSync(path.join(dir, "index.m3u8"), "utf8");
    expect(master.match(/#EXT-X-STREAM-INF/g)).toHaveLength(2);
    expect(master).toMatch(/^360p\/index\.m3u8$/m);
  });

  afterAll(async () => {
    await browser?.close();
    await Promise.all(edges.map((e) => e.close()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function serve(mode: EdgeMode): Promise<{ edge: MimicEdge; base: string }> {
    const edge = new MimicEdge(dir, mode);
    edges.push(edge);
    return { edge, base: await edge.listen() };
  }

  it("has H.264 and AAC in MSE", async () => {
    const page = await browser.newPage();
    const supported = await page.evaluate(() => MediaSource.isTypeSupported('video/mp4; codecs="avc1.64001f,mp4a.40.2"'));
    await page.close();
    expect(supported).toBe(true);
  });

  it("plays with hls.js from a CDN origin through a 403, renewing the token", async () => {
    const { edge, base } = await serve({ bumpAfterSegments: 4, lastGeneration: 3, cdnHost: "localhost" });
    const { page, status, log } = await openPage(browser, `${base}/v/vid_test`);
    expect(status).toBe(200);
    expect(await page.title()).toBe("Test <video>");
    const reached = await playbackAdvances(page, 6.5);
    const player = await playerState(page);
    const context = JSON.stringify({ player, forbidden: edge.forbidden, log: log.console }, null, 1);
    expect(reached, context).toBeGreaterThan(6.5);
    expect(player.engine, context).toBe("hls.js");
    expect(player.renewals, context).toBeGreaterThanOrEqual(1);
    expect(player.source, context).toMatch(/^http:\/\/localhost:\d+\/tok[23]\//);
    expect(edge.forbidden.length, context).toBeGreaterThan(0);
    expect(player.error, context).toBeNull();
    expect(log.cspViolations(), context).toEqual([]);
    expect(log.errors, context).toEqual([]);
    await page.close();
  });

  it("plays with the browser's native HLS (?engine=native) through a 403, renewing the token", async () => {
    const { edge, base } = await serve({ bumpAfterSegments: 4, lastGeneration: 2 });
    const { page, status, log } = await openPage(browser, `${base}/v/vid_test?engine=native`);
    expect(status).toBe(200);
    const native = await page.$eval("video", (v) => (v as HTMLVideoElement).canPlayType("application/vnd.apple.mpegurl"));
    expect(native, "this Chromium has no native HLS").not.toBe("");
    const reached = await playbackAdvances(page, 6.5);
    const player = await playerState(page);
    const context = JSON.stringify({ player, forbidden: edge.forbidden, requests: edge.requests, log: log.console }, null, 1);
    expect(reached, context).toBeGreaterThan(6.5);
    expect(player.engine, context).toBe("native");
    expect(player.renewals, context).toBeGreaterThanOrEqual(1);
    expect(edge.forbidden.length, context).toBeGreaterThan(0);
    expect(log.cspViolations(), context).toEqual([]);
    expect(log.errors, context).toEqual([]);
    await page.close();
  });

  it.each(["hls.js", "native"])("renews ahead of `expires` and resumes where playback was (%s)", async (engine) => {
    // Tokens expire in 66 s: the player renews 60 s ahead, about 6 s after the page was rendered.
    const { edge, base } = await serve({ bumpAfterSegments: Infinity, lastGeneration: 1, expiresInSeconds: 66 });
    const { page, log } = await openPage(browser, `${base}/v/vid_test?engine=${engine}`);
    const reached = await playbackAdvances(page, 1);
    // On a loaded machine the page may be slow to start: where playback was at the renewal is then
    // only known to be past 0; otherwise it is at least where it was seen here.
    const seenBeforeRenewal = (await playerState(page)).renewals === 0;
    const renewed = await waitForRenewals(page, 1, 15_000);
    const context = () => JSON.stringify({ reached, seenBeforeRenewal, renewed, forbidden: edge.forbidden, log: log.console }, null, 1);
    expect(renewed.engine, context()).toBe(engine);
    expect(renewed.resumedAt, context()).toBeGreaterThanOrEqual(seenBeforeRenewal ? reached - 0.1 : 0.1);
    expect(renewed.source, context()).toMatch(/^\/tok2&expires=\d+\//);
    // Within seconds playback is past where it was: it resumed, it did not start over.
    const after = await waitForCurrentTime(page, renewed.resumedAt!, { timeoutMs: 5_000 });
    expect(after, context()).toBeGreaterThan(renewed.resumedAt!);
    expect(await waitForCurrentTime(page, 8, { timeoutMs: 10_000 }), context()).toBeGreaterThan(8);
    expect((await videoState(page)).error, context()).toBeNull();
    expect(log.cspViolations(), context()).toEqual([]);
    await page.close();
  });
});
