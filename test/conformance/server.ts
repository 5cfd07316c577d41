// The conformance server-under-test: ConformanceService on Connect's universal handlers, served
// through the project's own host adapter (argv[2] or CONFORMANCE_ADAPTER: "uws" or "node").
// Protocol with the runner (connectconformance --mode server): read one size-delimited
// ServerCompatRequest from stdin, listen on 127.0.0.1 port 0, write one size-delimited
// ServerCompatResponse (host, port) to stdout, exit on SIGTERM.
// Like connect-es's own conformance servers (packages/connect-node/conformance/server.ts).
import { readFileSync } from "node:fs";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createConnectRouter, createContextValues } from "@connectrpc/connect";
import { compressionGzip, connectNodeAdapter } from "@connectrpc/connect-node";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { listenNodeHttp } from "../../gateway/node-http.js";
import { listenUws } from "../../gateway/uws.js";
import { boundedGzip } from "../../gateway/compression.js";
import { EdgeRouter } from "../../gateway/edge.js";
import { HTTPVersion } from "./gen/connectrpc/conformance/v1/config_pb.js";
import { ServerCompatRequestSchema, ServerCompatResponseSchema } from "./gen/connectrpc/conformance/v1/server_compat_pb.js";
import { conformanceRoutes, jsonRegistry } from "./service.js";

async function main(): Promise<void> {
  const adapter = process.argv[2] ?? process.env.CONFORMANCE_ADAPTER ?? "uws";
  if (adapter !== "uws" && adapter !== "node" && adapter !== "reference")
    throw new Error(`unknown adapter ${adapter}; use uws, node (or reference: connect-node's own adapter, a control)`);

  const input = readFileSync(process.stdin.fd);
  const size = input.readUInt32BE(0);
  const req = fromBinary(ServerCompatRequestSchema, input.subarray(4, 4 + size));
  if (req.httpVersion !== HTTPVersion.HTTP_VERSION_1) throw new Error(`only HTTP/1.1 is served, not ${HTTPVersion[req.httpVersion]}`);
  if (req.useTls) throw new Error("TLS is not supported");

  const limit = req.messageReceiveLimit > 0 ? req.messageReceiveLimit : undefined;
  const router = createConnectRouter({
    connect: true,
    grpcWeb: true,
    grpc: false,
    acceptCompression: [boundedGzip], // the gateway's own gzip
    ...(limit !== undefined ? { readMaxBytes: limit } : {}),
    jsonOptions: { registry: jsonRegistry },
  });
  const routes = conformanceRoutes;
  routes(router);
  const handlers = { rpc: new Map(router.handlers.map((h) => [h.requestPath, h])), edge: new EdgeRouter([]) };

  // stdout carries the ServerCompatResponse: logs go to stderr.
  const log = pino({ level: process.env.CONFORMANCE_LOG_LEVEL ?? "warn", base: { adapter } }, pino.destination(2));
  // No CORS origins (the runner is no browser); fresh context values per call.
  const options = { host: "127.0.0.1", port: 0, cors: { origins: [] }, log, contextValues: () => createContextValues() };
  const server =
    adapter === "uws"
      ? await listenUws(handlers, options)
      : adapter === "node"
        ? await listenNodeHttp(handlers, options)
        : await listenReference(routes, limit);

  // The runner sends SIGTERM when it is done with this server; nothing to drain.
  process.on("SIGTERM", () => process.exit(0));
  const res = create(ServerCompatResponseSchema, { host: "127.0.0.1", port: server.port });
  const bytes = toBinary(ServerCompatResponseSchema, res);
  const out = Buffer.alloc(4 + bytes.byteLength);
  out.writeUInt32BE(bytes.byteLength, 0);
  out.set(bytes, 4);
  process.stdout.write(out);
}

/** The control: connect-node's own adapter on node:http, configured like the router above. */
async function listenReference(routes: typeof conformanceRoutes, limit: number | undefined): Promise<{ port: number }> {
  const server = createServer(
    connectNodeAdapter({
      routes,
      connect: true,
      grpcWeb: true,
      grpc: false,
      acceptCompression: [compressionGzip],
      ...(limit !== undefined ? { readMaxBytes: limit } : {}),
      jsonOptions: { registry: jsonRegistry },
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port };
}

main().catch((e: unknown) => {
  process.stderr.write(`conformance server failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
