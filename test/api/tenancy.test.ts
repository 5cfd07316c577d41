// Tenant isolation: org A's API key and org A owner's session can neither read nor change
// anything of org B (nor a key of app A anything of app A2). Table-driven: each method lists the
// request aimed at B's resources and the callers that try it; a coverage check enumerates the
// generated service descriptors, so a new method cannot silently skip the matrix.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DescService } from "@bufbuild/protobuf";
import { APIKeyService } from "../../src/gen/media/v1/api_key_pb.js";
import { AppService } from "../../src/gen/media/v1/app_pb.js";
import { OrganizationService } from "../../src/gen/media/v1/organization_pb.js";
import { UserService } from "../../src/gen/media/v1/user_pb.js";
import { call, ok, startHarness, type Auth, type Harness, type Reply } from "../harness.js";

interface Tenant {
  org: string;
  app: string;
  app2: string;
  key: string; // secret of a full-access key of `app`
  keyId: string;
  app2Key: string; // secret of a key of `app2`
  app2KeyId: string;
  session: string; // the owner's session token
  userId: string; // the owner
}
interface World {
  a: Tenant;
  b: Tenant;
  adminA: string; // session of a non-staff admin of org A
  ownerEmail: string;
}

let h: Harness;
let w: World;

/** Names of org B's resources: none of them may ever appear in an answer to org A. */
const B_NAMES = { org: "Bravo org", slug: "bravo-org", app: "Bravo app", app2: "Bravo app two", key: "Bravo key", email: "bob@b.test" };

/** A user who has logged in once and been approved by staff. */
async function approvedUser(email: string, staffToken: string): Promise<{ token: string; id: string }> {
  const token = await h.token(email);
  const me = await ok(call(h.base, "UserService/GetMe", {}, { bearer: token }));
  expect(me.user.user.approval_status).toBe("pending");
  await ok(call(h.base, "UserService/DecideApproval", { user_id: me.user.user.id, decision: "approved" }, { bearer: staffToken }));
  return { token, id: me.user.user.id };
}

async function appWithKey(session: string, org: string, appName: string, keyName: string): Promise<{ app: string; key: string; keyId: string }> {
  const app = (await ok(call(h.base, "AppService/Create", { name: appName }, { bearer: session, org }))).app.id;
  const k = await ok(call(h.base, "APIKeyService/Create", { name: keyName, app_id: app }, { bearer: session, org }));
  return { app, key: k.secret, keyId: k.api_key.id };
}

beforeAll(async () => {
  h = await startHarness();
  const ownerToken = await h.token(h.boot.user_email);
  const ownerId = (await ok(call(h.base, "UserService/GetMe", {}, { bearer: ownerToken }))).user.user.id;
  const aOrg = h.boot.organization_id;
  const aKeyId = (await ok(call(h.base, "APIKeyService/List", {}, { bearer: h.boot.api_key, org: aOrg }))).api_keys[0].id;
  const a2 = await appWithKey(ownerToken, aOrg, "Alpha app two", "Alpha two key");

  const bob = await approvedUser(B_NAMES.email, ownerToken);
  const bOrg = (await ok(call(h.base, "OrganizationService/Create", { name: B_NAMES.org, slug: B_NAMES.slug }, { bearer: bob.token }))).organization.id;
  const b1 = await appWithKey(bob.token, bOrg, B_NAMES.app, B_NAMES.key);
  const b2 = (await ok(call(h.base, "AppService/Create", { name: B_NAMES.app2 }, { bearer: bob.token, org: bOrg }))).app.id;

  const carol = await approvedUser("carol@a.test", ownerToken);
  await ok(call(h.base, "UserService/AddMember", { email: "carol@a.test", role: "admin" }, { bearer: ownerToken, org: aOrg }));

  w = {
    a: { org: aOrg, app: h.boot.app_id, app2: a2.app, key: h.boot.api_key, keyId: aKeyId, app2Key: a2.key, app2KeyId: a2.keyId, session: ownerToken, userId: ownerId },
    b: { org: bOrg, app: b1.app, app2: b2, key: b1.key, keyId: b1.keyId, app2Key: "", app2KeyId: "", session: bob.token, userId: bob.id },
    adminA: carol.token,
    ownerEmail: h.boot.user_email,
  };
});

afterAll(async () => {
  await h?.server.close();
});

// ───────────────────────────── the matrix ─────────────────────────────

