import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { legacySignature, mediaSignature, newWebhookSecret, verifyMediaSignature } from "./sign.js";

const body = JSON.stringify({ id: "evt_1", object: "event", type: "job.succeeded", data: { id: "job_1", metadata: { k: "é" } } });
const secretA = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const secretB = "whsec_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";
const t = 1_750_000_000;

describe("Media-Signature", () => {
  it("is t=<t>,v1=<HMAC-SHA256 of t.body keyed by the whole secret>", () => {
    const expected = createHmac("sha256", secretA).update(`${t}.${body}`).digest("hex");
    expect(mediaSignature([secretA], body, t)).toBe(`t=${t},v1=${expected}`);
    expect(verifyMediaSignature(`t=${t},v1=${expected}`, body, secretA, 300, t)).toBe(true);
  });

  it("carries one v1 per secret in order, and each secret verifies it (rotation overlap)", () => {
    const header = mediaSignature([secretB, secretA], body, t);
    const parts = header.split(",");
    expect(parts).toHaveLength(3);
    expect(parts[1]).toBe(mediaSignature([secretB], body, t).split(",")[1]);
    expect(parts[2]).toBe(mediaSignature([secretA], body, t).split(",")[1]);
    expect(verifyMediaSignature(header, body, secretA, 300, t)).toBe(true);
    expect(verifyMediaSignature(header, body, secretB, 300, t)).toBe(true);
    expect(verifyMediaSignature(header, body, "whsec_CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", 300, t)).toBe(false);
    // After the overlap only the new secret signs; a receiver still on the old one fails.
    expect(verifyMediaSignature(mediaSignature([secretB], body, t), body, secretA, 300, t)).toBe(false);
  });

  it("applies the tolerance both ways", () => {
    const header = mediaSignature([secretA], body, t);
    expect(verifyMediaSignature(header, body, secretA, 300, t + 300)).toBe(true);
    expect(verifyMediaSignature(header, body, secretA, 300, t + 301)).toBe(false);
    expect(verifyMediaSignature(header, body, secretA, 300, t - 301)).toBe(false);
    expect(verifyMediaSignature(header, body, secretA, 10, t + 11)).toBe(false);
    expect(verifyMediaSignature(header, body, secretA)).toBe(false); // default: now, 300 s
    expect(verifyMediaSignature(mediaSignature([secretA], body, Date.now() / 1000), body, secretA)).toBe(true);
  });

  it("refuses a tampered body, timestamp or signature and malformed headers", () => {
    const header = mediaSignature([secretA], body, t);
    expect(verifyMediaSignature(header, body.replace("job_1", "job_2"), secretA, 300, t)).toBe(false);
    expect(verifyMediaSignature(header, `${body} `, secretA, 300, t)).toBe(false);
    expect(verifyMediaSignature(header.replace(`t=${t}`, `t=${t + 1}`), body, secretA, 300, t)).toBe(false);
    const v1 = header.split("v1=")[1]!;
    const flipped = (v1[0] === "0" ? "1" : "0") + v1.slice(1);
    expect(verifyMediaSignature(`t=${t},v1=${flipped}`, body, secretA, 300, t)).toBe(false);
    for (const bad of ["", `v1=${v1}`, `t=${t}`, `t=abc,v1=${v1}`, `t=${t},v1=${v1.slice(2)}`, `t=${t},v0=${v1}`, `t=${t},t=${t},v1=${v1}`]) {
      expect(verifyMediaSignature(bad, body, secretA, 300, t), bad).toBe(false);
    }
    // Extra entries and spaces are tolerated, as Stripe's and Mux's verifiers do.
    expect(verifyMediaSignature(`t=${t}, v0=abc, v1=${flipped}, v1=${v1}`, body, secretA, 300, t)).toBe(true);
  });

  it("floors a fractional timestamp into the signed string", () => {
    expect(mediaSignature([secretA], body, t + 0.9)).toBe(mediaSignature([secretA], body, t));
    expect(() => mediaSignature([], body, t)).toThrow(/at least one secret/);
  });
});

describe("legacy signature and secrets", () => {
  it("X-Webhook-Signature is the lowercase hex HMAC-SHA256 of the raw body", () => {
    // RFC 4231 test case 2.
    expect(legacySignature("Jefe", "what do ya want for nothing?")).toBe("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    expect(legacySignature(secretA, body)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("new secrets are whsec_ and 32 base62 characters, all different", () => {
    const secrets = new Set(Array.from({ length: 200 }, () => newWebhookSecret()));
    expect(secrets.size).toBe(200);
    for (const s of secrets) expect(s).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
  });
});
