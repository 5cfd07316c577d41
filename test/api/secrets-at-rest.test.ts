// Secrets shown once stay out of the store: after creating API keys, webhook endpoints and an app
// webhook with an Idempotency-Key (whose record remembers the answer for a retry), a scan of
// everything the deployment keeps (embedded: every file of the data folder; cluster: every row of
// every Cassandra table of its keyspace) finds none of the secrets, neither as text nor inside any
// base64 or base64url run of bytes. A retry still gets its secret back.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cassandraClient } from "../cluster/endpoints.js";
import { call, ok, startHarness, TARGET, type Auth, type Harness } from "../harness.js";

let h: Harness;
let key: Auth;
let owner: Auth;
let closed = false;

beforeAll(async () => {
  h = await startHarness({ MEDIA_NET_ALLOW: "127.0.0.1/32" });
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  owner = { bearer: await h.token(h.boot.user_email), org: h.boot.organization_id };
});

afterAll(async () => {
  if (!closed) await h?.server.close();
});

/** Every readable text of a blob: itself, and the bytes of every base64 or base64url run in it. */
function readings(text: string): string[] {
  const out = [text];
  for (const run of text.match(/[A-Za-z0-9+/_-]{24,}={0,2}/g) ?? []) {
    for (const encoding of ["base64", "base64url"] as const) out.push(Buffer.from(run, encoding).toString("latin1"));
  }
  return out;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/** Everything the deployment stores, as texts. */
async function storedTexts(): Promise<{ where: string; text: string }[]> {
  if (TARGET === "embedded") {
    // The bootstrap file holds the bootstrap key by design (0600, printed once); it is not among the secrets made here.
    return filesUnder(h.config.dataDir).map((f) => ({ where: f, text: readFileSync(f).toString("latin1") }));
  }
  const client = cassandraClient();
  await client.connect();
  try {
    const keyspace = h.config.cluster.cassandraKeyspace;
    const tables = await client.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?", [keyspace], { prepare: true });
    const out: { where: string; text: string }[] = [];
    for (const { table_name: table } of tables.rows) {
      const rows: Record<string, unknown>[] = [];
      await new Promise<void>((resolve, reject) =>
        client.eachRow(
          `SELECT * FROM ${keyspace}.${String(table)}`,
          [],
          { fetchSize: 500, autoPage: true },
          (_n, row) => rows.push(row as Record<string, unknown>),
          (err) => (err ? reject(err) : resolve()),
        ),
      );
      for (const row of rows) {
        const values = Object.values(row).map((v) => (Buffer.isBuffer(v) ? v.toString("latin1") : JSON.stringify(v)));
        out.push({ where: `${keyspace}.${String(table)}`, text: values.join("\u0000") });
      }
    }
    expect(out.length).toBeGreaterThan(10);
    return out;
  } finally {
    await client.shutdown();
  }
}

describe("secrets at rest", () => {
  it("keeps no secret shown once, while an Idempotency-Key retry still gets it back", async () => {
    const idem = (auth: Auth, k: string): Auth => ({ ...auth, headers: { "idempotency-key": k } });
    const apiKey = await ok(call(h.base, "APIKeyService/Create", { name: "at rest" }, idem(key, "rest-key-1")));
    const replay = await call(h.base, "APIKeyService/Create", { name: "at rest" }, idem(key, "rest-key-1"));
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body.secret).toBe(apiKey.secret);

    const endpoint = await ok(
      call(h.base, "WebhookService/CreateWebhookEndpoint", { url: "https://127.0.0.1:9/hook", enabled_events: ["job.succeeded"] }, idem(key, "rest-hook-1")),
    );
    const app = await ok(
      call(
        h.base,
        "AppService/Create",
        { name: "at rest", webhook: { url: "https://hooks.example.com/app", events: ["job.completed"], generate_secret: true } },
        idem(owner, "rest-app-1"),
      ),
    );
    const orgKey = await ok(call(h.base, "APIKeyService/Create", { name: "portal", app_id: app.app.id }, idem(owner, "rest-key-2")));
    const secrets = [apiKey.secret, endpoint.endpoint.secret, app.webhook_secret, orgKey.secret] as string[];
    for (const s of secrets) expect(s).toMatch(/^(ak|whsec)_[A-Za-z0-9]{20,}$/);

    // The embedded store writes as it goes; closing makes sure nothing waits in memory.
    if (TARGET === "embedded") {
      closed = true;
      await h.server.close();
    }
    const stored = await storedTexts();
    const found = stored.flatMap(({ where, text }) =>
      secrets.filter((s) => readings(text).some((r) => r.includes(s) || r.includes(s.slice(s.indexOf("_") + 1)))).map((s) => `${s.slice(0, 8)}… in ${where}`),
    );
    expect(found).toEqual([]);
  });
});
