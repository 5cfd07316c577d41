// GET /healthz and GET /readyz on the gateway's own port, for load balancers and orchestrators:
// unauthenticated, answered from the process's shared readiness (src/readiness.ts), HEAD too.
import { probeAnswer, PROBE_PATHS, type Readiness } from "../src/readiness.js";
import type { EdgeRoute } from "./edge.js";

export function probeRoutes(readiness: Readiness): EdgeRoute[] {
  return PROBE_PATHS.map((path) => ({
    method: "GET",
    pattern: path,
    async handler() {
      const answer = await probeAnswer(readiness, path, false);
      return {
        status: answer.status,
        header: new Headers({ "content-type": answer.contentType, "cache-control": "no-store" }),
        body: new TextEncoder().encode(answer.body),
      };
    },
  }));
}
