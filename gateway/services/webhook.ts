// WebhookService: endpoints are changed through their WebhookEndpointActor, which also owns every
// delivery to them (SendTestWebhook and ResendEvent enqueue there); reads come from the read
// models the actor and the ledger keep. Signing secrets are sealed before they leave the gateway
// and shown in plaintext only in the Create and Rotate answers.
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import type { Reply } from "../../actors/host.js";
import { API_VERSION, API_VERSIONS, EVENTS, EVENT_TYPES, TEST_EVENTS, type EventRecord, type EventType } from "../../actors/ledger.js";
import {
  EVENT_DELIVERIES,
  subscribes,
  WEBHOOK_DELIVERIES,
  WEBHOOK_ENDPOINTS,
  WebhookEndpoint,
  type DeliveryRecord,
  type EndpointRecord,
  type EndpointState,
} from "../../actors/webhook-endpoint/messages.js";
import { apiError, failedPrecondition, notFound } from "../../src/errors.js";
import { WebhookEndpointStatus, type WebhookService } from "../../src/gen/media/v1/webhook_pb.js";
import { newId, Prefix, randomToken } from "../../src/ids.js";
import { createdId, IDEMPOTENT_CALL, madeBefore } from "../idempotency.js";
import { NetGuard, NetGuardError } from "../../src/net-guard.js";
import { sortKey } from "../../src/pagination.js";
import { Check } from "../../src/validation.js";
import { pendingWebhooks } from "../../actors/fanout.js";
import { newWebhookSecret } from "../../src/webhooks/sign.js";
import { callerOf, type Caller } from "../access.js";
import { DELIVERY_STATUS_NAMES, deliveryMessage, endpointMessage, eventMessage, healthMessage, sampleEventData } from "../../wire/present-webhook.js";
import { reaches, requireActingApp, visible } from "../tenancy.js";
import type { ServiceDeps } from "./deps.js";
import { JOB_LIMITS } from "./job.js";

export const WEBHOOK_LIMITS = {
  description: 500,
  /** The old secret keeps signing this long after a rotation. */
  secretOverlapMs: 24 * 3600 * 1000,
} as const;

/** Test events outlive every retry of their deliveries (15 attempts span at most about 4.2 days). */
const TEST_EVENT_TTL_MS = 7 * 24 * 3600 * 1000;
const TEST_EVENT_PREFIX = `${Prefix.event}test_`;

const isEventType = (t: string): t is EventType => (EVENT_TYPES as readonly string[]).includes(t);
const isTestEvent = (id: string) => id.startsWith(TEST_EVENT_PREFIX);

function accepted(reply: Reply<EndpointState>): EndpointState & { endpoint: EndpointRecord } {
  if (!reply.ok) throw apiError(reply.rejection.code, reply.rejection.message, reply.rejection.violations);
  if (!reply.state.endpoint) throw notFound("webhook endpoint", "");
  return reply.state as EndpointState & { endpoint: EndpointRecord };
}

/** An endpoint of the caller's organization (and an API key's app); `live` refuses deleted ones. */
async function visibleEndpoint(d: ServiceDeps, caller: Caller, id: string, field: string, live: boolean): Promise<EndpointRecord> {
  new Check().id(field, id, Prefix.webhookEndpoint).done();
  const e = (await d.store.get<EndpointRecord>(WEBHOOK_ENDPOINTS, id))?.value;
  if (!e || !reaches(caller, e) || (live && e.deletedAt !== undefined)) throw notFound("webhook endpoint", id);
  return e;
}

/** A ledger event, or a test event (evt_test_…) for RetrieveEvent and delivery lists. */
async function visibleEvent(d: ServiceDeps, caller: Caller, id: string, field: string): Promise<EventRecord> {
  new Check().id(field, id, Prefix.event).done();
  return visible(caller, (await d.store.get<EventRecord>(isTestEvent(id) ? TEST_EVENTS : EVENTS, id))?.value, "event", id);
}

/** Every endpoint of an app, deleted ones included. */
async function appEndpoints(d: ServiceDeps, appId: string): Promise<EndpointRecord[]> {
  const out: EndpointRecord[] = [];
  let before: string | undefined;
  for (;;) {
    const page = await d.store.scan<EndpointRecord>(WEBHOOK_ENDPOINTS, appId, { limit: 500, ...(before !== undefined ? { before } : {}) });
    out.push(...page.items.map((r) => r.value));
    if (!page.more || page.items.length === 0) return out;
    before = page.items.at(-1)!.sort;
  }
}

