// GET /healthz and /readyz on a real cluster (a gateway, an actor host, an encoder node on Kafka and
// Cassandra), one cluster for every check: each role answers both 200 on its ports; with Cassandra
// stopped the roles that use it answer /readyz 503 naming the store (and come back to 200 once it
// is back), while the encoder node, which does not use it, stays ready; a gateway sent SIGTERM
// answers 503 from the start of its drain, serves on for its drain delay, then exits.
// (test/cluster/probes.ts is something else: the test machine's own checks of Kafka and Cassandra.)
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchCluster, type ClusterProcess, type LocalCluster } from "../../main/launcher.js";
import { testIssuer } from "../issuer.js";
import { call, clusterEnv, dropKeyspace, freePort, freshKeyspace, readBootstrap, ROOT, tempDataDir, until } from "../harness.js";
import { infraProvider } from "./endpoints.js";

const run = promisify(execFile);
const DRAIN_DELAY_SECONDS = 3;

let cluster: LocalCluster;
const keyspace = freshKeyspace();
const dataDir = tempDataDir();
const log: string[] = [];
const step = (what: string) => log.push(`${new Date().toISOString().slice(11, 23)} ${what}`);

beforeAll(async () => {
  const issuer = await testIssuer();
  const env = clusterEnv(dataDir, keyspace, { ...issuer.env, MEDIA_DRAIN_DELAY_SECONDS: String(DRAIN_DELAY_SECONDS) });
  cluster = await launchCluster({ gateways: 1, actorHosts: 1, encoderNodes: 1, basePort: freePort(), env });
  step("cluster up");
}, 180_000);

afterAll(async () => {
  console.log(`probe steps:\n${log.join("\n")}`);
  await cluster?.stop();
  await dropKeyspace(keyspace);
}, 120_000);

interface Answer {
  readonly status: number;
  readonly body: any;
}

async function probe(url: string): Promise<Answer> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: JSON.parse(await res.text()) };
}

/** Every probe address of the cluster: the gateway's HTTP port and each process's metrics port. */
function targets(): { what: string; url: string; role: ClusterProcess["role"]; public: boolean }[] {
  const all = [...cluster.gateways, ...cluster.actorHosts, ...cluster.encoderNodes];
  return [
    ...cluster.gateways.map((g) => ({ what: `gateway-${g.index} http`, url: `http://127.0.0.1:${g.port}`, role: g.role, public: true })),
    ...all.map((p) => ({ what: `${p.role}-${p.index} metrics`, url: `http://127.0.0.1:${p.metricsPort}`, role: p.role, public: false })),
  ];
}

/** The checks each role makes: the encoder node does not use the store. */
const CHECKS: Record<ClusterProcess["role"], string[]> = { gateway: ["store", "bus"], "actor-host": ["store", "bus"], "encoder-node": ["bus", "encoder"] };

