// The one network guard (architecture rule 5): every outbound connection passes here. It checks the
// scheme, resolves the name and refuses non-public addresses unless the operator allows them, and
// does so again at connect time (agents' lookup) and on every redirect, so a name cannot rebind.
import dns from "node:dns";
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { Duplex, Readable } from "node:stream";
import tls from "node:tls";

export type NetGuardReason = "invalid_url" | "scheme" | "forbidden_address" | "unresolvable" | "too_many_redirects" | "timeout";

/** A refusal of the guard; `reason` says which rule refused. */
export class NetGuardError extends Error {
  constructor(
    readonly reason: NetGuardReason,
    message: string,
  ) {
    super(message);
    this.name = "NetGuardError";
  }
}

// ───────────────────────────── addresses ─────────────────────────────

/** An address as bytes: 4 for IPv4, 16 for IPv6. */
type Bytes = readonly number[];

function ipv4Bytes(text: string): number[] {
  return text.split(".").map(Number);
}

function ipv6Bytes(text: string): number[] {
  let s = text.split("%")[0]!; // zone id
  let tail: number[] = [];
  const last = s.lastIndexOf(":");
  if (s.slice(last + 1).includes(".")) {
    tail = ipv4Bytes(s.slice(last + 1));
    s = `${s.slice(0, last + 1)}0:0`;
  }
  const [head, rest] = s.split("::") as [string, string | undefined];
  const h = head === "" ? [] : head.split(":");
  const r = rest === undefined ? undefined : rest === "" ? [] : rest.split(":");
  const groups = r === undefined ? h : [...h, ...Array<string>(8 - h.length - r.length).fill("0"), ...r];
  const bytes = groups.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 255];
  });
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

function bytesOf(address: string): Bytes | undefined {
  const kind = net.isIP(address);
  return kind === 4 ? ipv4Bytes(address) : kind === 6 ? ipv6Bytes(address) : undefined;
}

interface Cidr {
  readonly bytes: Bytes;
  readonly bits: number;
}

function parseCidr(text: string): Cidr | undefined {
  const [addr, len, extra] = text.split("/");
  if (addr === undefined || extra !== undefined) return undefined;
  const bytes = bytesOf(addr);
  if (!bytes) return undefined;
  const max = bytes.length * 8;
  if (len !== undefined && !/^\d{1,3}$/.test(len)) return undefined;
  const bits = len === undefined ? max : Number(len);
  return bits <= max ? { bytes, bits } : undefined;
}

function inCidr(bytes: Bytes, cidr: Cidr): boolean {
  if (bytes.length !== cidr.bytes.length) return false;
  for (let bit = 0; bit < cidr.bits; bit += 8) {
    const take = Math.min(8, cidr.bits - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[bit / 8]! & mask) !== (cidr.bytes[bit / 8]! & mask)) return false;
  }
  return true;
}

const ranges = (list: readonly (readonly [string, string])[]) => list.map(([cidr, name]) => ({ cidr: parseCidr(cidr)!, name }));

