// Playback tokens: Bunny CDN token authentication, HS256 directory (path-based) tokens, so a real
// Bunny CDN can sit in front of our edge. The edge checks the same tokens with verifyDirectoryPath.
//
// Algorithm, as in github.com/BunnyWay/BunnyCDN.TokenAuthentication at commit
// 48ff1af0879c61b69a42c8db5ead76f849f5ef87 (nodejs/token.js, python3/token.py, go/token.go):
//   token   = "HS256-" + base64url-without-padding(HMAC-SHA256(key, signaturePath + expires + signingData))
//   signaturePath = token_path when set, else the URL path; signingData = the parameters (query
//   parameters plus token_path) sorted by name, `name=rawValue` joined with "&"
//   URL     = `${base}/bcdn_token=${token}&${name=encodeURIComponent(value)...}&expires=${expires}${path}`
// so a directory token is `/bcdn_token=HS256-…&token_path=%2Fplay%2Fvid_x%2F&expires=…/play/vid_x/…`
// (token_path before expires, as the reference signers lay it out). IP-locked tokens ("HS256-1-…",
// the IP bytes go between expires and signingData) and country limits are not supported.
// The vectors in cdn-token.spec.ts come from nodejs/token.test.js and python3/test_token.py
// (last changed in 919fe7d6c17c9094565875e914adab957e922f10) and e2e/vectors.json (dff263668d20b7ecfdbac6a28b7814e5f9ed3c47).
import { createHmac, timingSafeEqual } from "node:crypto";

const TOKEN_PREFIX = "HS256-";
const SEGMENT_PREFIX = "/bcdn_token=";
/** base64url of a 32-byte digest without padding: 43 characters. */
const DIGEST_CHARS = 43;
/** Longer request paths are refused unparsed: ours are far shorter. */
const MAX_PATH = 4096;
/** Unix seconds in at most 15 digits stay exact as a double. */
const MAX_EXPIRES_DIGITS = 15;

/**
 * The Bunny HS256 token for `signaturePath`, `expires` (unix seconds) and `params` (query
 * parameters and token_path, raw values; sorted here by name, code-point order as in the Python and
 * Go signers): `HS256-<base64url(HMAC-SHA256(key, signaturePath ‖ expires ‖ signingData))>`.
 */
export function bunnyToken(key: string, signaturePath: string, expires: number, params: Readonly<Record<string, string>> = {}): string {
  // Stryker disable next-line ConditionalExpression,EqualityOperator: object keys are distinct and V8's sort only tells a negative result from the rest, so a <= b and the 1/0 branch cannot change the order (the -1 branch is pinned by the ordering spec)
  const entries = Object.entries(params).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  let signingData = "";
  for (const [name, value] of entries) signingData += `${signingData === "" ? "" : "&"}${name}=${value}`;
  const digest = createHmac("sha256", key)
    .update(signaturePath + String(expires) + signingData)
    .digest("base64url");
  return TOKEN_PREFIX + digest;
}

/**
 * A directory-token URL laid out exactly as the reference signers do for `isDirectory = true`
 * (no IP, countries or query): `${base}/bcdn_token=<token>[&token_path=<encoded>]&expires=<n>${urlPath}`.
 * `urlPath` is used as given (already percent-encoded); without `tokenPath` the signature covers
 * `urlPath`. No policy checks: the service signs with signDirectoryUrl.
 */
export function bunnyDirectoryUrl(base: string, key: string, urlPath: string, expires: number, tokenPath?: string): string {
  if (tokenPath === undefined || tokenPath === "") {
    return `${base}${SEGMENT_PREFIX}${bunnyToken(key, urlPath, expires)}&expires=${expires}${urlPath}`;
  }
  const token = bunnyToken(key, tokenPath, expires, { token_path: tokenPath });
  return `${base}${SEGMENT_PREFIX}${token}&token_path=${encodeURIComponent(tokenPath)}&expires=${expires}${urlPath}`;
}

/**
 * A path-based directory-token URL:
 * `${base}/bcdn_token=HS256-…&token_path=<url-encoded tokenPath>&expires=<unix>${filePath}`.
 * `base` has no trailing slash; `tokenPath` like "/play/vid_x/" (starts and ends with "/");
 * `filePath` like "/play/vid_x/index.m3u8", decoded, must lie under `tokenPath` (no "..", "." or
 * empty segments, NUL or backslash) and is percent-encoded segment by segment in the URL;
 * `expires` in unix seconds. Throws a RangeError on any of these broken.
 */
