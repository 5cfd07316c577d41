// The store contract against a real Cassandra (infra/cassandra.sh), plus what only this adapter
// has: schema migrations, connection errors named by setting, and what a commit that fails after
// its checks leaves (the steps before the failure, index rows included).
// Starts Cassandra when it is not running (and stops it again afterwards unless
// MEDIA_TEST_KEEP_CASSANDRA=1); uses a fresh random keyspace, dropped at the end.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config.js";
import { Fenced, VersionConflict } from "../../src/errors.js";
import { cqlRequests } from "../../src/metrics.js";
import { CassandraSettings, CassandraStore, renderCql, type CassandraStoreOptions } from "../../src/store/cassandra-store.js";
import { storeContract, type ContractStore } from "../../src/store/store-contract.js";
import { cassandraClient, cassandraContactPoint, cassandraPeer, infraProvider } from "./endpoints.js";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");
const SCRIPT = path.join(ROOT, "infra/cassandra.sh");
const CONTACT = cassandraContactPoint();
const KEYSPACE = `media_test_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
const base: CassandraStoreOptions = { ...cassandraPeer(), contactPoints: [CONTACT], keyspace: KEYSPACE };

let startedHere = false;

async function cassandraRunning(): Promise<boolean> {
  try {
    await run("bash", [SCRIPT, "status"]);
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  if (infraProvider() === "containers") return; // the global setup started it
  if (await cassandraRunning()) return;
  const t0 = Date.now();
  await run("bash", [SCRIPT, "up"], { timeout: 280_000 });
  startedHere = true;
  console.log(`[cassandra-store.test] started Cassandra in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}, 300_000);

afterAll(async () => {
  const client = cassandraClient();
  try {
    await client.connect();
    await client.execute(`DROP KEYSPACE IF EXISTS ${KEYSPACE}`, [], { readTimeout: 60_000 });
  } finally {
    await client.shutdown();
    if (startedHere && process.env.MEDIA_TEST_KEEP_CASSANDRA !== "1") await run("bash", [SCRIPT, "down"], { timeout: 120_000 });
  }
}, 180_000);

/** A store with a hook between a commit's checks and its first write, to interleave a racing writer. */
class RacedStore extends CassandraStore {
  interfere: (() => Promise<void>) | undefined;
  /** Behave as on a cluster of several nodes. */
  manyNodes = false;
  protected override spread(): boolean {
    return this.manyNodes || super.spread();
  }
  protected override async afterPrecheck(): Promise<void> {
    const f = this.interfere;
    this.interfere = undefined;
    await f?.();
  }
}

async function openStore(options: Partial<CassandraStoreOptions> = {}): Promise<RacedStore> {
  const s = new RacedStore({ ...base, ...options });
  await s.open();
  return s;
}

async function contractStore(): Promise<ContractStore> {
  const s = await openStore();
  return Object.assign(s, {
    reopen: async () => {
      await s.close();
      return contractStore();
    },
    race: (racer: () => Promise<void>) => {
      s.interfere = racer;
    },
  });
}

const unique = (prefix: string) => `${prefix}_${randomUUID().replaceAll("-", "").slice(0, 12)}`;

async function configError(p: Promise<unknown>): Promise<ConfigError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConfigError);
  return e as ConfigError;
}

// The first make() creates the keyspace and applies infra/cql; the others find it applied.
storeContract("CassandraStore", contractStore);

