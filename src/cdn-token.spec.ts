import { createHmac } from "node:crypto";
import { describe, it, expect } from "vitest";
import { bunnyDirectoryUrl, bunnyToken, signDirectoryUrl, verifyDirectoryPath } from "./cdn-token.js";

// Published vectors: github.com/BunnyWay/BunnyCDN.TokenAuthentication at commit
// 48ff1af0879c61b69a42c8db5ead76f849f5ef87: nodejs/token.test.js and python3/test_token.py (the same
// cases in both) and e2e/vectors.json (generated from python3/token.py). Key "SecurityKey", expires
// 1598024587, host https://token-tester.b-cdn.net. The vectors with a user IP ("HS256-1-…") are left
// out: IP-locked tokens are not supported.
const BUNNY_KEY = "SecurityKey";
const BUNNY_EXPIRES = 1598024587;
const BUNNY_HOST = "https://token-tester.b-cdn.net";

describe("published vectors, HS256 directory form", () => {
  it("'directory allowed' (nodejs/token.test.js, python3/test_token.py test_directory_allowed)", () => {
    expect(bunnyDirectoryUrl(BUNNY_HOST, BUNNY_KEY, "/abc/", BUNNY_EXPIRES)).toBe(
      "https://token-tester.b-cdn.net/bcdn_token=HS256-bTMv4RVOkjx2UXLfVDl-JIygaxfSIQP8UCnCy7CILuY&expires=1598024587/abc/",
    );
  });

  it("'directory and path allowed' (nodejs/token.test.js, python3/test_token.py test_directory_and_path_allowed)", () => {
    expect(bunnyDirectoryUrl(BUNNY_HOST, BUNNY_KEY, "/abc/", BUNNY_EXPIRES, "/abc")).toBe(
      "https://token-tester.b-cdn.net/bcdn_token=HS256-uVZvT3SbEoVKYJyDJgbcsDmSFf73cv-uNUVaJiKWpbQ&token_path=%2Fabc&expires=1598024587/abc/",
    );
  });

  it("the edge refuses the published token_path '/abc' (no trailing '/': it would also admit /abcdef/)", () => {
    const raw = "/bcdn_token=HS256-uVZvT3SbEoVKYJyDJgbcsDmSFf73cv-uNUVaJiKWpbQ&token_path=%2Fabc&expires=1598024587/abc/300kb.jpg";
    expect(verifyDirectoryPath(raw, [BUNNY_KEY], BUNNY_EXPIRES)).toEqual({ ok: false, reason: "malformed" });
  });
});

describe("published vectors, the HS256 signing string (query-form tokens)", () => {
  // The token does not depend on the URL form, so these check signaturePath ‖ expires ‖ sorted params.
  it.each([
    ["e2e/vectors.json plain", "/300kb.jpg", {}, "HS256-o10JRWlsAItyAsdKS6jJKjabHN4FrFsplDHPV1idcX4"],
    ["e2e/vectors.json countries_only", "/300kb.jpg", { token_countries: "CA,US" }, "HS256-i5s3Uv7mnrFfN5nznwU2BxhILpnipYeE18TapV0WNFM"],
    ["e2e/vectors.json blocked_only", "/300kb.jpg", { token_countries_blocked: "RU,CN" }, "HS256-JS8dSuBSjSH-W2-xhdkCPC36-2rlxfDCQJjlNMPqKZQ"],
    ["e2e/vectors.json path_only", "/abc", { token_path: "/abc" }, "HS256-uVZvT3SbEoVKYJyDJgbcsDmSFf73cv-uNUVaJiKWpbQ"],
    ["e2e/vectors.json ignore_params", "/300kb.jpg", { token_ignore_params: "true" }, "HS256-1lwWBD_c1IAGSj1UKPoxreu8ePDQ-Z9FoWLcRn_RRH0"],
    ["e2e/vectors.json limit_only", "/300kb.jpg", { limit: "1000" }, "HS256-DAVapqNNED3Z7JkjRTYX0UOIHNtbHEuuhRNEc4A7mMQ"],
    [
      "token.test.js 'with countries allowed' (sorting, token_path '/')",
      "/",
      { token_path: "/", token_countries: "CA" },
      "HS256-JWU7jhpnBGI-O54AYDAtrlZT86Ied4RTO2-Y8mUj60A",
    ],
    ["token.test.js 'with countries blocked'", "/300kb.jpg", { token_countries_blocked: "CA" }, "HS256-zKGmNRBaHRmB4THCwmIQK5U21wH-S9KaJ6Ht7Kq9Zlw"],
    ["token.test.js 'with existing query params'", "/300kb.jpg", { v: "123" }, "HS256-q6oRQr-5ccQ-piO1HSEQu1DVMy9UMppRxGlIQwoeM5Y"],
  ] as const)("%s", (_name, signaturePath, params, token) => {
    expect(bunnyToken(BUNNY_KEY, signaturePath, BUNNY_EXPIRES, params)).toBe(token);
  });
});

