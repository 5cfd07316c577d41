// Sign-in for people, as edge routes beside the API: OpenID Connect (authorization code with PKCE)
// against the configured provider, the one-time links of the embedded mode, the account page, and
// sign-out here or everywhere. A sign-in ends in a session cookie (HttpOnly, SameSite=Lax, Secure
// behind TLS) naming a session held in the store, so every gateway of a cluster honours it.
import { ConnectError } from "@connectrpc/connect";
import type { Directory, UserRecord } from "../src/directory.js";
import { TokenRefused, type OidcProvider } from "../src/identity.js";
import type { Logger } from "../src/log.js";
import { SESSION_COOKIE, type Sessions, type SignInMethod } from "../src/sessions.js";
import type { RatePolicy } from "../src/config.js";
import { cookieValue, fromThisService, isStaff, liveSession, userOf } from "./access.js";
import type { EdgeRequest, EdgeResponse, EdgeRoute } from "./edge.js";
import { addressKey, TokenBuckets } from "./rate-limit.js";

export interface AuthEdgeDeps {
  readonly directory: Directory;
  readonly sessions: Sessions;
  readonly oidc: OidcProvider | undefined;
  readonly staffEmails: readonly string[];
  /** The service's public base URL (MEDIA_PUBLIC_URL, else the listening address). */
  readonly publicUrl: () => string;
  readonly sessionAbsoluteSeconds: number;
  readonly log: Logger;
  /** Sign-in attempts admitted per address and sign-ins per account; undefined is no limit. */
  readonly limits: { readonly perAddress: RatePolicy | undefined; readonly perAccount: RatePolicy | undefined };
}

const PAGE_CSP =
  "default-src 'none'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' https: data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const STYLE =
  "body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}" +
  "main{max-width:32rem;margin:4rem auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 4px #0002}" +
  "h1{font-size:1.5rem;margin-top:0}button,a.button{font:inherit;display:inline-block;padding:.5rem 1rem;margin:.25rem .5rem .25rem 0;border-radius:6px;" +
  "border:1px solid #1d4ed8;background:#1d4ed8;color:#fff;text-decoration:none;cursor:pointer}" +
  "button.secondary{background:#fff;color:#1d4ed8}p.error{color:#9b1c1c}dl{display:grid;grid-template-columns:auto 1fr;gap:.25rem 1rem}dt{font-weight:600}";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(status: number, title: string, body: string, extra: [string, string][] = []): EdgeResponse {
  const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)} · media</title><style>${STYLE}</style></head>
