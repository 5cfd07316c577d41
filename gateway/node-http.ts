// The node:http host adapter over the same handler map and front answers as uWS: the reference for
// benchmarks, and the host where uWS cannot load or a client needs what uWS's parser refuses.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { front } from "./front.js";
import type { HostOptions, HostServer } from "./uws.js";

export async function listenNodeHttp(handlers: Parameters<typeof front>[0], options: HostOptions): Promise<HostServer> {
  let inFlight = 0;
  const server = createServer((req, res) => {
    const path = req.url?.split("?", 1)[0] ?? "";
    const header = (name: string) => {
      const v = req.headers[name];
      return typeof v === "string" ? v : null;
    };
    const decision = front(handlers, options.cors, req.method ?? "", path, header);
    if (decision.kind === "answer") {
      res.writeHead(decision.status, decision.headers.flat()).end(decision.body);
      return;
    }
    inFlight++;
    res.once("close", () => inFlight--); // sent or cut off; universalResponseToNodeResponse's promise never settles on HTTP/1.1
    for (const [k, v] of decision.cors) res.setHeader(k, v);
    const contextValues = options.contextValues(req.socket.remoteAddress ?? "");
    Promise.resolve()
      .then(() => decision.handler({ ...universalRequestFromNodeRequest(req, res, undefined, contextValues), body: requestBody(req) }))
      .then((out) => universalResponseToNodeResponse(out, res))
      .catch((e: unknown) => {
        if (ConnectError.from(e).code === Code.Aborted) return; // the client went away
        options.log.error({ err: e, path }, "gateway handler failed");
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
  });
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
