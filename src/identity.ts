// Who a token names: the issuers this service trusts, and the checks a token passes before it names
// a person. An OpenID Connect provider (MEDIA_OIDC_ISSUER) is found by discovery; its key set is
// fetched through the network guard, cached, and fetched again when a token names a key it lacks
// (rotation without a restart). The embedded mode also carries a development issuer whose key lives
// in the data folder (`media token`); a cluster never accepts it.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors as joseErrors,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  type JSONWebKeySet,
  type JWK,
  type JWTPayload,
} from "jose";
import { readBounded } from "./bounded-body.js";
import type { Config, OidcSettings } from "./config.js";
import type { IdentityClaims } from "./directory.js";
import type { NetGuard } from "./net-guard.js";

const DEV_KEY_FILE = "dev-issuer.jwk.json";
/** A key set is fetched again at most this often, however many unknown kids arrive (bounded work for forged tokens). */
const JWKS_COOLDOWN_MS = 2_000;
/** A key set is kept this long before it is fetched again anyway. */
const JWKS_MAX_AGE_MS = 10 * 60_000;
const FETCH_TIMEOUT_MS = 10_000;
const MAX_DOCUMENT_BYTES = 256 * 1024;

/** A token that names nobody, with the reason (for the log; callers see only "invalid"). */
export class TokenRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "TokenRefused";
  }
}

/** The development issuer's key pair, made in the data folder on first use. */
async function devKeyPair(dataDir: string): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  const file = path.join(dataDir, DEV_KEY_FILE);
  if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")) as { privateJwk: JWK; publicJwk: JWK };
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const pair = { privateJwk: await exportJWK(privateKey), publicJwk: await exportJWK(publicKey) };
  writeFileSync(file, JSON.stringify(pair), { mode: 0o600 });
  return pair;
}

/** The identity in a verified payload: subject required; email an attribute, trusted only when verified. */
export function claimsOf(issuer: string, payload: JWTPayload): IdentityClaims {
  if (typeof payload.sub !== "string" || payload.sub === "" || payload.sub.length > 255) throw new TokenRefused("the token has no subject (sub)");
  const email = typeof payload.email === "string" && /^[^@\s]+@[^@\s]+$/.test(payload.email) && payload.email.length <= 320 ? payload.email : undefined;
  return {
    issuer,
    subject: payload.sub,
    email: email ?? "",
    emailVerified: email !== undefined && payload.email_verified === true,
    firstName: typeof payload.given_name === "string" ? payload.given_name.slice(0, 100) : "",
    lastName: typeof payload.family_name === "string" ? payload.family_name.slice(0, 100) : "",
    ...(typeof payload.picture === "string" && payload.picture.length <= 2048 ? { pictureUrl: payload.picture } : {}),
  };
}

function refusal(e: unknown): TokenRefused {
  if (e instanceof TokenRefused) return e;
  if (e instanceof joseErrors.JWTExpired) return new TokenRefused("the token has expired");
  if (e instanceof joseErrors.JWTClaimValidationFailed) return new TokenRefused(`the token's ${e.claim} claim is not accepted (${e.reason})`);
  if (e instanceof joseErrors.JWKSNoMatchingKey) return new TokenRefused("no key of the issuer's key set verifies the token");
  if (e instanceof joseErrors.JWSSignatureVerificationFailed) return new TokenRefused("the token's signature does not verify");
  if (e instanceof Error) return new TokenRefused(`the token is not valid: ${e.message}`);
  return new TokenRefused("the token is not valid");
}

interface Discovery {
  readonly issuer: string;
  readonly authorization_endpoint: string;
  readonly token_endpoint: string;
  readonly jwks_uri: string;
  readonly end_session_endpoint?: string;
}

