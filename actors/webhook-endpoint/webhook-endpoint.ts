// WebhookEndpointActor: one persistent actor per endpoint. It owns the endpoint's configuration,
// its signing secrets (sealed), and the state of every delivery to it: enqueued once per event,
// attempted up to 15 times on a schedule, settled. Attempts themselves run outside the actor (the
// deliverer on the same actor host); their outcomes come back as commands, so every change of a
// delivery is journaled and a restart resumes from the journal.
import { Code } from "@connectrpc/connect";
import { sortKey } from "../../src/pagination.js";
import type { RecordWrite } from "../../src/store/port.js";
import { MAX_ATTEMPTS, shouldAutoDisable } from "../../src/webhooks/schedule.js";
import type { Decision, EntityBehavior } from "../host.js";
import { API_VERSION } from "../ledger.js";
import {
  EVENT_DELIVERIES,
  PENDING_DELIVERIES,
  PENDING_PARTITION,
  TEST_LIMIT_PER_MINUTE,
  WEBHOOK_DELIVERIES,
  WEBHOOK_ENDPOINTS,
  subscribes,
  type AttemptOutcome,
  type DeliveryRecord,
  type DeliveryStatus,
  type EndpointCommand,
  type EndpointRecord,
  type EndpointState,
  type EventRef,
  type HealthBucket,
} from "./messages.js";

/** Event ids remembered per endpoint, so a repeated fan-out of one event enqueues it once. */
const REMEMBERED_EVENTS = 1000;

function countAttempt(health: readonly HealthBucket[], at: number, ok: boolean): HealthBucket[] {
  const hour = Math.floor(at / 3_600_000);
  const kept = health.filter((b) => b.hour > hour - 25);
  const current = kept.find((b) => b.hour === hour) ?? { hour, attempts: 0, failed: 0 };
  return [...kept.filter((b) => b.hour !== hour), { hour, attempts: current.attempts + 1, failed: current.failed + (ok ? 0 : 1) }];
}

export type EndpointEvent =
  | { readonly type: "created"; readonly endpoint: EndpointRecord }
  | {
      readonly type: "updated";
      readonly at: number;
      readonly description?: string;
      readonly enabledEvents?: readonly string[];
      readonly metadata?: Readonly<Record<string, string>>;
      readonly status?: "enabled" | "disabled";
    }
  | { readonly type: "deleted"; readonly at: number }
  | { readonly type: "rotated"; readonly at: number; readonly sealed: string; readonly previousExpiresAt: number }
  | { readonly type: "enqueued"; readonly at: number; readonly event: EventRef; readonly deliveryId: string; readonly test: boolean }
  /** `autoDisable`: this attempt disables the endpoint (auto_failures), in the same write as the attempt. */
  | {
      readonly type: "attempted";
      readonly at: number;
      readonly deliveryId: string;
      readonly attempt: number;
      readonly outcome: AttemptOutcome;
      readonly nextAttemptAt?: number;
      readonly autoDisable?: true;
    }
  /** Journals written before autoDisable rode on the attempt; still folded, no longer decided. */
  | { readonly type: "auto_disabled"; readonly at: number };

const missing = { code: Code.NotFound, message: "webhook endpoint not found" } as const;

/** The record a create decides: enabled, each event type once, its first secret, the current API version unless pinned. */
function endpointOf(c: Extract<EndpointCommand, { type: "create" }>): EndpointRecord {
  const r = c.request;
  return {
    id: c.id,
    appId: r.appId,
    organizationId: r.organizationId,
    url: r.url,
    ...(r.description !== undefined ? { description: r.description } : {}),
    enabledEvents: [...new Set(r.enabledEvents)],
    status: "enabled",
    apiVersion: r.apiVersion ?? API_VERSION,
    metadata: { ...r.metadata },
    secrets: [{ sealed: r.sealedSecret, createdAt: c.at }],
    createdAt: c.at,
    updatedAt: c.at,
    health: [],
  };
}

