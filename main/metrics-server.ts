// The metrics listener of any process (MEDIA_METRICS_PORT): GET /metrics on a node:http port of its
// own, so actor hosts and encoder nodes, which serve no HTTP otherwise, can be scraped too.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../src/log.js";
import { metricsRegistry } from "../src/metrics.js";

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function listenMetrics(host: string, port: number, log: Logger): Promise<MetricsServer> {
  const registry = metricsRegistry();
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/metrics") return void res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    if (req.method !== "GET" && req.method !== "HEAD") return void res.writeHead(405, { allow: "GET, HEAD" }).end();
    registry.metrics().then(
      (text) => res.writeHead(200, { "content-type": registry.contentType, "cache-control": "no-store" }).end(req.method === "HEAD" ? undefined : text),
      (err: unknown) => {
        log.warn({ err }, "metrics not collected");
        res.writeHead(500, { "content-type": "text/plain" }).end("metrics not collected\n");
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  log.info({ port: bound }, "metrics listening");
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
