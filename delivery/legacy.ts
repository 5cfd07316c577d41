// Legacy webhooks: the app-level `webhook` object and the per-job `webhook_url`. Bodies are
// `{event, job_id, app_id, timestamp, data}`; with an app secret, X-Webhook-Signature carries the
// lowercase hex HMAC-SHA256 of the raw body. A failed post (non-2xx or a 30 s timeout) is retried
// after about 1 minute, 10 minutes and 1 hour, then the delivery is failed. Pending posts are rows
// in the store, polled by the actor host that owns the job, so a restart loses none.
import type { JobEvent, JobRecord } from "../actors/job.js";
import { derivedId } from "../actors/ledger.js";
import { messageToJson } from "../wire/codec.js";
import { jobMessage } from "../wire/present-job.js";
import { T, type AppRecord } from "../src/directory.js";
import { JobOutputSchema, JobSchema } from "../src/gen/media/v1/job_pb.js";
import type { Logger } from "../src/log.js";
import type { NetGuard } from "../src/net-guard.js";
import { sortKey } from "../src/pagination.js";
import type { SecretBox } from "../src/secrets.js";
import type { RecordWrite, Store } from "../src/store/port.js";
import { LEGACY_RETRY_DELAYS_MS, LEGACY_TIMEOUT_MS } from "../src/webhooks/schedule.js";
import { legacySignature } from "../src/webhooks/sign.js";
import { postJson } from "../src/webhooks/transport.js";

export const LEGACY_DELIVERIES = "legacy_deliveries";
const PARTITION = "all";

export type LegacyEvent = "job.completed" | "job.failed" | "job.progress" | "job.canceled" | "output.completed" | "output.failed";

interface LegacyDelivery {
  readonly id: string;
  readonly jobId: string;
  readonly url: string;
  /** Sealed app secret; absent for a per-job webhook_url. */
  readonly sealedSecret?: string;
  readonly body: string;
  /** Posts made so far. */
  readonly attempts: number;
  readonly dueAt: number;
  readonly createdAt: number;
}

/** Legacy events of a job change; partial jobs did not finish all outputs, so they are job.failed. */
function legacyEvents(job: JobRecord, event: JobEvent): { event: LegacyEvent; outputId?: string }[] {
  switch (event.type) {
    case "output_progress":
      return [{ event: "job.progress" }];
    case "output_completed":
      return [{ event: "output.completed", outputId: event.outputId }];
    case "output_failed":
      return [{ event: "output.failed", outputId: event.outputId }];
    case "settled":
      return [{ event: job.status === "completed" ? "job.completed" : job.status === "canceled" ? "job.canceled" : "job.failed" }];
    default:
      return [];
  }
}

/** The rows of the legacy posts a job change calls for: to the app's webhook and the job's webhook_url. */
export async function legacyWrites(store: Store, job: JobRecord, events: readonly JobEvent[]): Promise<RecordWrite[]> {
  const happened = events.flatMap((e) => legacyEvents(job, e).map((l) => ({ ...l, at: "at" in e ? e.at : Date.now() })));
  if (happened.length === 0) return [];
  const app = (await store.get<AppRecord>(T.apps, job.appId))?.value;
  // Most jobs have no legacy target: render nothing for their progress.
  if (!app?.webhook && job.webhookUrl === "") return [];
  const message = jobMessage(job);
  const writes: RecordWrite[] = [];
  for (const h of happened) {
    const output = h.outputId ? message.outputs.find((o) => o.id === h.outputId) : undefined;
    const data = output ? messageToJson(JobOutputSchema, output) : messageToJson(JobSchema, message);
    const body = JSON.stringify({ event: h.event, job_id: job.id, app_id: job.appId, timestamp: new Date(h.at).toISOString(), data });
    const targets: { url: string; sealedSecret?: string }[] = [];
    if (app?.webhook && app.webhook.events.includes(h.event)) targets.push({ url: app.webhook.url, ...(app.webhook.sealedSecret ? { sealedSecret: app.webhook.sealedSecret } : {}) });
    if (job.webhookUrl !== "") targets.push({ url: job.webhookUrl });
    for (const t of targets) {
      const id = derivedId("lwh_", `${job.id}:${job.version}:${h.event}:${h.outputId ?? ""}:${t.url}`);
      const row: LegacyDelivery = { id, jobId: job.id, url: t.url, body, attempts: 0, dueAt: h.at, createdAt: h.at, ...(t.sealedSecret ? { sealedSecret: t.sealedSecret } : {}) };
      writes.push({ table: LEGACY_DELIVERIES, id, value: row, partition: PARTITION, sort: sortKey(h.at, id) });
    }
  }
  return writes;
}

/**
 * Posts the due legacy deliveries of the jobs this host owns; retries or fails the ones that fail.
 * Posts run in the background; `inflight` keeps a slow receiver's row from being posted twice.
 */
export async function pollLegacy(store: Store, guard: NetGuard, box: SecretBox, owns: (key: string) => boolean, inflight: Set<string>, retryScale: number, log: Logger): Promise<void> {
  const page = await store.scan<LegacyDelivery>(LEGACY_DELIVERIES, PARTITION, { limit: 200, filter: (d) => d.dueAt <= Date.now() && !inflight.has(d.id) && owns(`job:${d.jobId}`) });
  for (const { value: d } of page.items) {
    inflight.add(d.id);
    void (async () => {
      const secret = d.sealedSecret ? box.decrypt(d.sealedSecret) : undefined;
      const result = await postJson(guard, d.url, d.body, secret ? { "X-Webhook-Signature": legacySignature(secret, d.body) } : {}, { timeoutMs: LEGACY_TIMEOUT_MS });
      const attempts = d.attempts + 1;
      if (result.ok || attempts > LEGACY_RETRY_DELAYS_MS.length) {
        if (!result.ok) log.warn({ job_id: d.jobId, url: d.url, error: result.errorMessage }, "legacy webhook failed after its retries");
        await store.commit({ writes: [{ table: LEGACY_DELIVERIES, id: d.id, value: null }] });
        return;
      }
      const next: LegacyDelivery = { ...d, attempts, dueAt: Date.now() + Math.round(LEGACY_RETRY_DELAYS_MS[attempts - 1]! * retryScale) };
      await store.commit({ writes: [{ table: LEGACY_DELIVERIES, id: d.id, value: next, partition: PARTITION, sort: sortKey(d.createdAt, d.id) }] });
    })()
      .catch((e: unknown) => log.warn({ err: e, job_id: d.jobId }, "legacy webhook not recorded"))
      .finally(() => inflight.delete(d.id));
  }
}
