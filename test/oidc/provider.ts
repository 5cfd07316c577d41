// A real OpenID Connect provider for tests: panva's certified oidc-provider (9.x), in this process,
// on http://127.0.0.1:PORT. Authorization code flow with PKCE (S256, required), client_secret_basic
// or client_secret_post, scopes openid email profile, ID tokens signed RS256 (or ES256) with a kid,
// carrying email, email_verified, given_name, family_name and the nonce.
//
// Signing in is the provider's own development login page (features.devInteractions):
//   1. the authorization endpoint (/auth) redirects (303) to /interaction/:uid, a page titled "Sign-in"
//      with form input[name="login"] (the login name: the account's sub), input[name="password"] (any
//      non-empty value) and button[type="submit"] "Sign-in" (also `.login-submit`);
//   2. submitting it redirects to /auth/:uid, which redirects to the client's redirect_uri with
//      code, state and iss. There is no consent page: loadExistingGrant grants openid email profile.
// A login name without an account (setAccount) is not signed in: the login page comes back.
// The pages load nothing from the network (the Google Fonts import of their stylesheet is removed).
//
// rotateKeys() signs with a new key from then on; the previous keys stay in the JWKS (after the new
// one) so tokens signed before still verify, unless rotateKeys({ dropPrevious: true }). Rotation swaps
// in a new Provider on the same server; sessions, interactions, codes and tokens live in a store
// the providers share, so a sign-in under way survives it.
import { generateKeyPair, randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
// @ts-expect-error -- oidc-provider ships no type declarations (@types/oidc-provider is not installed); see OidcProviderApp.
import ProviderModule from "oidc-provider";

export interface OidcAccount {
  email: string;
  email_verified: boolean;
  given_name?: string;
  family_name?: string;
}
export interface OidcClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}
export interface RunningProvider {
  /** http://127.0.0.1:PORT (no trailing slash); discovery at `${issuer}/.well-known/openid-configuration`. */
  readonly issuer: string;
  /** Adds or replaces the account a login name (== sub) signs in as; read at sign-in and at the token endpoint. */
  setAccount(sub: string, account: OidcAccount): void;
  /** Signs with a new key (a new kid) from now on; returns its kid. The previous keys stay published unless dropPrevious. */
  rotateKeys(opts?: { dropPrevious?: boolean }): Promise<string>;
  /** The kid of the key that signs ID tokens now. */
  currentKid(): string;
  close(): Promise<void>;
}
export interface StartOidcProviderOptions {
  clients: OidcClient[];
  accounts?: Record<string, OidcAccount>;
  /** Lifetime of ID tokens (default 3600). */
  idTokenTtlSeconds?: number;
  /** Signing algorithm of ID tokens (default RS256). */
  alg?: "RS256" | "ES256";
}

/** The part of oidc-provider's Provider (a Koa application) used here. */
interface OidcProviderApp {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): unknown;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  Grant: new (init: { clientId: string; accountId: string }) => { addOIDCScope(scope: string): void; save(): Promise<string> };
}
interface KoaContext {
  body: unknown;
  response: { is(type: string): string | false | null };
}
interface InteractionContext {
  oidc: {
    client: { clientId: string };
    session: { accountId?: string; grantIdFor(clientId: string): string | undefined };
    result?: { consent?: { grantId?: string } };
    provider: OidcProviderApp & { Grant: { find(id: string): Promise<unknown> } };
  };
}
const Provider = ProviderModule as new (issuer: string, configuration: object) => OidcProviderApp;

type Jwk = Record<string, unknown> & { kid: string };

async function signingKey(alg: "RS256" | "ES256"): Promise<Jwk> {
  const { privateKey } =
    alg === "RS256" ? await promisify(generateKeyPair)("rsa", { modulusLength: 2048 }) : await promisify(generateKeyPair)("ec", { namedCurve: "P-256" });
  return { ...privateKey.export({ format: "jwk" }), kid: randomUUID(), alg, use: "sig" };
}

const SCOPES = "openid email profile";