describe("signDirectoryUrl", () => {
  // Not published: computed by running the reference nodejs/token.js at the commit above with
  // signUrl(url, key, 0, "", true, "/play/vid_x/", "", "", false, expires), for our own layout.
  it.each([
    [
      "SecurityKey",
      "/play/vid_x/index.m3u8",
      1598024587,
      "https://cdn.example.com/bcdn_token=HS256-6aPfvClHEsZ9h3a5k4X-mDvvGuCCP7hji_Xg16HwKR8&token_path=%2Fplay%2Fvid_x%2F&expires=1598024587/play/vid_x/index.m3u8",
    ],
    [
      "k2",
      "/play/vid_x/720p/seg 1.ts",
      1700000000,
      "https://cdn.example.com/bcdn_token=HS256-CddSr56lZWU9_ZgrcZeI7fOpsur2YPU_065EXESTqPA&token_path=%2Fplay%2Fvid_x%2F&expires=1700000000/play/vid_x/720p/seg%201.ts",
    ],
  ])("matches the reference signer (key %s, %s)", (key, filePath, expires, url) => {
    expect(signDirectoryUrl("https://cdn.example.com", key, "/play/vid_x/", filePath, expires)).toBe(url);
  });

  it.each([
    ["an empty key", "https://cdn.example.com", "", "/play/vid_x/", "/play/vid_x/a.ts", 1, "cdn token: empty key"],
    ["a base ending in '/'", "https://cdn.example.com/", "k", "/play/vid_x/", "/play/vid_x/a.ts", 1, "cdn token: base must not end with '/'"],
    ["a token path without trailing '/'", "https://cdn.example.com", "k", "/play/vid_x", "/play/vid_x/a.ts", 1, 'cdn token: bad token path "/play/vid_x"'],
    ["a token path with '..'", "https://cdn.example.com", "k", "/play/../", "/play/../a.ts", 1, 'cdn token: bad token path "/play/../"'],
    ["a token path without leading '/'", "https://cdn.example.com", "k", "play/vid_x/", "play/vid_x/a.ts", 1, 'cdn token: bad token path "play/vid_x/"'],
    [
      "a token path with an empty segment",
      "https://cdn.example.com",
      "k",
      "/play//vid_x/",
      "/play//vid_x/a.ts",
      1,
      'cdn token: bad token path "/play//vid_x/"',
    ],
    ["an empty token path", "https://cdn.example.com", "k", "", "/play/vid_x/a.ts", 1, 'cdn token: bad token path ""'],
    [
      "a file outside the token path",
      "https://cdn.example.com",
      "k",
      "/play/vid_x/",
      "/play/vid_y/a.ts",
      1,
      'cdn token: file "/play/vid_y/a.ts" is not under "/play/vid_x/"',
    ],
    [
      "a file with '..'",
      "https://cdn.example.com",
      "k",
      "/play/vid_x/",
      "/play/vid_x/../vid_y/a.ts",
      1,
      'cdn token: file "/play/vid_x/../vid_y/a.ts" is not under "/play/vid_x/"',
    ],
    ["the directory itself", "https://cdn.example.com", "k", "/play/vid_x/", "/play/vid_x/", 1, 'cdn token: file "/play/vid_x/" is not under "/play/vid_x/"'],
    ["a fractional expiry", "https://cdn.example.com", "k", "/play/vid_x/", "/play/vid_x/a.ts", 1.5, "cdn token: expires must be unix seconds"],
    ["a negative expiry", "https://cdn.example.com", "k", "/play/vid_x/", "/play/vid_x/a.ts", -1, "cdn token: expires must be unix seconds"],
    ["an unsafe expiry", "https://cdn.example.com", "k", "/play/vid_x/", "/play/vid_x/a.ts", 2 ** 53, "cdn token: expires must be unix seconds"],
  ] as const)("refuses %s with a RangeError that says why", (_name, base, key, tokenPath, filePath, expires, message) => {
    const sign = () => signDirectoryUrl(base, key, tokenPath, filePath, expires);
    expect(sign).toThrow(RangeError);
    expect(sign).toThrow(new RangeError(message));
  });

  it("signs expires 0 (the epoch is unix seconds too)", () => {
    expect(signDirectoryUrl("https://cdn.example.com", "k", "/play/vid_x/", "/play/vid_x/a.ts", 0)).toBe(
      `https://cdn.example.com/bcdn_token=${bunnyToken("k", "/play/vid_x/", 0, { token_path: "/play/vid_x/" })}&token_path=%2Fplay%2Fvid_x%2F&expires=0/play/vid_x/a.ts`,
    );
  });

  // Segments are encoded as encodeURIComponent does; RFC 3986 unreserved characters stay as they are.
  // Upper-case paths too, so that no lower-case letter or digit forces the encoding on its own.
  it.each([
    ["/play/vid_x/", "/play/vid_x/a b.ts", "/play/vid_x/a%20b.ts"],
    ["/play/vid_x/", "/play/vid_x/a:b.ts", "/play/vid_x/a%3Ab.ts"],
    ["/play/vid_x/", "/play/vid_x/a@b.ts", "/play/vid_x/a%40b.ts"],
    ["/play/vid_x/", "/play/vid_x/a[1].ts", "/play/vid_x/a%5B1%5D.ts"],
    ["/play/vid_x/", "/play/vid_x/a`b.ts", "/play/vid_x/a%60b.ts"],
    ["/play/vid_x/", "/play/vid_x/a^b.ts", "/play/vid_x/a%5Eb.ts"],
    ["/play/vid_x/", "/play/vid_x/a{1}.ts", "/play/vid_x/a%7B1%7D.ts"],
    ["/play/vid_x/", "/play/vid_x/a|b.ts", "/play/vid_x/a%7Cb.ts"],
    ["/play/vid_x/", "/play/vid_x/é.ts", "/play/vid_x/%C3%A9.ts"],
    ["/play/vid_x/", "/play/vid_x/a#b?c.ts", "/play/vid_x/a%23b%3Fc.ts"],
    ["/play/vid_x/", "/play/vid_x/100%.ts", "/play/vid_x/100%25.ts"],
    ["/play/vid_x/", "/play/vid_x/a&b=c+d.ts", "/play/vid_x/a%26b%3Dc%2Bd.ts"],
    ["/play/vid_x/", '/play/vid_x/a"b;c,d$.ts', "/play/vid_x/a%22b%3Bc%2Cd%24.ts"],
    ["/PLAY/", "/PLAY/A B.TS", "/PLAY/A%20B.TS"],
    ["/PLAY/", "/PLAY/A:B.TS", "/PLAY/A%3AB.TS"],
    ["/PLAY/", "/PLAY/A{B}.TS", "/PLAY/A%7BB%7D.TS"],
    ["/PLAY/", "/PLAY/A`B.TS", "/PLAY/A%60B.TS"],
    ["/play/vid_x/", "/play/vid_x/AZaz09-._~.ts", "/play/vid_x/AZaz09-._~.ts"],
    ["/play/vid_x/", "/play/vid_x/a!'()*.ts", "/play/vid_x/a!'()*.ts"],
  ])("percent-encodes the file path (%s, %s)", (tokenPath, filePath, encoded) => {
    const url = signDirectoryUrl("", "k", tokenPath, filePath, 1);
    expect(url.slice(url.indexOf("/", 1))).toBe(encoded);
    expect(verifyDirectoryPath(url, ["k"], 1)).toEqual({ ok: true, filePath, tokenPath, expires: 1 });
  });
});

