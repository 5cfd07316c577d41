// Fencing: two actor hosts that both believe they own one entity race their writes; exactly one
// sequence number wins, the other host gets a clean failure, and the journal has no gap and no
// duplicate. Real Cassandra, two independent connections, two nact systems.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyBehavior } from "../../actors/api-key/api-key.js";
import { API_KEYS, type ApiKeyRecord } from "../../actors/api-key/messages.js";
import { entity } from "../../actors/entity.js";

import { ActorHost } from "../../actors/host.js";
import { createLogger } from "../../src/log.js";
import { CassandraStore } from "../../src/store/cassandra-store.js";
import { freshKeyspace } from "../harness.js";
import { cassandraPeer } from "./endpoints.js";

const keyspace = freshKeyspace();
const open = async () => {
  const store = new CassandraStore({ ...cassandraPeer(), keyspace });
  await store.open();
  return store;
};
const log = createLogger("silent");
let stores: CassandraStore[] = [];
let hosts: ActorHost[] = [];

beforeAll(async () => {
  stores = [await open(), await open()];
  hosts = stores.map((s) => new ActorHost(s, log));
});
afterAll(async () => {
  hosts.forEach((h) => h.stop());
  await Promise.all(stores.map((s) => s.close()));
});

const create = (id: string) => ({
  type: "create" as const,
  id,
  at: Date.now(),
  request: { appId: "app_fence", organizationId: "org_fence", name: "fenced", keyPrefix: "ak_fence", keyHint: "nce1", secretHash: `hash-${id}`, scopes: [] },
});

describe("two actor hosts owning one entity", () => {
  it("let exactly one of two racing writes win; the journal stays contiguous", async () => {
    const [a, b] = hosts as [ActorHost, ActorHost];
    const id = "ak_fencing_race";
    expect((await a.ask(ApiKeyBehavior, id, create(id))).ok).toBe(true);
    // Both hosts load the actor at sequence 1...
    expect((await b.ask(ApiKeyBehavior, id, { type: "touch", at: 1 })).ok).toBe(true); // b: seq 2
    // ...a still believes seq 1 is the last one: its write of seq 2 is refused, cleanly.
    const stale = await a.ask(ApiKeyBehavior, id, { type: "touch", at: 2 });
    expect(stale).toEqual({ ok: false, rejection: { code: Code.Unavailable, message: expect.stringContaining("retry") } });
    // Both now race with actors recovered at the same sequence number.
    for (let round = 0; round < 5; round++) {
      const replies = await Promise.all([
        a.ask(ApiKeyBehavior, id, { type: "touch", at: 100 + round }),
        b.ask(ApiKeyBehavior, id, { type: "touch", at: 200 + round }),
      ]);
      expect(replies.filter((r) => r.ok).length).toBeGreaterThanOrEqual(1);
      for (const r of replies.filter((x) => !x.ok)) expect(r).toMatchObject({ ok: false, rejection: { code: Code.Unavailable } });
    }
    const journal = await stores[0]!.events(`api_key:${id}`, 0);
    const seqs = journal.map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1)); // no gap, no duplicate
    // The failed side recovers on its next command and writes after the winner.
    // (Under load its recovery can itself meet a timeout: that too is a clean, retryable refusal.)
    let after = await a.ask(ApiKeyBehavior, id, { type: "revoke", at: 999 });
    if (!after.ok) {
      expect(after, JSON.stringify(after)).toMatchObject({ ok: false, rejection: { code: Code.Unavailable } });
      after = await a.ask(ApiKeyBehavior, id, { type: "revoke", at: 999 });
    }
    expect(after.ok, JSON.stringify(after)).toBe(true);
    expect((await stores[1]!.events(`api_key:${id}`, 0)).map((e) => e.seq)).toEqual([...seqs, seqs.length + 1]);
  });
});

// A host paused (a long GC, a frozen VM) keeps its cached actors while its partition moves: when
// it resumes it writes as if it still owned them. Epoch fencing refuses it; without the fence (the
// same store with its check and its epoch timestamps taken out) the newer owner's acknowledged
// event is overwritten: the scenario tells the two apart, so it fails with the fencing turned off.
class UnfencedStore extends CassandraStore {
  protected override async checkFence(): Promise<void> {}
  protected override stamp(): bigint {
    return BigInt(Date.now()) * 1000n; // what the server would have stamped
  }
}

