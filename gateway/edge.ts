// The edge router: plain HTTP routes beside the Connect router (uploads, playback, the player page),
// host-independent like Connect's universal handlers. Request and response bodies stream; each
// route has its own body limit; GET routes answer HEAD too; files are served with Range requests,
// validators and conditional GETs.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { isDirectBody, type DirectBody, type TakeChunk } from "../src/direct-body.js";

export type EdgeMethod = "GET" | "PUT" | "POST" | "DELETE";

export interface EdgeRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly header: Headers;
  /** The body as it arrives, held to the route's maxBodyBytes (reading past it throws EdgeError 413). */
  readonly body: AsyncIterable<Uint8Array>;
  readonly signal: AbortSignal;
  readonly clientAddress: string;
  /** Path parameters of the route's pattern (":id" segments, and "*" for the rest). */
  readonly params: Readonly<Record<string, string>>;
}

export interface EdgeResponse {
  readonly status: number;
  readonly header: Headers;
  /** Omitted for no body; a HEAD answer's body is dropped by the host. */
  readonly body?: Uint8Array | AsyncIterable<Uint8Array>;
}

export interface EdgeRoute {
  readonly method: EdgeMethod;
  /** "/v/:id", "/u/:id/parts/:part", "/p/*": literal segments, named segments, a trailing rest. */
  readonly pattern: string;
  /** Largest request body the route reads; 0 (the default) reads none. */
  readonly maxBodyBytes?: number;
  readonly handler: (req: EdgeRequest) => Promise<EdgeResponse>;
}

/** A refusal with its HTTP status, answered as a small JSON body. */
export class EdgeError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly header: Headers = new Headers(),
  ) {
    super(message);
    this.name = "EdgeError";
  }
}

export type EdgeMatch =
  { readonly kind: "route"; readonly route: EdgeRoute; readonly params: Record<string, string> } | { readonly kind: "method"; readonly allow: string };

interface Compiled {
  readonly route: EdgeRoute;
  readonly segments: readonly string[];
  readonly rest: boolean;
}

export class EdgeRouter {
  private readonly routes: readonly Compiled[];

  constructor(routes: readonly EdgeRoute[]) {
    this.routes = routes.map((route) => {
      const segments = route.pattern.split("/").filter((s) => s !== "");
      const rest = segments.at(-1) === "*";
      return { route, segments: rest ? segments.slice(0, -1) : segments, rest };
    });
  }

  get size(): number {
    return this.routes.length;
  }

  /** The route for a method and path; the methods the path allows when only the method is wrong; undefined for no route. */
  match(method: string, path: string): EdgeMatch | undefined {
    let parts: string[];
    try {
      parts = path
        .split("/")
        .filter((s) => s !== "")
        .map(decodeURIComponent);
    } catch {
      return undefined; // a malformed escape names no route
    }
    const allowed = new Set<string>();
    for (const c of this.routes) {
      const params = bind(c, parts);
      if (!params) continue;
      if (c.route.method === method || (method === "HEAD" && c.route.method === "GET")) return { kind: "route", route: c.route, params };
      allowed.add(c.route.method);
      if (c.route.method === "GET") allowed.add("HEAD");
    }
    return allowed.size > 0 ? { kind: "method", allow: [...allowed, "OPTIONS"].join(", ") } : undefined;
  }
}

function bind(c: Compiled, parts: readonly string[]): Record<string, string> | undefined {
  if (c.rest ? parts.length < c.segments.length : parts.length !== c.segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < c.segments.length; i++) {
    const s = c.segments[i]!;
    if (s.startsWith(":")) params[s.slice(1)] = parts[i]!;
    else if (s !== parts[i]) return undefined;
  }
  if (c.rest) params["*"] = parts.slice(c.segments.length).join("/");
  return params;
}

/** The edge's view of a request: its body held to the route's limit. */
export function edgeRequest(
  route: EdgeRoute,
  params: Record<string, string>,
  method: string,
  path: string,
  query: string,
  header: Headers,
  body: AsyncIterable<Uint8Array>,
  signal: AbortSignal,
  clientAddress: string,
): EdgeRequest {
  return {
    method,
    path,
    query: new URLSearchParams(query),
    header,
    body: limitedBody(body, route.maxBodyBytes ?? 0, header.get("content-length")),
    signal,
    clientAddress,
    params,
  };
}

/**
 * A body held to `max` bytes: reading past it throws 413 (a declared Content-Length over it is
 * refused before reading). A direct body stays direct.
 */
