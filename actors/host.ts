// The actor host: one nact persistent actor per entity, journaled in the store. Commands decide,
// events fold; a decision's events and the intents it calls for (its effects) are one journal
// entry, appended atomically and fenced (by sequence number, and in cluster mode by the shard's
// epoch: own()); read models are written right after, before the reply, and rewritten by the
// entity's next incarnation; the intents go to the outbox.
import nact from "nact";
import { Code } from "@connectrpc/connect";
import type { Logger } from "../src/log.js";
import type { Rejection, Reply } from "../src/replies.js";
import { Fenced } from "../src/errors.js";
import { partitionFor } from "../src/bus/port.js";
import { randomToken } from "../src/ids.js";
import type { Fence, JournalEvent, KnownRow, RecordWrite, Snapshot, Store } from "../src/store/port.js";
import type { EntityRef } from "./entity.js";
import { activeTrace, childSpan, failedWith, inSpanContext, SpanKind, tracingOn, type Context } from "../src/tracing.js";
import { EVENTS_FIELD, INTENTS_FIELD, NO_OUTBOX, type Intent, type Outbox } from "./outbox.js";

const { start, configurePersistence, spawnPersistent, query, dispatch, stop } = nact as unknown as {
  start: (...plugins: unknown[]) => unknown;
  configurePersistence: (engine: unknown) => unknown;
  spawnPersistent: (parent: unknown, f: unknown, key: string, name: string, props: unknown) => unknown;
  query: (ref: unknown, factory: (sender: unknown) => unknown, timeout: number) => Promise<unknown>;
  dispatch: (ref: unknown, msg: unknown) => void;
  stop: (ref: unknown) => void;
};

export type { Rejection, Reply };

export type Decision<E> = readonly E[] | Rejection;

/** An entity type's behaviour: what its reference stands for, registered with the host at the root. */
export interface EntityBehavior<S, C, E, I extends Intent = Intent, R = S> extends EntityRef<C, R> {
  /** Persistence key prefix, e.g. "api_key". */
  readonly type: string;
  readonly initial: S;
  decide(state: S, command: C): Decision<E>;
  fold(state: S, event: E): S;
  /** Read-model writes that follow from the state after an event. */
  readModel(state: S, event: E): readonly RecordWrite[];
  /**
   * Unconditional read-model writes for a recovered state. A store that cannot write events and
   * read models atomically (Cassandra) may hold an event whose read model was never written when
   * a host died in between; a new incarnation writes them again before its first command. The
   * records named here are the entity's own: nothing else writes them (the host tells the store
   * their rows from its own commits, OwnRows).
   */
  repair(state: S): readonly RecordWrite[];
  /** The effects a decision calls for, given the state after it (and before); journaled with its events. */
  effects?(state: S, events: readonly E[], command: C, before: S): readonly I[];
  /** What a command's caller is answered, from the state after it; the whole state by default. */
  view?(state: S, command: C): R;
}

interface Envelope<C> {
  readonly command: C;
  readonly sender: unknown;
  /** The decision's trace, for the intents it journals (they run later, in the relay). */
  readonly trace?: Context | undefined;
}

/** The journal entry of a decision with several events or with intents; folded event by event on recovery. */
const BATCH = EVENTS_FIELD;
interface EventBatch<E> {
  readonly [BATCH]: readonly E[];
  readonly [INTENTS_FIELD]?: readonly Intent[];
}

/** A command's kind, for its span's name: commands are discriminated by `type` (a wake has none). */
function commandKind(command: unknown): string {
  const type = typeof command === "object" && command !== null ? (command as { type?: unknown }).type : undefined;
  return typeof type === "string" ? type : command === WAKE ? "wake" : command === REWRITE ? "rewrite" : "command";
}

/** A behaviour of any entity type: a host runs many. */
type AnyBehavior = EntityBehavior<any, any, any, Intent, any>;
const isBehavior = (ref: EntityRef<unknown, unknown>): ref is AnyBehavior => typeof (ref as Partial<AnyBehavior>).decide === "function";

/** Asks an actor for nothing but its state: recovery (and read-model repair) without a command. */
const WAKE = Object.freeze({ wake: true });
/** Asks an actor to write its read models again, reading each row first (ActorHost.rewrite). */
const REWRITE = Object.freeze({ rewrite: true });
/** Answers the asker that the entity cannot take its command now (the store): retryable. */
function unavailable(sender: unknown, message: string): void {
  dispatch(sender, { ok: false, rejection: { code: Code.Unavailable, message } } satisfies Reply<never>);
}
function isBatch<E>(data: unknown): data is EventBatch<E> {
  return typeof data === "object" && data !== null && Array.isArray((data as Record<string, unknown>)[BATCH]);
}

