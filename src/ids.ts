// Resource identifiers: a fixed prefix and an opaque, random, URL-safe body.
import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

// Random bytes drawn from a pooled buffer: one syscall per 4 KiB instead of one per id.
let pool = Buffer.alloc(0);
let poolAt = 0;
function randomByte(): number {
  if (poolAt >= pool.length) {
    pool = randomBytes(4096);
    poolAt = 0;
  }
  return pool[poolAt++]!;
}

/** Random base62 string; rejection sampling keeps the distribution uniform. */
export function randomToken(length: number): string {
  let out = "";
  while (out.length < length) {
    const byte = randomByte();
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
}

export const Prefix = {
  organization: "org_",
  app: "app_",
  apiKey: "ak_",
  user: "usr_",
  membership: "mem_",
  origin: "ori_",
  preset: "pst_",
  job: "job_",
  video: "vid_",
  output: "out_",
  rendition: "ren_",
  fee: "fee_",
  webhookEndpoint: "whe_",
  event: "evt_",
  delivery: "whd_",
  request: "req_",
} as const;
export type Prefix = (typeof Prefix)[keyof typeof Prefix];

export function newId(prefix: Prefix): string {
  return prefix + randomToken(20);
}

export function hasPrefix(id: string, prefix: Prefix): boolean {
  return id.startsWith(prefix) && id.length > prefix.length && /^[A-Za-z0-9_]+$/.test(id);
}