/** Who tries, and which organization header they send. */
const WHO = {
  "A key, A header": (w: World): Auth => ({ bearer: w.a.key, org: w.a.org }),
  "A key, B header": (w: World): Auth => ({ bearer: w.a.key, org: w.b.org }),
  "A owner, A header": (w: World): Auth => ({ bearer: w.a.session, org: w.a.org }),
  "A owner, B header": (w: World): Auth => ({ bearer: w.a.session, org: w.b.org }),
  "A admin (not staff), A header": (w: World): Auth => ({ bearer: w.adminA, org: w.a.org }),
  "A admin (not staff), B header": (w: World): Auth => ({ bearer: w.adminA, org: w.b.org }),
} as const;
type Who = keyof typeof WHO;
const FOUR: Who[] = ["A key, A header", "A key, B header", "A owner, A header", "A owner, B header"];

interface Attempt {
  route: string;
  what: string;
  body: (w: World) => unknown;
  /** Callers trying it; the four A-key/A-owner combinations by default. */
  who?: Who[];
  /** Callers for whom 200 is correct because the call acts on their own tenant only; the answer must still carry nothing of B. */
  own?: Who[];
}

let slugs = 0;
const ATTEMPTS: Attempt[] = [
  // OrganizationService
  { route: "OrganizationService/CheckSlug", what: "B's slug", body: () => ({ slug: B_NAMES.slug }), own: ["A owner, A header", "A owner, B header"] },
  // Create takes no X-Organization-ID: a B header must not make the new organization land in, or join anyone to, B.
  { route: "OrganizationService/Create", what: "with B header", body: () => ({ name: "Alpha side org", slug: `alpha-side-${++slugs}` }), own: ["A owner, A header", "A owner, B header"] },
  { route: "OrganizationService/Get", what: "B's id", body: (w) => ({ id: w.b.org }) },
  { route: "OrganizationService/Update", what: "B's id", body: (w) => ({ id: w.b.org, name: "pwned", billing_email: "evil@a.test" }) },
  { route: "OrganizationService/List", what: "memberships", body: () => ({}), own: ["A key, A header", "A owner, A header"] },
  // AppService
  { route: "AppService/Create", what: "in B", body: () => ({ name: "Alpha intruder app" }), own: ["A owner, A header"] },
  { route: "AppService/Get", what: "B's app", body: (w) => ({ id: w.b.app }) },
  { route: "AppService/Update", what: "B's app", body: (w) => ({ id: w.b.app, name: "pwned", webhook: { url: "https://evil.a.test/hook", events: ["job.completed"] } }) },
  { route: "AppService/List", what: "apps", body: () => ({ include_archived: true }), own: ["A key, A header", "A owner, A header"] },
  { route: "AppService/Archive", what: "B's app", body: (w) => ({ id: w.b.app }) },
  { route: "AppService/EnableHosting", what: "B's app 2", body: (w) => ({ id: w.b.app2 }) },
  // APIKeyService. Spec: app_id is ignored for API-key callers, so A's key gets a key of its own app.
  { route: "APIKeyService/Create", what: "for B's app", body: (w) => ({ name: "Alpha intruder key", app_id: w.b.app }), own: ["A key, A header"] },
  { route: "APIKeyService/Get", what: "B's key", body: (w) => ({ id: w.b.keyId }) },
  { route: "APIKeyService/List", what: "B's app", body: (w) => ({ app_id: w.b.app, include_revoked: true }) },
  { route: "APIKeyService/List", what: "whole org", body: () => ({ include_revoked: true }), own: ["A key, A header", "A owner, A header"] },
  { route: "APIKeyService/Revoke", what: "B's key", body: (w) => ({ id: w.b.keyId, reason: "pwned" }) },
  // UserService
  { route: "UserService/GetMe", what: "with B header", body: () => ({}), own: ["A owner, A header", "A owner, B header"] },
  { route: "UserService/Get", what: "B's owner", body: (w) => ({ id: w.b.userId }) },
  // UpdateMe has no user id: the owner's unchanged name goes to the owner's own profile, never to B's.
  { route: "UserService/UpdateMe", what: "with B header", body: () => ({ first_name: "Owner" }), own: ["A owner, A header", "A owner, B header"] },
  { route: "UserService/List", what: "users", body: () => ({}), own: ["A key, A header", "A owner, A header"] },
  { route: "UserService/ListMembers", what: "members", body: () => ({}), own: ["A key, A header", "A owner, A header"] },
  // The owner adding themselves to B; with an A header that is their own membership (already_exists), not B's.
  { route: "UserService/AddMember", what: "self into B", body: (w) => ({ email: w.ownerEmail, role: "owner" }), who: ["A key, A header", "A key, B header", "A owner, B header", "A admin (not staff), B header"] },
  { route: "UserService/UpdateRole", what: "B's owner", body: (w) => ({ user_id: w.b.userId, role: "viewer" }) },
  { route: "UserService/RemoveMember", what: "B's owner", body: (w) => ({ user_id: w.b.userId }) },
  // Staff-only and not organization-scoped: A's owner is operator staff, so the non-staff admin tries instead.
  { route: "UserService/DecideApproval", what: "B's owner", body: (w) => ({ user_id: w.b.userId, decision: "rejected" }), who: ["A key, A header", "A key, B header", "A admin (not staff), A header", "A admin (not staff), B header"] },
  { route: "UserService/SetStatus", what: "B's owner", body: (w) => ({ user_id: w.b.userId, status: "suspended" }), who: ["A key, A header", "A key, B header", "A admin (not staff), A header", "A admin (not staff), B header"] },
];