/** GET or POST through the guard, JSON back, bounded in size and time. */
async function guardedJson(
  guard: NetGuard,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: Buffer } = {},
): Promise<{ status: number; json: unknown }> {
  const allowHttp = new URL(url).protocol === "http:";
  const signal = AbortSignal.timeout(FETCH_TIMEOUT_MS);
  const res = await guard.request(url, { ...init, allowHttp, timeoutMs: FETCH_TIMEOUT_MS, signal, maxRedirects: init.method === "POST" ? 0 : 3 });
  const bytes = await readBounded(res.body, MAX_DOCUMENT_BYTES, signal);
  if (!bytes) throw new Error(`${url} answered more than ${MAX_DOCUMENT_BYTES} bytes`);
  try {
    return { status: res.status, json: JSON.parse(bytes.toString("utf8")) as unknown };
  } catch {
    throw new Error(`${url} answered ${res.status} with a body that is not JSON`);
  }
}

/** An OpenID Connect provider: discovery, its key set, ID and access tokens, and the code exchange. */
export class OidcProvider {
  private discovery: Promise<Discovery> | undefined;
  private keys: { set: ReturnType<typeof createLocalJWKSet>; kids: Set<string>; at: number } | undefined;
  private fetching: Promise<void> | undefined;

  constructor(
    readonly settings: OidcSettings,
    private readonly guard: NetGuard,
    private readonly clockSkewSeconds: number,
  ) {}

  /** The discovery document, fetched once (again after a failure). */
  metadata(): Promise<Discovery> {
    this.discovery ??= this.discover().catch((e: unknown) => {
      this.discovery = undefined;
      throw e;
    });
    return this.discovery;
  }

