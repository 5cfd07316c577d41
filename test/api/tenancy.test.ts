// Tenant isolation: org A's API key and org A owner's session can neither read nor change
// anything of org B, and a key of app A1 nothing of its sibling app A2 (gateway/tenancy.ts). Two
// tables: the organization matrix (org A's callers against org B), and the app matrix, where A1's
// key aims every method of every service at A2's and at B's app and records, expecting one answer
// per kind of request. Coverage checks enumerate the generated service descriptors, so a new method
// (or service) cannot silently skip either matrix.
import { readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DescService } from "@bufbuild/protobuf";
import { APIKeyService } from "../../src/gen/media/v1/api_key_pb.js";
import { AppService } from "../../src/gen/media/v1/app_pb.js";
import { OrganizationService } from "../../src/gen/media/v1/organization_pb.js";
import { UserService } from "../../src/gen/media/v1/user_pb.js";
import { call, ok, ROOT, startHarness, until, type Auth, type Harness, type Reply } from "../harness.js";
import { serviceAccountJson, startFakeGcs, type GcsPeer } from "../peers.js";
import { stream } from "../watch.js";

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
/** Records of one app that another app's key aims at (the app matrix). */
interface Target {
  org: string;
  app: string;
  keyId: string;
  userId: string;
  origin: string;
  preset: string;
  presetSlug: string;
  job: string;
  endpoint: string;
  event: string;
  /** A video of the app, uploading (its app has hosting enabled for it). */
  video: string;
  /** Ids and names that must never appear in an answer to A1's key. */
  secrets: string[];
}
interface World {
  a: Tenant;
  b: Tenant;
  /** A2, in A1's organization. */
  sibling: Target;
  /** B's first app, in another organization. */
  foreign: Target;
  adminA: string; // session of a non-staff admin of org A
  ownerEmail: string;
}

let h: Harness;
let w: World;
let gcs: GcsPeer;

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
  gcs = await startFakeGcs(["tenancy"]);
  // Hundreds of refused calls in a row: the per-address limit on refusals would answer them 429.
  h = await startHarness({ MEDIA_NET_ALLOW: "127.0.0.1/32", MEDIA_GCS_API_ENDPOINT: gcs.endpoint, MEDIA_RATE_LIMIT_ANONYMOUS: "off" });
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
    a: {
      org: aOrg,
      app: h.boot.app_id,
      app2: a2.app,
      key: h.boot.api_key,
      keyId: aKeyId,
      app2Key: a2.key,
      app2KeyId: a2.keyId,
      session: ownerToken,
      userId: ownerId,
    },
    b: { org: bOrg, app: b1.app, app2: b2, key: b1.key, keyId: b1.keyId, app2Key: "", app2KeyId: "", session: bob.token, userId: bob.id },
    adminA: carol.token,
    ownerEmail: h.boot.user_email,
    sibling: await target({ bearer: a2.key, org: aOrg }, { org: aOrg, app: a2.app, keyId: a2.keyId, userId: ownerId }, ownerToken),
    foreign: await target({ bearer: b1.key, org: bOrg }, { org: bOrg, app: b1.app, keyId: b1.keyId, userId: bob.id }, bob.token),
  };
  // Of its own organization, A1 may see everything but A2's app; of B, nothing.
  w.sibling.secrets.push("Alpha app two", "Alpha two key", a2.app, a2.keyId, a2.key);
  w.foreign.secrets.push(...bSecrets(w, true));
});

afterAll(async () => {
  await h?.server.close();
  await gcs?.stop();
});

