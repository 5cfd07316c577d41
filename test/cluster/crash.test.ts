// Crash of an actor host under load: 8 writers stream API key creates through 2 gateways (2 actor
// hosts, 4 command partitions); at 300 acknowledged creates one actor host gets kill -9. Every
// request carries its own Idempotency-Key and is retried, unchanged, until it is acknowledged, so
// the stream goes on through the failover. Then: every acknowledged key is readable through both
// gateways, and the list holds exactly the bootstrap key plus the acknowledged ones (no duplicate).
// Prints how long the failover took: from the kill until a create on every partition had been
// acknowledged again.
import kafkajs from "kafkajs";
import { afterAll, describe, expect, it } from "vitest";
import { topicsFor } from "../../actors/commands.js";
import { partitionFor } from "../../src/bus/port.js";
import { launchCluster, type LocalCluster } from "../../main/launcher.js";
import { freePort, freshKeyspace, readBootstrap, tempDataDir, clusterEnv, dropKeyspace } from "../harness.js";
import { kafkajsOptions } from "./endpoints.js";

const PARTITIONS = 4;
const WRITERS = 8;
const KILL_AT = 300;
const TARGET_ACKS = 1000;
/**
 * A client gives up on a request after this long and retries it, unchanged, through the other
 * gateway. Shorter than the failover on purpose: retries then meet the first attempt still
 * running (the Idempotency-Key claim) or its late answer, as a real client with a timeout would.
 */
const REQUEST_TIMEOUT_MS = 5_000;
/** A create that is still not acknowledged after this long fails the test. */
const RETRY_DEADLINE_MS = 90_000;

const keyspace = freshKeyspace();
const dataDir = tempDataDir();
// Limits off: 8 writers and 16 parallel readers on one key measure durability, not the rate limiter.
const env = clusterEnv(dataDir, keyspace, {
  MEDIA_COMMAND_PARTITIONS: String(PARTITIONS),
  MEDIA_RATE_LIMIT_KEY: "off",
  MEDIA_RATE_LIMIT_ANONYMOUS: "off",
  MEDIA_RATE_LIMIT_HEALTH: "off",
});
let cluster: LocalCluster | undefined;
/** The keyspace is kept after a failure, to look into. */
let passed = false;

afterAll(async () => {
  await cluster?.stop();
  if (!passed) {
    console.log(`crash test failed: keyspace ${keyspace} and data folder ${dataDir} kept`);
    return;
  }
  await dropKeyspace(keyspace);
}, 120_000);

interface Answer {
  readonly status: number;
  readonly body: any;
}