export function signDirectoryUrl(base: string, key: string, tokenPath: string, filePath: string, expires: number): string {
  if (key === "") throw new RangeError("cdn token: empty key");
  if (base.endsWith("/")) throw new RangeError("cdn token: base must not end with '/'");
  if (!Number.isSafeInteger(expires) || expires < 0) throw new RangeError("cdn token: expires must be unix seconds");
  if (!tokenPath.endsWith("/") || checkPath(tokenPath, true) !== undefined) throw new RangeError(`cdn token: bad token path ${JSON.stringify(tokenPath)}`);
  if (checkPath(filePath, false) !== undefined || !filePath.startsWith(tokenPath)) {
    throw new RangeError(`cdn token: file ${JSON.stringify(filePath)} is not under ${JSON.stringify(tokenPath)}`);
  }
  return bunnyDirectoryUrl(base, key, encodePath(filePath), expires, tokenPath);
}

/** Why verifyDirectoryPath refused a request (the edge answers 403 to all of them). */
export type DirectoryTokenRefusal = "missing" | "malformed" | "expired" | "signature" | "outside";

/** The outcome of verifyDirectoryPath. */
export type DirectoryTokenCheck = { ok: true; filePath: string; tokenPath: string; expires: number } | { ok: false; reason: DirectoryTokenRefusal };

const MISSING: DirectoryTokenCheck = { ok: false, reason: "missing" };
const MALFORMED: DirectoryTokenCheck = { ok: false, reason: "malformed" };
const EXPIRED: DirectoryTokenCheck = { ok: false, reason: "expired" };
const SIGNATURE: DirectoryTokenCheck = { ok: false, reason: "signature" };
const OUTSIDE: DirectoryTokenCheck = { ok: false, reason: "outside" };

/**
 * Parses and checks a request path of the edge, e.g.
 * "/bcdn_token=HS256-…&token_path=%2Fplay%2Fvid_x%2F&expires=…/play/vid_x/720p/seg1.ts" (raw,
 * undecoded, no query; token_path and expires in either order). Any of `keys` may have signed it
 * (key rotation overlap). ok only when the signature matches one key (constant-time compare),
 * expires >= nowSeconds, and the decoded file path (after the token segment, with no "..", "." or
 * empty segments, no NUL, no backslash) starts with token_path (which must end with "/").
 * Cheap checks run first: malformed, then expired, then outside, then one HMAC per key tried.
 */
export function verifyDirectoryPath(rawPath: string, keys: readonly string[], nowSeconds: number): DirectoryTokenCheck {
  if (!rawPath.startsWith(SEGMENT_PREFIX)) return MISSING;
  if (rawPath.length > MAX_PATH) return MALFORMED;
  const end = rawPath.indexOf("/", SEGMENT_PREFIX.length);
  // Stryker disable next-line ConditionalExpression,EqualityOperator: end is -1 or at least 12, and at -1 the first '=' (index 11) lies past it, so the loop refuses the path as malformed anyway
  if (end < 0) return MALFORMED;

  // The token segment: "bcdn_token=…&name=value…", each name once, only the names we sign.
  let token: string | undefined;
  let expiresText: string | undefined;
  let tokenPathRaw: string | undefined;
  for (let i = 1; ;) {
    let amp = rawPath.indexOf("&", i);
    // Stryker disable next-line EqualityOperator: indexOf from i >= 1 is never 0, and amp (a '&') never equals end (a '/')
    if (amp < 0 || amp > end) amp = end;
    const eq = rawPath.indexOf("=", i);
    // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator: a name reaching past its '&' or the first '/' contains that character and falls to default; with no '=' the value is the whole path up to end, which no later check accepts
    if (eq < 0 || eq > amp) return MALFORMED;
    const value = rawPath.slice(eq + 1, amp);
    switch (rawPath.slice(i, eq)) {
      case "bcdn_token":
        if (token !== undefined) return MALFORMED;
        token = value;
        break;
      case "expires":
        if (expiresText !== undefined) return MALFORMED;
        expiresText = value;
        break;
      case "token_path":
        if (tokenPathRaw !== undefined) return MALFORMED;
        tokenPathRaw = value;
        break;
      default:
        return MALFORMED;
    }
    if (amp === end) break;
    i = amp + 1;
  }
  if (token === undefined || expiresText === undefined || tokenPathRaw === undefined) return MALFORMED;
  if (!isDigestToken(token)) return MALFORMED;
  const expires = parseExpires(expiresText);
  if (expires < 0) return MALFORMED;
  // '+' means a space to query decoders and itself to decodeURIComponent: ours never carry one.
  if (tokenPathRaw.includes("+")) return MALFORMED;
  const tokenPath = decode(tokenPathRaw);
  if (tokenPath === undefined || !tokenPath.endsWith("/") || checkPath(tokenPath, true) !== undefined) return MALFORMED;

  if (expires < nowSeconds) return EXPIRED;

  const filePath = decode(rawPath.slice(end));
  if (filePath === undefined) return MALFORMED;
  const bad = checkPath(filePath, false);
  if (bad !== undefined) return bad === "dots" ? OUTSIDE : MALFORMED;
  if (!filePath.startsWith(tokenPath)) return OUTSIDE;

  const given = Buffer.from(token.slice(TOKEN_PREFIX.length), "base64url");
  const message = `${tokenPath}${expiresText}token_path=${tokenPath}`;
  for (const key of keys) {
    if (key === "") continue;
    if (timingSafeEqual(createHmac("sha256", key).update(message).digest(), given)) {
      return { ok: true, filePath, tokenPath, expires };
    }
  }
  return SIGNATURE;
}

