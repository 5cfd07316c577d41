// Google Cloud Storage through its JSON API, with service-account OAuth from google-auth-library.
//
// Why not @google-cloud/storage: its object calls go through teeny-request, which takes no agent
// (only a proxy URL or its own global pool), so they could not pass the network guard at connect
// time. Here every request is the guard's own `request`, and the token exchange is gaxios with
// the guard's agents (transporterOptions.agent). Only the token endpoint of google-auth-library is
// contacted besides the storage endpoint: a token_uri or universe_domain inside a caller's key file
// is refused by parseServiceAccount, so a key file cannot point the service elsewhere.
import { createPrivateKey } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { JWT } from "google-auth-library";
import type { GuardedResponse, NetGuard } from "../net-guard.js";
import { BlobError, saveBody, transportError, type BlobStore } from "./port.js";
import { signGcsGet } from "./sign.js";

export const GCS_DEFAULT_ENDPOINT = "https://storage.googleapis.com";
const SCOPE = "https://www.googleapis.com/auth/devstorage.read_write";

export interface ServiceAccount {
  readonly clientEmail: string;
  readonly privateKey: string;
  readonly privateKeyId?: string;
}

/** A service account key file as Google issues it; a description of the fault when it is not one. */
export function parseServiceAccount(json: string): { account: ServiceAccount } | { error: string } {
  let data: unknown;
  try {
    data = JSON.parse(json);
  } catch {
    return { error: "must be the JSON content of a service account key file" };
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) return { error: "must be a JSON object (a service account key file)" };
  const f = data as Record<string, unknown>;
  if (f.type !== "service_account") return { error: `must be a service account key ("type": "service_account"), got type ${JSON.stringify(f.type ?? null)}` };
  if (typeof f.client_email !== "string" || !/^[^@\s]+@[^@\s]+$/.test(f.client_email)) return { error: "client_email is missing or not an email address" };
  if (typeof f.private_key !== "string" || !f.private_key.includes("PRIVATE KEY")) return { error: "private_key is missing or not a PEM private key" };
  try {
    createPrivateKey(f.private_key);
  } catch {
    return { error: "private_key cannot be read as a PEM private key" };
  }
  // These two would steer token requests or API calls to another host.
  if (f.token_uri !== undefined && f.token_uri !== "https://oauth2.googleapis.com/token")
    return { error: "token_uri must be https://oauth2.googleapis.com/token" };
  if (f.universe_domain !== undefined && f.universe_domain !== "googleapis.com") return { error: "universe_domain must be googleapis.com" };
  return {
    account: { clientEmail: f.client_email, privateKey: f.private_key, ...(typeof f.private_key_id === "string" ? { privateKeyId: f.private_key_id } : {}) },
  };
}

export interface GcsLocation {
  readonly bucket: string;
  readonly account: ServiceAccount;
  /**
   * Operator's GCS-compatible endpoint (MEDIA_GCS_API_ENDPOINT). Over http:// it is taken for an
   * emulator and gets no OAuth token, so a token never travels in clear.
   */
  readonly endpoint?: string | undefined;
}

export class GcsBlob implements BlobStore {
  private readonly endpoint: string;
  private readonly allowHttp: boolean;
  private readonly auth: JWT | undefined;

  constructor(
    private readonly location: GcsLocation,
    private readonly guard: NetGuard,
  ) {
    this.endpoint = location.endpoint ?? GCS_DEFAULT_ENDPOINT;
    this.allowHttp = location.endpoint !== undefined;
    try {
      guard.parse(this.endpoint, this.allowHttp);
    } catch (e) {
      throw transportError(e, this.endpoint) ?? e;
    }
    this.auth = this.endpoint.startsWith("http://")
      ? undefined
      : new JWT({
          email: location.account.clientEmail,
          key: location.account.privateKey,
          ...(location.account.privateKeyId ? { keyId: location.account.privateKeyId } : {}),
          scopes: [SCOPE],
          transporterOptions: { agent: (url: URL) => guard.agent(url.protocol === "http:" ? "http:" : "https:"), retry: false },
        });
  }

  async put(key: string, file: string, contentType = "application/octet-stream"): Promise<{ size: number }> {
    const { size } = await stat(file);
    const res = await this.call("POST", `/upload/storage/v1/b/${enc(this.location.bucket)}/o`, key, {
      query: { uploadType: "media", name: key },
      headers: { "content-type": contentType, "content-length": String(size) },
      body: createReadStream(file),
    });
    await expectOk(res, this.url(key));
    res.body.resume();
    return { size };
  }

