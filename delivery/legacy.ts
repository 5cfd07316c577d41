// Legacy webhooks: the app-level `webhook` object and the per-job `webhook_url`. Bodies are
// `{event, job_id, app_id, timestamp, data}`; with an app secret, X-Webhook-Signature carries the
// lowercase hex HMAC-SHA256 of the raw body. A failed post (non-2xx or a 30 s timeout) is retried
// after about 1 minute, 10 minutes and 1 hour, then the delivery is failed.
//
// A job's `legacy` intent becomes one row per post, created only if absent (its id derives from
// the job, the journal entry, the event and the target), so an intent run twice posts once. A row
// stays after its last attempt, as a tombstone, for as long as an intent could run again. The host
// that owns the job arms a timer per open row; after a restart or a takeover it re-arms them from
// its shards' rows.
import { partitionFor } from "../src/bus/port.js";
import type { JobRecord, LegacyPost } from "../actors/job/messages.js";
import { derivedId } from "../actors/ledger.js";
import { messageToJson } from "../wire/codec.js";
import { jobMessage } from "../wire/present-job.js";
import { T, type AppRecord } from "../src/directory.js";
import { VersionConflict } from "../src/errors.js";
import { JobOutputSchema, JobSchema } from "../src/gen/media/v1/job_pb.js";
import type { Logger } from "../src/log.js";
import type { NetGuard } from "../src/net-guard.js";
import { sortKey } from "../src/pagination.js";
import type { SecretBox } from "../src/secrets.js";
import type { Store } from "../src/store/port.js";
import { LEGACY_RETRY_DELAYS_MS, LEGACY_TIMEOUT_MS } from "../src/webhooks/schedule.js";
import { legacySignature } from "../src/webhooks/sign.js";
import { postJson } from "../src/webhooks/transport.js";

export const LEGACY_DELIVERIES = "legacy_deliveries";
/** How long a settled row is kept: longer than any outbox entry can wait to run again. */
const TOMBSTONE_MS = 7 * 24 * 3_600_000;

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
  /** Delivered, or failed after its retries: kept only so a repeated intent finds it. */
  readonly settled?: true;
}

export interface LegacyOptions {
  readonly partitions: number;
  readonly retryScale: number;
}

