// Who may call what: one table of rules per method, the authentication of API keys and portal
// sessions, the X-Organization-ID rules, roles and key scopes. Runs as a Connect interceptor,
// so every protocol gets the same answers.
import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { ApiKeyRecord } from "../actors/api-key/messages.js";
import { apiError, invalid, permissionDenied, unauthenticated } from "../src/errors.js";
import { atLeast, type AppRecord, type Directory, type IdentityClaims, type OrganizationRecord, type Role, type UserRecord } from "../src/directory.js";
import { TokenRefused, type SessionVerifier } from "../src/identity.js";
import type { Logger } from "../src/log.js";
import { SESSION_COOKIE, type Sessions } from "../src/sessions.js";
import type { SecretBox } from "../src/secrets.js";
import type { Store } from "../src/store/port.js";
import { CLIENT_ADDRESS } from "./front.js";
import type { KeyCallers } from "./key-callers.js";

export type Caller =
  | { readonly kind: "key"; readonly key: ApiKeyRecord; readonly app: AppRecord; readonly org: OrganizationRecord }
  | {
      readonly kind: "session";
      readonly user: UserRecord;
      readonly staff: boolean;
      readonly org?: OrganizationRecord;
      readonly role?: Role;
      /** Set when a session cookie (not a bearer token) authenticated the call. */
      readonly sessionId?: string;
    };

export const CALLER = createContextKey<Caller | undefined>(undefined, { description: "authenticated caller" });
/** The id of the request being served (x-request-id), for records that say what caused them. */
export const REQUEST_ID = createContextKey<string>("", { description: "request id" });

export const SCOPE_RESOURCES = ["organizations", "apps", "api_keys", "users", "origins", "presets", "jobs", "videos", "webhooks"] as const;
export type Scope = `${(typeof SCOPE_RESOURCES)[number]}:${"read" | "write"}`;
export const isScope = (s: string): s is Scope => /^([a-z_]+):(read|write)$/.test(s) && (SCOPE_RESOURCES as readonly string[]).includes(s.split(":")[0]!);

export interface Rule {
  /** No credentials at all (health). */
  readonly public?: boolean;
  /** X-Organization-ID is required. */
  readonly org: boolean;
  /** Scope an API key needs; null refuses API keys. */
  readonly key: Scope | null;
  /** Least role a session needs in the organization; "user" = any approved user; "staff" = operator staff. */
  readonly role: Role | "user" | "staff";
  /** Pending (not yet approved) users may call it. */
  readonly pendingOk?: boolean;
  readonly mutating: boolean;
}

const read = (resource: (typeof SCOPE_RESOURCES)[number], role: Role = "viewer"): Rule => ({ org: true, key: `${resource}:read`, role, mutating: false });
const write = (resource: (typeof SCOPE_RESOURCES)[number], role: Role = "member"): Rule => ({ org: true, key: `${resource}:write`, role, mutating: true });
const portal = (role: Role | "user" | "staff", org: boolean, mutating: boolean, pendingOk = false): Rule => ({ org, key: null, role, mutating, pendingOk });

/** The access table: every method of the contract, by "package.Service/Method". */
export const RULES: Readonly<Record<string, Rule>> = {
  "media.v1.HealthService/Check": { public: true, org: false, key: null, role: "user", mutating: false },

  "media.v1.OrganizationService/CheckSlug": portal("user", false, false),
  "media.v1.OrganizationService/Create": portal("user", false, true),
  "media.v1.OrganizationService/Get": read("organizations"),
  "media.v1.OrganizationService/Update": portal("admin", true, true),
  "media.v1.OrganizationService/List": read("organizations"),
  "media.v1.OrganizationService/SetStatus": portal("staff", false, true),

  "media.v1.AppService/Create": portal("admin", true, true),
  "media.v1.AppService/Get": read("apps"),
  "media.v1.AppService/Update": portal("admin", true, true),
  "media.v1.AppService/List": read("apps"),
  "media.v1.AppService/Archive": portal("admin", true, true),
  "media.v1.AppService/EnableHosting": portal("admin", true, true),

  // It issues fresh upload URLs: a write.
  "media.v1.VideoService/ListUploadParts": write("videos"),

  "media.v1.APIKeyService/Create": write("api_keys", "admin"),
  "media.v1.APIKeyService/Get": read("api_keys"),
  "media.v1.APIKeyService/List": read("api_keys"),
  "media.v1.APIKeyService/Revoke": write("api_keys", "admin"),

  "media.v1.UserService/GetMe": portal("user", false, false, true),
  "media.v1.UserService/UpdateMe": portal("user", false, true, true),
  "media.v1.UserService/Get": read("users"),
  "media.v1.UserService/List": read("users", "admin"),
  "media.v1.UserService/ListMembers": read("users"),
  "media.v1.UserService/AddMember": portal("admin", true, true),
  "media.v1.UserService/UpdateRole": portal("admin", true, true),
  "media.v1.UserService/RemoveMember": portal("admin", true, true),
  "media.v1.UserService/DecideApproval": portal("staff", false, true),
  "media.v1.UserService/SetStatus": portal("staff", false, true),
};

