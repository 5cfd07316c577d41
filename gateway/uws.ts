// The uWebSockets.js host adapter: bytes in, universal handler, bytes out. The body streams to
// the handler (paused when it reads slower than the client sends), so the router's readMaxBytes is
// the one limit, answered in the protocol's own framing; headers go out with the first chunk the
// handler produces, each chunk as soon as it exists; client aborts and back-pressure are honoured.
import { STATUS_CODES } from "node:http";
import type uWS from "uWebSockets.js";
import { requireUws, type UwsModule } from "./uws-loader.js";
import type { ContextValues } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import type { Logger } from "../src/log.js";
import type { DirectBody, TakeChunk } from "../src/direct-body.js";
import { pushOf, urgentOf, type PushBody } from "../src/urgent-body.js";
import { edgeErrorResponse, edgeRequest, type EdgeResponse } from "./edge.js";
import { front, type CorsPolicy, type Routes } from "./front.js";

/** Request bytes held for a handler that has not read them yet, before the socket is paused. */
const BODY_HIGH_WATER = 256 * 1024;

export interface HostOptions {
  readonly host: string;
  readonly port: number;
  readonly cors: CorsPolicy;
  readonly log: Logger;
  /** Context values for one call, given the client's address (rate limits, logs). */
  readonly contextValues: (clientAddress: string) => ContextValues;
}

export interface HostServer {
  readonly port: number;
  /** Stops accepting, lets in-flight calls finish (streams are told to end), then resolves. */
  close(graceMs?: number): Promise<void>;
}

const STATUS_LINES = new Map<number, string>();
function statusLine(status: number): string {
  let line = STATUS_LINES.get(status);
  if (line === undefined) STATUS_LINES.set(status, (line = `${status} ${STATUS_CODES[status] ?? ""}`));
  return line;
}

/**
 * The request body as the handler reads it: chunks queued from onData, the socket paused while too
 * many wait; or, once a consumer asks for them directly, each chunk given to it straight from uWS's
 * buffer, the socket paused while the consumer's promise is pending.
 */
class RequestBody implements DirectBody {
  private readonly chunks: Uint8Array[] = [];
  private queued = 0;
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  private paused = false;
  /** Set once the response is finished or aborted: uWS forbids touching it after that. */
  private closed = false;
  /** The direct consumer, with its promise's ends and the number of its promises still pending. */
  private direct: { take: TakeChunk; resolve: () => void; reject: (e: unknown) => void; holds: number } | undefined;

  constructor(private readonly res: uWS.HttpResponse) {}

  /** uWS's onData: the buffer is reused after this call, so a queued chunk is a copy. */
  data(ab: ArrayBuffer, last: boolean): void {
    if (this.direct && !this.closed) this.give(new Uint8Array(ab), last);
    else this.push(new Uint8Array(ab.slice(0)), last);
  }

  async forEachChunk(take: TakeChunk): Promise<void> {
    // What arrived before the consumer asked is queued: it goes first.
    for (let chunk = this.chunks.shift(); chunk; chunk = this.chunks.shift()) {
      this.queued -= chunk.byteLength;
      await take(chunk);
    }
    if (this.failure) throw this.failure;
    if (this.ended || this.closed) return;
    return new Promise<void>((resolve, reject) => {
      this.direct = { take, resolve, reject, holds: 0 };
      this.setPaused(false);
    });
  }

  private give(chunk: Uint8Array, last: boolean): void {
    const direct = this.direct!;
    if (last) this.ended = true;
    let held: void | Promise<void>;
    try {
      held = direct.take(chunk);
    } catch (e) {
      return this.endDirect(e);
    }
    if (held) {
      direct.holds++;
      this.setPaused(true);
      held.then(
        () => {
          if (--direct.holds > 0) return;
          this.setPaused(false);
          if (this.ended) this.endDirect();
        },
        (e: unknown) => this.endDirect(e),
      );
    } else if (last && direct.holds === 0) this.endDirect();
  }

  private endDirect(error?: unknown): void {
    const direct = this.direct;
    if (!direct) return;
    this.direct = undefined;
    if (error === undefined) direct.resolve();
    else direct.reject(error);
  }

  private setPaused(paused: boolean): void {
    if (this.closed || this.paused === paused) return;
    this.paused = paused;
    if (paused) this.res.pause();
    else this.res.resume();
  }

