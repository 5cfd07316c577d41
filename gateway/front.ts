// What every host adapter decides before a handler runs, the same way in uWS and node:http: which
// of the two routers takes a request (Connect for the RPC paths, the edge router for plain HTTP
// routes), CORS preflights, methods a path does not take (405 with Allow), unknown paths (404, code
// unimplemented, as Connect clients read it), and the CORS headers of every answer for an allowed origin.
import { Code, ConnectError, createContextKey } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import type { EdgeRoute, EdgeRouter } from "./edge.js";

/** The address of the client of a call, as the host saw it (the peer of the TCP connection); empty counts as one address, "unknown". */
export const CLIENT_ADDRESS = createContextKey<string>("", { description: "client address" });

/** Allowed browser origins: exact origins ("https://app.example.com") or "*" for any. */
export interface CorsPolicy {
  readonly origins: readonly string[];
}

/** Request headers a browser may send: Connect's and gRPC-web's own, plus ours. */
const ALLOW_HEADERS = [
  "Content-Type",
  "Content-Encoding",
  "Accept-Encoding",
  "Authorization",
  "X-Organization-ID",
  "Idempotency-Key",
  "X-Request-ID",
  "Connect-Protocol-Version",
  "Connect-Timeout-Ms",
  "Connect-Content-Encoding",
  "Connect-Accept-Encoding",
  "Grpc-Timeout",
  "X-Grpc-Web",
  "X-User-Agent",
  "Content-Range",
  "Range",
].join(", ");
/** Response headers a browser script may read. */
const EXPOSE_HEADERS = [
  "Content-Encoding",
  "Connect-Content-Encoding",
  "Grpc-Status",
  "Grpc-Message",
  "Grpc-Status-Details-Bin",
  "X-Request-ID",
  "RateLimit",
  "RateLimit-Policy",
  "Retry-After",
  "ETag",
  "Content-Range",
  "Accept-Ranges",
  "Location",
].join(", ");
const RPC_METHODS = "POST, OPTIONS";
const PREFLIGHT_MAX_AGE = "7200";

export type FrontAnswer =
  | { readonly kind: "rpc"; readonly handler: UniversalHandler; readonly cors: readonly [string, string][] }
  | { readonly kind: "edge"; readonly route: EdgeRoute; readonly params: Record<string, string>; readonly cors: readonly [string, string][] }
  | { readonly kind: "answer"; readonly status: number; readonly headers: readonly [string, string][]; readonly body?: Uint8Array };

function allowedOrigin(policy: CorsPolicy, origin: string | null): string | undefined {
  if (!origin) return undefined;
  if (policy.origins.includes("*")) return "*";
  return policy.origins.includes(origin) ? origin : undefined;
}

/** CORS headers for an actual (not preflight) answer to `origin`; none when it is not allowed. */
export function corsHeaders(policy: CorsPolicy, origin: string | null): [string, string][] {
  const allowed = allowedOrigin(policy, origin);
  if (!allowed) return [];
  const headers: [string, string][] = [
    ["access-control-allow-origin", allowed],
    ["access-control-expose-headers", EXPOSE_HEADERS],
  ];
  if (allowed !== "*") headers.push(["vary", "Origin"]);
  return headers;
}

/**
 * An unknown path, answered as Connect's own routers do, so every client maps it to unimplemented:
 * a Connect error body for JSON and Connect callers (without ErrorDetails: no method ran, and the
 * conformance suite holds the protocol's answer to none), a bare 404 for gRPC-web.
 */
function notFound(method: string, path: string, contentType: string | null, cors: [string, string][]): FrontAnswer {
  if (method === "HEAD" || /^application\/grpc-web/.test(contentType ?? "")) return { kind: "answer", status: 404, headers: cors };
  const body = errorToJsonBytes(new ConnectError(`no method at ${path}; methods are POST /media.v1.<Service>/<Method>`, Code.Unimplemented), {});
  return { kind: "answer", status: 404, headers: [["content-type", "application/json"], ...cors], body };
}

/** The two routers a host serves: Connect's handlers by path, and the edge's plain HTTP routes. */
export interface Routes {
  readonly rpc: ReadonlyMap<string, UniversalHandler>;
  readonly edge: EdgeRouter;
}

/**
 * Decides what a request gets before any body is read. `method` is as the client sent it (HTTP
 * methods are case-sensitive: "post" is not POST).
 */
export function front(routes: Routes, policy: CorsPolicy, method: string, path: string, header: (name: string) => string | null): FrontAnswer {
  const origin = header("origin");
  const cors = corsHeaders(policy, origin);
  const handler = routes.rpc.get(path);
  const edge = handler ? undefined : routes.edge.match(method === "OPTIONS" ? (header("access-control-request-method") ?? "GET") : method, path);
  const allow = handler ? RPC_METHODS : edge?.kind === "method" ? edge.allow : edge ? allowOf(edge.route) : RPC_METHODS;
  if (method === "OPTIONS") {
    if (header("access-control-request-method") !== null && cors.length > 0) {
      return {
        kind: "answer",
        status: 204,
        headers: [
          ["access-control-allow-origin", cors[0]![1]],
          ["access-control-allow-methods", allow],
          ["access-control-allow-headers", ALLOW_HEADERS],
          ["access-control-max-age", PREFLIGHT_MAX_AGE],
          ["vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"],
        ],
      };
    }
    return { kind: "answer", status: 204, headers: [["allow", allow], ...cors] };
  }
  if (handler) {
    // A bare 405, as Connect's handlers answer it (a client reads it as unknown); Allow says what would do.
    if (method !== "POST") return { kind: "answer", status: 405, headers: [["allow", RPC_METHODS], ...cors] };
    return { kind: "rpc", handler, cors };
  }
  if (edge?.kind === "route") return { kind: "edge", route: edge.route, params: edge.params, cors };
  if (edge?.kind === "method") return { kind: "answer", status: 405, headers: [["allow", edge.allow], ...cors] };
  return notFound(method, path, header("content-type"), cors);
}

const allowOf = (route: EdgeRoute) => (route.method === "GET" ? "GET, HEAD, OPTIONS" : `${route.method}, OPTIONS`);
