// Bad input and the spec's error conditions for OrganizationService, AppService, APIKeyService,
// UserService and HealthService: every case checks the HTTP status, the Connect code, the field
// named in field_violations where one is at fault, that nothing answers 500, and that every error
// body carries a base64 media.v1.ErrorDetails whose decoded code is set.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, errorDetails, startHarness, type Auth, type Harness, type Reply } from "../harness.js";

let h: Harness;
/** Filled in beforeAll; the case table reads it lazily. */
const x = { key: {} as Auth, owner: {} as Auth, ownerId: "", org: "", app: "", app2: "", spareKeyId: "" };

/** The status, the Connect code, the ErrorDetails every error carries and, if given, the field at fault. */
async function expectError(r: Reply, status: number, code: string, field?: string, message?: RegExp): Promise<void> {
  const shown = JSON.stringify(r.body);
  expect(r.status, shown).not.toBe(500);
  expect(r.status, shown).toBe(status);
  expect(r.body?.code, shown).toBe(code);
  expect(typeof r.body.message).toBe("string");
  const entry = (r.body.details ?? []).find((d: any) => d.type === "media.v1.ErrorDetails");
  expect(entry, `no media.v1.ErrorDetails in ${shown}`).toBeDefined();
  expect(entry.value).toMatch(/^[A-Za-z0-9+/_-]+={0,2}$/);
  const details = await errorDetails(r.body);
  expect(details.code, shown).not.toBe("");
  if (field !== undefined)
    expect(
      details.fieldViolations.map((v) => v.field),
      shown,
    ).toContain(field);
  if (message) expect(r.body.message).toMatch(message);
}

/** A user who has logged in once; approved by staff unless told otherwise; optionally a member of org A. */
async function user(email: string, opts: { approve?: boolean; role?: string } = {}): Promise<{ auth: Auth; id: string }> {
  const bearer = await h.token(email);
  const me = await ok(call(h.base, "UserService/GetMe", {}, { bearer }));
  const id = me.user.user.id as string;
  if (opts.approve !== false) await ok(call(h.base, "UserService/DecideApproval", { user_id: id, decision: "approved" }, { bearer: x.owner.bearer! }));
  if (opts.role) await ok(call(h.base, "UserService/AddMember", { email, role: opts.role }, x.owner));
  return { auth: { bearer, org: x.org }, id };
}

const newKey = async (body: Record<string, unknown>, auth: Auth = x.key) => ok(call(h.base, "APIKeyService/Create", { name: "k", ...body }, auth));

beforeAll(async () => {
  h = await startHarness();
  x.org = h.boot.organization_id;
  x.app = h.boot.app_id;
  x.key = { bearer: h.boot.api_key, org: x.org };
  x.owner = { bearer: await h.token(h.boot.user_email), org: x.org };
  x.ownerId = (await ok(call(h.base, "UserService/GetMe", {}, x.owner))).user.user.id;
  x.app2 = (await ok(call(h.base, "AppService/Create", { name: "second" }, x.owner))).app.id;
  x.spareKeyId = (await newKey({ name: "spare" })).api_key.id; // app A now has two keys: APIKeyService/List pages
});

afterAll(async () => {
  await h?.server.close();
});

interface Case {
  name: string;
  route: string;
  body: unknown | (() => unknown);
  auth: () => Auth;
  status: number;
  code: string;
  field?: string;
  message?: RegExp;
}
const KEY = () => x.key;
const OWNER = () => x.owner;
const bad = (name: string, route: string, body: Case["body"], field?: string, auth = KEY): Case => ({
  name,
  route,
  body,
  auth,
  status: 400,
  code: "invalid_argument",
  ...(field !== undefined ? { field } : {}),
});