export async function startOidcProvider(opts: StartOidcProviderOptions): Promise<RunningProvider> {
  const alg = opts.alg ?? "RS256";
  const accounts = new Map(Object.entries(opts.accounts ?? {}));
  const store = new Map<string, { payload: Record<string, unknown>; expiresAt: number }>();
  const cookieKeys = [randomBytes(32).toString("base64url")];
  let keys: Jwk[] = [await signingKey(alg)];
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;

  const server = createServer((req, res) => {
    if (handler) handler(req, res);
    else res.writeHead(503).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const configuration = () => ({
    adapter: storeAdapter(store),
    jwks: { keys: keys.map((k) => ({ ...k })) },
    cookies: { keys: cookieKeys },
    clients: opts.clients.map((c) => ({
      client_id: c.client_id,
      client_secret: c.client_secret,
      redirect_uris: c.redirect_uris,
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic", // client_secret_post is accepted as well
      id_token_signed_response_alg: alg,
    })),
    clientAuthMethods: ["client_secret_basic", "client_secret_post"],
    responseTypes: ["code"],
    scopes: ["openid", "email", "profile"],
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["given_name", "family_name"] },
    // Scope claims in the ID token even though the token endpoint also returns an access token.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    ttl: {
      IdToken: opts.idTokenTtlSeconds ?? 3600,
      AccessToken: 3600,
      AuthorizationCode: 60,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      RefreshToken: 3600,
    },
    async findAccount(ctx: { oidc?: { session?: { accountId?: string; touched?: boolean } } }, sub: string) {
      const session = ctx.oidc?.session;
      if (!accounts.has(sub)) {
        // A login name without an account: sign the session out, so the login page comes back
        // (oidc-provider answers a signed-in session without an account with a server_error).
        if (session?.accountId === sub) {
          delete session.accountId; // its session proxy refuses to set it to undefined
          session.touched = true;
        }
        return undefined;
      }
      return { accountId: sub, claims: async () => ({ sub, ...accounts.get(sub) }) };
    },
    // No consent page: every client gets openid email profile at once.
    async loadExistingGrant(ctx: InteractionContext) {
      const { client, session, result, provider } = ctx.oidc;
      const grantId = result?.consent?.grantId ?? session.grantIdFor(client.clientId);
      if (grantId) return provider.Grant.find(grantId);
      if (!session.accountId) return undefined;
      const grant = new provider.Grant({ clientId: client.clientId, accountId: session.accountId });
      grant.addOIDCScope(SCOPES);
      await grant.save();
      return grant;
    },
    clientBasedCORS: () => false,
    async renderError(ctx: KoaContext, out: Record<string, unknown>) {
      ctx.body = out;
    },
  });

  const build = (): ((req: IncomingMessage, res: ServerResponse) => void) => {
    // Constructing a provider with devInteractions prints a warning meant for production set-ups.
    const warn = console.warn;
    console.warn = (...args: unknown[]) => {
      if (typeof args[0] === "string" && args[0].includes("devInteractions")) return;
      warn(...args);
    };
    let provider: OidcProviderApp;
    try {
      provider = new Provider(issuer, configuration());
    } finally {
      console.warn = warn;
    }
    // The login page's stylesheet imports Google Fonts: no network beyond 127.0.0.1.
    provider.use(async (ctx, next) => {
      await next();
      if (typeof ctx.body === "string" && ctx.response.is("html")) ctx.body = ctx.body.replace(/@import url\(https:\/\/fonts\.googleapis\.com[^)]*\);/g, "");
    });
    provider.on("server_error", (_ctx, err) => console.error("oidc-provider server_error", err));
    return provider.callback();
  };
  handler = build();

  return {
    issuer,
    setAccount(sub, account) {
      accounts.set(sub, { ...account });
    },
    async rotateKeys(rotation) {
      const key = await signingKey(alg);
      keys = rotation?.dropPrevious ? [key] : [key, ...keys]; // the first key of the algorithm signs
      handler = build();
      return key.kid;
    },
    currentKid: () => keys[0]!.kid,
    async close() {
      handler = undefined;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** oidc-provider's storage, in memory, shared by the providers of one fixture (they change at rotation). */
function storeAdapter(store: Map<string, { payload: Record<string, unknown>; expiresAt: number }>) {
  const live = (key: string) => {
    const entry = store.get(key);
    if (entry && entry.expiresAt <= Date.now()) store.delete(key);
    return entry && entry.expiresAt > Date.now() ? entry.payload : undefined;
  };
  return class StoreAdapter {
    constructor(private readonly model: string) {}
    private key(id: string) {
      return `${this.model}:${id}`;
    }
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
      store.set(this.key(id), { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
    }
    async find(id: string) {
      return live(this.key(id));
    }
    async findByUid(uid: string) {
      for (const [key] of store) if (key.startsWith(`${this.model}:`) && live(key)?.uid === uid) return live(key);
      return undefined;
    }
    async findByUserCode(userCode: string) {
      for (const [key] of store) if (key.startsWith(`${this.model}:`) && live(key)?.userCode === userCode) return live(key);
      return undefined;
    }
    async consume(id: string) {
      const payload = live(this.key(id));
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      store.delete(this.key(id));
    }
    async revokeByGrantId(grantId: string) {
      for (const [key, { payload }] of store) if (payload.grantId === grantId) store.delete(key);
    }
  };
}

/**
 * Signs in by plain fetch, as a browser would: follows `authorizationUrl` (the client's authorization
 * request), submits the login form with `login` (any password), and returns the URL the provider finally
 * redirects to (the client's redirect_uri with code, state and iss, or error). The redirect_uri is not fetched.
 */
export async function signInWithFetch(authorizationUrl: string, login: string): Promise<URL> {
  const cookies = new Map<string, string>();
  const send = async (url: URL, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (cookies.size) headers.set("cookie", [...cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const line of res.headers.getSetCookie()) {
      const [pair = "", ...attrs] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const expired = attrs.some((a) => /^\s*expires=/i.test(a) && Date.parse(a.split("=")[1] ?? "") <= Date.now());
      if (expired || eq === pair.length - 1) cookies.delete(name);
      else cookies.set(name, pair.slice(eq + 1).trim());
    }
    return res;
  };
  const origin = new URL(authorizationUrl).origin;
  let url = new URL(authorizationUrl);
  let submitted = false;
  for (let hop = 0; hop < 10; hop++) {
    const res = await send(url);
    const location = res.headers.get("location");
    if (location) {
      await res.body?.cancel();
      url = new URL(location, url);
      if (url.origin !== origin) return url;
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`${url.href}: ${res.status} ${html}`);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action || !html.includes('name="login"')) throw new Error(`${url.href}: no login form in ${html.slice(0, 500)}`);
    if (submitted) throw new Error(`login "${login}" was not signed in (no such account?)`);
    submitted = true;
    const form = await send(new URL(action.replaceAll("&amp;", "&"), url), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ prompt: "login", login, password: "any" }),
    });
    const next = form.headers.get("location");
    await form.body?.cancel();
    if (!next) throw new Error(`${url.href}: the login form answered ${form.status} without a redirect`);
    url = new URL(next, url);
  }
  throw new Error(`too many redirects from ${authorizationUrl}`);
}
