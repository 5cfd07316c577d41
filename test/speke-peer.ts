// A SPEKE v2.0 key service on loopback HTTPS: it checks each request against the SPEKE 2.0 / CPIX 2.3
// rules (answering 400 with the reasons), fills random keys into the document it was sent and keeps
// them, so tests compare what the client got with what was handed out. The rules are written out
// here from the specification, not imported from the client, so the two check each other.
import { randomBytes } from "node:crypto";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { parseXml, type XmlElement } from "../src/drm/xml.js";
import { startHttpsPeer, type TestCa } from "./peers.js";

const CPIX = "urn:dashif:org:cpix";
const PSKC = "urn:ietf:params:xml:ns:keyprov:pskc";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** DASH-IF system IDs a SPEKE service knows, with the commonEncryptionScheme values each takes. */
const SYSTEMS: ReadonlyMap<string, readonly string[]> = new Map([
  ["1077efec-c0b2-4d02-ace3-3c1e52e2fb4b", ["cenc", "cbcs"]], // W3C common pssh (Clear Key)
  ["edef8ba9-79d6-4ace-a3c8-27dcd51d21ed", ["cenc", "cbcs"]], // Widevine
  ["9a04f079-9840-4286-ab92-e65be0885f95", ["cenc", "cbcs"]], // PlayReady
  ["94ce86fb-07ff-4f43-adb8-93d2fa968ca2", ["cbcs"]], // FairPlay
  ["3ea8778f-7742-4bf9-b18b-e834b2acbd47", ["cbc1"]], // Clear Key AES-128 (HLS)
]);

export type SpekeFailure = "500" | "garbage" | "short-key" | "missing-key";

export interface SpekeRequestSeen {
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly contentId: string | undefined;
  /** Key IDs as 32 hex, as ContentKey.kid holds them. */
  readonly contentKeys: readonly { readonly kid: string; readonly scheme: string | undefined }[];
  readonly drmSystems: readonly { readonly kid: string; readonly systemId: string }[];
  readonly usageRules: readonly { readonly kid: string; readonly intendedTrackType: string; readonly filters: readonly string[] }[];
  /** Why the request was refused with 400; undefined when it was valid. */
  readonly problem: string | undefined;
}

export interface SpekePeer {
  /** https://127.0.0.1:<port>/speke/v2 */
  readonly url: string;
  readonly requests: SpekeRequestSeen[];
  /** Every key handed out: 32-hex key ID → key as hex. */
  readonly keys: Map<string, string>;
  close(): Promise<void>;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] extends readonly (infer E)[] ? E[] : T[K] };

const hexKid = (uuid: string) => uuid.replaceAll("-", "").toLowerCase();
const elements = (parent: XmlElement, local: string) =>
  parent.children.filter((c): c is XmlElement => typeof c !== "string" && c.ns === CPIX && c.local === local);

