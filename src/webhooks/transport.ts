// One webhook delivery attempt: a JSON POST through the network guard that never throws and reports
// what happened in the shape of a WebhookDelivery attempt (status, capped body and headers, or a
// classified transport error).
import type { IncomingMessage } from "node:http";
import { NetGuardError, type NetGuard } from "../net-guard.js";

export type TransportErrorKind =
  | "timeout"
  | "connection_refused"
  | "connection_reset"
  | "connection_closed"
  | "host_unreachable"
  | "dns_failure"
  | "tls_handshake_failed"
  | "ssrf_blocked"
  | "unknown";

export interface AttemptResult {
  /** A 2xx answer. */
  ok: boolean;
  /** Absent on transport error. */
  status?: number;
  /** First 4 KiB, cut on a UTF-8 boundary; absent if none. */
  responseBody?: string;
  /** JSON map name -> values; at most 32 names and 4 KiB; credentials "[REDACTED]"; "{}" when none. */
  responseHeaders: string;
  /** From sending the request to the response read (up to the body cap); absent if no response. */
  latencyMs?: number;
  transportError?: TransportErrorKind;
  /** Transport error text, or "HTTP <status>: <first 200 chars of body>"; absent when ok. */
  errorMessage?: string;
}

/** Spec limits of a stored attempt (Limits: "stored response body 4 KiB; response headers 32 names and 4 KiB"). */
export const RESPONSE_BODY_LIMIT_BYTES = 4096;
export const RESPONSE_HEADER_NAMES_LIMIT = 32;
export const RESPONSE_HEADERS_LIMIT_BYTES = 4096;
export const USER_AGENT = "media-webhooks/1";
const ERROR_BODY_CHARS = 200;
const ERROR_MESSAGE_CHARS = 500;

/**
 * POSTs `rawBody` to `url` through the guard: https only, no redirect followed (a 3xx is a failed
 * attempt), `timeoutMs` for the whole attempt (connect, TLS, request, response). Resolves always.
 */
export async function postJson(
  guard: NetGuard,
  url: string,
  rawBody: string,
  headers: Record<string, string>,
  opts: { timeoutMs: number; signal?: AbortSignal },
): Promise<AttemptResult> {
  const started = performance.now();
  const attempt = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    attempt.abort(new Error(`no response within ${opts.timeoutMs} ms`));
  }, opts.timeoutMs);
  const onCallerAbort = () => attempt.abort(new Error("delivery attempt aborted"));
  if (opts.signal?.aborted) onCallerAbort();
  else opts.signal?.addEventListener("abort", onCallerAbort, { once: true });
  try {
    if (attempt.signal.aborted) return failure("unknown", "delivery attempt aborted before it started");
    const body = Buffer.from(rawBody, "utf8");
    const res = await guard.request(url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", "user-agent": USER_AGENT, "content-length": String(body.length) },
      body,
      maxRedirects: 0,
      timeoutMs: opts.timeoutMs,
      signal: attempt.signal,
    });
    const head = await readHead(res.body, RESPONSE_BODY_LIMIT_BYTES, attempt.signal);
    const latencyMs = Math.round(performance.now() - started);
    const text = head.length > 0 ? utf8Prefix(head, RESPONSE_BODY_LIMIT_BYTES) : "";
    const ok = res.status >= 200 && res.status < 300;
    return {
      ok,
      status: res.status,
      ...(text !== "" ? { responseBody: text } : {}),
      responseHeaders: capturedHeaders(res.body),
      latencyMs,
      ...(ok ? {} : { errorMessage: text === "" ? `HTTP ${res.status}` : `HTTP ${res.status}: ${[...text].slice(0, ERROR_BODY_CHARS).join("")}` }),
    };
  } catch (e) {
    if (timedOut) return failure("timeout", `no response within ${opts.timeoutMs} ms`);
    if (opts.signal?.aborted) return failure("unknown", "delivery attempt aborted");
    return failure(classify(e), describe(e));
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onCallerAbort);
  }
}

function failure(kind: TransportErrorKind, message: string): AttemptResult {
  return { ok: false, responseHeaders: "{}", transportError: kind, errorMessage: message.slice(0, ERROR_MESSAGE_CHARS) };
}