function decide(state: EndpointState, c: EndpointCommand): Decision<EndpointEvent> {
  if (c.type === "create")
    return state.endpoint ? { code: Code.AlreadyExists, message: `webhook endpoint ${c.id} exists` } : [{ type: "created", endpoint: endpointOf(c) }];
  const e = state.endpoint;
  if (!e || (e.deletedAt !== undefined && c.type !== "attempted" && c.type !== "resume")) return missing;
  switch (c.type) {
    case "update":
      return [
        {
          type: "updated",
          at: c.at,
          ...(c.description !== undefined ? { description: c.description } : {}),
          ...(c.enabledEvents ? { enabledEvents: c.enabledEvents } : {}),
          ...(c.metadata ? { metadata: c.metadata } : {}),
          ...(c.status ? { status: c.status } : {}),
        },
      ];
    case "delete":
      return [{ type: "deleted", at: c.at }];
    case "rotate":
      return [{ type: "rotated", at: c.at, sealed: c.sealed, previousExpiresAt: c.at + c.overlapMs }];
    case "enqueue":
      // Disabled endpoints receive nothing; a repeated fan-out of one event is no change.
      if (e.status !== "enabled" || !subscribes(e, c.event.type))
        return c.force ? { code: Code.FailedPrecondition, message: `webhook endpoint ${e.id} is disabled or not subscribed to ${c.event.type}` } : [];
      if (!c.force && state.recentEvents.includes(c.event.id)) return [];
      return [{ type: "enqueued", at: c.at, event: c.event, deliveryId: c.deliveryId, test: false }];
    case "test": {
      if (e.status !== "enabled") return { code: Code.FailedPrecondition, message: `webhook endpoint ${e.id} is disabled` };
      const recent = state.testTimes.filter((t) => c.at - t < 60_000);
      if (recent.length >= TEST_LIMIT_PER_MINUTE)
        return { code: Code.ResourceExhausted, message: `at most ${TEST_LIMIT_PER_MINUTE} test deliveries per minute per endpoint` };
      return [{ type: "enqueued", at: c.at, event: c.event, deliveryId: c.deliveryId, test: true }];
    }
    case "attempted": {
      const d = state.open[c.deliveryId];
      // An outcome for a settled delivery or an older attempt (a timer that fired twice) is no change.
      if (!d || c.attempt !== d.attempt + 1) return [];
      const final = c.outcome.ok || c.attempt >= MAX_ATTEMPTS;
      // Whether the endpoint keeps failing is judged on this actor's counters, after this attempt.
      const failing =
        !c.outcome.ok &&
        shouldAutoDisable(
          {
            consecutiveFailedAttempts: state.consecutiveFailedAttempts + 1,
            firstFailureAt: state.firstFailureAt ?? c.at,
            consecutiveExhausted: state.consecutiveExhausted + (final ? 1 : 0),
          },
          c.at,
        );
      // One event, one write: a reader never sees the exhausting attempt without the disable it causes.
      return [
        {
          type: "attempted",
          at: c.at,
          deliveryId: c.deliveryId,
          attempt: c.attempt,
          outcome: c.outcome,
          ...(final ? {} : { nextAttemptAt: c.at + c.retryDelayMs }),
          ...(failing && e.status === "enabled" ? { autoDisable: true as const } : {}),
        },
      ];
    }
    case "resume":
      return [];
  }
}

function fold(state: EndpointState, ev: EndpointEvent): EndpointState {
  if (ev.type === "created") return { ...state, endpoint: ev.endpoint };
  const e = state.endpoint;
  if (!e) return state;
  switch (ev.type) {
    case "updated":
      return {
        ...state,
        endpoint: {
          ...e,
          updatedAt: ev.at,
          ...(ev.description !== undefined ? { description: ev.description } : {}),
          ...(ev.enabledEvents ? { enabledEvents: ev.enabledEvents } : {}),
          ...(ev.metadata ? { metadata: ev.metadata } : {}),
          ...(ev.status === "enabled"
            ? { status: "enabled", disabledReason: undefined }
            : ev.status === "disabled"
              ? { status: "disabled", disabledReason: "manual" }
              : {}),
        },
        // Re-enabling starts the failure count afresh.
        ...(ev.status === "enabled" ? { consecutiveFailedAttempts: 0, firstFailureAt: undefined, consecutiveExhausted: 0 } : {}),
      };
    case "deleted":
      return { ...state, endpoint: { ...e, deletedAt: ev.at, updatedAt: ev.at } };
    case "rotated":
      return {
        ...state,
        endpoint: {
          ...e,
          updatedAt: ev.at,
          lastRotatedAt: ev.at,
          // The new secret first; the one that was current signs until the overlap ends; older ones go.
          secrets: [{ sealed: ev.sealed, createdAt: ev.at }, ...(e.secrets[0] ? [{ ...e.secrets[0], expiresAt: ev.previousExpiresAt }] : [])],
        },
      };
    case "enqueued": {
      const d: DeliveryRecord = {
        id: ev.deliveryId,
        endpointId: e.id,
        appId: e.appId,
        eventId: ev.event.id,
        eventType: ev.event.type,
        status: "pending",
        attempt: 0,
        responseHeaders: "{}",
        nextAttemptAt: ev.at,
        test: ev.test,
        createdAt: ev.at,
        updatedAt: ev.at,
      };
      return {
        ...state,
        open: { ...state.open, [d.id]: d },
        recentEvents: ev.test ? state.recentEvents : [...state.recentEvents, ev.event.id].slice(-REMEMBERED_EVENTS),
        testTimes: ev.test ? [...state.testTimes.filter((t) => ev.at - t < 60_000), ev.at] : state.testTimes,
      };
    }
    case "attempted": {
      const d = state.open[ev.deliveryId];
      if (!d) return state;
      const o = ev.outcome;
      const status: DeliveryStatus = o.ok ? "succeeded" : ev.nextAttemptAt !== undefined ? "failed" : "exhausted";
      const next: DeliveryRecord = {
        id: d.id,
        endpointId: d.endpointId,
        appId: d.appId,
        eventId: d.eventId,
        eventType: d.eventType,
        test: d.test,
        createdAt: d.createdAt,
        status,
        attempt: ev.attempt,
        responseHeaders: o.responseHeaders,
        updatedAt: ev.at,
        ...(o.status !== undefined ? { responseStatus: o.status } : {}),
        ...(o.responseBody !== undefined ? { responseBody: o.responseBody } : {}),
        ...(o.latencyMs !== undefined ? { latencyMs: o.latencyMs } : {}),
        ...(o.transportError !== undefined ? { transportError: o.transportError } : {}),
        ...(o.errorMessage !== undefined ? { errorMessage: o.errorMessage } : {}),
        ...(ev.nextAttemptAt !== undefined ? { nextAttemptAt: ev.nextAttemptAt } : {}),
      };
      const open = { ...state.open };
      if (status === "succeeded" || status === "exhausted") delete open[d.id];
      else open[d.id] = next;
      return {
        ...state,
        endpoint: {
          ...e,
          health: countAttempt(e.health, ev.at, o.ok),
          ...(ev.autoDisable ? { status: "disabled" as const, disabledReason: "auto_failures" as const, updatedAt: ev.at } : {}),
        },
        open,
        lastSettled: next,
        consecutiveFailedAttempts: o.ok ? 0 : state.consecutiveFailedAttempts + 1,
        firstFailureAt: o.ok ? undefined : (state.firstFailureAt ?? ev.at),
        consecutiveExhausted: o.ok ? 0 : status === "exhausted" ? state.consecutiveExhausted + 1 : state.consecutiveExhausted,
      };
    }
    case "auto_disabled":
      return { ...state, endpoint: { ...e, status: "disabled", disabledReason: "auto_failures", updatedAt: ev.at } };
  }
}

