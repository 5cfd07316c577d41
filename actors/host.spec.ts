// The actor host over a real embedded store: a decision of several events is one journal entry and
// one commit, and recovery folds it back event by event.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../src/log.js";
import { FileStore } from "../src/store/file-store.js";
import type { Batch, Store } from "../src/store/port.js";
import { ActorHost, type EntityBehavior } from "./host.js";

interface Counter {
  readonly n: number;
  readonly settled: boolean;
}
type Cmd = { readonly type: "add"; readonly by: number } | { readonly type: "settle" };
type Ev = { readonly type: "added"; readonly n: number } | { readonly type: "settled" };

const Behavior: EntityBehavior<Counter, Cmd, Ev> = {
  type: "counter",
  initial: { n: 0, settled: false },
  decide(state, c) {
    if (c.type === "add") return [{ type: "added", n: c.by }];
    // Settling adds the remainder to 10 and settles: two events from one command.
    return [{ type: "added", n: 10 - state.n }, { type: "settled" }];
  },
  fold(state, e) {
    return e.type === "added" ? { ...state, n: state.n + e.n } : { ...state, settled: true };
  },
  readModel(state, e) {
    // The same row twice from one decision: the commit must keep the last.
    return [{ table: "counters", id: "c", value: { n: state.n, settled: state.settled, by: e.type } }];
  },
  repair: () => [],
};

/** A counter whose one own record (its read model and its repair) holds its count. */
function oneRow(type: string, table: string, id: string): EntityBehavior<Counter, Cmd, Ev> {
  const repair = (state: Counter) => [{ table, id, value: { n: state.n } }];
  return { ...Behavior, type, readModel: repair, repair };
}

/** The store, with every commit it was asked for. */
function recording(store: Store) {
  const commits: Batch[] = [];
  return {
    commits,
    store: new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === "commit") return (b: Batch) => (commits.push(b), target.commit(b));
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }),
  };
}

