// GET /metrics on the gateway's own port, beside the hosting routes: this process's metrics in the Prometheus text format.
import { metricsRegistry } from "../src/metrics.js";
import type { EdgeRoute } from "./edge.js";

export function metricsRoute(): EdgeRoute {
  // Taken now, so the default process metrics (GC, event loop) start with the gateway, not at the first scrape.
  const registry = metricsRegistry();
  return {
    method: "GET",
    pattern: "/metrics",
    async handler() {
      const text = await registry.metrics();
      return { status: 200, header: new Headers({ "content-type": registry.contentType, "cache-control": "no-store" }), body: new TextEncoder().encode(text) };
    },
  };
}
