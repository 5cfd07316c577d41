// Storage origins: the stored record (credentials sealed with the server key), the blob store an
// origin opens, and the credential check run on create, on rotation and on demand.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Config } from "./config.js";
import {
  BlobError,
  GcsBlob,
  HttpBlob,
  joinKey,
  parseServiceAccount,
  r2Endpoint,
  S3Blob,
  type BlobStore,
  type R2Jurisdiction,
  type StorageUrl,
} from "./blob/index.js";
import { randomToken } from "./ids.js";
import type { NetGuard } from "./net-guard.js";
import type { SecretBox } from "./secrets.js";
import type { Store } from "./store/port.js";

/** Store table; partition = appId, sort = sortKey(createdAt, id). */
export const ORIGINS = "origins";

export const ORIGIN_PROVIDERS = ["gcs", "s3", "r2", "http"] as const;
export type OriginProvider = (typeof ORIGIN_PROVIDERS)[number];
export type OriginPermission = "read" | "write";
export type OriginStatus = "active" | "failed" | "archived";

/** Variables an origin's path_template may use. */
export const PATH_TEMPLATE_VARIABLES = ["date", "job_id", "output_id", "codec", "resolution"] as const;

/** Origin limits beyond the shared name and description ones in src/validation.ts. */
export const ORIGIN_LIMITS = { path: 1024, headers: 20, endpoint: 256 } as const;

export interface OriginRecord {
  readonly id: string;
  readonly appId: string;
  readonly organizationId: string;
  readonly name: string;
  readonly description: string;
  readonly provider: OriginProvider;
  readonly permissions: readonly OriginPermission[];
  readonly status: OriginStatus;
  readonly basePath: string;
  readonly pathTemplate: string;
  /** gcs, s3, r2; "" for http. */
  readonly bucket: string;
  /** s3 only. */
  readonly region: string;
  /** r2: the endpoint used, custom or derived from accountId and jurisdiction. */
  readonly endpoint: string;
  /** r2: set when the endpoint is derived from it. */
  readonly accountId: string;
  readonly jurisdiction: R2Jurisdiction | "";
  /** http only. */
  readonly baseUrl: string;
  /** SecretBox-encrypted JSON of the credentials. */
  readonly sealedCredentials: string;
  readonly lastValidatedAt?: number;
  readonly validationError?: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly archivedAt?: number;
}

export type OriginCredentials =
  | { readonly kind: "gcs"; readonly serviceAccountJson: string }
  | { readonly kind: "access_key"; readonly accessKeyId: string; readonly secretAccessKey: string }
  | { readonly kind: "http"; readonly headers: Readonly<Record<string, string>> };

export function sealCredentials(box: SecretBox, credentials: OriginCredentials): string {
  return box.encrypt(JSON.stringify(credentials));
}

export function openCredentials(box: SecretBox, origin: Pick<OriginRecord, "sealedCredentials">): OriginCredentials {
  return JSON.parse(box.decrypt(origin.sealedCredentials)) as OriginCredentials;
}

export async function getOrigin(store: Store, id: string): Promise<OriginRecord | undefined> {
  return (await store.get<OriginRecord>(ORIGINS, id))?.value;
}

/** The bucket key of `key` under the origin's base path. */
export function originKey(origin: Pick<OriginRecord, "basePath">, key: string): string {
  return joinKey(origin.basePath, key);
}

/** The origin providers whose buckets a storage URL's scheme names: s3:// names R2 buckets too, which speak S3. */
const URL_PROVIDERS: Readonly<Record<StorageUrl["provider"], readonly OriginProvider[]>> = { s3: ["s3", "r2"], gcs: ["gcs"], r2: ["r2"] };

/**
 * Whether an origin's credentials may read a storage URL: a provider of its scheme, its bucket, read
 * permission. The URL names the whole key, so the origin's base path does not apply (as for input URLs).
 */
export function readsStorageUrl(origin: Pick<OriginRecord, "provider" | "bucket" | "permissions">, url: Pick<StorageUrl, "provider" | "bucket">): boolean {
  return URL_PROVIDERS[url.provider].includes(origin.provider) && origin.bucket === url.bucket && origin.permissions.includes("read");
}

/** The origins a job carries; a storage URL of the job (a subtitle file) is read with one of them. */
export interface JobOrigins {
  readonly inputOrigin?: OriginRecord | undefined;
  readonly inputUrlOrigin?: OriginRecord | undefined;
  readonly outputOrigin?: OriginRecord | undefined;
}

const jobOrigins = (job: JobOrigins) => [job.inputOrigin, job.inputUrlOrigin, job.outputOrigin].filter((o) => o !== undefined);

/** The first of the job's origins (input, input URL's, output) that reads a storage URL. */
export function jobOriginReading(job: JobOrigins, url: Pick<StorageUrl, "provider" | "bucket">): OriginRecord | undefined {
  return jobOrigins(job).find((o) => readsStorageUrl(o, url));
}

