// The contract of the store port: one suite every adapter passes (FileStore in
// file-store.spec.ts, CassandraStore in test/cluster/cassandra-store.test.ts).
// Every case uses its own random table names and journal keys, so adapters may share one
// backend (one Cassandra keyspace) between cases.
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { VersionConflict } from "../errors.js";
import type { JournalEvent, Store } from "./port.js";

/**
 * An opened store. reopen, when given, closes it and opens a new one over the same data. race, when
 * given, runs a racing writer between the next commit's checks and its first write (a store that
 * applies a batch whole, like the FileStore, has no such moment).
 */
export type ContractStore = Store & { reopen?: () => Promise<Store>; race?: (racer: () => Promise<void>) => void };

const unique = (prefix: string) => `${prefix}_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
const event = (key: string, seq: number, data: unknown = seq): JournalEvent => ({ key, seq, data, createdAt: 1_700_000_000_000 + seq });

export function storeContract(name: string, make: () => Promise<ContractStore>): void {
  describe(`${name}: store contract`, () => {
    const opened: Store[] = [];
    const fresh = async (): Promise<ContractStore> => {
      const s = await make();
      opened.push(s);
      return s;
    };
    afterEach(async () => {
      for (const s of opened.splice(0).reverse()) await s.close().catch(() => {});
    });

    it("journal appends only the next sequence number: a stale writer is fenced", async () => {
      const s = await fresh();
      const k = unique("k");
      await s.commit({ events: [event(k, 1, "a")] });
      // Two owners both read seq 1 and race to write seq 2: exactly one wins.
      const results = await Promise.allSettled([
        s.commit({ events: [event(k, 2, "b")] }),
        Promise.resolve().then(() => s.commit({ events: [event(k, 2, "c")] })),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      const rejected = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
      expect(rejected.reason).toBeInstanceOf(VersionConflict);
      expect((await s.events(k, 0)).map((e) => e.seq)).toEqual([1, 2]);
      await expect(s.commit({ events: [event(k, 4, "gap")] })).rejects.toBeInstanceOf(VersionConflict);
      await expect(s.commit({ events: [event(k, 2, "again")] })).rejects.toBeInstanceOf(VersionConflict);
      await expect(s.commit({ events: [event(k, 3), event(k, 5)] })).rejects.toBeInstanceOf(VersionConflict);
      expect((await s.events(k, 0)).map((e) => e.seq)).toEqual([1, 2]);
    });

    it("concurrent writers of seq n+1: one wins each round, the journal has no gap and no duplicate", async () => {
      const s = await fresh();
      const k = unique("k");
      await s.commit({ events: [event(k, 1, "w0")] });
      const winners: string[] = ["w0"];
      const t = unique("t");
      for (let seq = 2; seq <= 6; seq++) {
        // Each writer also writes its read-model row: only the winner's may land.
        const results = await Promise.allSettled(
          ["x", "y"].map((w) =>
            Promise.resolve().then(() => s.commit({ events: [event(k, seq, `${w}${seq}`)], writes: [{ table: t, id: `${w}${seq}`, value: seq }] })),
          ),
        );
        const won = results.flatMap((r, i) => (r.status === "fulfilled" ? [`${["x", "y"][i]}${seq}`] : []));
        expect(won).toHaveLength(1);
        const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
        expect(lost.reason).toBeInstanceOf(VersionConflict);
        winners.push(won[0]!);
        expect(await s.get(t, won[0]!)).toMatchObject({ value: seq });
        expect(await s.get(t, won[0] === `x${seq}` ? `y${seq}` : `x${seq}`)).toBeUndefined();
      }
      const journal = await s.events(k, 0);
      expect(journal.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(journal.map((e) => e.data)).toEqual(winners);
      expect((await s.events(k, 4)).map((e) => e.seq)).toEqual([5, 6]);
    });

    it("events of several keys in one batch, in order; events() returns them ascending", async () => {
      const s = await fresh();
      const [a, b] = [unique("a"), unique("b")];
      await s.commit({ events: [event(a, 1), event(b, 1), event(a, 2), { key: a, seq: 3, data: { nested: [1, "x", null] }, createdAt: 7 }] });
      expect(await s.events(a, 0)).toEqual([event(a, 1), event(a, 2), { key: a, seq: 3, data: { nested: [1, "x", null] }, createdAt: 7 }]);
      expect((await s.events(b, 0)).map((e) => e.seq)).toEqual([1]);
      expect(await s.events(unique("none"), 0)).toEqual([]);
      const many = Array.from({ length: 620 }, (_, i) => event(b, i + 2));
      await s.commit({ events: many });
      const all = await s.events(b, 0);
      expect(all).toHaveLength(621);
      expect(all.every((e, i) => e.seq === i + 1)).toBe(true);
      expect((await s.events(b, 600)).map((e) => e.seq)).toEqual(Array.from({ length: 21 }, (_, i) => 601 + i));
    });

    it("conditional record writes: 0 means absent, n means at version n; a condition failing at the check writes nothing", async () => {
      const s = await fresh();
      const t = unique("t");
      await s.commit({ writes: [{ table: t, id: "a", value: { n: 1 }, expectedVersion: 0 }] });
      await expect(s.commit({ writes: [{ table: t, id: "a", value: { n: 2 }, expectedVersion: 0 }] })).rejects.toBeInstanceOf(VersionConflict);
      await s.commit({ writes: [{ table: t, id: "a", value: { n: 2 }, expectedVersion: 1 }] });
      await expect(
        s.commit({
          writes: [
            { table: t, id: "b", value: 1, expectedVersion: 0 },
            { table: t, id: "a", value: 3, expectedVersion: 1 },
          ],
        }),
      ).rejects.toBeInstanceOf(VersionConflict);
      expect(await s.get(t, "b")).toBeUndefined();
      expect(await s.get(t, "a")).toMatchObject({ id: "a", value: { n: 2 }, version: 2 });
      await expect(s.commit({ writes: [{ table: t, id: "missing", value: 1, expectedVersion: 1 }] })).rejects.toBeInstanceOf(VersionConflict);
      expect(await s.get(t, "missing")).toBeUndefined();
    });

    it("a condition failing at the check writes nothing: no event, no claim, no unconditional write", async () => {
      const s = await fresh();
      const [claims, rows, k] = [unique("claims"), unique("rows"), unique("k")];
      await s.commit({ events: [event(k, 1)], writes: [{ table: rows, id: "owner", value: { v: 1 }, partition: "p", sort: "s1", expectedVersion: 0 }] });
      await s.commit({ writes: [{ table: rows, id: "owner", value: { v: 2 } }] }); // now at version 2
      const failing = {
        events: [event(k, 2)],
        writes: [
          { table: claims, id: "slug", value: { owner: "x" }, expectedVersion: 0 }, // would succeed
          { table: rows, id: "existing", value: 1, partition: "p", sort: "s9" }, // unconditional
          { table: rows, id: "owner", value: { v: 3 }, expectedVersion: 1 }, // stale: fails
        ],
      };
      await expect(s.commit(failing)).rejects.toBeInstanceOf(VersionConflict);
      expect(await s.get(claims, "slug")).toBeUndefined();
      expect(await s.get(rows, "existing")).toBeUndefined();
      expect(await s.get(rows, "owner")).toMatchObject({ value: { v: 2 }, version: 2 });
      expect((await s.events(k, 0)).map((e) => e.seq)).toEqual([1]);
      expect((await s.scan(rows, "p", { limit: 10 })).items.map((r) => r.id)).toEqual(["owner"]);
      // A gap in the events fails at the check too, before any record is written.
      await expect(s.commit({ ...failing, events: [event(k, 3)], writes: failing.writes.slice(0, 2) })).rejects.toBeInstanceOf(VersionConflict);
      expect(await s.get(claims, "slug")).toBeUndefined();
      expect(await s.get(rows, "existing")).toBeUndefined();
      // The same batch with the right version goes through.
      await s.commit({ ...failing, writes: failing.writes.map((w) => (w.id === "owner" ? { ...w, expectedVersion: 2 } : w)) });
      expect(await s.get(claims, "slug")).toMatchObject({ version: 1 });
      expect(await s.get(rows, "owner")).toMatchObject({ value: { v: 3 }, version: 3 });
      expect((await s.events(k, 0)).map((e) => e.seq)).toEqual([1, 2]);
      expect((await s.scan(rows, "p", { limit: 10 })).items.map((r) => r.id)).toEqual(["existing", "owner"]);
    });

    it("steps apply in order (events, conditional writes in batch order, unconditional writes): a failed one keeps those before it", async (ctx) => {
      const s = await fresh();
      if (!s.race) return ctx.skip();
      const [claims, rows, k] = [unique("claims"), unique("rows"), unique("k")];
      await s.commit({ events: [event(k, 1)], writes: [{ table: rows, id: "owner", value: { v: 1 }, partition: "p", sort: "1" }] });
      // Every condition holds when checked; a racing writer then changes "owner" before its compare-and-set.
      s.race(() => s.commit({ writes: [{ table: rows, id: "owner", value: { v: "racer" }, expectedVersion: 1 }] }));
      await expect(
        s.commit({
          events: [event(k, 2)],
          writes: [
            { table: rows, id: "loose", value: 1, partition: "p", sort: "5" }, // unconditional: last, whatever its place
            { table: claims, id: "first", value: { owner: "me" }, expectedVersion: 0 },
            { table: rows, id: "owner", value: { v: 2 }, expectedVersion: 1 }, // loses the race
            { table: claims, id: "second", value: { owner: "me" }, expectedVersion: 0 },
          ],
        }),
      ).rejects.toBeInstanceOf(VersionConflict);
      expect((await s.events(k, 0)).map((e) => e.seq)).toEqual([1, 2]);
      expect(await s.get(claims, "first")).toMatchObject({ value: { owner: "me" }, version: 1 });
      expect(await s.get(rows, "owner")).toMatchObject({ value: { v: "racer" }, version: 2 });
      expect(await s.get(claims, "second")).toBeUndefined();
      expect(await s.get(rows, "loose")).toBeUndefined();
      expect((await s.scan(rows, "p", { limit: 10 })).items.map((r) => [r.id, r.version])).toEqual([["owner", 2]]);
    });

    it("versions count every write; unconditional writes keep partition and sort unless given; deletes", async () => {
      const s = await fresh();
      const t = unique("t");
      await s.commit({ writes: [{ table: t, id: "a", value: "v1", partition: "p", sort: "s1" }] });
      await s.commit({ writes: [{ table: t, id: "a", value: "v2" }] });
      expect(await s.get(t, "a")).toEqual({ id: "a", version: 2, partition: "p", sort: "s1", value: "v2", expiresAt: 0 });
      expect((await s.scan(t, "p", { limit: 10 })).items.map((r) => [r.sort, r.value, r.version])).toEqual([["s1", "v2", 2]]);
      // Several writes of one record in one batch: the last one wins, the version goes up once.
      await s.commit({
        writes: [
          { table: t, id: "a", value: "v3", sort: "s3" },
          { table: t, id: "a", value: "v4" },
        ],
      });
      expect(await s.get(t, "a")).toMatchObject({ version: 3, value: "v4", sort: "s3" });
      expect((await s.scan(t, "p", { limit: 10 })).items.map((r) => [r.id, r.sort, r.value, r.version])).toEqual([["a", "s3", "v4", 3]]);
      await expect(s.commit({ writes: [{ table: t, id: "a", value: null, expectedVersion: 2 }] })).rejects.toBeInstanceOf(VersionConflict);
      expect(await s.get(t, "a")).toBeDefined();
      await s.commit({ writes: [{ table: t, id: "a", value: null, expectedVersion: 3 }] });
      expect(await s.get(t, "a")).toBeUndefined();
      expect((await s.scan(t, "p", { limit: 10 })).total).toBe(0);
      await s.commit({ writes: [{ table: t, id: "a", value: "again", expectedVersion: 0 }] });
      expect(await s.get(t, "a")).toMatchObject({ version: 1, partition: "", sort: "" });
      await s.commit({ writes: [{ table: t, id: "never", value: null }] }); // deleting nothing is fine
      expect(await s.get(t, "never")).toBeUndefined();
      expect(await s.get(unique("other"), "a")).toBeUndefined();
    });

    it("a write given its record's current row (its only writer's knowledge) ends as one read first would", async () => {
      const s = await fresh();
      const t = unique("t");
      const row = (version: number, partition: string, sort: string) => ({ version, partition, sort, expiresAt: 0 });
      await s.commit({ writes: [{ table: t, id: "a", value: "v1", partition: "p", sort: "s1", current: null }] });
      expect(await s.get(t, "a")).toEqual({ id: "a", version: 1, partition: "p", sort: "s1", value: "v1", expiresAt: 0 });
      // Moved to another partition: the index row under the old one goes.
      await s.commit({ writes: [{ table: t, id: "a", value: "v2", partition: "q", sort: "s2", current: row(1, "p", "s1") }] });
      expect(await s.get(t, "a")).toEqual({ id: "a", version: 2, partition: "q", sort: "s2", value: "v2", expiresAt: 0 });
      expect((await s.scan(t, "p", { limit: 10 })).total).toBe(0);
      expect((await s.scan(t, "q", { limit: 10 })).items.map((r) => [r.id, r.sort, r.value, r.version])).toEqual([["a", "s2", "v2", 2]]);
      // Partition and sort kept when not given; then deleted, index and all.
      await s.commit({ writes: [{ table: t, id: "a", value: "v3", current: row(2, "q", "s2") }] });
      expect(await s.get(t, "a")).toMatchObject({ version: 3, partition: "q", sort: "s2", value: "v3" });
      await s.commit({ writes: [{ table: t, id: "a", value: null, current: row(3, "q", "s2") }] });
      expect(await s.get(t, "a")).toBeUndefined();
      expect((await s.scan(t, "q", { limit: 10 })).total).toBe(0);
    });

    it("a delete of a record without an index row, said so (unindexed), deletes it whether it is there or not", async () => {
      const s = await fresh();
      const t = unique("t");
      await s.commit({ writes: [{ table: t, id: "a", value: "a1" }] });
      await s.commit({ writes: [{ table: t, id: "a", value: null, unindexed: true }] });
      expect(await s.get(t, "a")).toBeUndefined();
      await s.commit({ writes: [{ table: t, id: "a", value: null, unindexed: true }] });
      expect(await s.get(t, "a")).toBeUndefined();
      // Written again afresh: its version starts over, as after any delete.
      await s.commit({ writes: [{ table: t, id: "a", value: "a2" }] });
      expect(await s.get(t, "a")).toMatchObject({ version: 1, value: "a2" });
    });

    it("an independent batch's writes land as a plain one's do: records, index rows, versions, deletes", async () => {
      const s = await fresh();
      const t = unique("t");
      await s.commit({
        writes: [
          { table: t, id: "a", value: "a1", partition: "p", sort: "a", current: null },
          { table: t, id: "b", value: "b1", partition: "p", sort: "b" },
        ],
        independent: true,
      });
      await s.commit({ writes: [{ table: t, id: "a", value: "a2", current: { version: 1, partition: "p", sort: "a", expiresAt: 0 } }], independent: true });
      expect(await s.get(t, "a")).toEqual({ id: "a", version: 2, partition: "p", sort: "a", value: "a2", expiresAt: 0 });
      expect((await s.scan(t, "p", { limit: 10 })).items.map((r) => [r.id, r.value, r.version])).toEqual([
        ["b", "b1", 1],
        ["a", "a2", 2],
      ]);
      await s.commit({ writes: [{ table: t, id: "b", value: null }], independent: true });
      expect(await s.get(t, "b")).toBeUndefined();
      expect((await s.scan(t, "p", { limit: 10 })).items.map((r) => r.id)).toEqual(["a"]);
    });

    it("survives reopen and keeps versions, events and snapshots", async (ctx) => {
      const s = await fresh();
      if (!s.reopen) return ctx.skip();
      const [t, k] = [unique("t"), unique("k")];
      await s.commit({ writes: [{ table: t, id: "a", value: 1, partition: "p", sort: "1" }], events: [{ key: k, seq: 1, data: {}, createdAt: 1 }] });
      await s.commit({ writes: [{ table: t, id: "a", value: 2 }] });
      await s.saveSnapshot({ key: k, seq: 1, data: { s: 1 }, createdAt: 1 });
      const again = await s.reopen();
      opened.push(again);
      expect(await again.get(t, "a")).toMatchObject({ value: 2, version: 2, partition: "p", sort: "1" });
      expect((await again.events(k, 0)).length).toBe(1);
      expect((await again.latestSnapshot(k))?.data).toEqual({ s: 1 });
      expect((await again.scan(t, "p", { limit: 5 })).items.map((r) => r.value)).toEqual([2]);
      await again.commit({ writes: [{ table: t, id: "a", value: 3, expectedVersion: 2 }], events: [event(k, 2)] });
      expect(await again.get(t, "a")).toMatchObject({ value: 3, version: 3 });
    });

    it("snapshots: the latest is kept, an older one is ignored", async () => {
      const s = await fresh();
      const k = unique("k");
      expect(await s.latestSnapshot(k)).toBeUndefined();
      await s.saveSnapshot({ key: k, seq: 5, data: { at: 5 }, createdAt: 50 });
      await s.saveSnapshot({ key: k, seq: 3, data: { at: 3 }, createdAt: 60 });
      expect(await s.latestSnapshot(k)).toEqual({ key: k, seq: 5, data: { at: 5 }, createdAt: 50 });
      await s.saveSnapshot({ key: k, seq: 9, data: { at: 9 }, createdAt: 70 });
      expect((await s.latestSnapshot(k))?.seq).toBe(9);
    });

    it("scans a partition newest first, with before, offset, filter and totals", async () => {
      const s = await fresh();
      const t = unique("t");
      for (let i = 0; i < 5; i++) await s.commit({ writes: [{ table: t, id: `r${i}`, value: { i }, partition: "p", sort: `s${i}` }] });
      const first = await s.scan<{ i: number }>(t, "p", { limit: 2 });
      expect(first.items.map((r) => r.value.i)).toEqual([4, 3]);
      expect(first.more).toBe(true);
      expect(first.total).toBe(5);
      expect(first.items[0]).toEqual({ id: "r4", version: 1, partition: "p", sort: "s4", value: { i: 4 }, expiresAt: 0 });
      const next = await s.scan<{ i: number }>(t, "p", { limit: 2, before: first.items[1]!.sort });
      expect(next.items.map((r) => r.value.i)).toEqual([2, 1]);
      expect(next.more).toBe(true);
      const last = await s.scan<{ i: number }>(t, "p", { limit: 2, before: next.items[1]!.sort });
      expect(last.items.map((r) => r.value.i)).toEqual([0]);
      expect(last.more).toBe(false);
      const odd = await s.scan<{ i: number }>(t, "p", { limit: 10, filter: (v) => v.i % 2 === 1 });
      expect(odd.items.map((r) => r.value.i)).toEqual([3, 1]);
      expect(odd.total).toBe(2);
      expect((await s.scan(t, "p", { limit: 10, offset: 3 })).items).toHaveLength(2);
      expect(await s.scan(t, "other", { limit: 10 })).toEqual({ items: [], more: false, total: 0 });
      // Moving a record to another partition or sort key moves it in the listings.
      await s.commit({ writes: [{ table: t, id: "r4", value: { i: 4 }, partition: "q", sort: "s4" }] });
      await s.commit({ writes: [{ table: t, id: "r0", value: { i: 0 }, sort: "s9", expectedVersion: 1 }] });
      expect((await s.scan<{ i: number }>(t, "p", { limit: 10 })).items.map((r) => [r.value.i, r.version])).toEqual([
        [0, 2],
        [3, 1],
        [2, 1],
        [1, 1],
      ]);
      expect((await s.scan(t, "q", { limit: 10 })).items.map((r) => r.id)).toEqual(["r4"]);
      // A record without a partition is not listed.
      await s.commit({ writes: [{ table: t, id: "loose", value: 1 }] });
      expect((await s.scan(t, "", { limit: 10 })).total).toBe(0);
    });

    it("scans page through a large partition", async () => {
      const s = await fresh();
      const t = unique("t");
      const n = 1_100;
      const pad = (i: number) => String(i).padStart(5, "0");
      await s.commit({
        writes: Array.from({ length: n }, (_, i) => ({ table: t, id: `r${pad(i)}`, value: { i, text: "x".repeat(40) }, partition: "big", sort: pad(i) })),
      });
      const top = await s.scan<{ i: number }>(t, "big", { limit: 3 });
      expect(top.items.map((r) => r.value.i)).toEqual([1099, 1098, 1097]);
      expect(top.total).toBe(n);
      const deep = await s.scan<{ i: number }>(t, "big", { limit: 2, offset: 1_000 });
      expect(deep.items.map((r) => r.value.i)).toEqual([99, 98]);
      const tail = await s.scan<{ i: number }>(t, "big", { limit: 600, before: pad(550) });
      expect(tail.items).toHaveLength(550);
      expect(tail.more).toBe(false);
      const sevens = await s.scan<{ i: number }>(t, "big", { limit: 5, filter: (v) => v.i % 7 === 0 });
      expect(sevens.total).toBe(158);
      expect(sevens.items.map((r) => r.value.i)).toEqual([1099, 1092, 1085, 1078, 1071]);
      expect(sevens.more).toBe(true);
    });

    it("expired records read as absent, in get, scan and conditions", async () => {
      const s = await fresh();
      const t = unique("t");
      await s.commit({ writes: [{ table: t, id: "x", value: 1, expiresAt: Date.now() - 1 }] });
      expect(await s.get(t, "x")).toBeUndefined();
      await s.commit({ writes: [{ table: t, id: "x", value: 1, expectedVersion: 0 }] });
      expect(await s.get(t, "x")).toMatchObject({ version: 1, expiresAt: 0 });
      const soon = Date.now() + 4_000; // room for four round trips to a loaded Cassandra
      await s.commit({
        writes: [
          { table: t, id: "later", value: "l", partition: "p", sort: "2", expiresAt: Date.now() + 3_600_000 },
          { table: t, id: "soon", value: "s", partition: "p", sort: "1", expiresAt: soon },
          { table: t, id: "gone", value: "g", partition: "p", sort: "0", expiresAt: Date.now() - 1 },
        ],
      });
      expect(await s.get(t, "soon")).toMatchObject({ value: "s", expiresAt: soon });
      expect((await s.scan(t, "p", { limit: 10 })).items.map((r) => r.id)).toEqual(["later", "soon"]);
      await expect(s.commit({ writes: [{ table: t, id: "soon", value: "s2", expectedVersion: 0 }] })).rejects.toBeInstanceOf(VersionConflict);
      await new Promise((r) => setTimeout(r, soon - Date.now() + 20));
      expect(await s.get(t, "soon")).toBeUndefined();
      expect((await s.scan(t, "p", { limit: 10 })).items.map((r) => r.id)).toEqual(["later"]);
      await expect(s.commit({ writes: [{ table: t, id: "soon", value: "s3", expectedVersion: 1 }] })).rejects.toBeInstanceOf(VersionConflict);
      await s.commit({ writes: [{ table: t, id: "soon", value: "s3", expectedVersion: 0 }] });
      expect(await s.get(t, "soon")).toMatchObject({ value: "s3", version: 1, expiresAt: 0 });
    });

    it("reports health while open", async () => {
      const s = await fresh();
      expect(await s.health()).toEqual({ ok: true });
    });
  });
}
