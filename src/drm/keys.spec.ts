// The built-in key provider, sealing and opening keys, and the choice of provider.
import { describe, expect, it } from "vitest";
import { drmKeyFailure } from "./drm.fixtures.js";
import { NetGuard } from "../net-guard.js";
import { SecretBox } from "../secrets.js";
import { keyProviderFor, localKeyProvider, openKeys, sealKeys } from "./keys.js";
import { DrmKeyError, HEX16, type ContentKey, type KeyRequest } from "./types.js";

const request = (over: Partial<KeyRequest> = {}): KeyRequest => ({
  resourceId: "out_1",
  classes: ["audio", "sd", "hd"],
  scheme: "cbcs",
  systems: ["clearkey"],
  ...over,
});
const UUID_V4 = /^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$/;

describe("localKeyProvider", () => {
  it("makes one random 16-byte key per class, in order, under UUID-shaped key IDs", async () => {
    const keys = await localKeyProvider().keys(request());
    expect(keys.map((k) => k.trackClass)).toEqual(["audio", "sd", "hd"]);
    for (const k of keys) {
      expect(k.kid).toMatch(HEX16);
      expect(k.kid).toMatch(UUID_V4);
      expect(k.key).toMatch(HEX16);
      expect(k).not.toHaveProperty("iv");
      expect(Object.keys(k).sort()).toEqual(["key", "kid", "trackClass"]);
    }
    expect((await localKeyProvider().keys(request({ classes: ["hd"], scheme: "aes128", systems: [] }))).map((k) => k.trackClass)).toEqual(["hd"]);
  });

  it("never repeats a key ID or a key", async () => {
    const provider = localKeyProvider();
    const all = (await Promise.all(Array.from({ length: 200 }, () => provider.keys(request())))).flat();
    expect(new Set(all.map((k) => k.kid)).size).toBe(600);
    expect(new Set(all.map((k) => k.key)).size).toBe(600);
    expect(new Set(all.flatMap((k) => [k.kid, k.key])).size).toBe(1200);
  });

  it("stops when its request is already cancelled", async () => {
    const abort = new AbortController();
    abort.abort(new Error("job cancelled"));
    await expect(localKeyProvider().keys(request({ signal: abort.signal }))).rejects.toThrow("job cancelled");
  });
});

