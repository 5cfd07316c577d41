// The node:http host adapter over the same handler map and front answers as uWS: the reference for
// benchmarks, and the host where uWS cannot load or a client needs what uWS's parser refuses.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { edgeErrorResponse, edgeRequest, type EdgeResponse } from "./edge.js";
import { front, type Routes } from "./front.js";
import type { HostOptions, HostServer } from "./uws.js";
import { pushOf, urgentOf } from "../src/urgent-body.js";

export async function listenNodeHttp(routes: Routes, options: HostOptions): Promise<HostServer> {
  let inFlight = 0;
  const server = createServer((req, res) => {
    const path = req.url?.split("?", 1)[0] ?? "";
    const header = (name: string) => {
      const v = req.headers[name];
      return typeof v === "string" ? v : null;
    };
    const decision = front(routes, options.cors, req.method ?? "", path, header);
    if (decision.kind === "answer") {
      res.writeHead(decision.status, decision.headers.flat()).end(decision.body);
      return;
    }
    inFlight++;
    res.once("close", () => inFlight--); // sent or cut off; universalResponseToNodeResponse's promise never settles on HTTP/1.1
    for (const [k, v] of decision.cors) res.setHeader(k, v);
    const clientAddress = req.socket.remoteAddress ?? "";
    if (decision.kind === "edge") {
      const abort = new AbortController();
      res.once("close", () => abort.abort(new Error("client went away")));
      const query = req.url?.includes("?") ? req.url.slice(req.url.indexOf("?") + 1) : "";
      const header = new Headers();
      for (let i = 0; i < req.rawHeaders.length; i += 2) header.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
      const edgeReq = edgeRequest(decision.route, decision.params, req.method ?? "", path, query, header, requestBody(req), abort.signal, clientAddress);
      void decision.route
        .handler(edgeReq)
        .catch((e: unknown) => {
          const out = edgeErrorResponse(e);
          if (out.status >= 500) options.log.error({ err: e, path }, "edge route failed");
          return out;
        })
        .then(async (out) => {
          await bodyDrained(req, res);
          return writeEdge(res, out, req.method === "HEAD", abort.signal);
        })
        .catch((e: unknown) => {
          options.log.error({ err: e, path }, "edge answer failed");
          res.destroy();
        });
      return;
    }
    const contextValues = options.contextValues(clientAddress);
    Promise.resolve()
      .then(() => decision.handler({ ...universalRequestFromNodeRequest(req, res, undefined, contextValues), body: requestBody(req) }))
      .then((out) => (urgentOf(out.body) ? writeUrgent(out, res) : universalResponseToNodeResponse(out, res)))
      .catch((e: unknown) => {
        if (ConnectError.from(e).code === Code.Aborted) return; // the client went away
        options.log.error({ err: e, path }, "gateway handler failed");
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
  });
  // An idle connection is kept longer than clients keep theirs (undici: the server's hint less a
  // second, on a timer of one-second grain): a client reusing one as the server closes it loses
  // its request to a reset. Node's default of 5 s races undici's 4 s on a loaded machine.
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => (server.off("error", reject), resolve()));
  });
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    async close(graceMs = 10_000) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = Date.now() + graceMs;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      server.closeAllConnections();
      await closed;
    },
  };
}

/**
 * The request body for the handler. A handler that stops reading early (a limit, a bomb) leaves
 * the rest to be read and dropped, so the client still gets the answer; destroying the request, as
 * the stream's own iterator does, would reset the connection under a client still sending.
 */
async function* requestBody(req: IncomingMessage): AsyncIterable<Uint8Array> {
  try {
    yield* req.iterator({ destroyOnReturn: false }) as AsyncIterable<Uint8Array>;
  } finally {
    if (!req.complete) req.resume();
  }
}

/** How long an idle keep-alive connection stays open (as the 60-75 s of load balancers and nginx). */
const KEEP_ALIVE_MS = 65_000;

/** How long an answer waits for more of a body its handler stopped reading, and at most in all (nginx's lingering_timeout and lingering_time). */
const LINGER_IDLE_MS = 5_000;
const LINGER_MS = 30_000;

/**
 * An answer given before the request's body was all read (a 413, a refusal) waits until the rest
 * has arrived and been dropped, as nginx's lingering close: a client still sending when the answer
 * comes can lose it to a reset. A client that stops sending for LINGER_IDLE_MS, or is still
 * sending after LINGER_MS, gets the answer and the connection closes. The wait is counted from the
 * last bytes, not the first: a loaded machine that delivers a body slowly still answers it.
 */
async function bodyDrained(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.complete || req.destroyed) return;
  const lingered = await new Promise<boolean>((resolve) => {
    const idle = setTimeout(() => done(false), LINGER_IDLE_MS);
    const total = setTimeout(() => done(false), LINGER_MS);
    const more = () => idle.refresh();
    const done = (whole: boolean) => {
      clearTimeout(idle);
      clearTimeout(total);
      req.off("data", more); // the stream keeps flowing: the rest is still dropped
      resolve(whole);
    };
    req
      .on("data", more)
      .once("end", () => done(true))
      .once("close", () => done(true));
  });
  if (!lingered) res.setHeader("connection", "close");
}

/**
 * A stream whose body may turn urgent (gateway/watch/): as connect-node writes one, headers with the
 * first chunk and each chunk waiting for the socket to drain, except once the body is urgent: the
 * rest, its end included, goes out at once, held by Node until the client reads or leaves.
 */
async function writeUrgent(out: UniversalServerResponse, res: ServerResponse): Promise<void> {
  const urgent = urgentOf(out.body)!;
  let hurry = false;
  void urgent.then(() => (hurry = true));
  const header: Record<string, string> = {};
  out.header?.forEach((v, k) => (header[k] = v));
  const iterator = out.body![Symbol.asyncIterator]();
  try {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      if (res.destroyed) return;
      if (!res.headersSent) res.writeHead(out.status, header);
      if (!res.write(next.value) && !hurry)
        await new Promise<void>((resolve) => {
          const done = () => (res.off("drain", done), res.off("close", done), resolve());
          res.once("drain", done).once("close", done);
          void urgent.then(done);
        });
    }
    if (res.destroyed) return;
    if (!res.headersSent) res.writeHead(out.status, header);
    const push = pushOf(out.body);
    if (push) {
      const left = new AbortController();
      const close = () => left.abort();
      res.once("close", close);
      const pushed = push(
        {
          write: (chunk) => !res.destroyed && res.write(chunk),
          drained: (then) => void res.once("drain", then),
          end: (last) => void res.end(last),
        },
        left.signal,
      );
      if (pushed) return await pushed.finally(() => res.off("close", close));
      res.off("close", close);
    }
    res.end();
  } finally {
    await iterator.return?.();
  }
}

/** An edge answer, its body streamed with back-pressure; HEAD and bodiless answers end without one. */
async function writeEdge(res: ServerResponse, out: EdgeResponse, head: boolean, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return;
  const header: Record<string, string> = {};
  out.header.forEach((v, k) => (header[k] = v));
  res.writeHead(out.status, header);
  if (head || out.body === undefined) return void res.end();
  if (out.body instanceof Uint8Array) return void res.end(out.body);
  for await (const chunk of out.body) {
    if (signal.aborted) return;
    if (!res.write(chunk))
      await new Promise<void>((resolve) => {
        res.once("drain", resolve);
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
  }
  res.end();
}
