// The SPEKE v2.0 client without a network: the CPIX request it writes, the answers it takes and
// refuses, and the client's handling of HTTP, limits, time, cancellation and the guard.
import type { IncomingHttpHeaders } from "node:http";
import { Readable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { drmKeyFailure } from "./drm.fixtures.js";
import type { GuardedRequestOptions } from "../net-guard.js";
import { NetGuard, NetGuardError } from "../net-guard.js";
import {
  AES128_SYSTEM_ID,
  CPIX_NS,
  cpixRequest,
  HD_MIN_PIXELS,
  kidOfUuid,
  newKid,
  PSKC_NS,
  readCpixAnswer,
  spekeKeyProvider,
  SPEKE_LIMITS,
  systemIdsOf,
  uuidOfKid,
  type CpixExpected,
  type SpekeTransport,
} from "./speke.js";
import { DrmKeyError, SYSTEM_IDS, type KeyRequest } from "./types.js";
import { childElements, parseXml } from "./xml.js";

const KID_A = "0123456789ab4def8123456789abcdef";
const KID_S = "11111111111141118111111111111111";
const KID_H = "22222222222242228222222222222222";
const KEY_A = Buffer.from("00112233445566778899aabbccddeeff", "hex");
const KEY_S = Buffer.from("ffeeddccbbaa99887766554433221100", "hex");
const KEY_H = Buffer.from("0f1e2d3c4b5a69788796a5b4c3d2e1f0", "hex");
const expected: CpixExpected = {
  contentId: "movie-42",
  scheme: "cbcs",
  keys: [
    { trackClass: "audio", kid: KID_A },
    { trackClass: "sd", kid: KID_S },
    { trackClass: "hd", kid: KID_H },
  ],
};

/** A CPIX answer: `keys` maps kid (32 hex) to a ContentKey body (attributes and children) as written. */
function answerDoc(keys: [string, string][], root = `contentId="movie-42" version="2.3"`): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<cpix:CPIX xmlns:cpix="urn:dashif:org:cpix" xmlns:pskc="urn:ietf:params:xml:ns:keyprov:pskc" ${root}>
  <cpix:ContentKeyList>
${keys.map(([kid, inner]) => `    <cpix:ContentKey kid="${uuidOfKid(kid)}" commonEncryptionScheme="cbcs"${inner}</cpix:ContentKey>`).join("\n")}
  </cpix:ContentKeyList>
</cpix:CPIX>`;
}
const plain = (key: Buffer, attrs = "") =>
  `${attrs}><cpix:Data><pskc:Secret><pskc:PlainValue>${key.toString("base64")}</pskc:PlainValue></pskc:Secret></cpix:Data>`;
const goodAnswer = () =>
  answerDoc([
    [KID_A, plain(KEY_A)],
    [KID_S, plain(KEY_S)],
    [KID_H, plain(KEY_H)],
  ]);

describe("key IDs", () => {
  it("are random 16 bytes with the UUID version 4 bits", () => {
    const kids = Array.from({ length: 500 }, newKid);
    expect(new Set(kids).size).toBe(500);
    for (const kid of kids) expect(kid).toMatch(/^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
  });

  it("convert to and from the UUID form CPIX carries", () => {
    expect(uuidOfKid(KID_A)).toBe("01234567-89ab-4def-8123-456789abcdef");
    expect(kidOfUuid("01234567-89AB-4DEF-8123-456789ABCDEF")).toBe(KID_A);
    for (const bad of [
      "",
      KID_A,
      "01234567-89ab-4def-8123-456789abcde",
      "01234567-89ab-4def-8123-456789abcdeg",
      "{01234567-89ab-4def-8123-456789abcdef}",
      " 01234567-89ab-4def-8123-456789abcdef",
    ]) {
      expect(kidOfUuid(bad), bad).toBeUndefined();
    }
  });
});

describe("the CPIX request", () => {
  it("lists each key with its scheme, a DRMSystem per key and system, and the encryption contract", () => {
    const doc = cpixRequest("movie-42", "cbcs", [SYSTEM_IDS.widevine, SYSTEM_IDS.fairplay], expected.keys);
    expect(doc).toBe(`<?xml version="1.0" encoding="UTF-8"?>
<cpix:CPIX xmlns:cpix="urn:dashif:org:cpix" xmlns:pskc="urn:ietf:params:xml:ns:keyprov:pskc" contentId="movie-42" version="2.3">
  <cpix:ContentKeyList>
    <cpix:ContentKey kid="01234567-89ab-4def-8123-456789abcdef" commonEncryptionScheme="cbcs"/>
    <cpix:ContentKey kid="11111111-1111-4111-8111-111111111111" commonEncryptionScheme="cbcs"/>
    <cpix:ContentKey kid="22222222-2222-4222-8222-222222222222" commonEncryptionScheme="cbcs"/>
  </cpix:ContentKeyList>
  <cpix:DRMSystemList>
    <cpix:DRMSystem kid="01234567-89ab-4def-8123-456789abcdef" systemId="edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"/>
    <cpix:DRMSystem kid="01234567-89ab-4def-8123-456789abcdef" systemId="94ce86fb-07ff-4f43-adb8-93d2fa968ca2"/>
    <cpix:DRMSystem kid="11111111-1111-4111-8111-111111111111" systemId="edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"/>
    <cpix:DRMSystem kid="11111111-1111-4111-8111-111111111111" systemId="94ce86fb-07ff-4f43-adb8-93d2fa968ca2"/>
    <cpix:DRMSystem kid="22222222-2222-4222-8222-222222222222" systemId="edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"/>
    <cpix:DRMSystem kid="22222222-2222-4222-8222-222222222222" systemId="94ce86fb-07ff-4f43-adb8-93d2fa968ca2"/>
  </cpix:DRMSystemList>
  <cpix:ContentKeyUsageRuleList>
    <cpix:ContentKeyUsageRule kid="01234567-89ab-4def-8123-456789abcdef" intendedTrackType="AUDIO"><cpix:AudioFilter/></cpix:ContentKeyUsageRule>
    <cpix:ContentKeyUsageRule kid="11111111-1111-4111-8111-111111111111" intendedTrackType="SD"><cpix:VideoFilter maxPixels="921599"/></cpix:ContentKeyUsageRule>
    <cpix:ContentKeyUsageRule kid="22222222-2222-4222-8222-222222222222" intendedTrackType="HD"><cpix:VideoFilter minPixels="921600"/></cpix:ContentKeyUsageRule>
  </cpix:ContentKeyUsageRuleList>
</cpix:CPIX>
`);
    expect(HD_MIN_PIXELS).toBe(1280 * 720);
  });

  it("names aes128 keys cbc1 under the Clear Key AES-128 system, and the other schemes as they are", () => {
    expect(systemIdsOf({ scheme: "aes128", systems: [] })).toEqual([AES128_SYSTEM_ID]);
    expect(systemIdsOf({ scheme: "aes128", systems: ["widevine"] })).toEqual([AES128_SYSTEM_ID]);
    expect(systemIdsOf({ scheme: "cenc", systems: ["clearkey", "playready"] })).toEqual([SYSTEM_IDS.clearkey, SYSTEM_IDS.playready]);
    const key = (doc: string) => childElements(childElements(parseXml(doc), CPIX_NS, "ContentKeyList")[0]!, CPIX_NS, "ContentKey")[0]!;
    expect(key(cpixRequest("x", "aes128", [AES128_SYSTEM_ID], [{ trackClass: "hd", kid: KID_H }])).attributes.get("commonEncryptionScheme")).toBe("cbc1");
    expect(key(cpixRequest("x", "cenc", [SYSTEM_IDS.clearkey], [{ trackClass: "hd", kid: KID_H }])).attributes.get("commonEncryptionScheme")).toBe("cenc");
  });

  it("escapes the content ID", () => {
    const doc = cpixRequest(`a&b<"c'>`, "cbcs", [SYSTEM_IDS.clearkey], [{ trackClass: "sd", kid: KID_S }]);
    expect(doc).toContain(`contentId="a&amp;b&lt;&quot;c&apos;&gt;"`);
    expect(parseXml(doc).attributes.get("contentId")).toBe(`a&b<"c'>`);
  });
});

