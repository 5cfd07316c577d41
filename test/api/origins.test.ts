// OriginService through the real API against real storage peers on loopback: MinIO over TLS for
// s3 and r2 (a read-only user for write refusals), fake-gcs-server for gcs (it checks no
// credentials, so only the key file's shape and the reads and writes are tested), and an HTTPS
// server with a custom-header check for http. The peers are reached through the operator
// settings MEDIA_NET_ALLOW, MEDIA_TLS_CA_FILE, MEDIA_S3_ENDPOINT and MEDIA_GCS_API_ENDPOINT,
// which the harness passes to both the embedded and the cluster target.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, ok, errorDetails, forgetIdempotencyKey, startHarness, TARGET, type Auth, type Harness, type Reply } from "../harness.js";
import {
  makeTestCa,
  serviceAccountJson,
  startFakeGcs,
  startHttpsPeer,
  startMinio,
  type GcsPeer,
  type HttpsPeer,
  type MinioPeer,
  type TestCa,
} from "../peers.js";

let h: Harness;
let ca: TestCa;
let minio: MinioPeer;
let gcs: GcsPeer;
let web: HttpsPeer;
let key: Auth;
let owner: Auth;
const SERVICE_ACCOUNT = serviceAccountJson();
const WEB_TOKEN = "web-token-never-echoed";
/** Every answer of the suite, to show at the end that no credential ever came back. */
const answers: string[] = [];

async function api(route: string, body: unknown, auth: Auth = key): Promise<Reply> {
  const r = await call(h.base, `OriginService/${route}`, body, auth);
  answers.push(JSON.stringify(r.body));
  return r;
}

async function expectError(reply: Promise<Reply>, code: string, field?: string, description?: RegExp): Promise<Reply> {
  const r = await reply;
  const shown = JSON.stringify(r.body);
  expect(r.status, shown).not.toBe(500);
  expect(r.body?.code, shown).toBe(code);
  const details = await errorDetails(r.body);
  if (field !== undefined) {
    const hit = details.fieldViolations.find((v) => v.field === field);
    expect(hit, `no violation on ${field} in ${shown}`).toBeDefined();
    if (description) expect(hit!.description).toMatch(description);
  }
  return r;
}

const s3Creds = (k = minio.admin) => ({ access_key_id: k.accessKeyId, secret_access_key: k.secretAccessKey });
const s3Body = (over: Record<string, unknown> = {}) => ({
  name: "s3 outputs",
  permissions: ["read", "write"],
  base_path: "media/out",
  path_template: "{date}/{job_id}/{output_id}",
  s3: { bucket: "media-s3", region: "us-east-1", credentials: s3Creds() },
  ...over,
});
const r2Body = (r2: Record<string, unknown>, over: Record<string, unknown> = {}) => ({
  name: "r2 outputs",
  permissions: ["read", "write"],
  r2: { bucket: "media-r2", credentials: s3Creds(), ...r2 },
  ...over,
});
const gcsBody = (over: Record<string, unknown> = {}, gcsOver: Record<string, unknown> = {}) => ({
  name: "gcs outputs",
  permissions: ["read", "write"],
  gcs: { bucket: "media-gcs", credentials: { service_account_json: SERVICE_ACCOUNT }, ...gcsOver },
  ...over,
});
const httpBody = (over: Record<string, unknown> = {}, headers: Record<string, string> = { "X-Token": WEB_TOKEN }) => ({
  name: "web inputs",
  permissions: ["read"],
  http: { base_url: `${web.url}/files`, credentials: { headers } },
  ...over,
});

/** Objects left in a MinIO bucket under a prefix. */
async function objectsUnder(bucket: string, prefix: string): Promise<number> {
  const out = await minio.mc("ls", "--recursive", `peer/${bucket}/${prefix}`);
  return out.split("\n").filter((l) => l.trim() !== "").length;
}

