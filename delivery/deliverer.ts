// The deliverer: runs on each actor host beside the WebhookEndpointActors it owns. After every
// change of an endpoint it (re)arms one timer per open delivery at its next_attempt_at; a timer
// posts the signed envelope and hands the outcome back to the endpoint's actor, which journals it
// and schedules the next attempt. Nothing is kept only in memory: after a restart or a takeover
// the host resumes every open delivery from the store (PENDING_DELIVERIES).
import type { ActorHost } from "../actors/host.js";
import { EVENTS, TEST_EVENTS, type EventRecord } from "../actors/ledger.js";
import {
  activeSecrets,
  PENDING_DELIVERIES,
  PENDING_PARTITION,
  WebhookEndpoint,
  type DeliveryRecord,
  type EndpointRecord,
  type EndpointState,
} from "../actors/webhook-endpoint/messages.js";
import { envelope } from "../wire/present-webhook.js";
import { ownedKeys } from "../actors/commands.js";
import type { Logger } from "../src/log.js";
import { webhookDeliveriesPending, webhookDeliveryAttempts } from "../src/metrics.js";
import type { NetGuard } from "../src/net-guard.js";
import type { SecretBox } from "../src/secrets.js";
import type { Store } from "../src/store/port.js";
import { scaledDelayMs } from "../src/webhooks/schedule.js";
import { mediaSignature } from "../src/webhooks/sign.js";
import { postJson } from "../src/webhooks/transport.js";

export interface DelivererOptions {
  /** Multiplies every retry delay; tests run the whole schedule in seconds. Default 1. */
  readonly retryScale: number;
  readonly timeoutMs: number;
  /** Attempts in flight at once on this host. */
  readonly concurrency?: number;
}

export class Deliverer {
  private readonly timers = new Map<string, { attempt: number; timer: NodeJS.Timeout }>();
  /**
   * The highest attempt started per delivery: a change of another delivery re-schedules from a
   * state that may not yet show an attempt in flight, and that attempt must not start twice.
   */
  private readonly started = new Map<string, number>();
  private readonly waiting: (() => void)[] = [];
  private running = 0;
  private stopped = false;
  /** Timers this deliverer last added to the pending deliveries gauge (a process may hold several deliverers). */
  private counted = 0;

  constructor(
    private readonly store: Store,
    private readonly host: ActorHost,
    private readonly box: SecretBox,
    private readonly guard: NetGuard,
    private readonly log: Logger,
    private readonly options: DelivererOptions,
  ) {}

  /** Arms a timer for every open delivery of the endpoint; disarms those it no longer has. */
  schedule(state: EndpointState): void {
    const e = state.endpoint;
    if (!e || this.stopped) return;
    const open = new Set(Object.keys(state.open));
    for (const [id] of this.started) {
      if (id.startsWith(`${e.id}/`) && !open.has(id.slice(e.id.length + 1))) this.started.delete(id);
    }
    for (const [id, t] of this.timers) {
      if (id.startsWith(`${e.id}/`) && !open.has(id.slice(e.id.length + 1))) {
        clearTimeout(t.timer);
        this.timers.delete(id);
      }
    }
    // A disabled or deleted endpoint keeps its deliveries open but is not called.
    if (e.status !== "enabled" || e.deletedAt !== undefined) {
      for (const id of open) this.disarm(`${e.id}/${id}`);
      this.countPending();
      return;
    }
    for (const d of Object.values(state.open)) {
      if (d.nextAttemptAt === undefined) continue;
      const key = `${e.id}/${d.id}`;
      const armed = this.timers.get(key);
      if (armed && armed.attempt === d.attempt + 1) continue;
      if ((this.started.get(key) ?? 0) >= d.attempt + 1) continue;
      if (armed) clearTimeout(armed.timer);
      const timer = setTimeout(
        () => void this.attempt(e, d).catch((err: unknown) => this.log.error({ err, delivery_id: d.id }, "webhook attempt failed to record")),
        Math.max(0, d.nextAttemptAt - Date.now()),
      );
      this.timers.set(key, { attempt: d.attempt + 1, timer });
    }
    this.countPending();
  }