/** One record of every kind in the app of `owner`, made with its own key. */
async function target(owner: Auth, ids: Pick<Target, "org" | "app" | "keyId" | "userId">, session: string): Promise<Target> {
  const origin = (
    await ok(
      call(
        h.base,
        "OriginService/Create",
        { name: "t", permissions: ["read", "write"], gcs: { bucket: "tenancy", credentials: { service_account_json: SERVICE_ACCOUNT } } },
        owner,
      ),
    )
  ).origin.id;
  const presetSlug = `t_${ids.app.slice(-8).toLowerCase()}`;
  const preset = (await ok(call(h.base, "PresetService/Create", presetBody({ slug: presetSlug }), owner))).preset.id;
  const endpoint = (await ok(call(h.base, "WebhookService/CreateWebhookEndpoint", { url: "https://127.0.0.1:9/hook", enabled_events: ["*"] }, owner))).endpoint
    .id;
  const job = (await ok(call(h.base, "JobService/Create", { input_url: "https://127.0.0.1:9/in.mp4", output_origin_id: origin, outputs: [MP4] }, owner))).job
    .id;
  // The job cannot read its input: it fails, and its job.failed event is a real one of the ledger.
  const event = await until(
    "the job's event",
    async () => (await ok(call(h.base, "WebhookService/ListEvents", {}, owner))).events[0]?.id as string | undefined,
  );
  await ok(call(h.base, "AppService/EnableHosting", { id: ids.app }, { bearer: session, org: ids.org }));
  const video = (await ok(call(h.base, "VideoService/CreateUpload", { filename: "t.mp4", content_type: "video/mp4", size_bytes: 1 }, owner))).video.id;
  return { ...ids, origin, preset, presetSlug, job, endpoint, event, video, secrets: [origin, preset, job, endpoint, event, video] };
}

const SERVICE_ACCOUNT = serviceAccountJson();
const MP4 = { type: "mp4", video: [{ codec: "h264", width: 320, height: 180 }], audio: [{ codec: "aac", bitrate_kbps: 64 }] };
const presetBody = (over: object) => ({
  slug: "intruder",
  name: "Intruder",
  container: "mp4",
  video: { codec: "h264", resolution: "720p", bitrate_mode: "crf", crf: 23 },
  audio: { codec: "aac", bitrate_kbps: 128 },
  ...over,
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
  {
    route: "OrganizationService/Create",
    what: "with B header",
    body: () => ({ name: "Alpha side org", slug: `alpha-side-${++slugs}` }),
    own: ["A owner, A header", "A owner, B header"],
  },
  { route: "OrganizationService/Get", what: "B's id", body: (w) => ({ id: w.b.org }) },
  { route: "OrganizationService/Update", what: "B's id", body: (w) => ({ id: w.b.org, name: "pwned", billing_email: "evil@a.test" }) },
  { route: "OrganizationService/List", what: "memberships", body: () => ({}), own: ["A key, A header", "A owner, A header"] },
  // AppService
  { route: "AppService/Create", what: "in B", body: () => ({ name: "Alpha intruder app" }), own: ["A owner, A header"] },
  { route: "AppService/Get", what: "B's app", body: (w) => ({ id: w.b.app }) },
  {
    route: "AppService/Update",
    what: "B's app",
    body: (w) => ({ id: w.b.app, name: "pwned", webhook: { url: "https://evil.a.test/hook", events: ["job.completed"] } }),
  },
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
  {
    route: "UserService/AddMember",
    what: "self into B",
    body: (w) => ({ email: w.ownerEmail, role: "owner" }),
    who: ["A key, A header", "A key, B header", "A owner, B header", "A admin (not staff), B header"],
  },
  { route: "UserService/UpdateRole", what: "B's owner", body: (w) => ({ user_id: w.b.userId, role: "viewer" }) },
  { route: "UserService/RemoveMember", what: "B's owner", body: (w) => ({ user_id: w.b.userId }) },
  // Staff-only and not organization-scoped: A's owner is operator staff, so the non-staff admin tries instead.
  {
    route: "UserService/DecideApproval",
    what: "B's owner",
    body: (w) => ({ user_id: w.b.userId, decision: "rejected" }),
    who: ["A key, A header", "A key, B header", "A admin (not staff), A header", "A admin (not staff), B header"],
  },
  {
    route: "OrganizationService/SetStatus",
    what: "B's organization",
    body: (w) => ({ organization_id: w.b.org, status: "suspended" }),
    who: ["A key, A header", "A key, B header", "A admin (not staff), A header", "A admin (not staff), B header"],
  },
  {
    route: "UserService/SetStatus",
    what: "B's owner",
    body: (w) => ({ user_id: w.b.userId, status: "suspended" }),
    who: ["A key, A header", "A key, B header", "A admin (not staff), A header", "A admin (not staff), B header"],
  },
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
  (a.who ?? FOUR).map((who) => ({
    name: `${a.route} (${a.what}) by ${who}`,
    route: a.route,
    body: a.body,
    auth: WHO[who],
    own: a.own?.includes(who) ?? false,
  })),
);

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
});

