// OriginService: caller-owned storage locations. Origins are versioned store records written by
// the gateway (conditional on their version); credentials are sealed with the server key, checked
// against the real bucket before they are stored, and never returned.
//
// A create whose credentials fail the check answers failed_precondition: the request is well
// formed, the bucket or its grants are not in the state it needs, and the same request succeeds
// once they are. The error names `<provider>.credentials` in field_violations with the read and
// write errors, so a form can still show them at the credentials field.
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import { apiError, failedPrecondition, invalidField, notFound, VersionConflict, type FieldViolation } from "../../src/errors.js";
import type { AccessKeyCredentials, GcsCredentials, HttpCredentials, Origin, ValidationResult } from "../../src/gen/media/v1/origin_pb.js";
import {
  OriginPermission,
  OriginProvider,
  OriginSchema,
  OriginService,
  OriginStatus,
  R2Jurisdiction,
  ValidationResultSchema,
} from "../../src/gen/media/v1/origin_pb.js";
import { Prefix } from "../../src/ids.js";
import { parseServiceAccount, r2Endpoint } from "../../src/blob/index.js";
import { NetGuard, NetGuardError } from "../../src/net-guard.js";
import {
  afterValidation,
  getOrigin,
  ORIGIN_LIMITS,
  ORIGINS,
  PATH_TEMPLATE_VARIABLES,
  sealCredentials,
  validateOrigin,
  type OriginCredentials,
  type OriginPermission as PermissionName,
  type OriginProvider as ProviderName,
  type OriginRecord,
  type OriginStatus as StatusName,
  type ValidationResultData,
} from "../../src/origins.js";
import { sortKey } from "../../src/pagination.js";
import { Check, LIMITS } from "../../src/validation.js";
import { callerOf, type Caller } from "../access.js";
import { createdId, IDEMPOTENT_CALL } from "../idempotency.js";
import { actingApp, requireActingApp, visible } from "../tenancy.js";
import type { ServiceDeps } from "./deps.js";

// ───────────────────────────── presenting ─────────────────────────────

const PROVIDER_TO_WIRE: Record<ProviderName, OriginProvider> = {
  gcs: OriginProvider.GCS,
  s3: OriginProvider.S3,
  r2: OriginProvider.R2,
  http: OriginProvider.HTTP,
};
const STATUS_TO_WIRE: Record<StatusName, OriginStatus> = { active: OriginStatus.ACTIVE, failed: OriginStatus.FAILED, archived: OriginStatus.ARCHIVED };
const PERMISSION_TO_WIRE: Record<PermissionName, OriginPermission> = { read: OriginPermission.READ, write: OriginPermission.WRITE };
const PROVIDER_FROM_WIRE: Partial<Record<OriginProvider, ProviderName>> = {
  [OriginProvider.GCS]: "gcs",
  [OriginProvider.S3]: "s3",
  [OriginProvider.R2]: "r2",
  [OriginProvider.HTTP]: "http",
};
const STATUS_FROM_WIRE: Partial<Record<OriginStatus, StatusName>> = {
  [OriginStatus.ACTIVE]: "active",
  [OriginStatus.FAILED]: "failed",
  [OriginStatus.ARCHIVED]: "archived",
};
const PERMISSION_FROM_WIRE: Partial<Record<OriginPermission, PermissionName>> = { [OriginPermission.READ]: "read", [OriginPermission.WRITE]: "write" };
const JURISDICTION_FROM_WIRE: Partial<Record<R2Jurisdiction, OriginRecord["jurisdiction"]>> = {
  [R2Jurisdiction.DEFAULT]: "default",
  [R2Jurisdiction.EU]: "eu",
  [R2Jurisdiction.FEDRAMP]: "fedramp",
};

const ts = (ms: number | undefined) => (ms === undefined ? undefined : timestampFromMs(ms));

