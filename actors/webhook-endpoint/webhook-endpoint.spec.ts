// The webhook endpoint actor's rules without I/O: attempts, exhaustion and the auto-disable.
import { describe, expect, it } from "vitest";
import { MAX_ATTEMPTS, WEBHOOK_ENDPOINTS, WEBHOOK_DELIVERIES, WebhookEndpointBehavior as B, type EndpointCommand, type EndpointEvent, type EndpointRecord, type EndpointState } from "./webhook-endpoint.js";

const endpoint: EndpointRecord = {
  id: "we_1",
  appId: "app_1",
  organizationId: "org_1",
  url: "https://hooks.example.test/in",
  enabledEvents: ["*"],
  status: "enabled",
  apiVersion: "2026-11-01",
  metadata: {},
  secrets: [{ sealed: "sealed", createdAt: 0 }],
  createdAt: 0,
  updatedAt: 0,
  health: [],
};

/** Runs commands through decide and fold, as the host does, and keeps every event. */
function run(commands: readonly EndpointCommand[], from: EndpointState = B.initial) {
  let state = from;
  const events: EndpointEvent[][] = [];
  for (const c of commands) {
    const d = B.decide(state, c);
    if (!Array.isArray(d)) throw new Error(`rejected: ${JSON.stringify(d)}`);
    events.push([...d]);
    for (const e of d) state = B.fold(state, e);
  }
  return { state, events };
}

const failed = { ok: false, status: 503, responseHeaders: "{}" } as const;
const exhaust = (deliveryId: string, at: number): EndpointCommand[] => [
  { type: "test", at, event: { id: `evt_${deliveryId}`, type: "job.failed" }, deliveryId },
  ...Array.from({ length: MAX_ATTEMPTS }, (_, i) => ({ type: "attempted" as const, at: at + i + 1, deliveryId, attempt: i + 1, outcome: failed, retryDelayMs: 10 })),
];

describe("webhook endpoint actor", () => {
  const created = run([{ type: "create", endpoint }]).state;

  it("exhausts a delivery at the 15th failed attempt, with no next attempt", () => {
    const { state, events } = run(exhaust("whd_1", 100), created);
    const last = events.at(-1)!;
    expect(last).toHaveLength(1);
    expect(last[0]).toMatchObject({ type: "attempted", attempt: MAX_ATTEMPTS });
    expect("nextAttemptAt" in last[0]!).toBe(false);
    expect(state.open).toEqual({});
    expect(state.lastSettled).toMatchObject({ id: "whd_1", status: "exhausted", attempt: MAX_ATTEMPTS });
    expect(state.endpoint!.status).toBe("enabled");
  });

  it("the third exhausted delivery in a row disables the endpoint in the same event, so its rows are written together", () => {
    const { state, events } = run([...exhaust("whd_1", 100), ...exhaust("whd_2", 200), ...exhaust("whd_3", 300)], created);
    const last = events.at(-1)!;
    // One event: the attempt and the disable cannot be seen apart by a reader of the tables.
    expect(last).toEqual([expect.objectContaining({ type: "attempted", deliveryId: "whd_3", autoDisable: true })]);
    expect(state.endpoint).toMatchObject({ status: "disabled", disabledReason: "auto_failures" });
    const writes = B.readModel(state, last[0]!);
    expect(writes.find((w) => w.table === WEBHOOK_ENDPOINTS)?.value).toMatchObject({ status: "disabled", disabledReason: "auto_failures" });
    expect(writes.find((w) => w.table === WEBHOOK_DELIVERIES)?.value).toMatchObject({ id: "whd_3", status: "exhausted" });
    // A disabled endpoint takes no more tests until it is enabled again.
    expect(B.decide(state, { type: "test", at: 400, event: { id: "evt_x", type: "job.failed" }, deliveryId: "whd_4" })).toMatchObject({ code: expect.any(Number) });
  });

  it("a success between exhaustions starts the count afresh", () => {
    const ok = { ok: true, status: 200, responseHeaders: "{}" } as const;
    const { state } = run(
      [
        ...exhaust("whd_1", 100),
        ...exhaust("whd_2", 200),
        { type: "test", at: 250, event: { id: "evt_ok", type: "job.failed" }, deliveryId: "whd_ok" },
        { type: "attempted", at: 251, deliveryId: "whd_ok", attempt: 1, outcome: ok, retryDelayMs: 10 },
        ...exhaust("whd_3", 300),
      ],
      created,
    );
    expect(state.endpoint!.status).toBe("enabled");
    expect(state.consecutiveExhausted).toBe(1);
  });

  it("still folds the auto_disabled event of older journals", () => {
    const state = B.fold(created, { type: "auto_disabled", at: 5 });
    expect(state.endpoint).toMatchObject({ status: "disabled", disabledReason: "auto_failures", updatedAt: 5 });
  });
});
