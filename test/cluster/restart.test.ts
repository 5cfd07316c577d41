// Restart of the whole cluster: state made through one cluster (keys, a revoked key, apps, an
// archived app, a member, a remembered Idempotency-Key) is all there after every process stopped
// (SIGTERM) and a new cluster started on the same keyspace and data folder; the bootstrap is not
// redone and its key still authenticates.
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { testIssuer } from "../issuer.js";
import { launchCluster, type LocalCluster } from "../../main/launcher.js";
import { call, freePort, freshKeyspace, readBootstrap, tempDataDir, type Auth, type Reply, clusterEnv, dropKeyspace } from "../harness.js";

const keyspace = freshKeyspace();
const dataDir = tempDataDir();
const issuer = await testIssuer();
const env = clusterEnv(dataDir, keyspace, { ...issuer.env, MEDIA_COMMAND_PARTITIONS: "4" });
const clusters: LocalCluster[] = [];

async function launch(): Promise<{ cluster: LocalCluster; bases: string[] }> {
  const basePort = freePort();
  freePort();
  const cluster = await launchCluster({ gateways: 2, actorHosts: 2, basePort, env });
  clusters.push(cluster);
  return { cluster, bases: cluster.gateways.map((g) => `http://127.0.0.1:${g.port}`) };
}

afterAll(async () => {
  await Promise.all(clusters.map((c) => c.stop()));
  await dropKeyspace(keyspace);
}, 120_000);

function ok(r: Reply, what: string): any {
  expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
}

/** Every page of a List call. */
async function all(base: string, route: string, body: Record<string, unknown>, auth: Auth, field: string): Promise<any[]> {
  const items: any[] = [];
  let cursor = "";
  do {
    const page = ok(await call(base, route, { ...body, pagination: { limit: 100, ...(cursor ? { cursor } : {}) } }, auth), route);
    items.push(...page[field]);
    cursor = page.pagination?.next_cursor ?? "";
  } while (cursor);
  return items;
}

/** last_used_at is written in the background (at most once a minute per key): not compared. */
const withoutUsage = (keys: any[]) => keys.map(({ last_used_at: _, ...k }) => k);

