// The W3C Clear Key license exchange: what a request may hold, and the JWK set that answers it.
import { describe, expect, it } from "vitest";
import { clearKeyLicense, clearKeyRequest, DRM_LIMITS } from "./clearkey.js";

const enc = (v: unknown) => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));
const KID = "0123456789abcdef0123456789abcdef";
const KEY = "fedcba9876543210fedcba9876543210";
const b64 = (hex: string) => Buffer.from(hex, "hex").toString("base64url");

describe("clearKeyRequest", () => {
  it("reads the key IDs of a CDM's request as hex", () => {
    expect(clearKeyRequest(enc({ kids: [b64(KID)], type: "temporary" }))).toEqual([KID]);
    expect(clearKeyRequest(enc({ kids: [b64(KID), b64(KEY)] }))).toEqual([KID, KEY]);
    expect(clearKeyRequest(enc({ kids: Array.from({ length: DRM_LIMITS.licenseRequestKids }, () => b64(KID)) }))).toHaveLength(16);
  });

  it("refuses anything else", () => {
    for (const body of [
      "",
      "{not json",
      "null",
      "[]",
      JSON.stringify({}),
      JSON.stringify({ kids: "x" }),
      JSON.stringify({ kids: [] }),
      JSON.stringify({ kids: [42] }),
      JSON.stringify({ kids: [b64(KID) + "="] }),
      JSON.stringify({ kids: [b64(KID).slice(1)] }),
      JSON.stringify({ kids: ["a+bcdefghijklmnopqrstu"] }),
      JSON.stringify({ kids: Array.from({ length: DRM_LIMITS.licenseRequestKids + 1 }, () => b64(KID)) }),
    ]) {
      expect(clearKeyRequest(enc(body)), body).toBeUndefined();
    }
    expect(clearKeyRequest(new Uint8Array([0x7b, 0xff, 0x7d]))).toBeUndefined();
  });
});

describe("clearKeyLicense", () => {
  it("answers a JWK set of octet keys in base64url without padding", () => {
    expect(clearKeyLicense([{ trackClass: "sd", kid: KID, key: KEY }])).toEqual({
      keys: [{ kty: "oct", kid: "ASNFZ4mrze8BI0VniavN7w", k: "_ty6mHZUMhD-3LqYdlQyEA" }],
      type: "temporary",
    });
    expect(clearKeyLicense([])).toEqual({ keys: [], type: "temporary" });
  });

  it("never answers a key that is not 16 bytes of hex", () => {
    expect(() => clearKeyLicense([{ trackClass: "sd", kid: KID, key: KEY.slice(2) }])).toThrow(/16 bytes/);
    expect(() => clearKeyLicense([{ trackClass: "sd", kid: KID.toUpperCase(), key: KEY }])).toThrow(/16 bytes/);
  });
});
