// The actor host: one nact persistent actor per entity, journaled in the store. Commands decide,
// events fold; read-model writes are committed atomically with the events they follow from, and
// a write conditional on the next sequence number fences a stale owner.
import nact from "nact";
import { Code } from "@connectrpc/connect";
import type { Logger } from "../src/log.js";
import type { Rejection, Reply } from "../src/replies.js";
import type { JournalEvent, RecordWrite, Snapshot, Store } from "../src/store/port.js";

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

export interface EntityBehavior<S, C, E> {
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
   * a host died in between; a new incarnation writes them again before its first command.
   */
  repair(state: S): readonly RecordWrite[];
}

/** Told of every command that persisted events, after the persist; commands without events too, when `always`. */
export type AfterPersist = (type: string, id: string, state: unknown, events: readonly unknown[], command: unknown) => void;


interface Envelope<C> {
  readonly command: C;
  readonly sender: unknown;
}

/** The journal entry of a decision with several events; folded event by event on recovery. */
const BATCH = "__events";
interface EventBatch<E> {
  readonly [BATCH]: readonly E[];
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

/** nact's persistence engine over the store port. */
class StoreEngine {
  constructor(private readonly store: Store) {}

  events(key: string, offset: number) {
    const load = this.store.events(key, offset);
    return {
      reduce: async <A>(f: (acc: Promise<A>, e: unknown, i: number) => Promise<A>, init: Promise<A>) => {
        const events = await load;
        let acc = init;
        events.forEach((e, i) => {
          acc = f(acc, { data: e.data, sequenceNumber: e.seq, isDeleted: false }, i + 1);
        });
        return acc;
      },
    };
  }

  async latestSnapshot(key: string) {
    const s = await this.store.latestSnapshot(key);
    return s ? { data: s.data, sequenceNumber: s.seq } : undefined;
  }

  takeSnapshot(snapshot: { data: unknown; sequenceNumber: number; key: string; createdAt: number }) {
    const s: Snapshot = { key: snapshot.key, seq: snapshot.sequenceNumber, data: snapshot.data, createdAt: snapshot.createdAt };
    return this.store.saveSnapshot(s);
  }

  persist(event: { data: unknown; sequenceNumber: number; key: string; createdAt: number }, writes: readonly RecordWrite[] = []) {
    const e: JournalEvent = { key: event.key, seq: event.sequenceNumber, data: event.data, createdAt: event.createdAt };
    return this.store.commit({ events: [e], writes });
  }
}

export class ActorHost {
  private readonly system: unknown;
  private readonly refs = new Map<string, unknown>();
  private incarnations = 0;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly askTimeoutMs = 10_000,
    /** Side effects of a change, run after its events are durable (never during recovery replay). */
    private readonly afterPersist: AfterPersist = () => undefined,
  ) {
    this.system = start(configurePersistence(new StoreEngine(store)));
  }

  /** Sends a command to the entity's actor, spawning (and recovering) it when needed. */
  async ask<S, C, E>(behavior: EntityBehavior<S, C, E>, id: string, command: C): Promise<Reply<S>> {
    const key = `${behavior.type}:${id}`;
    let ref = this.refs.get(key);
    if (!ref) {
      // A fresh name each spawn: an evicted incarnation may still be stopping under the old one.
      const name = `${key.replace(/[^A-Za-z0-9_-]/g, "_")}_${++this.incarnations}`;
      ref = spawnPersistent(this.system, this.actorFunction(behavior, key), key, name, {
        snapshotEvery: 50,
        shutdownAfter: 10 * 60_000,
      });
      this.refs.set(key, ref);
    }
    try {
      return (await query(ref, (sender) => ({ command, sender }) satisfies Envelope<C>, this.askTimeoutMs)) as Reply<S>;
    } catch (e) {
      this.evict(key);
      throw e;
    }
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

  private actorFunction<S, C, E>(behavior: EntityBehavior<S, C, E>, key: string) {
    const host = this;
    let repaired = false; // per incarnation: this function is made once per spawn
    return async (state: S | undefined, msg: unknown, ctx: { recovering?: boolean; self: unknown; persist: (e: E | EventBatch<E>, tags: string[], writes: readonly RecordWrite[]) => Promise<void> }) => {
      const current = state ?? behavior.initial;
      if (ctx.recovering) return isBatch<E>(msg) ? msg[BATCH].reduce(behavior.fold, current) : behavior.fold(current, msg as E);
      const { command, sender } = msg as Envelope<C>;
      if (!repaired) {
        const writes = current === behavior.initial ? [] : behavior.repair(current);
        if (writes.length > 0) {
          try {
            await host.store.commit({ writes });
          } catch (e) {
            dispatch(sender, { ok: false, rejection: { code: Code.Unavailable, message: `the entity could not be recovered: ${(e as Error).message}` } } satisfies Reply<S>);
            return current;
          }
        }
        repaired = true;
      }
      const decision = behavior.decide(current, command);
      if (!Array.isArray(decision)) {
        dispatch(sender, { ok: false, rejection: decision as Rejection } satisfies Reply<S>);
        return current;
      }
      const events = decision as readonly E[];
      let next = current;
      try {
        if (events.length === 1) {
          next = behavior.fold(current, events[0]!);
          await ctx.persist(events[0]!, [], behavior.readModel(next, events[0]!));
        } else if (events.length > 1) {
          // One journal entry and one commit for the whole decision: a reader of the read models
          // never sees part of it (a failed output on a job still processing), nor does a crash.
          const writes: RecordWrite[] = [];
          for (const event of events) {
            next = behavior.fold(next, event);
            writes.push(...behavior.readModel(next, event));
          }
          await ctx.persist({ [BATCH]: events } satisfies EventBatch<E>, [], lastWriteWins(writes));
        }
      } catch (e) {
        // A failed or fenced write leaves this copy's sequence unknown: drop it, recover on next use.
        host.log.error({ err: e, entity: key }, "persist failed; actor evicted");
        host.refs.delete(key);
        dispatch(sender, { ok: false, rejection: { code: Code.Unavailable, message: "the write did not complete; retry" } } satisfies Reply<S>);
        setImmediate(() => stop(ctx.self));
        return current;
      }
      dispatch(sender, { ok: true, state: next } satisfies Reply<S>);
      try {
        host.afterPersist(behavior.type, key.slice(behavior.type.length + 1), next, decision as readonly E[], command);
      } catch (e) {
        host.log.error({ err: e, entity: key }, "side effect after persist failed");
      }
      return next;
    };
  }
}