describe("probes on every role of a cluster", () => {
  it("answers /healthz 200 and /readyz 200 on every role's ports", async () => {
    for (const t of targets()) {
      expect(await probe(`${t.url}/healthz`), t.what).toEqual({ status: 200, body: { status: "alive" } });
      const ready = await probe(`${t.url}/readyz`);
      expect(ready, t.what).toEqual({ status: 200, body: { status: "ready", checks: CHECKS[t.role].map((name) => ({ name, ok: true })) } });
    }
  });

  // The containers provider gives a restarted Cassandra a new port (as the chaos suite notes).
  it.skipIf(infraProvider() !== "local")(
    "answers /readyz 503 where the store is used while Cassandra is stopped, and 200 once it is back",
    async () => {
      const script = path.join(ROOT, "infra/cassandra.sh");
      const usesStore = targets().filter((t) => t.role !== "encoder-node");
      const encoder = targets().filter((t) => t.role === "encoder-node");
      let stopped = false;
      try {
        step("stop Cassandra");
        await run("bash", [script, "down"], { cwd: ROOT, timeout: 150_000 });
        stopped = true;
        step("Cassandra stopped");
        for (const t of usesStore) {
          const answer = await until(
            `${t.what} not ready`,
            async () => {
              const a = await probe(`${t.url}/readyz`);
              return a.status === 503 ? a : undefined;
            },
            30_000,
          );
          const store = answer.body.checks.find((c: any) => c.name === "store");
          expect(answer.body.status, t.what).toBe("not_ready");
          expect(store.ok, t.what).toBe(false);
          // The operator's port says why; the public one names the check only.
          if (t.public) expect(store.message, t.what).toBeUndefined();
          else expect(store.message, t.what).toMatch(/cassandra|no answer within/i);
          expect(
            answer.body.checks.find((c: any) => c.name === "bus"),
            t.what,
          ).toEqual({ name: "bus", ok: true });
        }
        step("not ready where the store is used");
        for (const t of [...usesStore, ...encoder]) expect((await probe(`${t.url}/healthz`)).status, `${t.what} alive`).toBe(200);
        for (const t of encoder) expect((await probe(`${t.url}/readyz`)).status, `${t.what} ready without Cassandra`).toBe(200);
        step("start Cassandra");
        await run("bash", [script, "up"], { cwd: ROOT, timeout: 280_000 });
        stopped = false;
        step("Cassandra up");
        for (const t of usesStore) {
          await until(`${t.what} ready again`, async () => ((await probe(`${t.url}/readyz`)).status === 200 ? true : undefined), 120_000);
          step(`${t.what} ready again`);
        }
      } finally {
        if (stopped) await run("bash", [script, "up"], { cwd: ROOT, timeout: 280_000 });
      }
    },
    600_000,
  );

  it("answers /readyz 503 on a gateway from the moment it is sent SIGTERM, serves on for the drain delay, then exits 0", async () => {
    const gateway = cluster.gateways[0]!;
    const base = `http://127.0.0.1:${gateway.port}`;
    const metrics = `http://127.0.0.1:${gateway.metricsPort}`;
    const boot = readBootstrap(dataDir);
    const key = { bearer: boot.api_key, org: boot.organization_id };
    expect((await probe(`${base}/readyz`)).status).toBe(200);
    const exited = new Promise<number | null>((resolve) => gateway.child.once("exit", (code) => resolve(code)));
    const signalled = Date.now();
    gateway.child.kill("SIGTERM");
    step("SIGTERM to the gateway");
    // Polled until the port closes: once a 503 is seen, no 200 follows.
    const seen: { at: number; status: number | "closed" }[] = [];
    let apiDuringDrain = 0;
    for (;;) {
      const at = Date.now() - signalled;
      const answer = await probe(`${base}/readyz`).catch(() => undefined);
      if (!answer) {
        seen.push({ at, status: "closed" });
        break;
      }
      seen.push({ at, status: answer.status });
      if (answer.status === 503) {
        expect(answer.body).toEqual({ status: "draining", checks: [] });
        // Still serving: the API answers while the delay runs.
        if (apiDuringDrain === 0 && (await call(base, "APIKeyService/List", {}, key).catch(() => undefined))?.status === 200)
          apiDuringDrain = Date.now() - signalled;
        const operator = await probe(`${metrics}/readyz`).catch(() => undefined); // closed last, after the gateway's port
        if (operator) expect(operator.status).toBe(503);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    step(`gateway answers after SIGTERM: ${JSON.stringify(seen.slice(0, 3))} ... ${JSON.stringify(seen.slice(-2))}`);
    const first503 = seen.findIndex((s) => s.status === 503);
    expect(first503, JSON.stringify(seen)).toBeGreaterThanOrEqual(0);
    // The signal reaches Node and the drain begins within a few polls.
    expect(seen[first503]!.at).toBeLessThan(1_000);
    expect(
      seen.slice(first503).every((s) => s.status !== 200),
      JSON.stringify(seen),
    ).toBe(true);
    expect(apiDuringDrain, "an API call answered 200 during the drain").toBeGreaterThan(0);
    // The port stays open for the drain delay.
    expect(seen.at(-1)!.at).toBeGreaterThanOrEqual(DRAIN_DELAY_SECONDS * 1000 - 100);
    expect(await exited).toBe(0);
  });
});
