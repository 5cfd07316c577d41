// Behaviour of the front-door services beyond errors: retries with Idempotency-Key, cursor paging
// across inserts and deletes, the user lifecycle, roles, apps with the legacy webhook, key usage.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startHarness, until, type Auth, type Harness } from "../harness.js";

let h: Harness;
let key: Auth;
let owner: Auth;

beforeAll(async () => {
  h = await startHarness();
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  owner = { bearer: await h.token(h.boot.user_email), org: h.boot.organization_id };
});
afterAll(async () => {
  await h.server.close();
});

async function newUser(email: string, approve = true): Promise<{ auth: Auth; id: string }> {
  const bearer = await h.token(email);
  const me = await call(h.base, "UserService/GetMe", {}, { bearer });
  expect(me.status).toBe(200);
  const id = me.body.user.user.id as string;
  if (approve) {
    const r = await call(h.base, "UserService/DecideApproval", { user_id: id, decision: "approved" }, { bearer: owner.bearer! });
    expect(r.status).toBe(200);
  }
  return { auth: { bearer, org: h.boot.organization_id }, id };
}

describe("Idempotency-Key", () => {
  it("replays the first answer for the same key and body, and refuses another body", async () => {
    const headers = { "idempotency-key": "create-once-1" };
    const first = await call(h.base, "APIKeyService/Create", { name: "idem" }, { ...key, headers });
    const second = await call(h.base, "APIKeyService/Create", { name: "idem" }, { ...key, headers });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    const list = await call(h.base, "APIKeyService/List", { pagination: { limit: 100 } }, key);
    expect(list.body.api_keys.filter((k: any) => k.name === "idem")).toHaveLength(1);
    const other = await call(h.base, "APIKeyService/Create", { name: "idem-2" }, { ...key, headers });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe("already_exists");
  });

  it("serializes concurrent retries of one key into one effect", async () => {
    const headers = { "idempotency-key": "burst" };
    const replies = await Promise.all([1, 2, 3, 4].map(() => call(h.base, "AppService/Create", { name: "burst-app" }, { ...owner, headers })));
    expect(new Set(replies.map((r) => r.body.app.id)).size).toBe(1);
  });
});

describe("cursor paging", () => {
  it("is stable across inserts and deletes while paging", async () => {
    const app = await call(h.base, "AppService/Create", { name: "paging" }, owner);
    const appId = app.body.app.id;
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await call(h.base, "APIKeyService/Create", { name: `p${i}`, app_id: appId }, owner)).body.api_key.id);
    const newestFirst = [...ids].reverse();
    const seen: string[] = [];
    let page = await call(h.base, "APIKeyService/List", { app_id: appId, pagination: { limit: 3 } }, owner);
    seen.push(...page.body.api_keys.map((k: any) => k.id));
    // Insert a new key and revoke one not yet seen: neither shifts what the cursor returns.
    await call(h.base, "APIKeyService/Create", { name: "late", app_id: appId }, owner);
    await call(h.base, "APIKeyService/Revoke", { id: newestFirst[4] }, owner);
    while (page.body.pagination.next_cursor !== "") {
      page = await call(h.base, "APIKeyService/List", { app_id: appId, pagination: { limit: 3, cursor: page.body.pagination.next_cursor } }, owner);
      expect(page.status).toBe(200);
      seen.push(...page.body.api_keys.map((k: any) => k.id));
    }
    expect(seen).toEqual(newestFirst.filter((id) => id !== newestFirst[4]));
    const offset = await call(h.base, "APIKeyService/List", { app_id: appId, include_revoked: true, pagination: { offset: 2, limit: 2 } }, owner);
    expect(offset.body.api_keys).toHaveLength(2);
    expect(offset.body.pagination.total_count).toBe(8);
  });
});

