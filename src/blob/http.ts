// A read-only origin over HTTPS: GET <base_url>/<key> with the origin's custom headers, through
// the network guard (redirects re-checked; the headers are not sent past the first origin).
import type { GuardedResponse, NetGuard } from "../net-guard.js";
import { BlobError, saveBody, transportError, type BlobStore } from "./port.js";

export interface HttpLocation {
  readonly baseUrl: string;
  readonly headers: Readonly<Record<string, string>>;
}

export class HttpBlob implements BlobStore {
  private readonly base: string;

  constructor(
    private readonly location: HttpLocation,
    private readonly guard: NetGuard,
  ) {
    this.base = location.baseUrl.replace(/\/+$/, "");
  }

  put(key: string): Promise<{ size: number }> {
    return Promise.reject(new BlobError("read_only", `${this.url(key)}: http origins are read-only`));
  }

  delete(key: string): Promise<void> {
    return Promise.reject(new BlobError("read_only", `${this.url(key)}: http origins are read-only`));
  }

  async getToFile(key: string, file: string): Promise<{ size: number }> {
    const res = await this.get(key, "GET");
    expectOk(res, this.url(key));
    return saveBody(res.body, file, this.url(key));
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    const res = await this.get(key, "HEAD");
    res.body.resume();
    if (res.status === 404 || res.status === 410) return undefined;
    expectOk(res, this.url(key));
    return { size: Number(res.headers["content-length"] ?? 0) };
  }

  async checkRead(prefix: string): Promise<void> {
    // A server cannot be listed: a missing probe (404) shows access, a refusal shows none.
    const res = await this.get(`${prefix}.media-read-probe`, "GET");
    res.body.destroy();
    if (res.status === 404 || res.status === 410) return;
    expectOk(res, this.url(prefix));
  }

  /** None: http origins are read with their custom headers, which a bare URL would not carry. */
  signedUrl(): undefined {
    return undefined;
  }

  url(key: string): string {
    return `${this.base}/${key.split("/").map(encodeURIComponent).join("/")}`;
  }

  private async get(key: string, method: "GET" | "HEAD"): Promise<GuardedResponse> {
    try {
      return await this.guard.request(this.url(key), { method, headers: this.location.headers });
    } catch (e) {
      throw transportError(e, this.url(key)) ?? new BlobError("unreachable", `${this.url(key)}: ${(e as Error).message}`, { cause: e });
    }
  }
}

function expectOk(res: GuardedResponse, where: string): void {
  if (res.status >= 200 && res.status < 300) return;
  res.body.resume();
  if (res.status === 401 || res.status === 403)
    throw new BlobError("denied", `${where}: the server refused access (HTTP ${res.status}); check the origin's headers`);
  if (res.status === 404 || res.status === 410) throw new BlobError("not_found", `${where} does not exist (HTTP ${res.status})`);
  if (res.status >= 300 && res.status < 400) throw new BlobError("unreachable", `${where}: redirected too often or without a location (HTTP ${res.status})`);
  throw new BlobError(res.status >= 500 ? "unreachable" : "invalid", `${where}: the server answered HTTP ${res.status}`);
}