beforeAll(async () => {
  ca = makeTestCa();
  [minio, gcs, web] = await Promise.all([
    startMinio(ca, ["media-s3", "media-r2", "media-tmp"]),
    startFakeGcs(["media-gcs"]),
    // Same CA as MinIO's certificate, so one MEDIA_TLS_CA_FILE trusts both.
    startHttpsPeer(ca, (req, res) => {
      if (req.headers["x-token"] !== WEB_TOKEN) return void res.writeHead(403).end("forbidden");
      res.writeHead(404).end("no such file");
    }),
  ]);
  h = await startHarness({
    MEDIA_NET_ALLOW: "127.0.0.1/32,::1/128",
    MEDIA_TLS_CA_FILE: ca.caFile,
    MEDIA_S3_ENDPOINT: minio.endpoint,
    MEDIA_GCS_API_ENDPOINT: gcs.endpoint,
  });
  key = { bearer: h.boot.api_key, org: h.boot.organization_id };
  owner = { bearer: await h.token(h.boot.user_email), org: h.boot.organization_id };
}, 180_000);

afterAll(async () => {
  await h?.server.close();
  await Promise.all([minio?.stop(), gcs?.stop(), web?.stop()]);
  ca?.remove();
});

describe("Create", () => {
  it("stores an s3 origin once read and write pass against the bucket, and leaves no probe behind", async () => {
    const body = await ok(api("Create", s3Body()));
    const o = body.origin;
    expect(o.id).toMatch(/^ori_/);
    expect(o).toMatchObject({
      name: "s3 outputs",
      description: "",
      provider: "s3",
      permissions: ["read", "write"],
      status: "active",
      base_path: "media/out",
      path_template: "{date}/{job_id}/{output_id}",
      bucket: "media-s3",
      region: "us-east-1",
      endpoint: "",
      base_url: "",
    });
    expect(typeof o.last_validated_at).toBe("string");
    expect(o).not.toHaveProperty("validation_error");
    expect(o).not.toHaveProperty("archived_at");
    expect(o).not.toHaveProperty("credentials");
    expect(body.validation).toMatchObject({ success: true, can_read: true, can_write: true, read_error: "", write_error: "" });
    expect(typeof body.validation.validated_at).toBe("string");
    expect(await objectsUnder("media-s3", "media/out/.media-validate/")).toBe(0);
    expect((await ok(api("Get", { id: o.id }))).origin).toEqual(o);
  });

  // A Create that failed without an answer may still have stored its origin; the gateway then
  // releases the key's claim and the retry runs again. It must meet that origin, not store a second.
  it.skipIf(TARGET === "cluster")("a Create retried with its Idempotency-Key after its answer was lost meets the origin the first call stored", async () => {
    const body = s3Body({ name: "lost answer" });
    const headers = { "idempotency-key": "lost-origin-1" };
    const first = (await ok(call(h.base, "OriginService/Create", body, { ...key, headers }))).origin;
    await forgetIdempotencyKey(h, key, "media.v1.OriginService/Create", "lost-origin-1");
    const retried = await call(h.base, "OriginService/Create", body, { ...key, headers });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.headers.get("idempotent-replayed")).toBeNull(); // it ran again, and met the same origin
    expect(retried.body.origin).toEqual(first);
    const listed = (await ok(api("List", { pagination: { limit: 100 } }))).origins as { name: string }[];
    expect(listed.filter((o) => o.name === "lost answer")).toHaveLength(1);
  });

  it("r2 with a custom endpoint (MinIO) works; the account-id form is checked field by field", async () => {
    const body = await ok(api("Create", r2Body({ endpoint: minio.endpoint })));
    expect(body.origin).toMatchObject({ provider: "r2", status: "active", bucket: "media-r2", endpoint: minio.endpoint });
    await expectError(api("Create", r2Body({ account_id: "not-hex" })), "invalid_argument", "r2.account_id", /32 lowercase hexadecimal/);
    await expectError(
      api("Create", r2Body({ account_id: "0123456789abcdef0123456789abcdef", endpoint: minio.endpoint })),
      "invalid_argument",
      "r2.endpoint",
      /mutually exclusive/,
    );
    await expectError(api("Create", r2Body({})), "invalid_argument", "r2.account_id", /required/);
    await expectError(api("Create", r2Body({ endpoint: "http://127.0.0.1:9000" })), "invalid_argument", "r2.endpoint", /https/);
    await expectError(api("Create", r2Body({ endpoint: `${minio.endpoint}/some/path` })), "invalid_argument", "r2.endpoint", /without a path/);
    await expectError(api("Create", r2Body({ endpoint: "https://169.254.169.254" })), "invalid_argument", "r2.endpoint", /cloud metadata/);
    await expectError(api("Create", r2Body({ endpoint: minio.endpoint, bucket: "Bad_Bucket" })), "invalid_argument", "r2.bucket");
    await expectError(
      api("Create", r2Body({ endpoint: minio.endpoint, credentials: { access_key_id: "x" } })),
      "invalid_argument",
      "r2.credentials.secret_access_key",
    );
  });

  it("an r2 account id derives Cloudflare's endpoint; unreachable here, so validation fails cleanly", async () => {
    const r = await expectError(
      api("Create", r2Body({ account_id: "0123456789abcdef0123456789abcdef", jurisdiction: "eu" })),
      "failed_precondition",
      "r2.credentials",
    );
    expect(r.body.message).toMatch(/nothing was stored/);
  });

  it("gcs against the GCS-compatible endpoint; a key file that is not one is a field violation", async () => {
    const body = await ok(api("Create", gcsBody({ base_path: "gcs/base" })));
    expect(body.origin).toMatchObject({ provider: "gcs", status: "active", bucket: "media-gcs", region: "", endpoint: "" });
    expect(body.validation).toMatchObject({ success: true, can_read: true, can_write: true });
    await expectError(
      api("Create", gcsBody({}, { credentials: { service_account_json: "{not json" } })),
      "invalid_argument",
      "gcs.credentials.service_account_json",
      /JSON/,
    );
    await expectError(
      api("Create", gcsBody({}, { credentials: { service_account_json: JSON.stringify({ type: "authorized_user" }) } })),
      "invalid_argument",
      "gcs.credentials.service_account_json",
      /service_account/,
    );
    await expectError(api("Create", gcsBody({}, { credentials: null })), "invalid_argument", "gcs.credentials");
    await expectError(api("Create", gcsBody({}, { bucket: "missing-bucket" })), "failed_precondition", "gcs.credentials", /does not exist/);
  });

  it("http origins are read-only, need https and reach the server with their headers", async () => {
    const body = await ok(api("Create", httpBody()));
    expect(body.origin).toMatchObject({ provider: "http", status: "active", bucket: "", base_url: `${web.url}/files`, permissions: ["read"] });
    expect(body.validation).toMatchObject({ success: true, can_read: true, can_write: false });
    await expectError(api("Create", httpBody({ permissions: ["read", "write"] })), "invalid_argument", "permissions[1]", /read-only/);
    await expectError(api("Create", httpBody({}, { "X-Token": "wrong" })), "failed_precondition", "http.base_url", /HTTP 403/);
    await expectError(api("Create", httpBody({ http: { base_url: "http://example.com/files" } })), "invalid_argument", "http.base_url", /https/);
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, "v"]));
    await expectError(api("Create", httpBody({}, many)), "invalid_argument", "http.credentials.headers", /at most 20/);
    await expectError(api("Create", httpBody({}, { "Bad Header": "v" })), "invalid_argument", "http.credentials.headers", /not a valid header name/);
    await expectError(api("Create", httpBody({}, { Host: "evil" })), "invalid_argument", "http.credentials.headers", /set by the service/);
  });

  it("wrong keys fail cleanly and store nothing", async () => {
    const before = (await ok(api("List", { include_archived: true }))).pagination.total_count;
    const unknown = await expectError(
      api("Create", s3Body({ s3: { bucket: "media-s3", region: "us-east-1", credentials: { access_key_id: "nobody", secret_access_key: "nothing-at-all" } } })),
      "failed_precondition",
      "s3.credentials",
      /access key ID is not known/,
    );
    expect(unknown.body.message).toMatch(/read: .*InvalidAccessKeyId/);
    await expectError(
      api("Create", s3Body({ s3: { bucket: "media-s3", region: "us-east-1", credentials: { ...s3Creds(), secret_access_key: "wrong-secret-value" } } })),
      "failed_precondition",
      "s3.credentials",
      /secret access key does not match/,
    );
    await expectError(
      api("Create", s3Body({ s3: { bucket: "no-such-bucket", region: "us-east-1", credentials: s3Creds() } })),
      "failed_precondition",
      "s3.credentials",
      /does not exist/,
    );
    expect((await ok(api("List", { include_archived: true }))).pagination.total_count).toBe(before);
  });

  it("a read-only key passes read but not write: declared write fails cleanly, read alone is fine", async () => {
    const before = (await ok(api("List", { include_archived: true }))).pagination.total_count;
    const r = await expectError(
      api("Create", s3Body({ s3: { bucket: "media-s3", region: "us-east-1", credentials: s3Creds(minio.readOnly) } })),
      "failed_precondition",
      "s3.credentials",
      /write check failed: access denied.*AccessDenied/,
    );
    const details = await errorDetails(r.body);
    expect(details.fieldViolations.map((v) => v.description).join()).not.toMatch(/read check failed/);
    expect((await ok(api("List", { include_archived: true }))).pagination.total_count).toBe(before);
    const reader = await ok(
      api("Create", s3Body({ name: "reader", permissions: ["read"], s3: { bucket: "media-s3", region: "us-east-1", credentials: s3Creds(minio.readOnly) } })),
    );
    expect(reader.validation).toMatchObject({ success: true, can_read: true, can_write: false });
  });

  it("names the field at fault for bad input", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [s3Body({ name: "" }), "name"],
      [s3Body({ name: "x".repeat(256) }), "name"],
      [s3Body({ description: "x".repeat(1001) }), "description"],
      [s3Body({ base_path: "x".repeat(1025) }), "base_path"],
      [s3Body({ base_path: "a/../b" }), "base_path"],
      [s3Body({ path_template: "{job_id}/{nope}" }), "path_template"],
      [s3Body({ permissions: [] }), "permissions"],
      [s3Body({ permissions: ["read", "read"] }), "permissions[1]"],
      [s3Body({ s3: null }), "provider"],
      [s3Body({ gcs: { bucket: "media-gcs" } }), "gcs"],
      [s3Body({ s3: { region: "us-east-1", credentials: s3Creds() } }), "s3.bucket"],
      [s3Body({ s3: { bucket: "media-s3", credentials: s3Creds() } }), "s3.region"],
      [s3Body({ s3: { bucket: "media-s3", region: "us-east-1" } }), "s3.credentials"],
      [s3Body({ s3: { bucket: "media-s3", region: "us-east-1", credentials: { secret_access_key: "x" } } }), "s3.credentials.access_key_id"],
    ];
    for (const [body, field] of cases) await expectError(api("Create", body), "invalid_argument", field);
    const unknownEnum = await expectError(api("Create", s3Body({ permissions: ["delete"] })), "invalid_argument");
    expect((await errorDetails(unknownEnum.body)).fieldViolations[0]?.field).toMatch(/^permissions/);
  });
});