function checkEvents(check: Check, field: string, events: readonly string[]): void {
  if (events.length === 0) check.add(field, "must name at least one event type, or * for all");
  events.forEach((t, i) => {
    if (t !== "*" && !isEventType(t)) check.add(`${field}[${i}]`, `unknown event type "${t}"; expected * or one of ${EVENT_TYPES.join(", ")}`);
  });
}

function checkMetadata(check: Check, metadata: Readonly<Record<string, string>>): void {
  const entries = Object.entries(metadata);
  if (entries.length > JOB_LIMITS.metadataEntries) check.add("metadata", `at most ${JOB_LIMITS.metadataEntries} entries`);
  for (const [k, v] of entries) check.length(`metadata.${k}`, k, 1, JOB_LIMITS.metadataKey).length(`metadata.${k}`, v, 0, JOB_LIMITS.metadataValue);
}

/** An https URL of at most 2048 characters whose host resolves only to addresses the guard lets through. */
async function checkUrl(guard: NetGuard, check: Check, field: string, url: string): Promise<void> {
  const before = check.violations.length;
  check.required(field, url);
  if (url !== "") check.httpsUrl(field, url);
  if (check.violations.length > before) return;
  try {
    await guard.check(url);
  } catch (e) {
    if (!(e instanceof NetGuardError)) throw e;
    check.add(field, e.reason === "unresolvable" ? `${e.message}; the URL must resolve to a public address` : e.message);
  }
}

const STATUS_NAMES: Partial<Record<WebhookEndpointStatus, EndpointRecord["status"]>> = {
  [WebhookEndpointStatus.ENABLED]: "enabled",
  [WebhookEndpointStatus.DISABLED]: "disabled",
};