describe("cluster restart", () => {
  it("recovers all state from Cassandra after every process stopped", async () => {
    const t0 = Date.now();
    const first = await launch();
    const [a, b] = first.bases as [string, string];
    const boot = readBootstrap(dataDir);
    const bootstrapFile = readFileSync(path.join(dataDir, "bootstrap.json"), "utf8");
    const serverSecret = readFileSync(path.join(dataDir, "server-secret"), "utf8");
    const key: Auth = { bearer: boot.api_key, org: boot.organization_id };
    const owner: Auth = { bearer: await issuer.token(boot.user_email), org: boot.organization_id };

    // State, made through both gateways.
    const idem = { ...key, headers: { "idempotency-key": "restart-kept-1" } };
    const kept = ok(await call(a, "APIKeyService/Create", { name: "kept-1", description: "survives", scopes: ["api_keys:read"] }, idem), "create kept-1");
    ok(await call(b, "APIKeyService/Create", { name: "kept-2" }, key), "create kept-2");
    const doomed = ok(await call(a, "APIKeyService/Create", { name: "to-revoke" }, key), "create to-revoke");
    const revoked = ok(await call(b, "APIKeyService/Revoke", { id: doomed.api_key.id, reason: "rotation" }, key), "revoke");
    expect(revoked.api_key.is_revoked).toBe(true);
    const app = ok(
      await call(
        a,
        "AppService/Create",
        { name: "restart-app", description: "d", webhook: { url: "https://hooks.example.com/in", events: ["job.completed"], generate_secret: true } },
        owner,
      ),
      "create app",
    ).app;
    const old = ok(await call(b, "AppService/Create", { name: "old-app" }, owner), "create old-app").app;
    expect(ok(await call(a, "AppService/Archive", { id: old.id }, owner), "archive").app.status).toBe("archived");
    const appKey = ok(await call(b, "APIKeyService/Create", { name: "app-key", app_id: app.id }, owner), "create app key");
    const dana = await issuer.token("dana@restart.test");
    const me = ok(await call(a, "UserService/GetMe", {}, { bearer: dana }), "dana GetMe");
    ok(await call(b, "UserService/DecideApproval", { user_id: me.user.user.id, decision: "approved" }, { bearer: owner.bearer! }), "approve dana");
    ok(await call(a, "UserService/AddMember", { email: "dana@restart.test", role: "admin" }, owner), "add dana");

    const snapshot = async (base: string) => ({
      appKeys: withoutUsage(await all(base, "APIKeyService/List", { include_revoked: true }, key, "api_keys")),
      orgKeys: withoutUsage(await all(base, "APIKeyService/List", { include_revoked: true }, owner, "api_keys")),
      activeKeys: withoutUsage(await all(base, "APIKeyService/List", {}, key, "api_keys")),
      apps: await all(base, "AppService/List", { include_archived: true }, owner, "apps"),
      activeApps: await all(base, "AppService/List", {}, owner, "apps"),
      members: await all(base, "UserService/ListMembers", {}, owner, "members"),
      organizations: ok(await call(base, "OrganizationService/List", {}, owner), "organizations").organizations,
      dana: ok(await call(base, "UserService/GetMe", {}, { bearer: dana }), "dana").user,
    });
    const before = await snapshot(a);
    expect(before.appKeys.map((k) => k.name).sort()).toEqual(["bootstrap", "kept-1", "kept-2", "to-revoke"]);
    expect(before.orgKeys).toHaveLength(5);
    expect(before.apps.map((x) => x.name).sort()).toEqual(["Default app", "old-app", "restart-app"]);
    expect(before.organizations).toHaveLength(1);
    const launchedFirst = Date.now();

    // Every process stops on SIGTERM, cleanly.
    await first.cluster.stop("SIGTERM");
    const processes = [...first.cluster.gateways, ...first.cluster.actorHosts];
    expect(processes.map((p) => `${p.role}-${p.index}: ${p.child.exitCode ?? p.child.signalCode}`)).toEqual(processes.map((p) => `${p.role}-${p.index}: 0`));
    const stopped = Date.now();

    const second = await launch();
    const [c, d] = second.bases as [string, string];
    const relaunched = Date.now();
    // The bootstrap was not redone: same file, same secret, nothing printed, one organization.
    expect(readFileSync(path.join(dataDir, "bootstrap.json"), "utf8")).toBe(bootstrapFile);
    expect(readFileSync(path.join(dataDir, "server-secret"), "utf8")).toBe(serverSecret);
    for (const g of second.cluster.gateways) expect(g.output()).not.toContain("bootstrap credentials");

    // Everything is there, through either gateway.
    for (const base of [c, d]) expect(await snapshot(base)).toEqual(before);
    const got = ok(await call(c, "APIKeyService/Get", { id: doomed.api_key.id }, key), "get revoked").api_key;
    expect(got).toEqual(revoked.api_key);
    expect(ok(await call(d, "AppService/Get", { id: app.id }, owner), "get app").app).toEqual(app);

    // The secrets still authenticate (the revoked one does not), the bootstrap key included.
    expect((await call(c, "APIKeyService/Get", { id: kept.api_key.id }, { bearer: kept.secret, org: boot.organization_id })).status).toBe(200);
    expect((await call(d, "APIKeyService/Get", { id: appKey.api_key.id }, { bearer: appKey.secret, org: boot.organization_id })).status).toBe(200);
    expect((await call(c, "APIKeyService/List", {}, { bearer: doomed.secret, org: boot.organization_id })).status).toBe(401);
    expect((await call(d, "AppService/Get", { id: boot.app_id }, key)).status).toBe(200);

    // The Idempotency-Key is remembered: the retry replays the first answer.
    const replay = await call(d, "APIKeyService/Create", { name: "kept-1", description: "survives", scopes: ["api_keys:read"] }, idem);
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(kept);
    // The actors recover from the journal: a second revoke is refused; new writes go on.
    expect((await call(c, "APIKeyService/Revoke", { id: doomed.api_key.id }, key)).body.code).toBe("failed_precondition");
    ok(await call(d, "APIKeyService/Revoke", { id: appKey.api_key.id }, owner), "revoke after restart");
    ok(await call(c, "APIKeyService/Create", { name: "after-restart" }, key), "create after restart");
    expect((await all(c, "APIKeyService/List", { include_revoked: true }, owner, "api_keys")).map((k) => k.name).sort()).toEqual([
      "after-restart",
      "app-key",
      "bootstrap",
      "kept-1",
      "kept-2",
      "to-revoke",
    ]);
    console.log(
      `restart: first cluster up and state made in ${((launchedFirst - t0) / 1000).toFixed(1)} s, stopped in ${((stopped - launchedFirst) / 1000).toFixed(1)} s, ` +
        `second cluster up in ${((relaunched - stopped) / 1000).toFixed(1)} s`,
    );
  }, 180_000);
});
