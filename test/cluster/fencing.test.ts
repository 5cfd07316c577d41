// Fencing: two actor hosts that both believe they own one entity race their writes; exactly one
// sequence number wins, the other host gets a clean failure, and the journal has no gap and no
// duplicate. Real Cassandra, two independent connections, two nact systems.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyBehavior } from "../../actors/api-key/api-key.js";

import { ActorHost } from "../../actors/host.js";
import { createLogger } from "../../src/log.js";
import { CassandraStore } from "../../src/store/cassandra-store.js";
import { freshKeyspace } from "../harness.js";
import { cassandraContactPoint } from "./endpoints.js";

const keyspace = freshKeyspace();
const open = async () => {
  const store = new CassandraStore({ contactPoints: [cassandraContactPoint()], localDataCenter: "datacenter1", keyspace });
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
