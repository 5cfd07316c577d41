// HealthService: the server's version and the real state of the store and, in cluster mode, of the
// bus and the encoder pool.
import type { ServiceImpl } from "@connectrpc/connect";
import { HealthStatus, type HealthService } from "../../src/gen/media/v1/health_pb.js";
import { ENCODER_NODES, NODE_LIVENESS_MS } from "../../actors/scheduler/messages.js";
import type { Store } from "../../src/store/port.js";
import type { ServiceDeps } from "./deps.js";

/** The encoder pool: healthy while some encoder node has asked the encode queue for work or renewed a lease lately. */
async function encoderPool(store: Store): Promise<{ ok: boolean; message?: string }> {
  const nodes = await store.scan<{ nodeId: string; at: number }>(ENCODER_NODES.table, ENCODER_NODES.partition, { limit: 1000 });
  const live = nodes.items.filter((n) => Date.now() - n.value.at <= NODE_LIVENESS_MS);
  return live.length > 0 ? { ok: true } : { ok: false, message: `no encoder node heard from in the last ${NODE_LIVENESS_MS / 1000} s: jobs wait in the queue` };
}

export function healthService(d: ServiceDeps): ServiceImpl<typeof HealthService> {
  return {
    async check() {
      const checks: [string, Promise<{ ok: boolean; message?: string }>][] = [["database", d.store.health()]];
      // The bus is a component of its own only in cluster mode, where Kafka can fail apart from the process.
      if (d.config.mode === "cluster") checks.push(["bus", d.bus.health()], ["encoders", encoderPool(d.store)]);
      // The process's own encoder: unhealthy while ffmpeg or ffprobe is missing (it takes no task then).
      if (d.encoder) checks.push(["encoder", Promise.resolve(d.encoder())]);
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
