// The blob port: objects in a caller's bucket (or managed storage) by key, and the one error type
// every adapter speaks, whose kind says what went wrong and so whether a retry can help.
import { createWriteStream } from "node:fs";
import { rm, stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { NetGuardError } from "../net-guard.js";

export interface BlobStore {
  /** Uploads a local file to key (overwrites: keys are deterministic). */
  put(key: string, file: string, contentType?: string): Promise<{ size: number }>;
  /** Downloads key into a local file. */
  getToFile(key: string, file: string): Promise<{ size: number }>;
  head(key: string): Promise<{ size: number } | undefined>;
  delete(key: string): Promise<void>;
  /**
   * Confirms that objects under `prefix` can be read: listing (or reading a probe key) is allowed
   * and the bucket exists. An empty prefix is fine. Throws BlobError.
   */
  checkRead(prefix: string): Promise<void>;
  /** Storage location as shown to users: s3://bucket/key, gs://bucket/key, r2://bucket/key or https://... for http. */
  url(key: string): string;
  /** A time-limited HTTPS GET URL of the object, where the store can sign one. */
  signedUrl(key: string, expiresSeconds: number): string | undefined;
}

export type BlobErrorKind = "not_found" | "denied" | "unreachable" | "forbidden_address" | "invalid" | "read_only";

export class BlobError extends Error {
  /** Only an unreachable store may answer differently later. */
  readonly retryable: boolean;

  constructor(
    readonly kind: BlobErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "BlobError";
    this.retryable = kind === "unreachable";
  }
}

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
  "ECONNABORTED",
  "UND_ERR_SOCKET",
]);

/** The guard's refusal or a transport failure somewhere in an error's cause chain, as a BlobError. */
export function transportError(e: unknown, where: string): BlobError | undefined {
  for (let cur: unknown = e, depth = 0; cur instanceof Error && depth < 5; cur = cur.cause, depth++) {
    if (cur instanceof BlobError) return cur;
    if (cur instanceof NetGuardError) {
      const kind =
        cur.reason === "forbidden_address" ? "forbidden_address" : cur.reason === "scheme" || cur.reason === "invalid_url" ? "invalid" : "unreachable";
      return new BlobError(kind, `${where}: ${cur.message}`, { cause: cur });
    }
    const code = (cur as NodeJS.ErrnoException).code ?? "";
    if (NETWORK_CODES.has(code)) return new BlobError("unreachable", `${where} is unreachable (${code})`, { cause: cur });
    if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code))
      return new BlobError("unreachable", `${where}: TLS certificate not trusted (${code})`, { cause: cur });
    if (cur.name === "TimeoutError" || code === "ERR_SOCKET_CONNECTION_TIMEOUT")
      return new BlobError("unreachable", `${where} did not answer in time`, { cause: cur });
  }
  return undefined;
}

/** Joins key parts with single slashes and no leading slash: "a/", "/b" → "a/b". */
export function joinKey(...parts: readonly string[]): string {
  return parts
    .map((p) => p.replace(/^\/+|\/+$/g, ""))
    .filter((p) => p !== "")
    .join("/");
}

/** Writes a response body to a local file; a broken transfer leaves no partial file behind. */
export async function saveBody(body: Readable, file: string, where: string): Promise<{ size: number }> {
  try {
    await pipeline(body, createWriteStream(file));
    return { size: (await stat(file)).size };
  } catch (e) {
    await rm(file, { force: true });
    throw transportError(e, where) ?? e;
  }
}
