// The web console at the service's own address: GET / answers its page, /console/assets/* its
// bundle and stylesheet (content-hashed names, cached for a year, gzip when the client takes it),
// all under a strict Content-Security-Policy: scripts and styles of this origin only, no inline code.
// The console is built by console/build.mjs at `npm install`; without a build, / says how to make one.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { acceptsGzip, EdgeError, fileResponse, type EdgeRoute } from "./edge.js";

const DIST = fileURLToPath(new URL("../console/dist/", import.meta.url));
const ASSET = /^[A-Za-z0-9_-]+\.(js|css)$/;
const TYPES: Record<string, string> = { js: "text/javascript; charset=utf-8", css: "text/css; charset=utf-8" };

/** Playback and posters may come from a CDN host (https), and the player page is framed from this origin. */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob: https:",
  "media-src 'self' blob: https:",
  "connect-src 'self'",
  "frame-src 'self' https:",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

export function consoleRoutes(dist = DIST): EdgeRoute[] {
  return [
    {
      method: "GET",
      pattern: "/",
      async handler() {
        const index = path.join(dist, "index.html");
        const built = existsSync(index);
        const body = built
          ? readFileSync(index)
          : Buffer.from(
              "<!doctype html><html lang=en><title>media</title><p>The console is not built here: run <code>npm install</code> (it runs console/build.mjs).</p></html>",
            );
        return {
          status: built ? 200 : 503,
          header: new Headers({
            "content-type": "text/html; charset=utf-8",
            "cache-control": "no-cache",
            "content-security-policy": CSP,
            "x-content-type-options": "nosniff",
            "referrer-policy": "same-origin",
          }),
          body,
        };
      },
    },
    {
      method: "GET",
      pattern: "/console/assets/:file",
      async handler(req) {
        const file = req.params.file!;
        const m = ASSET.exec(file);
        if (!m) throw new EdgeError(404, "no such asset");
        const gzip = acceptsGzip(req.header.get("accept-encoding")) && existsSync(path.join(dist, "assets", `${file}.gz`));
        const header = new Headers({ "cache-control": "public, max-age=31536000, immutable", "x-content-type-options": "nosniff", vary: "Accept-Encoding" });
        if (gzip) header.set("content-encoding", "gzip");
        return fileResponse(req, path.join(dist, "assets", gzip ? `${file}.gz` : file), TYPES[m[1]!]!, header);
      },
    },
  ];
}
