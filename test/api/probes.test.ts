// GET /healthz and GET /readyz as a load balancer calls them: unauthenticated, on every gateway's
// port (and, embedded, on the metrics port), HEAD too; and the drain order of an embedded server:
// /readyz is 503 from the first step of its close while everything else is still served, then the
// port closes. The cluster's roles, a stopped Cassandra and a SIGTERM are test/cluster/probes-http.test.ts.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, freePort, ok, startHarness, TARGET, until, type Harness } from "../harness.js";

let h: Harness;
const metricsPort = freePort();

beforeAll(async () => {
  // Cluster processes get their metrics ports from the launcher; this one is the embedded server's.
  h = await startHarness(TARGET === "embedded" ? { MEDIA_METRICS_PORT: String(metricsPort) } : {});
});
afterAll(async () => {
  await h?.server.close();
});

async function probe(url: string, method = "GET"): Promise<{ status: number; body: any; type: string | null; cache: string | null }> {
  const res = await fetch(url, { method });
  const text = await res.text();
  return { status: res.status, body: text === "" ? "" : JSON.parse(text), type: res.headers.get("content-type"), cache: res.headers.get("cache-control") };
}

describe("probes", () => {
  it("answers /healthz and /readyz 200 on every gateway's port, without credentials", async () => {
    for (const base of h.bases) {
      expect(await probe(`${base}/healthz`)).toEqual({ status: 200, body: { status: "alive" }, type: "application/json", cache: "no-store" });
      const ready = await probe(`${base}/readyz`);
      expect(ready.status, JSON.stringify(ready.body)).toBe(200);
      expect(ready.body).toEqual({
        status: "ready",
        checks: [
          { name: "store", ok: true },
          { name: "bus", ok: true },
        ],
      });
    }
  });

  it("answers HEAD with the status and no body, ignores a query, and refuses other methods with 405", async () => {
    const base = h.bases[0]!;
    expect(await probe(`${base}/readyz`, "HEAD")).toMatchObject({ status: 200, body: "" });
    expect(await probe(`${base}/healthz`, "HEAD")).toMatchObject({ status: 200, body: "" });
    expect((await probe(`${base}/readyz?verbose=1&x=${"y".repeat(2000)}`)).status).toBe(200);
    const post = await fetch(`${base}/readyz`, { method: "POST", body: "x".repeat(100_000) });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toContain("GET");
  });

  it.skipIf(TARGET === "cluster")("answers them on the metrics port too, beside /metrics", async () => {
    const base = `http://127.0.0.1:${metricsPort}`;
    expect(await probe(`${base}/healthz`)).toMatchObject({ status: 200, body: { status: "alive" } });
    expect(await probe(`${base}/readyz`)).toMatchObject({ status: 200, body: { status: "ready" } });
    expect(await probe(`${base}/readyz`, "HEAD")).toMatchObject({ status: 200, body: "" });
    expect((await fetch(`${base}/metrics`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`, { method: "POST" })).status).toBe(405);
  });
});

/** Whether a new TCP connection to the port is accepted (fetch would reuse a kept-alive one). */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

// In-process servers of their own, closed by the test: the embedded target only.
describe.skipIf(TARGET === "cluster")("an embedded server that stops", () => {
  for (const host of ["uws", "node"] as const) {
    it(`answers /readyz 503 from the start of its close, serves on for MEDIA_DRAIN_DELAY_SECONDS, then closes its port (${host})`, async () => {
      const own = await startHarness({ MEDIA_DRAIN_DELAY_SECONDS: "2", MEDIA_HTTP_SERVER: host, MEDIA_METRICS_PORT: String(freePort()) });
      const base = own.base;
      const metrics = `http://127.0.0.1:${own.config.metricsPort}`;
      expect((await probe(`${base}/readyz`)).status).toBe(200);
      // A call in flight across the listener's close: its body's last byte comes after it.
      let finish: () => void = () => undefined;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("{"));
          finish = () => (controller.enqueue(new TextEncoder().encode("}")), controller.close());
        },
      });
      const inFlight = fetch(`${base}/media.v1.APIKeyService/List`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${own.boot.api_key}`, "x-organization-id": own.boot.organization_id },
        body,
        duplex: "half",
      } as RequestInit);
      await new Promise((r) => setTimeout(r, 200));
      const started = Date.now();
      const closed = own.server.close();
      // The first answer after the close began is already the drain's.
      expect(await probe(`${base}/readyz`)).toMatchObject({ status: 503, body: { status: "draining", checks: [] } });
      expect(await probe(`${metrics}/readyz`)).toMatchObject({ status: 503, body: { status: "draining" } });
      // Everything else is still served while the delay runs: liveness, and the API.
      expect((await probe(`${base}/healthz`)).status).toBe(200);
      await ok(call(base, "APIKeyService/List", {}, { bearer: own.boot.api_key, org: own.boot.organization_id }));
      // The listener closes after the delay; the call in flight still gets its answer.
      await until("the listener closed", async () => ((await accepts(own.server.port)) ? undefined : true), 5_000);
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
      finish();
      const answer = await inFlight;
      expect(answer.status, await answer.clone().text()).toBe(200);
      expect((await answer.json()).api_keys.length).toBeGreaterThan(0);
      await closed;
    });
  }
});