describe("Get, List", () => {
  it("Get: a malformed id is invalid, an unknown one not found", async () => {
    await expectError(api("Get", { id: "" }), "invalid_argument", "id");
    await expectError(api("Get", { id: "org_x" }), "invalid_argument", "id");
    await expectError(api("Get", { id: "ori_doesnotexist000000" }), "not_found");
  });

  it("lists newest first with filters and stable cursor pages", async () => {
    const app = (await ok(call(h.base, "AppService/Create", { name: "origins list app" }, owner))).app.id;
    const made: string[] = [];
    for (const [i, body] of [
      s3Body({ name: "l0" }),
      httpBody({ name: "l1" }),
      s3Body({ name: "l2", permissions: ["read"] }),
      gcsBody({ name: "l3" }),
      httpBody({ name: "l4" }),
    ].entries()) {
      made.push((await ok(api("Create", { ...body, app_id: app }, owner))).origin.id);
      expect(made).toHaveLength(i + 1);
    }
    const list = async (body: Record<string, unknown>) => (await ok(api("List", { app_id: app, ...body }, owner))).origins.map((o: any) => o.id);
    expect(await list({})).toEqual([...made].reverse());
    expect(await list({ provider: "http" })).toEqual([made[4], made[1]]);
    expect(await list({ provider: "s3", permission: "write" })).toEqual([made[0]]);
    expect(await list({ permission: "write" })).toEqual([made[3], made[0]]);
    expect(await list({ status: "failed" })).toEqual([]);
    const pages: string[] = [];
    let page = await ok(api("List", { app_id: app, pagination: { limit: 2 } }, owner));
    expect(page.pagination.total_count).toBe(5);
    pages.push(...page.origins.map((o: any) => o.id));
    while (page.pagination.next_cursor !== "") {
      page = await ok(api("List", { app_id: app, pagination: { limit: 2, cursor: page.pagination.next_cursor } }, owner));
      pages.push(...page.origins.map((o: any) => o.id));
    }
    expect(pages).toEqual([...made].reverse());
    await expectError(api("List", { app_id: app, pagination: { limit: 2, cursor: "forged.cursor" } }, owner), "invalid_argument", "pagination.cursor");
    await expectError(api("List", { pagination: { limit: 0 } }), "invalid_argument", "pagination.limit");
    // The app's origins are not the API key's: its app is another one.
    await expectError(api("Get", { id: made[0] }), "not_found");
    await expectError(api("List", { app_id: app }), "permission_denied");
  });

  it("a portal session without app_id works in the organization's first active app", async () => {
    const created = (await ok(api("Create", httpBody({ name: "session default app" }), owner))).origin;
    expect((await ok(api("Get", { id: created.id }))).origin.id).toBe(created.id); // the bootstrap app's key sees it
  });

  it("another organization's origin is not found", async () => {
    const bob = await h.token("bob@origins.test");
    const me = await ok(call(h.base, "UserService/GetMe", {}, { bearer: bob }));
    await ok(call(h.base, "UserService/DecideApproval", { user_id: me.user.user.id, decision: "approved" }, { bearer: owner.bearer! }));
    const org = (await ok(call(h.base, "OrganizationService/Create", { name: "Origins B", slug: `origins-b-${Date.now()}` }, { bearer: bob }))).organization.id;
    await ok(call(h.base, "AppService/Create", { name: "B app" }, { bearer: bob, org }));
    const theirs = (await ok(api("Create", httpBody({ name: "B's origin" }), { bearer: bob, org }))).origin.id;
    await expectError(api("Get", { id: theirs }), "not_found");
    await expectError(api("Get", { id: theirs }, owner), "not_found");
    await expectError(api("Archive", { id: theirs }), "not_found");
    expect((await ok(api("Get", { id: theirs }, { bearer: bob, org }))).origin.name).toBe("B's origin");
  });
});