  /** Stops every timer: another host owns these endpoints now (or this one is stopping). */
  clear(): void {
    for (const t of this.timers.values()) clearTimeout(t.timer);
    this.timers.clear();
    this.started.clear();
    this.countPending();
  }

  stop(): void {
    this.stopped = true;
    this.clear();
  }

  /** Resumes the open deliveries of the endpoints this host owns (their command partitions). */
  async resume(owned: readonly number[], partitions: number): Promise<void> {
    const mine = ownedKeys(owned, partitions);
    const endpoints = new Set<string>();
    let before: string | undefined;
    for (;;) {
      const page = await this.store.scan<{ endpointId: string }>(PENDING_DELIVERIES, PENDING_PARTITION, {
        limit: 500,
        ...(before !== undefined ? { before } : {}),
      });
      for (const row of page.items) {
        if (mine(`${WebhookEndpoint.type}:${row.value.endpointId}`)) endpoints.add(row.value.endpointId);
      }
      if (!page.more) break;
      before = page.items.at(-1)!.sort;
    }
    for (const id of endpoints) await this.host.ask(WebhookEndpoint, id, { type: "resume" });
  }

  private countPending(): void {
    webhookDeliveriesPending.inc(this.timers.size - this.counted);
    this.counted = this.timers.size;
  }

  private disarm(key: string): void {
    const t = this.timers.get(key);
    if (t) clearTimeout(t.timer);
    this.timers.delete(key);
  }

  private async slot(): Promise<() => void> {
    const limit = this.options.concurrency ?? 64;
    if (this.running >= limit) await new Promise<void>((r) => this.waiting.push(r));
    this.running++;
    return () => {
      this.running--;
      this.waiting.shift()?.();
    };
  }

  private async loadEvent(id: string): Promise<EventRecord | undefined> {
    return (await this.store.get<EventRecord>(id.startsWith("evt_test_") ? TEST_EVENTS : EVENTS, id))?.value;
  }

  private async attempt(e: EndpointRecord, d: DeliveryRecord): Promise<void> {
    const key = `${e.id}/${d.id}`;
    const attempt = d.attempt + 1;
    if ((this.started.get(key) ?? 0) >= attempt) return;
    this.started.set(key, attempt);
    const release = await this.slot();
    try {
      if (this.stopped) return;
      const event = await this.loadEvent(d.eventId);
      const now = Date.now();
      const outcome = event
        ? await (async () => {
            const body = JSON.stringify(envelope(event));
            const secrets = activeSecrets(e, now).map((s) => this.box.decrypt(s.sealed));
            const headers = {
              "Media-Signature": mediaSignature(secrets, body, Math.floor(now / 1000)),
              "Webhook-Id": event.id,
              "Webhook-Attempt": String(attempt),
            };
            return postJson(this.guard, e.url, body, headers, { timeoutMs: this.options.timeoutMs });
          })()
        : { ok: false, responseHeaders: "{}", transportError: "unknown" as const, errorMessage: `event ${d.eventId} is not in the ledger` };
      const at = Date.now();
      webhookDeliveryAttempts.inc({ result: outcome.ok ? "success" : "failure" });
      this.timers.delete(key);
      this.countPending();
      const reply = await this.host.ask(WebhookEndpoint, e.id, {
        type: "attempted",
        at,
        deliveryId: d.id,
        attempt,
        outcome: {
          ok: outcome.ok,
          responseHeaders: outcome.responseHeaders,
          ...(outcome.status !== undefined ? { status: outcome.status } : {}),
          ...(outcome.responseBody !== undefined ? { responseBody: outcome.responseBody } : {}),
          ...(outcome.latencyMs !== undefined ? { latencyMs: outcome.latencyMs } : {}),
          ...(outcome.transportError !== undefined ? { transportError: outcome.transportError } : {}),
          ...(outcome.errorMessage !== undefined ? { errorMessage: outcome.errorMessage } : {}),
        },
        retryDelayMs: scaledDelayMs(attempt, this.options.retryScale),
      });
      if (!reply.ok) this.log.warn({ delivery_id: d.id, rejection: reply.rejection }, "webhook attempt outcome refused");
    } finally {
      release();
    }
  }
}
