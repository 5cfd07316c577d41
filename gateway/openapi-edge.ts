// GET /openapi.json: the published OpenAPI 3.1 description of the JSON API (clients/openapi.json,
// generated from proto/ by scripts/openapi.ts and committed), for generators and API explorers.
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { acceptsGzip, EdgeError, type EdgeRoute } from "./edge.js";

const PUBLISHED = fileURLToPath(new URL("../clients/openapi.json", import.meta.url));

export function openApiRoute(file = PUBLISHED): EdgeRoute {
  // Read and compressed once, at the first request (about 550 kB, 40 kB gzipped).
  let plain: Uint8Array | undefined;
  let gzipped: Uint8Array | undefined;
  return {
    method: "GET",
    pattern: "/openapi.json",
    async handler(req) {
      try {
        plain ??= readFileSync(file);
      } catch {
        throw new EdgeError(404, "this installation has no clients/openapi.json");
      }
      const header = new Headers({
        "content-type": "application/json; charset=utf-8",
        "cache-control": "no-cache",
        "x-content-type-options": "nosniff",
        vary: "Accept-Encoding",
      });
      if (!acceptsGzip(req.header.get("accept-encoding"))) return { status: 200, header, body: plain };
      gzipped ??= gzipSync(plain);
      header.set("content-encoding", "gzip");
      return { status: 200, header, body: gzipped };
    },
  };
}