const CASES: Case[] = [
  // the body itself
  bad("malformed JSON", "APIKeyService/Create", '{"name": "k",', ""),
  bad("a JSON array body", "APIKeyService/Create", '[{"name":"k"}]', "body"),
  bad("JSON null body", "AppService/List", "null", "body"),
  bad("a string for a boolean", "APIKeyService/List", { include_revoked: "yes" }, "include_revoked"),
  bad("a number for a string", "APIKeyService/Create", { name: 5 }, "name"),
  bad("an object for a string", "AppService/Get", { id: { nested: true } }, "id"),
  bad("an array for a message", "AppService/List", { pagination: [] }, "pagination"),
  bad("an unknown field", "APIKeyService/Create", { name: "k", colour: "red" }, "colour"),
  bad("an unknown enum string (user status)", "UserService/List", { status: "bogus" }, "status", OWNER),
  bad("an unknown enum string (role)", "UserService/UpdateRole", () => ({ user_id: x.ownerId, role: "superuser" }), "role", OWNER),
  bad("an id of the wrong kind", "AppService/Get", { id: "org_123" }, "id"),
  // pagination
  bad("pagination.limit 0", "AppService/List", { pagination: { limit: 0 } }, "pagination.limit"),
  bad("pagination.limit 101", "APIKeyService/List", { pagination: { limit: 101 } }, "pagination.limit"),
  bad("a fractional pagination.limit", "AppService/List", { pagination: { limit: 2.5 } }, "pagination.limit"),
  bad("a negative pagination.offset", "UserService/ListMembers", { pagination: { offset: -1 } }, "pagination.offset"),
  bad(
    "a forged cursor",
    "AppService/List",
    { pagination: { cursor: `${Buffer.from('["apps:x",""]').toString("base64url")}.c2lnbmF0dXJl` } },
    "pagination.cursor",
  ),
  bad("a cursor that is not a cursor", "APIKeyService/List", { pagination: { cursor: "not-a-cursor" } }, "pagination.cursor"),
  // APIKeyService limits
  bad("an empty key name", "APIKeyService/Create", { name: "" }, "name"),
  bad("a key name of 256 characters", "APIKeyService/Create", { name: "n".repeat(256) }, "name"),
  bad("a key description of 1001 characters", "APIKeyService/Create", { name: "k", description: "d".repeat(1001) }, "description"),
  bad("a revoke reason of 501 characters", "APIKeyService/Revoke", () => ({ id: x.spareKeyId, reason: "r".repeat(501) }), "reason"),
  bad("expires_at in the past", "APIKeyService/Create", { name: "k", expires_at: "2020-01-01T00:00:00Z" }, "expires_at"),
  bad("a malformed expires_at", "APIKeyService/Create", { name: "k", expires_at: "next tuesday" }, "expires_at"),
  bad("an unknown scope", "APIKeyService/Create", { name: "k", scopes: ["everything:write"] }, "scopes[0]"),
  bad("an unknown scope action", "APIKeyService/Create", { name: "k", scopes: ["jobs:write", "jobs:delete"] }, "scopes[1]"),
  bad("a session creating a key without app_id", "APIKeyService/Create", { name: "k" }, "app_id", OWNER),
  // organizations
  bad("an invalid slug", "OrganizationService/Create", { name: "Org", slug: "Not A Slug" }, "slug", () => ({ bearer: x.owner.bearer! })),
  bad("a slug too short", "OrganizationService/CheckSlug", { slug: "ab" }, "slug", () => ({ bearer: x.owner.bearer! })),
  // X-Organization-ID
  bad("a key call without X-Organization-ID", "AppService/List", {}, "X-Organization-ID", () => ({ bearer: x.key.bearer! })),
  bad("a session call without X-Organization-ID", "APIKeyService/List", {}, "X-Organization-ID", () => ({ bearer: x.owner.bearer! })),
  // authentication
  { name: "no Authorization", route: "AppService/List", body: {}, auth: () => ({ org: x.org }), status: 401, code: "unauthenticated" },
  {
    name: "no Authorization, APIKeyService/Create with only app_id",
    route: "APIKeyService/Create",
    body: () => ({ app_id: x.app }),
    auth: () => ({}),
    status: 401,
    code: "unauthenticated",
  },
  {
    name: "a garbage bearer token",
    route: "AppService/List",
    body: {},
    auth: () => ({ bearer: "garbage.token.here", org: x.org }),
    status: 401,
    code: "unauthenticated",
  },
  {
    name: "an unknown ak_ key",
    route: "AppService/List",
    body: {},
    auth: () => ({ bearer: `ak_${"x".repeat(40)}`, org: x.org }),
    status: 401,
    code: "unauthenticated",
  },
  {
    name: "a Basic Authorization",
    route: "AppService/List",
    body: {},
    auth: () => ({ org: x.org, headers: { authorization: "Basic Zm9vOmJhcg==" } }),
    status: 401,
    code: "unauthenticated",
  },
  // permission
  {
    name: "a key listing another app's keys (Errors condition 1)",
    route: "APIKeyService/List",
    body: () => ({ app_id: x.app2 }),
    auth: KEY,
    status: 403,
    code: "permission_denied",
  },
  {
    name: "a key calling OrganizationService/Create",
    route: "OrganizationService/Create",
    body: { name: "Org", slug: "key-made-org" },
    auth: KEY,
    status: 403,
    code: "permission_denied",
    message: /signed-in user/,
  },
  { name: "a key calling UserService/GetMe", route: "UserService/GetMe", body: {}, auth: KEY, status: 403, code: "permission_denied" },
  { name: "a key calling UserService/UpdateMe", route: "UserService/UpdateMe", body: { first_name: "K" }, auth: KEY, status: 403, code: "permission_denied" },
  { name: "a key calling AppService/Create", route: "AppService/Create", body: { name: "a" }, auth: KEY, status: 403, code: "permission_denied" },
  // hosting: the video to read is named
  { name: "an empty VideoService/Get", route: "VideoService/Get", body: {}, auth: KEY, status: 400, code: "invalid_argument", field: "id" },
  // jobs: the first violations of an empty create
  { name: "an empty JobService/Create", route: "JobService/Create", body: {}, auth: KEY, status: 400, code: "invalid_argument", field: "input_url" },
];

