// The SPEKE v2.0 client against a SPEKE key service on loopback HTTPS, through the network guard: the
// service checks each request's shape, and every way it can fail reaches the encoder as DrmKeyError.
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyProviderFor } from "../../src/drm/keys.js";
import { AES128_SYSTEM_ID, cpixRequest, spekeKeyProvider } from "../../src/drm/speke.js";
import { DrmKeyError, SYSTEM_IDS, type KeyRequest } from "../../src/drm/types.js";
import { NetGuard } from "../../src/net-guard.js";
import { makeTestCa, type TestCa } from "../peers.js";
import { startSpekePeer, type SpekeFailure, type SpekePeer } from "../speke-peer.js";

let ca: TestCa;
let guard: NetGuard;
const peers: SpekePeer[] = [];

beforeAll(() => {
  ca = makeTestCa();
  guard = new NetGuard({ net: { allow: ["127.0.0.1/32"], tlsCaFile: ca.caFile } });
}, 30_000);

afterAll(async () => {
  guard?.destroy();
  await Promise.all(peers.map((p) => p.close()));
  ca?.remove();
});

async function peer(fail?: SpekeFailure): Promise<SpekePeer> {
  const p = await startSpekePeer(ca, fail ? { fail } : {});
  peers.push(p);
  return p;
}

const request = (over: Partial<KeyRequest> = {}): KeyRequest => ({
  resourceId: "out_2x9",
  classes: ["audio", "sd", "hd"],
  scheme: "cbcs",
  systems: ["widevine", "playready", "fairplay"],
  ...over,
});

async function failure(work: Promise<unknown>): Promise<DrmKeyError> {
  const e = await work.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(DrmKeyError);
  return e as DrmKeyError;
}

