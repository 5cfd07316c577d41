// The webhook endpoint actor's rules without I/O: configuration, enqueueing, attempts, exhaustion,
// the auto-disable, health, and the rows each change writes.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { sortKey } from "../../src/pagination.js";
import { API_VERSION } from "../ledger.js";
import { WebhookEndpointBehavior as B, type EndpointEvent } from "./webhook-endpoint.js";
import {
  activeSecrets,
  endpointHealth,
  EVENT_DELIVERIES,
  MAX_ATTEMPTS,
  PENDING_DELIVERIES,
  PENDING_PARTITION,
  subscribes,
  WEBHOOK_ENDPOINTS,
  WEBHOOK_DELIVERIES,
  type EndpointCommand,
  type EndpointRecord,
  type EndpointState,
} from "./messages.js";

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
/** The create that decides `endpoint`. */
const create: EndpointCommand = {
  type: "create",
  id: "we_1",
  at: 0,
  request: {
    appId: "app_1",
    organizationId: "org_1",
    url: "https://hooks.example.test/in",
    enabledEvents: ["*"],
    apiVersion: "2026-11-01",
    metadata: {},
    sealedSecret: "sealed",
  },
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
  ...Array.from({ length: MAX_ATTEMPTS }, (_, i) => ({
    type: "attempted" as const,
    at: at + i + 1,
    deliveryId,
    attempt: i + 1,
    outcome: failed,
    retryDelayMs: 10,
  })),
];

