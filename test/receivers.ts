// Webhook receivers on loopback for tests: a recording HTTPS receiver (trusted through the test CA)
// that checks Media-Signature and can answer, fail, hang, reset or close per request, and a
// closed port for refused connections.
import { timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { createServer, Socket } from "node:net";
import { legacySignature, verifyMediaSignature } from "../src/webhooks/sign.js";
import { freeLoopbackPort, startHttpsPeer, type TestCa } from "./peers.js";

/**
 * How the receiver treats one request, once it has read the whole body:
 * - "ok": 200 with body "ok"; "error": 500 with body "receiver failure";
 * - { status, body?, headers? }: exactly that answer;
 * - "hang": never answers (the socket stays open until the client gives up or the receiver stops);
 * - "reset": destroys the socket with a TCP RST (the client sees ECONNRESET);
 * - "close": closes the connection cleanly without answering (the client sees "socket hang up").
 */
export type ReceiverBehaviour =
  | "ok"
  | "error"
  | "hang"
  | "reset"
  | "close"
  | { readonly status: number; readonly body?: string; readonly headers?: Readonly<Record<string, string | readonly string[]>> };

export interface ReceivedRequest {
  /** 1-based order of arrival. */
  readonly n: number;
  readonly method: string;
  /** Path and query. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: string;
  /** The body parsed as JSON; undefined when it is not JSON. */
  readonly json: unknown;
  /** Media-Signature verifies with at least one of the receiver's secrets, within the tolerance. */
  readonly verified: boolean;
  /** The receiver's secrets (by index) whose v1 entry is in Media-Signature: [0, 1] during a rotation overlap. */
  readonly verifiedBy: readonly number[];
  /** X-Webhook-Signature (legacy) matches the HMAC of the raw body with one of the secrets. */
  readonly legacyVerified: boolean;
  readonly behaviour: ReceiverBehaviour;
  /** Date.now() when the body had arrived. */
  readonly receivedAt: number;
}

export interface RecordingReceiver {
  /** https://127.0.0.1:<port> (append a path freely: every path is recorded). */
  readonly url: string;
  /** Every request so far, in arrival order. */
  readonly requests: readonly ReceivedRequest[];
  /** Secrets that signatures are checked against, e.g. [new, old] after a rotation. */
  setSecrets(secrets: readonly string[]): void;
  /** The behaviour of requests that find the queue empty (initially the `behaviour` option). */
  respond(behaviour: ReceiverBehaviour | ((n: number) => ReceiverBehaviour)): void;
  /** Behaviours for the next requests, one each, before the default applies again. */
  respondNext(...behaviours: ReceiverBehaviour[]): void;
  /** Resolves once `count` requests were recorded in all; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<readonly ReceivedRequest[]>;
  /** Forgets the recorded requests (numbering restarts at 1). */
  clear(): void;
  stop(): Promise<void>;
}

export interface ReceiverOptions {
  readonly secrets?: readonly string[];
  readonly behaviour?: ReceiverBehaviour;
  readonly toleranceSeconds?: number;
}

function legacyMatches(header: string | string[] | undefined, rawBody: string, secrets: readonly string[]): boolean {
  if (typeof header !== "string" || !/^[0-9a-f]{64}$/.test(header)) return false;
  const got = Buffer.from(header, "hex");
  return secrets.some((s) => timingSafeEqual(got, Buffer.from(legacySignature(s, rawBody), "hex")));
}

/**
 * The TCP socket under a server-side TLS socket: resetAndDestroy needs the TCP handle, and Node
 * keeps the socket it wrapped as `_parent` (not public, hence the fallback).
 */
function tcpSocket(socket: Socket): Socket {
  const parent = (socket as Socket & { _parent?: unknown })._parent;
  return parent instanceof Socket ? parent : socket;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A real HTTPS receiver on loopback with a certificate from `ca` (pass another CA for an untrusted one). */
export async function startRecordingReceiver(ca: TestCa, options: ReceiverOptions = {}): Promise<RecordingReceiver> {
  let secrets: readonly string[] = options.secrets ?? [];
  let fallback: ReceiverBehaviour | ((n: number) => ReceiverBehaviour) = options.behaviour ?? "ok";
  const queue: ReceiverBehaviour[] = [];
  let requests: ReceivedRequest[] = [];
  let waiters: { count: number; resolve: () => void }[] = [];

  const act = (behaviour: ReceiverBehaviour, req: IncomingMessage, res: ServerResponse) => {
    if (behaviour === "hang") return;
    if (behaviour === "reset") return void tcpSocket(req.socket).resetAndDestroy();
    if (behaviour === "close") return void req.socket.destroy();
    const answer = behaviour === "ok" ? { status: 200, body: "ok" } : behaviour === "error" ? { status: 500, body: "receiver failure" } : behaviour;
    for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, typeof value === "string" ? value : [...value]);
    res.writeHead(answer.status).end(answer.body ?? "");
  };

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const rawBody = Buffer.concat(chunks).toString("utf8");
      const n = requests.length + 1;
      const behaviour = queue.shift() ?? (typeof fallback === "function" ? fallback(n) : fallback);
      const header = req.headers["media-signature"];
      const verifiedBy =
        typeof header === "string" ? secrets.flatMap((s, i) => (verifyMediaSignature(header, rawBody, s, options.toleranceSeconds) ? [i] : [])) : [];
      requests.push({
        n,
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        rawBody,
        json: parseJson(rawBody),
        verified: verifiedBy.length > 0,
        verifiedBy,
        legacyVerified: legacyMatches(req.headers["x-webhook-signature"], rawBody, secrets),
        behaviour,
        receivedAt: Date.now(),
      });
      const ready = waiters.filter((w) => requests.length >= w.count);
      waiters = waiters.filter((w) => requests.length < w.count);
      for (const w of ready) w.resolve();
      act(behaviour, req, res);
    });
  };

  const peer = await startHttpsPeer(ca, handler);
  return {
    url: peer.url,
    get requests() {
      return requests;
    },
    setSecrets: (next) => {
      secrets = [...next];
    },
    respond: (behaviour) => {
      fallback = behaviour;
    },
    respondNext: (...behaviours) => {
      queue.push(...behaviours);
    },
    waitFor: (count, timeoutMs = 5000) => {
      if (requests.length >= count) return Promise.resolve(requests);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver got ${requests.length} of ${count} requests within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve(requests);
          },
        });
      });
    },
    clear: () => {
      requests = [];
    },
    stop: () => peer.stop(),
  };
}

/** An https:// URL on a loopback port with nothing listening: connecting is refused. */
export async function closedPortUrl(): Promise<string> {
  return `https://127.0.0.1:${await freeLoopbackPort()}/`;
}

export interface ConnectionCounter {
  /** https://127.0.0.1:<port>/ */
  readonly url: string;
  /** TCP connections accepted so far. */
  connections(): number;
  stop(): Promise<void>;
}

/** A plain TCP listener that counts connections and closes them: proof that a refused URL was never dialled. */
export async function startConnectionCounter(): Promise<ConnectionCounter> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `https://127.0.0.1:${port}/`,
    connections: () => count,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
