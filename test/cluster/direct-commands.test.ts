// Direct commands (actors/direct.ts) on a real cluster: one gateway, two actor hosts, four command
// partitions, Kafka and Cassandra. The gateway learns each partition's host from Kafka's replies and
// then sends its asks straight there; a host paused with SIGSTOP (its link silent, its partitions
// moved to the other host by Kafka) loses them to Kafka, and when it resumes it writes nothing over
// its successor: every acknowledged create is readable, once.
import { afterAll, describe, expect, it } from "vitest";
import { partitionFor } from "../../src/bus/port.js";
import { launchCluster, type ClusterProcess, type LocalCluster } from "../../main/launcher.js";
import { clusterEnv, dropKeyspace, freePort, freshKeyspace, readBootstrap, tempDataDir } from "../harness.js";

const PARTITIONS = 4;
const keyspace = freshKeyspace();
const dataDir = tempDataDir();
const env = clusterEnv(dataDir, keyspace, { MEDIA_COMMAND_PARTITIONS: String(PARTITIONS), MEDIA_RATE_LIMIT_KEY: "off" });
let cluster: LocalCluster | undefined;

afterAll(async () => {
  for (const p of cluster?.actorHosts ?? []) if (p.child.exitCode === null) p.child.kill("SIGCONT");
  await cluster?.stop();
  await dropKeyspace(keyspace);
}, 120_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A counter of a process's /metrics, summed over the label sets that match. */
async function counter(p: ClusterProcess, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\d+)`, "gm"))) if (m[1]!.includes(labels)) sum += Number(m[2]);
  return sum;
}

/** media_direct_commands_total of a process, by outcome. */
async function directCounts(p: ClusterProcess): Promise<{ answered: number; moved: number; lost: number; [outcome: string]: number }> {
  const text = await (await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`)).text();
  const counts = { answered: 0, moved: 0, lost: 0 } as { answered: number; moved: number; lost: number; [outcome: string]: number };
  for (const m of text.matchAll(/^media_direct_commands_total\{outcome="(\w+)"\} (\d+)/gm)) counts[m[1]!] = Number(m[2]);
  return counts;
}

describe("direct commands", () => {
  let base = "";
  let auth: Record<string, string> = {};
  const acked: { id: string; name: string }[] = [];

  /**
   * Creates a key, retrying the same request (its Idempotency-Key) on unavailability, for up to a
   * minute; without a key (`once`) it is sent once, and its id is minted by the gateway.
   */
  const create = async (name: string, once = false): Promise<string> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const res = await fetch(`${base}/media.v1.APIKeyService/Create`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(once ? {} : { "idempotency-key": `direct-${name}` }), ...auth },
        body: JSON.stringify({ name }),
        signal: AbortSignal.timeout(20_000),
      }).catch(() => undefined);
      const body = res ? ((await res.json()) as { api_key?: { id: string }; code?: string }) : undefined;
      if (res?.status === 200) {
        acked.push({ id: body!.api_key!.id, name });
        return body!.api_key!.id;
      }
      if (once || (res && res.status !== 503)) throw new Error(`${name}: ${res?.status ?? "no answer"} ${JSON.stringify(body)}`);
      if (Date.now() > deadline) throw new Error(`${name}: not acknowledged in a minute`);
      await sleep(200);
    }
  };

  it("sends asks straight to the owning host once Kafka's replies named it", async () => {
    cluster = await launchCluster({ gateways: 1, actorHosts: 2, basePort: freePort(), env });
    base = `http://127.0.0.1:${cluster.gateways[0]!.port}`;
    const boot = readBootstrap(dataDir);
    auth = { authorization: `Bearer ${boot.api_key}`, "x-organization-id": boot.organization_id };
    const before = await directCounts(cluster.gateways[0]!);
    const recoveries = () => Promise.all(cluster!.actorHosts.map((h) => counter(h, "media_cassandra_statements_total", 'statement="snapshotsIn"')));
    const recoveredBefore = (await recoveries()).reduce((a, b) => a + b, 0);
    const partitions = new Set<number>();
    for (let i = 0; i < 60; i++) partitions.add(partitionFor(`api_key:${await create(`warm-${i}`, true)}`, PARTITIONS));
    expect(partitions.size).toBe(PARTITIONS);
    const after = await directCounts(cluster.gateways[0]!);
    // The first ask of each partition goes by Kafka (it teaches the route); most of the rest go direct.
    expect(after.answered - before.answered).toBeGreaterThan(30);
    expect(after.lost - before.lost).toBe(0);
    // A create of an id the gateway minted, sent straight for the epoch the host holds, starts its
    // actor without recovery reads; those by Kafka (one or two a partition) read the snapshot first.
    const recovered = (await recoveries()).reduce((a, b) => a + b, 0) - recoveredBefore;
    expect(recovered).toBeGreaterThan(0);
    expect(recovered).toBeLessThan(60 - (after.answered - before.answered) + 5);
  }, 120_000);

  it("hands a paused host's commands to Kafka, and the resumed host writes nothing over its successor", async () => {
    const gateway = cluster!.gateways[0]!;
    const paused = cluster!.actorHosts[1]!;
    const before = await directCounts(gateway);
    paused.child.kill("SIGSTOP");
    // Creates on every partition while it is paused: those of its partitions wait on a silent link,
    // go by Kafka, and are served once Kafka has moved the partitions to the other host.
    const names = Array.from({ length: 16 }, (_, i) => `paused-${i}`);
    const started = Date.now();
    await Promise.all(names.map((n) => create(n)));
    const during = await directCounts(gateway);
    expect(during.lost - before.lost, "commands handed from the silent link to Kafka").toBeGreaterThan(0);
    paused.child.kill("SIGCONT");
    // The resumed host rejoins; creates go on, direct again once replies name the new owners.
    for (let i = 0; i < 16; i++) await create(`resumed-${i}`);
    console.log(`direct commands: 16 creates while a host was paused took ${((Date.now() - started) / 1000).toFixed(1)} s`);

    // Every acknowledged key is readable, and the app lists each exactly once.
    for (const { id, name } of acked) {
      const res = await fetch(`${base}/media.v1.APIKeyService/Get`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth },
        body: JSON.stringify({ id }),
      });
      const body = (await res.json()) as { api_key?: { id: string; name: string } };
      expect(res.status, `${name} ${id}`).toBe(200);
      expect(body.api_key?.name).toBe(name);
    }
    const listed: string[] = [];
    let cursor = "";
    do {
      const res = await fetch(`${base}/media.v1.APIKeyService/List`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth },
        body: JSON.stringify({ include_revoked: true, pagination: { limit: 100, ...(cursor ? { cursor } : {}) } }),
      });
      const body = (await res.json()) as { api_keys: { id: string }[]; pagination: { next_cursor: string | null } };
      listed.push(...body.api_keys.map((k) => k.id));
      cursor = body.pagination.next_cursor ?? "";
    } while (cursor);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed.length).toBe(acked.length + 1); // and the bootstrap key
  }, 180_000);
});