const KEY = "key-current";
const OLD_KEY = "key-previous";
const NOW = 1_700_000_000;
const EXP = NOW + 3600;
const DIR = "/play/vid_x/";

/** The raw token segment ("/bcdn_token=…&expires=N") for DIR, without any file path. */
function segment(key = KEY, expires = EXP, tokenPath = DIR): string {
  const file = `${tokenPath}a.ts`;
  return signDirectoryUrl("", key, tokenPath, file, expires).slice(0, -file.length);
}

describe("verifyDirectoryPath round trips", () => {
  it("accepts a signed file and returns its decoded path", () => {
    const raw = signDirectoryUrl("", KEY, DIR, "/play/vid_x/720p/seg1.ts", EXP);
    expect(verifyDirectoryPath(raw, [KEY], NOW)).toEqual({ ok: true, filePath: "/play/vid_x/720p/seg1.ts", tokenPath: DIR, expires: EXP });
  });

  it("accepts every file under the directory with the one token", () => {
    const seg = segment();
    for (const file of ["/play/vid_x/index.m3u8", "/play/vid_x/1080p/index.m3u8", "/play/vid_x/1080p/seg00042.ts", "/play/vid_x/thumbs/t.jpg"]) {
      expect(verifyDirectoryPath(seg + file, [KEY], NOW)).toMatchObject({ ok: true, filePath: file });
    }
  });

  it("decodes percent-escaped file names", () => {
    const raw = signDirectoryUrl("https://cdn.example.com", KEY, DIR, "/play/vid_x/seg 1 é.ts", EXP).slice("https://cdn.example.com".length);
    expect(raw.endsWith("/play/vid_x/seg%201%20%C3%A9.ts")).toBe(true);
    expect(verifyDirectoryPath(raw, [KEY], NOW)).toMatchObject({ ok: true, filePath: "/play/vid_x/seg 1 é.ts" });
  });

  it("accepts the token on its last second", () => {
    expect(verifyDirectoryPath(`${segment(KEY, NOW)}/play/vid_x/a.ts`, [KEY], NOW)).toMatchObject({ ok: true, expires: NOW });
  });

  it("accepts expires before token_path (the order of our architecture document)", () => {
    const seg = segment();
    const [token, tokenPath, expires] = seg.split("&") as [string, string, string];
    expect(verifyDirectoryPath(`${token}&${expires}&${tokenPath}/play/vid_x/a.ts`, [KEY], NOW).ok).toBe(true);
  });

  it("accepts the root directory token", () => {
    expect(verifyDirectoryPath(`${segment(KEY, EXP, "/")}/play/vid_y/a.ts`, [KEY], NOW)).toMatchObject({ ok: true, tokenPath: "/" });
  });
});

