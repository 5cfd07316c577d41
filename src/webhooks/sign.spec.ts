import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
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

  it("returns false for every malformed header and never throws (a missing or repeated header included)", () => {
    const v1 = mediaSignature([secretA], body, t).split("v1=")[1]!;
    const malformed: [string, unknown][] = [
      ["empty", ""],
      ["only commas and equals", ",,=,="],
      ["garbage", "not a signature"],
      ["control characters", "\u0000\uffff\ud800"],
      ["missing t=", `v1=${v1}`],
      ["t= without a value", `t=,v1=${v1}`],
      ["non-numeric t", `t=abc,v1=${v1}`],
      ["negative t", `t=-${t},v1=${v1}`],
      ["fractional t", `t=${t}.5,v1=${v1}`],
      ["exponent t", `t=1.75e9,v1=${v1}`],
      ["non-ASCII digits in t", `t=١٧٥٠٠٠٠٠٠٠,v1=${v1}`],
      ["missing v1", `t=${t}`],
      ["v1= without a value", `t=${t},v1=`],
      ["odd-length hex", `t=${t},v1=${v1.slice(1)}`],
      ["hex one digit long", `t=${t},v1=${v1}0`],
      ["hex one byte short", `t=${t},v1=${v1.slice(2)}`],
      ["hex one byte long", `t=${t},v1=${v1}00`],
      ["non-hex of the right length", `t=${t},v1=${"g".repeat(64)}`],
      ["base64 instead of hex", `t=${t},v1=${Buffer.from(v1, "hex").toString("base64")}`],
      ["key without =", `t${t},v1${v1}`],
      ["huge t", `t=${"9".repeat(100_000)},v1=${v1}`],
      ["huge v1", `t=${t},v1=${"a".repeat(1_000_000)}`],
      ["huge header of junk", "x=y,".repeat(250_000)],
      ["many wrong v1", `t=${t},${`v1=${"0".repeat(64)},`.repeat(10_000)}`],
      ["missing header", undefined],
      ["null header", null],
      ["repeated header (array)", [`t=${t},v1=${v1}`, `t=${t},v1=${v1}`]],
      ["a number", 42],
    ];
    for (const [what, header] of malformed) {
      let result: unknown;
      expect(() => (result = verifyMediaSignature(header as string, body, secretA, 300, t)), what).not.toThrow();
      expect(result, what).toBe(false);
    }
  });

  it("takes at most 12 digits of t, so no other spelling of a time is signed (mutant: the t pattern loosened)", () => {
    // Each header is correctly signed for its own t string: only the t rule can refuse it.
    const signedFor = (tText: string) => `t=${tText},v1=${createHmac("sha256", secretA).update(`${tText}.${body}`).digest("hex")}`;
    expect(verifyMediaSignature(signedFor(String(t)), body, secretA, 300, t)).toBe(true);
    expect(verifyMediaSignature(signedFor("999999999999"), body, secretA, 300, 999_999_999_999)).toBe(true);
    // The same instant spelt in 13 digits, with a sign, with a fraction.
    for (const tText of [`000${t}`, `+${t}`, `${t}.0`, `${t}e0`]) {
      expect(verifyMediaSignature(signedFor(tText), body, secretA, 300, t), tText).toBe(false);
    }
    expect(verifyMediaSignature(signedFor("0"), body, secretA, 300, 0)).toBe(true);
  });

  it("accepts upper-case hex, and the tolerance edge in the past too", () => {
    const header = mediaSignature([secretA], body, t);
    expect(verifyMediaSignature(header.toUpperCase().replace("T=", "t=").replace("V1=", "v1="), body, secretA, 300, t)).toBe(true);
    expect(verifyMediaSignature(header, body, secretA, 300, t - 300)).toBe(true);
    expect(verifyMediaSignature(header, body, secretA, 0, t)).toBe(true);
    expect(verifyMediaSignature(header, body, secretA, 0, t + 0.5)).toBe(false);
    expect(verifyMediaSignature(header, body, secretA, Number.NaN, t)).toBe(false);
  });

  it("defaults to a 300 s tolerance around the current time", () => {
    const now = Date.now() / 1000;
    expect(verifyMediaSignature(mediaSignature([secretA], body, now - 290), body, secretA)).toBe(true);
    expect(verifyMediaSignature(mediaSignature([secretA], body, now + 290), body, secretA)).toBe(true);
    expect(verifyMediaSignature(mediaSignature([secretA], body, now - 310), body, secretA)).toBe(false);
    expect(verifyMediaSignature(mediaSignature([secretA], body, now + 310), body, secretA)).toBe(false);
  });

  it("signs only unix times", () => {
    expect(mediaSignature([secretA], body, 0)).toMatch(/^t=0,v1=[0-9a-f]{64}$/);
    for (const bad of [-1, -0.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => mediaSignature([secretA], body, bad), String(bad)).toThrow(new RangeError(`signature timestamp ${bad} is not a unix time`));
    }
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

// The vectors every SDK's webhook helper passes too (clients/webhook-vectors.json): the signer makes
// their headers, and the server's own check agrees with each verdict.
interface Vectors {
  signing: { name: string; secrets: string[]; timestamp: number; body: string; header: string }[];
  verifying: { name: string; header: string; body: string; secrets: string[]; now: number; tolerance_seconds: number; valid: boolean }[];
}
const vectors = JSON.parse(readFileSync(new URL("../../clients/webhook-vectors.json", import.meta.url), "utf8")) as Vectors;

describe("the shared webhook vectors", () => {
  it.each(vectors.signing)("the signer makes the header of: $name", (v) => {
    expect(mediaSignature(v.secrets, v.body, v.timestamp)).toBe(v.header);
  });

  it.each(vectors.verifying)("the server's check agrees: $name", (v) => {
    expect(v.secrets.some((secret) => verifyMediaSignature(v.header, v.body, secret, v.tolerance_seconds, v.now))).toBe(v.valid);
  });
});