describe("sealKeys and openKeys", () => {
  const box = new SecretBox("server secret one");
  const keys: ContentKey[] = [
    { trackClass: "audio", kid: "0123456789abcdef0123456789abcdef", key: "00112233445566778899aabbccddeeff" },
    { trackClass: "hd", kid: "fedcba9876543210fedcba9876543210", key: "ffeeddccbbaa99887766554433221100", iv: "0f0e0d0c0b0a09080706050403020100" },
  ];

  it("round-trips keys, the IV kept where there is one, and hides them", () => {
    const sealed = sealKeys(box, keys);
    expect(openKeys(box, sealed)).toEqual(keys);
    for (const k of keys) {
      expect(sealed).not.toContain(k.key);
      expect(sealed).not.toContain(k.kid);
    }
    // Fresh IV each time: the same keys never seal to the same text.
    expect(sealKeys(box, keys)).not.toBe(sealed);
  });

  it("refuses a sealed value altered anywhere, truncated, or sealed with another secret", async () => {
    const sealed = sealKeys(box, keys);
    // The middle of each part (IV, tag, ciphertext): no base64 padding bits there.
    let start = 0;
    for (const part of sealed.split(".")) {
      const i = start + Math.floor(part.length / 2);
      const altered = sealed.slice(0, i) + (sealed[i] === "A" ? "z" : "A") + sealed.slice(i + 1);
      expect((await drmKeyFailure(() => openKeys(box, altered))).message).toBe(
        "sealed content keys do not open: altered, truncated, or sealed with another server secret",
      );
      start += part.length + 1;
    }
    expect((await drmKeyFailure(() => openKeys(box, sealed.slice(0, -4)))).message).toBe(
      "sealed content keys do not open: altered, truncated, or sealed with another server secret",
    );
    await drmKeyFailure(() => openKeys(new SecretBox("server secret two"), sealed));
    for (const junk of ["", "x", "a.b", "a.b.c", "...", sealed.split(".").slice(0, 2).join(".")]) await drmKeyFailure(() => openKeys(box, junk));
  });

  it("refuses a genuine seal whose contents are not content keys, saying what is wrong", async () => {
    const k = { trackClass: "sd", kid: "0123456789abcdef0123456789abcdef", key: "00112233445566778899aabbccddeeff" };
    const cases: [unknown, RegExp | string][] = [
      ["not json", "sealed content keys are not JSON"],
      [null, "not of version 1"],
      [[k], "not of version 1"],
      [{ keys: [k] }, "not of version 1"],
      [{ v: 2, keys: [k] }, "not of version 1"],
      [{ v: 1 }, "not of version 1"],
      [{ v: 1, keys: [] }, "sealed content keys: expected a non-empty list"],
      [{ v: 1, keys: {} }, "expected a non-empty list"],
      [{ v: 1, keys: ["x"] }, "key 0 is not an object"],
      [{ v: 1, keys: [null] }, "key 0 is not an object"],
      [{ v: 1, keys: [[1]] }, "key 0 is not an object"],
      [{ v: 1, keys: [{ ...k, trackClass: "uhd" }] }, "key 0 has no track class audio, sd or hd"],
      [{ v: 1, keys: [{ ...k, trackClass: "toString" }] }, "no track class"],
      [{ v: 1, keys: [{ ...k, trackClass: undefined }] }, "no track class"],
      [{ v: 1, keys: [{ ...k, kid: k.kid.toUpperCase() }] }, "key 0 has a key ID that is not 32 lowercase hex digits"],
      [{ v: 1, keys: [{ ...k, kid: 42 }] }, "key ID"],
      [{ v: 1, keys: [{ ...k, key: k.key.slice(2) }] }, "key 0 has a key that is not 32 lowercase hex digits"],
      [{ v: 1, keys: [{ ...k, key: undefined }] }, "has a key that"],
      [{ v: 1, keys: [{ ...k, iv: "00" }] }, "key 0 has an IV that is not 32 lowercase hex digits"],
      [{ v: 1, keys: [{ ...k, iv: 7 }] }, "has an IV"],
      [{ v: 1, keys: [{ ...k, extra: 1 }] }, 'key 0 has an unknown field "extra"'],
      [{ v: 1, keys: [k, { ...k, trackClass: "hd" }] }, "key 1 repeats a key ID"],
      [{ v: 1, keys: [k, { ...k, kid: "f".repeat(32) }] }, "key 1 repeats the track class sd"],
    ];
    for (const [contents, message] of cases) {
      const sealed = box.encrypt(typeof contents === "string" ? contents : JSON.stringify(contents));
      const e = await drmKeyFailure(() => openKeys(box, sealed));
      if (typeof message === "string") expect(e.message, JSON.stringify(contents)).toContain(message);
      else expect(e.message).toMatch(message);
    }
  });

  it("refuses to seal keys that would not open", async () => {
    expect((await drmKeyFailure(() => sealKeys(box, []))).message).toBe("content keys to seal: expected a non-empty list");
    expect((await drmKeyFailure(() => sealKeys(box, [{ ...keys[0]!, key: "short" }]))).message).toBe(
      "content keys to seal: key 0 has a key that is not 32 lowercase hex digits",
    );
    expect((await drmKeyFailure(() => sealKeys(box, [keys[0]!, keys[0]!]))).message).toBe("content keys to seal: key 1 repeats a key ID");
  });
});

describe("keyProviderFor", () => {
  const guard = new NetGuard({ net: { allow: [] } });

  it("takes the built-in provider when the output names no key service", async () => {
    const keys = await keyProviderFor({ keyProviderUrl: "" }, { guard }).keys(request({ classes: ["sd"] }));
    expect(keys).toHaveLength(1);
  });

  it("takes the SPEKE client when it names one (here refused by the guard before any connection)", async () => {
    const e = await drmKeyFailure(() => keyProviderFor({ keyProviderUrl: "https://10.1.2.3/speke" }, { guard }).keys(request()));
    expect(e.message).toMatch(/^key provider 10\.1\.2\.3 was refused by the network guard: 10\.1\.2\.3 is a private address/);
  });
});