describe("reading a CPIX answer", () => {
  it("takes each requested key by kid, in request order, whatever the prefixes", () => {
    const keys = readCpixAnswer(goodAnswer(), expected, "keys.example");
    expect(keys).toEqual([
      { trackClass: "audio", kid: KID_A, key: KEY_A.toString("hex") },
      { trackClass: "sd", kid: KID_S, key: KEY_S.toString("hex") },
      { trackClass: "hd", kid: KID_H, key: KEY_H.toString("hex") },
    ]);
    // As Python's ElementTree writes it: generated prefixes; and with CPIX as the default namespace.
    const renamed = goodAnswer()
      .replaceAll("cpix:", "ns0:")
      .replaceAll("xmlns:cpix", "xmlns:ns0")
      .replaceAll("pskc:", "ns1:")
      .replaceAll("xmlns:pskc", "xmlns:ns1");
    expect(readCpixAnswer(renamed, expected, "keys.example")).toEqual(keys);
    const defaulted = goodAnswer().replaceAll("cpix:", "").replace("xmlns:cpix=", "xmlns=");
    expect(readCpixAnswer(defaulted, expected, "keys.example")).toEqual(keys);
    // Answered out of order, with extra keys, upper-case kids, wrapped base64 and extra elements.
    const shuffled = answerDoc([
      [
        KID_H,
        `><cpix:Data><pskc:Secret><pskc:PlainValue>\n  ${KEY_H.toString("base64").slice(0, 10)}\n  ${KEY_H.toString("base64").slice(10)}\n</pskc:PlainValue></pskc:Secret></cpix:Data><cpix:Other/>`,
      ],
      ["33333333333343338333333333333333", plain(KEY_A)],
      [KID_S, plain(KEY_S)],
      [KID_A, plain(KEY_A)],
    ]).replace(uuidOfKid(KID_S), uuidOfKid(KID_S).toUpperCase());
    expect(readCpixAnswer(shuffled, expected, "keys.example")).toEqual(keys);
  });

  it("keeps an explicit IV for aes128 only", () => {
    const iv = Buffer.from("000102030405060708090a0b0c0d0e0f", "hex");
    const doc = answerDoc([[KID_H, plain(KEY_H, ` explicitIV="${iv.toString("base64")}"`)]]).replace(
      `commonEncryptionScheme="cbcs"`,
      `commonEncryptionScheme="cbc1"`,
    );
    const aes: CpixExpected = { contentId: "movie-42", scheme: "aes128", keys: [{ trackClass: "hd", kid: KID_H }] };
    expect(readCpixAnswer(doc, aes, "k")).toEqual([{ trackClass: "hd", kid: KID_H, key: KEY_H.toString("hex"), iv: iv.toString("hex") }]);
    const cbcs = answerDoc([[KID_H, plain(KEY_H, ` explicitIV="${iv.toString("base64")}"`)]]);
    expect(readCpixAnswer(cbcs, { ...aes, scheme: "cbcs" }, "k")).toEqual([{ trackClass: "hd", kid: KID_H, key: KEY_H.toString("hex") }]);
  });

  it("refuses an unusable answer, naming the provider and the problem but no key", async () => {
    const a = uuidOfKid(KID_A);
    const cases: [string, string][] = [
      ['{"keys": []}', `key provider keys.example answered something that is not XML (expected the root element at offset 0)`],
      ["<html><body>oops</body>", "key provider keys.example answered something that is not XML (<html> is not closed at offset 23)"],
      [`<CPIX contentId="movie-42" version="2.3"/>`, `key provider keys.example answered a document that is not CPIX (root element <CPIX> in namespace "")`],
      [goodAnswer().replace(`contentId="movie-42"`, `contentId="other"`), `key provider keys.example answered contentId "other" to a request for "movie-42"`],
      [goodAnswer().replace(`contentId="movie-42" `, ""), `answered contentId "" to a request for "movie-42"`],
      [goodAnswer().replace(`version="2.3"`, `version="2.1"`), `key provider keys.example answered CPIX version "2.1"; SPEKE 2.0 uses 2.3`],
      [
        answerDoc([
          [KID_A, plain(KEY_A)],
          [KID_S, plain(KEY_S)],
        ]),
        `key provider keys.example did not answer key ${uuidOfKid(KID_H)} (hd)`,
      ],
      [
        goodAnswer().replace("</cpix:ContentKeyList>", `<cpix:ContentKey kid="${a}"/></cpix:ContentKeyList>`),
        `key provider keys.example answered key ${a} twice`,
      ],
      [goodAnswer().replace(`kid="${a}"`, `kid="${KID_A}"`), `key provider keys.example answered a content key whose kid "${KID_A}" is not a UUID`],
      [goodAnswer().replace(`kid="${a}"`, ""), `answered a content key whose kid "" is not a UUID`],
      [
        goodAnswer().replace(`commonEncryptionScheme="cbcs"`, `commonEncryptionScheme="cenc"`),
        `key provider keys.example changed commonEncryptionScheme of key ${a} to "cenc"`,
      ],
      [
        answerDoc([[KID_A, `><cpix:Data><pskc:Secret><pskc:EncryptedValue>x</pskc:EncryptedValue></pskc:Secret></cpix:Data>`]]),
        `key provider keys.example sent key ${a} encrypted; content key encryption is not supported, send PlainValue over HTTPS`,
      ],
      [answerDoc([[KID_A, `>`]]), `key provider keys.example answered key ${a} (audio) with no PlainValue`],
      [
        answerDoc([[KID_A, `><pskc:Secret><pskc:PlainValue>${KEY_A.toString("base64")}</pskc:PlainValue></pskc:Secret>`]]),
        `answered key ${a} (audio) with no PlainValue`,
      ],
      [
        answerDoc([
          [KID_A, `><cpix:Data><pskc:Secret><pskc:PlainValue>AA==</pskc:PlainValue><pskc:PlainValue>AA==</pskc:PlainValue></pskc:Secret></cpix:Data>`],
        ]),
        `answered key ${a} (audio) with 2 PlainValues`,
      ],
      [
        answerDoc([[KID_A, plain(KEY_A).replace(KEY_A.toString("base64"), "not base64!")]]),
        `key provider keys.example answered a key for ${a} that is not base64`,
      ],
      [answerDoc([[KID_A, plain(KEY_A).replace(KEY_A.toString("base64"), "")]]), `answered a key for ${a} that is not base64`],
      [
        answerDoc([[KID_A, plain(KEY_A).replace(KEY_A.toString("base64"), KEY_A.toString("base64").replace("==", ""))]]),
        `answered a key for ${a} that is not base64`,
      ],
      [answerDoc([[KID_A, plain(KEY_A.subarray(0, 8))]]), `key provider keys.example answered a 8-byte key for ${a}; content keys are 16 bytes`],
      [answerDoc([[KID_A, plain(Buffer.concat([KEY_A, KEY_A]))]]), `answered a 32-byte key for ${a}; content keys are 16 bytes`],
      [answerDoc([[KID_A, plain(KEY_A, ` explicitIV="AAAA"`)]]), `key provider keys.example answered an explicitIV for ${a} that is not 16 bytes of base64`],
      [answerDoc([[KID_A, plain(KEY_A, ` explicitIV="%%%"`)]]), `answered an explicitIV for ${a} that is not 16 bytes of base64`],
      [answerDoc([]), `did not answer key ${a} (audio)`],
      [goodAnswer().replaceAll("ContentKeyList", "KeyList"), `did not answer key ${a} (audio)`],
    ];
    const one: CpixExpected = { ...expected, keys: expected.keys.slice(0, 1) };
    for (const [doc, message] of cases) {
      const wantsAll = message.includes("(hd)");
      const e = await drmKeyFailure(() => readCpixAnswer(doc, wantsAll ? expected : one, "keys.example"));
      expect(e.message, doc).toContain(message);
      for (const key of [KEY_A, KEY_S, KEY_H]) expect(e.message).not.toContain(key.toString("base64"));
    }
  });
});