describe("bad requests and error conditions", () => {
  it.each(CASES)("$name → $status $code", async (c) => {
    const body = typeof c.body === "function" ? (c.body as () => unknown)() : c.body;
    await expectError(await call(h.base, c.route, body, c.auth()), c.status, c.code, c.field, c.message);
  });

  it("a cursor taken from another list (APIKeyService/List) is refused by AppService/List", async () => {
    const keys = await ok(call(h.base, "APIKeyService/List", { pagination: { limit: 1 } }, x.key));
    expect(keys.pagination.next_cursor).not.toBe("");
    const r = await call(h.base, "AppService/List", { pagination: { limit: 1, cursor: keys.pagination.next_cursor } }, x.key);
    await expectError(r, 400, "invalid_argument", "pagination.cursor");
    // the same cursor is good on its own list
    expect((await call(h.base, "APIKeyService/List", { pagination: { limit: 1, cursor: keys.pagination.next_cursor } }, x.key)).status).toBe(200);
  });

  it("accepts the limits themselves: name 255, description 1000, reason 500, limit 1 and 100", async () => {
    const k = await newKey({ name: "n".repeat(255), description: "d".repeat(1000) });
    expect((await call(h.base, "APIKeyService/Revoke", { id: k.api_key.id, reason: "r".repeat(500) }, x.key)).status).toBe(200);
    for (const limit of [1, 100]) expect((await call(h.base, "AppService/List", { pagination: { limit } }, x.key)).status).toBe(200);
  });

  it("a duplicate organization slug → 409 already_exists naming slug", async () => {
    const auth = { bearer: x.owner.bearer! };
    await ok(call(h.base, "OrganizationService/Create", { name: "Dup", slug: "dup-slug" }, auth));
    await expectError(await call(h.base, "OrganizationService/Create", { name: "Dup again", slug: "dup-slug" }, auth), 409, "already_exists", "slug");
  });

  it("a body over 4 MiB → 429 resource_exhausted, with Content-Length and chunked; the server stays up", async () => {
    const big = JSON.stringify({ name: "k", description: "d".repeat(4 * 1024 * 1024 + 16) });
    const r = await call(h.base, "APIKeyService/Create", big, x.key);
    await expectError(r, 429, "resource_exhausted", undefined, /4194304/);
    const chunk = new TextEncoder().encode("d".repeat(1024 * 1024));
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"name":"k","description":"'));
        for (let i = 0; i < 5; i++) c.enqueue(chunk);
        c.enqueue(new TextEncoder().encode('"}'));
        c.close();
      },
    });
    const res = await fetch(`${h.base}/media.v1.APIKeyService/Create`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${x.key.bearer}`, "x-organization-id": x.org },
      body: stream,
      duplex: "half",
    } as RequestInit);
    const chunked: Reply = { status: res.status, body: JSON.parse(await res.text()), headers: res.headers };
    await expectError(chunked, 429, "resource_exhausted");
    expect((await call(h.base, "HealthService/Check", {})).status).toBe(200);
  });
});

describe("credentials and account states", () => {
  it("a revoked key is unauthenticated immediately after Revoke", async () => {
    const k = await newKey({ name: "to-revoke" });
    const auth = { bearer: k.secret, org: x.org };
    expect((await call(h.base, "AppService/List", {}, auth)).status).toBe(200);
    await ok(call(h.base, "APIKeyService/Revoke", { id: k.api_key.id, reason: "test" }, x.key));
    await expectError(await call(h.base, "AppService/List", {}, auth), 401, "unauthenticated", undefined, /revoked/);
  });

  it("a key of an archived app is refused at once where the app was archived, and at every gateway well within the 5 s the others keep an app", async () => {
    const app = (await ok(call(h.base, "AppService/Create", { name: "to-archive" }, x.owner))).app.id as string;
    const k = await newKey({ name: "archived-app", app_id: app }, x.owner);
    const auth = { bearer: k.secret, org: x.org };
    // Every gateway has read the app (and keeps it) before it is archived.
    for (const base of h.bases) expect((await call(base, "AppService/List", {}, auth)).status).toBe(200);
    const archivedAt = Date.now();
    await ok(call(h.bases[0]!, "AppService/Archive", { id: app }, x.owner));
    await expectError(await call(h.bases[0]!, "AppService/List", {}, auth), 403, "permission_denied", undefined, /archived/);
    for (const base of h.bases) {
      await expect.poll(async () => (await call(base, "AppService/List", {}, auth)).status, { timeout: 3_000, interval: 50 }).toBe(403);
    }
    expect(Date.now() - archivedAt).toBeLessThan(5_000);
  });

  it("an expired key is unauthenticated", async () => {
    // Long enough for the Create and one call through a loaded cluster; then past it.
    const expiresAt = Date.now() + 5000;
    const k = await newKey({ name: "short-lived", expires_at: new Date(expiresAt).toISOString() });
    const auth = { bearer: k.secret, org: x.org };
    expect((await call(h.base, "AppService/List", {}, auth)).status).toBe(200);
    await new Promise((r) => setTimeout(r, expiresAt - Date.now() + 500));
    await expectError(await call(h.base, "AppService/List", {}, auth), 401, "unauthenticated", undefined, /expired/);
  });

  it("a pending user is refused AppService/List but GetMe works", async () => {
    const pat = await user("pat@pending.test", { approve: false });
    await expectError(await call(h.base, "AppService/List", {}, pat.auth), 403, "permission_denied", undefined, /pending/);
    const me = await ok(call(h.base, "UserService/GetMe", {}, { bearer: pat.auth.bearer! }));
    expect(me.user.user.approval_status).toBe("pending");
  });

  it("a suspended user is refused, GetMe included", async () => {
    const sue = await user("sue@suspended.test", { role: "viewer" });
    expect((await call(h.base, "AppService/List", {}, sue.auth)).status).toBe(200);
    await ok(call(h.base, "UserService/SetStatus", { user_id: sue.id, status: "suspended" }, { bearer: x.owner.bearer! }));
    await expectError(await call(h.base, "AppService/List", {}, sue.auth), 403, "permission_denied", undefined, /suspended/);
    await expectError(await call(h.base, "UserService/GetMe", {}, { bearer: sue.auth.bearer! }), 403, "permission_denied");
  });

  it("a rejected user is refused", async () => {
    const rex = await user("rex@rejected.test", { approve: false });
    await ok(call(h.base, "UserService/DecideApproval", { user_id: rex.id, decision: "rejected" }, { bearer: x.owner.bearer! }));
    await expectError(await call(h.base, "AppService/List", {}, rex.auth), 403, "permission_denied", undefined, /not approved/);
  });

  it("a viewer may list keys but not create one", async () => {
    const vic = await user("vic@viewer.test", { role: "viewer" });
    expect((await call(h.base, "APIKeyService/List", {}, vic.auth)).status).toBe(200);
    await expectError(await call(h.base, "APIKeyService/Create", { name: "k", app_id: x.app }, vic.auth), 403, "permission_denied", undefined, /admin/);
  });

  it("a key scoped to apps:read reads apps but may not create or list keys", async () => {
    const k = await newKey({ name: "apps-reader", scopes: ["apps:read"] });
    const auth = { bearer: k.secret, org: x.org };
    expect((await call(h.base, "AppService/List", {}, auth)).status).toBe(200);
    await expectError(await call(h.base, "APIKeyService/Create", { name: "k" }, auth), 403, "permission_denied", undefined, /api_keys:write/);
    await expectError(await call(h.base, "APIKeyService/List", {}, auth), 403, "permission_denied", undefined, /api_keys:read/);
  });

  it("a scoped key cannot mint a key broader than itself", async () => {
    const k = await newKey({ name: "key-minter", scopes: ["api_keys:write"] });
    const r = await call(h.base, "APIKeyService/Create", { name: "full", scopes: [] }, { bearer: k.secret, org: x.org });
    await expectError(r, 403, "permission_denied");
    const narrower = await call(h.base, "APIKeyService/Create", { name: "reader", scopes: ["api_keys:read"] }, { bearer: k.secret, org: x.org });
    expect(narrower.status).toBe(200);
  });
});

describe("paths and health", () => {
  it.each(["media.v1.NoSuchService/Get", "media.v1.AppService/NoSuchMethod", "nothing-here"])(
    "unknown path /%s → 404 (unimplemented, as Connect clients read a 404)",
    async (path) => {
      const res = await fetch(`${h.base}/${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${x.key.bearer}` },
        body: "{}",
      });
      expect(res.status).toBe(404);
    },
  );

  it("an unknown path carries a Connect error body, code unimplemented, as Connect's own routers answer", async () => {
    const r = await call(h.base, "NoSuchService/Get", {}, x.key);
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ code: "unimplemented", message: expect.stringMatching(/no method at/) });
  });

  it("HealthService/Check without any credentials → 200 healthy", async () => {
    const r = await call(h.base, "HealthService/Check", {});
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("healthy");
    // The database always; the bus too in cluster mode.
    expect(r.body.components).toContainEqual({ name: "database", status: "healthy" });
    for (const c of r.body.components) expect(c).toEqual({ name: expect.any(String), status: "healthy" });
    expect(typeof r.body.version).toBe("string");
  });
});
