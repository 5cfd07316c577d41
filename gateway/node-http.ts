// The node:http host adapter over the same handler map as uWS: the reference for benchmarks and a fallback host.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { apiError } from "../src/errors.js";
import type { Logger } from "../src/log.js";

export async function listenNodeHttp(
  handlers: ReadonlyMap<string, UniversalHandler>,
  options: { host: string; port: number; maxRequestBytes: number; log: Logger },
): Promise<{ readonly port: number; close(graceMs?: number): Promise<void> }> {
  let inFlight = 0;
  const server = createServer((req, res) => {
    const fail = (status: number, message: string, code = Code.InvalidArgument) =>
      void res.writeHead(status, { "content-type": "application/json" }).end(errorToJsonBytes(apiError(code, message), {}));
    const path = req.url?.split("?", 1)[0] ?? "";
    const handler = handlers.get(path);
    if (!handler) return fail(404, `no method at ${path}; methods are POST /media.v1.<Service>/<Method>`, Code.NotFound);
    // A declared size is refused up front; Connect's readMaxBytes bounds what the handler decodes.
    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > options.maxRequestBytes) return fail(413, `request body of ${declared} bytes exceeds the limit of ${options.maxRequestBytes}`);
    inFlight++;
    res.once("close", () => inFlight--); // sent or cut off; universalResponseToNodeResponse's promise never settles on HTTP/1.1
    Promise.resolve()
      .then(() => handler(universalRequestFromNodeRequest(req, res, undefined, undefined)))
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
