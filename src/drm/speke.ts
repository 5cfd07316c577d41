// The SPEKE v2.0 client: asks an operator's key service for content keys with a CPIX 2.3 document
// POSTed over HTTPS through the network guard, and reads the keys out of the answer.
import { randomBytes } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import type { Logger } from "../log.js";
import { NetGuardError, type GuardedRequestOptions } from "../net-guard.js";
import { DrmKeyError, HD_MIN_HEIGHT, SYSTEM_IDS, type ContentKey, type DrmScheme, type KeyProvider, type KeyRequest, type TrackClass } from "./types.js";
import { childElements, escapeXml, parseXml, textOf, XmlError, type XmlElement } from "./xml.js";
import { readBounded } from "../bounded-body.js";

export const SPEKE_VERSION = "2.0";
/** SPEKE 2.0 is pinned to CPIX 2.3. */
export const CPIX_VERSION = "2.3";
export const CPIX_NS = "urn:dashif:org:cpix";
export const PSKC_NS = "urn:ietf:params:xml:ns:keyprov:pskc";
/** DASH-IF "Clear Key AES-128": the system SPEKE v2 key services take for HLS whole-segment AES-128. */
export const AES128_SYSTEM_ID = "3ea8778f-7742-4bf9-b18b-e834b2acbd47";

export const SPEKE_LIMITS = {
  /** Whole exchange: connect, TLS, request and the answer read. */
  timeoutMs: 15_000,
  maxResponseBytes: 1024 * 1024,
} as const;

/**
 * ContentKey@commonEncryptionScheme. CPIX names the CENC schemes; HLS AES-128 is full-segment CBC
 * without pattern, which SPEKE v2 services (MediaPackage among them) name `cbc1` and accept only
 * with the Clear Key AES-128 system.
 */
export const CPIX_SCHEME: Readonly<Record<DrmScheme, string>> = { cbcs: "cbcs", cenc: "cenc", aes128: "cbc1" };

/** ContentKeyUsageRule@intendedTrackType per class; each must be unique in a document. */
export const TRACK_TYPE: Readonly<Record<TrackClass, string>> = { audio: "AUDIO", sd: "SD", hd: "HD" };

/** SPEKE filters video by pixel count; our split is by height, taken at 16:9 (1280×720). */
export const HD_MIN_PIXELS = Math.round((HD_MIN_HEIGHT * 16) / 9) * HD_MIN_HEIGHT;

const FILTER: Readonly<Record<TrackClass, string>> = {
  audio: "<cpix:AudioFilter/>",
  sd: `<cpix:VideoFilter maxPixels="${HD_MIN_PIXELS - 1}"/>`,
  hd: `<cpix:VideoFilter minPixels="${HD_MIN_PIXELS}"/>`,
};

// ───────────────────────────── key IDs ─────────────────────────────