describe("CassandraStore", () => {
  it("fences appends by the shard's epoch: a stale owner is refused, and its rows never count", async () => {
    const s = await openStore();
    try {
      const scope = unique("scope");
      const key = unique("fenced");
      const event = (seq: number, by: string) => ({ key, seq, data: { by }, createdAt: seq });
      expect(await s.takeEpoch(scope, 3, "a")).toBe(1);
      await s.commit({ events: [event(1, "a")], fence: { scope, shard: 3, epoch: 1 } });
      expect(await s.takeEpoch(scope, 3, "b")).toBe(2);
      expect(await s.takeEpoch(scope, 4, "b")).toBe(1); // each shard its own epochs
      await s.commit({ events: [event(2, "b")], fence: { scope, shard: 3, epoch: 2 } });
      // The old owner writes the seq the new one wrote, and one past it, with a record: refused.
      // A small record goes in one request with the events, before the epoch check, so it lands
      // (its writer has the owner write it again: ActorHost.rewrite); a large one waits for the check.
      const [small, large] = [unique("rec"), unique("rec")];
      await expect(
        s.commit({ events: [event(2, "a")], writes: [{ table: "t", id: small, value: { x: 1 } }], fence: { scope, shard: 3, epoch: 1 } }),
      ).rejects.toBeInstanceOf(Fenced);
      await expect(
        s.commit({
          events: [event(3, "a"), event(4, "a")],
          writes: [{ table: "t", id: large, value: { x: "x".repeat(45_000) } }],
          fence: { scope, shard: 3, epoch: 1 },
        }),
      ).rejects.toThrow(Fenced);
      expect((await s.get("t", small))?.value).toEqual({ x: 1 });
      expect(await s.get("t", large)).toBeUndefined(); // nothing after the refused append
      // The new owner's row stands at its seq (a later write with an older epoch does not replace
      // it), and the old owner's rows past it are dropped by every reader.
      expect((await s.events(key, 0)).map((e) => e.data)).toEqual([{ by: "a" }, { by: "b" }]);
      expect((await s.events(key, 1)).map((e) => e.data)).toEqual([{ by: "b" }]);
      expect(await s.events(key, 2)).toEqual([]);
      await s.commit({ events: [event(3, "b")], fence: { scope, shard: 3, epoch: 2 } });
      expect((await s.events(key, 0)).map((e) => e.data)).toEqual([{ by: "a" }, { by: "b" }, { by: "b" }]);
    } finally {
      await s.close();
    }
  });

  it("gathers concurrent fenced commits and recoveries into shared requests, each commit kept or refused on its own", async () => {
    const s = await openStore();
    // The requests the store sent since `since` (media_cassandra_requests_total: a batch is one).
    const sent = async () => (await cqlRequests.get()).values[0]?.value ?? 0;
    let since = 0;
    try {
      const scope = unique("scope");
      expect(await s.takeEpoch(scope, 0, "old")).toBe(1);
      expect(await s.takeEpoch(scope, 0, "new")).toBe(2);
      expect(await s.takeEpoch(scope, 1, "other")).toBe(1);
      // A quarter from shard 0's stale owner, the rest from its new owner and shard 1's owner.
      const fenceOf = (i: number) =>
        i % 4 === 0 ? { scope, shard: 0, epoch: 1 } : i % 4 === 1 ? { scope, shard: 0, epoch: 2 } : { scope, shard: 1, epoch: 1 };
      const keys = Array.from({ length: 40 }, (_, i) => unique(`gathered${i}`));
      since = await sent();
      const results = await Promise.allSettled(
        keys.map((key, i) =>
          s.commit({
            events: [{ key, seq: 1, data: { i }, createdAt: i }],
            writes: [{ table: "gathered", id: key, value: { i }, partition: scope, sort: key, current: null }],
            fence: fenceOf(i),
          }),
        ),
      );
      results.forEach((r, i) => {
        if (i % 4 === 0) expect(r.status === "rejected" && r.reason, `commit ${i}`).toBeInstanceOf(Fenced);
        else expect(r, `commit ${i}`).toEqual({ status: "fulfilled", value: undefined });
      });
      // 40 commits one by one are 40 appends with their read models and 40 epoch reads.
      expect((await sent()) - since).toBeLessThanOrEqual(8);
      since = await sent();
      const records = await Promise.all([...keys.map((key) => s.get("gathered", key)), s.get("elsewhere", keys[1]!)]);
      expect((await sent()) - since).toBeLessThanOrEqual(3); // one alone, then one per table
      // The refused commits' read models landed with their events (see above).
      for (const [i, record] of records.slice(0, -1).entries()) expect(record?.value, `record ${i}`).toEqual({ i });
      expect(records.at(-1)).toBeUndefined();
      expect((await s.scan("gathered", scope, { limit: 100 })).total).toBe(40);
      // Recoveries side by side: one snapshot read and one journal read for all (after the first).
      since = await sent();
      const [snapshots, journals] = await Promise.all([Promise.all(keys.map((k) => s.latestSnapshot(k))), Promise.all(keys.map((k) => s.events(k, 0)))]);
      expect((await sent()) - since).toBeLessThanOrEqual(4);
      expect(snapshots.every((x) => x === undefined)).toBe(true);
      // The stale owner's refused events stay where no newer epoch's row precedes them (see above).
      journals.forEach((j, i) => expect(j, `journal ${i}`).toEqual([{ key: keys[i], seq: 1, data: { i }, createdAt: i }]));
      await s.saveSnapshot({ key: keys[1]!, seq: 1, data: { at: 1 }, createdAt: 5 });
      const [withSnapshot, without] = await Promise.all([s.latestSnapshot(keys[1]!), s.latestSnapshot(keys[2]!)]);
      expect([withSnapshot, without]).toEqual([{ key: keys[1], seq: 1, data: { at: 1 }, createdAt: 5 }, undefined]);
      expect(await Promise.all([s.events(keys[1]!, 1), s.events(keys[1]!, 0)])).toEqual([[], [{ key: keys[1], seq: 1, data: { i: 1 }, createdAt: 1 }]]);
      // With more than one node each item goes alone (token-aware): ten commits, thirty requests.
      s.manyNodes = true;
      try {
        since = await sent();
        const more = Array.from({ length: 10 }, (_, i) => unique(`alone${i}`));
        await Promise.all(
          more.map((key, i) =>
            s.commit({
              events: [{ key, seq: 1, data: { i }, createdAt: i }],
              writes: [{ table: "gathered", id: key, value: { i }, current: null }],
              fence: { scope, shard: 1, epoch: 1 },
            }),
          ),
        );
        expect((await sent()) - since).toBe(20); // an append with its read model, and an epoch read, each
        expect((await Promise.all(more.map((k) => s.get("gathered", k)))).map((r) => r?.value)).toEqual(more.map((_, i) => ({ i })));
      } finally {
        s.manyNodes = false;
      }
    } finally {
      await s.close();
    }
  });

  it("records applied migrations in schema_version and opens without schema creation", async () => {
    const s = await openStore();
    await s.close();
    const client = cassandraClient();
    await client.connect();
    try {
      const rows = (await client.execute(`SELECT version, checksum, applied_at FROM ${KEYSPACE}.schema_version`)).rows;
      expect(rows.map((r) => r["version"]).sort()).toEqual(["001_init", "002_epochs"]);
      for (const row of rows) expect(row["checksum"]).toMatch(/^[0-9a-f]{64}$/);
      const tables = (await client.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?", [KEYSPACE], { prepare: true })).rows;
      expect(tables.map((r) => r["table_name"]).sort()).toEqual(["journal", "record_index", "records", "schema_version", "shard_epochs", "snapshots"]);
    } finally {
      await client.shutdown();
    }
    const noCreate = await openStore({ createSchema: false });
    expect(await noCreate.health()).toEqual({ ok: true });
    await noCreate.close();
    expect(await noCreate.health()).toMatchObject({ ok: false });
  });

  it("names the setting at fault when open fails", async () => {
    const unreachable = await configError(new CassandraStore({ ...base, contactPoints: ["127.0.0.1:1"] }).open());
    expect(unreachable.setting).toBe(CassandraSettings.contactPoints);
    expect(unreachable.message).toMatch(/127\.0\.0\.1:1/);
    const missing = await configError(new CassandraStore({ ...base, keyspace: "media_absent_ks", createSchema: false }).open());
    expect(missing.setting).toBe(CassandraSettings.keyspace);
    expect(missing.message).toMatch(/media_absent_ks.*does not exist/);
    expect((await configError(new CassandraStore({ ...base, keyspace: "bad-name" }).open())).setting).toBe(CassandraSettings.keyspace);
    expect((await configError(new CassandraStore({ ...base, localDataCenter: "nowhere" }).open())).setting).toBe(CassandraSettings.localDataCenter);
    expect((await configError(new CassandraStore({ ...base, keyspace: unique("ks"), replication: "{'class':'NoSuchStrategy'}" }).open())).setting).toBe(
      CassandraSettings.replication,
    );
  });

  it("keeps the event, an earlier claim and the earlier records' index rows when a later compare-and-set loses a race", async () => {
    const s = await openStore();
    const other = await openStore();
    try {
      const [claims, rows, k] = [unique("claims"), unique("rows"), unique("k")];
      await s.commit({
        events: [{ key: k, seq: 1, data: "one", createdAt: 1 }],
        writes: [
          { table: rows, id: "gone", value: "g", partition: "p", sort: "1" },
          { table: rows, id: "moved", value: "m", partition: "p", sort: "2" },
          { table: rows, id: "r", value: 1 },
        ],
      });
      s.interfere = () => other.commit({ writes: [{ table: rows, id: "r", value: "racer", expectedVersion: 1 }] });
      await expect(
        s.commit({
          events: [{ key: k, seq: 2, data: "two", createdAt: 2 }],
          writes: [
            { table: claims, id: "slug", value: { owner: "me" }, expectedVersion: 0 },
            { table: rows, id: "gone", value: null, expectedVersion: 1 },
            { table: rows, id: "moved", value: "m2", sort: "9", expectedVersion: 1 },
            { table: rows, id: "r", value: 2, expectedVersion: 1 }, // loses the race
            { table: rows, id: "loose", value: 1, partition: "p", sort: "5" },
          ],
        }),
      ).rejects.toBeInstanceOf(VersionConflict);
      expect((await s.events(k, 0)).map((e) => e.data)).toEqual(["one", "two"]);
      expect(await s.get(claims, "slug")).toMatchObject({ value: { owner: "me" }, version: 1 });
      expect(await s.get(rows, "gone")).toBeUndefined();
      expect(await s.get(rows, "moved")).toEqual({ id: "moved", version: 2, partition: "p", sort: "9", value: "m2", expiresAt: 0 });
      expect(await s.get(rows, "r")).toMatchObject({ value: "racer", version: 2 });
      expect(await s.get(rows, "loose")).toBeUndefined();
      // Each applied record's index row was written right after it, before the failed step.
      expect((await s.scan(rows, "p", { limit: 10 })).items.map((r) => [r.id, r.sort, r.version])).toEqual([["moved", "9", 2]]);
      // The sequence number is taken: the next writer continues after it.
      await expect(s.commit({ events: [{ key: k, seq: 2, data: "again", createdAt: 3 }] })).rejects.toBeInstanceOf(VersionConflict);
    } finally {
      await s.close();
      await other.close();
    }
  });

  it("keeps the applied steps and rejects with the error when a later write fails", async () => {
    const s = await openStore();
    const admin = cassandraClient();
    await admin.connect();
    try {
      const [rows, claims, k] = [unique("rows"), unique("claims"), unique("k")];
      await s.commit({ events: [{ key: k, seq: 1, data: 1, createdAt: 1 }], writes: [{ table: rows, id: "a", value: "a1", partition: "p", sort: "1" }] });
      // The index table disappears between the checks and the first write: "a"'s index change fails.
      s.interfere = async () => void (await admin.execute(`DROP TABLE ${KEYSPACE}.record_index`, [], { readTimeout: 60_000 }));
      const failed = await s
        .commit({
          events: [{ key: k, seq: 2, data: 2, createdAt: 2 }],
          writes: [
            { table: claims, id: "c", value: "mine", expectedVersion: 0 },
            { table: rows, id: "a", value: "a2", expectedVersion: 1 },
            { table: rows, id: "b", value: "b1", partition: "p", sort: "2" },
          ],
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(failed).toBeInstanceOf(Error);
      expect(failed).not.toBeInstanceOf(VersionConflict);
      for (const statement of renderCql(readFileSync(path.join(ROOT, "infra/cql/001_init.cql"), "utf8"), { keyspace: KEYSPACE, replication: "{}" })) {
        if (/record_index/.test(statement)) await admin.execute(statement, [], { readTimeout: 60_000 });
      }
      expect((await s.events(k, 0)).map((e) => e.seq)).toEqual([1, 2]);
      expect(await s.get(claims, "c")).toMatchObject({ value: "mine", version: 1 });
      expect(await s.get(rows, "a")).toMatchObject({ value: "a2", version: 2 });
      expect(await s.get(rows, "b")).toBeUndefined();
    } finally {
      await s.close();
      await admin.shutdown();
    }
  });

  it("scans list each record once even with a stale index row left by a failure", async () => {
    const s = await openStore();
    const admin = cassandraClient();
    await admin.connect();
    try {
      const t = unique("t");
      await s.commit({
        writes: [
          { table: t, id: "r", value: "old", partition: "p", sort: "1" },
          { table: t, id: "q", value: "q", partition: "p", sort: "5" },
        ],
      });
      await s.commit({ writes: [{ table: t, id: "r", value: "new", sort: "2" }] });
      // As if the delete of the old index row had been lost: a stale row that sorts first.
      await admin.execute(
        `UPDATE ${KEYSPACE}.record_index SET version = 1, value = '"stale"', expires_at = 0 WHERE tbl = ? AND part = 'p' AND sort = '9' AND id = 'r'`,
        [t],
        { prepare: true },
      );
      const listed = await s.scan<string>(t, "p", { limit: 10 });
      expect(listed.items.map((r) => [r.id, r.value, r.version])).toEqual([
        ["q", "q", 1],
        ["r", "new", 2],
      ]);
      expect(listed.total).toBe(2);
      expect((await s.scan<string>(t, "p", { limit: 1, offset: 1 })).items.map((r) => r.value)).toEqual(["new"]);
    } finally {
      await s.close();
      await admin.shutdown();
    }
  });

  it("fences a stale owner on another connection", async () => {
    const owner = await openStore();
    const stale = await openStore();
    try {
      const k = unique("k");
      await owner.commit({ events: [{ key: k, seq: 1, data: 1, createdAt: 1 }] });
      // The stale owner read seq 1 too; both append seq 2 at once from separate clients, many times.
      for (let seq = 2; seq <= 11; seq++) {
        const results = await Promise.allSettled([owner, stale].map((s, i) => s.commit({ events: [{ key: k, seq, data: `${i}:${seq}`, createdAt: seq }] })));
        expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
        for (const r of results) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(VersionConflict);
      }
      expect((await stale.events(k, 0)).map((e) => e.seq)).toEqual(Array.from({ length: 11 }, (_, i) => i + 1));
    } finally {
      await owner.close();
      await stale.close();
    }
  });
});