// ───────────────────────────── the client, over a fake transport ─────────────────────────────

interface Sent {
  url: string;
  options: GuardedRequestOptions;
  body: string;
}

/** A transport that records the request and answers with `reply` (or fails as it says). */
function fakeTransport(
  reply: (sent: Sent) => { status?: number; headers?: IncomingHttpHeaders; body?: string | Readable } | Promise<never>,
): SpekeTransport & { sent: Sent[] } {
  const sent: Sent[] = [];
  return {
    sent,
    async request(url, options) {
      const s = { url, options, body: Buffer.isBuffer(options.body) ? options.body.toString("utf8") : "" };
      sent.push(s);
      const r = await reply(s);
      const body = typeof r.body === "string" || r.body === undefined ? Readable.from([Buffer.from(r.body ?? "")]) : r.body;
      return { status: r.status ?? 200, headers: r.headers ?? {}, body };
    },
  };
}

/** Answers with the request's own kids and these keys, as a SPEKE service does. */
function echoKeys(sent: Sent, keys: Buffer[] = [KEY_A, KEY_S, KEY_H]): string {
  const kids = [...sent.body.matchAll(/<cpix:ContentKey kid="([^"]+)"/g)].map((m) => kidOfUuid(m[1]!)!);
  const contentId = parseXml(sent.body).attributes.get("contentId")!;
  return answerDoc(
    kids.map((kid, i) => [kid, plain(keys[i]!)]),
    `contentId="${contentId}" version="2.3"`,
  );
}