export class LegacyPoster {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Rows being posted: a resume meanwhile must not arm them again. */
  private readonly inflight = new Set<string>();
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly guard: NetGuard,
    private readonly box: SecretBox,
    private readonly log: Logger,
    private readonly options: LegacyOptions,
  ) {}

  /** The rows of a job change's posts, to the app's webhook and the job's webhook_url; each armed. */
  async record(job: JobRecord, seq: number, posts: readonly LegacyPost[]): Promise<void> {
    const app = (await this.store.get<AppRecord>(T.apps, job.appId))?.value;
    // Most jobs have no legacy target: render nothing for their progress.
    if (!app?.webhook && job.webhookUrl === "") return;
    const message = jobMessage(job);
    const partition = this.partitionOf(job.id);
    for (const p of posts) {
      const output = p.outputId ? message.outputs.find((o) => o.id === p.outputId) : undefined;
      const data = output ? messageToJson(JobOutputSchema, output) : messageToJson(JobSchema, message);
      const body = JSON.stringify({ event: p.event, job_id: job.id, app_id: job.appId, timestamp: new Date(p.at).toISOString(), data });
      const targets: { url: string; sealedSecret?: string }[] = [];
      if (app?.webhook && app.webhook.events.includes(p.event))
        targets.push({ url: app.webhook.url, ...(app.webhook.sealedSecret ? { sealedSecret: app.webhook.sealedSecret } : {}) });
      if (job.webhookUrl !== "") targets.push({ url: job.webhookUrl });
      for (const t of targets) {
        const id = derivedId("lwh_", `${job.id}:${seq}:${p.event}:${p.outputId ?? ""}:${t.url}`);
        const row: LegacyDelivery = {
          id,
          jobId: job.id,
          url: t.url,
          body,
          attempts: 0,
          dueAt: p.at,
          createdAt: p.at,
          ...(t.sealedSecret ? { sealedSecret: t.sealedSecret } : {}),
        };
        try {
          await this.store.commit({ writes: [{ table: LEGACY_DELIVERIES, id, value: row, partition, sort: sortKey(p.at, id), expectedVersion: 0 }] });
        } catch (e) {
          if (!(e instanceof VersionConflict)) throw e;
          // Recorded before: this intent ran already, on a host that may have died before posting,
          // and before the row's index entry was written (so a resume's scan would not find it).
          const existing = (await this.store.get<LegacyDelivery>(LEGACY_DELIVERIES, id))?.value;
          if (existing && !existing.settled) this.arm(existing);
          continue;
        }
        this.arm(row);
      }
    }
  }

  /** Arms the open rows of the jobs in these shards (after a start or a takeover). */
  async resume(shards: readonly number[]): Promise<void> {
    for (const shard of shards) {
      let before: string | undefined;
      for (;;) {
        const page = await this.store.scan<LegacyDelivery>(LEGACY_DELIVERIES, `s${shard}`, {
          limit: 500,
          ...(before !== undefined ? { before } : {}),
          filter: (d) => !d.settled,
        });
        for (const { value } of page.items) this.arm(value);
        if (!page.more) break;
        before = page.items.at(-1)!.sort;
      }
    }
  }

  /** Disarms every timer: another host owns these jobs now (or this one stops). */
  clear(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  stop(): void {
    this.stopped = true;
    this.clear();
  }

  private partitionOf(jobId: string): string {
    return `s${partitionFor(`job:${jobId}`, this.options.partitions)}`;
  }

  private arm(d: LegacyDelivery): void {
    if (this.stopped || this.timers.has(d.id) || this.inflight.has(d.id)) return;
    const timer = setTimeout(
      () => {
        this.timers.delete(d.id);
        this.inflight.add(d.id);
        void this.post(d)
          .catch((e: unknown) => this.log.warn({ err: e, job_id: d.jobId }, "legacy webhook not recorded"))
          .finally(() => this.inflight.delete(d.id));
      },
      Math.max(0, d.dueAt - Date.now()),
    );
    timer.unref();
    this.timers.set(d.id, timer);
  }

  private async post(d: LegacyDelivery): Promise<void> {
    const secret = d.sealedSecret ? this.box.decrypt(d.sealedSecret) : undefined;
    const result = await postJson(this.guard, d.url, d.body, secret ? { "X-Webhook-Signature": legacySignature(secret, d.body) } : {}, {
      timeoutMs: LEGACY_TIMEOUT_MS,
    });
    if (this.stopped) return;
    const attempts = d.attempts + 1;
    const partition = this.partitionOf(d.jobId);
    const sort = sortKey(d.createdAt, d.id);
    if (result.ok || attempts > LEGACY_RETRY_DELAYS_MS.length) {
      if (!result.ok) this.log.warn({ job_id: d.jobId, url: d.url, error: result.errorMessage }, "legacy webhook failed after its retries");
      const done: LegacyDelivery = { ...d, attempts, settled: true };
      await this.store.commit({ writes: [{ table: LEGACY_DELIVERIES, id: d.id, value: done, partition, sort, expiresAt: Date.now() + TOMBSTONE_MS }] });
      return;
    }
    const next: LegacyDelivery = { ...d, attempts, dueAt: Date.now() + Math.round(LEGACY_RETRY_DELAYS_MS[attempts - 1]! * this.options.retryScale) };
    await this.store.commit({ writes: [{ table: LEGACY_DELIVERIES, id: d.id, value: next, partition, sort }] });
    this.inflight.delete(d.id);
    this.arm(next);
  }
}