/** The wire form of an origin: location settings yes, credentials never. */
export function originMessage(o: OriginRecord): Origin {
  return create(OriginSchema, {
    id: o.id,
    name: o.name,
    description: o.description,
    provider: PROVIDER_TO_WIRE[o.provider],
    permissions: o.permissions.map((p) => PERMISSION_TO_WIRE[p]),
    status: STATUS_TO_WIRE[o.status],
    basePath: o.basePath,
    pathTemplate: o.pathTemplate,
    lastValidatedAt: ts(o.lastValidatedAt),
    validationError: o.status === "failed" ? o.validationError : undefined,
    createdAt: ts(o.createdAt),
    updatedAt: ts(o.updatedAt),
    archivedAt: ts(o.archivedAt),
    bucket: o.bucket,
    region: o.region,
    endpoint: o.endpoint,
    baseUrl: o.baseUrl,
  });
}

export function validationMessage(v: ValidationResultData): ValidationResult {
  return create(ValidationResultSchema, {
    success: v.success,
    canRead: v.canRead,
    canWrite: v.canWrite,
    readError: v.readError,
    writeError: v.writeError,
    validatedAt: timestampFromMs(v.validatedAt),
  });
}

// ───────────────────────────── request checks ─────────────────────────────

const BUCKET = /^[a-z0-9][a-z0-9.-]*[a-z0-9]$/;
const GCS_BUCKET = /^[a-z0-9][a-z0-9._-]*[a-z0-9]$/;
const BUCKET_RULE = "must be 3 to 63 lowercase letters, digits, dots or hyphens, starting and ending with a letter or digit";
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Headers the transport sets itself; a caller's value would corrupt or smuggle requests.
const RESERVED_HEADERS = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "upgrade",
  "te",
  "trailer",
  "keep-alive",
  "proxy-authorization",
  "proxy-connection",
]);

function checkBucket(check: Check, field: string, value: string, gcs = false): void {
  if (value === "") return void check.add(field, "is required");
  const pattern = gcs ? GCS_BUCKET : BUCKET;
  if (value.length < 3 || value.length > 63 || !pattern.test(value) || value.includes(".."))
    check.add(field, gcs ? BUCKET_RULE.replace("dots or hyphens", "dots, underscores or hyphens") : BUCKET_RULE);
}

function checkPath(check: Check, field: string, value: string | undefined, template: boolean): void {
  if (value === undefined) return;
  check.length(field, value, 0, ORIGIN_LIMITS.path);
  if (value.split("/").some((s) => s === "." || s === "..")) check.add(field, "must not contain . or .. segments");
  if (/[\u0000-\u001f\u007f\\]/.test(value)) check.add(field, "must not contain control characters or backslashes");
  if (!template) return;
  for (const m of value.matchAll(/\{([^}]*)\}/g)) {
    if (!(PATH_TEMPLATE_VARIABLES as readonly string[]).includes(m[1]!)) {
      check.add(field, `unknown variable {${m[1]}}; use ${PATH_TEMPLATE_VARIABLES.map((v) => `{${v}}`).join(", ")}`);
    }
  }
}

/** An https URL the service may call: parsed, no credentials, and for endpoints nothing but scheme, host and port. */
function checkUserUrl(check: Check, field: string, value: string, max: number, bare: boolean): URL | undefined {
  if (value === "") return void check.add(field, "is required");
  if (value.length > max) return void check.add(field, `must be at most ${max} characters`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return void check.add(field, "must be a valid URL");
  }
  if (url.protocol !== "https:") return void check.add(field, "must be an https:// URL");
  if (url.username !== "" || url.password !== "") return void check.add(field, "must not carry credentials; use the credentials object");
  if (url.search !== "" || url.hash !== "") return void check.add(field, "must not have a query or fragment");
  if (bare && url.pathname !== "/") return void check.add(field, "must be https://host[:port] without a path");
  return url;
}

function accessKeyCredentials(check: Check, field: string, c: AccessKeyCredentials | undefined): OriginCredentials | undefined {
  if (!c) return void check.add(field, "is required");
  const before = check.violations.length;
  if (c.accessKeyId === "") check.add(`${field}.access_key_id`, "is required");
  else if (c.accessKeyId.length > 128 || !/^[\x21-\x7e]+$/.test(c.accessKeyId))
    check.add(`${field}.access_key_id`, "must be 1 to 128 printable characters without spaces");
  if (c.secretAccessKey === "") check.add(`${field}.secret_access_key`, "is required");
  else if (c.secretAccessKey.length > 256 || !/^[\x21-\x7e]+$/.test(c.secretAccessKey))
    check.add(`${field}.secret_access_key`, "must be 1 to 256 printable characters without spaces");
  return check.violations.length === before ? { kind: "access_key", accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey } : undefined;
}