/** One write per record, the last one, where it last appeared: a commit applies each record once. */
function lastWriteWins(writes: readonly RecordWrite[]): RecordWrite[] {
  const last = new Map<string, number>();
  writes.forEach((w, i) => last.set(`${w.table}\0${w.id}`, i));
  return writes.filter((w, i) => last.get(`${w.table}\0${w.id}`) === i);
}

/**
 * How long before it expires a row its writer knows is read again instead (the encode queue's node
 * rows expire unless rewritten): more than a commit takes to land, so the store never writes over
 * a row it was told is there after it expired.
 */
const EXPIRING_ROW_MARGIN_MS = 5_000;

/**
 * The rows of an entity's own records (those its repair writes: nobody else writes them) as one
 * incarnation knows them: absent while it is fresh (recovered with an empty journal), as read for
 * its repair when recovered with a journal, then as its own commits left them. A commit tells the store the rows it knows (RecordWrite.current), so a
 * store that reads a record before writing it need not; the embedded store checks every one.
 */
class OwnRows<S> {
  /** undefined: this incarnation wrote the row but does not know it (it expires, or was unknown before), fresh or not. */
  private readonly rows = new Map<string, KnownRow | null | undefined>();
  private isFresh = false;
  /** The own records of the state last annotated. */
  private own = new Set<string>();

  constructor(private readonly repair: (state: S) => readonly RecordWrite[]) {}

  fresh(): void {
    this.isFresh = true;
  }

  /**
   * Writes the entity's own records (its repair's writes) over their rows as read now, and knows
   * them from then on: for a recovered incarnation, and for a rewrite (another writer may have
   * written them). The reads are those the store would make before writing rows it is not told.
   */
  async rewrite(store: Store, writes: readonly RecordWrite[]): Promise<void> {
    this.rows.clear();
    this.isFresh = false;
    this.own = new Set(writes.map((w) => `${w.table}\0${w.id}`));
    if (writes.length === 0) return;
    const found = await Promise.all(writes.map((w) => store.get(w.table, w.id)));
    const now = Date.now();
    const told = writes.map((w, i) => {
      const row = found[i];
      // A record that expires and is not found may be expired with its row not yet gone, and one
      // about to expire may go before the write lands: the store reads those.
      if (!row) return w.expiresAt ? w : { ...w, current: null };
      if (row.expiresAt !== 0 && row.expiresAt - now < EXPIRING_ROW_MARGIN_MS) return w;
      return { ...w, current: { version: row.version, partition: row.partition, sort: row.sort, expiresAt: row.expiresAt } };
    });
    await store.commit({ writes: told });
    this.written(told);
  }

  /** The writes, each of an own record with its row when known. */
  annotate(state: S, writes: readonly RecordWrite[]): RecordWrite[] {
    // Which records are own matters only for a row not followed yet, or a conditional write; a
    // commit of followed rows alone (most of them) skips the repair writes' making (the encode
    // queue's summary counts the whole queue).
    if (writes.some((w) => w.expectedVersion !== undefined || !this.rows.has(`${w.table}\0${w.id}`)))
      this.own = new Set(this.repair(state).map((w) => `${w.table}\0${w.id}`));
    const own = this.own;
    return writes.map((w) => {
      const k = `${w.table}\0${w.id}`;
      if (w.expectedVersion !== undefined || (!own.has(k) && !this.rows.has(k))) return w;
      const known = this.rows.has(k) ? this.rows.get(k) : this.isFresh ? null : undefined;
      // A row that expires is known only while it is sure to be there when the write lands.
      const current = known && known.expiresAt !== 0 && known.expiresAt - Date.now() < EXPIRING_ROW_MARGIN_MS ? undefined : known;
      return current === undefined ? w : { ...w, current };
    });
  }

  /** After a commit of the writes last annotated: the rows they made. */
  written(writes: readonly RecordWrite[]): void {
    for (const w of writes) {
      const k = `${w.table}\0${w.id}`;
      if (!this.own.has(k) && !this.rows.has(k)) continue;
      if (w.value === null) this.rows.set(k, null);
      else if (w.current === undefined) this.rows.set(k, undefined);
      else {
        const before = w.current;
        this.rows.set(k, {
          version: (before?.version ?? 0) + 1,
          partition: w.partition ?? before?.partition ?? "",
          sort: w.sort ?? before?.sort ?? "",
          expiresAt: w.expiresAt ?? 0,
        });
      }
    }
  }
}

