// The store contract run against the embedded file store, plus what only a log file can do.
import { appendFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { FileStore } from "./file-store.js";
import { storeContract, type ContractStore } from "./store-contract.js";

const dir = () => mkdtempSync(path.join(tmpdir(), "store-"));

async function opened(d = dir()) {
  const s = new FileStore(d);
  await s.open();
  return { s, d };
}

/** A FileStore whose reopen closes it and opens a new one over the same folder. */
async function reopenable(d = dir()): Promise<ContractStore> {
  const { s } = await opened(d);
  return Object.assign(s, {
    reopen: async () => {
      await s.close();
      return reopenable(d);
    },
  });
}

storeContract("FileStore", () => reopenable());

describe("FileStore", () => {
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

  it("refuses a delete said to be of a record without an index row when it has one (a writer's bookkeeping checked)", async () => {
    const { s } = await opened();
    await s.commit({ writes: [{ table: "t", id: "a", value: 1, partition: "p", sort: "a" }] });
    await expect(s.commit({ writes: [{ table: "t", id: "a", value: null, unindexed: true }] })).rejects.toThrow(/unindexed, but it has an index row/);
    expect(await s.get("t", "a")).toMatchObject({ value: 1 });
  });
});