interface Case {
  name: string;
  route: string;
  body: (w: World) => unknown;
  auth: (w: World) => Auth;
  /** 200 is correct: the call touches only the caller's own tenant. */
  own: boolean;
}

const MATRIX: Case[] = ATTEMPTS.flatMap((a) =>
  (a.who ?? FOUR).map((who) => ({ name: `${a.route} (${a.what}) by ${who}`, route: a.route, body: a.body, auth: WHO[who], own: a.own?.includes(who) ?? false })),
);

/** Within one organization: a key of app A may not see app A2. */
const APP_ISOLATION: { name: string; route: string; body: (w: World) => unknown; status: number; code: string }[] = [
  { name: "APIKeyService/List of A2's keys", route: "APIKeyService/List", body: (w) => ({ app_id: w.a.app2 }), status: 403, code: "permission_denied" },
  { name: "APIKeyService/Get of A2's key", route: "APIKeyService/Get", body: (w) => ({ id: w.a.app2KeyId }), status: 404, code: "not_found" },
  { name: "APIKeyService/Revoke of A2's key", route: "APIKeyService/Revoke", body: (w) => ({ id: w.a.app2KeyId }), status: 404, code: "not_found" },
  { name: "AppService/Get of A2", route: "AppService/Get", body: (w) => ({ id: w.a.app2 }), status: 404, code: "not_found" },
  { name: "AppService/Archive of A2", route: "AppService/Archive", body: (w) => ({ id: w.a.app2 }), status: 403, code: "permission_denied" },
];

/** Everything of B that A must never be shown: ids, names, the key secret, B's owner. */
function bSecrets(w: World, includeIds: boolean): string[] {
  const names = [B_NAMES.org, B_NAMES.app, B_NAMES.app2, B_NAMES.key, B_NAMES.email, w.b.key];
  return includeIds ? [...names, w.b.org, w.b.app, w.b.app2, w.b.keyId, w.b.userId] : names;
}

describe("tenant isolation matrix", () => {
  it("covers every method of OrganizationService, AppService, APIKeyService and UserService with a refused attempt", () => {
    const services: DescService[] = [OrganizationService, AppService, APIKeyService, UserService];
    const refused = new Set(MATRIX.filter((c) => !c.own).map((c) => c.route));
    const tried = new Set(MATRIX.map((c) => c.route));
    for (const s of services) {
      for (const m of s.methods) {
        const route = `${s.typeName.replace(/^media\.v1\./, "")}/${m.name}`;
        expect(tried, `${route} is missing from the matrix`).toContain(route);
        expect(refused, `${route} has no attempt that must be refused`).toContain(route);
      }
    }
  });

  it.each(MATRIX)("$name", async (c) => {
    const r = await call(h.base, c.route, c.body(w), c.auth(w));
    const text = JSON.stringify(r.body);
    if (c.own) {
      expect(r.status, text).toBe(200);
      for (const s of bSecrets(w, true)) expect(text, `answer leaks ${s}`).not.toContain(s);
      return;
    }
    expect([403, 404], text).toContain(r.status);
    expect(r.body.code).toBe(r.status === 403 ? "permission_denied" : "not_found");
    for (const s of bSecrets(w, false)) expect(text, `error leaks ${s}`).not.toContain(s);
  });

  it.each(APP_ISOLATION)("key of app A: $name → $code", async (c) => {
    const r = await call(h.base, c.route, c.body(w), { bearer: w.a.key, org: w.a.org });
    expect(r.status, JSON.stringify(r.body)).toBe(c.status);
    expect(r.body.code).toBe(c.code);
  });
});