/** A TCP listener on loopback that counts connections and never answers. */
async function silentListener(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let count = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    count++;
    sockets.add(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => count,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe("SPEKE v2.0 over HTTPS through the guard", () => {
  it("gets one key per class for cbcs and three systems; the service finds the request well-formed", async () => {
    const service = await peer();
    const keys = await spekeKeyProvider({ url: service.url, guard }).keys(request());
    expect(service.requests).toHaveLength(1);
    const seen = service.requests[0]!;
    expect(seen.problem).toBeUndefined();
    expect(seen.method).toBe("POST");
    expect(seen.headers["x-speke-version"]).toBe("2.0");
    expect(seen.headers["content-type"]).toBe("application/xml");
    expect(seen.contentId).toBe("out_2x9");
    expect(seen.contentKeys).toEqual(keys.map((k) => ({ kid: k.kid, scheme: "cbcs" })));
    expect(seen.drmSystems).toHaveLength(9);
    for (const k of keys)
      expect(seen.drmSystems.filter((s) => s.kid === k.kid).map((s) => s.systemId)).toEqual([SYSTEM_IDS.widevine, SYSTEM_IDS.playready, SYSTEM_IDS.fairplay]);
    expect(seen.usageRules.map((r) => [r.intendedTrackType, r.filters])).toEqual([
      ["AUDIO", ["audio"]],
      ["SD", ["video 0..921599"]],
      ["HD", ["video 921600..∞"]],
    ]);
    expect(keys.map((k) => k.trackClass)).toEqual(["audio", "sd", "hd"]);
    for (const k of keys) {
      expect(k.key).toBe(service.keys.get(k.kid));
      expect(k.iv).toBeUndefined();
    }
  });

  it("gets cenc keys for Clear Key, and an aes128 key under the Clear Key AES-128 system (cbc1)", async () => {
    const service = await peer();
    const cenc = await spekeKeyProvider({ url: service.url, guard }).keys(request({ scheme: "cenc", systems: ["clearkey"], classes: ["sd"] }));
    const aes = await spekeKeyProvider({ url: service.url, guard }).keys(request({ scheme: "aes128", systems: [], classes: ["hd"] }));
    expect(service.requests.map((r) => r.problem)).toEqual([undefined, undefined]);
    expect(service.requests.map((r) => [r.contentKeys[0]!.scheme, r.drmSystems.map((s) => s.systemId)])).toEqual([
      ["cenc", [SYSTEM_IDS.clearkey]],
      ["cbc1", [AES128_SYSTEM_ID]],
    ]);
    expect(cenc[0]!.key).toBe(service.keys.get(cenc[0]!.kid));
    expect(aes[0]!.key).toBe(service.keys.get(aes[0]!.kid));
  });

  it("goes through keyProviderFor when the output names the key service", async () => {
    const service = await peer();
    const keys = await keyProviderFor({ keyProviderUrl: service.url }, { guard }).keys(request({ classes: ["audio", "hd"] }));
    expect(keys.map((k) => k.key)).toEqual(keys.map((k) => service.keys.get(k.kid)));
    expect(service.requests[0]!.problem).toBeUndefined();
  });

  const failures: [SpekeFailure, RegExp][] = [
    ["500", /^key provider 127\.0\.0\.1:\d+ answered HTTP 500: key service failure$/],
    ["garbage", /^key provider 127\.0\.0\.1:\d+ answered something that is not XML \(expected the root element at offset 0\)$/],
    ["short-key", /^key provider 127\.0\.0\.1:\d+ answered a 8-byte key for [0-9a-f-]{36}; content keys are 16 bytes$/],
    ["missing-key", /^key provider 127\.0\.0\.1:\d+ did not answer key [0-9a-f-]{36} \(hd\)$/],
  ];
  for (const [mode, message] of failures) {
    it(`fails with DrmKeyError when the service answers ${mode}, showing no key`, async () => {
      const service = await peer(mode);
      const e = await failure(spekeKeyProvider({ url: service.url, guard }).keys(request()));
      expect(e.message).toMatch(message);
      expect(e.message).toContain(new URL(service.url).host);
      expect(service.requests.map((r) => r.problem)).toEqual([undefined]);
      for (const key of service.keys.values()) {
        expect(e.message).not.toContain(key);
        expect(e.message).not.toContain(Buffer.from(key, "hex").toString("base64"));
      }
    });
  }

  it("the service refuses a request that breaks the SPEKE rules, with the reasons (so its approval means something)", async () => {
    const service = await peer();
    const kid = "0123456789ab4def8123456789abcdef";
    const other = "fedcba9876544321a123456789abcdef";
    const good = cpixRequest(
      "out_1",
      "cbcs",
      [SYSTEM_IDS.widevine],
      [
        { trackClass: "sd", kid },
        { trackClass: "hd", kid: other },
      ],
    );
    const post = async (body: string, headers: Record<string, string> = { "content-type": "application/xml", "x-speke-version": "2.0" }) => {
      const res = await guard.request(service.url, { method: "POST", headers, body: Buffer.from(body), maxRedirects: 0 });
      res.body.setEncoding("utf8");
      let text = "";
      for await (const c of res.body) text += String(c);
      return { status: res.status, text };
    };
    expect((await post(good)).status).toBe(200);
    const cases: [string, Record<string, string> | undefined, string][] = [
      [good, { "content-type": "application/xml" }, "Unsupported SPEKE version"],
      [good, { "content-type": "text/plain", "x-speke-version": "2.0" }, "content-type text/plain"],
      [good.replace('version="2.3"', 'version="2.1"'), undefined, "Unsupported CPIX@version"],
      [good.replace('contentId="out_1" ', ""), undefined, "Missing CPIX@contentId"],
      [good.replace('xmlns:pskc="urn:ietf:params:xml:ns:keyprov:pskc" ', ""), undefined, "the pskc namespace is not declared"],
      [
        good.replace('commonEncryptionScheme="cbcs"', 'commonEncryptionScheme="cenc"'),
        undefined,
        "Non compliant ContentKey@commonEncryptionScheme combination",
      ],
      [
        good.replaceAll('commonEncryptionScheme="cbcs"', 'commonEncryptionScheme="cbc1"'),
        undefined,
        `ContentKey@commonEncryptionScheme non compatible with DRMSystem ${SYSTEM_IDS.widevine}`,
      ],
      [good.replaceAll(SYSTEM_IDS.widevine, "00000000-0000-4000-8000-000000000000"), undefined, "unknown DRMSystem@systemId"],
      [good.replace(/<cpix:DRMSystem [^>]*\/>/, ""), undefined, "no DRMSystem for kid 0123456789ab4def8123456789abcdef"],
      [good.replace('maxPixels="921599"', 'maxPixels="921600"'), undefined, "overlap"],
      [good.replace('intendedTrackType="HD"', 'intendedTrackType="SD"'), undefined, "an intendedTrackType repeats"],
      [good.replace('<cpix:VideoFilter maxPixels="921599"/>', ""), undefined, "Missing CPIX encryption contract"],
      [
        good.replace(/<cpix:ContentKeyUsageRule kid="fedcba98[^]*?<\/cpix:ContentKeyUsageRule>/, ""),
        undefined,
        `kid ${other} needs exactly one ContentKeyUsageRule`,
      ],
      [good.replace("01234567-89ab-4def-8123-456789abcdef", "0123"), undefined, 'ContentKey@kid "0123" is not a UUID'],
      ["<CPIX/>", undefined, "root element CPIX"],
      ["not xml", undefined, "not XML"],
    ];
    for (const [body, headers, reason] of cases) {
      const { status, text } = await post(body, headers);
      expect(status, reason).toBe(400);
      expect(text).toContain(reason);
    }
    expect(service.requests.filter((r) => r.problem !== undefined)).toHaveLength(cases.length);
  });

  it("times out a service that accepts the connection and never answers", async () => {
    const silent = await silentListener();
    const started = Date.now();
    const e = await failure(spekeKeyProvider({ url: `https://127.0.0.1:${silent.port}/speke`, guard, timeoutMs: 300 }).keys(request()));
    expect(e.message).toBe(`key provider 127.0.0.1:${silent.port} did not answer within 0.3 s`);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(silent.connections()).toBe(1);
    await silent.close();
  });

  it("fails on a certificate the guard does not trust", async () => {
    const service = await peer();
    const untrusting = new NetGuard({ net: { allow: ["127.0.0.1/32"] } });
    const e = await failure(spekeKeyProvider({ url: service.url, guard: untrusting }).keys(request()));
    untrusting.destroy();
    expect(e.message).toMatch(/^key provider 127\.0\.0\.1:\d+ could not be reached: .*(certificate|issuer)/);
    expect(service.requests).toHaveLength(0);
  });

  it("never connects where the guard refuses: a loopback service not allowlisted, or plain http", async () => {
    const listener = await silentListener();
    const strict = new NetGuard({ net: { allow: [], tlsCaFile: ca.caFile } });
    const loopback = await failure(spekeKeyProvider({ url: `https://127.0.0.1:${listener.port}/speke`, guard: strict }).keys(request()));
    expect(loopback.message).toBe(
      `key provider 127.0.0.1:${listener.port} was refused by the network guard: 127.0.0.1 is a loopback address; only public addresses are reachable unless the operator allows them (MEDIA_NET_ALLOW)`,
    );
    const metadata = await failure(spekeKeyProvider({ url: "https://169.254.169.254/latest/meta-data/", guard: strict }).keys(request()));
    expect(metadata.message).toMatch(/^key provider 169\.254\.169\.254 was refused by the network guard: 169\.254\.169\.254 is a cloud metadata address/);
    const http = await failure(spekeKeyProvider({ url: `http://127.0.0.1:${listener.port}/speke`, guard }).keys(request()));
    expect(http.message).toBe(`key provider 127.0.0.1:${listener.port} was refused by the network guard: http:// URLs are not allowed here; use https://`);
    strict.destroy();
    expect(listener.connections()).toBe(0);
    await listener.close();
  });
});