  push(chunk: Uint8Array, last: boolean): void {
    if (this.closed) return; // answered already (a limit, an error): the rest is dropped
    this.chunks.push(chunk);
    this.queued += chunk.byteLength;
    if (last) this.ended = true;
    else if (this.queued > BODY_HIGH_WATER && !this.paused) {
      this.paused = true;
      this.res.pause();
    }
    this.wake?.();
  }

  fail(error: Error): void {
    this.failure = error;
    this.closed = true;
    this.wake?.();
    this.endDirect(error);
  }

  /** The response is about to end: let the rest of the body flow (and be dropped) so the connection stays usable. */
  release(): void {
    if (this.closed) return;
    this.chunks.length = 0;
    this.endDirect(new Error("the answer went out before the body was read"));
    if (this.paused) this.res.resume();
    this.closed = true;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      const chunk = this.chunks.shift();
      if (chunk) {
        this.queued -= chunk.byteLength;
        if (this.paused && !this.closed && this.queued <= BODY_HIGH_WATER / 2) {
          this.paused = false;
          this.res.resume();
        }
        yield chunk;
        continue;
      }
      if (this.failure) throw this.failure;
      if (this.ended || this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}

/** Serves with `uws`, by default the build gateway/uws-loader.ts prefers (throws when none loads here). */
export async function listenUws(routes: Routes, options: HostOptions, uws: UwsModule = requireUws()): Promise<HostServer> {
  /** uWS's listen flag (a runtime constant; its typings only declare a const enum). */
  const EXCLUSIVE_PORT = (uws as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;
  const app = uws.App();
  let inFlight = 0;
  // Calls in flight, and whether each is a stream: on shutdown streams are aborted so they end
  // (cheaper than a shutdown signal linked into every call's context); the others may finish.
  const calls = new Map<AbortController, boolean>();

  app.any("/*", (res, req) => {
    const method = req.getCaseSensitiveMethod();
    const path = req.getUrl();
    const query = req.getQuery();
    const header = new Headers();
    req.forEach((k, v) => header.append(k, v));
    const decision = front(routes, options.cors, method, path, (name) => header.get(name));
    if (decision.kind === "answer") {
      res.cork(() => {
        res.writeStatus(statusLine(decision.status));
        for (const [k, v] of decision.headers) res.writeHeader(k, v);
        res.end(decision.body ?? "");
      });
      return;
    }

    const abort = new AbortController();
    const body = new RequestBody(res);
    let aborted = false;
    // Told by the framing, which every handler has: Connect streams, and gRPC-web calls (whose
    // framing does not say whether the method streams).
    calls.set(abort, decision.kind === "rpc" && STREAMED.test(header.get("content-type") ?? ""));
    inFlight++;
    res.onAborted(() => {
      aborted = true;
      body.fail(new Error("client went away"));
      abort.abort(new Error("client went away"));
    });
    res.onData((ab, isLast) => body.data(ab, isLast));

    const clientAddress = Buffer.from(res.getRemoteAddressAsText()).toString();
    const serve = async () => {
      if (decision.kind === "edge") {
        const edgeReq = edgeRequest(decision.route, decision.params, method, path, query, header, body, abort.signal, clientAddress);
        let out: EdgeResponse;
        try {
          out = await decision.route.handler(edgeReq);
        } catch (e) {
          out = edgeErrorResponse(e);
          if (out.status >= 500) options.log.error({ err: e, path }, "edge route failed");
        }
        return writeEdge(res, out, decision.cors, method === "HEAD", body, abort.signal);
      }
      const url = `http://${header.get("host") ?? "localhost"}${path}${query ? `?${query}` : ""}`;
      const out = await decision.handler({
        httpVersion: "1.1",
        method,
        url,
        header,
        body,
        signal: abort.signal,
        contextValues: options.contextValues(clientAddress),
      });
      return write(res, out, decision.cors, body, abort.signal);
    };
    void serve()
      .catch((e: unknown) => {
        options.log.error({ err: e, path }, "gateway handler failed");
        if (!aborted) {
          body.release();
          // A handler may fail after its answer went out (uWS then refuses any access to the
          // response): nothing is left to tell the client, and throwing here would go unhandled.
          try {
            res.cork(() => res.writeStatus(statusLine(500)).end());
          } catch {
            // the response had already ended
          }
        }
      })
      .finally(() => {
        calls.delete(abort);
        inFlight--;
      });
  });

  const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    // Exclusive: without it uWS sets SO_REUSEPORT, and a second server on a taken port would
    // silently share (and split) its connections instead of failing to start.
    const listen = app.listen as unknown as (host: string, port: number, flags: number, cb: (s: uWS.us_listen_socket | false) => void) => void;
    listen.call(app, options.host, options.port, EXCLUSIVE_PORT, (socket) =>
      socket ? resolve(socket) : reject(new Error(`cannot listen on ${options.host}:${options.port}: the port is taken`)),
    );
  });
  const port = uws.us_socket_local_port(listenSocket);

  return {
    port,
    async close(graceMs = 10_000) {
      uws.us_listen_socket_close(listenSocket);
      // A Watch runs until its client leaves: it ends now, and its client reconnects to another
      // gateway. Unary calls and edge requests (an upload, say) get the grace to finish.
      for (const [call, stream] of calls) if (stream) call.abort(new Error("server shutting down"));
      const deadline = Date.now() + graceMs;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      for (const call of calls.keys()) call.abort(new Error("server shutting down"));
      (app as unknown as { close?: () => void }).close?.();
    },
  };
}

/** Enveloped answers (Connect streaming, gRPC-web) flow message by message; unary ones go out whole, with a length. */
const STREAMED = /^application\/(connect\+|grpc-web)/;

async function write(
  res: uWS.HttpResponse,
  out: UniversalServerResponse,
  cors: readonly [string, string][],
  body: RequestBody,
  signal: AbortSignal,
): Promise<void> {
  const aborted = () => signal.aborted;
  const writeHead = () => {
    res.writeStatus(statusLine(out.status));
    out.header?.forEach((v, k) => {
      if (k !== "content-length") res.writeHeader(k, v);
    });
    for (const [k, v] of cors) res.writeHeader(k, v);
  };
  const iterator = out.body?.[Symbol.asyncIterator]();
  if (!iterator || !STREAMED.test(out.header?.get("content-type") ?? "")) {
    const chunks: Uint8Array[] = [];
    if (iterator) for (let next = await iterator.next(); !next.done; next = await iterator.next()) chunks.push(next.value);
    if (aborted()) return;
    body.release();
    res.cork(() => {
      writeHead();
      res.end(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    return;
  }
  // A stream: headers go out with the first message, then each message as soon as it is produced.
  await writeChunked(res, iterator, writeHead, signal, () => body.release(), urgentOf(out.body), pushOf(out.body));
}

/**
 * A body of unknown length, chunked: the head goes out with the first chunk, each chunk as soon as
 * it exists, waiting for the socket to drain when it fills (until `urgent` resolves: the rest then
 * goes out at once); `beforeEnd` runs just before the end.
 */
async function writeChunked(
  res: uWS.HttpResponse,
  iterator: AsyncIterator<Uint8Array>,
  writeHead: () => void,
  signal: AbortSignal,
  beforeEnd = () => undefined as void,
  urgent?: Promise<void>,
  push?: PushBody["push"],
): Promise<void> {
  let headSent = false;
  let hurry = false;
  void urgent?.then(() => (hurry = true));
  const write = (chunk: Uint8Array) => {
    let ok = true;
    res.cork(() => {
      if (!headSent) ((headSent = true), writeHead());
      ok = res.write(chunk);
    });
    return ok;
  };
  try {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      if (signal.aborted) return;
      // An urgent body's end goes out without waiting: uWS holds it until the client reads.
      if (!write(next.value) && !hurry) await (urgent ? Promise.race([writable(res, signal, true), urgent]) : writable(res, signal));
    }
    if (signal.aborted) return;
    const pushed = push?.(
      {
        write: (chunk) => !signal.aborted && write(chunk),
        drained: (then) => void writable(res, signal, true).then(() => signal.aborted || then()),
        end: (last) => {
          if (signal.aborted) return;
          heldOpen.release(res);
          beforeEnd();
          res.cork(() => {
            if (!headSent) ((headSent = true), writeHead());
            res.end(last);
          });
        },
      },
      signal,
    );
    if (pushed) return await pushed;
    heldOpen.release(res);
    beforeEnd();
    res.cork(() => {
      if (!headSent) writeHead();
      res.end();
    });
  } finally {
    heldOpen.release(res);
    if (signal.aborted) await iterator.return?.(); // let the producer finish its cleanup
  }
}

/**
 * Waits until uWS can take more of the response, or the client went away. `holdOpen` for a body
 * with its own limit on a client that reads nothing (an urgent body: a Watch, ended after
 * MEDIA_WATCH_STALL_SECONDS with its error): uWS closes a socket that takes nothing for 10 s
 * (HTTP_TIMEOUT_S, armed by the failed write), which would cut such a stream first, silently.
 */
function writable(res: uWS.HttpResponse, signal: AbortSignal, holdOpen = false, retry: (offset: number) => boolean = () => true): Promise<void> {
  return new Promise<void>((resolve) => {
    const release = holdOpen ? heldOpen.hold(res, signal) : undefined;
    // Removed on drain: a long stream waits for room many times on one signal.
    const gone = () => {
      release?.();
      resolve();
    };
    res.onWritable((offset) => {
      const done = retry(offset);
      if (done) {
        signal.removeEventListener("abort", gone);
        gone();
      }
      return done;
    });
    signal.addEventListener("abort", gone, { once: true });
  });
}

/**
 * Responses waiting for room past uWS's timeout (10 s, its timer ticks by 4 s): every 3 s, a pause
 * and resume each, which re-arms the timeout and leaves the socket's poll as it was
 * (HttpResponse::pause/resume; the socket still polls for room after its failed write, and the
 * writer goes on once it has some). An empty cork re-arms only when its uncork fails, which it
 * need not while the client still reads nothing: on some machines every stream of the Watch
 * suite's 1,000 non-readers was cut 8-12 s after its last failed write. One timer for all of them.
 */
const heldOpen = new (class {
  private readonly waiting = new Map<uWS.HttpResponse, AbortSignal>();
  private timer: NodeJS.Timeout | undefined;

  hold(res: uWS.HttpResponse, signal: AbortSignal): () => void {
    this.waiting.set(res, signal);
    this.timer ??= setInterval(() => this.rearm(), 3000).unref();
    return () => this.release(res);
  }

  /** Before the response ends (uWS's response is not to be touched after). */
  release(res: uWS.HttpResponse): void {
    this.waiting.delete(res);
    if (this.waiting.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private rearm(): void {
    for (const [res, signal] of this.waiting) {
      if (signal.aborted) continue;
      res.pause();
      res.resume();
    }
  }
})();

/**
 * An edge answer: a body of known length goes out with tryEnd (uWS writes the Content-Length), one
 * of unknown length chunked; either waits for the socket to drain when it fills. HEAD and bodiless
 * answers (304, 204) end without a body, keeping the length they report.
 */
async function writeEdge(
  res: uWS.HttpResponse,
  out: EdgeResponse,
  cors: readonly [string, string][],
  head: boolean,
  body: RequestBody,
  signal: AbortSignal,
): Promise<void> {
  if (signal.aborted) return;
  const declared = out.header.get("content-length");
  const total = declared === null ? undefined : Number(declared);
  const writeHead = () => {
    res.writeStatus(statusLine(out.status));
    out.header.forEach((v, k) => {
      if (k !== "content-length") res.writeHeader(k, v);
    });
    for (const [k, v] of cors) res.writeHeader(k, v);
  };
  body.release();
  if (head || out.body === undefined) {
    (head ? iteratorOf(out.body)?.return?.(undefined) : undefined)?.catch(() => undefined);
    res.cork(() => {
      writeHead();
      if (out.status === 204 || out.status === 304) res.endWithoutBody(undefined);
      else res.endWithoutBody(total ?? 0);
    });
    return;
  }
  if (out.body instanceof Uint8Array) {
    const bytes = out.body;
    res.cork(() => {
      writeHead();
      res.end(bytes);
    });
    return;
  }
  const iterator = out.body[Symbol.asyncIterator]();
  if (total === undefined) return writeChunked(res, iterator, writeHead, signal);
  let headSent = false;
  try {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      if (signal.aborted) return;
      const chunk = next.value;
      const offset = res.getWriteOffset();
      let result: [boolean, boolean] = [true, false];
      res.cork(() => {
        if (!headSent) ((headSent = true), writeHead());
        result = res.tryEnd(chunk, total);
      });
      if (result[1]) return; // all of total written
      if (!result[0]) {
        // Part of the chunk is queued: send the rest from where uWS stopped, as the socket drains.
        // When that rest completes the body, the response is over: uWS refuses any access after it.
        let ended = false;
        await writable(res, signal, false, (at) => {
          const [ok, done] = res.tryEnd(chunk.subarray(at - offset), total);
          ended = done;
          return ok || done;
        });
        if (ended) return;
      }
    }
    if (signal.aborted) return;
    res.cork(() => {
      if (!headSent) writeHead();
      res.end();
    });
  } finally {
    if (signal.aborted) await iterator.return?.();
  }
}

function iteratorOf(body: EdgeResponse["body"]): AsyncIterator<Uint8Array> | undefined {
  return body === undefined || body instanceof Uint8Array ? undefined : body[Symbol.asyncIterator]();
}
