// Time-limited GET URLs for objects in a caller's bucket: AWS Signature V4 query signing (S3, R2
// and S3-compatible servers) and Google's V4 signing with a service account key (GCS). Pure
// computation: no request is made, so nothing here passes the network guard.
import { createHash, createHmac, createSign } from "node:crypto";

/** RFC 3986 encoding, as both signature schemes require. */
const rfc3986 = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const encodePath = (key: string) => key.split("/").map(rfc3986).join("/");
const sha256hex = (s: string) => createHash("sha256").update(s).digest("hex");
const stamp = (at: Date) =>
  at
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");

function canonicalQuery(params: Record<string, string>): string {
  return Object.keys(params)
    .sort()
    .map((k) => `${rfc3986(k)}=${rfc3986(params[k]!)}`)
    .join("&");
}

export interface S3Signing {
  readonly bucket: string;
  readonly region: string;
  /** A custom endpoint (path-style); unset means AWS's virtual-hosted endpoint. */
  readonly endpoint?: string | undefined;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** A presigned GET URL (AWS Signature V4, query parameters, unsigned payload). */
export function presignS3Get(s: S3Signing, key: string, expiresSeconds: number, at = new Date()): string {
  const base = s.endpoint ? new URL(s.endpoint) : new URL(`https://${s.bucket}.s3.${s.region}.amazonaws.com`);
  const path = s.endpoint ? `/${rfc3986(s.bucket)}/${encodePath(key)}` : `/${encodePath(key)}`;
  return presignV4(`${base.protocol}//${base.host}`, path, s, expiresSeconds, at);
}

/** Signature V4 query signing of a GET of `path` at `origin` (scheme://host[:port]). */
export function presignV4(
  origin: string,
  path: string,
  s: Pick<S3Signing, "region" | "accessKeyId" | "secretAccessKey">,
  expiresSeconds: number,
  at: Date,
): string {
  const host = new URL(origin).host;
  const time = stamp(at);
  const date = time.slice(0, 8);
  const scope = `${date}/${s.region}/s3/aws4_request`;
  const params: Record<string, string> = {
    "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
    "X-Amz-Credential": `${s.accessKeyId}/${scope}`,
    "X-Amz-Date": time,
    "X-Amz-Expires": String(expiresSeconds),
    "X-Amz-SignedHeaders": "host",
  };
  const query = canonicalQuery(params);
  const request = ["GET", path, query, `host:${host}`, "", "host", "UNSIGNED-PAYLOAD"].join("\n");
  const toSign = ["AWS4-HMAC-SHA256", time, scope, sha256hex(request)].join("\n");
  let signingKey: Buffer = createHmac("sha256", `AWS4${s.secretAccessKey}`).update(date).digest();
  for (const part of [s.region, "s3", "aws4_request"]) signingKey = createHmac("sha256", signingKey).update(part).digest();
  const signature = createHmac("sha256", signingKey).update(toSign).digest("hex");
  return `${origin}${path}?${query}&X-Amz-Signature=${signature}`;
}

export interface GcsSigning {
  readonly bucket: string;
  readonly clientEmail: string;
  readonly privateKey: string;
  /** Default https://storage.googleapis.com. */
  readonly endpoint?: string | undefined;
}

/** A V4 signed GET URL for a GCS object, signed with the service account's private key. */
export function signGcsGet(s: GcsSigning, key: string, expiresSeconds: number, at = new Date()): string {
  const base = new URL(s.endpoint ?? "https://storage.googleapis.com");
  const path = `/${rfc3986(s.bucket)}/${encodePath(key)}`;
  const time = stamp(at);
  const scope = `${time.slice(0, 8)}/auto/storage/goog4_request`;
  const params: Record<string, string> = {
    "X-Goog-Algorithm": "GOOG4-RSA-SHA256",
    "X-Goog-Credential": `${s.clientEmail}/${scope}`,
    "X-Goog-Date": time,
    "X-Goog-Expires": String(expiresSeconds),
    "X-Goog-SignedHeaders": "host",
  };
  const query = canonicalQuery(params);
  const request = ["GET", path, query, `host:${base.host}`, "", "host", "UNSIGNED-PAYLOAD"].join("\n");
  const toSign = ["GOOG4-RSA-SHA256", time, scope, sha256hex(request)].join("\n");
  const signature = createSign("RSA-SHA256").update(toSign).sign(s.privateKey, "hex");
  return `${base.protocol}//${base.host}${path}?${query}&X-Goog-Signature=${signature}`;
}
