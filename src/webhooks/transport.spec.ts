import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { makeTestCa, type TestCa } from "../../test/peers.js";
import { closedPortUrl, startConnectionCounter, startRecordingReceiver, type RecordingReceiver } from "../../test/receivers.js";
import { NetGuard } from "../net-guard.js";
import { legacySignature, mediaSignature } from "./sign.js";
import { capturedHeaders, postJson, utf8Prefix, type AttemptResult } from "./transport.js";

/** The timeout under test, in the tests of timing out; every other send has a generous one. */
const TIMEOUT_MS = 400;
const GENEROUS_MS = 5000;
const secret = "whsec_0123456789abcdefghijklmnopqrstuv";
const body = JSON.stringify({
  id: "evt_test",
  object: "event",
  type: "job.succeeded",
  api_version: "2025-01-01",
  created_at: "2025-01-01T00:00:00Z",
  data: { id: "job_1" },
});

let ca: TestCa;
let otherCa: TestCa;
let guard: NetGuard;
let receiver: RecordingReceiver;

const send = (url: string, extra: Record<string, string> = {}, timeoutMs = GENEROUS_MS, signal?: AbortSignal): Promise<AttemptResult> =>
  postJson(
    guard,
    url,
    body,
    { "webhook-id": "evt_test", "media-signature": mediaSignature([secret], body, Date.now() / 1000), ...extra },
    { timeoutMs, ...(signal ? { signal } : {}) },
  );

beforeAll(async () => {
  ca = makeTestCa();
  otherCa = makeTestCa();
  guard = new NetGuard({ net: { allow: ["127.0.0.1/32"], tlsCaFile: ca.caFile } });
  receiver = await startRecordingReceiver(ca, { secrets: [secret] });
});

afterAll(async () => {
  guard.destroy();
  await receiver.stop();
  ca.remove();
  otherCa.remove();
});

beforeEach(() => {
  receiver.clear();
  receiver.respond("ok");
});

