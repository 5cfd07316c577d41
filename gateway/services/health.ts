// HealthService: the server's version and the real state of the store.
import type { ServiceImpl } from "@connectrpc/connect";
import { HealthStatus, type HealthService } from "../../src/gen/media/v1/health_pb.js";
import type { ServiceDeps } from "./deps.js";

export function healthService(d: ServiceDeps): ServiceImpl<typeof HealthService> {
  return {
    async check() {
      const db = await d.store.health().catch((e: unknown) => ({ ok: false, message: String(e) }));
      const status = db.ok ? HealthStatus.HEALTHY : HealthStatus.UNHEALTHY;
      return {
        status,
        version: d.config.version,
        components: [{ name: "database", status, ...(db.ok ? {} : { message: db.message ?? "unavailable" }) }],
      };
    },
  };
}
