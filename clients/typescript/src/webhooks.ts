// Verifying a signed webhook delivery (Node): `Media-Signature: t=<unix>,v1=<hex>[,v1=<hex>]`, each
// v1 the HMAC-SHA256 of `<t>.<raw body>` keyed by an endpoint secret (two entries during the 24 h
// after a rotation). Pass every secret you hold (new and old while rotating), the raw body exactly as
// received, and take the event only from what this returns.
import { createHmac, timingSafeEqual } from "node:crypto";

/** Why a delivery was refused: the header is unreadable, its time is outside the tolerance, or no v1 matches. */
export type WebhookFailure = "malformed" | "timestamp" | "mismatch";

export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
  constructor(
    readonly reason: WebhookFailure,
    message: string,
  ) {
    super(message);
  }
}

/** The delivered envelope: `data` is the resource (a job, an output, a video) as the API returns it. */
export interface WebhookEvent<T = Record<string, unknown>> {
  readonly id: string;
  readonly object: "event";
  readonly type: string;
  readonly api_version: string;
  readonly created_at: string;
  readonly data: T;
}

export interface VerifyOptions {
  /** Largest distance between the signature's time and now, either way; default 300 s. */
  readonly toleranceSeconds?: number;
  /** Now in unix seconds (tests); default the clock. */
  readonly nowSeconds?: number;
}

/** The Media-Signature header's timestamp and v1 entries; throws "malformed" when it has none or two times. */
function parseHeader(header: string | readonly string[] | null | undefined): { t: number; signatures: string[] } {
  if (typeof header !== "string" || header === "") throw new WebhookVerificationError("malformed", "no Media-Signature header (or more than one)");
  let t: string | undefined;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const at = part.indexOf("=");
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === "t") {
      if (t !== undefined) throw new WebhookVerificationError("malformed", "Media-Signature has two timestamps");
      t = value;
    } else if (key === "v1") signatures.push(value);
  }
  if (t === undefined || !/^\d{1,12}$/.test(t)) throw new WebhookVerificationError("malformed", "Media-Signature has no unix timestamp t=");
  if (signatures.length === 0) throw new WebhookVerificationError("malformed", "Media-Signature has no v1 entry");
  return { t: Number(t), signatures };
}

/**
 * Checks a delivery and answers its event; throws WebhookVerificationError (answer 400) otherwise.
 * `rawBody` must be the bytes as received (a Buffer, or the string they decode to), not re-serialized JSON.
 */
export function verifyWebhook<T = Record<string, unknown>>(
  rawBody: string | Uint8Array,
  header: string | readonly string[] | null | undefined,
  secrets: string | readonly string[],
  options: VerifyOptions = {},
): WebhookEvent<T> {
  const keys = typeof secrets === "string" ? [secrets] : secrets;
  if (keys.length === 0 || keys.some((k) => !k)) throw new TypeError("verifyWebhook needs at least one non-empty secret");
  const { t, signatures } = parseHeader(header);
  const now = options.nowSeconds ?? Date.now() / 1000;
  const tolerance = options.toleranceSeconds ?? 300;
  if (!(Math.abs(now - t) <= tolerance))
    throw new WebhookVerificationError("timestamp", `the signature's time is ${Math.round(now - t)} s from now (tolerance ${tolerance} s)`);
  const body = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  let match = false;
  // Every secret against every entry, so the time taken does not tell which matched.
  for (const key of keys) {
    const expected = createHmac("sha256", key).update(`${t}.`).update(body).digest();
    for (const candidate of signatures) {
      if (!/^[0-9a-f]{64}$/i.test(candidate)) continue;
      if (timingSafeEqual(expected, Buffer.from(candidate, "hex"))) match = true;
    }
  }
  if (!match) throw new WebhookVerificationError("mismatch", "no v1 signature matches the secrets given");
  return JSON.parse(body.toString("utf8")) as WebhookEvent<T>;
}