async function pausedHost(Store: typeof CassandraStore, options: { rewrite: boolean } = { rewrite: true }) {
  const open = async () => {
    const s = new Store({ ...cassandraPeer(), keyspace });
    await s.open();
    return s;
  };
  const [storeA, storeB] = [await open(), await open()];
  const sharding = { scope: `commands-${Store.name}-${Date.now()}`, partitions: 1 };
  const [a, b] = [new ActorHost(storeA, log, 10_000, undefined, sharding), new ActorHost(storeB, log, 10_000, undefined, sharding)];
  // What the commands topic does in a cluster (main/server.ts): a's refused commit goes to the
  // shard's owner, b, to have the entity's read models written again.
  let rewritten: Promise<unknown> = Promise.resolve();
  if (options.rewrite) a.rewritesVia(async (type, id) => void (rewritten = b.rewrite(entity(type), id)));
  try {
    const id = `ak_paused_${Store.name}_${Date.now()}`;
    a.own([0]);
    await a.ready(0);
    expect((await a.ask(ApiKeyBehavior, id, create(id))).ok).toBe(true); // seq 1, by a
    expect((await a.ask(ApiKeyBehavior, id, { type: "touch", at: 1001 })).ok).toBe(true); // seq 2, a caches the actor
    // a pauses; the partition moves to b, which takes the next epoch and writes seq 3.
    b.own([0]);
    await b.ready(0);
    const byB = await b.ask(ApiKeyBehavior, id, { type: "touch", at: 2002 });
    expect(byB.ok).toBe(true);
    // a resumes: its cached actor is at seq 2 and writes seq 3 again.
    const byA = await a.ask(ApiKeyBehavior, id, { type: "touch", at: 3003 });
    await rewritten;
    const model = (await storeB.get<ApiKeyRecord>(API_KEYS, id))?.value;
    // A fresh reader's view of the journal.
    const journal = (await storeB.events(`api_key:${id}`, 0)).map((e) => ({ seq: e.seq, data: JSON.stringify(e.data) }));
    // b's next command writes after its own event, on the journal as it stands.
    const after = await b.ask(ApiKeyBehavior, id, { type: "revoke", at: 4004 });
    const final = (await storeA.events(`api_key:${id}`, 0)).map((e) => JSON.stringify(e.data));
    return { byA, model, journal, after, final };
  } finally {
    a.stop();
    b.stop();
    await Promise.all([storeA.close(), storeB.close()]);
  }
}

describe("a paused actor host resumed after its partition moved", () => {
  it("has its writes refused: the new owner's acknowledged events stay, nothing is applied twice", async () => {
    const { byA, model, journal, after, final } = await pausedHost(CassandraStore);
    expect(byA).toEqual({ ok: false, rejection: { code: Code.Unavailable, message: expect.stringContaining("retry") } });
    expect(model?.lastUsedAt).toBe(2002); // the read model as b left it, after the owner's rewrite
    expect(journal.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(journal[2]!.data).toContain("2002"); // b's event, acknowledged, kept
    expect(journal.some((e) => e.data.includes("3003"))).toBe(false); // a's, refused, gone
    expect(after.ok).toBe(true);
    expect(final).toHaveLength(4);
    expect(final.filter((d) => d.includes("2002"))).toHaveLength(1);
  });

  it("shows the refused write in the read model until the owner writes it again (what the rewrite above is for)", async () => {
    // The store writes a small commit's read models with its events, before it finds the batch refused.
    const { byA, model, journal } = await pausedHost(CassandraStore, { rewrite: false });
    expect(byA.ok).toBe(false);
    expect(model?.lastUsedAt).toBe(3003);
    expect(journal.some((e) => e.data.includes("3003"))).toBe(false);
  });

  it("loses the new owner's acknowledged event when the fencing is taken out (what the test above guards)", async () => {
    const { byA, journal } = await pausedHost(UnfencedStore);
    expect(byA.ok).toBe(true); // the stale host is answered as if it owned the entity...
    expect(journal[2]!.data).toContain("3003"); // ...and its event replaced the one b acknowledged
    expect(journal.some((e) => e.data.includes("2002"))).toBe(false);
  });
});