describe("Update, Validate, Archive", () => {
  it("updates names and paths without touching the credentials or status", async () => {
    const o = (await ok(api("Create", s3Body({ name: "to rename" })))).origin;
    const u = await ok(api("Update", { id: o.id, name: "renamed", description: "now described", base_path: "elsewhere", path_template: "{job_id}/{codec}" }));
    expect(u.origin).toMatchObject({
      name: "renamed",
      description: "now described",
      base_path: "elsewhere",
      path_template: "{job_id}/{codec}",
      status: "active",
      last_validated_at: o.last_validated_at,
    });
    expect(u.validation).toBeNull();
    expect((await ok(api("Update", { id: o.id, description: "" }))).origin).toMatchObject({ name: "renamed", description: "" });
    await expectError(api("Update", { id: o.id, name: "" }), "invalid_argument", "name");
    await expectError(api("Update", { id: o.id, path_template: "{bad}" }), "invalid_argument", "path_template");
  });

  it("rotated credentials are validated: bad ones fail the origin, good ones make it active again", async () => {
    const o = (await ok(api("Create", s3Body({ name: "rotating" })))).origin;
    const bad = await ok(api("Update", { id: o.id, s3_credentials: { access_key_id: minio.admin.accessKeyId, secret_access_key: "rotated-to-wrong" } }));
    expect(bad.origin.status).toBe("failed");
    expect(bad.origin.validation_error).toMatch(/secret access key does not match/);
    expect(bad.origin.last_validated_at).toBe(o.last_validated_at);
    expect(bad.validation).toMatchObject({ success: false, can_read: false, can_write: false });
    expect(bad.validation.read_error).toMatch(/SignatureDoesNotMatch/);
    expect((await ok(api("List", { status: "failed" }))).origins.map((x: any) => x.id)).toContain(o.id);
    const readonly = await ok(api("Update", { id: o.id, s3_credentials: s3Creds(minio.readOnly) }));
    expect(readonly.origin.status).toBe("failed");
    expect(readonly.validation).toMatchObject({ success: false, can_read: true, can_write: false });
    const good = await ok(api("Update", { id: o.id, s3_credentials: s3Creds() }));
    expect(good.origin.status).toBe("active");
    expect(good.origin).not.toHaveProperty("validation_error");
    expect(good.validation).toMatchObject({ success: true, can_read: true, can_write: true });
    expect(Date.parse(good.origin.last_validated_at)).toBeGreaterThanOrEqual(Date.parse(o.last_validated_at));
    await expectError(
      api("Update", { id: o.id, gcs_credentials: { service_account_json: SERVICE_ACCOUNT } }),
      "invalid_argument",
      "gcs_credentials",
      /s3_credentials/,
    );
    await expectError(api("Update", { id: o.id, s3_credentials: s3Creds(), r2_credentials: s3Creds() }), "invalid_argument", "r2_credentials");
    await expectError(api("Update", { id: o.id, s3_credentials: { access_key_id: "x" } }), "invalid_argument", "s3_credentials.secret_access_key");
    const web = (await ok(api("Create", httpBody({ name: "web rotate" })))).origin;
    const badHeaders = await ok(api("Update", { id: web.id, http_credentials: { headers: { "X-Token": "no" } } }));
    expect(badHeaders.origin.status).toBe("failed");
    expect(badHeaders.validation.read_error).toMatch(/HTTP 403/);
  });

  it("Validate re-checks the stored credentials against the bucket as it is now", async () => {
    const o = (await ok(api("Create", s3Body({ name: "validated", base_path: "", s3: { bucket: "media-tmp", region: "us-east-1", credentials: s3Creds() } }))))
      .origin;
    const again = await ok(api("Validate", { id: o.id }));
    expect(again.validation).toMatchObject({ success: true, can_read: true, can_write: true });
    expect(again.origin.status).toBe("active");
    expect(Date.parse(again.origin.last_validated_at)).toBeGreaterThanOrEqual(Date.parse(o.last_validated_at));
    await minio.mc("rb", "--force", "peer/media-tmp");
    const broken = await ok(api("Validate", { id: o.id }));
    expect(broken.validation.success).toBe(false);
    expect(broken.origin.status).toBe("failed");
    expect(broken.origin.validation_error).toMatch(/bucket "media-tmp" does not exist/);
    expect(broken.origin.last_validated_at).toBe(again.origin.last_validated_at);
    await minio.mc("mb", "peer/media-tmp");
    const fixed = await ok(api("Validate", { id: o.id }));
    expect(fixed.origin.status).toBe("active");
    expect(fixed.origin).not.toHaveProperty("validation_error");
  });

  it("Archive: archived, hidden from lists by default, not usable, not twice", async () => {
    const o = (await ok(api("Create", httpBody({ name: "to archive" })))).origin;
    const a = await ok(api("Archive", { id: o.id }));
    expect(a.origin.status).toBe("archived");
    expect(typeof a.origin.archived_at).toBe("string");
    await expectError(api("Archive", { id: o.id }), "failed_precondition");
    await expectError(api("Validate", { id: o.id }), "failed_precondition");
    await expectError(api("Update", { id: o.id, name: "again" }), "failed_precondition");
    expect((await ok(api("List", {}))).origins.map((x: any) => x.id)).not.toContain(o.id);
    expect((await ok(api("List", { include_archived: true }))).origins.map((x: any) => x.id)).toContain(o.id);
    expect((await ok(api("List", { status: "archived" }))).origins.map((x: any) => x.id)).toEqual([o.id]);
    expect((await ok(api("Get", { id: o.id }))).origin.status).toBe("archived");
  });
});

describe("secrets", () => {
  it("no answer ever carried a credential", () => {
    const secrets = [
      minio.admin.secretAccessKey,
      minio.readOnly.secretAccessKey,
      WEB_TOKEN,
      JSON.parse(SERVICE_ACCOUNT).private_key.split("\n")[1],
      "rotated-to-wrong",
    ];
    expect(answers.length).toBeGreaterThan(50);
    for (const answer of answers) for (const secret of secrets) expect(answer.includes(secret), `${secret} in ${answer}`).toBe(false);
  });
});
