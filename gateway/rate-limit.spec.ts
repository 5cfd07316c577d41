import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type Interceptor } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";
import { HealthService } from "../src/gen/media/v1/health_pb.js";
import { APIKeyService } from "../src/gen/media/v1/api_key_pb.js";
import { CALLER, type Caller } from "./access.js";
import { CLIENT_ADDRESS } from "./front.js";
import { addressKey, limitField, policyField, rateLimitInterceptors, TokenBuckets } from "./rate-limit.js";

const clock = () => {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
};

describe("TokenBuckets", () => {
  it("admits a burst, then refills at the sustained rate", () => {
    const c = clock();
    const b = new TokenBuckets({ quota: 10, windowSeconds: 1, burst: 30 }, c.now);
    for (let i = 0; i < 30; i++) expect(b.take("k").allowed).toBe(true);
    const refused = b.take("k");
    expect(refused).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 1 });
    c.advance(100); // one token at 10/s
    expect(b.take("k")).toMatchObject({ allowed: true, remaining: 0 });
    expect(b.take("k").allowed).toBe(false);
    c.advance(1000);
    for (let i = 0; i < 10; i++) expect(b.take("k").allowed).toBe(true);
    expect(b.take("k").allowed).toBe(false);
  });

  it("reports remaining tokens and the whole seconds until full", () => {
    const c = clock();
    const b = new TokenBuckets({ quota: 10, windowSeconds: 1, burst: 30 }, c.now);
    expect(b.take("k")).toMatchObject({ allowed: true, remaining: 29, resetSeconds: 1 }); // 0.1 s to full, rounded up
    for (let i = 0; i < 20; i++) b.take("k");
    expect(b.take("k")).toMatchObject({ remaining: 8, resetSeconds: 3 }); // 22 used: 2.2 s
    c.advance(5000);
    expect(b.take("k")).toMatchObject({ remaining: 29, resetSeconds: 1 });
  });

  it("rounds Retry-After up to whole seconds, never below 1", () => {
    const c = clock();
    const slow = new TokenBuckets({ quota: 6, windowSeconds: 60, burst: 1 }, c.now); // a token every 10 s
    expect(slow.take("k").allowed).toBe(true);
    expect(slow.take("k")).toMatchObject({ allowed: false, retryAfterSeconds: 10 });
    c.advance(9_001);
    expect(slow.take("k")).toMatchObject({ allowed: false, retryAfterSeconds: 1 }); // 0.999 s left
    c.advance(999);
    expect(slow.take("k").allowed).toBe(true);
    const fast = new TokenBuckets({ quota: 1000, windowSeconds: 1, burst: 1 }, c.now);
    fast.take("k");
    expect(fast.take("k")).toMatchObject({ allowed: false, retryAfterSeconds: 1 }); // 1 ms, still 1 s
  });

  it("keeps buckets apart", () => {
    const c = clock();
    const b = new TokenBuckets({ quota: 1, windowSeconds: 1, burst: 1 }, c.now);
    expect(b.take("a").allowed).toBe(true);
    expect(b.take("a").allowed).toBe(false);
    expect(b.take("b").allowed).toBe(true);
  });

  it("peeks without counting, and without tracking callers it has never seen", () => {
    const c = clock();
    const b = new TokenBuckets({ quota: 1, windowSeconds: 1, burst: 2 }, c.now);
    expect(b.peek("new").allowed).toBe(true);
    expect(b.size).toBe(0);
    b.take("a");
    expect(b.peek("a")).toMatchObject({ allowed: true, remaining: 1 });
    b.take("a");
    expect(b.peek("a")).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
  });

  it("forgets buckets that are full again", () => {
    const c = clock();
    const b = new TokenBuckets({ quota: 10, windowSeconds: 1, burst: 20 }, c.now);
    for (let i = 0; i < 1000; i++) b.take(`10.0.${i >> 8}.${i & 255}`);
    expect(b.size).toBe(1000);
    c.advance(2_000); // 2 s: every bucket is full again
    b.take("someone");
    expect(b.size).toBe(1);
  });

  it("holds at most maxKeys buckets, dropping the least recently used", () => {
    const c = clock();
    const b = new TokenBuckets({ quota: 1, windowSeconds: 3600, burst: 1 }, c.now, 100);
    b.take("first");
    for (let i = 0; i < 10_000; i++) b.take(`attacker-${i}`);
    expect(b.size).toBe(100);
    expect(b.take("attacker-9999").allowed).toBe(false); // recent ones are still counted
  });
});

describe("response fields", () => {
  it("follow the structured-field syntax of draft-ietf-httpapi-ratelimit-headers", () => {
    expect(policyField("key", { quota: 100, windowSeconds: 1, burst: 100 })).toBe('"key";q=100;w=1');
    expect(policyField("key", { quota: 200, windowSeconds: 1, burst: 400 })).toBe('"key";q=200;w=1;media-burst=400');
    expect(policyField("anonymous", { quota: 600, windowSeconds: 60, burst: 60 })).toBe('"anonymous";q=600;w=60;media-burst=60');
    expect(limitField("key", { allowed: true, remaining: 42, resetSeconds: 3, retryAfterSeconds: 1 })).toBe('"key";r=42;t=3');
    expect(limitField("key", { allowed: false, remaining: 0, resetSeconds: 9, retryAfterSeconds: 2 })).toBe('"key";r=0;t=2');
  });
});