describe("users, approval and roles", () => {
  it("provisions pending users, lets staff approve, and gives members a role", async () => {
    const bearer = await h.token("carol@a.test");
    const me = await call(h.base, "UserService/GetMe", {}, { bearer });
    expect(me.body.user.user).toMatchObject({ email: "carol@a.test", approval_status: "pending", status: "active" });
    expect(me.body.user.user).not.toHaveProperty("approval_decided_at");
    expect(me.body.user.organizations).toEqual([]);
    const approved = await call(h.base, "UserService/DecideApproval", { user_id: me.body.user.user.id, decision: "approved" }, { bearer: owner.bearer! });
    expect(approved.body.user.approval_status).toBe("approved");
    expect(approved.body.user.approval_decided_by_user_id).toMatch(/^usr_/);
    const added = await call(h.base, "UserService/AddMember", { email: "carol@a.test", role: "member" }, owner);
    expect(added.body.member).toMatchObject({ role: "member", is_active: true, email: "carol@a.test" });
    const mine = await call(h.base, "UserService/GetMe", {}, { bearer });
    expect(mine.body.user.organizations).toEqual([
      { org_id: h.boot.organization_id, org_slug: expect.any(String), org_name: "Default organization", role: "member", is_active: true },
    ]);
    const updated = await call(h.base, "UserService/UpdateMe", { first_name: "Carol" }, { bearer });
    expect(updated.body.user.first_name).toBe("Carol");
    const members = await call(h.base, "UserService/ListMembers", { role: "member" }, owner);
    expect(members.body.members.map((m: any) => m.email)).toContain("carol@a.test");
    // A member reads but cannot manage keys; an admin can.
    const carol = { bearer, org: h.boot.organization_id };
    expect((await call(h.base, "AppService/List", {}, carol)).status).toBe(200);
    expect((await call(h.base, "APIKeyService/Create", { name: "x", app_id: h.boot.app_id }, carol)).status).toBe(403);
    await call(h.base, "UserService/UpdateRole", { user_id: me.body.user.user.id, role: "admin" }, owner);
    expect((await call(h.base, "APIKeyService/Create", { name: "x", app_id: h.boot.app_id }, carol)).status).toBe(200);
    // An admin cannot touch the owner; the last owner cannot be demoted.
    const ownerId = (await call(h.base, "UserService/GetMe", {}, { bearer: owner.bearer! })).body.user.user.id;
    expect((await call(h.base, "UserService/RemoveMember", { user_id: ownerId }, carol)).status).toBe(403);
    expect((await call(h.base, "UserService/UpdateRole", { user_id: ownerId, role: "admin" }, owner)).body.code).toBe("failed_precondition");
    const removed = await call(h.base, "UserService/RemoveMember", { user_id: me.body.user.user.id }, owner);
    expect(removed.body.member.is_active).toBe(false);
    expect((await call(h.base, "AppService/List", {}, carol)).status).toBe(403);
  });

  it("lists users of the organization for admins, filtered by status", async () => {
    const dave = await newUser("dave@a.test");
    await call(h.base, "UserService/AddMember", { email: "dave@a.test", role: "viewer" }, owner);
    const list = await call(h.base, "UserService/List", { status: "active" }, owner);
    expect(list.body.users.map((u: any) => u.email)).toEqual(expect.arrayContaining(["owner@media.local", "dave@a.test"]));
    expect((await call(h.base, "UserService/List", {}, dave.auth)).status).toBe(403);
    expect((await call(h.base, "UserService/Get", { id: dave.id }, key)).body.user.email).toBe("dave@a.test");
    expect((await call(h.base, "UserService/Get", { id: dave.id }, dave.auth)).status).toBe(200);
  });

  it("creates an organization for an approved user, with a unique slug", async () => {
    const erin = await newUser("erin@e.test");
    const created = await call(h.base, "OrganizationService/Create", { name: "Erin Co", slug: "erin-co" }, { bearer: erin.auth.bearer! });
    expect(created.body.organization).toMatchObject({ name: "Erin Co", slug: "erin-co", status: "active" });
    expect(created.body.organization).not.toHaveProperty("billing_email");
    const check = await call(h.base, "OrganizationService/CheckSlug", { slug: "erin-co" }, { bearer: erin.auth.bearer! });
    expect(check.body).toEqual({ slug: "erin-co", available: false });
    const org = { bearer: erin.auth.bearer!, org: created.body.organization.id };
    const updated = await call(h.base, "OrganizationService/Update", { billing_email: "billing@e.test" }, org);
    expect(updated.body.organization.billing_email).toBe("billing@e.test");
    expect((await call(h.base, "OrganizationService/List", {}, org)).body.organizations.map((o: any) => o.slug)).toEqual(["erin-co"]);
  });
});