describe("verifyDirectoryPath tampering matrix", () => {
  const seg = segment();
  const file = "/play/vid_x/a.ts";
  const sig = seg.slice("/bcdn_token=HS256-".length, seg.indexOf("&"));
  const flip = (c: string) => (c === "A" ? "B" : "A");
  const tokenOf = (s: string) => `/bcdn_token=HS256-${s}`;
  const rest = seg.slice(seg.indexOf("&"));

  it.each([
    ["a changed signature character", `${tokenOf(sig.slice(0, 10) + flip(sig[10]!) + sig.slice(11))}${rest}${file}`, "signature"],
    ["a non-canonical last signature character", `${tokenOf(sig.slice(0, 42) + String.fromCharCode(sig.charCodeAt(42) + 1))}${rest}${file}`, "malformed"],
    ["a changed expires", seg.replace(`expires=${EXP}`, `expires=${EXP + 1}`) + file, "signature"],
    ["an earlier expires", seg.replace(`expires=${EXP}`, `expires=${NOW - 1}`) + file, "expired"],
    ["a widened token_path", seg.replace("token_path=%2Fplay%2Fvid_x%2F", "token_path=%2Fplay%2F") + "/play/vid_y/a.ts", "signature"],
    ["a token_path moved to a sibling", seg.replace("token_path=%2Fplay%2Fvid_x%2F", "token_path=%2Fplay%2Fvid_y%2F") + "/play/vid_y/a.ts", "signature"],
    ["a token_path moved away from the file", seg.replace("token_path=%2Fplay%2Fvid_x%2F", "token_path=%2Fplay%2Fvid_y%2F") + file, "outside"],
    ["a file in a sibling directory", `${seg}/play/vid_y/a.ts`, "outside"],
    ["a file in a directory sharing the prefix", `${seg}/play/vid_x_evil/a.ts`, "outside"],
    ["a file above the directory", `${seg}/play/a.ts`, "outside"],
    ["'..' out of the directory", `${seg}/play/vid_x/../vid_y/a.ts`, "outside"],
    ["percent-encoded '%2e%2e'", `${seg}/play/vid_x/%2e%2e/vid_y/a.ts`, "outside"],
    ["percent-encoded '%2E%2E%2F' with encoded slashes", `${seg}/play/vid_x/%2E%2E%2Fvid_y%2Fa.ts`, "outside"],
    ["a '.' segment", `${seg}/play/vid_x/./a.ts`, "outside"],
    ["an empty segment", `${seg}/play/vid_x//a.ts`, "malformed"],
    ["the directory itself", `${seg}/play/vid_x/`, "malformed"],
    ["a NUL", `${seg}/play/vid_x/a%00.ts`, "malformed"],
    ["a backslash", `${seg}/play/vid_x/..%5C..%5Cvid_y%5Ca.ts`, "malformed"],
    ["a broken escape", `${seg}/play/vid_x/%zz.ts`, "malformed"],
    ["no file after the token", seg, "malformed"],
    ["no token", file, "missing"],
    ["an empty path", "", "missing"],
    ["a token in the query form", `${file}?token=HS256-${sig}&expires=${EXP}`, "missing"],
    ["no token_path", `${tokenOf(sig)}&expires=${EXP}${file}`, "malformed"],
    ["no expires", seg.replace(`&expires=${EXP}`, "") + file, "malformed"],
    ["a repeated expires", `${seg}&expires=${EXP}${file}`, "malformed"],
    ["an unsupported parameter", `${seg}&token_countries=US${file}`, "malformed"],
    ["an IP-locked token", `${tokenOf(`1-${sig}`)}${rest}${file}`, "malformed"],
    ["a leading zero in expires", seg.replace(`expires=${EXP}`, `expires=0${EXP}`) + file, "malformed"],
    ["a '+' in token_path", seg.replace("token_path=%2Fplay%2Fvid_x%2F", "token_path=%2Fplay+%2F") + file, "malformed"],
    ["a trailing '&'", seg.replace(`expires=${EXP}`, `expires=${EXP}&`) + file, "malformed"],
    ["a token not first", `/${seg.slice(seg.indexOf("&") + 1)}&${seg.slice(1, seg.indexOf("&"))}${file}`, "missing"],
  ])("refuses %s", (_name, raw, reason) => {
    expect(verifyDirectoryPath(raw, [KEY], NOW)).toEqual({ ok: false, reason });
  });

  it("refuses an expired token", () => {
    expect(verifyDirectoryPath(`${segment(KEY, NOW - 1)}${file}`, [KEY], NOW)).toEqual({ ok: false, reason: "expired" });
  });

  it("refuses a token signed with another key", () => {
    expect(verifyDirectoryPath(`${segment("some-other-key")}${file}`, [KEY], NOW)).toEqual({ ok: false, reason: "signature" });
  });

  it("refuses everything with no keys, and never uses an empty key", () => {
    expect(verifyDirectoryPath(`${seg}${file}`, [], NOW)).toEqual({ ok: false, reason: "signature" });
    const emptyKeySig = bunnyToken("", DIR, EXP, { token_path: DIR });
    const forged = `/bcdn_token=${emptyKeySig}${rest}${file}`;
    expect(verifyDirectoryPath(forged, ["", KEY], NOW)).toEqual({ ok: false, reason: "signature" });
  });
});