/** POST with a timeout; a network error or timeout is status 0. */
async function post(base: string, route: string, body: unknown, headers: Record<string, string>): Promise<Answer> {
  try {
    const res = await fetch(`${base}/media.v1.${route}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed };
  } catch (e) {
    return { status: 0, body: String(e) };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Runs fn over items with at most `width` calls at once. */
async function inParallel<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

interface Ack {
  readonly id: string;
  readonly name: string;
  readonly partition: number;
  /** When the request was first sent, and when it was acknowledged. */
  readonly firstSentAt: number;
  readonly ackedAt: number;
  readonly attempts: number;
}

describe("cluster crash", () => {
  it(`keeps every acknowledged create through kill -9 of an actor host (${WRITERS} writers, ${TARGET_ACKS}+ creates)`, async () => {
    const t0 = Date.now();
    const basePort = freePort();
    freePort(); // the second gateway's port
    cluster = await launchCluster({ gateways: 2, actorHosts: 2, basePort, env });
    const launched = Date.now();
    // The topic may predate this cluster (ensureTopics never changes a partition count): ask Kafka.
    const admin = new kafkajs.Kafka({ ...kafkajsOptions("crash-test"), logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    const partitions = (await admin.fetchTopicMetadata({ topics: [topicsFor(`media.${keyspace}`).commands] })).topics[0]!.partitions.length;
    await admin.disconnect();
    expect(partitions, `partitions of ${topicsFor(`media.${keyspace}`).commands} (created before this cluster?)`).toBe(PARTITIONS);
    const bases = cluster.gateways.map((g) => `http://127.0.0.1:${g.port}`);
    const boot = readBootstrap(dataDir);
    const auth = { authorization: `Bearer ${boot.api_key}`, "x-organization-id": boot.organization_id };

    const acks: Ack[] = [];
    const failuresByStatus = new Map<string, number>();
    let killedAt: number | undefined;
    let acksAtKill = 0;
    const victim = cluster.actorHosts[1]!;
    /** First acknowledgement, per partition, of a create first sent after the kill. */
    const recovered = new Map<number, number>();
    const allRecovered = () => recovered.size === PARTITIONS;
    let stop = false;
    /** Set when one writer failed: the others give up too instead of retrying on. */
    let abandoned = false;

    const kill = () => {
      killedAt = Date.now();
      acksAtKill = acks.length;
      victim.child.kill("SIGKILL");
    };

    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const name = `crash-w${w}-${i}`;
        const headers = { ...auth, "idempotency-key": `crash-${w}-${i}` };
        const firstSentAt = Date.now();
        for (let attempt = 1; ; attempt++) {
          // Alternate gateways, so a retry usually goes through the other one.
          const r = await post(bases[(w + i + attempt) % bases.length]!, "APIKeyService/Create", { name }, headers);
          if (abandoned) return;
          if (r.status === 200) {
            const id = r.body.api_key.id as string;
            const ack: Ack = { id, name, partition: partitionFor(`api_key:${id}`, PARTITIONS), firstSentAt, ackedAt: Date.now(), attempts: attempt };
            acks.push(ack);
            if (killedAt !== undefined && firstSentAt > killedAt && !recovered.has(ack.partition)) recovered.set(ack.partition, ack.ackedAt);
            if (killedAt === undefined && acks.length >= KILL_AT) kill();
            if (acks.length >= TARGET_ACKS && allRecovered()) stop = true;
            break;
          }
          const why = r.status === 0 ? "network" : `${r.status} ${r.body?.code ?? ""}`;
          failuresByStatus.set(why, (failuresByStatus.get(why) ?? 0) + 1);
          // Only unavailability is worth a retry; anything else is an answer the test must see.
          if (r.status !== 0 && r.status !== 503) throw new Error(`${name} (attempt ${attempt}): ${why} ${JSON.stringify(r.body)}`);
          if (Date.now() - firstSentAt > RETRY_DEADLINE_MS)
            throw new Error(`${name} not acknowledged after ${attempt} attempts; last: ${why} ${JSON.stringify(r.body)}`);
          await sleep(Math.min(50 * 2 ** (attempt - 1), 1000));
        }
      }
    };

    // The stream ends at TARGET_ACKS once every partition has served a create again; a deadline
    // stops it anyway, and the checks below then say what is missing.
    const deadline = setTimeout(() => (stop = true), 150_000);
    try {
      await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    } catch (e) {
      abandoned = stop = true;
      throw e;
    } finally {
      clearTimeout(deadline);
    }
    const streamed = Date.now();

    expect(killedAt).toBeDefined();
    expect(victim.child.signalCode).toBe("SIGKILL");
    expect(acks.length).toBeGreaterThanOrEqual(TARGET_ACKS);
    expect([...recovered.keys()].sort()).toEqual([0, 1, 2, 3]);

    const failover = Math.max(...[...recovered.values()].map((t) => t - killedAt!));
    let longestGap = 0;
    const afterKill = acks
      .filter((a) => a.ackedAt >= killedAt!)
      .map((a) => a.ackedAt)
      .sort((a, b) => a - b);
    let previous = killedAt!;
    for (const t of afterKill) {
      longestGap = Math.max(longestGap, t - previous);
      previous = t;
    }
    const perPartition = [...recovered.entries()]
      .sort(([a], [b]) => a - b)
      .map(([p, t]) => `p${p} ${seconds(t - killedAt!)}`)
      .join(", ");
    const retried = acks.filter((a) => a.attempts > 1).length;
    console.log(
      [
        `failover: ${seconds(failover)} (kill -9 actor-host-${victim.index} at ack ${acksAtKill}; first create acknowledged again per partition: ${perPartition})`,
        `  longest gap between acknowledgements after the kill: ${seconds(longestGap)}`,
        `  ${acks.length} creates acknowledged by ${WRITERS} writers in ${seconds(streamed - launched)}; ${retried} needed retries; failed attempts: ${JSON.stringify(Object.fromEntries(failuresByStatus))}`,
        `  cluster launch ${seconds(launched - t0)}`,
      ].join("\n"),
    );

    // Every acknowledged create is readable, through both gateways.
    const ids = acks.map((a) => a.id);
    expect(new Set(ids).size).toBe(ids.length);
    const unreadable: string[] = [];
    await inParallel(ids, 16, async (id) => {
      for (const base of bases) {
        const r = await post(base, "APIKeyService/Get", { id }, auth);
        if (r.status !== 200 || r.body.api_key?.id !== id) unreadable.push(`${id} via ${base}: ${r.status} ${JSON.stringify(r.body)}`);
      }
    });
    if (unreadable.length > 0) {
      const byId = new Map(acks.map((a) => [a.id, a]));
      const detail = [...new Set(unreadable.map((u) => u.split(" ")[0]!))].map((id) => {
        const a = byId.get(id)!;
        return `${a.name} ${id}: partition ${a.partition}, sent ${seconds(a.firstSentAt - killedAt!)} after the kill, acknowledged ${seconds(a.ackedAt - killedAt!)} after it, ${a.attempts} attempt(s)`;
      });
      console.log(`unreadable acknowledged creates:\n  ${detail.join("\n  ")}`);
    }
    expect(unreadable).toEqual([]);

    // Nothing duplicated: the app holds exactly the bootstrap key and the acknowledged ones.
    const listed: { id: string; name: string }[] = [];
    let cursor = "";
    let total: number | undefined;
    do {
      const page = await post(
        bases[listed.length % 2]!,
        "APIKeyService/List",
        { include_revoked: true, pagination: { limit: 100, ...(cursor ? { cursor } : {}) } },
        auth,
      );
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      listed.push(...page.body.api_keys.map((k: any) => ({ id: k.id as string, name: k.name as string })));
      total ??= Number(page.body.pagination.total_count);
      cursor = page.body.pagination.next_cursor;
    } while (cursor);
    expect(listed).toHaveLength(acks.length + 1);
    expect(total).toBe(acks.length + 1);
    expect(new Set(listed.map((k) => k.id)).size).toBe(listed.length);
    const names = listed.map((k) => k.name);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(ids)).toEqual(new Set(listed.filter((k) => k.name !== "bootstrap").map((k) => k.id)));
    expect(names.filter((n) => n === "bootstrap")).toHaveLength(1);
    passed = true;
    console.log(`  verified ${ids.length} keys through ${bases.length} gateways in ${seconds(Date.now() - streamed)}; total ${seconds(Date.now() - t0)}`);
  }, 240_000);
});
