// Webhook signatures: the Media-Signature scheme of signed endpoint deliveries (Stripe's and Mux's
// layout, so receivers reuse their verifiers), the legacy X-Webhook-Signature, and new secrets.
import { createHmac, timingSafeEqual } from "node:crypto";
import { randomToken } from "../ids.js";

const SECRET_PREFIX = "whsec_";
const SECRET_BODY_LENGTH = 32;
/** Receivers reject a signature whose timestamp is further than this from their clock. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

function hmacHex(secret: string, data: string): string {
  return createHmac("sha256", secret).update(data, "utf8").digest("hex");
}

/**
 * The Media-Signature header: `t=<t>,v1=<hex>[,v1=<hex>]`, one v1 per active secret in the given
 * order (two during a rotation overlap). Each hex is HMAC-SHA256 of `<t>.<raw body>` keyed by the
 * whole secret string, `whsec_` included.
 */
export function mediaSignature(secrets: readonly string[], rawBody: string, timestampSeconds: number): string {
  if (secrets.length === 0) throw new Error("a Media-Signature needs at least one secret");
  if (!Number.isFinite(timestampSeconds) || timestampSeconds < 0) throw new RangeError(`signature timestamp ${timestampSeconds} is not a unix time`);
  const t = Math.floor(timestampSeconds);
  return [`t=${t}`, ...secrets.map((secret) => `v1=${hmacHex(secret, `${t}.${rawBody}`)}`)].join(",");
}

/**
 * What a receiver does (Stripe's and Mux's verifiers): parse `t` and every `v1`, compute the HMAC
 * of `${t}.${body}` with its secret, compare it in constant time against each v1, and refuse a
 * timestamp more than `toleranceSeconds` away from `nowSeconds` (either way: a clock ahead of
 * ours is as suspect as a replay). Unknown schemes (v0, v2…) are ignored, as theirs do.
 * Any header, even a missing or repeated one (a Node header value may be undefined or an array),
 * gives false rather than an exception: a receiver answers 400, not 500.
 */
export function verifyMediaSignature(
  header: string | readonly string[] | null | undefined,
  rawBody: string,
  secret: string,
  toleranceSeconds = DEFAULT_TOLERANCE_SECONDS,
  nowSeconds = Date.now() / 1000,
): boolean {
  if (typeof header !== "string") return false;
  let t: string | undefined;
  const candidates: string[] = [];
  for (const part of header.split(",")) {
    const at = part.indexOf("=");
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === "t") {
      if (t !== undefined) return false; // two timestamps: which one was signed is ambiguous
      t = value;
    } else if (key === "v1") candidates.push(value);
  }
  if (t === undefined || !/^\d{1,12}$/.test(t) || candidates.length === 0) return false;
  if (!(Math.abs(nowSeconds - Number(t)) <= toleranceSeconds)) return false;
  const expected = Buffer.from(hmacHex(secret, `${t}.${rawBody}`), "hex");
  let match = false;
  // Every candidate is compared, so the time taken does not say which one matched.
  for (const candidate of candidates) {
    if (!/^[0-9a-f]{64}$/i.test(candidate)) continue;
    if (timingSafeEqual(expected, Buffer.from(candidate, "hex"))) match = true;
  }
  return match;
}

/** X-Webhook-Signature of the legacy per-app webhook: lowercase hex HMAC-SHA256 of the raw body. */
export function legacySignature(secret: string, rawBody: string): string {
  return hmacHex(secret, rawBody);
}

/** A new signing secret: `whsec_` and 32 random base62 characters (about 190 bits). */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomToken(SECRET_BODY_LENGTH);
}