<body><main>
<h1>${escapeHtml(title)}</h1>
${body}
</main></body>
</html>
`;
  const header = new Headers([
    ["content-type", "text/html; charset=utf-8"],
    ["cache-control", "no-store"],
    ["content-security-policy", PAGE_CSP],
    ["x-content-type-options", "nosniff"],
    // same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" on our own form posts.
    ["referrer-policy", "same-origin"],
    ...extra,
  ]);
  return { status, header, body: new TextEncoder().encode(html) };
}

const redirect = (location: string, extra: [string, string][] = []): EdgeResponse => ({
  status: 303,
  header: new Headers([["location", location], ["cache-control", "no-store"], ...extra]),
});

/** A return path of this site only: "/x", never "//host" or a URL. */
function safeReturn(raw: string | null): string {
  return raw && /^\/(?![/\\])[\x21-\x7e]*$/.test(raw) ? raw : "/";
}

function sessionCookie(deps: AuthEdgeDeps, token: string, maxAge: number): [string, string] {
  const secure = deps.publicUrl().startsWith("https:") ? "; Secure" : "";
  return ["set-cookie", `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`];
}

/** A form post of our own pages. */
function fromOurPages(deps: AuthEdgeDeps, req: EdgeRequest): boolean {
  let publicOrigin: string | undefined;
  try {
    publicOrigin = new URL(deps.publicUrl()).origin;
  } catch {
    publicOrigin = undefined;
  }
  return fromThisService(req.header.get("origin"), req.header.get("host"), publicOrigin);
}

export function authRoutes(deps: AuthEdgeDeps): EdgeRoute[] {
  const byAddress = deps.limits.perAddress && new TokenBuckets(deps.limits.perAddress);
  const byAccount = deps.limits.perAccount && new TokenBuckets(deps.limits.perAccount);
  const redirectUri = () => `${deps.publicUrl()}/auth/callback`;

  const tooMany = (req: EdgeRequest, what: string): EdgeResponse => {
    deps.log.warn({ address: req.clientAddress, what }, "sign-in attempts rate-limited");
    return page(429, "Too many sign-in attempts", `<p class="error">Too many sign-in attempts ${escapeHtml(what)}. Wait a minute and try again.</p>`, [
      ["retry-after", "60"],
    ]);
  };
  const addressAllowed = (req: EdgeRequest) => !byAddress || byAddress.take(addressKey(req.clientAddress)).allowed;

  /** A session for a user who may sign in; the refusal page otherwise. */
  async function signIn(req: EdgeRequest, user: UserRecord, via: SignInMethod, returnTo: string): Promise<EdgeResponse> {
    if (byAccount && !byAccount.take(user.id).allowed) return tooMany(req, "for this account");
    if (user.status !== "active") {
      deps.log.info({ user_id: user.id, address: req.clientAddress, via, status: user.status }, "sign-in refused: account not active");
      return page(403, "Sign-in refused", `<p class="error">This account is ${escapeHtml(user.status)}.</p>`);
    }
    const { token, session } = await deps.sessions.start(user.id, via, req.clientAddress, req.header.get("user-agent") ?? "");
    deps.log.info({ user_id: user.id, address: req.clientAddress, via, session: session.id.slice(0, 12) }, "signed in");
    return redirect(returnTo, [sessionCookie(deps, token, deps.sessionAbsoluteSeconds)]);
  }

  /** The signed-in user of a request's cookie, if any. */
  async function current(req: EdgeRequest): Promise<{ user: UserRecord; sessionId: string } | undefined> {
    const token = cookieValue(req.header.get("cookie"), SESSION_COOKIE);
    return token ? liveSession({ signIns: deps.sessions, directory: deps.directory, log: deps.log }, token, req.clientAddress) : undefined;
  }

  const clearCookie = (): [string, string] => sessionCookie(deps, "", 0);

  return [
    {
      method: "GET",
      pattern: "/auth/login",
      async handler(req) {
        if (!deps.oidc) {
          return page(
            404,
            "Sign-in with a provider is off",
            "<p>No OpenID Connect provider is configured (MEDIA_OIDC_ISSUER). Ask the operator for a one-time sign-in link (<code>media login-link --email you@example.com</code>).</p>",
          );
        }
        if (!addressAllowed(req)) return tooMany(req, "from this address");
        const metadata = await deps.oidc.metadata().catch((e: unknown) => {
          deps.log.error({ err: e }, "the identity provider's discovery failed");
          return undefined;
        });
        if (!metadata) return page(503, "Sign-in unavailable", '<p class="error">The identity provider cannot be reached. Try again shortly.</p>');
        const { state, nonce, challenge } = await deps.sessions.begin(safeReturn(req.query.get("return_to")));
        const url = new URL(metadata.authorization_endpoint);
        const s = deps.oidc.settings;
        for (const [k, v] of Object.entries({
          response_type: "code",
          client_id: s.clientId,
          redirect_uri: redirectUri(),
          scope: s.scopes,
          state,
          nonce,
          code_challenge: challenge,
          code_challenge_method: "S256",
        })) {
          url.searchParams.set(k, v);
        }
        return redirect(url.href);
      },
    },
    {
      method: "GET",
      pattern: "/auth/callback",
      async handler(req) {
        if (!deps.oidc) return page(404, "Sign-in with a provider is off", "<p>No OpenID Connect provider is configured.</p>");
        if (!addressAllowed(req)) return tooMany(req, "from this address");
        const q = req.query;
        const pending = await deps.sessions.take(q.get("state") ?? "");
        if (!pending) {
          deps.log.info({ address: req.clientAddress }, "sign-in refused: unknown, used or expired state");
          return page(
            400,
            "Sign-in failed",
            '<p class="error">This sign-in has expired or was already used.</p><p><a class="button" href="/auth/login">Sign in again</a></p>',
          );
        }
        const error = q.get("error");
        const code = q.get("code");
        if (error || !code) {
          deps.log.info({ address: req.clientAddress, error }, "sign-in refused by the provider");
          return page(
            400,
            "Sign-in failed",
            `<p class="error">The provider answered: ${escapeHtml(error ?? "no code")}.</p><p><a class="button" href="/auth/login">Try again</a></p>`,
          );
        }
        let user: UserRecord;
        try {
          const claims = await deps.oidc.exchange(code, pending.verifier, redirectUri(), pending.nonce);
          user = await userOf(deps, claims);
        } catch (e) {
          if (!(e instanceof TokenRefused) && !(e instanceof ConnectError)) throw e;
          const reason = e instanceof TokenRefused ? e.reason : e.rawMessage;
          deps.log.info({ address: req.clientAddress, reason }, "sign-in refused");
          return page(401, "Sign-in failed", `<p class="error">${escapeHtml(reason)}</p><p><a class="button" href="/auth/login">Try again</a></p>`);
        }
        return signIn(req, user, "oidc", pending.returnTo);
      },
    },
    {
      method: "GET",
      pattern: "/auth/link/:token",
      async handler(req) {
        // Spending takes a button press: a chat's link preview fetching the page spends nothing.
        if (!deps.sessions.peekLink(req.params.token!)) {
          return page(400, "Sign-in link not valid", '<p class="error">This sign-in link is not valid or has expired. Ask for a new one.</p>');
        }
        return page(200, "Sign in", `<p>This one-time link signs you in to media.</p><form method="post"><button type="submit">Sign in</button></form>`);
      },
    },
    {
      method: "POST",
      pattern: "/auth/link/:token",
      maxBodyBytes: 1024,
      async handler(req) {
        if (!fromOurPages(deps, req)) return page(403, "Sign-in refused", '<p class="error">Use the sign-in button of the link\'s page.</p>');
        if (!addressAllowed(req)) return tooMany(req, "from this address");
        const spent = await deps.sessions.spendLink(req.params.token!);
        if ("refused" in spent) {
          deps.log.info({ address: req.clientAddress, reason: spent.refused }, "sign-in refused");
          return page(400, "Sign-in failed", `<p class="error">${escapeHtml(spent.refused)}</p>`);
        }
        const user = await deps.directory.userByEmail(spent.email);
        if (!user) {
          deps.log.info({ address: req.clientAddress, email: spent.email }, "sign-in refused: no user with the link's email");
          return page(400, "Sign-in failed", '<p class="error">No account has this email.</p>');
        }
        return signIn(req, user, "link", "/");
      },
    },
    {
      method: "GET",
      pattern: "/account",
      async handler(req) {
        const me = await current(req);
        if (!me) {
          const how = deps.oidc
            ? '<p><a class="button" href="/auth/login?return_to=/account">Sign in</a></p>'
            : "<p>Ask the operator for a one-time sign-in link (<code>media login-link --email you@example.com</code>).</p>";
          return page(200, "Not signed in", `<p>You are not signed in.</p>${how}`);
        }
        const u = me.user;
        const name = `${u.firstName} ${u.lastName}`.trim();
        return page(
          200,
          "Your account",
          `<p>Signed in as <strong>${escapeHtml(u.email || u.id)}</strong>.</p>