export function limitedBody(body: AsyncIterable<Uint8Array>, max: number, declared: string | null): AsyncIterable<Uint8Array> {
  const refuseDeclared = () => {
    if (declared !== null && Number(declared) > max) throw new EdgeError(413, `the body of ${declared} bytes exceeds the limit of ${max}`);
  };
  const over = () => new EdgeError(413, `the body exceeds the limit of ${max} bytes`);
  const iterable: AsyncIterable<Uint8Array> = {
    async *[Symbol.asyncIterator]() {
      refuseDeclared();
      let read = 0;
      for await (const chunk of body) {
        read += chunk.byteLength;
        if (read > max) throw over();
        yield chunk;
      }
    },
  };
  if (!isDirectBody(body)) return iterable;
  const direct: DirectBody = {
    ...iterable,
    async forEachChunk(take: TakeChunk) {
      refuseDeclared();
      let read = 0;
      await body.forEachChunk((chunk) => {
        read += chunk.byteLength;
        if (read > max) throw over();
        return take(chunk);
      });
    },
  };
  return direct;
}

/** Bytes `start` to `end` inclusive, or why a Range header cannot be served. */
export type RangeAnswer = { readonly start: number; readonly end: number } | "unsatisfiable" | "whole";

/**
 * One byte range of an entity of `size` bytes (RFC 9110 §14): "bytes=a-b", "bytes=a-", "bytes=-n".
 * Several ranges, other units or a malformed header get the whole entity, as the RFC allows.
 */
export function parseRange(header: string | null, size: number): RangeAnswer {
  if (header === null) return "whole";
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return "whole";
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== "" && Number(m[2]) < start) return "whole"; // invalid: ignored
  if (start >= size) return "unsatisfiable";
  return { start, end };
}

/** What an answer needs to know of a stored entity before reading it. */
export interface EntityInfo {
  readonly size: number;
  readonly etag: string;
  readonly lastModified: number;
}

/**
 * A stored entity as an answer: 200 whole or 206 for one satisfiable range (416 otherwise), with
 * Content-Length, Accept-Ranges, Last-Modified and its ETag; If-None-Match answers 304, and
 * If-Range falls back to the whole entity when the validator changed. `read` streams bytes start..end.
 */
export function entityResponse(
  req: Pick<EdgeRequest, "header" | "method">,
  info: EntityInfo,
  contentType: string,
  extra: Headers,
  read: (start: number, end: number) => AsyncIterable<Uint8Array>,
): EdgeResponse {
  const header = new Headers(extra);
  header.set("accept-ranges", "bytes");
  header.set("etag", info.etag);
  header.set("last-modified", new Date(info.lastModified).toUTCString());
  const match = req.header.get("if-none-match");
  if (match !== null && match.split(",").some((t) => t.trim() === info.etag || t.trim() === "*")) return { status: 304, header };
  header.set("content-type", contentType);
  const ifRange = req.header.get("if-range");
  const range = ifRange !== null && ifRange !== info.etag ? "whole" : parseRange(req.header.get("range"), info.size);
  if (range === "unsatisfiable") {
    header.set("content-range", `bytes */${info.size}`);
    throw new EdgeError(416, `the range is outside the ${info.size} bytes of the file`, header);
  }
  const { start, end } = range === "whole" ? { start: 0, end: info.size - 1 } : range;
  header.set("content-length", String(Math.max(0, end - start + 1)));
  if (range !== "whole") header.set("content-range", `bytes ${start}-${end}/${info.size}`);
  const status = range === "whole" ? 200 : 206;
  if (req.method === "HEAD" || info.size === 0) return { status, header };
  return { status, header, body: read(start, end) };
}

/** A file as an answer (entityResponse), with a weak ETag from its size and mtime; the body streams from disk. */
export async function fileResponse(
  req: Pick<EdgeRequest, "header" | "method">,
  file: string,
  contentType: string,
  extra: Headers = new Headers(),
): Promise<EdgeResponse> {
  let info;
  try {
    info = await stat(file);
  } catch {
    throw new EdgeError(404, "no such file");
  }
  if (!info.isFile()) throw new EdgeError(404, "no such file");
  const etag = `W/"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
  return entityResponse(req, { size: info.size, etag, lastModified: info.mtimeMs }, contentType, extra, (start, end) =>
    createReadStream(file, { start, end, highWaterMark: 256 * 1024 }),
  );
}

/** An EdgeError (or anything else: 500) as the answer the client gets. */
export function edgeErrorResponse(e: unknown): EdgeResponse {
  const error = e instanceof EdgeError ? e : new EdgeError(500, "internal error");
  const header = new Headers(error.header);
  header.set("content-type", "application/json");
  return { status: error.status, header, body: new TextEncoder().encode(JSON.stringify({ error: error.message })) };
}

/** Whether an Accept-Encoding header takes gzip (named, or "*", with a q above 0). */
export function acceptsGzip(header: string | null): boolean {
  if (header === null) return false;
  for (const part of header.split(",")) {
    const [name, ...params] = part.split(";").map((s) => s.trim().toLowerCase());
    if (name !== "gzip" && name !== "*") continue;
    const q = params.find((s) => s.startsWith("q="));
    if (q === undefined || Number(q.slice(2)) > 0) return true;
  }
  return false;
}