function deliveryWrites(d: DeliveryRecord): RecordWrite[] {
  const sort = sortKey(d.createdAt, d.id);
  const open = d.status === "pending" || d.status === "failed";
  return [
    { table: WEBHOOK_DELIVERIES, id: d.id, value: d, partition: d.endpointId, sort },
    { table: EVENT_DELIVERIES, id: d.id, value: d, partition: d.eventId, sort },
    open
      ? {
          table: PENDING_DELIVERIES,
          id: d.id,
          value: { endpointId: d.endpointId, deliveryId: d.id, nextAttemptAt: d.nextAttemptAt ?? d.createdAt },
          partition: PENDING_PARTITION,
          sort,
        }
      : { table: PENDING_DELIVERIES, id: d.id, value: null },
  ];
}

/** The effect of an endpoint change: its open deliveries (re)armed on the host that owns it. */
export type EndpointIntent = { readonly kind: "deliveries" };

export const WebhookEndpointBehavior: EntityBehavior<EndpointState, EndpointCommand, EndpointEvent, EndpointIntent> = {
  type: "webhook_endpoint",
  initial: { open: {}, recentEvents: [], consecutiveFailedAttempts: 0, consecutiveExhausted: 0, testTimes: [] },
  decide,
  fold,
  repair(state): RecordWrite[] {
    const e = state.endpoint;
    if (!e) return [];
    // The last attempt's rows too: a host that died right after journaling it had not written them.
    const settled = state.lastSettled && !state.open[state.lastSettled.id] ? deliveryWrites(state.lastSettled) : [];
    return [
      { table: WEBHOOK_ENDPOINTS, id: e.id, value: e, partition: e.appId, sort: sortKey(e.createdAt, e.id) },
      ...Object.values(state.open).flatMap(deliveryWrites),
      ...settled,
    ];
  },
  readModel(state, ev) {
    const e = state.endpoint!;
    const endpointRow: RecordWrite = { table: WEBHOOK_ENDPOINTS, id: e.id, value: e, partition: e.appId, sort: sortKey(e.createdAt, e.id) };
    switch (ev.type) {
      case "enqueued":
        return deliveryWrites(state.open[ev.deliveryId]!);
      case "attempted": {
        const d = state.open[ev.deliveryId] ?? (state.lastSettled?.id === ev.deliveryId ? state.lastSettled : undefined);
        return [endpointRow, ...(d ? deliveryWrites(d) : [])];
      }
      default:
        return [endpointRow];
    }
  },
  effects: (state, events, command) => (state.endpoint && (events.length > 0 || command.type === "resume") ? [{ kind: "deliveries" }] : []),
};