/** What a request holds, and every rule it breaks. */
function inspect(req: IncomingMessage, body: string): SpekeRequestSeen {
  const problems: string[] = [];
  const seen: Mutable<Omit<SpekeRequestSeen, "problem">> = {
    method: req.method ?? "",
    headers: req.headers,
    body,
    contentId: undefined,
    contentKeys: [],
    drmSystems: [],
    usageRules: [],
  };
  const done = (): SpekeRequestSeen => ({ ...seen, problem: problems.length > 0 ? problems.join("; ") : undefined });
  if (req.method !== "POST") problems.push(`method ${req.method} (SPEKE uses POST)`);
  if (req.headers["x-speke-version"] !== "2.0") problems.push("Unsupported SPEKE version");
  if (!/^application\/xml\b/.test(req.headers["content-type"] ?? ""))
    problems.push(`content-type ${req.headers["content-type"]} (SPEKE sends application/xml)`);
  let root: XmlElement;
  try {
    root = parseXml(body);
  } catch (e) {
    problems.push(`not XML: ${e instanceof Error ? e.message : String(e)}`);
    return done();
  }
  if (root.ns !== CPIX || root.local !== "CPIX") problems.push(`root element ${root.name} in namespace "${root.ns}" (want CPIX in ${CPIX})`);
  if ([...root.attributes].every(([name, value]) => !(name.startsWith("xmlns:") && value === PSKC))) problems.push("the pskc namespace is not declared");
  seen.contentId = root.attributes.get("contentId");
  if (!seen.contentId) problems.push("Missing CPIX@contentId");
  const version = root.attributes.get("version");
  if (!version) problems.push("Missing CPIX@version");
  else if (version !== "2.3") problems.push("Unsupported CPIX@version");

  const schemes = new Set<string>();
  for (const list of elements(root, "ContentKeyList")) {
    for (const key of elements(list, "ContentKey")) {
      const kid = key.attributes.get("kid") ?? "";
      const scheme = key.attributes.get("commonEncryptionScheme");
      if (!UUID.test(kid)) problems.push(`ContentKey@kid "${kid}" is not a UUID`);
      if (!scheme) problems.push(`Missing ContentKey@commonEncryptionScheme for KID ${kid}`);
      else schemes.add(scheme);
      if (elements(key, "Data").length > 0) problems.push(`ContentKey ${kid} already carries Data`);
      if (seen.contentKeys.some((k) => k.kid === hexKid(kid))) problems.push(`ContentKey ${kid} listed twice`);
      seen.contentKeys.push({ kid: hexKid(kid), scheme });
    }
  }
  if (seen.contentKeys.length === 0) problems.push("no ContentKey in a ContentKeyList");
  if (schemes.size > 1) problems.push("Non compliant ContentKey@commonEncryptionScheme combination");
  const known = new Set(seen.contentKeys.map((k) => k.kid));

  for (const list of elements(root, "DRMSystemList")) {
    for (const system of elements(list, "DRMSystem")) {
      const kid = hexKid(system.attributes.get("kid") ?? "");
      const systemId = (system.attributes.get("systemId") ?? "").toLowerCase();
      seen.drmSystems.push({ kid, systemId });
      const takes = SYSTEMS.get(systemId);
      if (!known.has(kid)) problems.push(`DRMSystem for unknown kid ${kid}`);
      if (!takes) problems.push(`unknown DRMSystem@systemId ${systemId}`);
      else
        for (const scheme of schemes) if (!takes.includes(scheme)) problems.push(`ContentKey@commonEncryptionScheme non compatible with DRMSystem ${systemId}`);
    }
  }
  const systemsOf = (kid: string) =>
    seen.drmSystems
      .filter((s) => s.kid === kid)
      .map((s) => s.systemId)
      .sort()
      .join(",");
  for (const { kid } of seen.contentKeys) {
    if (systemsOf(kid) === "") problems.push(`no DRMSystem for kid ${kid}`);
    else if (systemsOf(kid) !== systemsOf(seen.contentKeys[0]!.kid)) problems.push(`kid ${kid} asks for other systems than the first key`);
  }

  const pixelRanges: { kid: string; min: number; max: number }[] = [];
  for (const list of elements(root, "ContentKeyUsageRuleList")) {
    for (const rule of elements(list, "ContentKeyUsageRule")) {
      const kid = hexKid(rule.attributes.get("kid") ?? "");
      const intendedTrackType = rule.attributes.get("intendedTrackType") ?? "";
      const audio = elements(rule, "AudioFilter");
      const video = elements(rule, "VideoFilter");
      seen.usageRules.push({
        kid,
        intendedTrackType,
        filters: [...audio.map(() => "audio"), ...video.map((v) => `video ${v.attributes.get("minPixels") ?? "0"}..${v.attributes.get("maxPixels") ?? "∞"}`)],
      });
      if (!known.has(kid)) problems.push(`ContentKeyUsageRule for unknown kid ${kid}`);
      if (intendedTrackType === "") problems.push(`ContentKeyUsageRule ${kid} has no intendedTrackType`);
      if (audio.length + video.length === 0) problems.push("Missing CPIX encryption contract");
      for (const v of video) {
        const bound = (name: string, fallback: number) => {
          const text = v.attributes.get(name);
          if (text !== undefined && !/^\d+$/.test(text)) problems.push(`VideoFilter@${name} "${text}" is not a number`);
          return text === undefined ? fallback : Number(text);
        };
        pixelRanges.push({ kid, min: bound("minPixels", 0), max: bound("maxPixels", Infinity) });
      }
    }
  }
  for (const { kid } of seen.contentKeys)
    if (seen.usageRules.filter((r) => r.kid === kid).length !== 1) problems.push(`kid ${kid} needs exactly one ContentKeyUsageRule`);
  const types = seen.usageRules.map((r) => r.intendedTrackType);
  if (new Set(types).size !== types.length) problems.push("Malformed encryption contract (an intendedTrackType repeats)");
  for (const a of pixelRanges) {
    if (a.min > a.max) problems.push(`VideoFilter of ${a.kid} is empty`);
    for (const b of pixelRanges)
      if (a !== b && a.kid !== b.kid && a.min <= b.max && b.min <= a.max) problems.push(`VideoFilters of ${a.kid} and ${b.kid} overlap`);
  }
  return done();
}

