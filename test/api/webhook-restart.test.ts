// Webhook deliveries survive a restart: deliveries pending against a failing receiver are still
// delivered after the service stops and starts again on the same folder, each exactly once to the
// receiver once it answers 2xx. The real process, stopped and started (the cluster's whole-cluster
// restart is covered by test/cluster/restart.test.ts for state in general).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, freePort, until, readBootstrap, spawnServer, tempDataDir, TARGET, type ChildServer } from "../harness.js";
import { makeTestCa, type TestCa } from "../peers.js";
import { startRecordingReceiver, type RecordingReceiver } from "../receivers.js";

describe.skipIf(TARGET === "cluster")("webhook deliveries across a restart", () => {
  const dataDir = tempDataDir();
  let server: ChildServer | undefined;
  let ca: TestCa;
  let receiver: RecordingReceiver;
  const env = () => ({ MEDIA_NET_ALLOW: "127.0.0.1/32", MEDIA_TLS_CA_FILE: ca.caFile, MEDIA_WEBHOOK_RETRY_SCALE: "0.0001", MEDIA_WEBHOOK_TIMEOUT_MS: "10000" });

  beforeAll(async () => {
    ca = makeTestCa();
    receiver = await startRecordingReceiver(ca, { behaviour: { status: 503 } });
  });
  afterAll(async () => {
    await server?.stop("SIGKILL");
    await receiver?.stop();
  });

  it("delivers every pending event after a restart, none twice once it was answered 2xx", async () => {
    server = await spawnServer(dataDir, freePort(), env());
    const boot = readBootstrap(dataDir);
    const auth = { bearer: boot.api_key, org: boot.organization_id };
    const created = await call(server.base, "WebhookService/CreateWebhookEndpoint", { url: `${receiver.url}/restart`, enabled_events: ["*"] }, auth);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const endpointId = created.body.endpoint.id as string;
    receiver.setSecrets([created.body.endpoint.secret]);
    const sent: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await call(server.base, "WebhookService/SendTestWebhook", { endpoint_id: endpointId, event_type: "job.succeeded" }, auth);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      sent.push(r.body.delivery.event_id);
    }
    // Every delivery has failed at least once and waits for its retry.
    await receiver.waitFor(5, 20_000);
    expect(await server.stop("SIGTERM")).toBe(0);

    receiver.respond("ok");
    const failedBefore = receiver.requests.length;
    server = await spawnServer(dataDir, freePort(), env());
    await receiver.waitFor(failedBefore + 5, 60_000);
    // Outcomes are journaled after the receiver answered: wait for all five records, then a
    // moment more for any duplicate (there must be none) to arrive.
    await until("five succeeded deliveries", async () => {
      const list = await call(server!.base, "WebhookService/ListWebhookDeliveries", { endpoint_id: endpointId }, auth);
      return list.body.deliveries.filter((d: any) => d.status === "succeeded").length === 5 ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, 1500));
    const answered = receiver.requests.filter((q) => q.behaviour === "ok");
    // Each event once with 2xx, all verified.
    expect(answered.map((q) => q.headers["webhook-id"]).sort()).toEqual([...sent].sort());
    expect(answered.every((q) => q.verified)).toBe(true);
    const list = await call(server.base, "WebhookService/ListWebhookDeliveries", { endpoint_id: endpointId }, auth);
    expect(list.body.deliveries.filter((d: any) => d.status === "succeeded")).toHaveLength(5);
  });
});
