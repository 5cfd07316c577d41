// Webhooks of the app: its endpoints, and a form to add one (the URL and the event types it
// receives; its signing secret shown once, with Copy). An endpoint's page (#/webhooks/<id>) shows
// its facts and subscribed events, enables or disables it, sends a test event, lists its deliveries
// (followed while one is pending) with status, response code and time, resends a recent event to
// it, rotates its secret (the new one shown once) and deletes it.
import { timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { useEffect, useState } from "preact/hooks";
import {
  TransportError,
  WebhookDeliveryStatus,
  WebhookEndpointDisabledReason,
  WebhookEndpointStatus,
  type Event as LedgerEvent,
  type WebhookDelivery,
  type WebhookEndpoint,
} from "../../../src/gen/media/v1/webhook_pb.js";
import { api, problemOf, type Problem } from "../api.js";
import { SecretOnce } from "../ui.js";
import type { PageProps } from "../workspace.js";

/** The event catalog (actors/ledger.ts EVENT_TYPES); `*` is every type, present and future. */
const EVENT_TYPES = [
  "job.succeeded",
  "job.failed",
  "job.partial",
  "job.canceled",
  "output.ready",
  "output.failed",
  "video.ready",
  "video.failed",
  "video.uploaded",
  "video.encoded",
  "video.encoding_failed",
] as const;
const ALL = "*";

const DELIVERY: Record<WebhookDeliveryStatus, string> = {
  [WebhookDeliveryStatus.UNSPECIFIED]: "unknown",
  [WebhookDeliveryStatus.PENDING]: "pending",
  [WebhookDeliveryStatus.SUCCEEDED]: "succeeded",
  [WebhookDeliveryStatus.FAILED]: "failed",
  [WebhookDeliveryStatus.EXHAUSTED]: "exhausted",
};
const TRANSPORT: Record<TransportError, string> = {
  [TransportError.UNSPECIFIED]: "",
  [TransportError.TIMEOUT]: "timeout",
  [TransportError.CONNECTION_REFUSED]: "connection refused",
  [TransportError.CONNECTION_RESET]: "connection reset",
  [TransportError.CONNECTION_CLOSED]: "connection closed",
  [TransportError.HOST_UNREACHABLE]: "host unreachable",
  [TransportError.DNS_FAILURE]: "DNS failure",
  [TransportError.TLS_HANDSHAKE_FAILED]: "TLS handshake failed",
  [TransportError.SSRF_BLOCKED]: "blocked address",
  [TransportError.UNKNOWN]: "transport error",
};

const when = (t: Timestamp | undefined) => (t ? new Date(timestampMs(t)).toLocaleString() : "—");
const statusOf = (e: WebhookEndpoint) =>
  e.status === WebhookEndpointStatus.DISABLED
    ? e.disabledReason === WebhookEndpointDisabledReason.AUTO_FAILURES
      ? "disabled after repeated failures"
      : "disabled"
    : "enabled";
const eventsOf = (e: WebhookEndpoint) => (e.enabledEvents.includes(ALL) ? "all events" : e.enabledEvents.join(", "));
const isTestEvent = (id: string) => id.startsWith("evt_test_");
/** The first violation of a field or of its elements (enabled_events[1] counts for enabled_events). */
const fieldError = (p: Problem | undefined, field: string) =>
  p && Object.entries(p.fields).find(([f]) => f === field || f.startsWith(`${field}[`) || f.startsWith(`${field}.`))?.[1];

export function WebhooksPage(props: PageProps) {
  return props.rest ? <EndpointPage {...props} id={decodeURIComponent(props.rest)} /> : <EndpointsPage {...props} />;
}

/** A signing secret shown once, with Copy. */
function Secret({ secret, what }: { secret: string; what: string }) {
  return <SecretOnce secret={secret} lead={`Copy ${what} now: it is shown only once. Receivers check Media-Signature with it.`} />;
}

/** Checkboxes of the event types, "All events" first (which makes the others moot). */
function EventChoice({ chosen, onChange, error, idPrefix }: { chosen: string[]; onChange: (c: string[]) => void; error?: string; idPrefix: string }) {
  const all = chosen.includes(ALL);
  const toggle = (type: string, on: boolean) => onChange(on ? [...chosen.filter((c) => c !== type), type] : chosen.filter((c) => c !== type));
  return (
    <fieldset aria-describedby={error ? `${idPrefix}-events-error` : undefined}>
      <legend>Events to send</legend>
      <label>
        <input type="checkbox" checked={all} onChange={(e) => toggle(ALL, e.currentTarget.checked)} /> All events, present and future
      </label>
      {EVENT_TYPES.map((t) => (
        <label key={t}>
          <input type="checkbox" checked={all || chosen.includes(t)} disabled={all} onChange={(e) => toggle(t, e.currentTarget.checked)} /> <code>{t}</code>
        </label>
      ))}
      {error && (
        <span id={`${idPrefix}-events-error`} class="field-error">
          {error}
        </span>
      )}
    </fieldset>
  );
}

function EndpointsPage({ workspace }: PageProps) {
  const [endpoints, setEndpoints] = useState<WebhookEndpoint[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [url, setUrl] = useState("");
  const [description, setDescription] = useState("");
  const [events, setEvents] = useState<string[]>([]);
  const [created, setCreated] = useState<WebhookEndpoint | undefined>();
  const [problem, setProblem] = useState<Problem | undefined>();

  const refresh = async () => {
    setEndpoints((await api.webhooks.listWebhookEndpoints({ appId: workspace.appId, includeHealth: true, pagination: { limit: 100 } })).endpoints);
    setLoaded(true);
  };
  useEffect(() => {
    void refresh().catch((e: unknown) => setProblem(problemOf(e)));
  }, []);

  const create = async (e: Event) => {
    e.preventDefault();
    setProblem(undefined);
    try {
      const { endpoint } = await api.webhooks.createWebhookEndpoint({
        appId: workspace.appId,
        url: url.trim(),
        description: description.trim(),
        enabledEvents: events.includes(ALL) ? [ALL] : events,
      });
      setCreated(endpoint);
      setUrl("");
      setDescription("");
      setEvents([]);
      await refresh();
    } catch (err) {
      setProblem(problemOf(err));
    }
  };

  const urlError = fieldError(problem, "url");
  const descriptionError = fieldError(problem, "description");
  const eventsError = fieldError(problem, "enabled_events");
  const otherProblem = problem && !urlError && !descriptionError && !eventsError;

  return (
    <>
      <h1>Webhooks</h1>
      <p class="muted">Endpoints receive the app's events as signed HTTPS POSTs.</p>
      {created?.secret && (
        <>
          <Secret secret={created.secret} what="the signing secret of this endpoint" />
          <p>
            <a href={`#/webhooks/${created.id}`}>Open the new endpoint</a> to send it a test event.
          </p>
        </>
      )}
      <section class="card" aria-labelledby="add-endpoint">
        <h2 id="add-endpoint">Add an endpoint</h2>
        <form class="stack" onSubmit={create}>
          <label>
            Endpoint URL
            <input
              type="text"
              inputMode="url"
              placeholder="https://example.com/webhooks/media"
              value={url}
              onInput={(e) => setUrl(e.currentTarget.value)}
              aria-invalid={urlError ? "true" : undefined}
              aria-describedby={urlError ? "url-error" : undefined}
            />
            {urlError && (
              <span id="url-error" class="field-error">
                {urlError}
              </span>
            )}
          </label>
          <label>
            Description (optional)
            <input
              value={description}
              onInput={(e) => setDescription(e.currentTarget.value)}
              aria-invalid={descriptionError ? "true" : undefined}
              aria-describedby={descriptionError ? "description-error" : undefined}
            />
            {descriptionError && (
              <span id="description-error" class="field-error">
                {descriptionError}
              </span>
            )}
          </label>
          <EventChoice chosen={events} onChange={setEvents} error={eventsError} idPrefix="new" />
          <div class="toolbar">
            <button type="submit">Add endpoint</button>
          </div>
        </form>
        {otherProblem && <p role="alert">{problem.message}</p>}
      </section>
      <h2>Endpoints</h2>
      {loaded && endpoints.length === 0 ? (
        <p class="empty">No endpoints yet: add one to receive events.</p>
      ) : (
        <table>
          <caption class="visually-hidden">Webhook endpoints of this app</caption>
          <thead>
            <tr>
              <th scope="col">URL</th>
              <th scope="col">Events</th>
              <th scope="col">Status</th>
              <th scope="col">Success, 24 h</th>
            </tr>
          </thead>
          <tbody>
            {endpoints.map((e) => (
              <tr key={e.id}>
                <td>
                  <a href={`#/webhooks/${e.id}`}>{e.url}</a>
                  {e.description && <div class="muted">{e.description}</div>}
                </td>
                <td>{eventsOf(e)}</td>
                <td>{statusOf(e)}</td>
                <td>{e.health && e.health.totalAttempts > 0 ? `${Math.round(e.health.successRate * 100)} % of ${e.health.totalAttempts}` : "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function EndpointPage({ id }: PageProps & { id: string }) {
  const [endpoint, setEndpoint] = useState<WebhookEndpoint | undefined>();
  const [deliveries, setDeliveries] = useState<WebhookDelivery[]>([]);
  const [events, setEvents] = useState<LedgerEvent[]>([]);
  const [secret, setSecret] = useState("");
  const [testType, setTestType] = useState("");
  const [editing, setEditing] = useState<string[] | undefined>();
  const [notice, setNotice] = useState("");
  const [problem, setProblem] = useState<Problem | undefined>();
  const [gone, setGone] = useState(false);

  const act = async (what: () => Promise<void>) => {
    setProblem(undefined);
    setNotice("");
    try {
      await what();
    } catch (err) {
      setProblem(problemOf(err));
    }
  };

  const loadDeliveries = async () => setDeliveries((await api.webhooks.listWebhookDeliveries({ endpointId: id, pagination: { limit: 50 } })).deliveries);
  const load = async () => {
    const e = (await api.webhooks.retrieveWebhookEndpoint({ id })).endpoint;
    setEndpoint(e);
    if (!e) return;
    setTestType((t) => t || (e.enabledEvents.includes(ALL) ? EVENT_TYPES[0] : (e.enabledEvents[0] ?? EVENT_TYPES[0])));
    await loadDeliveries();
    const all = (await api.webhooks.listEvents({ appId: e.appId, pagination: { limit: 50 } })).events;
    setEvents(all.filter((ev) => e.enabledEvents.includes(ALL) || e.enabledEvents.includes(ev.type)).slice(0, 20));
  };
  useEffect(() => {
    void act(load);
  }, [id]);

  // Pending deliveries are followed until they settle.
  const pending = deliveries.some((d) => d.status === WebhookDeliveryStatus.PENDING);
  useEffect(() => {
    if (!pending) return;
    const timer = setInterval(() => void loadDeliveries().catch(() => undefined), 1000);
    return () => clearInterval(timer);
  }, [pending, id]);

  if (gone)
    return (
      <>
        <h1>Endpoint deleted</h1>
        <p>
          <a href="#/webhooks">Back to the endpoints</a>
        </p>
      </>
    );
  if (!endpoint) {
    return (
      <>
        <p>
          <a href="#/webhooks">← Webhooks</a>
        </p>
        <h1>Webhook endpoint</h1>
        {problem ? <p role="alert">{problem.message}</p> : <p class="loading">Loading…</p>}
      </>
    );
  }

  const enabled = endpoint.status !== WebhookEndpointStatus.DISABLED;
  const testTypes = endpoint.enabledEvents.includes(ALL) ? [...EVENT_TYPES] : endpoint.enabledEvents;

  const setStatus = () =>
    act(async () => {
      const next = enabled ? WebhookEndpointStatus.DISABLED : WebhookEndpointStatus.ENABLED;
      setEndpoint((await api.webhooks.updateWebhookEndpoint({ id, status: next })).endpoint);
      setNotice(enabled ? "Endpoint disabled: no events are sent to it." : "Endpoint enabled.");
    });
  const sendTest = () =>
    act(async () => {
      await api.webhooks.sendTestWebhook({ endpointId: id, eventType: testType });
      setNotice(`Test ${testType} event sent.`);
      await loadDeliveries();
    });
  const resend = (eventId: string) =>
    act(async () => {
      await api.webhooks.resendEvent({ id: eventId, endpointId: id });
      setNotice(`Event ${eventId} sent again.`);
      await loadDeliveries();
    });
  const rotate = () => {
    if (!confirm("Rotate the signing secret? The old one keeps signing for 24 hours, alongside the new one.")) return;
    void act(async () => {
      const e = (await api.webhooks.rotateWebhookSecret({ id })).endpoint;
      setSecret(e?.secret ?? "");
      setEndpoint(e);
    });
  };
  const remove = () => {
    if (!confirm(`Delete the endpoint ${endpoint.url}? It receives no more events; its delivery history is kept.`)) return;
    void act(async () => {
      await api.webhooks.deleteWebhookEndpoint({ id });
      setGone(true);
      location.hash = "#/webhooks";
    });
  };
  const saveEvents = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      const chosen = editing ?? [];
      const updated = (await api.webhooks.updateWebhookEndpoint({ id, enabledEvents: chosen.includes(ALL) ? [ALL] : chosen })).endpoint;
      setEndpoint(updated);
      setEditing(undefined);
      setNotice("Events saved.");
    });
  };
  const eventsError = fieldError(problem, "enabled_events");

  return (
    <>
      <p>
        <a href="#/webhooks">← Webhooks</a>
      </p>
      <h1>Webhook endpoint</h1>
      <section class="card" aria-label="Endpoint">
        <dl class="facts">
          <dt>URL</dt>
          <dd>
            <code>{endpoint.url}</code>
          </dd>
          {endpoint.description && (
            <>
              <dt>Description</dt>
              <dd>{endpoint.description}</dd>
            </>
          )}
          <dt>Status</dt>
          <dd data-endpoint-status>{statusOf(endpoint)}</dd>
          <dt>Events</dt>
          <dd>{eventsOf(endpoint)}</dd>
          <dt>API version</dt>
          <dd>{endpoint.apiVersion}</dd>
          <dt>Created</dt>
          <dd>{when(endpoint.createdAt)}</dd>
          <dt>Secret rotated</dt>
          <dd>
            {endpoint.lastRotatedAt ? when(endpoint.lastRotatedAt) : "never"}
            {endpoint.previousSecretExpiresAt && ` (the previous secret signs too until ${when(endpoint.previousSecretExpiresAt)})`}
          </dd>
          <dt>ID</dt>
          <dd>
            <code>{endpoint.id}</code>
          </dd>
        </dl>
        <div class="toolbar">
          <label>
            Test event{" "}
            <select value={testType} onChange={(e) => setTestType(e.currentTarget.value)}>
              {testTypes.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </label>
          <button type="button" onClick={() => void sendTest()} disabled={!enabled}>
            Send test
          </button>
          <button type="button" class="secondary" onClick={() => void setStatus()}>
            {enabled ? "Disable" : "Enable"}
          </button>
          <button type="button" class="secondary" onClick={() => setEditing(editing ? undefined : [...endpoint.enabledEvents])} aria-expanded={!!editing}>
            Change events
          </button>
          <button type="button" class="secondary" onClick={rotate}>
            Rotate secret
          </button>
          <button type="button" class="danger" onClick={remove}>
            Delete
          </button>
        </div>
        {!enabled && <p class="muted">A disabled endpoint takes no test events: enable it first.</p>}
      </section>
      {secret && <Secret secret={secret} what="the new signing secret" />}
      {notice && (
        <p role="status" class="muted">
          {notice}
        </p>
      )}
      {problem && !eventsError && <p role="alert">{problem.message}</p>}
      {editing && (
        <form class="stack card" onSubmit={saveEvents}>
          <EventChoice chosen={editing} onChange={setEditing} error={eventsError} idPrefix="edit" />
          <div class="toolbar">
            <button type="submit">Save events</button>
            <button type="button" class="secondary" onClick={() => setEditing(undefined)}>
              Cancel
            </button>
          </div>
        </form>
      )}

      <div class="toolbar">
        <h2>Deliveries</h2>
        <button type="button" class="secondary" onClick={() => void act(loadDeliveries)}>
          Refresh
        </button>
      </div>
      {deliveries.length === 0 ? (
        <p class="empty">No deliveries yet: send a test event.</p>
      ) : (
        <table data-deliveries>
          <caption class="visually-hidden">Deliveries to this endpoint, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col">Response</th>
              <th scope="col">Time</th>
              <th scope="col">Attempt</th>
              <th scope="col">Latency</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {deliveries.map((d) => (
              <tr key={d.id} data-delivery={d.id}>
                <td>
                  <code>{d.eventId}</code>
                  {isTestEvent(d.eventId) && <span class="muted"> (test)</span>}
                </td>
                <td data-delivery-status>{DELIVERY[d.status]}</td>
                <td data-response>
                  {d.responseStatus ?? (TRANSPORT[d.transportError] || "—")}
                  {d.errorMessage && d.status !== WebhookDeliveryStatus.SUCCEEDED && <div class="muted">{d.errorMessage}</div>}
                </td>
                <td>{when(d.updatedAt ?? d.createdAt)}</td>
                <td>{d.attempt}</td>
                <td>{d.latencyMs !== undefined ? `${d.latencyMs} ms` : "—"}</td>
                <td>
                  {!isTestEvent(d.eventId) && (
                    <button type="button" class="secondary" onClick={() => void resend(d.eventId)} aria-label={`Resend ${d.eventId}`}>
                      Resend
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h2>Recent events</h2>
      {events.length === 0 ? (
        <p class="empty">No events of its types yet (test events are not listed).</p>
      ) : (
        <table>
          <caption class="visually-hidden">Recent events this endpoint subscribes to, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">Event</th>
              <th scope="col">Time</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {events.map((ev) => (
              <tr key={ev.id}>
                <td>
                  <code>{ev.type}</code>
                </td>
                <td>
                  <code>{ev.id}</code>
                </td>
                <td>{when(ev.createdAt)}</td>
                <td>
                  <button type="button" class="secondary" onClick={() => void resend(ev.id)} aria-label={`Resend ${ev.id}`} disabled={!enabled}>
                    Resend
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
