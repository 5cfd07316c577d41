// Request rate limits as a client sees them: token buckets per API key and per client address,
// refused with resource_exhausted (429) and errors details, RateLimit-Policy / RateLimit on every
// answer that went through a limiter, Retry-After that is enough. Limits are per gateway, so every
// call here goes to the first gateway (in cluster mode the suite's calls would alternate otherwise).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, errorDetails, ok, startHarness, type Harness, type Reply } from "../harness.js";
import { envelope } from "../../gateway/wire-errors.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// Tokens come back at 1 per second: a few calls in a row cannot be rescued by the refill.
const LIMITS = { MEDIA_RATE_LIMIT_KEY: "1/s,burst=4", MEDIA_RATE_LIMIT_ANONYMOUS: "1/s,burst=3", MEDIA_RATE_LIMIT_HEALTH: "1/s,burst=2" };

let h: Harness;
let base: string;
let keyA: { bearer: string; org: string };
let keyB: { bearer: string; org: string };

beforeAll(async () => {
  h = await startHarness(LIMITS);
  base = h.bases[0]!;
  keyA = { bearer: h.boot.api_key, org: h.boot.organization_id };
  const created = await ok(call(base, "APIKeyService/Create", { name: "second key" }, keyA));
  keyB = { bearer: created.secret, org: h.boot.organization_id };
  await sleep(4_000); // key A full again
});
afterAll(async () => {
  await h?.server.close();
});

/** Spends a bucket in one go (the calls arrive together), so the next token is a second away. */
async function drain(send: () => Promise<Reply>, n: number): Promise<Reply[]> {
  return Promise.all(Array.from({ length: n }, send));
}

/**
 * Calls with key A until one is refused. Its bucket refills a call a second, so a step that needs
 * it empty comes right after a 429 (on a loaded machine more than a second may pass between steps).
 */
async function emptyA(): Promise<Reply> {
  for (let i = 0; i < 20; i++) {
    const r = await call(base, "APIKeyService/List", {}, keyA);
    if (r.status === 429) return r;
  }
  throw new Error("key A never ran out");
}

async function expectExhausted(r: Reply, policy: string) {
  expect(r.status).toBe(429);
  expect(r.body.code).toBe("resource_exhausted");
  const details = await errorDetails(r.body);
  expect(details.code).toBe("rate_limited");
  expect(details.message).toMatch(/rate limit exceeded/);
  const retryAfter = Number(r.headers.get("retry-after"));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
  expect(r.headers.get("ratelimit-policy")).toMatch(new RegExp(`^"${policy}";q=1;w=1;media-burst=\\d+$`));
  expect(r.headers.get("ratelimit")).toBe(`"${policy}";r=0;t=${retryAfter}`);
  return retryAfter;
}