/** Rule of a method owned by a later capability: reads need viewer, writes member. */
export function defaultRule(resource: (typeof SCOPE_RESOURCES)[number], mutating: boolean): Rule {
  return mutating ? write(resource) : read(resource);
}

export interface AccessDeps {
  readonly store: Store;
  readonly directory: Directory;
  readonly box: SecretBox;
  readonly sessions: SessionVerifier;
  readonly signIns: Sessions;
  readonly log: Logger;
  /** The origin of MEDIA_PUBLIC_URL, accepted as a cookie call's Origin besides the Host's. */
  readonly publicOrigin: () => string | undefined;
  readonly staffEmails: readonly string[];
  readonly onKeyUsed: (key: ApiKeyRecord) => void;
  /** Keys resolved recently, forgotten when they, their app or their organization change. */
  readonly keyCallers: KeyCallers;
  readonly ruleOf: (typeName: string, method: string) => Rule | undefined;
}

const ORG_HEADER = "x-organization-id";

export function accessInterceptor(deps: AccessDeps): Interceptor {
  return (next) => async (req) => {
    const rule = deps.ruleOf(req.service.typeName, req.method.name);
    if (!rule) throw apiError(Code.Internal, `no access rule for ${req.service.typeName}/${req.method.name}`);
    if (rule.public) return next(req);
    const caller = await authorize(deps, rule, await authenticate(deps, req.header, req.contextValues.get(CLIENT_ADDRESS)), req.header.get(ORG_HEADER));
    req.contextValues.set(CALLER, caller);
    return next(req);
  };
}

/** The header a cookie-authenticated call must carry: a cross-site form cannot send it. */
export const CLIENT_HEADER = "x-media-client";

/** The value of one cookie of a Cookie header. */
export function cookieValue(header: string | null, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Operator staff: a staff email, verified by the provider (or vouched for by the operator). */
export const isStaff = (deps: Pick<AccessDeps, "staffEmails">, user: UserRecord): boolean => user.emailVerified && deps.staffEmails.includes(user.email);

async function authenticate(deps: AccessDeps, header: Headers, address: string): Promise<Caller> {
  const authorization = header.get("authorization");
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!match) {
    const cookie = authorization === null ? cookieValue(header.get("cookie"), SESSION_COOKIE) : undefined;
    if (cookie !== undefined) return authenticateCookie(deps, cookie, header, address);
    throw unauthenticated("missing credentials: send Authorization: Bearer <API key or session token>");
  }
  const token = match[1]!;
  if (token.startsWith("ak_")) return authenticateKey(deps, token);
  let claims;
  try {
    claims = await deps.sessions.verify(token);
  } catch (e) {
    if (!(e instanceof TokenRefused)) throw e;
    deps.log.info({ address, reason: e.reason }, "session token refused");
    throw unauthenticated("invalid or expired session token");
  }
  const user = await userOf(deps, claims);
  return { kind: "session", user, staff: isStaff(deps, user) };
}

/** The user a verified identity names (a bearer token, a provider's sign-in); a verified staff email comes approved. */
export function userOf(deps: Pick<AccessDeps, "directory" | "staffEmails">, claims: IdentityClaims): Promise<UserRecord> {
  return deps.directory.provision(claims, claims.emailVerified && deps.staffEmails.includes(claims.email.toLowerCase()));
}