<dl><dt>Name</dt><dd>${escapeHtml(name || "—")}</dd><dt>User id</dt><dd>${escapeHtml(u.id)}</dd><dt>Approval</dt><dd>${escapeHtml(u.approvalStatus)}</dd>${isStaff(deps, u) ? "<dt>Role</dt><dd>operator staff</dd>" : ""}</dl>
<p><a class="button" href="/">Open the console</a></p>
<form method="post" action="/auth/logout"><button type="submit">Sign out</button></form>
<form method="post" action="/auth/logout-all"><button type="submit" class="secondary">Sign out everywhere</button></form>`,
        );
      },
    },
    ...(["/auth/logout", "/auth/logout-all"] as const).map((pattern): EdgeRoute => ({
      method: "POST",
      pattern,
      maxBodyBytes: 1024,
      async handler(req) {
        if (!fromOurPages(deps, req)) return page(403, "Sign-out refused", '<p class="error">Use the buttons of the account page.</p>');
        const me = await current(req);
        if (me) {
          if (pattern === "/auth/logout-all") {
            await deps.directory.changeUser(me.user.id, (u) => ({ ...u, sessionsValidAfter: Date.now() }));
          }
          await deps.sessions.end(me.sessionId);
          deps.log.info(
            { user_id: me.user.id, address: req.clientAddress, session: me.sessionId.slice(0, 12), everywhere: pattern === "/auth/logout-all" },
            "signed out",
          );
        }
        return redirect("/account", [clearCookie()]);
      },
    })),
  ];
}