describe("a delivery attempt", () => {
  it("POSTs the raw body as JSON with our user agent and the caller's headers; 2xx is ok", async () => {
    const r = await send(`${receiver.url}/hooks?x=1`);
    expect(r).toMatchObject({ ok: true, status: 200, responseBody: "ok" });
    expect(r.transportError).toBeUndefined();
    expect(r.errorMessage).toBeUndefined();
    expect(r.latencyMs).toBeGreaterThanOrEqual(0);
    expect(JSON.parse(r.responseHeaders)).toHaveProperty("date");
    const [got] = receiver.requests;
    expect(got).toMatchObject({ method: "POST", path: "/hooks?x=1", rawBody: body, verified: true, verifiedBy: [0] });
    expect(got!.headers).toMatchObject({
      "content-type": "application/json",
      "user-agent": "media-webhooks/1",
      "webhook-id": "evt_test",
      "content-length": String(Buffer.byteLength(body)),
    });
    expect(got!.json).toEqual(JSON.parse(body));
  });

  it("the receiver sees both v1 entries during a rotation, and the legacy signature", async () => {
    const next = "whsec_ZYXWVUTSRQPONMLKJIHGFEDCBA987654";
    receiver.setSecrets([next, secret]);
    try {
      const t = Date.now() / 1000;
      await send(receiver.url, { "media-signature": mediaSignature([next, secret], body, t), "x-webhook-signature": legacySignature(secret, body) });
      await send(receiver.url, { "media-signature": mediaSignature([next], body, t) });
      await send(receiver.url, { "media-signature": mediaSignature(["whsec_other"], body, t), "x-webhook-signature": legacySignature("whsec_other", body) });
      expect(receiver.requests.map((q) => [q.verified, q.verifiedBy, q.legacyVerified])).toEqual([
        [true, [0, 1], true],
        [true, [0], false],
        [false, [], false],
      ]);
    } finally {
      receiver.setSecrets([secret]);
    }
  });

  it("a 500 is a failed attempt with the status and the body in the message", async () => {
    receiver.respondNext("error");
    const r = await send(receiver.url);
    expect(r).toMatchObject({ ok: false, status: 500, responseBody: "receiver failure", errorMessage: "HTTP 500: receiver failure" });
    expect(r.transportError).toBeUndefined();
    receiver.respondNext({ status: 204 }, { status: 410 });
    expect(await send(receiver.url)).toMatchObject({ ok: true, status: 204 });
    const gone = await send(receiver.url);
    expect(gone).toMatchObject({ ok: false, status: 410, errorMessage: "HTTP 410" });
    expect(gone.responseBody).toBeUndefined();
  });

  it("does not follow a redirect: a 3xx is a failed attempt", async () => {
    receiver.respondNext({ status: 302, headers: { location: `${receiver.url}/elsewhere` } }, { status: 307, headers: { location: "/again" } });
    expect(await send(receiver.url)).toMatchObject({ ok: false, status: 302, errorMessage: "HTTP 302" });
    expect(await send(receiver.url)).toMatchObject({ ok: false, status: 307 });
    await new Promise((r) => setTimeout(r, 50));
    expect(receiver.requests.map((q) => q.path)).toEqual(["/", "/"]);
  });

  it("keeps the first 4 KiB of the body, cut on a character boundary, and 200 characters in the message", async () => {
    const big = `${"a".repeat(4095)}é${"b".repeat(100_000)}`; // é straddles byte 4096
    receiver.respondNext({ status: 500, body: big });
    const r = await send(receiver.url);
    expect(r.responseBody).toBe("a".repeat(4095));
    expect(r.errorMessage).toBe(`HTTP 500: ${"a".repeat(200)}`);
    receiver.respondNext({ status: 200, body: "€".repeat(2000) });
    const euros = await send(receiver.url);
    expect(euros.responseBody).toBe("€".repeat(1365));
    expect(Buffer.byteLength(euros.responseBody!)).toBe(4095);
  });

  it("caps the headers at 32 names and 4 KiB and redacts credentials", async () => {
    const headers: Record<string, string | string[]> = {
      "set-cookie": ["session=abc", "other=def"],
      "x-api-key": "k1",
      "x-auth-token": "t1",
      "x-session-id": "s1",
      "x-request-id": "req_1",
      "x-multi": ["one", "two"],
      "x-huge": "h".repeat(5000),
    };
    for (let i = 0; i < 40; i++) headers[`x-filler-${String(i).padStart(2, "0")}`] = "v";
    receiver.respondNext({ status: 200, headers });
    const r = await send(receiver.url);
    const map = JSON.parse(r.responseHeaders) as Record<string, string[]>;
    expect(Object.keys(map)).toHaveLength(32);
    expect(Buffer.byteLength(r.responseHeaders)).toBeLessThanOrEqual(4096);
    expect(map["set-cookie"]).toEqual(["[REDACTED]"]);
    expect(map["x-api-key"]).toEqual(["[REDACTED]"]);
    expect(map["x-auth-token"]).toEqual(["[REDACTED]"]);
    expect(map["x-session-id"]).toEqual(["[REDACTED]"]);
    expect(map["x-request-id"]).toEqual(["req_1"]);
    expect(map["x-multi"]).toEqual(["one", "two"]);
    expect(map["x-huge"]).toBeUndefined();
    expect(r.responseHeaders).not.toMatch(/abc|def|k1|t1|s1/);
  });
});