describe("rate limits", () => {
  it("counts an API key's calls, reports what is left, and answers 429 when they run out", async () => {
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call(base, "APIKeyService/List", {}, keyA);
      expect(r.status).toBe(200);
      expect(r.headers.get("ratelimit-policy")).toBe('"key";q=1;w=1;media-burst=4');
      seen.push(r.headers.get("ratelimit")!);
    }
    expect(seen.map((f) => /^"key";r=(\d+);t=(\d+)$/.exec(f)?.[1])).toEqual(["3", "2", "1"]);
    const replies = await drain(() => call(base, "APIKeyService/List", {}, keyA), 6);
    const refused = replies.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(4);
    await expectExhausted(refused[0]!, "key");

    // Other framings, while key A is empty: binary unary, and a server stream.
    const auth = { authorization: `Bearer ${keyA.bearer}`, "x-organization-id": keyA.org };
    await emptyA();
    const binary = await fetch(`${base}/media.v1.APIKeyService/List`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/proto" },
      body: new Uint8Array(),
    });
    expect(binary.status).toBe(429);
    expect(binary.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    expect(binary.headers.get("ratelimit")).toMatch(/^"key";r=0;t=[1-9]\d*$/);
    expect(((await binary.json()) as { code: string }).code).toBe("resource_exhausted");

    await emptyA();
    const watch = await fetch(`${base}/media.v1.JobService/Watch`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/connect+json" },
      body: envelope(0, new TextEncoder().encode(JSON.stringify({ id: "job_missing" }))),
    });
    expect(watch.status).toBe(200); // Connect streams carry errors in the end-of-stream message
    const frames = parseFrames(new Uint8Array(await watch.arrayBuffer()));
    expect(frames).toHaveLength(1);
    expect(frames[0]!.flags & 0b10).toBe(0b10);
    const end = JSON.parse(new TextDecoder().decode(frames[0]!.data));
    expect(end.error.code).toBe("resource_exhausted");
    expect(end.error.details?.[0]?.type).toBe("media.v1.ErrorDetails");
    const retryAfter = watch.headers.get("retry-after") ?? end.metadata?.["retry-after"]?.[0];
    expect(retryAfter).toMatch(/^[1-9]\d*$/);
  });

  it("keeps one key's exhaustion from another key", async () => {
    expect((await emptyA()).status).toBe(429);
    const b = await call(base, "APIKeyService/List", {}, keyB);
    expect(b.status).toBe(200);
    expect(b.headers.get("ratelimit")).toMatch(/^"key";r=3;t=\d+$/);
  });

  it("admits a call again after waiting as long as Retry-After says", async () => {
    const replies = await drain(() => call(base, "APIKeyService/List", {}, keyA), 3);
    const refused = replies.find((r) => r.status === 429)!;
    const retryAfter = await expectExhausted(refused, "key");
    await sleep(retryAfter * 1000);
    const again = await call(base, "APIKeyService/List", {}, keyA);
    expect(again.status).toBe(200);
    // r=0 when the call lands right as Retry-After ends; a loaded machine can take a second more to
    // send it, by which the bucket has refilled a call more (a whole run once saw r=1;t=3).
    expect(again.headers.get("ratelimit")).toMatch(/^"key";r=[0-9]+;t=\d+$/);
  });

  it("limits health checks per address, apart from everything else", async () => {
    const replies = await drain(() => call(base, "HealthService/Check", {}), 4);
    expect(replies.filter((r) => r.status === 200).length).toBeLessThanOrEqual(2);
    const ok200 = replies.find((r) => r.status === 200)!;
    expect(ok200.headers.get("ratelimit-policy")).toBe('"health";q=1;w=1;media-burst=2');
    expect(ok200.headers.get("ratelimit")).toMatch(/^"health";r=[01];t=\d+$/);
    await expectExhausted(
      replies.find((r) => r.status === 429)!,
      "health",
    );
    expect((await call(base, "APIKeyService/List", {}, keyB)).status).toBe(200);
  });

  it("limits calls without valid credentials per address, before authenticating them", async () => {
    const first = await call(base, "APIKeyService/List", {});
    expect(first.status).toBe(401);
    expect(first.headers.get("ratelimit-policy")).toBe('"anonymous";q=1;w=1;media-burst=3');
    expect(first.headers.get("ratelimit")).toMatch(/^"anonymous";r=2;t=\d+$/);
    const wrong = await call(base, "APIKeyService/List", {}, { bearer: "ak_not_a_key", org: keyA.org });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("ratelimit")).toMatch(/^"anonymous";r=1;t=\d+$/);
    // One after another: calls that arrive together could all pass the gate before the first is refused.
    const replies: Reply[] = [];
    while (replies.length < 5 && replies.at(-1)?.status !== 429)
      replies.push(await call(base, "APIKeyService/List", {}, { bearer: "ak_not_a_key", org: keyA.org }));
    expect(replies.map((r) => r.status)).toEqual([401, 429]);
    const retryAfter = await expectExhausted(replies[1]!, "anonymous");
    // The address is refused before authentication, so for now even a good key from it waits.
    await expectExhausted(await call(base, "APIKeyService/List", {}, keyB), "anonymous");
    await sleep(retryAfter * 1000);
    expect((await call(base, "APIKeyService/List", {})).status).toBe(401);
  });
});

function parseFrames(bytes: Uint8Array): { flags: number; data: Uint8Array }[] {
  const frames: { flags: number; data: Uint8Array }[] = [];
  for (let at = 0; at + 5 <= bytes.length;) {
    const length = new DataView(bytes.buffer, bytes.byteOffset + at).getUint32(1);
    frames.push({ flags: bytes[at]!, data: bytes.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return frames;
}