export interface AskOptions {
  /**
   * The id is new: minted at random for this create by the gateway that sends it, and this is the
   * only copy of the command this host has run under the epoch it was sent for (actors/direct.ts
   * checks both). No event of the entity can exist where this host's appends would not win or be
   * refused, so its actor starts empty instead of reading its snapshot and journal.
   */
  readonly fresh?: boolean;
}

/** nact's persistence engine over the store port. */
class StoreEngine {
  /** The last seq of each entity's journal, as recovered or appended here: the next entry is one more. */
  readonly seqs = new Map<string, number>();
  /** Entities spawned for a create of an id nobody has used (ActorHost.ask's `fresh`): no recovery reads. */
  readonly fresh = new Set<string>();
  /**
   * The last seq of each entity's journal as recovered or committed here. nact counts an append
   * that failed (its seq is taken before the write) and may snapshot right after it, the state
   * without that entry under its seq: such a snapshot is not saved (takeSnapshot). Saved, it would
   * hide the entry from every later recovery if the failed write landed after all (a timeout), or
   * the next incarnation's entry under that seq if it came first.
   */
  private readonly committed = new Map<string, number>();

  constructor(
    private readonly store: Store,
    /** The fence of an entity's appends; throws when this host may not write it now. */
    private readonly fenceOf: (key: string) => Fence | undefined,
  ) {}

  events(key: string, offset: number) {
    const load = this.fresh.delete(key) ? Promise.resolve([]) : this.store.events(key, offset);
    return {
      reduce: async <A>(f: (acc: Promise<A>, e: unknown, i: number) => Promise<A>, init: Promise<A>) => {
        const events = await load;
        let acc = init;
        events.forEach((e, i) => {
          this.seqs.set(key, e.seq);
          this.committed.set(key, e.seq);
          acc = f(acc, { data: e.data, sequenceNumber: e.seq, isDeleted: false }, i + 1);
        });
        return acc;
      },
    };
  }

  async latestSnapshot(key: string) {
    const s = this.fresh.has(key) ? undefined : await this.store.latestSnapshot(key);
    this.seqs.set(key, s?.seq ?? 0);
    this.committed.set(key, s?.seq ?? 0);
    return s ? { data: s.data, sequenceNumber: s.seq } : undefined;
  }

  takeSnapshot(snapshot: { data: unknown; sequenceNumber: number; key: string; createdAt: number }) {
    if (this.committed.get(snapshot.key) !== snapshot.sequenceNumber) return Promise.resolve();
    const s: Snapshot = { key: snapshot.key, seq: snapshot.sequenceNumber, data: snapshot.data, createdAt: snapshot.createdAt };
    return this.store.saveSnapshot(s);
  }

  persist(event: { data: unknown; sequenceNumber: number; key: string; createdAt: number }, writes: readonly RecordWrite[] = []) {
    const e: JournalEvent = { key: event.key, seq: event.sequenceNumber, data: event.data, createdAt: event.createdAt };
    const fence = this.fenceOf(event.key);
    this.seqs.set(event.key, event.sequenceNumber);
    this.committed.delete(event.key);
    return this.store.commit({ events: [e], writes, ...(fence ? { fence } : {}) }).then(() => void this.committed.set(event.key, event.sequenceNumber));
  }
}

/** Which shards a host's entities fall in: the partitions of the commands topic. */
export interface Sharding {
  /** What the shards are of (the commands topic), the scope of their epochs. */
  readonly scope: string;
  readonly partitions: number;
}

/** A shard's ownership on this host: its epoch once taken, or why it may not be written. */
type Ownership = { readonly epoch: Promise<number>; taken?: number; lost?: boolean };

