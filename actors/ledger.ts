// The event ledger's envelope: every event an entity change produces, recorded once with an id
// derived from what happened (so writing it again is no change), frozen at emit time. Each entity
// says which of its changes make events (actors/job/ledger-events.ts, the video's
// videoLedgerEvents) and writes them in the same commit as the change they follow from; a fan-out
// row beside each marks it for delivery to the app's webhook endpoints until the entity's fan-out
// intent has run.
import { createHash } from "node:crypto";
import { sortKey } from "../src/pagination.js";
import type { RecordWrite } from "../src/store/port.js";
import type { JobRecord } from "./job/messages.js";
import type { VideoRecord } from "./video/messages.js";

export const EVENTS = "events";
/** Synthetic events of SendTestWebhook (ids evt_test_…): delivered like others, never listed. */
export const TEST_EVENTS = "test_events";
/** Events whose fan-out to endpoints is not yet done (pending_webhooks counts their subscribers). */
export const EVENT_FANOUT = "event_fanout";

/** The one API version of this build; endpoints pin it and every event freezes it. */
export const API_VERSION = "2026-11-01";
export const API_VERSIONS: readonly string[] = [API_VERSION];

/**
 * The event catalog. Concrete types only; `*` subscribes to all, present and future.
 * job.partial and job.canceled complete the job outcomes the spec's list leaves open; video.encoded
 * (every rendition done) and video.encoding_failed (the job failed after the video became
 * playable) follow a progressive stream past video.ready.
 */
export const EVENT_TYPES = [
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
export type EventType = (typeof EVENT_TYPES)[number];

export interface EventRecord {
  readonly id: string;
  readonly appId: string;
  readonly organizationId: string;
  readonly type: EventType;
  /** The resource as it was when the event happened (rendered as the API shows it), or a test event's sample data. */
  readonly subject:
    | { readonly kind: "job"; readonly job: JobRecord; readonly outputId?: string }
    | { readonly kind: "video"; readonly video: VideoRecord }
    | { readonly kind: "test"; readonly data: unknown };
  readonly requestId: string;
  readonly apiVersion: string;
  readonly createdAt: number;
}

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
/** An id derived from a label: the same happening always gets the same id. */
export function derivedId(prefix: string, label: string, length = 24): string {
  let out = "";
  for (const byte of createHash("sha256").update(label).digest()) {
    if (out.length === length) break;
    out += ALPHABET[byte % 62];
  }
  return `${prefix}${out}`;
}

/**
 * The rows of an event, written with the entry that made it: the ledger entry and its fan-out
 * mark. The event is new (its entity just decided it, and nothing else writes its rows), so their
 * rows are known to be absent (RecordWrite.current) and the store need not read them first.
 */
export function ledgerWrites(e: EventRecord): RecordWrite[] {
  return ledgerRewrites(e).map((w) => ({ ...w, current: null }));
}

/** The same rows written again, over whatever an earlier attempt left (a recovered entry's fan-out). */
export function ledgerRewrites(e: EventRecord): RecordWrite[] {
  const sort = sortKey(e.createdAt, e.id);
  return [
    { table: EVENTS, id: e.id, value: e, partition: e.appId, sort },
    { table: EVENT_FANOUT, id: e.id, value: { eventId: e.id, appId: e.appId, type: e.type, createdAt: e.createdAt } },
  ];
}