// ───────────────────────────── helpers ─────────────────────────────

/** The value of a base64url character, or -1. */
function base64urlValue(c: number): number {
  if (c >= 65 && c <= 90) return c - 65; // A-Z
  if (c >= 97 && c <= 122) return c - 71; // a-z
  // Stryker disable next-line ArithmeticOperator: callers use only the sign and the low 2 bits, and c + 4 and c - 4 agree on both for 48..57
  if (c >= 48 && c <= 57) return c + 4; // 0-9
  if (c === 45) return 62; // -
  if (c === 95) return 63; // _
  return -1;
}

/**
 * "HS256-" and exactly the 43 characters of a 32-byte digest, the last one canonical (its 2 unused
 * bits zero): Buffer's lenient decoder would otherwise accept 4 spellings of each signature.
 */
function isDigestToken(token: string): boolean {
  if (token.length !== TOKEN_PREFIX.length + DIGEST_CHARS || !token.startsWith(TOKEN_PREFIX)) return false;
  // Stryker disable next-line EqualityOperator: also checking the last character here changes nothing, it is checked below (the other mutants here are pinned by the bad-character spec)
  for (let i = TOKEN_PREFIX.length; i < token.length - 1; i++) {
    if (base64urlValue(token.charCodeAt(i)) < 0) return false;
  }
  const last = base64urlValue(token.charCodeAt(token.length - 1));
  // Stryker disable next-line ConditionalExpression: last >= 0 is redundant, -1 & 3 is 3 (kept for clarity; the other mutants here are pinned by the last-character specs)
  return last >= 0 && (last & 3) === 0;
}

/** Unix seconds written canonically (digits, no leading zero), or -1. */
function parseExpires(text: string): number {
  if (text.length === 0 || text.length > MAX_EXPIRES_DIGITS || (text.length > 1 && text.charCodeAt(0) === 48)) return -1;
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/** Percent-decoded text, or undefined when the escapes are broken. */
function decode(text: string): string | undefined {
  // Stryker disable next-line ConditionalExpression,StringLiteral: a shortcut: decodeURIComponent returns text without '%' unchanged
  if (!text.includes("%")) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * Why `path` is not a clean absolute path: "dots" for a "." or ".." segment, "shape" for no leading
 * "/", an empty segment (a trailing "/" only when `directory`), NUL or backslash; undefined when clean.
 */
function checkPath(path: string, directory: boolean): "dots" | "shape" | undefined {
  if (path.charCodeAt(0) !== 47) return "shape";
  let start = 1; // first character of the current segment
  for (let i = 1; i <= path.length; i++) {
    const c = i === path.length ? 47 : path.charCodeAt(i);
    if (c === 0 || c === 92) return "shape"; // NUL, backslash
    if (c !== 47) continue;
    const len = i - start;
    if (len === 0) {
      if (!(directory && i === path.length)) return "shape";
    } else if (len <= 2 && path.charCodeAt(start) === 46 && (len === 1 || path.charCodeAt(start + 1) === 46)) {
      return "dots";
    }
    start = i + 1;
  }
  return undefined;
}

/** Characters a path segment keeps as they are (RFC 3986 unreserved). */
function isUnreserved(c: number): boolean {
  // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator: only picks encodePath's shortcut and encodeURIComponent keeps these characters, so narrowing is equivalent; widening is pinned by the percent-encoding specs
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 45 || c === 46 || c === 95 || c === 126;
}

/** A decoded path percent-encoded segment by segment ("/" kept). */
function encodePath(path: string): string {
  // Stryker disable next-line EqualityOperator,UpdateOperator: reading past either end gives NaN, which takes the encoding path, and encoding an unreserved path changes nothing
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i);
    // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator,BooleanLiteral: a shortcut: encoding a path of unreserved characters and '/' changes nothing, so encoding more often is equivalent
    if (c !== 47 && !isUnreserved(c)) return path.split("/").map(encodeURIComponent).join("/");
  }
  return path;
}