export function webhookService(d: ServiceDeps): ServiceImpl<typeof WebhookService> {
  const guard = d.guard;
  return {
    async createWebhookEndpoint(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check();
      if (req.appId !== "") check.id("app_id", req.appId, Prefix.app);
      await checkUrl(guard, check, "url", req.url);
      check.length("description", req.description, 0, WEBHOOK_LIMITS.description);
      checkEvents(check, "enabled_events", req.enabledEvents);
      checkMetadata(check, req.metadata);
      if (req.apiVersion !== "" && !API_VERSIONS.includes(req.apiVersion))
        check.add("api_version", `unknown API version; expected one of ${API_VERSIONS.join(", ")}`);
      check.done();
      const app = await requireActingApp(d.directory, caller, req.appId);
      if (app.status !== "active") throw failedPrecondition(`app ${app.id} is archived`);
      const secret = newWebhookSecret();
      const now = Date.now();
      const call = ctx.values.get(IDEMPOTENT_CALL);
      const id = createdId(d.box, call, Prefix.webhookEndpoint);
      const request = {
        appId: app.id,
        organizationId: app.organizationId,
        url: req.url,
        ...(req.description !== "" ? { description: req.description } : {}),
        enabledEvents: req.enabledEvents,
        ...(req.apiVersion !== "" ? { apiVersion: req.apiVersion } : {}),
        metadata: req.metadata,
        sealedSecret: d.box.encrypt(secret),
      };
      const reply = await d.actors.ask(WebhookEndpoint, id, { type: "create", id, at: now, request });
      if (call !== undefined && !reply.ok && reply.rejection.code === Code.AlreadyExists) {
        // A retry under the same Idempotency-Key whose first answer was lost: the endpoint it made,
        // with its signing secret, which that caller never saw.
        const made = await madeBefore<EndpointRecord>(d.store, WEBHOOK_ENDPOINTS, id, "webhook endpoint");
        return { endpoint: endpointMessage(made, { secret: d.box.decrypt(made.secrets[0]!.sealed), now }) };
      }
      return { endpoint: endpointMessage(accepted(reply).endpoint, { secret, now }) };
    },

    async retrieveWebhookEndpoint(req, ctx) {
      // A deleted endpoint stays readable, with deleted true: its delivery history is kept too.
      return { endpoint: endpointMessage(await visibleEndpoint(d, callerOf(ctx.values), req.id, "id", false)) };
    },

    async updateWebhookEndpoint(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check().id("id", req.id, Prefix.webhookEndpoint);
      check.length("description", req.description, 0, WEBHOOK_LIMITS.description);
      // proto3 cannot tell an empty list or map from an absent one: empty means no change.
      if (req.enabledEvents.length > 0) checkEvents(check, "enabled_events", req.enabledEvents);
      checkMetadata(check, req.metadata);
      const status = STATUS_NAMES[req.status];
      if (req.status !== WebhookEndpointStatus.UNSPECIFIED && !status) check.add("status", "must be enabled or disabled");
      check.done();
      const e = await visibleEndpoint(d, caller, req.id, "id", true);
      const state = accepted(
        await d.actors.ask(WebhookEndpoint, e.id, {
          type: "update",
          at: Date.now(),
          ...(req.description !== "" ? { description: req.description } : {}),
          ...(req.enabledEvents.length > 0 ? { enabledEvents: [...new Set(req.enabledEvents)] } : {}),
          ...(Object.keys(req.metadata).length > 0 ? { metadata: { ...req.metadata } } : {}),
          ...(status ? { status } : {}),
        }),
      );
      return { endpoint: endpointMessage(state.endpoint) };
    },

    async deleteWebhookEndpoint(req, ctx) {
      const e = await visibleEndpoint(d, callerOf(ctx.values), req.id, "id", true);
      const state = accepted(await d.actors.ask(WebhookEndpoint, e.id, { type: "delete", at: Date.now() }));
      return { endpoint: endpointMessage(state.endpoint) };
    },

    async listWebhookEndpoints(req, ctx) {
      const caller = callerOf(ctx.values);
      if (req.appId !== "") new Check().id("app_id", req.appId, Prefix.app).done();
      const app = await requireActingApp(d.directory, caller, req.appId);
      const page = await d.paginator.page<EndpointRecord>(
        WEBHOOK_ENDPOINTS,
        app.id,
        `webhook_endpoints:${app.id}`,
        req.pagination,
        (e) => e.deletedAt === undefined,
      );
      const now = Date.now();
      return { endpoints: page.items.map((r) => endpointMessage(r.value, { health: req.includeHealth, now })), pagination: page.pagination };
    },

    async rotateWebhookSecret(req, ctx) {
      const e = await visibleEndpoint(d, callerOf(ctx.values), req.id, "id", true);
      const secret = newWebhookSecret();
      const at = Date.now();
      const state = accepted(
        await d.actors.ask(WebhookEndpoint, e.id, { type: "rotate", at, sealed: d.box.encrypt(secret), overlapMs: WEBHOOK_LIMITS.secretOverlapMs }),
      );
      return { endpoint: endpointMessage(state.endpoint, { secret, now: at }) };
    },

    async sendTestWebhook(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check().id("endpoint_id", req.endpointId, Prefix.webhookEndpoint);
      if (req.eventType === "") check.add("event_type", "is required");
      else if (req.eventType === "*") check.add("event_type", "must be a concrete event type; * only subscribes to all");
      else if (!isEventType(req.eventType)) check.add("event_type", `unknown event type "${req.eventType}"; expected one of ${EVENT_TYPES.join(", ")}`);
      check.done();
      const type = req.eventType as EventType;
      const e = await visibleEndpoint(d, caller, req.endpointId, "endpoint_id", true);
      const at = Date.now();
      const id = `${TEST_EVENT_PREFIX}${randomToken(24)}`;
      const event: EventRecord = {
        id,
        appId: e.appId,
        organizationId: e.organizationId,
        type,
        subject: { kind: "test", data: sampleEventData(type, e.appId, id, at) },
        requestId: "",
        apiVersion: e.apiVersion,
        createdAt: at,
      };
      // Written before the delivery exists, so the deliverer always finds it; the endpoint may
      // still refuse (disabled, rate limit), and the expiry removes such an unused event.
      await d.store.commit({
        writes: [{ table: TEST_EVENTS, id, value: event, partition: e.appId, sort: sortKey(at, id), expiresAt: at + TEST_EVENT_TTL_MS }],
      });
      const deliveryId = newId(Prefix.delivery);
      const state = accepted(await d.actors.ask(WebhookEndpoint, e.id, { type: "test", at, event: { id, type }, deliveryId }));
      return { delivery: deliveryMessage(await enqueued(d, state, deliveryId)) };
    },

    async listEvents(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check();
      if (req.appId !== "") check.id("app_id", req.appId, Prefix.app);
      if (req.type !== "" && !isEventType(req.type)) check.add("type", `unknown event type "${req.type}"; expected one of ${EVENT_TYPES.join(", ")}`);
      const after = req.createdAfter ? timestampMs(req.createdAfter) : undefined;
      const before = req.createdBefore ? timestampMs(req.createdBefore) : undefined;
      if (after !== undefined && before !== undefined && before <= after) check.add("created_before", "must be later than created_after");
      check.done();
      const app = await requireActingApp(d.directory, caller, req.appId);
      const filter = (ev: EventRecord) =>
        (req.type === "" || ev.type === req.type) && (after === undefined || ev.createdAt >= after) && (before === undefined || ev.createdAt < before);
      const page = await d.paginator.page<EventRecord>(EVENTS, app.id, `events:${app.id}:${req.type}:${after ?? ""}:${before ?? ""}`, req.pagination, filter);
      const events = await Promise.all(page.items.map(async (r) => eventMessage(r.value, await pendingWebhooks(d.store, r.value))));
      return { events, pagination: page.pagination };
    },

    async retrieveEvent(req, ctx) {
      const ev = await visibleEvent(d, callerOf(ctx.values), req.id, "id");
      // Test events never count toward pending_webhooks.
      return { event: eventMessage(ev, ev.subject.kind === "test" ? 0 : await pendingWebhooks(d.store, ev)) };
    },

    async resendEvent(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check().id("id", req.id, Prefix.event);
      if (isTestEvent(req.id)) check.add("id", "test events are not resent; call SendTestWebhook again");
      if (req.endpointId !== "") check.id("endpoint_id", req.endpointId, Prefix.webhookEndpoint);
      check.done();
      const ev = await visibleEvent(d, caller, req.id, "id");
      let targets: EndpointRecord[];
      if (req.endpointId !== "") {
        const e = await visibleEndpoint(d, caller, req.endpointId, "endpoint_id", true);
        if (e.appId !== ev.appId) throw notFound("webhook endpoint", req.endpointId);
        targets = [e];
      } else {
        targets = (await appEndpoints(d, ev.appId)).filter((e) => e.deletedAt === undefined && e.status === "enabled" && subscribes(e, ev.type));
      }
      const at = Date.now();
      const deliveries = await Promise.all(
        targets.map(async (e) => {
          const deliveryId = newId(Prefix.delivery);
          const reply = await d.actors.ask(WebhookEndpoint, e.id, { type: "enqueue", at, event: { id: ev.id, type: ev.type }, deliveryId, force: true });
          // In a fan-out, an endpoint disabled or deleted since it was read is simply not a target.
          if (!reply.ok && req.endpointId === "" && (reply.rejection.code === Code.FailedPrecondition || reply.rejection.code === Code.NotFound))
            return undefined;
          return deliveryMessage(await enqueued(d, accepted(reply), deliveryId));
        }),
      );
      return { deliveries: deliveries.filter((x) => x !== undefined) };
    },

    async listWebhookDeliveries(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check();
      if (req.endpointId === "" && req.eventId === "") check.add("endpoint_id", "endpoint_id or event_id is required");
      if (req.endpointId !== "") check.id("endpoint_id", req.endpointId, Prefix.webhookEndpoint);
      if (req.eventId !== "") check.id("event_id", req.eventId, Prefix.event);
      const status = DELIVERY_STATUS_NAMES[req.status];
      if (req.status !== 0 && !status) check.add("status", "must be pending, succeeded, failed or exhausted");
      check.done();
      // Deleted endpoints keep their history, so they are listable here.
      const endpoint = req.endpointId !== "" ? await visibleEndpoint(d, caller, req.endpointId, "endpoint_id", false) : undefined;
      const event = req.eventId !== "" ? await visibleEvent(d, caller, req.eventId, "event_id") : undefined;
      const appId = (endpoint ?? event)!.appId;
      const filter = (r: DeliveryRecord) => r.appId === appId && (!event || r.eventId === event.id) && (!status || r.status === status);
      const listId = `webhook_deliveries:${req.endpointId}:${req.eventId}:${status ?? ""}`;
      const page = endpoint
        ? await d.paginator.page<DeliveryRecord>(WEBHOOK_DELIVERIES, endpoint.id, listId, req.pagination, filter)
        : await d.paginator.page<DeliveryRecord>(EVENT_DELIVERIES, event!.id, listId, req.pagination, filter);
      return { deliveries: page.items.map((r) => deliveryMessage(r.value)), pagination: page.pagination };
    },

    async getEndpointHealth(req, ctx) {
      return { health: healthMessage(await visibleEndpoint(d, callerOf(ctx.values), req.id, "id", false)) };
    },
  };
}

/** The delivery a command just enqueued: in the state the actor answered with, else in the read model. */
async function enqueued(d: ServiceDeps, state: EndpointState, deliveryId: string): Promise<DeliveryRecord> {
  const found = state.open[deliveryId] ?? (await d.store.get<DeliveryRecord>(WEBHOOK_DELIVERIES, deliveryId))?.value;
  if (!found) throw apiError(Code.Unavailable, `delivery ${deliveryId} was enqueued but cannot be read yet; list the endpoint's deliveries`);
  return found;
}
