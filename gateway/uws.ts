// The uWebSockets.js host adapter: bytes in, universal handler, bytes out. Honors request size
// limits, client aborts and back-pressure; writes headers only once the handler has answered.
import { STATUS_CODES } from "node:http";
import uWS from "uWebSockets.js";
import { Code } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { apiError } from "../src/errors.js";
import type { Logger } from "../src/log.js";

/** uWS's listen flag (a runtime constant; its typings only declare a const enum). */
const EXCLUSIVE_PORT = (uWS as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;

export interface UwsServer {
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

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

export async function listenUws(
  handlers: ReadonlyMap<string, UniversalHandler>,
  options: { host: string; port: number; maxRequestBytes: number; log: Logger },
): Promise<UwsServer> {
  const app = uWS.App();
  let inFlight = 0;
  // Calls in flight, aborted on shutdown so open streams end (cheaper than a shutdown signal
  // linked into every call's context).
  const calls = new Set<AbortController>();

  app.any("/*", (res, req) => {
    const method = req.getMethod().toUpperCase();
    const path = req.getUrl();
    const query = req.getQuery();
    const header = new Headers();
    req.forEach((k, v) => header.append(k, v));
    const abort = new AbortController();
    calls.add(abort);
    let aborted = false;
    let settled = true; // no call in flight yet
    let reading = false; // counted in flight, body still arriving
    const settle = () => {
      calls.delete(abort);
      if (!settled) (settled = true), inFlight--;
    };
    res.onAborted(() => {
      aborted = true;
      abort.abort(new Error("client went away"));
      if (reading) settle(); // a body that never finishes arriving must not hold close() for the whole grace
    });

    const fail = (status: number, message: string, code = Code.InvalidArgument) => {
      const body = errorToJsonBytes(apiError(code, message), {});
      if (!aborted) res.cork(() => res.writeStatus(statusLine(status)).writeHeader("content-type", "application/json").end(body));
    };
    const handler = handlers.get(path);
    if (!handler) {
      fail(404, `no method at ${path}; methods are POST /media.v1.<Service>/<Method>`, Code.NotFound);
      return;
    }
    const declared = Number(header.get("content-length") ?? "0");
    if (declared > options.maxRequestBytes) {
      fail(413, `request body of ${declared} bytes exceeds the limit of ${options.maxRequestBytes}`);
      return;
    }

    inFlight++;
    settled = false;
    reading = true;
    const url = `http://${header.get("host") ?? "localhost"}${path}${query ? `?${query}` : ""}`;
    const serve = async (body: Uint8Array) => {
      reading = false;
      try {
        const out = await handler({ httpVersion: "1.1", method, url, header, body: once(body), signal: abort.signal });
        await write(res, out, abort.signal);
      } catch (e) {
        options.log.error({ err: e, path }, "gateway handler failed");
        if (!aborted) res.cork(() => res.writeStatus(statusLine(500)).end());
      } finally {
        settle();
      }
    };
    const chunks: Uint8Array[] = [];
    let size = 0;
    res.onData((ab, isLast) => {
      if (settled) return; // refused as too large, or aborted
      size += ab.byteLength;
      if (size > options.maxRequestBytes) {
        settle();
        fail(413, `request body exceeds the limit of ${options.maxRequestBytes} bytes`);
        return;
      }
      const chunk = new Uint8Array(ab.slice(0)); // uWS reuses the buffer after this callback
      if (isLast && chunks.length === 0) return void serve(chunk); // the usual case: one chunk, no concatenation
      chunks.push(chunk);
      if (isLast) void serve(Buffer.concat(chunks));
    });
  });

  const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    // Exclusive: without it uWS sets SO_REUSEPORT, and a second server on a taken port would
    // silently share (and split) its connections instead of failing to start.
    const listen = app.listen as unknown as (host: string, port: number, flags: number, cb: (s: uWS.us_listen_socket | false) => void) => void;
    listen.call(app, options.host, options.port, EXCLUSIVE_PORT, (socket) => (socket ? resolve(socket) : reject(new Error(`cannot listen on ${options.host}:${options.port}: the port is taken`))));
  });
  const port = uWS.us_socket_local_port(listenSocket);

  return {
    port,
    async close(graceMs = 10_000) {
      uWS.us_listen_socket_close(listenSocket);
      for (const call of calls) call.abort(new Error("server shutting down"));
      const deadline = Date.now() + graceMs;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      (app as unknown as { close?: () => void }).close?.();
    },
  };
}

async function write(res: uWS.HttpResponse, out: UniversalServerResponse, signal: AbortSignal): Promise<void> {
  const aborted = () => signal.aborted;
  if (aborted()) return;
  const iterator = out.body?.[Symbol.asyncIterator]();
  // Headers go out with the first chunk (or the end): a handler error before it still gets a status.
  const first = iterator ? await iterator.next() : { done: true as const, value: undefined };
  if (aborted()) return;
  const writeHead = () => {
    res.writeStatus(statusLine(out.status));
    out.header?.forEach((v, k) => {
      if (k !== "content-length") res.writeHeader(k, v);
    });
  };
  if (first.done) {
    res.cork(() => {
      writeHead();
      res.end();
    });
    return;
  }
  const second = await iterator!.next();
  if (aborted()) return;
  if (second.done) {
    res.cork(() => {
      writeHead();
      res.end(first.value);
    });
    return;
  }
  // A stream: write chunk by chunk, waiting for the socket to drain when it fills.
  let ok = true;
  res.cork(() => {
    writeHead();
    ok = res.write(first.value);
  });
  try {
    for (let next: IteratorResult<Uint8Array> = second; !next.done; next = await iterator!.next()) {
      if (!ok) {
        await new Promise<void>((resolve) => {
          res.onWritable(() => (resolve(), true));
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
      }
      if (aborted()) return;
      const chunk = next.value;
      res.cork(() => {
        ok = res.write(chunk);
      });
    }
    if (!aborted()) res.cork(() => res.end());
  } finally {
    if (aborted()) await iterator!.return?.(); // let the handler's stream finish its cleanup
  }
}
