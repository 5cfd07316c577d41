// Request rate limits: token buckets per API key, per signed-in user and per client address,
// answered with resource_exhausted (HTTP 429) and the IETF RateLimit-Policy and RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers-11). State lives in this gateway process only.
import { isIP } from "node:net";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Config, RatePolicy } from "../src/config.js";
import { apiError } from "../src/errors.js";
import { CALLER } from "./access.js";
import { CLIENT_ADDRESS } from "./front.js";

/** What one take (or peek) decided, in whole numbers ready for the response fields. */
export interface Verdict {
  readonly allowed: boolean;
  /** Whole tokens left after this call: calls that would be admitted right now. */
  readonly remaining: number;
  /** Whole seconds until the bucket is full again (0 when full). */
  readonly resetSeconds: number;
  /** Whole seconds, at least 1, until one call is admitted again; meaningful when refused. */
  readonly retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Token buckets of one policy, keyed by caller. Memory is bounded: a bucket idle long enough to be
 * full again is the same as no bucket and is dropped, and past `maxKeys` the least recently used
 * bucket goes (the Map keeps buckets in order of last use).
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;
  /** Idle time after which any bucket is full again. */
  private readonly fullMs: number;
  private nextSweep = 0;

  constructor(
    readonly policy: RatePolicy,
    private readonly now: () => number = () => performance.now(),
    readonly maxKeys = 100_000,
  ) {
    this.perMs = policy.quota / (policy.windowSeconds * 1000);
    this.fullMs = policy.burst / this.perMs;
  }

  get size(): number {
    return this.buckets.size;
  }

  /** Counts one call against `id`'s bucket when a token is there; refuses it otherwise. */
  take(id: string): Verdict {
    return this.decide(id, true);
  }

  /** Whether a call would be admitted, without counting it. */
  peek(id: string): Verdict {
    return this.decide(id, false);
  }

  private decide(id: string, consume: boolean): Verdict {
    const now = this.now();
    if (now >= this.nextSweep) this.sweep(now);
    const { burst } = this.policy;
    let bucket = this.buckets.get(id);
    if (bucket) {
      bucket.tokens = Math.min(burst, bucket.tokens + (now - bucket.at) * this.perMs);
      bucket.at = now;
      this.buckets.delete(id); // re-inserted below: the Map's order is the order of last use
    } else {
      if (!consume) return this.verdict(true, burst);
      if (this.buckets.size >= this.maxKeys) this.evictOldest();
      bucket = { tokens: burst, at: now };
    }
    const allowed = bucket.tokens >= 1;
    if (allowed && consume) bucket.tokens -= 1;
    this.buckets.set(id, bucket);
    return this.verdict(allowed, bucket.tokens);
  }

  private verdict(allowed: boolean, tokens: number): Verdict {
    return {
      allowed,
      remaining: Math.floor(tokens),
      resetSeconds: Math.ceil((this.policy.burst - tokens) / this.perMs / 1000),
      retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / this.perMs / 1000)),
    };
  }

  /** Drops buckets idle long enough to be full: oldest first, stopping at the first recent one. */
  private sweep(now: number): void {
    for (const [id, b] of this.buckets) {
      if (now - b.at < this.fullMs) break;
      this.buckets.delete(id);
    }
    this.nextSweep = now + Math.min(1000, this.fullMs);
  }

  private evictOldest(): void {
    const oldest = this.buckets.keys().next();
    if (!oldest.done) this.buckets.delete(oldest.value);
  }
}

/** `RateLimit-Policy` of a policy: quota per window, and the burst when it differs from the quota. */
export function policyField(name: string, p: RatePolicy): string {
  return `"${name}";q=${p.quota};w=${p.windowSeconds}${p.burst === p.quota ? "" : `;media-burst=${p.burst}`}`;
}

/** `RateLimit` of a verdict; on a refusal the effective window is the Retry-After delay. */
export function limitField(name: string, v: Verdict): string {
  return v.allowed ? `"${name}";r=${v.remaining};t=${v.resetSeconds}` : `"${name}";r=0;t=${v.retryAfterSeconds}`;
}

/**
 * The key of an address's bucket: IPv4 as is (also when IPv4-mapped), IPv6 by its /64, which one
 * subscriber usually holds whole; anything else (empty, a Unix socket) as "unknown" or itself.
 */