describe("webhook endpoint actor", () => {
  const created = run([create]).state;

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
    expect(B.decide(state, { type: "test", at: 400, event: { id: "evt_x", type: "job.failed" }, deliveryId: "whd_4" })).toMatchObject({
      code: expect.any(Number),
    });
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

describe("webhook endpoint configuration", () => {
  const created = run([create]).state;
  const decide = (state: EndpointState, c: EndpointCommand) => B.decide(state, c);

  it("a create decides the record: enabled, each event type once, its first secret, created when asked, the current API version unless pinned", () => {
    expect(created.endpoint).toStrictEqual(endpoint);
    const asked = run([
      {
        type: "create",
        id: "we_2",
        at: 50,
        request: {
          appId: "app_1",
          organizationId: "org_1",
          url: "https://x.test/",
          description: "ci",
          enabledEvents: ["job.failed", "video.ready", "job.failed"],
          metadata: { team: "a" },
          sealedSecret: "s",
        },
      },
    ]).state.endpoint!;
    expect(asked).toStrictEqual({
      id: "we_2",
      appId: "app_1",
      organizationId: "org_1",
      url: "https://x.test/",
      description: "ci",
      enabledEvents: ["job.failed", "video.ready"],
      status: "enabled",
      apiVersion: API_VERSION,
      metadata: { team: "a" },
      secrets: [{ sealed: "s", createdAt: 50 }],
      createdAt: 50,
      updatedAt: 50,
      health: [],
    });
  });

  it("exists once; every other command needs it, and only attempts and resumes reach a deleted one", () => {
    expect(decide(created, create)).toEqual({ code: Code.AlreadyExists, message: "webhook endpoint we_1 exists" });
    const missing = { code: Code.NotFound, message: "webhook endpoint not found" };
    const others: EndpointCommand[] = [
      { type: "update", at: 1 },
      { type: "delete", at: 1 },
      { type: "rotate", at: 1, sealed: "s2", overlapMs: 10 },
      { type: "enqueue", at: 1, event: { id: "evt_1", type: "job.failed" }, deliveryId: "whd_1" },
      { type: "test", at: 1, event: { id: "evt_1", type: "job.failed" }, deliveryId: "whd_1" },
      { type: "attempted", at: 1, deliveryId: "whd_1", attempt: 1, outcome: failed, retryDelayMs: 1 },
      { type: "resume" },
    ];
    for (const c of others) expect(decide(B.initial, c), c.type).toEqual(missing);
    const deleted = run([{ type: "delete", at: 50 }], created).state;
    expect(deleted.endpoint).toMatchObject({ deletedAt: 50, updatedAt: 50 });
    for (const c of others.slice(0, 5)) expect(decide(deleted, c), c.type).toEqual(missing);
    expect(decide(deleted, { type: "resume" })).toEqual([]);
    expect(decide(deleted, others[5]!)).toEqual([]);
    expect(B.fold(B.initial, { type: "deleted", at: 1 })).toBe(B.initial);
  });

  it("an update changes only what it names; disabling is manual, enabling clears the reason and the failure counts", () => {
    expect(decide(created, { type: "update", at: 5 })).toStrictEqual([{ type: "updated", at: 5 }]);
    expect(run([{ type: "update", at: 5, enabledEvents: ["job.failed"] }], created).state.endpoint).toStrictEqual({
      ...endpoint,
      updatedAt: 5,
      enabledEvents: ["job.failed"],
    });
    const changed = run([{ type: "update", at: 5, description: "", enabledEvents: ["job.failed"], metadata: { a: "b" } }], created).state;
    expect(changed.endpoint).toEqual({ ...endpoint, updatedAt: 5, description: "", enabledEvents: ["job.failed"], metadata: { a: "b" } });
    const disabled = run([{ type: "update", at: 6, status: "disabled" }], changed).state;
    expect(disabled.endpoint).toMatchObject({ status: "disabled", disabledReason: "manual", enabledEvents: ["job.failed"] });
    const failing: EndpointState = { ...disabled, consecutiveFailedAttempts: 7, firstFailureAt: 3, consecutiveExhausted: 2 };
    const enabled = run([{ type: "update", at: 7, status: "enabled" }], failing).state;
    expect(enabled.endpoint).toMatchObject({ status: "enabled", disabledReason: undefined, updatedAt: 7 });
    expect(enabled).toMatchObject({ consecutiveFailedAttempts: 0, firstFailureAt: undefined, consecutiveExhausted: 0 });
    const renamed = run([{ type: "update", at: 8, description: "x" }], failing).state;
    expect(renamed).toMatchObject({ consecutiveFailedAttempts: 7, firstFailureAt: 3, consecutiveExhausted: 2 });
    expect(renamed.endpoint).toMatchObject({ status: "disabled", disabledReason: "manual" });
  });

  it("a rotation signs with the new secret first and keeps the current one until the overlap ends; older ones go", () => {
    expect(decide(created, { type: "rotate", at: 100, sealed: "s2", overlapMs: 50 })).toEqual([
      { type: "rotated", at: 100, sealed: "s2", previousExpiresAt: 150 },
    ]);
    const twice = run(
      [
        { type: "rotate", at: 100, sealed: "s2", overlapMs: 50 },
        { type: "rotate", at: 200, sealed: "s3", overlapMs: 60 },
      ],
      created,
    ).state;
    expect(twice.endpoint).toMatchObject({ lastRotatedAt: 200, updatedAt: 200 });
    expect(twice.endpoint!.secrets).toEqual([
      { sealed: "s3", createdAt: 200 },
      { sealed: "s2", createdAt: 100, expiresAt: 260 },
    ]);
    expect(activeSecrets(twice.endpoint!, 259).map((s) => s.sealed)).toEqual(["s3", "s2"]);
    expect(activeSecrets(twice.endpoint!, 260).map((s) => s.sealed)).toEqual(["s3"]);
    // An endpoint without a secret (journals older than the first secret at create) gets one unexpiring.
    const bare = run(
      [{ type: "rotate", at: 1, sealed: "s1", overlapMs: 1 }],
      B.fold(B.initial, { type: "created", endpoint: { ...endpoint, secrets: [] } }),
    ).state;
    expect(bare.endpoint!.secrets).toEqual([{ sealed: "s1", createdAt: 1 }]);
  });
});

describe("webhook deliveries", () => {
  const created = run([create]).state;
  const event = (id: string, type = "job.failed") => ({ id, type });
  const enqueue = (id: string, at = 10, force?: boolean): EndpointCommand => ({
    type: "enqueue",
    at,
    event: event(id),
    deliveryId: `whd_${id}`,
    ...(force !== undefined ? { force } : {}),
  });

  it("enqueues an event once, as a pending delivery due now, unless forced again", () => {
    const { state, events } = run([enqueue("e1"), enqueue("e1"), enqueue("e1", 20, true)], created);
    expect(events.map((e) => e.length)).toEqual([1, 0, 1]);
    expect(state.open["whd_e1"]).toEqual({
      id: "whd_e1",
      endpointId: "we_1",
      appId: "app_1",
      eventId: "e1",
      eventType: "job.failed",
      status: "pending",
      attempt: 0,
      responseHeaders: "{}",
      nextAttemptAt: 20,
      test: false,
      createdAt: 20,
      updatedAt: 20,
    });
    expect(state.recentEvents).toEqual(["e1", "e1"]);
    expect(B.effects!(state, events[0]!, enqueue("e1"), created)).toEqual([{ kind: "deliveries" }]);
    expect(B.effects!(state, [], enqueue("e1"), created)).toEqual([]);
    expect(B.effects!(state, [], { type: "resume" }, created)).toEqual([{ kind: "deliveries" }]);
    expect(B.effects!(B.initial, [], { type: "resume" }, B.initial)).toEqual([]);
  });

  it("remembers the last 1000 events", () => {
    const many = Array.from({ length: 1001 }, (_, i) => enqueue(`e${i}`));
    const { state } = run(many, created);
    expect(state.recentEvents).toHaveLength(1000);
    expect(state.recentEvents[0]).toBe("e1");
    expect(B.decide(state, enqueue("e0"))).toHaveLength(1);
    expect(B.decide(state, enqueue("e1"))).toEqual([]);
  });

  it("a disabled or unsubscribed endpoint takes nothing, and refuses a forced resend", () => {
    const only = run([{ type: "update", at: 1, enabledEvents: ["job.succeeded"] }], created).state;
    expect(subscribes(only.endpoint!, "job.succeeded")).toBe(true);
    expect(B.decide(only, enqueue("e1"))).toEqual([]);
    expect(B.decide(only, enqueue("e1", 10, true))).toEqual({
      code: Code.FailedPrecondition,
      message: "webhook endpoint we_1 is disabled or not subscribed to job.failed",
    });
    expect(B.decide(only, { type: "enqueue", at: 1, event: event("e2", "job.succeeded"), deliveryId: "d" })).toHaveLength(1);
    const off = run([{ type: "update", at: 1, status: "disabled" }], created).state;
    expect(B.decide(off, enqueue("e1"))).toEqual([]);
    expect(B.decide(off, enqueue("e1", 10, true))).toMatchObject({ code: Code.FailedPrecondition });
    expect(B.decide(off, { type: "test", at: 1, event: event("t"), deliveryId: "d" })).toEqual({
      code: Code.FailedPrecondition,
      message: "webhook endpoint we_1 is disabled",
    });
  });

  it("allows 10 test deliveries a minute, which are not remembered as events", () => {
    const test = (i: number, at: number): EndpointCommand => ({ type: "test", at, event: event(`t${i}`), deliveryId: `whd_t${i}` });
    const { state } = run(
      Array.from({ length: 10 }, (_, i) => test(i, 1_000 + i)),
      created,
    );
    expect(state.recentEvents).toEqual([]);
    expect(state.testTimes).toHaveLength(10);
    expect(state.open["whd_t0"]).toMatchObject({ test: true, status: "pending" });
    expect(B.decide(state, test(10, 60_999))).toEqual({ code: Code.ResourceExhausted, message: "at most 10 test deliveries per minute per endpoint" });
    expect(B.decide(state, test(10, 61_000))).toHaveLength(1);
    // The fold forgets test times older than a minute.
    expect(run([test(10, 61_005)], state).state.testTimes).toEqual([1_006, 1_007, 1_008, 1_009, 61_005]);
  });

  it("an attempt settles or reschedules its delivery, copying what the receiver said", () => {
    const queued = run([enqueue("e1")], created).state;
    expect(B.decide(queued, { type: "attempted", at: 11, deliveryId: "whd_e1", attempt: 2, outcome: failed, retryDelayMs: 5 })).toEqual([]);
    expect(B.decide(queued, { type: "attempted", at: 11, deliveryId: "whd_x", attempt: 1, outcome: failed, retryDelayMs: 5 })).toEqual([]);
    const outcome = {
      ok: false,
      status: 500,
      responseBody: "no",
      responseHeaders: '{"a":"b"}',
      latencyMs: 12,
      transportError: "reset",
      errorMessage: "boom",
    } as const;
    const retried = run([{ type: "attempted", at: 11, deliveryId: "whd_e1", attempt: 1, outcome, retryDelayMs: 5 }], queued);
    expect(retried.events[0]).toEqual([{ type: "attempted", at: 11, deliveryId: "whd_e1", attempt: 1, outcome, nextAttemptAt: 16 }]);
    const d = {
      id: "whd_e1",
      endpointId: "we_1",
      appId: "app_1",
      eventId: "e1",
      eventType: "job.failed",
      test: false,
      createdAt: 10,
      status: "failed",
      attempt: 1,
      responseHeaders: '{"a":"b"}',
      updatedAt: 11,
      responseStatus: 500,
      responseBody: "no",
      latencyMs: 12,
      transportError: "reset",
      errorMessage: "boom",
      nextAttemptAt: 16,
    };
    expect(retried.state.open["whd_e1"]).toEqual(d);
    expect(retried.state).toMatchObject({ lastSettled: d, consecutiveFailedAttempts: 1, firstFailureAt: 11, consecutiveExhausted: 0 });
    expect(retried.state.endpoint!.health).toEqual([{ hour: 0, attempts: 1, failed: 1 }]);

    const ok = run(
      [{ type: "attempted", at: 3_600_000, deliveryId: "whd_e1", attempt: 2, outcome: { ok: true, responseHeaders: "{}" }, retryDelayMs: 5 }],
      retried.state,
    );
    expect(ok.events[0]![0]).not.toHaveProperty("nextAttemptAt");
    expect(ok.state.open).toEqual({});
    expect(ok.state.lastSettled).toStrictEqual({
      id: "whd_e1",
      endpointId: "we_1",
      appId: "app_1",
      eventId: "e1",
      eventType: "job.failed",
      test: false,
      createdAt: 10,
      status: "succeeded",
      attempt: 2,
      responseHeaders: "{}",
      updatedAt: 3_600_000,
    });
    expect(ok.state).toMatchObject({ consecutiveFailedAttempts: 0, firstFailureAt: undefined, consecutiveExhausted: 0 });
    expect(ok.state.endpoint!.health).toEqual([
      { hour: 0, attempts: 1, failed: 1 },
      { hour: 1, attempts: 1, failed: 0 },
    ]);
    expect(B.fold(B.initial, { type: "attempted", at: 1, deliveryId: "d", attempt: 1, outcome: failed })).toBe(B.initial);
    expect(B.fold(created, { type: "attempted", at: 1, deliveryId: "d", attempt: 1, outcome: failed })).toBe(created);
  });

  it("disables an endpoint whose 50 attempts in a row failed over more than a day, not a disabled one again", () => {
    const day = 24 * 3_600_000;
    const first = 1_000;
    const streak: EndpointState = { ...run([enqueue("e1", 0)], created).state, consecutiveFailedAttempts: 49, firstFailureAt: first };
    const attempt = (at: number): EndpointCommand => ({ type: "attempted", at, deliveryId: "whd_e1", attempt: 1, outcome: failed, retryDelayMs: 5 });
    expect(B.decide(streak, attempt(first + day))).toEqual([expect.not.objectContaining({ autoDisable: true })]);
    expect(B.decide(streak, attempt(first + day + 1))).toEqual([expect.objectContaining({ autoDisable: true })]);
    expect(B.decide({ ...streak, consecutiveFailedAttempts: 48 }, attempt(first + day + 1))).toEqual([expect.not.objectContaining({ autoDisable: true })]);
    // The streak's first failure is this attempt when none came before.
    expect(B.decide({ ...streak, firstFailureAt: undefined }, attempt(first + day + 1))).toEqual([expect.not.objectContaining({ autoDisable: true })]);
    const off = run([{ type: "update", at: 1, status: "disabled" }], streak).state;
    expect(B.decide(off, attempt(first + day + 1))).toEqual([expect.not.objectContaining({ autoDisable: true })]);
    const disabled = run([attempt(first + day + 1)], streak).state;
    expect(disabled.endpoint).toMatchObject({ status: "disabled", disabledReason: "auto_failures", updatedAt: first + day + 1 });
    expect(disabled).toMatchObject({ consecutiveFailedAttempts: 50, firstFailureAt: first });
  });

  it("reports 24 hours of health and keeps 25 hours of buckets", () => {
    const hour = 3_600_000;
    const e: EndpointRecord = {
      ...endpoint,
      health: [
        { hour: 0, attempts: 5, failed: 5 },
        { hour: 1, attempts: 3, failed: 1 },
        { hour: 24, attempts: 1, failed: 0 },
      ],
    };
    expect(endpointHealth(e, 24 * hour - 1)).toEqual({ totalAttempts: 9, failed: 6, successRate: 0.3333 });
    expect(endpointHealth(e, 24 * hour)).toEqual({ totalAttempts: 4, failed: 1, successRate: 0.75 });
    expect(endpointHealth(e, 25 * hour)).toEqual({ totalAttempts: 1, failed: 0, successRate: 1 });
    expect(endpointHealth({ ...endpoint, health: [] }, 0)).toEqual({ totalAttempts: 0, failed: 0, successRate: 1 });
    const state: EndpointState = { ...run([enqueue("e1")], created).state, endpoint: e };
    const later = run([{ type: "attempted", at: 25 * hour, deliveryId: "whd_e1", attempt: 1, outcome: failed, retryDelayMs: 5 }], state).state;
    expect(later.endpoint!.health).toEqual([
      { hour: 1, attempts: 3, failed: 1 },
      { hour: 24, attempts: 1, failed: 0 },
      { hour: 25, attempts: 1, failed: 1 },
    ]);
    const same = run([{ type: "attempted", at: 24 * hour + 5, deliveryId: "whd_e1", attempt: 1, outcome: failed, retryDelayMs: 5 }], state).state;
    expect(same.endpoint!.health).toEqual([
      { hour: 0, attempts: 5, failed: 5 },
      { hour: 1, attempts: 3, failed: 1 },
      { hour: 24, attempts: 2, failed: 1 },
    ]);
  });

  it("keeps its table names: stored endpoints and deliveries are found by them", () => {
    expect([WEBHOOK_ENDPOINTS, WEBHOOK_DELIVERIES, EVENT_DELIVERIES, PENDING_DELIVERIES, PENDING_PARTITION, B.type]).toEqual([
      "webhook_endpoints",
      "webhook_deliveries",
      "event_deliveries",
      "pending_deliveries",
      "all",
      "webhook_endpoint",
    ]);
  });

  it("writes each delivery by endpoint, by event and, while it has an attempt to come, as pending", () => {
    const sort = sortKey(10, "whd_e1");
    const queued = run([enqueue("e1")], created).state;
    const writes = B.readModel(queued, { type: "enqueued", at: 10, event: event("e1"), deliveryId: "whd_e1", test: false });
    expect(writes).toEqual([
      { table: WEBHOOK_DELIVERIES, id: "whd_e1", value: queued.open["whd_e1"], partition: "we_1", sort },
      { table: EVENT_DELIVERIES, id: "whd_e1", value: queued.open["whd_e1"], partition: "e1", sort },
      { table: PENDING_DELIVERIES, id: "whd_e1", value: { endpointId: "we_1", deliveryId: "whd_e1", nextAttemptAt: 10 }, partition: PENDING_PARTITION, sort },
    ]);
    expect(B.repair(queued)).toEqual([
      { table: WEBHOOK_ENDPOINTS, id: "we_1", value: queued.endpoint, partition: "app_1", sort: sortKey(0, "we_1") },
      ...writes,
    ]);
    expect(B.repair(B.initial)).toEqual([]);
    const retry: EndpointEvent = { type: "attempted", at: 11, deliveryId: "whd_e1", attempt: 1, outcome: failed, nextAttemptAt: 40 };
    expect(B.readModel(B.fold(queued, retry), retry).at(-1)).toEqual({
      table: PENDING_DELIVERIES,
      id: "whd_e1",
      value: { endpointId: "we_1", deliveryId: "whd_e1", nextAttemptAt: 40 },
      partition: PENDING_PARTITION,
      sort,
    });
    const attempted: EndpointEvent = { type: "attempted", at: 11, deliveryId: "whd_e1", attempt: 1, outcome: { ok: true, responseHeaders: "{}" } };
    const done = B.fold(queued, attempted);
    expect(B.readModel(done, attempted).map((w) => [w.table, w.value === null])).toEqual([
      [WEBHOOK_ENDPOINTS, false],
      [WEBHOOK_DELIVERIES, false],
      [EVENT_DELIVERIES, false],
      [PENDING_DELIVERIES, true],
    ]);
    // A pending delivery written by an older build without its due time is due from its creation.
    const { nextAttemptAt: _, ...undated } = queued.open["whd_e1"]!;
    expect(B.repair({ ...queued, open: { whd_e1: undated } }).at(-1)).toMatchObject({ value: { nextAttemptAt: 10 } });
    expect(B.readModel(done, { ...attempted, deliveryId: "whd_other" }).map((w) => w.table)).toEqual([WEBHOOK_ENDPOINTS]);
    expect(B.readModel(done, { type: "deleted", at: 12 }).map((w) => w.table)).toEqual([WEBHOOK_ENDPOINTS]);
    // Repair writes the last settled delivery's rows again, and an open one's only once.
    expect(B.repair(done).map((w) => [w.table, w.value === null])).toEqual([
      [WEBHOOK_ENDPOINTS, false],
      [WEBHOOK_DELIVERIES, false],
      [EVENT_DELIVERIES, false],
      [PENDING_DELIVERIES, true],
    ]);
    expect(B.repair(B.fold(queued, retry)).map((w) => w.table)).toEqual([WEBHOOK_ENDPOINTS, WEBHOOK_DELIVERIES, EVENT_DELIVERIES, PENDING_DELIVERIES]);
  });
});
