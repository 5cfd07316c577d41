// S3 and S3-compatible stores (AWS, Cloudflare R2, self-hosted servers such as MinIO) through the
// AWS SDK, whose every connection goes through the network guard's agents.
import { createReadStream, createWriteStream } from "node:fs";
import { rm, stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client, S3ServiceException } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import type { NetGuard } from "../net-guard.js";
import { BlobError, transportError, type BlobStore } from "./port.js";
import { presignS3Get } from "./sign.js";

export interface S3Location {
  /** Scheme of the URLs shown to users. */
  readonly scheme: "s3" | "r2";
  readonly bucket: string;
  readonly region: string;
  /** Unset: AWS's regional endpoint for the bucket (virtual-hosted). Set: that server, path-style. */
  readonly endpoint?: string | undefined;
  /**
   * Static keys. Without them, the SDK's default credential chain (environment, shared files, web
   * identity, container or instance role), which only the operator's own bucket uses: origins
   * always carry the caller's keys.
   */
  readonly accessKeyId?: string | undefined;
  readonly secretAccessKey?: string | undefined;
  /** http:// endpoints are accepted only from the operator's configuration. */
  readonly allowHttp?: boolean;
}

export type R2Jurisdiction = "default" | "eu" | "fedramp";

/** Cloudflare's S3 endpoint of an account, in the jurisdiction the bucket was created in. */
export function r2Endpoint(accountId: string, jurisdiction: R2Jurisdiction | "" = "default"): string {
  const zone = jurisdiction === "eu" || jurisdiction === "fedramp" ? `.${jurisdiction}` : "";
  return `https://${accountId}${zone}.r2.cloudflarestorage.com`;
}

// Readable causes for the answers a wrong key, a wrong secret or a missing grant produce.
const DENIALS: Readonly<Record<string, string>> = {
  InvalidAccessKeyId: "the access key ID is not known to the storage service",
  SignatureDoesNotMatch: "the secret access key does not match the access key ID",
  AccessDenied: "access denied: the credentials lack permission for this bucket",
  Forbidden: "access denied: the credentials lack permission for this bucket",
  InvalidToken: "the credentials are not valid",
  ExpiredToken: "the credentials have expired",
  AuthorizationHeaderMalformed: "the request was refused; check the bucket's region",
  PermanentRedirect: "the bucket is in another region than the one given",
  AllAccessDisabled: "all access to this bucket has been disabled",
};

export class S3Blob implements BlobStore {
  /** The SDK client, every connection through the guard (managed storage reuses it). */
  readonly client: S3Client;
  private readonly where: string;

  constructor(
    private readonly location: S3Location,
    guard: NetGuard,
  ) {
    if (location.endpoint) {
      try {
        guard.parse(location.endpoint, location.allowHttp ?? false);
      } catch (e) {
        throw transportError(e, location.endpoint) ?? e;
      }
    }
    this.where = `${location.scheme}://${location.bucket}`;
    this.client = new S3Client({
      region: location.region,
      ...(location.accessKeyId && location.secretAccessKey
        ? { credentials: { accessKeyId: location.accessKeyId, secretAccessKey: location.secretAccessKey } }
        : {}),
      ...(location.endpoint ? { endpoint: location.endpoint, forcePathStyle: true } : {}),
      requestHandler: new NodeHttpHandler({
        httpAgent: guard.agent("http:"),
        httpsAgent: guard.agent("https:"),
        connectionTimeout: 10_000,
        requestTimeout: 120_000,
      }),
      maxAttempts: 3,
      // Checksums only where S3 requires them: several S3-compatible servers reject the newer ones.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
  }

  async put(key: string, file: string, contentType?: string): Promise<{ size: number }> {
    const { size } = await stat(file);
    try {
      // Multipart above one part, so files past S3's 5 GB single-PUT limit go too.
      const upload = new Upload({
        client: this.client,
        params: {
          Bucket: this.location.bucket,
          Key: key,
          Body: createReadStream(file),
          ContentLength: size,
          ...(contentType ? { ContentType: contentType } : {}),
        },
        partSize: 16 * 1024 * 1024,
        queueSize: 4,
        leavePartsOnError: false,
      });
      await upload.done();
      return { size };
    } catch (e) {
      throw this.failure(e, key);
    }
  }

  async getToFile(key: string, file: string): Promise<{ size: number }> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key: key }));
      if (!(res.Body instanceof Readable)) throw new BlobError("unreachable", `${this.url(key)}: the response had no body`);
      await pipeline(res.Body, createWriteStream(file));
      return { size: (await stat(file)).size };
    } catch (e) {
      await rm(file, { force: true });
      throw this.failure(e, key);
    }
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.location.bucket, Key: key }));
      return { size: res.ContentLength ?? 0 };
    } catch (e) {
      const failure = this.failure(e, key);
      if (failure.kind === "not_found") return undefined;
      throw failure;
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: key }));
    } catch (e) {
      const failure = this.failure(e, key);
      if (failure.kind !== "not_found") throw failure;
    }
  }

  async checkRead(prefix: string): Promise<void> {
    try {
      await this.client.send(new ListObjectsV2Command({ Bucket: this.location.bucket, Prefix: prefix, MaxKeys: 1 }));
      return;
    } catch (e) {
      // A wrong key or secret is said by the listing; only a missing list grant is worth a second try.
      if (!(e instanceof S3ServiceException && e.name === "AccessDenied")) throw this.failure(e, prefix);
    }
    // Listing is a separate grant: a key that may only read objects passes if reading is allowed.
    // Without list rights S3 answers a missing key with 403, so only a 404 or an object proves it.
    await this.head(`${prefix}.media-read-probe`);
  }

  url(key: string): string {
    return `${this.where}/${key}`;
  }

  /** Undefined without static keys: the chain's credentials come asynchronously, and only managed storage goes without keys. */
  signedUrl(key: string, expiresSeconds: number): string | undefined {
    const { accessKeyId, secretAccessKey } = this.location;
    return accessKeyId && secretAccessKey ? presignS3Get({ ...this.location, accessKeyId, secretAccessKey }, key, expiresSeconds) : undefined;
  }

  /** An SDK failure on key as a BlobError. */
  failure(e: unknown, key: string): BlobError {
    if (e instanceof BlobError) return e;
    const where = this.url(key);
    if (e instanceof S3ServiceException) {
      const status = e.$metadata.httpStatusCode ?? 0;
      if (e.name === "NoSuchBucket") return new BlobError("not_found", `bucket "${this.location.bucket}" does not exist`, { cause: e });
      if (e.name === "NoSuchKey" || e.name === "NotFound" || status === 404) return new BlobError("not_found", `${where} does not exist`, { cause: e });
      const denial = DENIALS[e.name];
      // Answers to HEAD have no body, so the SDK can only name their status.
      const code = e.name === "Unknown" || e.name === "Forbidden" ? `HTTP ${status}` : e.name;
      if (denial || status === 401 || status === 403) return new BlobError("denied", `${denial ?? "access denied"} (${code})`, { cause: e });
      if (status >= 500) return new BlobError("unreachable", `${where}: the storage service failed (${e.name}, HTTP ${status})`, { cause: e });
      return new BlobError("invalid", `${where}: ${e.name}: ${e.message}`, { cause: e });
    }
    return transportError(e, where) ?? new BlobError("unreachable", `${where}: ${(e as Error).message ?? String(e)}`, { cause: e });
  }
}