export function addressKey(address: string): string {
  let a = address.trim().toLowerCase();
  if (a.startsWith("[") && a.endsWith("]")) a = a.slice(1, -1);
  const zone = a.indexOf("%");
  if (zone >= 0) a = a.slice(0, zone);
  if (a === "") return "unknown";
  const kind = isIP(a);
  if (kind === 4) return a;
  if (kind !== 6) return a;
  const groups = ipv6Groups(a);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join(".");
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(":")}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (isIP said so), with an embedded IPv4 tail. */
function ipv6Groups(a: string): number[] {
  const parse = (part: string): number[] => {
    if (part === "") return [];
    return part.split(":").flatMap((g) => {
      if (!g.includes(".")) return [parseInt(g, 16)];
      const [b0, b1, b2, b3] = g.split(".").map(Number) as [number, number, number, number];
      return [(b0 << 8) | b1, (b2 << 8) | b3];
    });
  };
  const double = a.indexOf("::");
  if (double < 0) return parse(a);
  const head = parse(a.slice(0, double));
  const tail = parse(a.slice(double + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** addressKey, remembered: hosts hand over the same few texts again and again. Bounded like any cache here. */
const addressKeys = new Map<string, string>();
function addressKeyOf(address: string): string {
  let key = addressKeys.get(address);
  if (key === undefined) {
    if (addressKeys.size >= 10_000) addressKeys.clear();
    addressKeys.set(address, (key = addressKey(address)));
  }
  return key;
}

export interface RateLimitOptions {
  readonly limits: Pick<Config["rateLimits"], "key" | "anonymous" | "health">;
  /** Methods that need no credentials (health): limited per address by the health policy. */
  readonly isPublic: (service: string, method: string) => boolean;
  readonly now?: () => number;
  readonly maxKeys?: number;
}

/** A limiter that is switched off: the interceptor chain does not even see it. */
const passThrough: Interceptor = (next) => next;

interface Limiter {
  readonly name: string;
  readonly buckets: TokenBuckets;
  readonly policyField: string;
  /** Who is counted, in the error message. */
  readonly who: string;
}

function limiter(name: string, who: string, policy: RatePolicy | undefined, o: RateLimitOptions): Limiter | undefined {
  return policy && { name, who, buckets: new TokenBuckets(policy, o.now, o.maxKeys), policyField: policyField(name, policy) };
}

function exhausted(l: Limiter, v: Verdict): ConnectError {
  const p = l.buckets.policy;
  const per = p.windowSeconds === 1 ? "second" : p.windowSeconds === 60 ? "minute" : "hour";
  const error = apiError(
    Code.ResourceExhausted,
    `rate limit exceeded for ${l.who}: ${p.quota} request${p.quota === 1 ? "" : "s"} per ${per}, bursts of ${p.burst}; retry after ${v.retryAfterSeconds} s`,
  );
  error.metadata.set("retry-after", String(v.retryAfterSeconds));
  stamp(error.metadata, l, v);
  return error;
}

function stamp(header: Headers, l: Limiter, v: Verdict): void {
  header.set("ratelimit-policy", l.policyField);
  header.set("ratelimit", limitField(l.name, v));
}

/** Stamps the limiter's fields on the answer of `pending`, success or error. */
function stamped<T extends { header: Headers }>(l: Limiter, v: Verdict, pending: Promise<T>): Promise<T> {
  return pending.then(
    (res) => (stamp(res.header, l, v), res),
    (e: unknown) => {
      if (e instanceof ConnectError) stamp(e.metadata, l, v);
      throw e;
    },
  );
}

/**
 * Two interceptors around the access interceptor. `byAddress` goes before it, so a flood of
 * anonymous or badly authenticated calls is refused before any hash, token or store check:
 * public methods take from the address's health bucket; calls without credentials take from its
 * anonymous bucket; calls with credentials pass while that bucket has a token, and one that access
 * refuses (no caller established) is then counted against it. `byCaller` goes after access and
 * counts every call of an API key (or portal user) against that caller's bucket.
 */
export function rateLimitInterceptors(o: RateLimitOptions): { byAddress: Interceptor; byCaller: Interceptor } {
  const health = limiter("health", "health checks from this address", o.limits.health, o);
  const anonymous = limiter("anonymous", "unauthenticated calls from this address", o.limits.anonymous, o);
  const key = limiter("key", "this API key", o.limits.key, o);
  const user = limiter("user", "this user", o.limits.key, o);

  const byAddress: Interceptor =
    !health && !anonymous
      ? passThrough
      : (next) => (req) => {
          const address = addressKeyOf(req.contextValues.get(CLIENT_ADDRESS));
          if (o.isPublic(req.service.typeName, req.method.name)) {
            if (!health) return next(req);
            const v = health.buckets.take(address);
            if (!v.allowed) return Promise.reject(exhausted(health, v));
            return stamped(health, v, next(req));
          }
          if (!anonymous) return next(req);
          if (!req.header.has("authorization")) {
            const v = anonymous.buckets.take(address);
            if (!v.allowed) return Promise.reject(exhausted(anonymous, v));
            return stamped(anonymous, v, next(req));
          }
          const gate = anonymous.buckets.peek(address);
          if (!gate.allowed) return Promise.reject(exhausted(anonymous, gate));
          return next(req).catch((e: unknown) => {
            // Refused by authentication or access: the work was done for nobody, so the address pays.
            if (req.contextValues.get(CALLER) === undefined) {
              const v = anonymous.buckets.take(address);
              if (e instanceof ConnectError) stamp(e.metadata, anonymous, v);
            }
            throw e;
          });
        };

  const byCaller: Interceptor =
    !key || !user
      ? passThrough
      : (next) => (req) => {
          const caller = req.contextValues.get(CALLER);
          if (!caller) return next(req); // public method: counted by address
          const l = caller.kind === "key" ? key : user;
          const v = l.buckets.take(caller.kind === "key" ? caller.key.id : caller.user.id);
          if (!v.allowed) return Promise.reject(exhausted(l, v));
          return stamped(l, v, next(req));
        };

  return { byAddress, byCaller };
}
