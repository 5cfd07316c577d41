// pending_webhooks over a real embedded store: exact before, during and after the fan-out.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { EVENT_FANOUT, ledgerWrites, type EventRecord } from "./ledger.js";
import { EVENT_DELIVERIES, WEBHOOK_ENDPOINTS, type DeliveryRecord, type EndpointRecord } from "./webhook-endpoint/messages.js";
import { sortKey } from "../src/pagination.js";
import { FileStore } from "../src/store/file-store.js";
import { fanoutDeliveryId, pendingWebhooks } from "./fanout.js";

const endpoint = (id: string, over: Partial<EndpointRecord> = {}): EndpointRecord => ({
  id,
  appId: "app_1",
  organizationId: "org_1",
  url: `https://hooks.example.test/${id}`,
  enabledEvents: ["*"],
  status: "enabled",
  apiVersion: "2026-11-01",
  metadata: {},
  secrets: [],
  createdAt: 100,
  updatedAt: 100,
  health: [],
  ...over,
});

const event: EventRecord = {
  id: "evt_1",
  appId: "app_1",
  organizationId: "org_1",
  type: "job.succeeded",
  subject: { kind: "test", data: {} },
  requestId: "req_1",
  apiVersion: "2026-11-01",
  createdAt: 1000,
};

const delivery = (endpointId: string, status: DeliveryRecord["status"]): DeliveryRecord => ({
  id: fanoutDeliveryId(event.id, endpointId),
  endpointId,
  appId: "app_1",
  eventId: event.id,
  eventType: event.type,
  status,
  attempt: status === "pending" ? 0 : 1,
  responseHeaders: "{}",
  test: false,
  createdAt: 1001,
  updatedAt: 1001,
});

describe("pending_webhooks", () => {
  let store: FileStore;
  beforeEach(async () => {
    store = new FileStore(mkdtempSync(path.join(tmpdir(), "fanout-")));
    await store.open();
    const endpoints = [
      endpoint("we_a"),
      endpoint("we_b", { enabledEvents: ["job.succeeded"] }),
      endpoint("we_failed_only", { enabledEvents: ["job.failed"] }),
      endpoint("we_disabled", { status: "disabled", disabledReason: "manual" }),
      endpoint("we_later", { createdAt: 2000 }), // created after the event happened
    ];
    await store.commit({
      writes: endpoints.map((e) => ({ table: WEBHOOK_ENDPOINTS, id: e.id, value: e, partition: e.appId, sort: sortKey(e.createdAt, e.id) })),
    });
    await store.commit({ writes: ledgerWrites(event) });
  });

  const put = (d: DeliveryRecord) =>
    store.commit({ writes: [{ table: EVENT_DELIVERIES, id: d.id, value: d, partition: d.eventId, sort: sortKey(d.createdAt, d.id) }] });

  it("counts the endpoints an event is still to be handed to, before its fan-out", async () => {
    expect(await pendingWebhooks(store, event)).toBe(2);
  });

  it("counts each endpoint once while the fan-out is under way, settled ones not at all", async () => {
    await put(delivery("we_a", "succeeded"));
    expect(await pendingWebhooks(store, event)).toBe(1);
    await put(delivery("we_b", "failed"));
    expect(await pendingWebhooks(store, event)).toBe(1);
  });

  it("after the fan-out, counts only the deliveries still open", async () => {
    // we_b was disabled before its enqueue arrived: it has no delivery and waits for none.
    await put(delivery("we_a", "pending"));
    expect(await pendingWebhooks(store, event)).toBe(2);
    await store.commit({ writes: [{ table: EVENT_FANOUT, id: event.id, value: null }] });
    expect(await pendingWebhooks(store, event)).toBe(1);
    await put(delivery("we_a", "succeeded"));
    expect(await pendingWebhooks(store, event)).toBe(0);
  });
});