// First match names the refusal, so the specific entries come before the ranges holding them.
const V4_RANGES = ranges([
  ["0.0.0.0/8", "unspecified"],
  ["10.0.0.0/8", "private"],
  ["100.64.0.0/10", "carrier-grade NAT"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.169.254/32", "cloud metadata"],
  ["169.254.0.0/16", "link-local"],
  ["172.16.0.0/12", "private"],
  ["192.0.0.0/24", "reserved"],
  ["192.0.2.0/24", "documentation"],
  ["192.168.0.0/16", "private"],
  ["198.18.0.0/15", "benchmarking"],
  ["198.51.100.0/24", "documentation"],
  ["203.0.113.0/24", "documentation"],
  ["224.0.0.0/4", "multicast"],
  ["240.0.0.0/4", "reserved"],
]);

const V6_RANGES = ranges([
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["fd00:ec2::254/128", "cloud metadata"],
  ["fc00::/7", "unique-local"],
  ["fe80::/10", "link-local"],
  ["fec0::/10", "site-local"],
  ["ff00::/8", "multicast"],
  ["100::/64", "discard"],
  ["2001::/32", "Teredo"],
  ["2001:db8::/32", "documentation"],
]);

// IPv6 forms that carry an IPv4 address are judged by that address.
const EMBEDS_V4 = [
  { cidr: parseCidr("::ffff:0:0/96")!, at: 12 }, // IPv4-mapped
  { cidr: parseCidr("64:ff9b::/96")!, at: 12 }, // NAT64
  { cidr: parseCidr("::/96")!, at: 12 }, // IPv4-compatible (deprecated)
  { cidr: parseCidr("2002::/16")!, at: 2 }, // 6to4
];

/** The IPv4 address inside an IPv6 one, for the forms that carry one. */
function embeddedV4(bytes: Bytes): Bytes | undefined {
  if (bytes.length !== 16) return undefined;
  for (const e of EMBEDS_V4) if (inCidr(bytes, e.cidr)) return bytes.slice(e.at, e.at + 4);
  return undefined;
}

/** Name of the non-public range holding `address` ("loopback", "private"...), undefined when public. */
export function forbiddenRange(address: string): string | undefined {
  const bytes = bytesOf(address);
  if (!bytes) return "unparseable";
  const table = bytes.length === 4 ? V4_RANGES : V6_RANGES;
  const hit = table.find((r) => inCidr(bytes, r.cidr));
  if (hit) return hit.name;
  const v4 = embeddedV4(bytes);
  return v4 ? V4_RANGES.find((r) => inCidr(v4, r.cidr))?.name : undefined;
}

// ───────────────────────────── the allowlist ─────────────────────────────

export type AllowEntry = { readonly kind: "cidr"; readonly cidr: Cidr } | { readonly kind: "host"; readonly host: string };

const HOST_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
const normalHost = (host: string) => host.toLowerCase().replace(/\.$/, "");

/** One MEDIA_NET_ALLOW entry: a CIDR, a single address or an exact host name; undefined if none of these. */
export function parseAllowEntry(text: string): AllowEntry | undefined {
  const cidr = parseCidr(text);
  if (cidr) return { kind: "cidr", cidr };
  const host = normalHost(text);
  return HOST_NAME.test(host) ? { kind: "host", host } : undefined;
}

// ───────────────────────────── the guard ─────────────────────────────

/** What the guard reads from the configuration (src/config.ts `net`). */
export interface NetGuardSettings {
  readonly net: { readonly allow: readonly string[]; readonly tlsCaFile?: string | undefined };
}

export interface GuardedRequestOptions {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Readable | Buffer;
  /** Redirects followed, each one re-checked; default 5, 0 returns the 3xx answer. */
  readonly maxRedirects?: number;
  /** Allows http:// (operator endpoints only; user URLs are https). */
  readonly allowHttp?: boolean;
  /** Idle socket time before the request fails; default 30 s. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface GuardedResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  /** The URL that answered, after redirects. */
  readonly url: string;
  /** Must be consumed or destroyed. */
  readonly body: http.IncomingMessage;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

export class NetGuard {
  private readonly cidrs: readonly Cidr[];
  private readonly hosts: ReadonlySet<string>;
  /**
   * The built-in roots and the extra CA as one TLS context, made once: given as `ca`, each request
   * wrote all ~140 roots into its agent's pool name (about 180 kB, several times a request) and each
   * connection parsed them again (5 ms).
   */
  private readonly secureContext: tls.SecureContext | undefined;
  /** The certificates that context trusts, when the extra CA is set: the built-in roots and it. */
  readonly trusted: readonly string[] | undefined;
  private readonly agents = new Map<"http:" | "https:", http.Agent>();

  constructor(settings: NetGuardSettings) {
    const entries = settings.net.allow.map((text) => {
      const entry = parseAllowEntry(text);
      if (!entry) throw new Error(`network allowlist entry "${text}" is neither a CIDR nor a host name`);
      return entry;
    });
    this.cidrs = entries.flatMap((e) => (e.kind === "cidr" ? [e.cidr] : []));
    this.hosts = new Set(entries.flatMap((e) => (e.kind === "host" ? [e.host] : [])));
    // The extra CA is added to the built-in roots, not put in their place.
    this.trusted = settings.net.tlsCaFile ? [...tls.rootCertificates, readFileSync(settings.net.tlsCaFile, "utf8")] : undefined;
    this.secureContext = this.trusted ? tls.createSecureContext({ ca: [...this.trusted] }) : undefined;
  }

  /** Parses `url` and applies the scheme rule: https always, http only when the caller allows it. */
  parse(url: string | URL, allowHttp = false): URL {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new NetGuardError("invalid_url", `"${String(url)}" is not a valid URL`);
    }
    if (u.protocol !== "https:" && !(allowHttp && u.protocol === "http:")) {
      throw new NetGuardError("scheme", `${u.protocol.replace(/:$/, "")}:// URLs are not allowed here; use https://`);
    }
    // http and https are special schemes: WHATWG URL refuses them without a host, so u.hostname is never empty here.
    return u;
  }

  /** Throws NetGuardError unless `url` may be fetched now. */
  async check(url: string | URL, options: { allowHttp?: boolean } = {}): Promise<void> {
    await this.resolve(this.parse(url, options.allowHttp).hostname);
  }

  /** Addresses of `host` the guard lets a connection reach; throws NetGuardError otherwise. */
  async resolve(host: string): Promise<dns.LookupAddress[]> {
    const name = host.replace(/^\[(.*)\]$/, "$1");
    const family = net.isIP(name);
    if (family !== 0) {
      this.judge(name, name);
      return [{ address: name, family }];
    }
    let addresses: dns.LookupAddress[];
    try {
      addresses = await dns.promises.lookup(name, { all: true, verbatim: true });
    } catch (e) {
      throw new NetGuardError("unresolvable", `${name} does not resolve (${(e as NodeJS.ErrnoException).code ?? "lookup failed"})`);
    }
    if (this.hosts.has(normalHost(name))) return addresses;
    // One non-public answer refuses the name: a mixed answer is how rebinding attacks start.
    for (const a of addresses) this.judge(name, a.address);
    return addresses;
  }

  private judge(host: string, address: string): void {
    const range = forbiddenRange(address);
    if (range === undefined) return;
    const bytes = bytesOf(address);
    const candidates = bytes ? [bytes, embeddedV4(bytes)].filter((b): b is Bytes => b !== undefined) : [];
    if (candidates.some((b) => this.cidrs.some((c) => inCidr(b, c)))) return;
    const shown = host === address ? address : `${host} (${address})`;
    throw new NetGuardError(
      "forbidden_address",
      `${shown} is a ${range} address; only public addresses are reachable unless the operator allows them (MEDIA_NET_ALLOW)`,
    );
  }

  /** dns.lookup for sockets: the same rule at connect time, so the checked name cannot rebind. */
  readonly lookup = (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    this.resolve(hostname).then(
      (list) => {
        const wanted = options.family === 4 || options.family === 6 ? list.filter((a) => a.family === options.family) : list;
        const first = wanted[0];
        if (!first) {
          const err: NodeJS.ErrnoException = new Error(`${hostname} has no IPv${options.family} address`);
          err.code = "ENOTFOUND";
          callback(err, "");
        } else if (options.all) callback(null, wanted);
        else callback(null, first.address, first.family);
      },
      (err: NetGuardError) => callback(err, ""),
    );
  };

  /** A keep-alive agent whose every new connection is checked; https ones trust the extra CA too. */
  agent(protocol: "http:" | "https:"): http.Agent {
    let agent = this.agents.get(protocol);
    if (!agent) {
      const options = { keepAlive: true, lookup: this.lookup, ...(protocol === "https:" && this.secureContext ? { secureContext: this.secureContext } : {}) };
      agent = protocol === "https:" ? new GuardedHttpsAgent(this, options) : new GuardedHttpAgent(this, options);
      this.agents.set(protocol, agent);
    }
    return agent;
  }

  /** Closes the agents' idle sockets. */
  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }

  /** The IP-literal half of the connect-time check (names go through `lookup`). */
  literalRefusal(host: string | null | undefined): NetGuardError | undefined {
    const name = (host ?? "").replace(/^\[(.*)\]$/, "$1");
    if (net.isIP(name) === 0) return undefined;
    try {
      this.judge(name, name);
      return undefined;
    } catch (e) {
      return e as NetGuardError;
    }
  }

  /**
   * A request through the guarded agents that follows redirects itself, re-checking each one.
   * Caller headers are credentials of the first origin: they are dropped when a redirect leaves it.
   */
  async request(url: string | URL, options: GuardedRequestOptions = {}): Promise<GuardedResponse> {
    // A stream body is sent once: a redirect of such a request is returned, not followed.
    const maxRedirects = options.body !== undefined && !Buffer.isBuffer(options.body) ? 0 : (options.maxRedirects ?? 5);
    let current = this.parse(url, options.allowHttp);
    let method = options.method ?? "GET";
    let headers: Record<string, string> = { ...options.headers };
    let body = options.body;
    for (let hop = 0; ; hop++) {
      const res = await this.send(current, method, headers, body, options);
      const location = res.headers.location;
      if (!REDIRECTS.has(res.statusCode ?? 0) || location === undefined || maxRedirects === 0) {
        return { status: res.statusCode ?? 0, headers: res.headers, url: current.href, body: res };
      }
      res.resume();
      if (hop >= maxRedirects) throw new NetGuardError("too_many_redirects", `more than ${maxRedirects} redirects from ${String(url)}`);
      const next = this.parse(new URL(location, current), options.allowHttp);
      if (next.origin !== current.origin) headers = {};
      if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
      }
      current = next;
    }
  }

  private send(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: Readable | Buffer | undefined,
    options: GuardedRequestOptions,
  ): Promise<http.IncomingMessage> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    const protocol = url.protocol === "http:" ? "http:" : "https:";
    const send = protocol === "http:" ? http.request : https.request;
    return new Promise((resolve, reject) => {
      const req = send(
        url,
        { method, headers, agent: this.agent(protocol), timeout: timeoutMs, ...(options.signal ? { signal: options.signal } : {}) },
        resolve,
      );
      req.on("timeout", () => req.destroy(new NetGuardError("timeout", `${url.host} did not answer within ${timeoutMs / 1000} s`)));
      req.on("error", reject);
      if (body === undefined) req.end();
      else if (Buffer.isBuffer(body)) req.end(body);
      else {
        body.on("error", (e) => req.destroy(e));
        body.pipe(req);
      }
    });
  }
}

// IP literals never reach `lookup`, so the agents judge them before connecting.
class GuardedHttpAgent extends http.Agent {
  constructor(
    private readonly guard: NetGuard,
    options: http.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: http.ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void) {
    const refusal = this.guard.literalRefusal(options.host);
    return refusal ? refusedSocket(refusal) : super.createConnection(options, callback);
  }
}

class GuardedHttpsAgent extends https.Agent {
  constructor(
    private readonly guard: NetGuard,
    options: https.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: https.RequestOptions, callback?: (err: Error | null, stream: Duplex) => void) {
    const refusal = this.guard.literalRefusal(options.host);
    return refusal ? refusedSocket(refusal) : super.createConnection(options, callback);
  }
}

/** A socket that fails with the guard's refusal, so the request reports it as its error. */
function refusedSocket(refusal: NetGuardError): net.Socket {
  const socket = new net.Socket();
  process.nextTick(() => socket.destroy(refusal));
  return socket;
}
