// Fan-out: a ledger event goes to every enabled endpoint of its app subscribed to its type, as an
// `enqueue` command to each endpoint's actor. It runs as the job's `fanout` intent, so the outbox
// runs it again after a crash; an endpoint enqueues one event once, so a repeated fan-out delivers
// nothing twice. The ledger row's fan-out mark (read by pending_webhooks) goes once every command
// is on the bus.
import { tell, type Topics } from "./commands.js";
import { derivedId, EVENT_FANOUT, type EventRecord } from "./ledger.js";
import { EVENT_DELIVERIES, subscribes, WEBHOOK_ENDPOINTS, WebhookEndpoint, type DeliveryRecord, type EndpointRecord } from "./webhook-endpoint/messages.js";
import type { Bus } from "../src/bus/port.js";
import type { Store } from "../src/store/port.js";

type EventRef = Pick<EventRecord, "id" | "appId" | "type">;

/** The endpoints an event of `type` goes to now: enabled, not deleted, subscribed. */
export async function subscribers(store: Store, appId: string, type: string): Promise<EndpointRecord[]> {
  const out: EndpointRecord[] = [];
  let before: string | undefined;
  for (;;) {
    const page = await store.scan<EndpointRecord>(WEBHOOK_ENDPOINTS, appId, {
      limit: 100,
      ...(before !== undefined ? { before } : {}),
      filter: (e) => e.status === "enabled" && e.deletedAt === undefined && subscribes(e, type),
    });
    out.push(...page.items.map((r) => r.value));
    if (!page.more) return out;
    before = page.items.at(-1)!.sort;
  }
}

/** The delivery a fan-out makes of one event to one endpoint: the same id however often it runs. */
export const fanoutDeliveryId = (eventId: string, endpointId: string): string => derivedId("whd_", `${eventId}:${endpointId}`);

/**
 * `pending_webhooks` of a ledger event: its deliveries not yet settled (pending, or failed with an
 * attempt to come). While the event still waits for its fan-out (its mark is there: just recorded,
 * or its host died before handing it on), the endpoints it will go to count too, those that were
 * there when it happened and have no delivery of it yet.
 */
export async function pendingWebhooks(store: Store, e: Pick<EventRecord, "id" | "appId" | "type" | "createdAt">): Promise<number> {
  const open = (d: DeliveryRecord) => d.status === "pending" || d.status === "failed";
  if (!(await store.get(EVENT_FANOUT, e.id))) return (await store.scan<DeliveryRecord>(EVENT_DELIVERIES, e.id, { limit: 1, filter: open })).total;
  const [targets, made] = await Promise.all([subscribers(store, e.appId, e.type), store.scan<DeliveryRecord>(EVENT_DELIVERIES, e.id, { limit: 1000 })]);
  const existing = new Set(made.items.map((r) => r.id));
  return (
    made.items.filter((r) => open(r.value)).length + targets.filter((t) => t.createdAt <= e.createdAt && !existing.has(fanoutDeliveryId(e.id, t.id))).length
  );
}

export async function fanOut(store: Store, bus: Bus, topics: Topics, events: readonly EventRef[]): Promise<void> {
  for (const event of events) {
    const endpoints = await subscribers(store, event.appId, event.type);
    await Promise.all(
      endpoints.map((e) =>
        tell(bus, topics, WebhookEndpoint, e.id, {
          type: "enqueue",
          at: Date.now(),
          event: { id: event.id, type: event.type },
          deliveryId: fanoutDeliveryId(event.id, e.id),
        }),
      ),
    );
    // The mark has no index row (ledgerWrites): deleting it needs no read of it.
    await store.commit({ writes: [{ table: EVENT_FANOUT, id: event.id, value: null, unindexed: true }] });
  }
}