/** The buckets the job's origins read, as "s3://bucket" and "gs://bucket", for messages. */
export function jobReadableBuckets(job: JobOrigins): string[] {
  const buckets = jobOrigins(job)
    .filter((o) => o.provider !== "http" && o.permissions.includes("read"))
    .map((o) => `${o.provider === "gcs" ? "gs" : "s3"}://${o.bucket}`);
  return [...new Set(buckets)];
}

/** The blob store of an origin, every connection through `guard`. Throws BlobError when it cannot be opened. */
export function openOriginBlob(origin: OriginRecord, box: SecretBox, guard: NetGuard, config: Pick<Config, "storage">): BlobStore {
  const credentials = openCredentials(box, origin);
  const mismatch = () => new BlobError("invalid", `origin ${origin.id} holds credentials of another provider`);
  switch (origin.provider) {
    case "s3":
    case "r2": {
      if (credentials.kind !== "access_key") throw mismatch();
      const operator = origin.provider === "s3" ? config.storage.s3Endpoint : undefined;
      return new S3Blob(
        {
          scheme: origin.provider,
          bucket: origin.bucket,
          // R2 takes "auto"; a self-hosted S3 server takes whatever region the origin names.
          region: origin.provider === "r2" ? "auto" : origin.region,
          endpoint: origin.provider === "r2" ? origin.endpoint || r2Endpoint(origin.accountId, origin.jurisdiction) : operator,
          accessKeyId: credentials.accessKeyId,
          secretAccessKey: credentials.secretAccessKey,
          allowHttp: operator !== undefined,
        },
        guard,
      );
    }
    case "gcs": {
      if (credentials.kind !== "gcs") throw mismatch();
      const parsed = parseServiceAccount(credentials.serviceAccountJson);
      if ("error" in parsed) throw new BlobError("invalid", `service account key: ${parsed.error}`);
      return new GcsBlob({ bucket: origin.bucket, account: parsed.account, endpoint: config.storage.gcsApiEndpoint }, guard);
    }
    case "http":
      if (credentials.kind !== "http") throw mismatch();
      return new HttpBlob({ baseUrl: origin.baseUrl, headers: credentials.headers }, guard);
  }
}

export interface ValidationResultData {
  /** Every declared permission validated. */
  readonly success: boolean;
  readonly canRead: boolean;
  readonly canWrite: boolean;
  readonly readError: string;
  readonly writeError: string;
  readonly validatedAt: number;
}

const PROBE_TIMEOUT_MS = 20_000;

function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BlobError("unreachable", `${what} did not finish within ${PROBE_TIMEOUT_MS / 1000} s`)), PROBE_TIMEOUT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

const reasonOf = (e: unknown): string => (e instanceof BlobError ? e.message : `unexpected error: ${(e as Error).message ?? String(e)}`);

/**
 * Checks the origin's credentials for every declared permission: read lists (or reads a probe key)
 * under base_path, write puts and deletes a small probe object under base_path/.media-validate/.
 * Never throws: every failure becomes read_error or write_error.
 */
export async function validateOrigin(origin: OriginRecord, box: SecretBox, guard: NetGuard, config: Pick<Config, "storage">): Promise<ValidationResultData> {
  const wantsRead = origin.permissions.includes("read");
  const wantsWrite = origin.permissions.includes("write");
  let readError = "";
  let writeError = "";
  let blob: BlobStore | undefined;
  try {
    blob = openOriginBlob(origin, box, guard, config);
  } catch (e) {
    readError = wantsRead ? reasonOf(e) : "";
    writeError = wantsWrite ? reasonOf(e) : "";
  }
  const prefix = originKey(origin, ".media-validate");
  if (blob && wantsRead) {
    try {
      const base = originKey(origin, "");
      await withTimeout(blob.checkRead(base === "" ? "" : `${base}/`), "the read check");
    } catch (e) {
      readError = reasonOf(e);
    }
  }
  if (blob && wantsWrite) {
    const dir = await mkdtemp(path.join(tmpdir(), "media-probe-"));
    try {
      const file = path.join(dir, "probe");
      await writeFile(file, "media origin write check\n");
      const key = `${prefix}/${randomToken(16)}`;
      await withTimeout(blob.put(key, file, "text/plain"), "the write check");
      // A key that may write but not delete still validates; the small probe is left behind.
      await withTimeout(blob.delete(key), "deleting the write probe").catch(() => undefined);
    } catch (e) {
      writeError = reasonOf(e);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const canRead = wantsRead && blob !== undefined && readError === "";
  const canWrite = wantsWrite && blob !== undefined && writeError === "";
  return { success: (!wantsRead || canRead) && (!wantsWrite || canWrite), canRead, canWrite, readError, writeError, validatedAt: Date.now() };
}

/** The record after a validation: active and validated, or failed with the reason. */
export function afterValidation(origin: OriginRecord, result: ValidationResultData): OriginRecord {
  const { validationError: _old, ...rest } = origin;
  if (result.success) return { ...rest, status: "active", lastValidatedAt: result.validatedAt, updatedAt: Date.now() };
  const reason = [result.readError && `read: ${result.readError}`, result.writeError && `write: ${result.writeError}`].filter(Boolean).join("; ");
  return { ...rest, status: "failed", validationError: reason, updatedAt: Date.now() };
}