describe("after every attempt", () => {
  const asB = (): Auth => ({ bearer: w.b.session, org: w.b.org });

  it("org B is unchanged", async () => {
    const org = (await ok(call(h.base, "OrganizationService/Get", {}, asB()))).organization;
    expect(org).toMatchObject({ id: w.b.org, name: B_NAMES.org, slug: B_NAMES.slug, status: "active" });
    expect(org.billing_email).toBeUndefined();
  });

  it("B's apps are unchanged and no app was added to B", async () => {
    const apps = (await ok(call(h.base, "AppService/List", { include_archived: true }, asB()))).apps;
    expect(apps.map((a: any) => a.id).sort()).toEqual([w.b.app, w.b.app2].sort());
    for (const a of apps) {
      expect(a.status).toBe("active");
      expect(a.hosting_enabled).toBe(false);
      expect(a.webhook).toBeNull();
      expect(a.name).toBe(a.id === w.b.app ? B_NAMES.app : B_NAMES.app2);
    }
  });

  it("B has exactly its one key, not revoked, and it still works", async () => {
    const keys = (await ok(call(h.base, "APIKeyService/List", { include_revoked: true }, asB()))).api_keys;
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ id: w.b.keyId, app_id: w.b.app, name: B_NAMES.key, is_revoked: false });
    expect(keys[0]).not.toHaveProperty("revoked_at"); // spec: omitted if not revoked
    const viaKey = await call(h.base, "AppService/List", {}, { bearer: w.b.key, org: w.b.org });
    expect(viaKey.status).toBe(200);
    expect(viaKey.body.apps.map((a: any) => a.id)).toEqual([w.b.app]);
  });

  it("B's membership is bob alone, as owner; bob is still approved and active", async () => {
    const members = (await ok(call(h.base, "UserService/ListMembers", {}, asB()))).members;
    expect(members).toHaveLength(1);
    expect(members[0]).toMatchObject({ user_id: w.b.userId, email: B_NAMES.email, role: "owner", is_active: true });
    const me = (await ok(call(h.base, "UserService/GetMe", {}, { bearer: w.b.session }))).user;
    expect(me.user).toMatchObject({ id: w.b.userId, status: "active", approval_status: "approved" });
    expect(me.organizations).toEqual([expect.objectContaining({ org_id: w.b.org, role: "owner", is_active: true })]);
  });

  it("org A's owner did not become a member of B", async () => {
    const orgs = (await ok(call(h.base, "UserService/GetMe", {}, { bearer: w.a.session }))).user.organizations;
    expect(orgs.map((o: any) => o.org_id)).not.toContain(w.b.org);
    const asOwner = await call(h.base, "AppService/List", {}, { bearer: w.a.session, org: w.b.org });
    expect(asOwner.status).toBe(403);
  });

  it("A2's key was neither revoked nor hidden from A's owner", async () => {
    const keys = (await ok(call(h.base, "APIKeyService/List", { app_id: w.a.app2, include_revoked: true }, { bearer: w.a.session, org: w.a.org }))).api_keys;
    expect(keys).toEqual([expect.objectContaining({ id: w.a.app2KeyId, is_revoked: false })]);
    const viaKey = await call(h.base, "APIKeyService/Get", { id: w.a.app2KeyId }, { bearer: w.a.app2Key, org: w.a.org });
    expect(viaKey.status).toBe(200);
  });

  it("positive control: B reads its own resources with the same requests A was refused", async () => {
    for (const [route, body] of [
      ["OrganizationService/Get", { id: w.b.org }],
      ["AppService/Get", { id: w.b.app }],
      ["APIKeyService/Get", { id: w.b.keyId }],
      ["APIKeyService/List", { app_id: w.b.app }],
    ] as const) {
      expect((await call(h.base, route, body, asB())).status, route).toBe(200);
      expect((await call(h.base, route, body, { bearer: w.b.key, org: w.b.org })).status, `${route} by B's key`).toBe(200);
    }
    expect((await call(h.base, "UserService/Get", { id: w.b.userId }, asB())).status).toBe(200);
  });
});
