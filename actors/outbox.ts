// The outbox: every effect of a decision (a task for the encoders, an update for Watch, a ledger
// fan-out, a legacy post, a message to another entity) is an intent, journaled in the same entry
// as the events that caused it, so one atomic append commits both. After the append the host hands
// the entry to this relay, which runs its intents in order, per entity, at least once: a handler
// that fails is retried until it succeeds or the entity moves to another host.
//
// A relay that dies leaves entries whose intents may not have run. Its successor finds them by a
// marker (table "outbox", partitioned by command shard): written before the first append with
// intents of an entity and kept while the entity is busy, it holds the seq up to which intents are
// known to have run. On takeover the relay loads its shards' markers before any append in them,
// wakes each marked entity (which rewrites its read models) and runs the intents of every entry
// after the marker's seq. The marker goes once the entity has been idle and caught up for a while.
// Consumers are idempotent, so an intent that runs twice (after a crash) changes nothing twice.
import { partitionFor } from "../src/bus/port.js";
import type { Logger } from "../src/log.js";
import { observeRelayLag, registerOutboxBacklog } from "../src/metrics-flow.js";
import type { KnownRow, Store } from "../src/store/port.js";
import { inSpan, SpanKind, type Context } from "../src/tracing.js";

export interface Intent {
  readonly kind: string;
}

export interface IntentContext<S> {
  readonly type: string;
  readonly id: string;
  /** The entity's state after the entry (live), or its current state (recovered). */
  readonly state: S;
  /** The journal entry that carried the intent. */
  readonly seq: number;
  /** Run again from the journal after a crash or a failed write: the effect may already have happened. */
  readonly recovered: boolean;
}

/** One handler per kind of an entity's intents: a mapped type, so a missing kind does not compile. */
export type IntentHandlers<I extends Intent, S> = { readonly [K in I["kind"]]: (intent: Extract<I, { kind: K }>, ctx: IntentContext<S>) => Promise<void> };

/** What the actor host tells its outbox; the default one does nothing (hosts in unit specs). */
export interface Outbox {
  /** Before an append whose entry carries intents: after a crash, a relay will find the entity. */
  beforeAppend(type: string, id: string, seq: number): Promise<void>;
  /** The entry is durable: run its intents (each in a span of the decision's trace, when it has one). */
  appended(type: string, id: string, seq: number, intents: readonly Intent[], state: unknown, trace?: Context): void;
  /** A command that appended nothing still asked for these (a resume): run them now, unjournaled. */
  now(type: string, id: string, intents: readonly Intent[], state: unknown, trace?: Context): void;
  /** The append failed and may have landed anyway: read the journal to find out. */
  uncertain(type: string, id: string): void;
  /** The append was refused because another host owns the entity's shard now: its relay runs what landed. */
  fenced(type: string, id: string): void;
}

export const NO_OUTBOX: Outbox = {
  beforeAppend: () => Promise.resolve(),
  appended: () => undefined,
  now: () => undefined,
  uncertain: () => undefined,
  fenced: () => undefined,
};

/** The journal entry of a decision: its events and, when it has any, its intents. */
export const EVENTS_FIELD = "__events";
export const INTENTS_FIELD = "__intents";

export const OUTBOX = "outbox";
interface Marker {
  readonly type: string;
  readonly id: string;
  /** Intents of entries up to this seq have run. */
  readonly relayed: number;
}

interface Pending {
  readonly seq: number;
  readonly intents: readonly Intent[];
  readonly state: unknown;
  readonly recovered: boolean;
  /**
   * The trace of the decision that journaled it, kept in memory only: intents run again from the
   * journal after a crash belong to no trace (the entry's stored form is unchanged).
   */
  readonly trace?: Context | undefined;
  /** Intents of this entry already run (a retry resumes after them). */
  done: number;
  /** When its entry was committed (performance.now()), for the relay lag; unknown for a recovered entry. */
  readonly committedAt?: number;
}

interface Entity {
  readonly type: string;
  readonly id: string;
  readonly key: string;
  readonly shard: number;
  marked: boolean;
  /**
   * The marker's row as this relay's own writes left it (null: none), so that a write need not read
   * it first; undefined when not known (after a write that failed).
   */
  row: KnownRow | null | undefined;
  /** Highest seq whose intents have all run; -1 when unknown (never seen on this host). */
  relayed: number;
  /** Entries waiting, ascending by seq; unjournaled ones (seq -1) run in arrival order. */
  queue: Pending[];
  draining: boolean;
  appending: number;
  /** Relayed entries since the marker last recorded `relayed`. */
  unrecorded: number;
  /** Marker writes and deletes of this entity, one after another. */
  markerOp: Promise<void>;
  /** Resolved once a recovery has queued the journal's pending entries. */
  ready: Promise<void>;
  idle: NodeJS.Timeout | undefined;
  dropped: boolean;
}