// ───────────────────────────── the app matrix ─────────────────────────────

/** Every service of the contract, read from the generated descriptors. */
const GEN = path.join(ROOT, "src/gen/media/v1");
const SERVICES: DescService[] = (
  await Promise.all(
    readdirSync(GEN)
      .filter((f) => f.endsWith("_pb.ts"))
      .map((f) => import(path.join(GEN, f))),
  )
)
  .flatMap((m: Record<string, unknown>) => Object.values(m))
  .filter((x): x is DescService => (x as DescService | undefined)?.kind === "service");
const routeOf = (s: DescService, method: string) => `${s.typeName.replace(/^media\.v1\./, "")}/${method}`;
const STREAMING = new Set(SERVICES.flatMap((s) => s.methods.filter((m) => m.methodKind === "server_streaming").map((m) => routeOf(s, m.name))));
/** Services whose methods all answer unimplemented for now (gateway/router.ts LATER); the access interceptor still runs first. */
const LATER = new Set<string>([]);

/**
 * What a request of A1's key aims at another app with, and the one answer each kind gets:
 * app: names the app in app_id, permission_denied (spec, Errors: "API key List with another app's
 * app_id by an API-key caller: permission_denied"); record: names a record of the app by id (or
 * slug), not_found as if it did not exist; portal: the method takes no API key, permission_denied;
 * own: nothing to aim, the call acts on A1 alone (200, and nothing of the target in the answer).
 */
type Kind = "app" | "record" | "portal" | "own";
const ANSWER: Record<Kind, string> = { app: "permission_denied", record: "not_found", portal: "permission_denied", own: "ok" };
const STATUS: Record<string, number> = { ok: 200, permission_denied: 403, not_found: 404, unimplemented: 501 };

interface Row {
  route: string;
  kind: Kind;
  /** The kind when the target is A2, if it differs: A2's organization and its users are A1's too. */
  sibling?: Kind;
  body: (t: Target) => unknown;
}