/** A random key ID with the version 4 bits, so it reads as a UUID in manifests and CPIX; 32 hex. */
export function newKid(): string {
  const bytes = randomBytes(16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  return bytes.toString("hex");
}

export const uuidOfKid = (kid: string): string => `${kid.slice(0, 8)}-${kid.slice(8, 12)}-${kid.slice(12, 16)}-${kid.slice(16, 20)}-${kid.slice(20)}`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The 32-hex key ID of a CPIX kid, undefined when it is not a UUID. */
export const kidOfUuid = (text: string): string | undefined => (UUID.test(text) ? text.replaceAll("-", "").toLowerCase() : undefined);

// ───────────────────────────── the request document ─────────────────────────────

export interface CpixKey {
  readonly trackClass: TrackClass;
  readonly kid: string;
}

/** The DRMSystem@systemId values asked for: the request's systems, or Clear Key AES-128 for aes128. */
export const systemIdsOf = (request: Pick<KeyRequest, "scheme" | "systems">): string[] =>
  request.scheme === "aes128" ? [AES128_SYSTEM_ID] : request.systems.map((s) => SYSTEM_IDS[s]);

/**
 * The CPIX request: one ContentKey per class (no key period: VOD keys do not rotate), one DRMSystem per
 * key and system, and the encryption contract. DRMSystem elements carry no signalling children: the
 * packager writes pssh boxes and playlists itself, so the service is asked for the keys alone.
 */
export function cpixRequest(contentId: string, scheme: DrmScheme, systemIds: readonly string[], keys: readonly CpixKey[]): string {
  const kids = keys.map((k) => uuidOfKid(k.kid));
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<cpix:CPIX xmlns:cpix="${CPIX_NS}" xmlns:pskc="${PSKC_NS}" contentId="${escapeXml(contentId)}" version="${CPIX_VERSION}">`,
    `  <cpix:ContentKeyList>`,
    ...kids.map((kid) => `    <cpix:ContentKey kid="${kid}" commonEncryptionScheme="${CPIX_SCHEME[scheme]}"/>`),
    `  </cpix:ContentKeyList>`,
    `  <cpix:DRMSystemList>`,
    ...kids.flatMap((kid) => systemIds.map((id) => `    <cpix:DRMSystem kid="${kid}" systemId="${id}"/>`)),
    `  </cpix:DRMSystemList>`,
    `  <cpix:ContentKeyUsageRuleList>`,
    ...keys.map(
      (k, i) =>
        `    <cpix:ContentKeyUsageRule kid="${kids[i]}" intendedTrackType="${TRACK_TYPE[k.trackClass]}">${FILTER[k.trackClass]}</cpix:ContentKeyUsageRule>`,
    ),
    `  </cpix:ContentKeyUsageRuleList>`,
    `</cpix:CPIX>`,
    ``,
  ].join("\n");
}

// ───────────────────────────── the answer ─────────────────────────────

export interface CpixExpected {
  readonly contentId: string;
  readonly scheme: DrmScheme;
  /** The keys asked for, in request order. */
  readonly keys: readonly CpixKey[];
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Bytes of a base64 value (whitespace ignored), undefined when it is not base64. */
function base64Bytes(text: string): Buffer | undefined {
  const compact = text.replace(/\s+/g, "");
  return compact !== "" && BASE64.test(compact) ? Buffer.from(compact, "base64") : undefined;
}

const clip = (text: string, max = 80) => (text.length > max ? `${text.slice(0, max)}…` : text);

/**
 * The content keys of a CPIX answer, in request order. Throws DrmKeyError naming `provider` and the
 * problem, never the key material. The IV is kept for aes128 only (other schemes take the packager's).
 */
export function readCpixAnswer(xml: string, expected: CpixExpected, provider: string): ContentKey[] {
  const fail = (problem: string) => new DrmKeyError(`key provider ${provider} ${problem}`);
  let root: XmlElement;
  try {
    root = parseXml(xml);
  } catch (e) {
    throw fail(`answered something that is not XML (${e instanceof XmlError ? e.message : "unreadable"})`);
  }
  if (root.ns !== CPIX_NS || root.local !== "CPIX")
    throw fail(`answered a document that is not CPIX (root element <${clip(root.name)}> in namespace "${clip(root.ns)}")`);
  const contentId = root.attributes.get("contentId");
  if (contentId !== expected.contentId) throw fail(`answered contentId "${clip(contentId ?? "")}" to a request for "${expected.contentId}"`);
  const version = root.attributes.get("version");
  if (version !== CPIX_VERSION) throw fail(`answered CPIX version "${clip(version ?? "")}"; SPEKE ${SPEKE_VERSION} uses ${CPIX_VERSION}`);

  const answered = new Map<string, XmlElement>();
  for (const list of childElements(root, CPIX_NS, "ContentKeyList")) {
    for (const el of childElements(list, CPIX_NS, "ContentKey")) {
      const given = el.attributes.get("kid") ?? "";
      const kid = kidOfUuid(given);
      if (kid === undefined) throw fail(`answered a content key whose kid "${clip(given)}" is not a UUID`);
      if (answered.has(kid)) throw fail(`answered key ${uuidOfKid(kid)} twice`);
      answered.set(kid, el);
    }
  }
  return expected.keys.map(({ trackClass, kid }) => {
    const uuid = uuidOfKid(kid);
    const el = answered.get(kid);
    if (!el) throw fail(`did not answer key ${uuid} (${trackClass})`);
    const scheme = el.attributes.get("commonEncryptionScheme");
    if (scheme !== undefined && scheme !== CPIX_SCHEME[expected.scheme]) throw fail(`changed commonEncryptionScheme of key ${uuid} to "${clip(scheme)}"`);
    const secrets = childElements(el, CPIX_NS, "Data").flatMap((data) => childElements(data, PSKC_NS, "Secret"));
    if (secrets.some((s) => childElements(s, PSKC_NS, "EncryptedValue").length > 0))
      throw fail(`sent key ${uuid} encrypted; content key encryption is not supported, send PlainValue over HTTPS`);
    const values = secrets.flatMap((s) => childElements(s, PSKC_NS, "PlainValue"));
    if (values.length !== 1)
      throw fail(`answered key ${uuid} (${trackClass}) with ${values.length === 0 ? "no" : values.length} PlainValue${values.length === 0 ? "" : "s"}`);
    const key = base64Bytes(textOf(values[0]!));
    if (!key) throw fail(`answered a key for ${uuid} that is not base64`);
    if (key.length !== 16) throw fail(`answered a ${key.length}-byte key for ${uuid}; content keys are 16 bytes`);
    const ivText = el.attributes.get("explicitIV");
    const iv = ivText === undefined ? undefined : base64Bytes(ivText);
    if (ivText !== undefined && iv?.length !== 16) throw fail(`answered an explicitIV for ${uuid} that is not 16 bytes of base64`);
    const keep = expected.scheme === "aes128" && iv ? { iv: iv.toString("hex") } : {};
    return { trackClass, kid, key: key.toString("hex"), ...keep };
  });
}

// ───────────────────────────── the client ─────────────────────────────

/** What the client needs of the network guard (NetGuard has it); tests pass a fake. */
export interface SpekeTransport {
  request(url: string, options: GuardedRequestOptions): Promise<{ readonly status: number; readonly headers: IncomingHttpHeaders; readonly body: Readable }>;
}

export interface SpekeOptions {
  /** The key service's https URL. */
  readonly url: string;
  readonly guard: SpekeTransport;
  readonly log?: Logger;
  /** Default SPEKE_LIMITS.timeoutMs. */
  readonly timeoutMs?: number;
  /** Default SPEKE_LIMITS.maxResponseBytes. */
  readonly maxResponseBytes?: number;
}

export function spekeKeyProvider(options: SpekeOptions): KeyProvider {
  return { keys: (request) => fetchKeys(options, request) };
}

function providerName(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return `"${clip(url, 60)}"`;
  }
}

async function fetchKeys(options: SpekeOptions, request: KeyRequest): Promise<ContentKey[]> {
  const provider = providerName(options.url);
  const fail = (problem: string) => new DrmKeyError(`key provider ${provider} ${problem}`);
  const systemIds = systemIdsOf(request);
  if (request.classes.length === 0) throw fail("was asked for no track class");
  if (new Set(request.classes).size !== request.classes.length)
    throw fail(`was asked for a track class twice (${request.classes.join(", ")}); SPEKE takes one key per class`);
  if (systemIds.length === 0) throw fail(`was asked for ${request.scheme} keys for no DRM system`);
  const expected: CpixExpected = {
    contentId: request.resourceId,
    scheme: request.scheme,
    keys: request.classes.map((trackClass) => ({ trackClass, kid: newKid() })),
  };
  const body = Buffer.from(cpixRequest(expected.contentId, expected.scheme, systemIds, expected.keys), "utf8");
  const timeoutMs = options.timeoutMs ?? SPEKE_LIMITS.timeoutMs;
  const limit = options.maxResponseBytes ?? SPEKE_LIMITS.maxResponseBytes;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline;
  const started = performance.now();
  const logged = { provider, resource_id: request.resourceId, scheme: request.scheme };
  try {
    const res = await options.guard.request(options.url, {
      method: "POST",
      headers: { "content-type": "application/xml", "x-speke-version": SPEKE_VERSION, "content-length": String(body.length) },
      body,
      // A redirect would turn the POST into a GET or resend the request elsewhere: none is followed.
      maxRedirects: 0,
      timeoutMs,
      signal,
    });
    const bytes = await readBounded(res.body, limit, signal);
    const text = bytes ? new TextDecoder().decode(bytes) : "";
    if (res.status < 200 || res.status > 299) throw fail(`answered HTTP ${res.status}${errorExcerpt(text)}`);
    if (!bytes) throw fail(`answered more than ${limit / 1024} KiB`);
    const version = res.headers["x-speke-version"];
    if (version !== undefined && version !== SPEKE_VERSION)
      throw fail(`answered with X-Speke-Version ${clip(String(version))}; this client speaks ${SPEKE_VERSION}`);
    const keys = readCpixAnswer(text, expected, provider);
    options.log?.info({ ...logged, keys: keys.length, duration_ms: Math.round(performance.now() - started) }, "drm keys fetched");
    return keys;
  } catch (e) {
    // The caller's own cancellation is not the provider's failure.
    if (request.signal?.aborted) throw request.signal.reason;
    const error = e instanceof DrmKeyError ? e : fail(describe(e, deadline.aborted, timeoutMs));
    options.log?.warn({ ...logged, err: error.message }, "drm key provider failed");
    throw error;
  }
}

function describe(e: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut || (e instanceof NetGuardError && e.reason === "timeout")) return `did not answer within ${timeoutMs / 1000} s`;
  if (e instanceof NetGuardError) return `was refused by the network guard: ${e.message}`;
  return `could not be reached: ${e instanceof Error ? e.message : String(e)}`;
}

/** ": <first 200 characters>" of an error answer, or nothing when it is empty or carries key values. */
function errorExcerpt(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat === "" || /PlainValue|EncryptedValue/i.test(flat) ? "" : `: ${[...flat].slice(0, 200).join("")}`;
}
