// Contract of the store port, run against the embedded file store.
import { appendFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { VersionConflict } from "../errors.js";
import { FileStore } from "./file-store.js";

const dir = () => mkdtempSync(path.join(tmpdir(), "store-"));

async function opened(d = dir()) {
  const s = new FileStore(d);
  await s.open();
  return { s, d };
}

describe("FileStore", () => {
  it("journal appends only the next sequence number: a stale writer is fenced", async () => {
    const { s } = await opened();
    await s.commit({ events: [{ key: "k", seq: 1, data: "a", createdAt: 1 }] });
    // Two owners both read seq 1 and race to write seq 2: exactly one wins.
    const results = await Promise.allSettled([
      s.commit({ events: [{ key: "k", seq: 2, data: "b", createdAt: 2 }] }),
      Promise.resolve().then(() => s.commit({ events: [{ key: "k", seq: 2, data: "c", createdAt: 2 }] })),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const rejected = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(rejected.reason).toBeInstanceOf(VersionConflict);
    expect((await s.events("k", 0)).map((e) => e.seq)).toEqual([1, 2]);
    await expect(s.commit({ events: [{ key: "k", seq: 4, data: "gap", createdAt: 3 }] })).rejects.toBeInstanceOf(VersionConflict);
  });

  it("conditional record writes: 0 means absent, n means at version n; batches are all or nothing", async () => {
    const { s } = await opened();
    await s.commit({ writes: [{ table: "t", id: "a", value: { n: 1 }, expectedVersion: 0 }] });
    await expect(s.commit({ writes: [{ table: "t", id: "a", value: { n: 2 }, expectedVersion: 0 }] })).rejects.toBeInstanceOf(VersionConflict);
    await s.commit({ writes: [{ table: "t", id: "a", value: { n: 2 }, expectedVersion: 1 }] });
    await expect(
      s.commit({ writes: [{ table: "t", id: "b", value: 1, expectedVersion: 0 }, { table: "t", id: "a", value: 3, expectedVersion: 1 }] }),
    ).rejects.toBeInstanceOf(VersionConflict);
    expect(await s.get("t", "b")).toBeUndefined();
    expect((await s.get("t", "a"))?.version).toBe(2);
  });

  it("survives reopen, keeps versions, and drops a torn last line", async () => {
    const { s, d } = await opened();
    await s.commit({ writes: [{ table: "t", id: "a", value: 1 }], events: [{ key: "k", seq: 1, data: {}, createdAt: 1 }] });
    await s.commit({ writes: [{ table: "t", id: "a", value: 2 }] });
    await s.saveSnapshot({ key: "k", seq: 1, data: { s: 1 }, createdAt: 1 });
    await s.close();
    appendFileSync(path.join(d, "store.log"), '{"w":[{"table":"t","id":"torn"'); // crash mid-write
    const { s: again } = await opened(d);
    expect(await again.get("t", "a")).toMatchObject({ value: 2, version: 2 });
    expect(await again.get("t", "torn")).toBeUndefined();
    expect((await again.events("k", 0)).length).toBe(1);
    expect((await again.latestSnapshot("k"))?.data).toEqual({ s: 1 });
    await again.commit({ writes: [{ table: "t", id: "after", value: 1 }] });
    await again.close();
    const { s: third } = await opened(d);
    expect(await third.get("t", "after")).toBeDefined();
  });

  it("scans a partition newest first, with before, offset, filter and totals", async () => {
    const { s } = await opened();
    for (let i = 0; i < 5; i++) await s.commit({ writes: [{ table: "t", id: `r${i}`, value: { i }, partition: "p", sort: `s${i}` }] });
    const first = await s.scan<{ i: number }>("t", "p", { limit: 2 });
    expect(first.items.map((r) => r.value.i)).toEqual([4, 3]);
    expect(first.more).toBe(true);
    const next = await s.scan<{ i: number }>("t", "p", { limit: 2, before: first.items[1]!.sort });
    expect(next.items.map((r) => r.value.i)).toEqual([2, 1]);
    const odd = await s.scan<{ i: number }>("t", "p", { limit: 10, filter: (v) => v.i % 2 === 1 });
    expect(odd.items.map((r) => r.value.i)).toEqual([3, 1]);
    expect(odd.total).toBe(2);
    expect((await s.scan("t", "p", { limit: 10, offset: 3 })).items).toHaveLength(2);
  });

  it("expired records read as absent", async () => {
    const { s } = await opened();
    await s.commit({ writes: [{ table: "t", id: "x", value: 1, expiresAt: Date.now() - 1 }] });
    expect(await s.get("t", "x")).toBeUndefined();
    await s.commit({ writes: [{ table: "t", id: "x", value: 1, expectedVersion: 0 }] });
  });
});