describe("apps", () => {
  it("shows the legacy webhook secret once, keeps its hint, and archives", async () => {
    const created = await call(
      h.base,
      "AppService/Create",
      { name: "hooks", webhook: { url: "https://hooks.example.com/in", events: ["job.completed"], generate_secret: true } },
      owner,
    );
    expect(created.body.webhook_secret).toMatch(/^whsec_/);
    expect(created.body.app.webhook).toEqual({
      url: "https://hooks.example.com/in",
      secret_hint: created.body.webhook_secret.slice(-4),
      has_secret: true,
      events: ["job.completed"],
    });
    const got = await call(h.base, "AppService/Get", { id: created.body.app.id }, owner);
    expect(got.body).not.toHaveProperty("webhook_secret");
    expect(JSON.stringify(got.body)).not.toContain(created.body.webhook_secret);
    const rotated = await call(
      h.base,
      "AppService/Update",
      { id: created.body.app.id, webhook: { url: "https://hooks.example.com/in", events: ["job.failed"], regenerate_secret: true } },
      owner,
    );
    expect(rotated.body.webhook_secret).not.toBe(created.body.webhook_secret);
    const bad = await call(h.base, "AppService/Create", { name: "x", webhook: { url: "http://plain", events: ["job.nope"] } }, owner);
    expect(bad.body.code).toBe("invalid_argument");
    const hosting = await call(h.base, "AppService/EnableHosting", { id: created.body.app.id }, owner);
    expect(hosting.body.app.hosting_enabled).toBe(true);
    const archived = await call(h.base, "AppService/Archive", { id: created.body.app.id }, owner);
    expect(archived.body.app.status).toBe("archived");
    expect(archived.body.app.archived_at).not.toBeNull();
    expect((await call(h.base, "AppService/List", {}, owner)).body.apps.map((a: any) => a.id)).not.toContain(created.body.app.id);
    expect((await call(h.base, "AppService/List", { include_archived: true }, owner)).body.apps.map((a: any) => a.id)).toContain(created.body.app.id);
  });
});

describe("API keys", () => {
  it("records last_used_at, hides the secret after Create, and revokes immediately", async () => {
    const created = await call(h.base, "APIKeyService/Create", { name: "usage", description: "d", scopes: ["api_keys:read"] }, key);
    const fresh = created.body.api_key;
    expect(fresh).not.toHaveProperty("last_used_at");
    expect(fresh).not.toHaveProperty("expires_at");
    expect(fresh.key_prefix).toBe(created.body.secret.slice(0, 11));
    const own = { bearer: created.body.secret, org: h.boot.organization_id };
    expect((await call(h.base, "APIKeyService/Get", { id: fresh.id }, own)).status).toBe(200);
    // The use is stamped in the background (a command to the key's actor): poll for it.
    const used = await until(
      "last_used_at",
      async () => {
        const r = await call(h.base, "APIKeyService/Get", { id: fresh.id }, key);
        return r.body.api_key.last_used_at ? r : undefined;
      },
      15_000,
    );
    expect(used.body.api_key.last_used_at).toMatch(/^\d{4}-/);
    expect(JSON.stringify(used.body)).not.toContain(created.body.secret);
    const revoked = await call(h.base, "APIKeyService/Revoke", { id: fresh.id, reason: "leaked" }, key);
    expect(revoked.body.api_key).toMatchObject({ is_revoked: true, revoked_at: expect.any(String) });
    expect((await call(h.base, "APIKeyService/Get", { id: fresh.id }, own)).status).toBe(401);
  });
});