const keyRequest = (over: Partial<KeyRequest> = {}): KeyRequest => ({
  resourceId: "movie-42",
  classes: ["audio", "sd", "hd"],
  scheme: "cbcs",
  systems: ["widevine", "fairplay"],
  ...over,
});
const URL_ = "https://keys.example:8443/speke/v2";

describe("spekeKeyProvider", () => {
  it("POSTs the CPIX document with the SPEKE headers, no redirects and a timeout, and returns the keys", async () => {
    const transport = fakeTransport((s) => ({ body: echoKeys(s), headers: { "x-speke-version": "2.0" } }));
    const keys = await spekeKeyProvider({ url: URL_, guard: transport }).keys(keyRequest());
    expect(keys.map((k) => [k.trackClass, k.key])).toEqual([
      ["audio", KEY_A.toString("hex")],
      ["sd", KEY_S.toString("hex")],
      ["hd", KEY_H.toString("hex")],
    ]);
    expect(new Set(keys.map((k) => k.kid)).size).toBe(3);
    const [sent] = transport.sent;
    expect(sent!.url).toBe(URL_);
    expect(sent!.options).toMatchObject({
      method: "POST",
      maxRedirects: 0,
      timeoutMs: SPEKE_LIMITS.timeoutMs,
      headers: { "content-type": "application/xml", "x-speke-version": "2.0", "content-length": String(Buffer.byteLength(sent!.body)) },
    });
    expect(sent!.options.signal).toBeInstanceOf(AbortSignal);
    expect(sent!.options.allowHttp).toBeUndefined();
    const root = parseXml(sent!.body);
    expect([root.ns, root.local, root.attributes.get("contentId"), root.attributes.get("version"), root.attributes.get("xmlns:pskc")]).toEqual([
      CPIX_NS,
      "CPIX",
      "movie-42",
      "2.3",
      PSKC_NS,
    ]);
    expect(childElements(childElements(root, CPIX_NS, "DRMSystemList")[0]!, CPIX_NS, "DRMSystem")).toHaveLength(6);
    // Fresh key IDs on every request.
    const again = await spekeKeyProvider({ url: URL_, guard: transport }).keys(keyRequest());
    expect(again.map((k) => k.kid).some((kid) => keys.some((k) => k.kid === kid))).toBe(false);
  });

  it("asks aes128 keys under the Clear Key AES-128 system and keeps the answered IV", async () => {
    const iv = Buffer.alloc(16, 7);
    const transport = fakeTransport((s) => ({
      body: echoKeys(s).replace(`commonEncryptionScheme="cbcs"`, `commonEncryptionScheme="cbc1" explicitIV="${iv.toString("base64")}"`),
    }));
    const [key] = await spekeKeyProvider({ url: URL_, guard: transport }).keys(keyRequest({ classes: ["hd"], scheme: "aes128", systems: [] }));
    expect(key).toMatchObject({ trackClass: "hd", key: KEY_A.toString("hex"), iv: iv.toString("hex") });
    expect(transport.sent[0]!.body).toContain(`systemId="${AES128_SYSTEM_ID}"`);
    expect(transport.sent[0]!.body).toContain(`commonEncryptionScheme="cbc1"`);
  });

  const provider = "key provider keys.example:8443";

  it("fails on a non-2xx answer, quoting its start unless it carries key values", async () => {
    const cases: [{ status: number; body: string }, string][] = [
      [{ status: 500, body: "  internal\n  failure  " }, `${provider} answered HTTP 500: internal failure`],
      [{ status: 422, body: "Missing CPIX@contentId" }, `${provider} answered HTTP 422: Missing CPIX@contentId`],
      [{ status: 403, body: "" }, `${provider} answered HTTP 403`],
      [{ status: 302, body: "" }, `${provider} answered HTTP 302`],
      [{ status: 500, body: "x".repeat(300) }, `${provider} answered HTTP 500: ${"x".repeat(200)}`],
      [{ status: 500, body: `<cpix:Secret><pskc:PlainValue>${KEY_A.toString("base64")}</pskc:PlainValue>` }, `${provider} answered HTTP 500`],
    ];
    for (const [reply, message] of cases) {
      const e = await drmKeyFailure(() => spekeKeyProvider({ url: URL_, guard: fakeTransport(() => reply) }).keys(keyRequest()));
      expect(e.message).toBe(message);
    }
  });

  it("fails on an answer over the size limit without reading it all", async () => {
    let pulled = 0;
    const endless = new Readable({
      read() {
        pulled++;
        this.push(Buffer.alloc(64 * 1024, 0x20));
      },
    });
    const e = await drmKeyFailure(() => spekeKeyProvider({ url: URL_, guard: fakeTransport(() => ({ body: endless })) }).keys(keyRequest()));
    expect(e.message).toBe(`${provider} answered more than 1024 KiB`);
    expect(pulled).toBeLessThan(40);
    expect(endless.destroyed).toBe(true);
    const small = await drmKeyFailure(() =>
      spekeKeyProvider({ url: URL_, guard: fakeTransport((s) => ({ body: echoKeys(s) })), maxResponseBytes: 100 }).keys(keyRequest()),
    );
    expect(small.message).toBe(`${provider} answered more than 0.09765625 KiB`);
  });

  it("fails on another SPEKE version, garbage, or a CPIX answer without the keys", async () => {
    const version = await drmKeyFailure(() =>
      spekeKeyProvider({ url: URL_, guard: fakeTransport((s) => ({ body: echoKeys(s), headers: { "x-speke-version": "1.0" } })) }).keys(keyRequest()),
    );
    expect(version.message).toBe(`${provider} answered with X-Speke-Version 1.0; this client speaks 2.0`);
    const garbage = await drmKeyFailure(() => spekeKeyProvider({ url: URL_, guard: fakeTransport(() => ({ body: "\u0000\u0001binary" })) }).keys(keyRequest()));
    expect(garbage.message).toBe(`${provider} answered something that is not XML (expected the root element at offset 0)`);
    const short = await drmKeyFailure(() =>
      spekeKeyProvider({ url: URL_, guard: fakeTransport((s) => ({ body: echoKeys(s, [KEY_A, KEY_S.subarray(0, 15), KEY_H]) })) }).keys(keyRequest()),
    );
    expect(short.message).toMatch(/^key provider keys\.example:8443 answered a 15-byte key for [0-9a-f-]{36}; content keys are 16 bytes$/);
  });

  it("fails with the guard's refusal, or the connection error, naming the provider", async () => {
    const refused = fakeTransport(() =>
      Promise.reject(
        new NetGuardError(
          "forbidden_address",
          "10.0.0.1 is a private address; only public addresses are reachable unless the operator allows them (MEDIA_NET_ALLOW)",
        ),
      ),
    );
    expect((await drmKeyFailure(() => spekeKeyProvider({ url: URL_, guard: refused }).keys(keyRequest()))).message).toBe(
      `${provider} was refused by the network guard: 10.0.0.1 is a private address; only public addresses are reachable unless the operator allows them (MEDIA_NET_ALLOW)`,
    );
    const down = fakeTransport(() => Promise.reject(Object.assign(new Error("connect ECONNREFUSED 203.0.113.9:8443"), { code: "ECONNREFUSED" })));
    expect((await drmKeyFailure(() => spekeKeyProvider({ url: URL_, guard: down }).keys(keyRequest()))).message).toBe(
      `${provider} could not be reached: connect ECONNREFUSED 203.0.113.9:8443`,
    );
    const odd = fakeTransport(() => Promise.reject("a string"));
    expect((await drmKeyFailure(() => spekeKeyProvider({ url: URL_, guard: odd }).keys(keyRequest()))).message).toBe(
      `${provider} could not be reached: a string`,
    );
    // A real guard: plain http and a bad URL are refused before any connection.
    const guard = new NetGuard({ net: { allow: [] } });
    expect((await drmKeyFailure(() => spekeKeyProvider({ url: "http://keys.example/speke", guard }).keys(keyRequest()))).message).toBe(
      "key provider keys.example was refused by the network guard: http:// URLs are not allowed here; use https://",
    );
    expect((await drmKeyFailure(() => spekeKeyProvider({ url: "not a url", guard }).keys(keyRequest()))).message).toBe(
      `key provider "not a url" was refused by the network guard: "not a url" is not a valid URL`,
    );
  });

  it("times out a provider that does not answer, and on the guard's idle timeout", async () => {
    const silent = fakeTransport(
      (s) =>
        new Promise<never>((_, reject) => {
          s.options.signal!.addEventListener("abort", () => reject(new Error("The operation was aborted")));
        }),
    );
    const started = Date.now();
    const e = await drmKeyFailure(() => spekeKeyProvider({ url: URL_, guard: silent, timeoutMs: 150 }).keys(keyRequest()));
    expect(e.message).toBe(`${provider} did not answer within 0.15 s`);
    expect(Date.now() - started).toBeLessThan(2000);
    // Headers came, the body never ends.
    const stalled = fakeTransport(() => ({ body: new Readable({ read() {} }) }));
    expect((await drmKeyFailure(() => spekeKeyProvider({ url: URL_, guard: stalled, timeoutMs: 150 }).keys(keyRequest()))).message).toBe(
      `${provider} did not answer within 0.15 s`,
    );
    const idle = fakeTransport(() => Promise.reject(new NetGuardError("timeout", "keys.example:8443 did not answer within 15 s")));
    expect((await drmKeyFailure(() => spekeKeyProvider({ url: URL_, guard: idle }).keys(keyRequest()))).message).toBe(`${provider} did not answer within 15 s`);
  });

  it("passes the caller's cancellation through as it is", async () => {
    const abort = new AbortController();
    const reason = new Error("job cancelled");
    const hanging = fakeTransport(
      (s) =>
        new Promise<never>((_, reject) => {
          s.options.signal!.addEventListener("abort", () => reject(new Error("aborted")));
          setTimeout(() => abort.abort(reason), 20);
        }),
    );
    await expect(spekeKeyProvider({ url: URL_, guard: hanging }).keys(keyRequest({ signal: abort.signal }))).rejects.toBe(reason);
    const before = new AbortController();
    before.abort(reason);
    await expect(
      spekeKeyProvider({ url: URL_, guard: fakeTransport((s) => ({ body: echoKeys(s) })) }).keys(keyRequest({ signal: before.signal })),
    ).rejects.toBe(reason);
  });

  it("refuses requests SPEKE cannot express before sending anything", async () => {
    const transport = fakeTransport(() => ({ status: 500 }));
    const cases: [Partial<KeyRequest>, string][] = [
      [{ classes: [] }, `${provider} was asked for no track class`],
      [{ classes: ["sd", "sd"] }, `${provider} was asked for a track class twice (sd, sd); SPEKE takes one key per class`],
      [{ systems: [] }, `${provider} was asked for cbcs keys for no DRM system`],
    ];
    for (const [over, message] of cases)
      expect((await drmKeyFailure(() => spekeKeyProvider({ url: URL_, guard: transport }).keys(keyRequest(over)))).message).toBe(message);
    expect(transport.sent).toHaveLength(0);
  });

  it("logs one line per request, with the provider and resource but no key material", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const keys = await spekeKeyProvider({ url: URL_, guard: fakeTransport((s) => ({ body: echoKeys(s) })), log }).keys(keyRequest());
    await drmKeyFailure(() =>
      spekeKeyProvider({ url: URL_, guard: fakeTransport((s) => ({ body: echoKeys(s, [KEY_A, KEY_S.subarray(1), KEY_H]) })), log }).keys(keyRequest()),
    );
    expect(lines.map((l) => [l.level, l.msg, l.provider, l.resource_id])).toEqual([
      [30, "drm keys fetched", "keys.example:8443", "movie-42"],
      [40, "drm key provider failed", "keys.example:8443", "movie-42"],
    ]);
    expect(lines[0]).toMatchObject({ keys: 3, scheme: "cbcs" });
    expect(lines[1]!.err).toMatch(/15-byte key/);
    const text = JSON.stringify(lines);
    for (const k of [...keys.map((k) => k.key), ...[KEY_A, KEY_S, KEY_H].flatMap((b) => [b.toString("hex"), b.toString("base64")])])
      expect(text).not.toContain(k);
  });
});