export class ActorHost {
  private readonly system: unknown;
  private readonly engine: StoreEngine;
  private readonly refs = new Map<string, unknown>();
  /**
   * Entities whose last write failed here: their next incarnation knows none of its rows, even
   * recovered with an empty journal, so a wrong row (a bug the embedded store refuses) fails one
   * command, not every command of a fresh entity. Forgotten at its next committed write.
   */
  private readonly unsure = new Set<string>();
  private readonly behaviors = new Map<string, AnyBehavior>();
  private incarnations = 0;
  /** Shards owned, when the store fences by epoch (Store.takeEpoch) and sharding is given. */
  private readonly owned = new Map<number, Ownership>();
  private readonly owner = `host_${randomToken(12)}`;
  /** The shards assigned to this host at the last rebalance. */
  private assigned = new Set<number>();
  /** This host's member id in the command partitions' group, as of the last rebalance. */
  private member: string | undefined;
  /** Where an entity whose commit failed is sent to its owner to write its read models again (rewritesVia). */
  private rewrites: ((type: string, id: string) => Promise<void>) | undefined;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly askTimeoutMs = 10_000,
    /** Where the intents of each appended entry go. */
    private readonly outbox: Outbox = NO_OUTBOX,
    /** With a store that takes epochs: every append is fenced by its shard's epoch (own()). */
    private readonly sharding?: Sharding,
  ) {
    this.engine = new StoreEngine(store, (key) => this.fenceOf(key));
    this.system = start(configurePersistence(this.engine));
  }

  private get fencing(): boolean {
    return this.sharding !== undefined && this.store.takeEpoch !== undefined;
  }

  /**
   * The shards this host now owns (after a rebalance): every cached actor goes (another host may
   * have written them), and each newly assigned shard's epoch is taken, one conditional write
   * each, before its first append (ready()). A shard kept by the same group member through the
   * rebalance keeps its epoch (nobody else owned it meanwhile), so commands in flight there go on.
   * Under a new member id (this host missed a generation) every epoch is taken again, and so is a
   * shard's whose append was refused (Fenced) since the last rebalance.
   */
  own(shards: readonly number[], member?: string): void {
    this.evictAll();
    this.assigned = new Set(shards);
    const kept = member !== undefined && member === this.member;
    this.member = member;
    for (const [shard, owned] of [...this.owned]) if (!kept || owned.lost || !shards.includes(shard)) this.owned.delete(shard);
    if (!this.fencing) return;
    for (const shard of shards) if (!this.owned.has(shard)) this.take(shard);
  }

  /** The epoch this host holds the shard by, once taken and while not lost; undefined otherwise. */
  epochOf(shard: number): number | undefined {
    const owned = this.owned.get(shard);
    return owned?.lost ? undefined : owned?.taken;
  }

  /**
   * Whether this host serves the shard's commands now: assigned at the last rebalance, and no append
   * there found a newer owner since. Direct commands (actors/direct.ts) for other shards go back.
   */
  serves(shard: number): boolean {
    return this.assigned.has(shard) && this.owned.get(shard)?.lost !== true;
  }

  /** Resolves once appends to this shard can be fenced (its epoch taken); retries a failed take. */
  async ready(shard: number): Promise<void> {
    if (!this.fencing) return;
    const owned = this.owned.get(shard);
    if (!owned) return; // not ours: its appends are refused (fenceOf)
    try {
      await owned.epoch;
    } catch (e) {
      if (this.owned.get(shard) === owned) this.take(shard);
      throw e;
    }
  }

  private take(shard: number): void {
    const sharding = this.sharding!;
    const ownership: Ownership = { epoch: this.store.takeEpoch!(sharding.scope, shard, this.owner) };
    ownership.epoch.then(
      (epoch) => {
        ownership.taken = epoch;
        this.log.info({ shard, epoch }, "shard epoch taken");
      },
      (e: unknown) => this.log.warn({ err: e, shard }, "shard epoch not taken; its commands wait"),
    );
    this.owned.set(shard, ownership);
  }

  private fenceOf(key: string): Fence | undefined {
    if (!this.fencing) return undefined;
    const { scope, partitions } = this.sharding!;
    const shard = partitionFor(key, partitions);
    const owned = this.owned.get(shard);
    if (owned?.taken === undefined || owned.lost) throw new Error(`shard ${shard} is not owned by this host now`);
    return { scope, shard, epoch: owned.taken };
  }

  /** A fenced append found a newer owner: nothing more is written in that shard until it is assigned here again. */
  private fenced(e: Fenced): void {
    const owned = this.owned.get(e.shard);
    if (owned?.taken === e.epoch) owned.lost = true;
    for (const key of [...this.refs.keys()]) if (partitionFor(key, this.sharding!.partitions) === e.shard) this.evict(key);
  }

  /** Runs these entity types here: an ask or tell by reference finds its behaviour by type. */
  register(...behaviors: readonly AnyBehavior[]): this {
    for (const b of behaviors) {
      const known = this.behaviors.get(b.type);
      if (known !== undefined && known !== b) throw new Error(`entity type ${b.type} is registered twice with different behaviours`);
      this.behaviors.set(b.type, b);
    }
    return this;
  }

  /**
   * Where a failed commit's entity goes to be rewritten (rewrite) by its owner, this host or the
   * shard's new one: a store may land a fenced batch's read models before it finds the batch
   * refused or fails (Fence), so they may show an event the journal does not have. Cluster mode
   * sends it on the commands topic; without it such read models wait for the entity's next
   * incarnation.
   */
  rewritesVia(send: (type: string, id: string) => Promise<void>): void {
    this.rewrites = send;
  }

  /**
   * Has the entity write its read models again from its state, each row read first (not the rows
   * it knows from its own commits), in its commands' order: after another host's refused commit
   * may have written over them.
   */
  async rewrite(ref: EntityRef<unknown, unknown>, id: string): Promise<Reply<unknown>> {
    return this.ask(ref, id, REWRITE);
  }

  /** Recovers the entity (rewriting its read models) and returns its whole state, without a command. */
  async wake(ref: EntityRef<unknown, unknown>, id: string): Promise<unknown> {
    // A wake is answered with the whole state, whatever the entity's view.
    const reply = (await this.ask(ref, id, WAKE)) as Reply<unknown>;
    if (!reply.ok) throw new Error(`${ref.type} ${id} could not be woken: ${reply.rejection.message}`);
    return reply.state;
  }

  /**
   * Sends a command to the entity's actor, spawning (and recovering) it when needed. The reference
   * names a registered type; a behaviour given itself is registered on first use (specs do that).
   */
  async ask<C, R>(ref: EntityRef<C, R>, id: string, command: C, options?: AskOptions): Promise<Reply<R>> {
    const behavior = this.behaviorOf(ref);
    const key = `${behavior.type}:${id}`;
    let actor = this.refs.get(key);
    if (!actor) {
      // Recovery reads are skipped only for an id its asker vouches nobody has used (AskOptions).
      if (options?.fresh === true && !this.unsure.has(key)) this.engine.fresh.add(key);
      else this.engine.fresh.delete(key);
      // A fresh name each spawn: an evicted incarnation may still be stopping under the old one.
      const name = `${key.replace(/[^A-Za-z0-9_-]/g, "_")}_${++this.incarnations}`;
      actor = spawnPersistent(this.system, this.actorFunction(behavior, key), key, name, {
        snapshotEvery: 50,
        shutdownAfter: 10 * 60_000,
      });
      this.refs.set(key, actor);
    }
    // Inside a trace, the decision is a span (mailbox wait, decide, append, reply), and its context
    // goes with the command into the actor, which runs outside this call's async context.
    const span = tracingOn()
      ? childSpan(`${behavior.type} ${commandKind(command)}`, SpanKind.INTERNAL, {
          "media.entity.type": behavior.type,
          "media.entity.id": id,
          "media.command": commandKind(command),
        })
      : undefined;
    const trace = span && inSpanContext(span, activeTrace);
    try {
      const reply = (await query(actor, (sender) => ({ command, sender, trace }) satisfies Envelope<C>, this.askTimeoutMs)) as Reply<R>;
      if (span && !reply.ok) failedWith(span, `${reply.rejection.code}: ${reply.rejection.message}`);
      return reply;
    } catch (e) {
      if (span) failedWith(span, (e as Error).message);
      this.evict(key);
      throw e;
    } finally {
      span?.end();
    }
  }

  /** Whether entities of this type run here. */
  runs(type: string): boolean {
    return this.behaviors.has(type);
  }

  private behaviorOf(ref: EntityRef<unknown, unknown>): AnyBehavior {
    const known = this.behaviors.get(ref.type);
    if (known !== undefined) return known;
    if (isBehavior(ref)) return this.register(ref).behaviors.get(ref.type)!;
    throw new Error(`entity type ${ref.type} is not registered with this actor host`);
  }

  /** Drops every cached actor; each recovers from the store on its next command. */
  evictAll(): void {
    for (const key of [...this.refs.keys()]) this.evict(key);
  }

  stop(): void {
    stop(this.system);
  }

  private evict(key: string): void {
    const ref = this.refs.get(key);
    this.refs.delete(key);
    if (ref) stop(ref);
  }

  private actorFunction<S, C, E, I extends Intent, R>(behavior: EntityBehavior<S, C, E, I, R>, key: string) {
    const answer = (state: S, command: C): unknown => (behavior.view ? behavior.view(state, command) : state);
    const host = this;
    let repaired = false; // per incarnation: this function is made once per spawn
    const rows = new OwnRows<S>((state) => behavior.repair(state));
    return async (
      state: S | undefined,
      msg: unknown,
      ctx: { recovering?: boolean; self: unknown; persist: (e: E | EventBatch<E>, tags: string[], writes: readonly RecordWrite[]) => Promise<void> },
    ) => {
      const current = state ?? behavior.initial;
      if (ctx.recovering) return isBatch<E>(msg) ? msg[BATCH].reduce(behavior.fold, current) : behavior.fold(current, msg as E);
      const { command, sender, trace } = msg as Envelope<C>;
      // A new incarnation writes its read models before its first command: a rewrite is then done.
      const rewritten = !repaired;
      if (!repaired) {
        // Recovered with nothing in its journal: none of its own records exists yet.
        if (current === behavior.initial) {
          if (!host.unsure.has(key)) rows.fresh();
        } else {
          try {
            await rows.rewrite(host.store, behavior.repair(current));
          } catch (e) {
            unavailable(sender, `the entity could not be recovered: ${(e as Error).message}`);
            return current;
          }
        }
        repaired = true;
      }
      if ((command as unknown) === WAKE) {
        dispatch(sender, { ok: true, state: current } satisfies Reply<S>);
        return current;
      }
      if ((command as unknown) === REWRITE) {
        try {
          // The rows are read again, whatever this incarnation knows of them.
          if (!rewritten && current !== behavior.initial) await rows.rewrite(host.store, behavior.repair(current));
          dispatch(sender, { ok: true, state: current } satisfies Reply<S>);
        } catch (e) {
          unavailable(sender, `the read models were not written: ${(e as Error).message}`);
        }
        return current;
      }
      const decision = behavior.decide(current, command);
      if (!Array.isArray(decision)) {
        dispatch(sender, { ok: false, rejection: decision as Rejection } satisfies Reply<S>);
        return current;
      }
      const events = decision as readonly E[];
      const id = key.slice(behavior.type.length + 1);
      const writes: RecordWrite[] = [];
      let next = current;
      for (const event of events) {
        next = behavior.fold(next, event);
        writes.push(...behavior.readModel(next, event));
      }
      const intents = behavior.effects?.(next, events, command, current) ?? [];
      if (events.length === 0) {
        dispatch(sender, { ok: true, state: answer(next, command) } satisfies Reply<unknown>);
        host.outbox.now(behavior.type, id, intents, next, trace);
        return next;
      }
      const seq = (host.engine.seqs.get(key) ?? 0) + 1;
      try {
        if (intents.length > 0) await host.outbox.beforeAppend(behavior.type, id, seq);
      } catch (e) {
        host.log.error({ err: e, entity: key }, "outbox marker not written; command refused");
        unavailable(sender, "the write did not complete; retry");
        return current;
      }
      try {
        // One journal entry and one commit for the whole decision: a reader of the read models
        // never sees part of it (a failed output on a job still processing), nor does a crash.
        const entry =
          events.length === 1 && intents.length === 0
            ? events[0]!
            : ({ [BATCH]: events, ...(intents.length > 0 ? { [INTENTS_FIELD]: intents } : {}) } satisfies EventBatch<E>);
        const known = rows.annotate(next, lastWriteWins(writes));
        await ctx.persist(entry, [], known);
        rows.written(known);
        host.unsure.delete(key);
      } catch (e) {
        // A failed or fenced write leaves this copy's sequence unknown: drop it, recover on next use.
        host.log.error({ err: e, entity: key }, "persist failed; actor evicted");
        host.refs.delete(key);
        host.unsure.add(key);
        unavailable(sender, "the write did not complete; retry");
        setImmediate(() => stop(ctx.self));
        // Its read models may have landed without its events (Fence): the owner writes them again.
        host.rewrites?.(behavior.type, id).catch((err: unknown) => host.log.error({ err, entity: key }, "read models not sent to be written again"));
        // A newer owner has the shard: its recovery reads this entry if it landed in time, and its
        // relay runs the intents; this host must not run them.
        if (e instanceof Fenced) {
          host.fenced(e);
          if (intents.length > 0) host.outbox.fenced(behavior.type, id);
        } else if (intents.length > 0) host.outbox.uncertain(behavior.type, id);
        return current;
      }
      dispatch(sender, { ok: true, state: answer(next, command) } satisfies Reply<unknown>);
      if (intents.length > 0) host.outbox.appended(behavior.type, id, seq, intents, next, trace);
      return next;
    };
  }
}