describe("transport errors, each produced for real", () => {
  it("a receiver that never answers times out within the attempt timeout", async () => {
    receiver.respondNext("hang");
    const started = Date.now();
    const r = await send(receiver.url, {}, TIMEOUT_MS);
    const took = Date.now() - started;
    expect(r).toMatchObject({ ok: false, transportError: "timeout", responseHeaders: "{}" });
    expect(r.status).toBeUndefined();
    expect(r.latencyMs).toBeUndefined();
    expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(took).toBeLessThan(TIMEOUT_MS + 1000);
  });

  it("a slow body counts against the same timeout", async () => {
    const slow = await startRecordingReceiver(ca);
    try {
      // Headers at once, then silence: the attempt still ends on time.
      slow.respond({ status: 200, headers: { "content-length": "10" } });
      const started = Date.now();
      const r = await send(slow.url, {}, TIMEOUT_MS);
      expect(r.transportError).toBe("timeout");
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 1000);
    } finally {
      await slow.stop();
    }
  });

  it("a reset connection is connection_reset", async () => {
    receiver.respondNext("reset");
    const r = await send(receiver.url);
    expect(r).toMatchObject({ ok: false, transportError: "connection_reset" });
    expect(r.errorMessage).toMatch(/ECONNRESET/);
  });

  it("a connection closed without an answer is connection_closed", async () => {
    receiver.respondNext("close");
    const r = await send(receiver.url);
    expect(r).toMatchObject({ ok: false, transportError: "connection_closed" });
    expect(r.errorMessage).toMatch(/socket hang up/);
  });

  it("a closed port is connection_refused", async () => {
    const r = await send(await closedPortUrl());
    expect(r).toMatchObject({ ok: false, transportError: "connection_refused" });
    expect(r.errorMessage).toMatch(/ECONNREFUSED/);
  });

  it("a private address outside the allowlist is ssrf_blocked without connecting", async () => {
    const started = Date.now();
    const r = await send("https://10.255.255.1/hook", {}, 5000);
    expect(r).toMatchObject({ ok: false, transportError: "ssrf_blocked" });
    expect(r.errorMessage).toMatch(/private address/);
    expect(Date.now() - started).toBeLessThan(1000); // a blackhole address would hang until the timeout

    const counter = await startConnectionCounter();
    const strict = new NetGuard({ net: { allow: [], tlsCaFile: ca.caFile } });
    try {
      const loop = await postJson(strict, counter.url, body, {}, { timeoutMs: GENEROUS_MS });
      expect(loop).toMatchObject({ ok: false, transportError: "ssrf_blocked" });
      expect(loop.errorMessage).toMatch(/loopback/);
      const named = await postJson(strict, counter.url.replace("127.0.0.1", "localhost"), body, {}, { timeoutMs: GENEROUS_MS });
      expect(named.transportError).toBe("ssrf_blocked");
      expect(counter.connections()).toBe(0);
    } finally {
      strict.destroy();
      await counter.stop();
    }
  });

  it("a certificate from an untrusted CA is tls_handshake_failed", async () => {
    const untrusted = await startRecordingReceiver(otherCa);
    try {
      const r = await send(untrusted.url);
      expect(r).toMatchObject({ ok: false, transportError: "tls_handshake_failed" });
      expect(untrusted.requests).toHaveLength(0);
    } finally {
      await untrusted.stop();
    }
  });

  it("a name that does not resolve is dns_failure", async () => {
    const r = await send("https://does-not-exist.invalid/", {}, 5000);
    expect(r).toMatchObject({ ok: false, transportError: "dns_failure" });
    expect(r.errorMessage).toMatch(/does-not-exist\.invalid/);
  });

  it("http:// is refused by the guard, and a caller's abort ends the attempt", async () => {
    const plain = await send(receiver.url.replace("https:", "http:"));
    expect(plain).toMatchObject({ ok: false, transportError: "unknown" });
    expect(plain.errorMessage).toMatch(/https/);

    receiver.respondNext("hang");
    const abort = new AbortController();
    const attempt = send(receiver.url, {}, 5000, abort.signal);
    // Aborted once the receiver holds it (on a loaded machine the handshake alone can outlast a fixed delay,
    // and the hang meant for this request would then catch the next test's).
    await receiver.waitFor(1, 5000);
    const started = Date.now();
    abort.abort();
    const r = await attempt;
    expect(r).toMatchObject({ ok: false, transportError: "unknown", errorMessage: "delivery attempt aborted" });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("the receiver keeps working after all of the above", async () => {
    expect(await send(receiver.url)).toMatchObject({ ok: true, status: 200 });
  });
});

describe("capture helpers", () => {
  it("utf8Prefix never passes the limit, even for invalid bytes", () => {
    expect(utf8Prefix(Buffer.from("ab€", "utf8"), 4)).toBe("ab");
    expect(utf8Prefix(Buffer.from("ab€", "utf8"), 5)).toBe("ab€");
    const binary = Buffer.alloc(4096, 0xff);
    const text = utf8Prefix(binary, 4096);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(4096);
    expect(text.length).toBe(1365);
  });

  it("capturedHeaders is {} without headers", () => {
    expect(capturedHeaders({ headersDistinct: {} })).toBe("{}");
  });
});