describe("ActorHost", () => {
  const hosts: ActorHost[] = [];
  afterEach(() => hosts.splice(0).forEach((h) => h.stop()));

  /** A host over a fresh embedded store that records every commit. */
  async function openHost() {
    const file = new FileStore(mkdtempSync(path.join(tmpdir(), "host-")));
    await file.open();
    const { store, commits } = recording(file);
    const host = new ActorHost(store, createLogger("silent"));
    hosts.push(host);
    return { file, store, commits, host };
  }

  it("commits a decision of several events once, with one write per record, and recovers it", async () => {
    const { file, store, commits, host } = await openHost();

    expect(await host.ask(Behavior, "c", { type: "add", by: 3 })).toMatchObject({ ok: true, state: { n: 3 } });
    expect(await host.ask(Behavior, "c", { type: "settle" })).toMatchObject({ ok: true, state: { n: 10, settled: true } });

    expect(commits).toHaveLength(2);
    const settle = commits[1]!;
    expect(settle.events).toHaveLength(1);
    expect(settle.events![0]).toMatchObject({ key: "counter:c", seq: 2 });
    expect(settle.writes).toEqual([{ table: "counters", id: "c", value: { n: 10, settled: true, by: "settled" } }]);
    expect(await file.get("counters", "c")).toMatchObject({ value: { n: 10, settled: true } });

    // A new host over the same store recovers both events of the batch entry.
    host.stop();
    const again = new ActorHost(file, createLogger("silent"));
    hosts.push(again);
    expect(await again.ask(Behavior, "c", { type: "add", by: 1 })).toMatchObject({ ok: true, state: { n: 11, settled: true } });
    expect((await file.events("counter:c", 0)).map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it("tells the store the rows of the entity's own records it knows: absent while fresh, then as its commits left them", async () => {
    // Its repair names its row in "tallies" (its own) and, once it has one, in "by_parity" (moved
    // between partitions); "log" rows are written but not its own.
    const Own: EntityBehavior<Counter, Cmd, Ev> = {
      ...Behavior,
      type: "tally",
      readModel: (state) => [...Own.repair(state), { table: "log", id: `n${state.n}`, value: { n: state.n } }],
      repair: (state) => [
        { table: "tallies", id: "t", value: { n: state.n } },
        state.settled
          ? { table: "by_parity", id: "t", value: null }
          : { table: "by_parity", id: "t", value: { n: state.n }, partition: state.n % 2 ? "odd" : "even", sort: "t" },
      ],
    };
    const { file, store, commits, host } = await openHost();
    const known = (i: number) => Object.fromEntries(commits[i]!.writes!.map((w) => [`${w.table}/${w.id}`, w.current]));

    await host.ask(Own, "t", { type: "add", by: 1 });
    await host.ask(Own, "t", { type: "add", by: 2 });
    await host.ask(Own, "t", { type: "settle" });
    expect(known(0)).toEqual({ "tallies/t": null, "by_parity/t": null, "log/n1": undefined });
    expect(known(1)).toEqual({
      "tallies/t": { version: 1, partition: "", sort: "", expiresAt: 0 },
      "by_parity/t": { version: 1, partition: "odd", sort: "t", expiresAt: 0 },
      "log/n3": undefined,
    });
    expect(known(2)).toEqual({
      "tallies/t": { version: 2, partition: "", sort: "", expiresAt: 0 },
      "by_parity/t": { version: 2, partition: "odd", sort: "t", expiresAt: 0 },
      "log/n10": undefined,
    });
    // The embedded store checks each against its row (a wrong one fails the commit): all held.
    expect(await file.get("tallies", "t")).toMatchObject({ version: 3, value: { n: 10 } });
    expect(await file.get("by_parity", "t")).toBeUndefined();

    // Recovered with a journal, an incarnation reads its own rows for its repair, writes over them
    // and knows them from then on.
    host.stop();
    const again = new ActorHost(store, createLogger("silent"));
    hosts.push(again);
    await again.ask(Own, "t", { type: "add", by: 1 });
    await again.ask(Own, "t", { type: "add", by: 1 });
    const [repair, first, second] = commits.slice(3);
    const tally = (version: number) => ({ version, partition: "", sort: "", expiresAt: 0 });
    expect(repair!.events ?? []).toEqual([]);
    expect(repair!.writes!.map((w) => w.current)).toEqual([tally(3), null]);
    expect(first!.writes!.map((w) => w.current)).toEqual([tally(4), null, undefined]);
    expect(second!.writes!.map((w) => w.current)).toEqual([tally(5), null, undefined]);
    // The embedded store checks each against its row: all held.
    expect(await file.get("tallies", "t")).toMatchObject({ version: 6, value: { n: 12 } });
  });

  it("knows the row of an own record that expires while it is far from expiring, and reads one about to", async () => {
    // An encoder node's row: written with a time to live. Known while it is sure to be there when
    // the next write lands; one about to expire may be gone by then, so the store reads it.
    let ttl = 60_000;
    const Expiring: EntityBehavior<Counter, Cmd, Ev> = {
      ...Behavior,
      type: "beacon",
      readModel: (state) => Expiring.repair(state),
      repair: (state) => [{ table: "beacons", id: "b", value: { n: state.n }, expiresAt: Date.now() + ttl }],
    };
    const { file, commits, host } = await openHost();

    expect(await host.ask(Expiring, "b", { type: "add", by: 1 })).toMatchObject({ ok: true });
    ttl = 4_000;
    expect(await host.ask(Expiring, "b", { type: "add", by: 1 })).toMatchObject({ ok: true });
    expect(await host.ask(Expiring, "b", { type: "add", by: 1 })).toMatchObject({ ok: true });
    expect(await host.ask(Expiring, "b", { type: "add", by: 1 })).toMatchObject({ ok: true });
    const expiresAt = commits.map((c) => c.writes![0]!.expiresAt);
    expect(commits.map((c) => c.writes![0]!.current)).toEqual([
      null,
      { version: 1, partition: "", sort: "", expiresAt: expiresAt[0] },
      // Written to expire in 4 s: within the margin, so read.
      undefined,
      // Written over a row read: its version unknown.
      undefined,
    ]);
    // The embedded store checks each against its row (a wrong one fails the commit): all held.
    expect(await file.get("beacons", "b")).toMatchObject({ version: 4, value: { n: 4 } });
  });

  it("after a refused write, the next incarnation of a fresh entity knows none of its rows", async () => {
    // Its own record written by someone else first (a bookkeeping bug): the fresh entity takes it
    // for absent, the embedded store refuses that commit, and the command after it goes through.
    const Own = oneRow("owner", "owned", "o");
    const { file, commits, host } = await openHost();
    await file.commit({ writes: [{ table: "owned", id: "o", value: { n: -1 } }] });

    expect(await host.ask(Own, "o", { type: "add", by: 1 })).toMatchObject({ ok: false, rejection: { message: "the write did not complete; retry" } });
    expect(await host.ask(Own, "o", { type: "add", by: 2 })).toMatchObject({ ok: true, state: { n: 2 } });
    expect(await host.ask(Own, "o", { type: "add", by: 3 })).toMatchObject({ ok: true, state: { n: 5 } });
    expect(commits.map((c) => c.writes![0]!.current)).toEqual([null, undefined, undefined]);
    expect(await file.get("owned", "o")).toMatchObject({ version: 3, value: { n: 5 } });
  });

  it("sends an entity whose commit failed to be rewritten, and a rewrite writes its read models again over rows it reads", async () => {
    const Own = oneRow("rewritten", "rewritten", "r");
    const { file, commits, host } = await openHost();
    const sent: string[] = [];
    host.rewritesVia(async (type, id) => void sent.push(`${type}:${id}`));
    // A row the fresh entity takes for absent: the embedded store refuses the commit.
    await file.commit({ writes: [{ table: "rewritten", id: "r", value: { n: -1 } }] });
    expect(await host.ask(Own, "r", { type: "add", by: 1 })).toMatchObject({ ok: false });
    expect(sent).toEqual(["rewritten:r"]);
    expect(await host.ask(Own, "r", { type: "add", by: 2 })).toMatchObject({ ok: true, state: { n: 2 } });
    expect(await host.ask(Own, "r", { type: "add", by: 3 })).toMatchObject({ ok: true, state: { n: 5 } });
    expect(sent).toHaveLength(1);

    // Another host's refused commit wrote over the row this incarnation knows.
    await file.commit({ writes: [{ table: "rewritten", id: "r", value: { n: 99 } }] });
    const before = commits.length;
    const row = (version: number) => ({ version, partition: "", sort: "", expiresAt: 0 });
    expect(await host.rewrite(Own, "r")).toMatchObject({ ok: true, state: { n: 5 } });
    // Written over the row as read (the other writer's version 4), and known from then on.
    expect(commits.slice(before)).toEqual([{ writes: [{ table: "rewritten", id: "r", value: { n: 5 }, current: row(4) }] }]);
    expect(await file.get("rewritten", "r")).toMatchObject({ version: 5, value: { n: 5 } });
    expect(await host.ask(Own, "r", { type: "add", by: 1 })).toMatchObject({ ok: true, state: { n: 6 } });
    expect(commits.at(-1)!.writes![0]!.current).toEqual(row(5));

    // A rewrite that starts an incarnation is its first command: the recovery's writes are the rewrite.
    host.stop();
    const onFile = recording(file);
    const fresh = new ActorHost(onFile.store, createLogger("silent"));
    hosts.push(fresh);
    expect(await fresh.rewrite(Own, "r")).toMatchObject({ ok: true, state: { n: 6 } });
    expect(onFile.commits).toEqual([{ writes: [{ table: "rewritten", id: "r", value: { n: 6 }, current: row(6) }] }]);
  });
  it("saves no snapshot of a state whose last append failed, so an entry that landed all the same is recovered", async () => {
    // nact snapshots after every 50th append. The 50th here times out after it landed (the store
    // wrote it, then threw): a snapshot under its seq of the state without it would hide it from
    // every later recovery.
    const file = new FileStore(mkdtempSync(path.join(tmpdir(), "host-")));
    await file.open();
    let appends = 0;
    const landsThenFails = new Proxy(file, {
      get(target, prop, receiver) {
        if (prop === "commit")
          return async (b: Batch) => {
            await target.commit(b);
            if (b.events?.length && ++appends === 50) throw new Error("timed out after it landed");
          };
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const host = new ActorHost(landsThenFails, createLogger("silent"));
    hosts.push(host);
    for (let i = 1; i < 50; i++) expect(await host.ask(Behavior, "c", { type: "add", by: 1 })).toMatchObject({ ok: true, state: { n: i } });
    expect(await host.ask(Behavior, "c", { type: "add", by: 1 })).toMatchObject({ ok: false });
    await new Promise((r) => setTimeout(r, 50)); // a snapshot is saved after the command's answer
    expect(await file.latestSnapshot("counter:c")).toBeUndefined();

    // Every later incarnation has the entry that landed; the next appends go on after it.
    expect(await host.wake(Behavior, "c")).toEqual({ n: 50, settled: false });
    expect(await host.ask(Behavior, "c", { type: "add", by: 1 })).toMatchObject({ ok: true, state: { n: 51 } });
    const fresh = new ActorHost(file, createLogger("silent"));
    hosts.push(fresh);
    expect(await fresh.wake(Behavior, "c")).toEqual({ n: 51, settled: false });
  });
});