const none = () => ({});
const ROWS: Row[] = [
  { route: "HealthService/Check", kind: "own", body: none },
  { route: "OrganizationService/CheckSlug", kind: "portal", body: () => ({ slug: B_NAMES.slug }) },
  { route: "OrganizationService/Create", kind: "portal", body: () => ({ name: "Intruder org", slug: "intruder-org" }) },
  { route: "OrganizationService/Get", kind: "record", sibling: "own", body: (t) => ({ id: t.org }) },
  { route: "OrganizationService/Update", kind: "portal", body: (t) => ({ id: t.org, name: "pwned" }) },
  { route: "OrganizationService/List", kind: "own", body: none },
  { route: "OrganizationService/SetStatus", kind: "portal", body: (t) => ({ organization_id: t.org, status: "suspended" }) },
  { route: "AppService/Create", kind: "portal", body: () => ({ name: "Intruder app" }) },
  { route: "AppService/Get", kind: "record", body: (t) => ({ id: t.app }) },
  { route: "AppService/Update", kind: "portal", body: (t) => ({ id: t.app, name: "pwned" }) },
  { route: "AppService/List", kind: "own", body: () => ({ include_archived: true }) },
  { route: "AppService/Archive", kind: "portal", body: (t) => ({ id: t.app }) },
  { route: "AppService/EnableHosting", kind: "portal", body: (t) => ({ id: t.app }) },
  // Spec: app_id is ignored for API-key callers, so the new key is A1's.
  { route: "APIKeyService/Create", kind: "own", body: (t) => ({ name: "Intruder key", app_id: t.app }) },
  { route: "APIKeyService/Get", kind: "record", body: (t) => ({ id: t.keyId }) },
  { route: "APIKeyService/List", kind: "app", body: (t) => ({ app_id: t.app, include_revoked: true }) },
  { route: "APIKeyService/Revoke", kind: "record", body: (t) => ({ id: t.keyId }) },
  { route: "UserService/GetMe", kind: "portal", body: none },
  { route: "UserService/Get", kind: "record", sibling: "own", body: (t) => ({ id: t.userId }) },
  { route: "UserService/UpdateMe", kind: "portal", body: () => ({ first_name: "pwned" }) },
  { route: "UserService/List", kind: "own", body: none },
  { route: "UserService/ListMembers", kind: "own", body: none },
  { route: "UserService/AddMember", kind: "portal", body: () => ({ email: B_NAMES.email, role: "viewer" }) },
  { route: "UserService/UpdateRole", kind: "portal", body: (t) => ({ user_id: t.userId, role: "viewer" }) },
  { route: "UserService/RemoveMember", kind: "portal", body: (t) => ({ user_id: t.userId }) },
  { route: "UserService/DecideApproval", kind: "portal", body: (t) => ({ user_id: t.userId, decision: "rejected" }) },
  { route: "UserService/SetStatus", kind: "portal", body: (t) => ({ user_id: t.userId, status: "suspended" }) },
  {
    route: "OriginService/Create",
    kind: "app",
    body: (t) => ({ app_id: t.app, name: "x", permissions: ["read"], gcs: { bucket: "tenancy", credentials: { service_account_json: SERVICE_ACCOUNT } } }),
  },
  { route: "OriginService/Get", kind: "record", body: (t) => ({ id: t.origin }) },
  { route: "OriginService/List", kind: "app", body: (t) => ({ app_id: t.app }) },
  { route: "OriginService/Update", kind: "record", body: (t) => ({ id: t.origin, name: "pwned" }) },
  { route: "OriginService/Validate", kind: "record", body: (t) => ({ id: t.origin }) },
  { route: "OriginService/Archive", kind: "record", body: (t) => ({ id: t.origin }) },
  { route: "PresetService/Create", kind: "app", body: (t) => presetBody({ app_id: t.app }) },
  { route: "PresetService/Get", kind: "record", body: (t) => ({ id: t.preset }) },
  { route: "PresetService/GetBySlug", kind: "record", body: (t) => ({ slug: t.presetSlug }) },
  { route: "PresetService/List", kind: "app", body: (t) => ({ app_id: t.app }) },
  { route: "PresetService/Update", kind: "record", body: (t) => ({ id: t.preset, name: "pwned" }) },
  { route: "PresetService/Duplicate", kind: "record", body: (t) => ({ source_id: t.preset, slug: "stolen", name: "x" }) },
  { route: "PresetService/Duplicate", kind: "app", body: (t) => ({ source_id: "pst_system_hls_h264", slug: "stolen", name: "x", app_id: t.app }) },
  { route: "PresetService/Archive", kind: "record", body: (t) => ({ id: t.preset }) },
  {
    route: "JobService/Create",
    kind: "app",
    body: (t) => ({ app_id: t.app, input_url: "https://127.0.0.1:9/in.mp4", output_origin_id: t.origin, outputs: [MP4] }),
  },
  { route: "JobService/Get", kind: "record", body: (t) => ({ id: t.job }) },
  { route: "JobService/List", kind: "own", body: none },
  { route: "JobService/Cancel", kind: "record", body: (t) => ({ id: t.job }) },
  { route: "JobService/Confirm", kind: "record", body: (t) => ({ id: t.job }) },
  { route: "JobService/Watch", kind: "record", body: (t) => ({ id: t.job }) },
  { route: "VideoService/CreateFromUrl", kind: "app", body: (t) => ({ app_id: t.app, url: "https://127.0.0.1:9/v.mp4" }) },
  { route: "VideoService/CreateUpload", kind: "app", body: (t) => ({ app_id: t.app, filename: "v.mp4", content_type: "video/mp4", size_bytes: 1 }) },
  { route: "VideoService/CompleteUpload", kind: "record", body: (t) => ({ id: t.video }) },
  { route: "VideoService/CreateMultipartUpload", kind: "app", body: (t) => ({ app_id: t.app, filename: "v.mp4", content_type: "video/mp4", size_bytes: 1 }) },
  { route: "VideoService/Get", kind: "record", body: (t) => ({ id: t.video }) },
  { route: "VideoService/List", kind: "app", body: (t) => ({ app_id: t.app }) },
  { route: "VideoService/Update", kind: "record", body: (t) => ({ id: t.video, title: "pwned" }) },
  { route: "VideoService/Watch", kind: "record", body: (t) => ({ id: t.video }) },
  { route: "VideoService/Archive", kind: "record", body: (t) => ({ id: t.video }) },
  { route: "VideoService/Delete", kind: "record", body: (t) => ({ id: t.video }) },
  { route: "VideoService/ListUploadParts", kind: "record", body: (t) => ({ id: t.video, upload_id: "upl_tenancy" }) },
  { route: "WebhookService/CreateWebhookEndpoint", kind: "app", body: (t) => ({ app_id: t.app, url: "https://127.0.0.1:9/hook", enabled_events: ["*"] }) },
  { route: "WebhookService/RetrieveWebhookEndpoint", kind: "record", body: (t) => ({ id: t.endpoint }) },
  { route: "WebhookService/UpdateWebhookEndpoint", kind: "record", body: (t) => ({ id: t.endpoint, description: "pwned" }) },
  { route: "WebhookService/DeleteWebhookEndpoint", kind: "record", body: (t) => ({ id: t.endpoint }) },
  { route: "WebhookService/ListWebhookEndpoints", kind: "app", body: (t) => ({ app_id: t.app }) },
  { route: "WebhookService/RotateWebhookSecret", kind: "record", body: (t) => ({ id: t.endpoint }) },
  { route: "WebhookService/SendTestWebhook", kind: "record", body: (t) => ({ endpoint_id: t.endpoint, event_type: "job.succeeded" }) },
  { route: "WebhookService/ListEvents", kind: "app", body: (t) => ({ app_id: t.app }) },
  { route: "WebhookService/RetrieveEvent", kind: "record", body: (t) => ({ id: t.event }) },
  { route: "WebhookService/ResendEvent", kind: "record", body: (t) => ({ id: t.event }) },
  { route: "WebhookService/ListWebhookDeliveries", kind: "record", body: (t) => ({ endpoint_id: t.endpoint }) },
  { route: "WebhookService/ListWebhookDeliveries", kind: "record", body: (t) => ({ event_id: t.event }) },
  { route: "WebhookService/GetEndpointHealth", kind: "record", body: (t) => ({ id: t.endpoint }) },
];

