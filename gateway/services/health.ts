// HealthService: the server's version and the real state of the store.
import type { ServiceImpl } from "@connectrpc/connect";
import { HealthStatus, type HealthService } from "../../src/gen/media/v1/health_pb.js";
import type { ServiceDeps } from "./deps.js";

export function healthService(d: ServiceDeps): ServiceImpl<typeof HealthService> {
  return {
    async check() {
      const checks: [string, Promise<{ ok: boolean; message?: string }>][] = [["database", d.store.health()]];
      // The bus is a component of its own only in cluster mode, where Kafka can fail apart from the process.
      if (d.config.mode === "cluster") checks.push(["bus", d.bus.health()]);
      const components = await Promise.all(
        checks.map(async ([name, check]) => {
          const result = await check.catch((e: unknown) => ({ ok: false, message: String(e) }));
          const status = result.ok ? HealthStatus.HEALTHY : HealthStatus.UNHEALTHY;
          return { name, status, ...(result.ok ? {} : { message: result.message ?? "unavailable" }) };
        }),
      );
      const healthy = components.every((c) => c.status === HealthStatus.HEALTHY);
      return { status: healthy ? HealthStatus.HEALTHY : HealthStatus.UNHEALTHY, version: d.config.version, components };
    },
  };
}
