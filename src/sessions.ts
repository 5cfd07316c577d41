// Sign-in state held by the service, in the store so every gateway of a cluster honours it:
// sessions (the cookie names one by a random token; the store keeps only its hash), the pending
// OpenID Connect sign-ins (state, nonce and the sealed PKCE verifier, single use), and the
// one-time sign-in links (stateless, signed with the server key; their use is recorded once).
import { createHash, randomBytes } from "node:crypto";
import { VersionConflict } from "./errors.js";
import { randomToken } from "./ids.js";
import type { SecretBox } from "./secrets.js";
import { sha256 } from "./secrets.js";
import type { Store } from "./store/port.js";

export const SESSION_COOKIE = "media_session";
const SESSIONS = "sessions";
const ATTEMPTS = "sign_in_attempts";
const LINKS_USED = "sign_in_links_used";
/** lastSeenAt is written at most this often per session: one store write a minute, not one a call. */
const TOUCH_MS = 60_000;
const ATTEMPT_TTL_MS = 10 * 60_000;
export const LINK_TTL_MS = 15 * 60_000;

export type SignInMethod = "oidc" | "link";

export interface SessionRecord {
  readonly userId: string;
  readonly via: SignInMethod;
  readonly createdAt: number;
  readonly lastSeenAt: number;
  /** The absolute end; the idle end is lastSeenAt + idle. */
  readonly endsAt: number;
  readonly address: string;
  readonly userAgent: string;
}

export interface Session {
  /** The hash of the cookie's token: the session's name in the store and in logs. */
  readonly id: string;
  readonly record: SessionRecord;
}

export interface PendingSignIn {
  readonly nonce: string;
  /** The PKCE code verifier, sealed with the server key. */
  readonly sealedVerifier: string;
  readonly returnTo: string;
  readonly createdAt: number;
}

/**
 * A one-time link token for the user with this email: signed with the server key, valid 15
 * minutes, single use. It needs no store, so `media login-link` works beside a running server.
 */
export function mintSignInLink(box: SecretBox, email: string, now = Date.now()): string {
  const payload = Buffer.from(JSON.stringify({ e: email.toLowerCase(), x: now + LINK_TTL_MS, n: randomToken(16) })).toString("base64url");
  return `${payload}.${box.sign(`link:${payload}`)}`;
}

export class Sessions {
  constructor(
    private readonly store: Store,
    private readonly box: SecretBox,
    private readonly idleMs: number,
    private readonly absoluteMs: number,
  ) {}

  // ── sessions ──

  /** A new session for the user; the token goes into the cookie and nowhere else. */
  async start(userId: string, via: SignInMethod, address: string, userAgent: string): Promise<{ token: string; session: Session }> {
    const token = randomToken(43);
    const now = Date.now();
    const record: SessionRecord = { userId, via, createdAt: now, lastSeenAt: now, endsAt: now + this.absoluteMs, address, userAgent: userAgent.slice(0, 200) };
    const id = sha256(`session:${token}`);
    await this.store.commit({ writes: [{ table: SESSIONS, id, value: record, expectedVersion: 0, expiresAt: Math.min(record.endsAt, now + this.idleMs) }] });
    return { token, session: { id, record } };
  }

  /** The live session a cookie token names, or why there is none. */
  async resolve(token: string): Promise<Session | "ended"> {
    if (!/^[0-9A-Za-z]{43}$/.test(token)) return "ended";
    const id = sha256(`session:${token}`);
    const stored = await this.store.get<SessionRecord>(SESSIONS, id);
    const now = Date.now();
    if (!stored) return "ended";
    const r = stored.value;
    if (now >= r.endsAt || now >= r.lastSeenAt + this.idleMs) return "ended";
    if (now - r.lastSeenAt >= TOUCH_MS) {
      const touched = { ...r, lastSeenAt: now };
      // A lost race is another gateway touching it at the same moment: the same answer.
      await this.store
        .commit({ writes: [{ table: SESSIONS, id, value: touched, expectedVersion: stored.version, expiresAt: Math.min(r.endsAt, now + this.idleMs) }] })
        .catch((e: unknown) => {
          if (!(e instanceof VersionConflict)) throw e;
        });
      return { id, record: touched };
    }
    return { id, record: r };
  }

  async end(id: string): Promise<void> {
    await this.store.commit({ writes: [{ table: SESSIONS, id, value: null }] });
  }

  // ── OpenID Connect sign-ins in flight ──

  /** Starts a sign-in: the state names it, the nonce and PKCE verifier go with it. */
  async begin(returnTo: string): Promise<{ state: string; nonce: string; challenge: string }> {
    const state = randomToken(32);
    const nonce = randomToken(32);
    const verifier = randomBytes(32).toString("base64url");
    const challenge = createHash("sha256").update(verifier).digest("base64url");
    const value: PendingSignIn = { nonce, sealedVerifier: this.box.encrypt(verifier), returnTo, createdAt: Date.now() };
    await this.store.commit({ writes: [{ table: ATTEMPTS, id: sha256(`state:${state}`), value, expectedVersion: 0, expiresAt: Date.now() + ATTEMPT_TTL_MS }] });
    return { state, nonce, challenge };
  }

  /** Takes the sign-in a state names, once: a second callback with it finds nothing. */
  async take(state: string): Promise<{ nonce: string; verifier: string; returnTo: string } | undefined> {
    const id = sha256(`state:${state}`);
    const stored = await this.store.get<PendingSignIn>(ATTEMPTS, id);
    if (!stored) return undefined;
    try {
      await this.store.commit({ writes: [{ table: ATTEMPTS, id, value: null, expectedVersion: stored.version }] });
    } catch (e) {
      if (e instanceof VersionConflict) return undefined;
      throw e;
    }
    return { nonce: stored.value.nonce, verifier: this.box.decrypt(stored.value.sealedVerifier), returnTo: stored.value.returnTo };
  }

  // ── one-time links ──

  /** The email a link names, spending the link; why not otherwise. */
  async spendLink(token: string): Promise<{ email: string } | { refused: string }> {
    const link = this.readLink(token);
    if (!link) return { refused: "the sign-in link is not valid" };
    if (Date.now() >= link.expires) return { refused: "the sign-in link has expired; ask for a new one (media login-link)" };
    try {
      await this.store.commit({
        writes: [{ table: LINKS_USED, id: link.nonce, value: { usedAt: Date.now() }, expectedVersion: 0, expiresAt: link.expires + 60_000 }],
      });
    } catch (e) {
      if (e instanceof VersionConflict) return { refused: "the sign-in link was already used; ask for a new one (media login-link)" };
      throw e;
    }
    return { email: link.email };
  }

  /** Whether a link token is well formed, signed and unexpired (to show its page; spending decides). */
  peekLink(token: string): boolean {
    const link = this.readLink(token);
    return link !== undefined && Date.now() < link.expires;
  }

  /** A link token's claims when it is well formed and signed with the server key. */
  private readLink(token: string): { email: string; expires: number; nonce: string } | undefined {
    const [payload = "", signature = ""] = token.split(".");
    if (!payload || !signature || !this.box.verify(`link:${payload}`, signature)) return undefined;
    let claims: { e?: unknown; x?: unknown; n?: unknown };
    try {
      claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as typeof claims;
    } catch {
      return undefined;
    }
    if (typeof claims.e !== "string" || typeof claims.x !== "number" || typeof claims.n !== "string") return undefined;
    return { email: claims.e, expires: claims.x, nonce: claims.n };
  }
}