function gcsCredentials(check: Check, field: string, c: GcsCredentials | undefined): OriginCredentials | undefined {
  if (!c) return void check.add(field, "is required");
  if (c.serviceAccountJson === "") return void check.add(`${field}.service_account_json`, "is required");
  const parsed = parseServiceAccount(c.serviceAccountJson);
  if ("error" in parsed) return void check.add(`${field}.service_account_json`, parsed.error);
  return { kind: "gcs", serviceAccountJson: c.serviceAccountJson };
}

function httpCredentials(check: Check, field: string, c: HttpCredentials | undefined): OriginCredentials {
  const headers = c?.headers ?? {};
  const path = `${field}.headers`;
  const names = Object.keys(headers);
  if (names.length > ORIGIN_LIMITS.headers) check.add(path, `at most ${ORIGIN_LIMITS.headers} headers`);
  const seen = new Set<string>();
  for (const name of names) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name)) check.add(path, `"${name}" is not a valid header name`);
    else if (RESERVED_HEADERS.has(lower)) check.add(path, `"${name}" is set by the service and cannot be configured`);
    else if (seen.has(lower)) check.add(path, `"${name}" is given twice`);
    seen.add(lower);
    const value = headers[name]!;
    if (/[\r\n\0]/.test(value) || value.length > 8192) check.add(path, `the value of "${name}" must be at most 8192 characters without line breaks`);
  }
  return { kind: "http", headers: { ...headers } };
}

/** What a create request says besides the app: the record's location fields and the credentials. */
interface Draft {
  readonly provider: ProviderName;
  readonly location: Pick<OriginRecord, "bucket" | "region" | "endpoint" | "accountId" | "jurisdiction" | "baseUrl">;
  readonly credentials: OriginCredentials | undefined;
  /** User-given URLs the network guard must accept, by request field. */
  readonly urls: readonly { field: string; url: URL }[];
}

const NO_LOCATION = { bucket: "", region: "", endpoint: "", accountId: "", jurisdiction: "", baseUrl: "" } as const;