/** Up to `limit` bytes of the body (a few more when a chunk ends past it); the rest is not read. */
function readHead(res: IncomingMessage, limit: number, signal: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error?: unknown) => {
      signal.removeEventListener("abort", onAbort);
      res.off("data", onData).off("end", onEnd).off("error", onError).off("aborted", onAborted);
      if (error !== undefined) reject(error);
      else resolve(Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) {
        // Enough kept; a receiver streaming megabytes does not hold the attempt open.
        finish();
        res.destroy();
      }
    };
    const onEnd = () => finish();
    const onError = (e: Error) => finish(e);
    const onAborted = () => finish(Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }));
    const onAbort = () => {
      finish(signal.reason);
      res.destroy();
    };
    // Errors after the read is over (the socket torn down under a destroyed response) are moot.
    res.on("error", () => {});
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    res.on("data", onData).on("end", onEnd).on("error", onError).on("aborted", onAborted);
  });
}

/** The longest whole-character prefix of `bytes` taking at most `limit` bytes once re-encoded. */
export function utf8Prefix(bytes: Buffer, limit: number): string {
  // stream: true holds back a character cut at the end instead of writing U+FFFD for it.
  let text = new TextDecoder("utf-8").decode(bytes.subarray(0, limit), { stream: true });
  // Invalid bytes decode to U+FFFD (3 bytes each), so a binary body may still be over.
  while (Buffer.byteLength(text, "utf8") > limit) text = [...text].slice(0, -1).join("");
  return text;
}

const CREDENTIAL_HEADERS = new Set(["authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"]);
const CREDENTIAL_WORDS = /token|secret|signature|auth|key|password|session/;
export const REDACTED = "[REDACTED]";

function isCredential(name: string): boolean {
  return CREDENTIAL_HEADERS.has(name) || CREDENTIAL_WORDS.test(name);
}

/**
 * Response headers as stored: name -> values in arrival order, credentials redacted, at most 32
 * names and 4 KiB of JSON. A header that would pass 4 KiB is left out and later, smaller ones
 * still go in.
 */
export function capturedHeaders(res: Pick<IncomingMessage, "headersDistinct">): string {
  const parts: string[] = [];
  let bytes = 2; // {}
  for (const [name, values] of Object.entries(res.headersDistinct)) {
    if (parts.length >= RESPONSE_HEADER_NAMES_LIMIT) break;
    if (values === undefined) continue;
    const part = `${JSON.stringify(name)}:${JSON.stringify(isCredential(name) ? [REDACTED] : values)}`;
    const size = Buffer.byteLength(part, "utf8") + (parts.length > 0 ? 1 : 0);
    if (bytes + size > RESPONSE_HEADERS_LIMIT_BYTES) continue;
    parts.push(part);
    bytes += size;
  }
  return `{${parts.join(",")}}`;
}

const TLS_CODES = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "HOSTNAME_MISMATCH",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

function codeOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** Which transport failure `e` is; AggregateErrors (happy eyeballs) are judged by their first error. */
export function classify(e: unknown): TransportErrorKind {
  if (e instanceof NetGuardError) {
    switch (e.reason) {
      case "forbidden_address":
        return "ssrf_blocked";
      case "unresolvable":
        return "dns_failure";
      case "timeout":
        return "timeout";
      default:
        return "unknown";
    }
  }
  if (e instanceof AggregateError && e.errors.length > 0 && codeOf(e) === undefined) return classify(e.errors[0]);
  const code = codeOf(e) ?? "";
  const message = e instanceof Error ? e.message : "";
  // Node reports a connection closed before any answer as ECONNRESET "socket hang up".
  if (/socket hang up|premature close/i.test(message) || code === "ERR_STREAM_PREMATURE_CLOSE") return "connection_closed";
  if (code === "ECONNREFUSED") return "connection_refused";
  if (code === "ECONNRESET" || code === "EPIPE") return "connection_reset";
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH" || code === "EHOSTDOWN" || code === "ENETDOWN") return "host_unreachable";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EAI_FAIL" || code === "EAI_NONAME") return "dns_failure";
  if (TLS_CODES.has(code) || code.startsWith("ERR_SSL_") || code.startsWith("ERR_TLS_") || code.startsWith("CERT_")) return "tls_handshake_failed";
  if (code === "ETIMEDOUT" || code === "ESOCKETTIMEDOUT" || code === "UND_ERR_CONNECT_TIMEOUT") return "timeout";
  if (e instanceof Error && e.cause !== undefined && e.cause !== e) return classify(e.cause);
  return "unknown";
}

function describe(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const code = codeOf(e);
  return code && !e.message.includes(code) ? `${e.message} (${code})` : e.message;
}