describe("verifyDirectoryPath key rotation", () => {
  const file = "/play/vid_x/a.ts";
  it("accepts tokens of the previous key while it is still listed", () => {
    expect(verifyDirectoryPath(`${segment(OLD_KEY)}${file}`, [KEY, OLD_KEY], NOW).ok).toBe(true);
    expect(verifyDirectoryPath(`${segment(KEY)}${file}`, [KEY, OLD_KEY], NOW).ok).toBe(true);
  });

  it("refuses tokens of a rotated-out key, and keeps accepting the current one", () => {
    expect(verifyDirectoryPath(`${segment(OLD_KEY)}${file}`, [KEY], NOW)).toEqual({ ok: false, reason: "signature" });
    expect(verifyDirectoryPath(`${segment(KEY)}${file}`, [KEY], NOW).ok).toBe(true);
  });
});

describe("bunnyToken signing string", () => {
  const hs256 = (message: string) => `HS256-${createHmac("sha256", BUNNY_KEY).update(message).digest("base64url")}`;

  it("signs path ‖ expires ‖ the parameters sorted by name in code-point order, whatever order they are given in", () => {
    const expected = hs256("/a.ts1598024587B=3&_=4&a=1&b=2");
    expect(bunnyToken(BUNNY_KEY, "/a.ts", BUNNY_EXPIRES, { B: "3", _: "4", a: "1", b: "2" })).toBe(expected);
    expect(bunnyToken(BUNNY_KEY, "/a.ts", BUNNY_EXPIRES, { b: "2", a: "1", _: "4", B: "3" })).toBe(expected);
    expect(bunnyToken(BUNNY_KEY, "/a.ts", BUNNY_EXPIRES, { a: "1", b: "2" })).toBe(hs256("/a.ts1598024587a=1&b=2"));
    expect(bunnyToken(BUNNY_KEY, "/a.ts", BUNNY_EXPIRES, { b: "2", a: "1" })).toBe(hs256("/a.ts1598024587a=1&b=2"));
  });

  it("treats an empty token path in bunnyDirectoryUrl as none", () => {
    expect(bunnyDirectoryUrl(BUNNY_HOST, BUNNY_KEY, "/abc/", BUNNY_EXPIRES, "")).toBe(bunnyDirectoryUrl(BUNNY_HOST, BUNNY_KEY, "/abc/", BUNNY_EXPIRES));
  });
});

