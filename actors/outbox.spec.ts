// The relay's recovery of an uncertain append: an entry whose append failed but landed (a store
// going down mid-commit) has its intents run once the journal can be read, even when the relay was
// still busy with an earlier entry's intents when it learned of it.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../src/log.js";
import { metricValue } from "../src/metrics.fixtures.js";
import { FileStore } from "../src/store/file-store.js";
import { EVENTS_FIELD, INTENTS_FIELD, Relay, type Intent } from "./outbox.js";

async function until(what: string, probe: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const entry = (seq: number, intents: Intent[]) => ({
  key: "thing:t1",
  seq,
  data: { [EVENTS_FIELD]: [{ type: "x" }], [INTENTS_FIELD]: intents },
  createdAt: seq,
});

describe("outbox relay", () => {
  it("runs the intents of an uncertain append that landed, though the relay was busy with the entry before it", async () => {
    const store = new FileStore(mkdtempSync(path.join(tmpdir(), "relay-")));
    await store.open();
    const relay = new Relay(store, createLogger("silent"), { partitions: 1, retryMs: 5, idleMs: 20 });
    const ran: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let woken = 0;
    relay.register<Intent, unknown>("thing", {
      slow: async (_i, ctx) => {
        ran.push(`slow ${ctx.seq}`);
        await gate;
      },
      fast: async (_i, ctx) => void ran.push(`fast ${ctx.seq} ${ctx.recovered ? "recovered" : "live"}`),
    });
    // The first wake fails (the store is still down), the next one succeeds.
    relay.attach(async () => {
      if (++woken === 1) throw new Error("store unavailable");
      return {};
    });
    relay.assign([0]);

    await relay.beforeAppend("thing", "t1", 1);
    await store.commit({ events: [entry(1, [{ kind: "slow" }])] });
    relay.appended("thing", "t1", 1, [{ kind: "slow" }], {});
    await until("the first entry's intent running", () => ran.includes("slow 1"));

    // The second append "fails" after landing: the host tells the relay it is uncertain.
    await relay.beforeAppend("thing", "t1", 2);
    await store.commit({ events: [entry(2, [{ kind: "fast" }])] });
    relay.uncertain("thing", "t1");
    release();

    await until("the landed entry's intent run", () => ran.includes("fast 2 recovered"));
    expect(ran).toEqual(["slow 1", "fast 2 recovered"]);
    expect(woken).toBe(2);
    relay.stop();
    await store.close();
  });
});

describe("outbox markers", () => {
  it("are written knowing their rows (no read first) and without an atomic batch, through write, record, removal, a new write and a takeover", async () => {
    const store = new FileStore(mkdtempSync(path.join(tmpdir(), "relay-")));
    await store.open();
    // The embedded store checks every known row against the stored one: a wrong one fails the commit.
    const commits: { readonly current: unknown; readonly independent: unknown; readonly failed?: string }[] = [];
    const commit = store.commit.bind(store);
    store.commit = async (batch) => {
      const marker = batch.writes?.find((w) => w.table === "outbox");
      try {
        await commit(batch);
        if (marker) commits.push({ current: marker.current, independent: batch.independent });
      } catch (e) {
        if (marker) commits.push({ current: marker.current, independent: batch.independent, failed: (e as Error).message });
        throw e;
      }
    };
    const ran: number[] = [];
    const relay = new Relay(store, createLogger("silent"), { partitions: 1, retryMs: 5, idleMs: 20, recordEvery: 1 });
    relay.register<Intent, unknown>("thing", { fast: async (_i, ctx) => void ran.push(ctx.seq) });
    relay.attach(async () => ({}));
    relay.assign([0]);
    const append = async (seq: number) => {
      await relay.beforeAppend("thing", "t1", seq);
      await store.commit({ events: [entry(seq, [{ kind: "fast" }])] });
      relay.appended("thing", "t1", seq, [{ kind: "fast" }], {});
    };
    const markerRow = async () => (await store.get("outbox", "thing:t1"))?.version;

    await append(1);
    await until("the marker removed after the entity went idle", () => commits.length === 3);
    expect(await markerRow()).toBeUndefined();
    await append(2);
    await until("the second marker recorded", () => commits.length === 5);
    expect(await markerRow()).toBe(2);
    relay.stop();

    // A new owner loads the marker with its row, and removes it without reading it.
    const next = new Relay(store, createLogger("silent"), { partitions: 1, retryMs: 5, idleMs: 20, recordEvery: 1 });
    next.register<Intent, unknown>("thing", { fast: async () => undefined });
    next.attach(async () => ({}));
    next.assign([0]);
    await until("the new owner's removal", () => commits.length === 6);
    next.stop();
    await store.close();

    const row = (version: number) => ({ version, partition: "s0", sort: "thing:t1", expiresAt: 0 });
    expect(commits).toEqual([
      { current: null, independent: true }, // marked before the first append
      { current: row(1), independent: true }, // relayed up to 1 recorded
      { current: row(2), independent: true }, // removed when idle
      { current: null, independent: true },
      { current: row(1), independent: true },
      { current: row(2), independent: true }, // the new owner's removal
    ]);
    expect(ran).toEqual([1, 2]);
  });
});

describe("outbox relay when it stops", () => {
  it("leaves queued work to the next owner instead of draining it again forever", async () => {
    const store = new FileStore(mkdtempSync(path.join(tmpdir(), "relay-")));
    await store.open();
    const relay = new Relay(store, createLogger("silent"), { partitions: 1, retryMs: 5, idleMs: 20 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let runs = 0;
    relay.register<Intent, unknown>("thing", {
      slow: async () => {
        runs++;
        await gate;
      },
    });
    relay.attach(async () => ({}));
    relay.assign([0]);
    for (const seq of [1, 2]) {
      await relay.beforeAppend("thing", "t1", seq);
      await store.commit({ events: [entry(seq, [{ kind: "slow" }])] });
      relay.appended("thing", "t1", seq, [{ kind: "slow" }], {});
    }
    await until("the first intent running", () => runs === 1);
    relay.stop();
    release();
    // A spinning drain would starve the event loop: this timer would never fire.
    const ticked = await Promise.race([
      new Promise<boolean>((r) => setTimeout(() => r(true), 50)),
      new Promise<boolean>((r) => setTimeout(() => r(false), 2_000).unref()),
    ]);
    expect(ticked).toBe(true);
    expect(runs).toBe(1);
    await store.close();
  });
});

describe("outbox relay metrics", () => {
  it("shows the intents waiting, and times each from its entry's commit to the end of its run", async () => {
    const store = new FileStore(mkdtempSync(path.join(tmpdir(), "relay-")));
    await store.open();
    const relay = new Relay(store, createLogger("silent"), { partitions: 1, retryMs: 5, idleMs: 20 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let slowRuns = 0;
    relay.register<Intent, unknown>("gauged", {
      slow: async () => {
        slowRuns++;
        await gate;
      },
      fast: async () => undefined,
    });
    relay.attach(async () => ({}));
    relay.assign([0]);
    const waiting = () => metricValue("media_outbox_intents_waiting");
    const timed = (kind: string) => metricValue("media_outbox_relay_lag_seconds_count", { entity: "gauged", kind });
    const before = { slow: await timed("slow"), fast: await timed("fast") };
    expect(await waiting()).toBe(0);

    await relay.beforeAppend("gauged", "g1", 1);
    await store.commit({ events: [{ ...entry(1, []), key: "gauged:g1" }] });
    relay.appended("gauged", "g1", 1, [{ kind: "slow" }, { kind: "fast" }], {});
    await relay.beforeAppend("gauged", "g1", 2);
    relay.appended("gauged", "g1", 2, [{ kind: "fast" }], {});
    await until("the slow intent running", () => slowRuns === 1);
    // The running intent counts until it ends, and the two behind it.
    expect(await waiting()).toBe(3);
    await new Promise((r) => setTimeout(r, 50));
    release();
    await until("every intent run", () => relay.waiting() === 0);
    expect(await waiting()).toBe(0);
    expect(await timed("slow")).toBe(before.slow + 1);
    expect(await timed("fast")).toBe(before.fast + 2);
    // The slow one waited on its gate for 50 ms at least; the lag sums that.
    expect(await metricValue("media_outbox_relay_lag_seconds_sum", { entity: "gauged", kind: "slow" })).toBeGreaterThanOrEqual(0.045);
    relay.stop();
    await store.close();
  });
});
