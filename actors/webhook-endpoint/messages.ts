// The webhook endpoint's protocol: its reference, records, commands and read-model tables, and the
// two questions others ask of a record (is it subscribed to a type, which secrets sign now).
// Everything outside actors/webhook-endpoint/ imports this file, never the behaviour.
import { entity } from "../entity.js";

export const WEBHOOK_ENDPOINTS = "webhook_endpoints";
/** Deliveries by endpoint (ListWebhookDeliveries) and by event (pending_webhooks, ResendEvent). */
export const WEBHOOK_DELIVERIES = "webhook_deliveries";
export const EVENT_DELIVERIES = "event_deliveries";
/** Deliveries that will be attempted again, one partition: what an actor host resumes on takeover. */
export const PENDING_DELIVERIES = "pending_deliveries";
export const PENDING_PARTITION = "all";

export { MAX_ATTEMPTS } from "../../src/webhooks/schedule.js";
/** SendTestWebhook calls allowed per endpoint per minute. */
export const TEST_LIMIT_PER_MINUTE = 10;
export interface SecretState {
  /** SecretBox-sealed `whsec_…`. */
  readonly sealed: string;
  readonly createdAt: number;
  /** Set on the previous secret at rotation: it keeps signing until then. */
  readonly expiresAt?: number;
}

export interface EndpointRecord {
  readonly id: string;
  readonly appId: string;
  readonly organizationId: string;
  readonly url: string;
  readonly description?: string;
  readonly enabledEvents: readonly string[];
  readonly status: "enabled" | "disabled";
  readonly disabledReason?: "manual" | "auto_failures";
  readonly apiVersion: string;
  readonly metadata: Readonly<Record<string, string>>;
  /** Newest first. */
  readonly secrets: readonly SecretState[];
  readonly lastRotatedAt?: number;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly deletedAt?: number;
  /** Attempts and failures per hour (epoch hour), the last 25 hours: the rolling health. */
  readonly health: readonly HealthBucket[];
}

export interface HealthBucket {
  readonly hour: number;
  readonly attempts: number;
  readonly failed: number;
}

/** The rolling 24-hour summary of an endpoint's attempts. */
export function endpointHealth(e: EndpointRecord, now: number): { totalAttempts: number; failed: number; successRate: number } {
  const since = Math.floor(now / 3_600_000) - 23;
  const recent = e.health.filter((b) => b.hour >= since);
  const totalAttempts = recent.reduce((s, b) => s + b.attempts, 0);
  const failed = recent.reduce((s, b) => s + b.failed, 0);
  return { totalAttempts, failed, successRate: totalAttempts === 0 ? 1 : Math.round(((totalAttempts - failed) / totalAttempts) * 10_000) / 10_000 };
}

export type DeliveryStatus = "pending" | "succeeded" | "failed" | "exhausted";

export interface DeliveryRecord {
  readonly id: string;
  readonly endpointId: string;
  readonly appId: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly status: DeliveryStatus;
  /** Attempts made so far (0 before the first); shown as the 1-based number of the latest. */
  readonly attempt: number;
  readonly responseStatus?: number;
  readonly responseBody?: string;
  readonly responseHeaders: string;
  readonly latencyMs?: number;
  readonly transportError?: string;
  readonly errorMessage?: string;
  readonly nextAttemptAt?: number;
  /** Synthetic events of SendTestWebhook: no ledger entry, no pending_webhooks. */
  readonly test: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface AttemptOutcome {
  readonly ok: boolean;
  readonly status?: number;
  readonly responseBody?: string;
  readonly responseHeaders: string;
  readonly latencyMs?: number;
  readonly transportError?: string;
  readonly errorMessage?: string;
}

export interface EndpointState {
  readonly endpoint?: EndpointRecord;
  /** Deliveries not yet settled (pending or failed with a next attempt). */
  readonly open: Readonly<Record<string, DeliveryRecord>>;
  readonly recentEvents: readonly string[];
  readonly consecutiveFailedAttempts: number;
  readonly firstFailureAt?: number;
  readonly consecutiveExhausted: number;
  /** Times of recent SendTestWebhook calls, for the per-minute limit. */
  readonly testTimes: readonly number[];
  /** The delivery the last attempt settled, for its read-model rows. */
  readonly lastSettled?: DeliveryRecord;
}

export interface EventRef {
  readonly id: string;
  readonly type: string;
}

/** What a create carries: the caller's fields and the first signing secret, sealed by the gateway that made it. */
export interface EndpointRequest {
  readonly appId: string;
  readonly organizationId: string;
  readonly url: string;
  readonly description?: string;
  /** As asked: the endpoint keeps each once. */
  readonly enabledEvents: readonly string[];
  /** Pinned version; absent: the build's current one. */
  readonly apiVersion?: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly sealedSecret: string;
}

export type EndpointCommand =
  /** id: the endpoint's; at: when it was asked. */
  | { readonly type: "create"; readonly id: string; readonly at: number; readonly request: EndpointRequest }
  | {
      readonly type: "update";
      readonly at: number;
      readonly description?: string;
      readonly enabledEvents?: readonly string[];
      readonly metadata?: Readonly<Record<string, string>>;
      readonly status?: "enabled" | "disabled";
    }
  | { readonly type: "delete"; readonly at: number }
  | { readonly type: "rotate"; readonly at: number; readonly sealed: string; readonly overlapMs: number }
  /** A ledger event for this endpoint; `force` (ResendEvent) enqueues it again. */
  | { readonly type: "enqueue"; readonly at: number; readonly event: EventRef; readonly deliveryId: string; readonly force?: boolean }
  | { readonly type: "test"; readonly at: number; readonly event: EventRef; readonly deliveryId: string }
  | {
      readonly type: "attempted";
      readonly at: number;
      readonly deliveryId: string;
      readonly attempt: number;
      readonly outcome: AttemptOutcome;
      readonly retryDelayMs: number;
    }
  | { readonly type: "resume" };

/** A webhook endpoint entity: asked with an EndpointCommand, it answers its whole state. */
export const WebhookEndpoint = entity<EndpointCommand, EndpointState>("webhook_endpoint");

export const subscribes = (e: EndpointRecord, type: string) => e.enabledEvents.includes("*") || e.enabledEvents.includes(type);
export const activeSecrets = (e: EndpointRecord, now: number) => e.secrets.filter((s) => s.expiresAt === undefined || s.expiresAt > now);