  async getToFile(key: string, file: string): Promise<{ size: number }> {
    const res = await this.call("GET", this.objectPath(key), key, { query: { alt: "media" } });
    await expectOk(res, this.url(key));
    return saveBody(res.body, file, this.url(key));
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    const res = await this.call("GET", this.objectPath(key), key);
    if (res.status === 404) {
      res.body.resume();
      return undefined;
    }
    await expectOk(res, this.url(key));
    const meta = JSON.parse(await text(res)) as { size?: string };
    return { size: Number(meta.size ?? 0) };
  }

  async delete(key: string): Promise<void> {
    const res = await this.call("DELETE", this.objectPath(key), key);
    if (res.status === 404) return void res.body.resume();
    await expectOk(res, this.url(key));
    res.body.resume();
  }

  async checkRead(prefix: string): Promise<void> {
    const res = await this.call("GET", `/storage/v1/b/${enc(this.location.bucket)}/o`, prefix, { query: { prefix, maxResults: "1" } });
    if (res.status === 404) {
      res.body.resume();
      throw new BlobError("not_found", `bucket "${this.location.bucket}" does not exist`);
    }
    // Listing needs storage.objects.list; a reader with only get passes when a probe read is allowed.
    if (res.status === 403) {
      res.body.resume();
      await this.head(`${prefix}.media-read-probe`);
      return;
    }
    await expectOk(res, this.url(prefix));
    res.body.resume();
  }

  signedUrl(key: string, expiresSeconds: number): string {
    return signGcsGet(
      {
        bucket: this.location.bucket,
        clientEmail: this.location.account.clientEmail,
        privateKey: this.location.account.privateKey,
        endpoint: this.location.endpoint,
      },
      key,
      expiresSeconds,
    );
  }

  url(key: string): string {
    return `gs://${this.location.bucket}/${key}`;
  }

  private objectPath(key: string): string {
    return `/storage/v1/b/${enc(this.location.bucket)}/o/${enc(key)}`;
  }

  private async call(
    method: string,
    path: string,
    key: string,
    opts: { query?: Record<string, string>; headers?: Record<string, string>; body?: Readable } = {},
  ): Promise<GuardedResponse> {
    const url = new URL(`${this.endpoint}${path}`);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
    try {
      const auth = this.auth ? await this.auth.getRequestHeaders() : {};
      return await this.guard.request(url, {
        method,
        headers: { ...opts.headers, ...auth },
        allowHttp: this.allowHttp,
        maxRedirects: 0,
        ...(opts.body ? { body: opts.body } : {}),
      });
    } catch (e) {
      throw (
        tokenRefusal(e, this.location.account.clientEmail) ??
        transportError(e, this.url(key)) ??
        new BlobError("unreachable", `${this.url(key)}: ${(e as Error).message}`, { cause: e })
      );
    }
  }
}

const enc = encodeURIComponent;

/** Google's answer to a refused token exchange (wrong or deleted key), as a denial. */
function tokenRefusal(e: unknown, email: string): BlobError | undefined {
  const data = (e as { response?: { data?: unknown } }).response?.data;
  if (typeof data !== "object" || data === null || !("error" in data)) return undefined;
  const { error, error_description: description } = data as { error: unknown; error_description?: unknown };
  const detail = typeof description === "string" ? `${String(error)}: ${description}` : String(error);
  return new BlobError("denied", `Google refused the service account key of ${email} (${detail})`, { cause: e });
}

async function text(res: GuardedResponse, limit = 64 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buf.length;
    if (size <= limit) chunks.push(buf);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Resolves on a 2xx answer; otherwise reads Google's error message and throws it as a BlobError. */
async function expectOk(res: GuardedResponse, where: string): Promise<void> {
  if (res.status >= 200 && res.status < 300) return;
  let message = "";
  try {
    message = (JSON.parse(await text(res)) as { error?: { message?: string } }).error?.message ?? "";
  } catch {
    /* not JSON: the status says enough */
  }
  const why = message ? `: ${message}` : "";
  if (res.status === 401) throw new BlobError("denied", `the service account key was refused (HTTP 401${why})`);
  if (res.status === 403) throw new BlobError("denied", `access denied: the service account lacks permission for this bucket (HTTP 403${why})`);
  if (res.status === 404) throw new BlobError("not_found", `${where} does not exist`);
  if (res.status >= 500) throw new BlobError("unreachable", `${where}: the storage service failed (HTTP ${res.status}${why})`);
  throw new BlobError("invalid", `${where}: HTTP ${res.status}${why}`);
}