interface AppCase {
  name: string;
  row: Row;
  target: "sibling" | "foreign";
  /** X-Organization-ID: A1's own organization, or the target's (B). */
  header: "A" | "B";
  expected: string;
}

const APP_MATRIX: AppCase[] = ROWS.flatMap((row) => {
  const later = LATER.has(row.route.split("/")[0]!);
  const at = (target: AppCase["target"], header: AppCase["header"]): AppCase => {
    const kind = target === "sibling" ? (row.sibling ?? row.kind) : row.kind;
    // A foreign header is refused before anything else, by the access interceptor; only health is public.
    const expected = header === "B" ? (row.route === "HealthService/Check" ? "ok" : "permission_denied") : later ? "unimplemented" : ANSWER[kind];
    return { name: `${row.route} (${kind}) at ${target === "sibling" ? "A2" : "B1"}, ${header} header → ${expected}`, row, target, header, expected };
  };
  return [at("sibling", "A"), at("foreign", "A"), at("foreign", "B")];
});

/** The error code of a unary or streaming call ("ok" for success), its HTTP status and what it showed. */
async function answer(route: string, body: unknown, auth: Auth): Promise<{ code: string; status: number; text: string }> {
  if (STREAMING.has(route)) {
    const r = await stream(h.base, route, body, auth, undefined, AbortSignal.timeout(10_000));
    // A stream's error rides its end message (HTTP 200), or the status when refused before it started.
    return { code: r.error?.code ?? "ok", status: r.error && r.status === 200 ? STATUS[r.error.code]! : r.status, text: JSON.stringify(r) };
  }
  const r = await call(h.base, route, body, auth);
  return { code: r.status === 200 ? "ok" : r.body.code, status: r.status, text: JSON.stringify(r.body) };
}

