// Traces of the embedded service as an operator turns them on (`media serve` with an OTLP
// endpoint, exporting to the tests' real OTLP receiver): the gateway's RPC span continues the
// caller's traceparent, names the answer's x-request-id, and a call without one starts a trace.
// The cluster's one trace across processes is test/cluster/traces.test.ts.
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, freePort, readBootstrap, spawnServer, tempDataDir, TARGET, until, type ChildServer } from "../harness.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../otlp-receiver.js";

let receiver: OtlpReceiver;
let server: ChildServer;

// One embedded process either way: the api-cluster run has nothing to add here.
describe.skipIf(TARGET === "cluster")("traces of the embedded service", () => {
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    server = await spawnServer(tempDataDir(), freePort(), { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "100" });
  });
  afterAll(async () => {
    await server?.stop();
    if (server) rmSync(server.dataDir, { recursive: true, force: true });
    await receiver?.stop();
  });

  const spanOf = (traceId: string, name: string) =>
    until(`the ${name} span of trace ${traceId}`, async () => (await receiver.spans()).find((s) => s.trace_id === traceId && s.name === name), 15_000);

  it("continues an incoming traceparent with the RPC's SERVER span", async () => {
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const parent = "b7ad6b7169203331";
    const boot = readBootstrap(server.dataDir);
    const res = await call(
      server.base,
      "APIKeyService/List",
      {},
      { bearer: boot.api_key, org: boot.organization_id, headers: { traceparent: `00-${traceId}-${parent}-01` } },
    );
    expect(res.status).toBe(200);
    const span: ReceivedSpan = await spanOf(traceId, "media.v1.APIKeyService/List");
    expect(span.parent_span_id).toBe(parent);
    expect(span.kind).toBe("SPAN_KIND_SERVER");
    expect(span.attributes).toMatchObject({ "rpc.system": "connect_rpc", "rpc.service": "media.v1.APIKeyService", "rpc.method": "List" });
    expect(span.attributes["media.request_id"]).toBe(res.headers.get("x-request-id"));
    expect(span.resource).toMatchObject({ "service.name": "media", "media.roles": "gateway,actor-host,encoder-node" });
  });

  it("starts a trace of its own for a call without one, and marks a refused call with its code", async () => {
    const before = new Set((await receiver.spans()).map((s) => s.span_id));
    const res = await call(server.base, "APIKeyService/List", {});
    expect(res.status).toBe(401);
    const span = await until("the refused call's span", async () =>
      (await receiver.spans()).find((s) => !before.has(s.span_id) && s.attributes["media.request_id"] === res.headers.get("x-request-id")),
    );
    expect(span.parent_span_id).toBe("");
    expect(span.attributes["rpc.connect_rpc.error_code"]).toBe("unauthenticated");
  });
});