  private async discover(): Promise<Discovery> {
    const url = `${this.settings.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
    const { status, json } = await guardedJson(this.guard, url);
    if (status !== 200) throw new Error(`discovery at ${url} answered ${status}`);
    const d = json as Partial<Discovery>;
    if (d.issuer !== this.settings.issuer) throw new Error(`discovery at ${url} names the issuer "${String(d.issuer)}", not "${this.settings.issuer}"`);
    for (const field of ["authorization_endpoint", "token_endpoint", "jwks_uri"] as const) {
      if (typeof d[field] !== "string") throw new Error(`discovery at ${url} has no ${field}`);
    }
    return d as Discovery;
  }

  private async refreshKeys(force: boolean): Promise<void> {
    const now = Date.now();
    if (this.keys && !force && now - this.keys.at < JWKS_MAX_AGE_MS) return;
    if (this.keys && force && now - this.keys.at < JWKS_COOLDOWN_MS) return;
    this.fetching ??= (async () => {
      try {
        const { jwks_uri } = await this.metadata();
        const { status, json } = await guardedJson(this.guard, jwks_uri);
        if (status !== 200 || !Array.isArray((json as JSONWebKeySet | undefined)?.keys))
          throw new Error(`the key set at ${jwks_uri} answered ${status} without keys`);
        const set = json as JSONWebKeySet;
        this.keys = { set: createLocalJWKSet(set), kids: new Set(set.keys.map((k) => k.kid ?? "")), at: Date.now() };
      } finally {
        this.fetching = undefined;
      }
    })();
    await this.fetching;
  }

  /** Verifies a token of this provider: signature, issuer, one of our audiences, times with skew, and the nonce when given. */
  async verify(token: string, options: { nonce?: string; audience?: string } = {}): Promise<IdentityClaims> {
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw new TokenRefused("the token is not a JWT");
    }
    // A kid we do not hold: the provider may have rotated its keys since we fetched them.
    await this.refreshKeys(kid !== undefined && this.keys !== undefined && !this.keys.kids.has(kid));
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys!.set, {
        issuer: this.settings.issuer,
        audience: options.audience ?? [...this.settings.audiences],
        clockTolerance: this.clockSkewSeconds,
        requiredClaims: ["exp", "sub"],
      }));
    } catch (e) {
      throw refusal(e);
    }
    if (options.nonce !== undefined && payload.nonce !== options.nonce) throw new TokenRefused("the ID token's nonce does not match the sign-in's");
    const claims = claimsOf(this.settings.issuer, payload);
    if (this.settings.requireVerifiedEmail && !claims.emailVerified) {
      throw new TokenRefused(`the provider does not say the email ${claims.email ? `"${claims.email}" ` : ""}is verified (email_verified)`);
    }
    return claims;
  }

  /** Exchanges an authorization code (with its PKCE verifier) for the ID token, verified. */
  async exchange(code: string, verifier: string, redirectUri: string, nonce: string): Promise<IdentityClaims> {
    const { token_endpoint } = await this.metadata();
    const body = new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: verifier });
    const basic = Buffer.from(`${encodeURIComponent(this.settings.clientId)}:${encodeURIComponent(this.settings.clientSecret)}`).toString("base64");
    const { status, json } = await guardedJson(this.guard, token_endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json", authorization: `Basic ${basic}` },
      body: Buffer.from(body.toString()),
    });
    const answer = json as { id_token?: unknown; error?: unknown; error_description?: unknown };
    if (status !== 200 || typeof answer.id_token !== "string") {
      throw new TokenRefused(
        `the provider refused the code: ${String(answer.error ?? status)}${answer.error_description ? ` (${String(answer.error_description)})` : ""}`,
      );
    }
    // An ID token is for this client alone.
    return this.verify(answer.id_token, { nonce, audience: this.settings.clientId });
  }
}

/** The development issuer of the embedded mode: its own key in the data folder. */
class DevIssuer {
  private constructor(
    readonly issuer: string,
    private readonly audience: string,
    private readonly key: Awaited<ReturnType<typeof importJWK>>,
    private readonly clockSkewSeconds: number,
  ) {}

  static async create(config: Config, issuer: string, audience: string): Promise<DevIssuer> {
    const key = await importJWK((await devKeyPair(config.dataDir)).publicJwk, "ES256");
    return new DevIssuer(issuer, audience, key, config.identity.clockSkewSeconds);
  }

  async verify(token: string): Promise<IdentityClaims> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        issuer: this.issuer,
        audience: this.audience,
        clockTolerance: this.clockSkewSeconds,
        requiredClaims: ["exp"],
      });
      return claimsOf(this.issuer, payload);
    } catch (e) {
      throw refusal(e);
    }
  }
}

/** Bearer session tokens: each goes to the issuer its `iss` names, if we trust that issuer. */
export class SessionVerifier {
  private constructor(
    private readonly dev: DevIssuer | undefined,
    readonly oidc: OidcProvider | undefined,
  ) {}

  static async create(config: Config, guard: NetGuard): Promise<SessionVerifier> {
    const { devIssuer, oidc } = config.identity;
    const dev = devIssuer ? await DevIssuer.create(config, devIssuer.issuer, devIssuer.audience) : undefined;
    return new SessionVerifier(dev, oidc ? new OidcProvider(oidc, guard, config.identity.clockSkewSeconds) : undefined);
  }

  /** The identity a valid token carries; TokenRefused with the reason otherwise. */
  async verify(token: string): Promise<IdentityClaims> {
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      throw new TokenRefused("the token is not a JWT");
    }
    if (this.dev && iss === this.dev.issuer) return this.dev.verify(token);
    if (this.oidc && iss === this.oidc.settings.issuer) return this.oidc.verify(token);
    throw new TokenRefused(`the issuer "${String(iss)}" is not trusted here`);
  }
}

/** Mints a session token from the embedded development issuer (`media token --email`). */
export async function mintDevToken(config: Config, email: string, ttlSeconds = 12 * 3600): Promise<string> {
  const dev = config.identity.devIssuer;
  if (!dev) throw new Error("the development issuer is off (MEDIA_DEV_ISSUER, embedded mode only): sign in through MEDIA_OIDC_ISSUER");
  const { privateJwk } = await devKeyPair(config.dataDir);
  const key = await importJWK(privateJwk, "ES256");
  return new SignJWT({ email, email_verified: true })
    .setProtectedHeader({ alg: "ES256" })
    .setIssuer(dev.issuer)
    .setAudience(dev.audience)
    .setSubject(email.toLowerCase())
    .setIssuedAt()
    .setExpirationTime(`${ttlSeconds}s`)
    .sign(key);
}