export interface RelayOptions {
  /** Command partitions: an entity's shard is its command key's partition. */
  readonly partitions: number;
  /** An idle, caught-up entity loses its marker after this long. */
  readonly idleMs?: number;
  /** A failed handler is tried again after this long, doubling up to 5 s. */
  readonly retryMs?: number;
  /** Record `relayed` on the marker after this many entries (fewer intents run again after a crash). */
  readonly recordEvery?: number;
}

type Erased = (intent: Intent, ctx: IntentContext<unknown>) => Promise<void>;

export class Relay implements Outbox {
  private readonly entities = new Map<string, Entity>();
  private readonly shards = new Map<number, Promise<void>>();
  private readonly handlers = new Map<string, Erased>();
  private owned = new Set<number>();
  private wake: ((type: string, id: string) => Promise<unknown>) | undefined;
  private stopped = false;
  private readonly idleMs: number;
  private readonly retryMs: number;
  private readonly recordEvery: number;
  private readonly unregisterBacklog: () => void;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly options: RelayOptions,
  ) {
    this.idleMs = options.idleMs ?? 5_000;
    this.retryMs = options.retryMs ?? 100;
    this.recordEvery = options.recordEvery ?? 50;
    this.unregisterBacklog = registerOutboxBacklog(() => this.waiting());
  }

  /** Intents queued on this host and not yet run, for the backlog gauge. */
  waiting(): number {
    let n = 0;
    for (const e of this.entities.values()) for (const item of e.queue) n += item.intents.length - item.done;
    return n;
  }

  /** The handlers of one entity type's intents. */
  register<I extends Intent, S>(type: string, handlers: IntentHandlers<I, S>): void {
    // Intents come back from the journal as plain data: here their type is taken on trust, once.
    const table = handlers as unknown as Readonly<Record<string, Erased>>;
    this.handlers.set(type, (intent, ctx) => {
      const handler = table[intent.kind];
      if (!handler) throw new Error(`no handler for ${type} intent ${intent.kind}`);
      return handler(intent, ctx);
    });
  }

  /** How the relay brings an entity to life after a crash (its state, read models rewritten). */
  attach(wake: (type: string, id: string) => Promise<unknown>): void {
    this.wake = wake;
  }

  /** The shards this host now owns: entities of others are dropped, new ones are recovered. */
  assign(shards: readonly number[]): void {
    const next = new Set(shards);
    for (const [key, e] of this.entities) {
      if (next.has(e.shard)) continue;
      e.dropped = true;
      clearTimeout(e.idle);
      this.entities.delete(key);
    }
    for (const shard of [...this.shards.keys()]) if (!next.has(shard)) this.shards.delete(shard);
    this.owned = next;
    for (const shard of next) void this.loaded(shard);
  }

  stop(): void {
    this.stopped = true;
    this.unregisterBacklog();
    for (const e of this.entities.values()) clearTimeout(e.idle);
  }

  async beforeAppend(type: string, id: string, seq: number): Promise<void> {
    const e = await this.entity(type, id);
    e.appending++;
    clearTimeout(e.idle);
    // Never seen, or retired: everything before this entry has run.
    if (e.relayed < 0) e.relayed = seq - 1;
    if (e.marked) return;
    e.marked = true;
    const write = this.writeMarker(e, e.relayed);
    // A store that makes commits durable in order needs no wait: the append comes after the marker.
    if (this.store.orderedCommits) {
      write.catch((err: unknown) => this.log.warn({ err, entity: e.key }, "outbox: marker not written"));
      return;
    }
    try {
      await write;
    } catch (err) {
      e.marked = false;
      e.appending--;
      throw err;
    }
  }

  appended(type: string, id: string, seq: number, intents: readonly Intent[], state: unknown, trace?: Context): void {
    const e = this.entities.get(`${type}:${id}`);
    if (!e) return; // its shard moved away while the append ran: the new owner recovers it
    e.appending--;
    if (e.relayed < 0) e.relayed = seq - 1;
    insert(e.queue, { seq, intents, state, recovered: false, trace, done: 0, committedAt: performance.now() });
    void this.drain(e);
  }

  now(type: string, id: string, intents: readonly Intent[], state: unknown, trace?: Context): void {
    if (intents.length === 0) return;
    void this.entity(type, id).then((e) => {
      e.queue.push({ seq: -1, intents, state, recovered: false, trace, done: 0, committedAt: performance.now() });
      return this.drain(e);
    });
  }

  uncertain(type: string, id: string): void {
    const e = this.entities.get(`${type}:${id}`);
    if (!e) return;
    e.appending = Math.max(0, e.appending - 1);
    this.recover(e);
  }

  fenced(type: string, id: string): void {
    const e = this.entities.get(`${type}:${id}`);
    if (e) e.appending = Math.max(0, e.appending - 1);
  }

  // ── internals ──

  private async entity(type: string, id: string): Promise<Entity> {
    const key = `${type}:${id}`;
    const shard = partitionFor(key, this.options.partitions);
    await this.loaded(shard);
    let e = this.entities.get(key);
    if (!e) {
      e = {
        type,
        id,
        key,
        shard,
        marked: false,
        // The shard's markers were all loaded before: this entity has none.
        row: null,
        relayed: -1,
        queue: [],
        draining: false,
        appending: 0,
        unrecorded: 0,
        markerOp: Promise.resolve(),
        ready: Promise.resolve(),
        idle: undefined,
        dropped: false,
      };
      this.entities.set(key, e);
    }
    return e;
  }

  /** The shard's markers, read once before anything in it is appended; their entities are recovered. */
  private loaded(shard: number): Promise<void> {
    let p = this.shards.get(shard);
    if (p) return p;
    p = this.load(shard).catch((err: unknown) => {
      this.shards.delete(shard);
      throw err;
    });
    this.shards.set(shard, p);
    return p;
  }

  private async load(shard: number): Promise<void> {
    const found: { readonly m: Marker; readonly row: KnownRow }[] = [];
    let before: string | undefined;
    for (;;) {
      const page = await this.store.scan<Marker>(OUTBOX, partitionName(shard), { limit: 500, ...(before !== undefined ? { before } : {}) });
      found.push(...page.items.map((r) => ({ m: r.value, row: { version: r.version, partition: r.partition, sort: r.sort, expiresAt: r.expiresAt } })));
      if (!page.more) break;
      before = page.items.at(-1)!.sort;
    }
    for (const { m, row } of found) {
      const key = `${m.type}:${m.id}`;
      if (this.entities.has(key)) continue;
      const e: Entity = {
        type: m.type,
        id: m.id,
        key,
        shard,
        marked: true,
        row,
        relayed: m.relayed,
        queue: [],
        draining: false,
        appending: 0,
        unrecorded: 0,
        markerOp: Promise.resolve(),
        ready: Promise.resolve(),
        idle: undefined,
        dropped: false,
      };
      this.entities.set(key, e);
      this.recover(e);
    }
    if (found.length > 0) this.log.info({ shard, entities: found.length }, "outbox: relaying what the previous owner may not have");
  }

  /** Wakes the entity and queues every journal entry after `relayed` that carries intents. */
  private recover(e: Entity): void {
    e.ready = (async () => {
      for (let delay = this.retryMs; !e.dropped && !this.stopped; delay = Math.min(delay * 2, 5_000)) {
        try {
          const state = await this.wake?.(e.type, e.id);
          const entries = await this.store.events(e.key, Math.max(0, e.relayed));
          for (const entry of entries) {
            const intents = intentsOf(entry.data);
            if (intents.length > 0) insert(e.queue, { seq: entry.seq, intents, state, recovered: true, done: 0 });
            else if (entry.seq === e.relayed + 1) e.relayed = entry.seq;
          }
          // A drain already under way when the recovery began may have finished without these.
          void this.drain(e);
          return;
        } catch (err) {
          this.log.warn({ err, entity: e.key }, "outbox: recovery failed; trying again");
          await sleep(delay);
        }
      }
    })();
    void this.drain(e);
  }

  private async drain(e: Entity): Promise<void> {
    if (e.draining) return;
    e.draining = true;
    try {
      await e.ready;
      while (e.queue.length > 0 && !e.dropped && !this.stopped) {
        const item = e.queue[0]!;
        if (item.seq < 0 || item.seq > e.relayed) {
          for (; item.done < item.intents.length; item.done++) {
            const intent = item.intents[item.done]!;
            if (!(await this.run(e, item, intent))) return;
            if (item.committedAt !== undefined) observeRelayLag(e.type, intent.kind, (performance.now() - item.committedAt) / 1000);
          }
          if (item.seq >= 0) {
            e.relayed = item.seq;
            e.unrecorded++;
          }
        }
        e.queue.shift();
      }
      if (e.unrecorded >= this.recordEvery && e.marked) void this.writeMarker(e, e.relayed);
    } finally {
      e.draining = false;
    }
    // Left with work only when the entity moved away or the relay stopped: the new owner (or the
    // next start) relays it, and draining again here would spin forever.
    if (e.dropped || this.stopped) return;
    if (e.queue.length > 0) {
      void this.drain(e); // queued while the last handler ran
      return;
    }
    clearTimeout(e.idle);
    e.idle = setTimeout(() => this.retire(e), this.idleMs);
    e.idle.unref();
  }

  /** Runs one intent until it succeeds; false when the entity left this host first. */
  private async run(e: Entity, item: Pending, intent: Intent): Promise<boolean> {
    const handler = this.handlers.get(e.type);
    for (let delay = this.retryMs; ; delay = Math.min(delay * 2, 5_000)) {
      if (e.dropped || this.stopped) return false;
      try {
        if (!handler) throw new Error(`no intent handlers for ${e.type}`);
        const ctx = { type: e.type, id: e.id, state: item.state, seq: item.seq, recovered: item.recovered };
        if (item.trace === undefined) await handler(intent, ctx);
        else {
          const attributes = { "media.entity.type": e.type, "media.entity.id": e.id, "media.intent": intent.kind, "media.journal.seq": item.seq };
          await inSpan(item.trace, `${e.type} intent ${intent.kind}`, SpanKind.INTERNAL, attributes, () => handler(intent, ctx));
        }
        return true;
      } catch (err) {
        this.log.warn({ err, entity: e.key, intent: intent.kind }, "outbox: intent failed; trying again");
        await sleep(delay);
      }
    }
  }

  /** An idle entity whose intents have all run loses its marker. */
  private retire(e: Entity): void {
    if (e.dropped || this.stopped || e.draining || e.appending > 0 || e.queue.length > 0 || !e.marked) return;
    e.marked = false;
    e.unrecorded = 0;
    e.markerOp = e.markerOp
      .then(() => this.store.commit({ writes: [{ table: OUTBOX, id: e.key, value: null, ...known(e) }], independent: true }))
      .then(
        () => void (e.row = null),
        (err: unknown) => {
          e.row = undefined;
          this.log.warn({ err, entity: e.key }, "outbox: marker not removed (it is relayed again after a restart)");
        },
      );
    // Forgotten once its marker is gone (kept when that failed: its row is not known then).
    void e.markerOp.then(() => {
      if (!e.marked && e.row === null && e.appending === 0 && e.queue.length === 0 && this.entities.get(e.key) === e) this.entities.delete(e.key);
    });
  }

  private writeMarker(e: Entity, relayed: number): Promise<void> {
    const value: Marker = { type: e.type, id: e.id, relayed };
    e.unrecorded = 0;
    const partition = partitionName(e.shard);
    const op = e.markerOp.then(async () => {
      const before = e.row;
      try {
        await this.store.commit({ writes: [{ table: OUTBOX, id: e.key, value, partition, sort: e.key, ...known(e) }], independent: true });
      } catch (err) {
        e.row = undefined;
        throw err;
      }
      e.row = before === undefined ? undefined : { version: (before?.version ?? 0) + 1, partition, sort: e.key, expiresAt: 0 };
    });
    e.markerOp = op.catch(() => undefined);
    return op;
  }
}

/** The marker's row, when the relay knows it: the store need not read it before writing (RecordWrite.current). */
const known = (e: Entity): { current?: KnownRow | null } => (e.row === undefined ? {} : { current: e.row });

const partitionName = (shard: number) => `s${shard}`;

function intentsOf(data: unknown): readonly Intent[] {
  if (typeof data !== "object" || data === null) return [];
  const intents = (data as Record<string, unknown>)[INTENTS_FIELD];
  return Array.isArray(intents) ? (intents as Intent[]) : [];
}

/** Into the queue by seq; an entry already queued (live and recovered both) is kept once. */
function insert(queue: Pending[], item: Pending): void {
  if (item.seq >= 0 && queue.some((p) => p.seq === item.seq)) return;
  let at = queue.length;
  while (at > 0 && queue[at - 1]!.seq > item.seq && item.seq >= 0) at--;
  queue.splice(at, 0, item);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
