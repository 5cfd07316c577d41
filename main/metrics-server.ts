// The metrics listener of any process (MEDIA_METRICS_PORT): GET /metrics, /healthz and /readyz on a
// node:http port of its own, so actor hosts and encoder nodes, which serve no HTTP otherwise, can be
// scraped and probed too.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../src/log.js";
import { metricsRegistry } from "../src/metrics.js";
import { isProbePath, probeAnswer, type Readiness } from "../src/readiness.js";

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function listenMetrics(host: string, port: number, log: Logger, readiness: Readiness): Promise<MetricsServer> {
  const registry = metricsRegistry();
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (path !== "/metrics" && !isProbePath(path)) return void res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    if (req.method !== "GET" && req.method !== "HEAD") return void res.writeHead(405, { allow: "GET, HEAD" }).end();
    if (isProbePath(path)) {
      // This port is the operator's, not the public's: a failed check's message is shown.
      probeAnswer(readiness, path, true).then(
        (answer) =>
          res
            .writeHead(answer.status, { "content-type": answer.contentType, "cache-control": "no-store" })
            .end(req.method === "HEAD" ? undefined : answer.body),
        (err: unknown) => {
          log.warn({ err, path }, "probe not answered");
          res.writeHead(500, { "content-type": "text/plain" }).end("probe not answered\n");
        },
      );
      return;
    }
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