function providerDraft(check: Check, req: Parameters<ServiceImpl<typeof OriginService>["create"]>[0]): Draft | undefined {
  const given = (["gcs", "s3", "r2", "http"] as const).filter((p) => req[p] !== undefined);
  if (given.length === 0) return void check.add("provider", "exactly one of gcs, s3, r2 or http is required");
  if (given.length > 1) {
    for (const p of given) check.add(p, `only one provider object may be set; got ${given.join(" and ")}`);
    return undefined;
  }
  if (req.gcs) {
    checkBucket(check, "gcs.bucket", req.gcs.bucket, true);
    const credentials = gcsCredentials(check, "gcs.credentials", req.gcs.credentials);
    return { provider: "gcs", location: { ...NO_LOCATION, bucket: req.gcs.bucket }, credentials, urls: [] };
  }
  if (req.s3) {
    checkBucket(check, "s3.bucket", req.s3.bucket);
    if (req.s3.region === "") check.add("s3.region", "is required");
    else if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(req.s3.region)) check.add("s3.region", "must be a region name such as eu-west-1");
    const credentials = accessKeyCredentials(check, "s3.credentials", req.s3.credentials);
    return { provider: "s3", location: { ...NO_LOCATION, bucket: req.s3.bucket, region: req.s3.region }, credentials, urls: [] };
  }
  if (req.r2) {
    const r2 = req.r2;
    checkBucket(check, "r2.bucket", r2.bucket);
    const urls: { field: string; url: URL }[] = [];
    let endpoint = "";
    let jurisdiction: OriginRecord["jurisdiction"] = "";
    if (r2.accountId !== "" && r2.endpoint !== "") check.add("r2.endpoint", "is mutually exclusive with r2.account_id; give one of them");
    else if (r2.accountId === "" && r2.endpoint === "") check.add("r2.account_id", "one of r2.account_id or r2.endpoint is required");
    else if (r2.accountId !== "") {
      if (!/^[a-f0-9]{32}$/.test(r2.accountId)) check.add("r2.account_id", "must be 32 lowercase hexadecimal characters");
      jurisdiction = JURISDICTION_FROM_WIRE[r2.jurisdiction] ?? "default";
      endpoint = r2Endpoint(r2.accountId, jurisdiction);
    } else {
      // The jurisdiction is part of an account endpoint's name; a custom endpoint already says it.
      const url = checkUserUrl(check, "r2.endpoint", r2.endpoint, ORIGIN_LIMITS.endpoint, true);
      if (url) {
        endpoint = url.origin;
        urls.push({ field: "r2.endpoint", url });
      }
    }
    const credentials = accessKeyCredentials(check, "r2.credentials", r2.credentials);
    return {
      provider: "r2",
      location: { ...NO_LOCATION, bucket: r2.bucket, endpoint, accountId: r2.accountId, jurisdiction: r2.accountId !== "" ? jurisdiction : "" },
      credentials,
      urls,
    };
  }
  const http = req.http!;
  const url = checkUserUrl(check, "http.base_url", http.baseUrl, LIMITS.url, false);
  const credentials = httpCredentials(check, "http.credentials", http.credentials);
  return {
    provider: "http",
    location: { ...NO_LOCATION, baseUrl: url ? url.href.replace(/\/+$/, "") : "" },
    credentials,
    urls: url ? [{ field: "http.base_url", url }] : [],
  };
}

function checkPermissions(check: Check, permissions: readonly OriginPermission[], provider: ProviderName | undefined): PermissionName[] {
  if (permissions.length === 0) check.add("permissions", "must list read and/or write");
  const out: PermissionName[] = [];
  permissions.forEach((p, i) => {
    const name = PERMISSION_FROM_WIRE[p];
    if (!name) check.add(`permissions[${i}]`, "must be read or write");
    else if (out.includes(name)) check.add(`permissions[${i}]`, `${name} is listed twice`);
    else if (name === "write" && provider === "http") check.add(`permissions[${i}]`, "http origins are read-only; only read is supported");
    else out.push(name);
  });
  return out;
}

/** User-given URLs that point at addresses the guard never lets through are input errors. */
async function checkReachable(guard: NetGuard, check: Check, urls: Draft["urls"]): Promise<void> {
  for (const { field, url } of urls) {
    try {
      await guard.check(url);
    } catch (e) {
      // An unresolvable name may resolve later; the credential check reports it as unreachable.
      if (e instanceof NetGuardError && e.reason === "forbidden_address") check.add(field, e.message);
    }
  }
}

function validationViolations(provider: ProviderName, v: ValidationResultData): FieldViolation[] {
  const field = provider === "http" ? "http.base_url" : `${provider}.credentials`;
  return [
    ...(v.readError ? [{ field, description: `read check failed: ${v.readError}` }] : []),
    ...(v.writeError ? [{ field, description: `write check failed: ${v.writeError}` }] : []),
  ];
}

// ───────────────────────────── scoping and writes ─────────────────────────────

async function visibleOrigin(d: ServiceDeps, caller: Caller, id: string): Promise<OriginRecord> {
  new Check().id("id", id, Prefix.origin).done();
  return visible(caller, await getOrigin(d.store, id), "origin", id);
}

/** Read, change and write back on the record's version, retrying a lost race a few times. */
async function changeOrigin(d: ServiceDeps, id: string, fn: (o: OriginRecord) => OriginRecord): Promise<OriginRecord> {
  for (let attempt = 0; ; attempt++) {
    const current = await d.store.get<OriginRecord>(ORIGINS, id);
    if (!current) throw notFound("origin", id);
    const next = fn(current.value);
    try {
      await d.store.commit({ writes: [{ table: ORIGINS, id, value: next, expectedVersion: current.version }] });
      return next;
    } catch (e) {
      if (!(e instanceof VersionConflict)) throw e;
      if (attempt >= 4) throw apiError(Code.Aborted, `origin ${id} changed concurrently; retry`);
    }
  }
}