describe("verifyDirectoryPath edge cases", () => {
  const seg = segment();
  const file = "/play/vid_x/a.ts";
  const sig = seg.slice("/bcdn_token=HS256-".length, seg.indexOf("&"));
  const rest = seg.slice(seg.indexOf("&"));
  const withSig = (s: string) => `/bcdn_token=HS256-${s}${rest}${file}`;
  const withExpires = (text: string) => seg.replace(`expires=${EXP}`, `expires=${text}`) + file;
  const withTokenPath = (raw: string) => seg.replace("token_path=%2Fplay%2Fvid_x%2F", `token_path=${raw}`) + file;

  it("accepts a path of 4096 characters and refuses one longer, unparsed", () => {
    const pad = (length: number) => `${seg}${DIR}${"a".repeat(length - seg.length - DIR.length - 3)}.ts`;
    expect(pad(4096)).toHaveLength(4096);
    expect(verifyDirectoryPath(pad(4096), [KEY], NOW)).toMatchObject({ ok: true });
    expect(verifyDirectoryPath(pad(4097), [KEY], NOW)).toEqual({ ok: false, reason: "malformed" });
  });

  it("accepts '&' and '=' in the file path (the token segment ends at the first '/')", () => {
    expect(verifyDirectoryPath(`${seg}/play/vid_x/a&b=c.ts`, [KEY], NOW)).toEqual({ ok: true, filePath: "/play/vid_x/a&b=c.ts", tokenPath: DIR, expires: EXP });
  });

  it.each([
    ["a repeated bcdn_token (even with the same value)", `${seg}&bcdn_token=HS256-${sig}${file}`],
    ["a repeated token_path (even with the same value)", `${seg}&token_path=%2Fplay%2Fvid_x%2F${file}`],
    ["a parameter without '='", `${seg}&expires${file}`],
    ["a token segment alone, without any '/' after it", seg.replaceAll("%2F", "")],
  ])("refuses %s as malformed", (_name, raw) => {
    expect(verifyDirectoryPath(raw, [KEY], NOW)).toEqual({ ok: false, reason: "malformed" });
  });

  describe("the signature spelling", () => {
    // A 43-character base64url digest: the last character carries 2 unused bits, which must be zero.
    it.each(["+", "/", ".", "!", ":", "@", "[", "`", "{", "~", "é", "%"])("refuses %s in the signature", (c) => {
      expect(verifyDirectoryPath(withSig(sig.slice(0, 20) + c + sig.slice(21)), [KEY], NOW)).toMatchObject({ ok: false, reason: "malformed" });
      expect(verifyDirectoryPath(withSig(sig.slice(0, 42) + c), [KEY], NOW)).toMatchObject({ ok: false, reason: "malformed" });
    });

    it("refuses standard base64 '+' spelled for '-' (Buffer decodes both to the same bytes)", () => {
      // Sign until the signature has a '-' before its last character.
      let expires = EXP;
      let s = segment(KEY, expires);
      while (!s.slice(18, 60).includes("-")) s = segment(KEY, ++expires);
      const signature = s.slice(18, 61);
      expect(verifyDirectoryPath(`${s}${file}`, [KEY], NOW)).toMatchObject({ ok: true });
      const plus = s.replace(signature, signature.slice(0, 42).replaceAll("-", "+") + signature.slice(42));
      expect(verifyDirectoryPath(`${plus}${file}`, [KEY], NOW)).toEqual({ ok: false, reason: "malformed" });
    });

    it.each([..."AEIMQUYcgkosw048"])("accepts the canonical last character %s (and checks it against the key)", (c) => {
      const result = verifyDirectoryPath(withSig(sig.slice(0, 42) + c), [KEY], NOW);
      expect(result).toEqual(c === sig[42] ? { ok: true, filePath: file, tokenPath: DIR, expires: EXP } : { ok: false, reason: "signature" });
    });

    it.each([..."BCDFZbdfzl159-_"])("refuses the non-canonical last character %s", (c) => {
      expect(verifyDirectoryPath(withSig(sig.slice(0, 42) + c), [KEY], NOW)).toEqual({ ok: false, reason: "malformed" });
    });

    it("accepts every base64url character before the last (and checks it against the key)", () => {
      for (const c of "AZaz09-_") {
        const changed = sig.slice(0, 20) + c + sig.slice(21);
        expect(verifyDirectoryPath(withSig(changed), [KEY], NOW)).toEqual(
          changed === sig ? { ok: true, filePath: file, tokenPath: DIR, expires: EXP } : { ok: false, reason: "signature" },
        );
      }
    });
  });

  describe("expires", () => {
    it("accepts expires 0: well-formed, so expired now and valid at time 0", () => {
      const raw = `${segment(KEY, 0)}${file}`;
      expect(raw).toContain("&expires=0/");
      expect(verifyDirectoryPath(raw, [KEY], NOW)).toEqual({ ok: false, reason: "expired" });
      expect(verifyDirectoryPath(raw, [KEY], 0)).toEqual({ ok: true, filePath: file, tokenPath: DIR, expires: 0 });
    });

    it("accepts 15 digits and refuses 16, even when signed", () => {
      expect(verifyDirectoryPath(`${segment(KEY, 999_999_999_999_999)}${file}`, [KEY], NOW)).toMatchObject({ ok: true, expires: 999_999_999_999_999 });
      expect(verifyDirectoryPath(`${segment(KEY, 1_000_000_000_000_000)}${file}`, [KEY], NOW)).toEqual({ ok: false, reason: "malformed" });
    });

    it.each([
      ["empty", ""],
      ["a leading zero", `0${EXP}`],
      ["16 digits", `1${"0".repeat(15)}`],
      ["a minus sign", "-1"],
      ["a plus sign", `+${EXP}`],
      ["a decimal point", `${EXP}.0`],
      ["an exponent", "1e10"],
      ["hex", "0x7fffffff"],
      ["a leading space", `%20${EXP}`],
      ["a ':' (the character after '9')", `${EXP}:`],
      ["a '.' (below '0')", `${EXP}.`],
      ["a letter", `${String(EXP).slice(0, -1)}a`],
    ])("refuses %s as malformed", (_name, text) => {
      expect(verifyDirectoryPath(withExpires(text), [KEY], NOW)).toEqual({ ok: false, reason: "malformed" });
    });
  });

  describe("token_path", () => {
    it.each([
      ["no leading '/'", "play%2Fvid_x%2F"],
      ["a '..' segment", "%2Fplay%2F..%2F"],
      ["a '.' segment", "%2Fplay%2F.%2F"],
      ["an empty segment", "%2Fplay%2F%2Fvid_x%2F"],
      ["no trailing '/'", "%2Fplay%2Fvid_x"],
      ["a broken escape", "%2Fplay%2Fvid_x%2"],
      ["a NUL", "%2Fplay%00%2F"],
      ["empty", ""],
    ])("refuses a token path with %s as malformed", (_name, raw) => {
      expect(verifyDirectoryPath(withTokenPath(raw), [KEY], NOW)).toEqual({ ok: false, reason: "malformed" });
    });

    it("refuses an unencoded token path: its first '/' ends the token segment", () => {
      const raw = signDirectoryUrl("", KEY, "/a/", "/a/b.ts", EXP).replace("token_path=%2Fa%2F", "token_path=/a/");
      expect(verifyDirectoryPath(raw, [KEY], NOW)).toEqual({ ok: false, reason: "malformed" });
    });
  });

  describe("file names that look like dot segments but are not", () => {
    it.each([
      "/play/vid_x/a",
      "/play/vid_x/hd/a.ts",
      "/play/vid_x/a./b.ts",
      "/play/vid_x/.a",
      "/play/vid_x/.hidden/b.ts",
      "/play/vid_x/...",
      "/play/vid_x/..a/b.ts",
      "/play/vid_x/a..",
    ])("signs and accepts %s", (path) => {
      const raw = signDirectoryUrl("", KEY, DIR, path, EXP);
      expect(verifyDirectoryPath(raw, [KEY], NOW)).toEqual({ ok: true, filePath: path, tokenPath: DIR, expires: EXP });
    });

    it.each(["/play/vid_x/./a.ts", "/play/vid_x/../vid_x/a.ts", "/play/vid_x/a/.", "/play/vid_x/a/.."])("refuses %s as outside", (path) => {
      expect(verifyDirectoryPath(`${seg}${path}`, [KEY], NOW)).toEqual({ ok: false, reason: "outside" });
    });
  });
});
