// Inputs named by URL: https:// downloads through the network guard, and storage URLs
// (s3://, gs://, r2://) split into bucket and key.
import { createWriteStream } from "node:fs";
import { rm, stat } from "node:fs/promises";
import { pipeline } from "node:stream/promises";
import type { NetGuard } from "../net-guard.js";
import { BlobError, transportError } from "./port.js";

/** Downloads an https:// URL into a local file; redirects are followed and each one re-checked. */
export async function fetchUrlToFile(
  url: string,
  file: string,
  guard: NetGuard,
  options: { headers?: Record<string, string>; allowHttp?: boolean } = {},
): Promise<{ size: number }> {
  let res;
  try {
    res = await guard.request(url, {
      method: "GET",
      ...(options.headers ? { headers: options.headers } : {}),
      ...(options.allowHttp ? { allowHttp: true } : {}),
      timeoutMs: 60_000,
    });
  } catch (e) {
    throw transportError(e, url) ?? new BlobError("unreachable", `${url}: ${(e as Error).message}`, { cause: e });
  }
  if (res.status !== 200) {
    res.body.resume();
    const kind = res.status === 404 || res.status === 410 ? "not_found" : res.status === 401 || res.status === 403 ? "denied" : "unreachable";
    throw new BlobError(kind, `${url} answered HTTP ${res.status}`);
  }
  try {
    await pipeline(res.body, createWriteStream(file));
    return { size: (await stat(file)).size };
  } catch (e) {
    await rm(file, { force: true });
    throw transportError(e, url) ?? e;
  }
}

export interface StorageUrl {
  readonly provider: "s3" | "gcs" | "r2";
  readonly bucket: string;
  readonly key: string;
}

const SCHEMES: Readonly<Record<string, StorageUrl["provider"]>> = { "s3:": "s3", "gs:": "gcs", "r2:": "r2" };

/** "s3://bucket/key", "gs://bucket/key" or "r2://bucket/key"; throws BlobError invalid otherwise. */
export function parseStorageUrl(url: string): StorageUrl {
  const match = /^([a-z0-9]+:)\/\/([^/?#]+)\/([^?#]+)$/.exec(url);
  const provider = match ? SCHEMES[match[1]!] : undefined;
  if (!match || !provider) throw new BlobError("invalid", `"${url}" is not a storage URL (s3://bucket/key, gs://bucket/key or r2://bucket/key)`);
  return { provider, bucket: match[2]!, key: match[3]! };
}