describe("addressKey", () => {
  it("keeps IPv4, unwraps IPv4-mapped IPv6 and groups IPv6 by /64", () => {
    expect(addressKey("203.0.113.7")).toBe("203.0.113.7");
    expect(addressKey("::ffff:127.0.0.1")).toBe("127.0.0.1");
    expect(addressKey("0000:0000:0000:0000:0000:ffff:7f00:0001")).toBe("127.0.0.1");
    expect(addressKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(addressKey("[2001:DB8:1:2:ffff:1:2:3]")).toBe("2001:db8:1:2::/64");
    expect(addressKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("")).toBe("unknown");
  });
});

describe("config", () => {
  const base = { MEDIA_DATA_DIR: "/tmp/x" };
  it("parses quota, window and burst, with generous defaults", () => {
    const c = loadConfig(base);
    expect(c.rateLimits.key).toEqual({ quota: 200, windowSeconds: 1, burst: 400 });
    expect(c.rateLimits.anonymous).toEqual({ quota: 20, windowSeconds: 1, burst: 60 });
    expect(loadConfig({ ...base, MEDIA_RATE_LIMIT_KEY: "600/m" }).rateLimits.key).toEqual({ quota: 600, windowSeconds: 60, burst: 600 });
    expect(loadConfig({ ...base, MEDIA_RATE_LIMIT_ANONYMOUS: "0", MEDIA_RATE_LIMIT_HEALTH: "off" }).rateLimits).toMatchObject({
      anonymous: undefined,
      health: undefined,
    });
  });
  it("stops on a bad value, naming the setting", () => {
    expect(() => loadConfig({ ...base, MEDIA_RATE_LIMIT_KEY: "fast" })).toThrow(/MEDIA_RATE_LIMIT_KEY/);
    expect(() => loadConfig({ ...base, MEDIA_RATE_LIMIT_HEALTH: "10/s,burst=0" })).toThrow(/MEDIA_RATE_LIMIT_HEALTH/);
  });
});

describe("rateLimitInterceptors", () => {
  const policy = { quota: 1, windowSeconds: 1, burst: 2 };
  const keyCaller = { kind: "key", key: { id: "ak_1" } } as unknown as Caller;
  type Req = Parameters<Parameters<Interceptor>[0]>[0];
  const request = (method: "Check" | "Get", authorization?: string): Req => {
    const service = method === "Check" ? HealthService : APIKeyService;
    const contextValues = createContextValues().set(CLIENT_ADDRESS, "198.51.100.1");
    const header = new Headers(authorization ? { authorization } : {});
    return {
      service,
      method: method === "Check" ? HealthService.method.check : APIKeyService.method.get,
      header,
      contextValues,
      stream: false,
    } as unknown as Req;
  };
  const answer = async () => ({ header: new Headers(), trailer: new Headers(), stream: false, message: create(HealthService.method.check.output) }) as never;

  function chain(access: (req: Req) => void) {
    const c = clock();
    const { byAddress, byCaller } = rateLimitInterceptors({
      limits: { key: policy, anonymous: policy, health: policy },
      isPublic: (_s, m) => m === "Check",
      now: c.now,
    });
    const accessInterceptor: Interceptor = (next) => async (req) => (access(req), next(req));
    return { c, run: byAddress(accessInterceptor(byCaller(answer))) };
  }

  it("limits a key after access, with the fields on success and refusal", async () => {
    const { run } = chain((req) => void req.contextValues.set(CALLER, keyCaller));
    const first = await run(request("Get", "Bearer ak_x"));
    expect(first.header.get("ratelimit-policy")).toBe('"key";q=1;w=1;media-burst=2');
    expect(first.header.get("ratelimit")).toBe('"key";r=1;t=1');
    await run(request("Get", "Bearer ak_x"));
    const refused = await run(request("Get", "Bearer ak_x")).catch((e: unknown) => e as ConnectError);
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((refused as ConnectError).metadata.get("retry-after")).toBe("1");
    expect((refused as ConnectError).metadata.get("ratelimit")).toBe('"key";r=0;t=1');
    expect((refused as ConnectError).details).toHaveLength(1);
  });

  it("refuses an address whose calls keep failing authentication before authenticating again", async () => {
    let authChecks = 0;
    const { run } = chain(() => {
      authChecks++;
      throw new ConnectError("invalid API key", Code.Unauthenticated);
    });
    const codes: Code[] = [];
    for (let i = 0; i < 5; i++)
      codes.push(
        await run(request("Get", "Bearer ak_bad")).then(
          () => -1 as Code,
          (e: ConnectError) => e.code,
        ),
      );
    expect(codes).toEqual([Code.Unauthenticated, Code.Unauthenticated, Code.ResourceExhausted, Code.ResourceExhausted, Code.ResourceExhausted]);
    expect(authChecks).toBe(2);
  });

  it("limits public methods per address by the health policy, apart from anonymous calls", async () => {
    const { run } = chain(() => {
      throw new ConnectError("missing credentials", Code.Unauthenticated);
    });
    const noAuth = await run(request("Get")).catch((e: ConnectError) => e);
    expect((noAuth as ConnectError).metadata.get("ratelimit")).toBe('"anonymous";r=1;t=1');
    const health = chain(() => undefined);
    expect((await health.run(request("Check"))).header.get("ratelimit")).toBe('"health";r=1;t=1');
    await health.run(request("Check"));
    await expect(health.run(request("Check"))).rejects.toMatchObject({ code: Code.ResourceExhausted });
  });
});