describe("app tenancy matrix: A1's key against A2 (same organization) and B1 (another)", () => {
  it("has a row for every method of every service", () => {
    expect(SERVICES.length).toBeGreaterThanOrEqual(10);
    const rows = new Set(ROWS.map((r) => r.route));
    const methods = SERVICES.flatMap((s) => s.methods.map((m) => routeOf(s, m.name)));
    for (const m of methods) expect(rows, `${m} has no row in the app matrix`).toContain(m);
    for (const r of rows) expect(methods, `${r} is no method of the contract`).toContain(r);
  });

  it.each(APP_MATRIX)("$name", async (c) => {
    const t = w[c.target];
    const body = c.row.body(t);
    const r = await answer(c.row.route, body, { bearer: w.a.key, org: c.header === "A" ? w.a.org : w.b.org });
    if (c.expected === "unimplemented" && r.code !== "unimplemented") {
      throw new Error(`${c.row.route} answers ${r.code} now: drop its service from LATER, so its rows demand the tenancy answers (${r.text})`);
    }
    expect(r.code, r.text).toBe(c.expected);
    expect(r.status, r.text).toBe(STATUS[c.expected]);
    // An error may name what was asked for; a success nothing of the target at all.
    const asked = c.expected === "ok" ? "" : JSON.stringify(body);
    for (const s of t.secrets.filter((x) => !asked.includes(x))) expect(r.text, `answer leaks ${s}`).not.toContain(s);
  });

  it("left every target record in place, readable by its own app's key", async () => {
    for (const [t, auth] of [
      [w.sibling, { bearer: w.a.app2Key, org: w.a.org }],
      [w.foreign, { bearer: w.b.key, org: w.b.org }],
    ] as const) {
      expect((await ok(call(h.base, "OriginService/Get", { id: t.origin }, auth))).origin).toMatchObject({ name: "t", status: "active" });
      expect((await ok(call(h.base, "PresetService/Get", { id: t.preset }, auth))).preset).toMatchObject({ name: "Intruder", slug: t.presetSlug });
      expect((await ok(call(h.base, "PresetService/GetBySlug", { slug: t.presetSlug }, auth))).preset.id).toBe(t.preset);
      expect((await ok(call(h.base, "JobService/Get", { id: t.job }, auth))).job.status).not.toBe("canceled");
      const e = (await ok(call(h.base, "WebhookService/RetrieveWebhookEndpoint", { id: t.endpoint }, auth))).endpoint;
      expect(e).toMatchObject({ status: "enabled", deleted: false });
      expect(e).not.toHaveProperty("description");
      expect(e).not.toHaveProperty("last_rotated_at");
      expect((await ok(call(h.base, "WebhookService/RetrieveEvent", { id: t.event }, auth))).event.id).toBe(t.event);
      expect((await ok(call(h.base, "APIKeyService/Get", { id: t.keyId }, auth))).api_key.is_revoked).toBe(false);
    }
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
      // B's first app holds the target video, so B enabled its hosting; the second never.
      expect(a.hosting_enabled).toBe(a.id === w.b.app);
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