const escape = (text: string) => text.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);

function serialize(el: XmlElement): string {
  const attributes = [...el.attributes].map(([name, value]) => ` ${name}="${escape(value)}"`).join("");
  if (el.children.length === 0) return `<${el.name}${attributes}/>`;
  const inner = el.children.map((c) => (typeof c === "string" ? escape(c) : serialize(c))).join("");
  return `<${el.name}${attributes}>${inner}</${el.name}>`;
}

const element = (name: string, ns: string, children: XmlElement["children"], attributes: [string, string][] = []): XmlElement => ({
  name,
  ns,
  local: name.slice(name.indexOf(":") + 1),
  attributes: new Map(attributes),
  children,
});

/** The request document with keys filled in (the failure mode applied), as a SPEKE service answers. */
function answer(body: string, fail: SpekeFailure | undefined, keys: Map<string, string>): string {
  const root = parseXml(body);
  let first = true;
  const fill = (key: XmlElement): XmlElement => {
    const kid = hexKid(key.attributes.get("kid")!);
    const bytes = randomBytes(fail === "short-key" && first ? 8 : 16);
    first = false;
    keys.set(kid, bytes.toString("hex"));
    const prefix = key.name.includes(":") ? key.name.slice(0, key.name.indexOf(":") + 1) : "";
    const value = element("pskc:PlainValue", PSKC, [bytes.toString("base64")]);
    const secret = element("pskc:Secret", PSKC, [value], [["xmlns:pskc", PSKC]]);
    return { ...key, children: [...key.children, element(`${prefix}Data`, CPIX, [secret])] };
  };
  const children = root.children.map((c) => {
    if (typeof c === "string" || c.ns !== CPIX || c.local !== "ContentKeyList") return c;
    const contentKeys = c.children.filter((k) => typeof k !== "string" && k.local === "ContentKey");
    const dropped = fail === "missing-key" ? contentKeys.at(-1) : undefined;
    return { ...c, children: c.children.filter((k) => k !== dropped).map((k) => (typeof k === "string" || k.local !== "ContentKey" ? k : fill(k))) };
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n${serialize({ ...root, children })}`;
}

/** A SPEKE v2.0 key service over HTTPS with the test CA's certificate; `fail` makes it misbehave after checking the request. */
export async function startSpekePeer(ca: TestCa, opts: { fail?: SpekeFailure } = {}): Promise<SpekePeer> {
  const requests: SpekeRequestSeen[] = [];
  const keys = new Map<string, string>();
  const respond = (res: ServerResponse, status: number, type: string, body: string) =>
    res.writeHead(status, { "content-type": type, "x-speke-version": "2.0", "x-speke-user-agent": "media test SPEKE peer" }).end(body);
  const peer = await startHttpsPeer(ca, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const seen = inspect(req, Buffer.concat(chunks).toString("utf8"));
      requests.push(seen);
      if (seen.problem !== undefined) return respond(res, 400, "text/plain", seen.problem);
      if (opts.fail === "500") return respond(res, 500, "text/plain", "key service failure");
      if (opts.fail === "garbage") return respond(res, 200, "application/xml", "this is not a CPIX document <<<");
      respond(res, 200, "application/xml", answer(seen.body, opts.fail, keys));
    });
  });
  return { url: `${peer.url}/speke/v2`, requests, keys, close: () => peer.stop() };
}