function notArchived(o: OriginRecord): OriginRecord {
  if (o.status === "archived") throw failedPrecondition(`origin ${o.id} is archived`);
  return o;
}

// ───────────────────────────── the service ─────────────────────────────

export function originService(d: ServiceDeps): ServiceImpl<typeof OriginService> {
  const guard = d.guard;
  const validate = (o: OriginRecord) => validateOrigin(o, d.box, guard, d.config);

  return {
    async create(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check()
        .required("name", req.name)
        .length("name", req.name, 1, LIMITS.name)
        .length("description", req.description, 0, LIMITS.description);
      checkPath(check, "base_path", req.basePath, false);
      checkPath(check, "path_template", req.pathTemplate, true);
      if (caller.kind === "session" && req.appId !== "") check.id("app_id", req.appId, Prefix.app);
      const draft = providerDraft(check, req);
      const permissions = checkPermissions(check, req.permissions, draft?.provider);
      check.done();
      // done() threw unless every part of the provider object was given and valid.
      if (!draft?.credentials) throw apiError(Code.Internal, "origin request passed checks without credentials");
      const credentials = draft.credentials;
      if (draft.urls.length > 0) {
        await checkReachable(guard, check, draft.urls);
        check.done();
      }
      const app = await requireActingApp(d.directory, caller, req.appId);
      if (app.status !== "active") throw invalidField("app_id", "app is archived");
      const now = Date.now();
      const call = ctx.values.get(IDEMPOTENT_CALL);
      const draftRecord: OriginRecord = {
        id: createdId(d.box, call, Prefix.origin),
        appId: app.id,
        organizationId: app.organizationId,
        name: req.name,
        description: req.description,
        provider: draft.provider,
        permissions,
        status: "active",
        basePath: req.basePath,
        pathTemplate: req.pathTemplate,
        ...draft.location,
        sealedCredentials: sealCredentials(d.box, credentials),
        createdAt: now,
        updatedAt: now,
      };
      const validation = await validate(draftRecord);
      if (!validation.success) {
        const errors = [validation.readError && `read: ${validation.readError}`, validation.writeError && `write: ${validation.writeError}`]
          .filter(Boolean)
          .join("; ");
        throw apiError(
          Code.FailedPrecondition,
          `the credentials failed validation, nothing was stored (${errors})`,
          validationViolations(draft.provider, validation),
        );
      }
      const origin = afterValidation(draftRecord, validation);
      try {
        await d.store.commit({
          writes: [{ table: ORIGINS, id: origin.id, value: origin, partition: origin.appId, sort: sortKey(origin.createdAt, origin.id), expectedVersion: 0 }],
        });
      } catch (e) {
        // A retry under the same Idempotency-Key whose first answer was lost: the origin it made.
        const made = call !== undefined && e instanceof VersionConflict ? (await d.store.get<OriginRecord>(ORIGINS, origin.id))?.value : undefined;
        if (!made) throw e;
        return { origin: originMessage(made), validation: validationMessage(validation) };
      }
      d.log.info({ origin_id: origin.id, app_id: origin.appId, provider: origin.provider }, "origin created");
      return { origin: originMessage(origin), validation: validationMessage(validation) };
    },

    async get(req, ctx) {
      return { origin: originMessage(await visibleOrigin(d, callerOf(ctx.values), req.id)) };
    },

    async list(req, ctx) {
      const caller = callerOf(ctx.values);
      if (req.appId !== "") new Check().id("app_id", req.appId, Prefix.app).done();
      const app = await actingApp(d.directory, caller, req.appId);
      const provider = PROVIDER_FROM_WIRE[req.provider];
      const status = STATUS_FROM_WIRE[req.status];
      const permission = PERMISSION_FROM_WIRE[req.permission];
      // Asking for archived origins by status shows them without include_archived.
      const withArchived = req.includeArchived || status === "archived";
      const filter = (o: OriginRecord) =>
        (withArchived || o.status !== "archived") &&
        (provider === undefined || o.provider === provider) &&
        (status === undefined || o.status === status) &&
        (permission === undefined || o.permissions.includes(permission));
      const listId = `origins:${caller.org!.id}:${app?.id ?? ""}:${provider ?? ""}:${status ?? ""}:${permission ?? ""}:${withArchived}`;
      // No active app yet: an empty page, with the same validation of the paging fields.
      const page = await d.paginator.page<OriginRecord>(ORIGINS, app?.id ?? "", listId, req.pagination, filter);
      return { origins: page.items.map((r) => originMessage(r.value)), pagination: page.pagination };
    },

    async update(req, ctx) {
      const caller = callerOf(ctx.values);
      const check = new Check().id("id", req.id, Prefix.origin);
      if (req.name !== undefined) check.required("name", req.name).length("name", req.name, 1, LIMITS.name);
      check.length("description", req.description, 0, LIMITS.description);
      checkPath(check, "base_path", req.basePath, false);
      checkPath(check, "path_template", req.pathTemplate, true);
      const supplied = (
        [
          ["gcs_credentials", "gcs", req.gcsCredentials],
          ["s3_credentials", "s3", req.s3Credentials],
          ["r2_credentials", "r2", req.r2Credentials],
          ["http_credentials", "http", req.httpCredentials],
        ] as const
      ).filter(([, , value]) => value !== undefined);
      for (const [field] of supplied.slice(1)) check.add(field, "send one credentials object, the one of the origin's provider");
      check.done();
      const current = notArchived(await visibleOrigin(d, caller, req.id));
      let credentials: OriginCredentials | undefined;
      const rotation = supplied[0];
      if (rotation) {
        const [field, provider] = rotation;
        if (provider !== current.provider)
          throw invalidField(field, `origin ${current.id} is a ${current.provider} origin; send ${current.provider}_credentials`);
        credentials =
          rotation[1] === "gcs"
            ? gcsCredentials(check, field, rotation[2])
            : rotation[1] === "http"
              ? httpCredentials(check, field, rotation[2])
              : accessKeyCredentials(check, field, rotation[2]);
        check.done();
      }
      const patch = {
        ...(req.name !== undefined ? { name: req.name } : {}),
        ...(req.description !== undefined ? { description: req.description } : {}),
        ...(req.basePath !== undefined ? { basePath: req.basePath } : {}),
        ...(req.pathTemplate !== undefined ? { pathTemplate: req.pathTemplate } : {}),
        ...(credentials ? { sealedCredentials: sealCredentials(d.box, credentials) } : {}),
      };
      // Rotated credentials are checked before the write; the write then records the outcome.
      const validation = credentials ? await validate({ ...current, ...patch }) : undefined;
      const origin = await changeOrigin(d, current.id, (o) => {
        const next = { ...notArchived(o), ...patch, updatedAt: Date.now() };
        return validation ? afterValidation(next, validation) : next;
      });
      if (validation) d.log.info({ origin_id: origin.id, status: origin.status }, "origin credentials rotated");
      return { origin: originMessage(origin), validation: validation && validationMessage(validation) };
    },

    async validate(req, ctx) {
      const current = notArchived(await visibleOrigin(d, callerOf(ctx.values), req.id));
      const validation = await validate(current);
      // Only the outcome is written: credentials rotated meanwhile keep their own outcome.
      const origin = await changeOrigin(d, current.id, (o) =>
        notArchived(o).sealedCredentials === current.sealedCredentials ? afterValidation(o, validation) : o,
      );
      return { origin: originMessage(origin), validation: validationMessage(validation) };
    },

    async archive(req, ctx) {
      const current = await visibleOrigin(d, callerOf(ctx.values), req.id);
      notArchived(current);
      const origin = await changeOrigin(d, current.id, (o) => {
        const now = Date.now();
        return { ...notArchived(o), status: "archived", archivedAt: now, updatedAt: now };
      });
      return { origin: originMessage(origin) };
    },
  };
}
