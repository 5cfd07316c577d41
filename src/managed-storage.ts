// Managed storage: where hosted videos' sources, upload parts and playable files live. Uploads are
// streamed in (never held whole), parts carry their MD5 as ETag in their stored name, a multipart
// upload is composed into the source on completion, and the edge reads objects with byte ranges.
// A local folder in the embedded mode; an S3-compatible bucket (s3 adapter) in a cluster.
import { createReadStream } from "node:fs";
import { mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  UploadPartCopyCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { LocalBlob } from "./blob/local.js";
import { S3Blob } from "./blob/s3.js";
import type { Config } from "./config.js";
import type { NetGuard } from "./net-guard.js";
import { BlobError, type BlobStore } from "./blob/port.js";
import { isDirectBody } from "./direct-body.js";
import { OffloadedMd5 } from "./md5-offload.js";
import { randomToken } from "./ids.js";

export interface ObjectInfo {
  readonly size: number;
  /** Strong validator of the stored bytes. */
  readonly etag: string;
  readonly lastModified: number;
}

export interface StoredPart {
  readonly part: number;
  readonly size: number;
  /** MD5 hex of the part: the ETag its PUT answered. */
  readonly md5: string;
}

export interface ManagedStorage {
  /** The blob port over the same storage (the encoder reads sources and writes renditions with it). */
  readonly blob: BlobStore;
  /** Streams a body to key (replacing it once complete); a broken body leaves nothing. */
  write(key: string, body: AsyncIterable<Uint8Array>, contentType: string): Promise<{ size: number; md5: string }>;
  /** Stores one part of a multipart upload under prefix. */
  writePart(prefix: string, part: number, body: AsyncIterable<Uint8Array>): Promise<StoredPart>;
  /** The parts stored under prefix, by part number (the latest write of each). */
  parts(prefix: string): Promise<StoredPart[]>;
  /** Concatenates the given parts (in order) into key. */
  compose(key: string, prefix: string, parts: readonly StoredPart[]): Promise<{ size: number }>;
  stat(key: string): Promise<ObjectInfo | undefined>;
  /** Bytes start..end (inclusive) of key. */
  read(key: string, start: number, end: number): AsyncIterable<Uint8Array>;
  /** The local file of key, where the storage is a folder (the edge then serves it from disk). */
  localFile?(key: string): string;
  deletePrefix(prefix: string): Promise<void>;
}

const partName = (part: number, md5: string) => `${String(part).padStart(5, "0")}.${md5}`;
const PART_NAME = /^(\d{5})\.([0-9a-f]{32})$/;

/** Managed storage in a local folder. */
export class LocalManagedStorage implements ManagedStorage {
  readonly blob: LocalBlob;
  constructor(root: string) {
    this.blob = new LocalBlob(root);
  }

  localFile(key: string): string {
    return this.blob.pathOf(key);
  }

  async write(key: string, body: AsyncIterable<Uint8Array>): Promise<{ size: number; md5: string }> {
    const target = this.localFile(key);
    await mkdir(path.dirname(target), { recursive: true });
    const partial = `${target}.${randomToken(8)}.part`;
    // The ETag's MD5 and the file's writes on a worker thread: the event loop only reads the socket.
    const sink = new OffloadedMd5(partial);
    let size = 0;
    let md5: string;
    try {
      const take = (chunk: Uint8Array) => {
        size += chunk.byteLength;
        return sink.update(chunk);
      };
      if (isDirectBody(body)) await body.forEachChunk(take);
      else for await (const chunk of body) await take(chunk);
      md5 = await sink.digest();
      await rename(partial, target);
    } catch (e) {
      sink.discard();
      await rm(partial, { force: true });
      throw e;
    }
    return { size, md5 };
  }

  async writePart(prefix: string, part: number, body: AsyncIterable<Uint8Array>): Promise<StoredPart> {
    const tmp = `${prefix}/incoming-${randomToken(12)}`;
    const { size, md5 } = await this.write(tmp, body);
    // Earlier writes of the same part number are replaced by this one.
    for (const old of (await this.parts(prefix)).filter((p) => p.part === part))
      await rm(this.localFile(`${prefix}/${partName(old.part, old.md5)}`), { force: true });
    await rename(this.localFile(tmp), this.localFile(`${prefix}/${partName(part, md5)}`));
    return { part, size, md5 };
  }

  async parts(prefix: string): Promise<StoredPart[]> {
    let names: string[];
    try {
      names = await readdir(this.localFile(prefix));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw e;
    }
    const out: StoredPart[] = [];
    for (const name of names) {
      const m = PART_NAME.exec(name);
      if (!m) continue;
      const info = await stat(this.localFile(`${prefix}/${name}`)).catch(() => undefined);
      if (info) out.push({ part: Number(m[1]), md5: m[2]!, size: info.size });
    }
    return out.sort((a, b) => a.part - b.part);
  }

  async compose(key: string, prefix: string, parts: readonly StoredPart[]): Promise<{ size: number }> {
    const files = parts.map((p) => this.localFile(`${prefix}/${partName(p.part, p.md5)}`));
    async function* concatenated(): AsyncIterable<Uint8Array> {
      for (const f of files) yield* createReadStream(f, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Uint8Array>;
    }
    const { size } = await this.write(key, concatenated());
    return { size };
  }

  async stat(key: string): Promise<ObjectInfo | undefined> {
    try {
      const s = await stat(this.localFile(key));
      if (!s.isFile()) return undefined;
      return { size: s.size, etag: `"${s.size.toString(16)}-${Math.floor(s.mtimeMs).toString(16)}"`, lastModified: s.mtimeMs };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT" || e instanceof BlobError) return undefined;
      throw e;
    }
  }

  read(key: string, start: number, end: number): AsyncIterable<Uint8Array> {
    return createReadStream(this.localFile(key), { start, end, highWaterMark: 256 * 1024 });
  }

  async deletePrefix(prefix: string): Promise<void> {
    await rm(this.localFile(prefix), { recursive: true, force: true });
  }
}

/** The managed storage the configuration names. */
export function openManagedStorage(config: Pick<Config, "managed">, guard: NetGuard): ManagedStorage {
  const m = config.managed;
  if (m.kind === "local") return new LocalManagedStorage(m.dir);
  return new S3ManagedStorage(m, guard);
}

type S3Settings = Extract<Config["managed"], { kind: "s3" }>;

/**
 * Managed storage in an S3-compatible bucket: writes stream through multipart uploads of the SDK
 * (memory bounded by part size and queue), parts are objects named by their MD5, and a multipart
 * upload is composed server-side by copying its parts into one object.
 */
export class S3ManagedStorage implements ManagedStorage {
  readonly blob: S3Blob;
  private readonly bucket: string;

  constructor(settings: S3Settings, guard: NetGuard) {
    this.bucket = settings.bucket;
    this.blob = new S3Blob(
      {
        scheme: "s3",
        bucket: settings.bucket,
        region: settings.region,
        endpoint: settings.endpoint,
        accessKeyId: settings.keys?.accessKeyId,
        secretAccessKey: settings.keys?.secretAccessKey,
        allowHttp: true,
      },
      guard,
    );
  }

  async write(key: string, body: AsyncIterable<Uint8Array>, contentType: string): Promise<{ size: number; md5: string }> {
    const hash = new OffloadedMd5();
    let size = 0;
    const counted = Readable.from(
      (async function* () {
        for await (const chunk of body) {
          await hash.update(chunk);
          size += chunk.byteLength;
          yield chunk;
        }
      })(),
    );
    try {
      await new Upload({
        client: this.blob.client,
        params: { Bucket: this.bucket, Key: key, Body: counted, ContentType: contentType },
        partSize: 8 * 1024 * 1024,
        queueSize: 2,
        leavePartsOnError: false,
      }).done();
    } catch (e) {
      hash.discard();
      throw this.blob.failure(e, key);
    }
    return { size, md5: await hash.digest() };
  }

  async writePart(prefix: string, part: number, body: AsyncIterable<Uint8Array>): Promise<StoredPart> {
    const tmp = `${prefix}/incoming-${randomToken(12)}`;
    const { size, md5 } = await this.write(tmp, body, "application/octet-stream");
    const stale = (await this.parts(prefix)).filter((p) => p.part === part && p.md5 !== md5);
    await this.copy(tmp, `${prefix}/${partName(part, md5)}`);
    await this.blob.delete(tmp);
    for (const old of stale) await this.blob.delete(`${prefix}/${partName(old.part, old.md5)}`);
    return { part, size, md5 };
  }

  async parts(prefix: string): Promise<StoredPart[]> {
    const out: StoredPart[] = [];
    for await (const o of this.list(`${prefix}/`)) {
      const m = PART_NAME.exec(o.key.slice(prefix.length + 1));
      if (m) out.push({ part: Number(m[1]), md5: m[2]!, size: o.size });
    }
    return out.sort((a, b) => a.part - b.part);
  }

  async compose(key: string, prefix: string, parts: readonly StoredPart[]): Promise<{ size: number }> {
    const size = parts.reduce((s, p) => s + p.size, 0);
    if (parts.length === 1) {
      await this.copy(`${prefix}/${partName(parts[0]!.part, parts[0]!.md5)}`, key);
      return { size };
    }
    const c = this.blob.client;
    try {
      const { UploadId } = await c.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key }));
      const done: { PartNumber: number; ETag: string }[] = [];
      for (const [i, p] of parts.entries()) {
        const r = await c.send(
          new UploadPartCopyCommand({
            Bucket: this.bucket,
            Key: key,
            UploadId,
            PartNumber: i + 1,
            CopySource: `${this.bucket}/${prefix}/${partName(p.part, p.md5)}`,
          }),
        );
        done.push({ PartNumber: i + 1, ETag: r.CopyPartResult?.ETag ?? "" });
      }
      await c.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId, MultipartUpload: { Parts: done } }));
    } catch (e) {
      throw this.blob.failure(e, key);
    }
    return { size };
  }

  async stat(key: string): Promise<ObjectInfo | undefined> {
    try {
      const r = await this.blob.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: r.ContentLength ?? 0, etag: r.ETag ?? `"${key}"`, lastModified: r.LastModified?.getTime() ?? 0 };
    } catch (e) {
      const failure = this.blob.failure(e, key);
      if (failure.kind === "not_found") return undefined;
      throw failure;
    }
  }

  async *read(key: string, start: number, end: number): AsyncIterable<Uint8Array> {
    let body: unknown;
    try {
      body = (await this.blob.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: `bytes=${start}-${end}` }))).Body;
    } catch (e) {
      throw this.blob.failure(e, key);
    }
    if (!(body instanceof Readable)) throw new BlobError("unreachable", `${key}: the response had no body`);
    yield* body as AsyncIterable<Uint8Array>;
  }

  async deletePrefix(prefix: string): Promise<void> {
    const keys: string[] = [];
    for await (const o of this.list(`${prefix}/`)) keys.push(o.key);
    for (let i = 0; i < keys.length; i += 1000) {
      await this.blob.client.send(
        new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys.slice(i, i + 1000).map((Key) => ({ Key })), Quiet: true } }),
      );
    }
  }

  private async copy(from: string, to: string): Promise<void> {
    try {
      await this.blob.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: to, CopySource: `${this.bucket}/${from}` }));
    } catch (e) {
      throw this.blob.failure(e, from);
    }
  }

  private async *list(prefix: string): AsyncIterable<{ key: string; size: number }> {
    let token: string | undefined;
    do {
      const r = await this.blob.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }));
      for (const o of r.Contents ?? []) if (o.Key) yield { key: o.Key, size: o.Size ?? 0 };
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
  }
}