/** Whether a request comes from this service's own pages: its Origin is the public URL's, or names the host it came to. */
export function fromThisService(origin: string | null, host: string | null, publicOrigin: string | undefined): boolean {
  if (!origin) return false;
  if (origin === publicOrigin) return true;
  try {
    return host !== null && new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}

/**
 * The live session a cookie's token names, and its user; undefined once the session has ended, its
 * user is no longer active, or the user signed out everywhere since (the session is then ended in
 * the store too, and the end logged).
 */
export async function liveSession(
  deps: Pick<AccessDeps, "signIns" | "directory" | "log">,
  token: string,
  address: string,
): Promise<{ user: UserRecord; sessionId: string } | undefined> {
  const session = await deps.signIns.resolve(token);
  if (session === "ended") return undefined;
  const user = await deps.directory.user(session.record.userId);
  if (!user || user.status !== "active" || session.record.createdAt <= (user.sessionsValidAfter ?? 0)) {
    await deps.signIns.end(session.id);
    deps.log.info({ user_id: session.record.userId, address, session: session.id.slice(0, 12) }, "session ended: account not active or signed out everywhere");
    return undefined;
  }
  return { user, sessionId: session.id };
}

/**
 * A session cookie: only with the client header and an Origin of this service (a page elsewhere
 * can neither send the header in a form nor fake its Origin), and only while the session, its
 * user and the user's sessions are live.
 */
async function authenticateCookie(deps: AccessDeps, token: string, header: Headers, address: string): Promise<Caller> {
  const origin = header.get("origin");
  if (!header.get(CLIENT_HEADER) || !fromThisService(origin, header.get("host"), deps.publicOrigin())) {
    deps.log.info({ address, origin }, "cookie call refused: not from this service's pages");
    throw permissionDenied(`a session cookie is accepted only from this service's pages (Origin of this host and the ${CLIENT_HEADER} header)`);
  }
  const live = await liveSession(deps, token, address);
  if (!live) throw unauthenticated("the session has ended; sign in again");
  return { kind: "session", user: live.user, staff: isStaff(deps, live.user), sessionId: live.sessionId };
}

// Secret → hash, bounded: the HMAC is the same every call; what the hash names is resolved (and
// kept, and forgotten on a change) by KeyCallers.
const hashCache = new WeakMap<SecretBox, Map<string, string>>();
function hashOf(box: SecretBox, secret: string): string {
  let hashes = hashCache.get(box);
  if (!hashes) hashCache.set(box, (hashes = new Map()));
  let hash = hashes.get(secret);
  if (hash === undefined) {
    if (hashes.size >= 10_000) hashes.clear();
    hash = box.hashSecret(secret);
    hashes.set(secret, hash);
  }
  return hash;
}

async function authenticateKey(deps: AccessDeps, secret: string): Promise<Caller> {
  const resolved = await deps.keyCallers.resolve(hashOf(deps.box, secret));
  if (!resolved) throw unauthenticated("invalid API key");
  const { key, app, org } = resolved;
  if (key.revokedAt !== undefined) throw unauthenticated("API key has been revoked");
  if (key.expiresAt !== undefined && key.expiresAt <= Date.now()) throw unauthenticated("API key has expired");
  if (!app || !org || app.organizationId !== org.id) throw unauthenticated("invalid API key");
  if (org.status !== "active") throw permissionDenied("the organization is suspended");
  if (app.status !== "active") throw permissionDenied("the API key's app is archived");
  deps.onKeyUsed(key);
  return { kind: "key", key, app, org };
}

async function authorize(deps: AccessDeps, rule: Rule, caller: Caller, orgHeader: string | null): Promise<Caller> {
  if (caller.kind === "session") {
    const u = caller.user;
    if (u.status !== "active") throw permissionDenied(`the account is ${u.status}`);
    if (u.approvalStatus !== "approved" && !rule.pendingOk)
      throw permissionDenied(`the account is ${u.approvalStatus} approval`.replace("rejected approval", "not approved"));
  }
  if (rule.key === null && caller.kind === "key") throw permissionDenied("this operation needs a signed-in user, not an API key");
  if (caller.kind === "key" && caller.key.scopes.length > 0 && !hasScope(caller.key.scopes, rule.key!)) {
    throw permissionDenied(`the API key lacks the scope ${rule.key}`);
  }
  if (rule.role === "staff" && !(caller.kind === "session" && caller.staff)) throw permissionDenied("operator staff only");
  if (!rule.org) return caller;
  if (!orgHeader) throw invalid([{ field: "X-Organization-ID", description: "header is required for this operation" }]);
  if (caller.kind === "key") {
    if (orgHeader !== caller.org.id) throw permissionDenied("X-Organization-ID does not match the API key's organization");
    return caller;
  }
  const membership = await deps.directory.membership(orgHeader, caller.user.id);
  const org = membership && (await deps.directory.organization(orgHeader));
  if (!membership || !org) throw permissionDenied("not a member of the organization in X-Organization-ID");
  if (org.status !== "active") throw permissionDenied("the organization is suspended");
  if (rule.role !== "user" && rule.role !== "staff" && !atLeast(membership.role, rule.role)) {
    throw permissionDenied(`this operation needs the ${rule.role} role or higher`);
  }
  return { ...caller, org, role: membership.role };
}

export function hasScope(scopes: readonly string[], needed: Scope): boolean {
  const [resource] = needed.split(":");
  return scopes.includes(needed) || (needed.endsWith(":read") && scopes.includes(`${resource}:write`));
}

export function callerOf(values: { get<T>(key: { id: symbol; defaultValue: T }): T }): Caller {
  const caller = values.get(CALLER);
  if (!caller) throw new ConnectError("caller missing from context", Code.Internal);
  return caller;
}
