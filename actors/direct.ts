// Direct commands (cluster mode): the asks of a gateway or an encoder node go straight to the
// actor host that owns their partition, over one TCP connection per host, instead of a round trip
// through Kafka (command and reply, each produced, replicated and fetched). Kafka stays the route
// of record:
// - A gateway learns where a partition is served from the replies Kafka brings it (the host
//   names its address in a header); until then, and whenever a route fails, the ask goes by Kafka.
// - A host serves a direct command only for a partition assigned to it and not lost since
//   (ActorHost.serves); otherwise it answers "moved" and the gateway sends the same command by
//   Kafka. Its appends are fenced by the shard's epoch whichever way the command came, so a host
//   that missed a rebalance (a paused one) cannot write over its successor.
// - A connection that closes, or is silent for LINK_SILENCE_MS though pinged every second, hands
//   every command waiting on it to Kafka: at least once, as when Kafka redelivers the commands of
//   a host killed before it committed their offsets (creates of one id with the same request are
//   answered with the entity, not a second one). The host that ran it from the link answers it from
//   memory instead (DirectServer.ran): a command runs twice only where its partition moved.
// - A create of an id the gateway minted at random for it is sent with the epoch the host last
//   named for its partition; a host that still holds the partition by that epoch, and has not run
//   the command from Kafka, starts the entity's actor empty (AskOptions.fresh): nobody else knows
//   the id, and the only other copy that can have run is one handed to Kafka and run by a newer
//   owner, whose rows win over this host's (the epoch in the write timestamp) and whose epoch
//   refuses this host's commit. That saves the snapshot and journal reads of each such create.
// Gateways and encoder nodes send their asks so (an encoder node's leases and its reports to a
// job, one at a time); tells stay on Kafka. The only tells an encoder node sends are progress
// reports, which a job takes in any order: one for an output that is no longer running, or of an
// attempt that is not the latest, changes nothing, and progress only goes up.
// The link: the host sends "MDC1" and a 32-byte nonce; the gateway answers HMAC-SHA256 of it under
// a key derived from the server secret (which every process of a deployment shares), or the host
// closes the connection. Then both sides send frames: a 4-byte big-endian length and that much
// JSON, at most MAX_FRAME_BYTES. Plain TCP, authenticated but not encrypted: off by default beside
// TLS to Kafka (src/config.ts).
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import net from "node:net";
import { Code } from "@connectrpc/connect";
import { partitionFor } from "../src/bus/port.js";
import type { Logger } from "../src/log.js";
import { directCommands } from "../src/metrics.js";
import { activeTrace, childSpan, extractTrace, failedWith, inContext, inSpan, inSpanContext, injectTrace, SpanKind } from "../src/tracing.js";
import { entity } from "./entity.js";
import type { ActorHost, Reply } from "./host.js";

const MAGIC = Buffer.from("MDC1", "latin1");
const NONCE_BYTES = 32;
const PROOF_BYTES = 32;
/** Largest frame either side accepts: a command's JSON is a few kilobytes; Kafka's own limit is 1 MB. */
export const MAX_FRAME_BYTES = 4 * 1024 * 1024;
/** A link heard nothing from for this long (pinged every second) is given up. */
export const LINK_SILENCE_MS = 3_500;
const PING_MS = 1_000;
/** How long an address whose link failed is not tried again. */
const COOL_DOWN_MS = 5_000;
/** How long a host waits for a gateway's proof. */
const HELLO_TIMEOUT_MS = 5_000;

/** The key of the links' handshake, derived from the server secret. */
export function directKey(serverSecret: string): Buffer {
  return createHmac("sha256", serverSecret).update("media direct commands v1").digest();
}

const proofOf = (key: Buffer, nonce: Buffer): Buffer => createHmac("sha256", key).update(nonce).digest();

interface CommandFrame {
  /** correlation id, type, entity id, command */
  readonly c: string;
  readonly t: string;
  readonly i: string;
  readonly m: unknown;
  /** 1: the create of an id minted at random for it (AskOptions.fresh), sent for the epoch `e`. */
  readonly f?: 1;
  /** The shard's epoch the gateway last heard of from the host. */
  readonly e?: number;
  /** The trace the command is part of (W3C traceparent and tracestate), as Kafka's headers carry it. */
  readonly h?: Readonly<Record<string, string>>;
}
type ToHost = CommandFrame | { readonly ping: number };
type ToGateway =
  | { readonly c: string; readonly r: Reply<unknown>; readonly e?: number | undefined }
  | { readonly c: string; readonly moved: true }
  | { readonly pong: number };

const frame = (value: unknown): Buffer => {
  const json = JSON.stringify(value);
  const out = Buffer.allocUnsafe(4 + Buffer.byteLength(json, "utf8"));
  out.writeUInt32BE(out.length - 4, 0);
  out.write(json, 4, "utf8");
  return out;
};

/**
 * The frames of one turn of the event loop in one socket write: each write is a system call that,
 * on a loopback or LAN socket, also pays for the receiver's side of the stack (writes of one frame
 * each took 52 µs of a gateway's CPU and 38 µs of a host's per key Create at load). The frames go
 * when the loop's I/O callbacks of this turn are done (setImmediate), in the order written.
 */
class FrameWriter {
  private pending: Buffer[] = [];

  constructor(private readonly socket: net.Socket) {}

  write(bytes: Buffer): void {
    if (this.pending.push(bytes) === 1) setImmediate(() => this.flush());
  }

  private flush(): void {
    const out = this.pending;
    this.pending = [];
    if (!this.socket.destroyed) this.socket.write(out.length === 1 ? out[0]! : Buffer.concat(out));
  }
}

/** Cuts a byte stream into frames. */
class FrameReader {
  private chunks: Buffer[] = [];
  private length = 0;

  constructor(private readonly onFrame: (value: unknown) => void) {}

  /** Takes a chunk; false when the stream is broken (a frame too large, or not JSON): close the connection. */
  feed(chunk: Buffer): boolean {
    try {
      return this.push(chunk);
    } catch {
      return false;
    }
  }

  private push(chunk: Buffer): boolean {
    this.chunks.push(chunk);
    this.length += chunk.length;
    for (;;) {
      if (this.length < 4) return true;
      const head = this.chunks[0]!.length >= 4 ? this.chunks[0]! : this.joined();
      const size = head.readUInt32BE(0);
      if (size > MAX_FRAME_BYTES) return false;
      if (this.length < 4 + size) return true;
      const all = this.joined();
      const body = all.subarray(4, 4 + size);
      const rest = all.subarray(4 + size);
      this.chunks = rest.length > 0 ? [rest] : [];
      this.length = rest.length;
      this.onFrame(JSON.parse(body.toString("utf8")));
    }
  }

  private joined(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!;
  }
}

const hostPort = (host: string, port: number): string => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`);

// ── actor host side ──

export interface DirectServer {
  /** Where gateways reach this host: advertised host and bound port. */
  readonly address: string;
  /**
   * The reply of an ask this host ran, or is running, in the last RUN_MEMORY_MS, by its correlation
   * id: the same command handed to Kafka after its link failed (a gateway sends it with the same
   * correlation) is answered with it instead of running twice.
   */
  ran(correlation: string): Promise<Reply<unknown>> | undefined;
  /** A command this host runs from Kafka for an asker: a late direct copy of it is answered with its reply. */
  remember(correlation: string, reply: Promise<Reply<unknown>>): void;
  close(): Promise<void>;
}

/**
 * How long a host remembers the asks it ran (from links, and from Kafka while it serves links), and
 * how many at most: a copy comes within seconds (a link is given up after LINK_SILENCE_MS), and each
 * entry holds its reply.
 */
export const RUN_MEMORY_MS = 30_000;
const RUN_MEMORY_MAX = 50_000;

export interface DirectServerOptions {
  readonly key: Buffer;
  readonly listenHost: string;
  readonly listenPort: number;
  readonly advertiseHost: string;
  /** Partitions of the commands topic. */
  readonly partitions: number;
}

/** Serves gateways' commands for the partitions the host owns; "moved" for the others. */
export async function serveDirect(actors: ActorHost, options: DirectServerOptions, log: Logger): Promise<DirectServer> {
  const sockets = new Set<net.Socket>();
  /** Asks run here (from links, and from Kafka), by correlation, in the order they came: their replies, and when. */
  const runs = new Map<string, { readonly reply: Promise<Reply<unknown>>; readonly at: number }>();
  const forgetOld = () => {
    const before = Date.now() - RUN_MEMORY_MS;
    for (const [c, run] of runs) {
      if (run.at >= before && runs.size <= RUN_MEMORY_MAX) break;
      runs.delete(c);
    }
  };
  const remember = (c: string, reply: Promise<Reply<unknown>>) => {
    runs.set(c, { reply, at: Date.now() });
    if (runs.size > RUN_MEMORY_MAX) forgetOld();
  };
  const sweeper = setInterval(forgetOld, 10_000);
  sweeper.unref();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.setNoDelay(true);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    const nonce = randomBytes(NONCE_BYTES);
    socket.write(Buffer.concat([MAGIC, nonce]));
    const helloTimer = setTimeout(() => socket.destroy(), HELLO_TIMEOUT_MS);
    let hello: Buffer | undefined = Buffer.alloc(0);
    const writer = new FrameWriter(socket);
    const send = (value: ToGateway) => {
      if (!socket.destroyed) writer.write(frame(value));
    };
    const reader = new FrameReader((value) => {
      const f = value as Partial<CommandFrame> & { ping?: unknown };
      if (typeof f.ping === "number") return send({ pong: f.ping });
      if (typeof f.c !== "string" || typeof f.t !== "string" || typeof f.i !== "string") {
        socket.destroy();
        return;
      }
      void serveOne(f as CommandFrame).then(send);
    });
    const serveOne = ({ h, ...command }: CommandFrame): Promise<ToGateway> => {
      const parent = h && typeof h === "object" ? extractTrace(h) : undefined;
      return inSpan(parent, "serve direct command", SpanKind.SERVER, { "media.entity.type": command.t, "media.entity.id": command.i }, () => decide(command));
    };
    const decide = async ({ c, t, i, m, f, e }: CommandFrame): Promise<ToGateway> => {
      const shard = partitionFor(`${t}:${i}`, options.partitions);
      if (!actors.serves(shard)) return { c, moved: true };
      if (!actors.runs(t)) return { c, r: { ok: false, rejection: { code: Code.Internal, message: `no actor of type ${t}` } } };
      try {
        // The shard's epoch first: every append of this command is fenced by it.
        await actors.ready(shard);
      } catch {
        return { c, moved: true };
      }
      const epoch = actors.epochOf(shard);
      // Already run here from Kafka (its link had failed, and the frame came late): not again.
      const earlier = runs.get(c);
      if (earlier) return { c, r: await earlier.reply, e: epoch };
      // A create of a new id, sent while this host held the shard by the same epoch: no other
      // copy can have run but one on a newer owner, whose rows win over this host's and whose epoch
      // refuses its commit; so its actor starts empty, without recovery reads (AskOptions.fresh).
      const fresh = f === 1 && e !== undefined && e === epoch;
      const running = actors.ask(entity(t), i, m, fresh ? { fresh } : undefined).catch((err: unknown): Reply<unknown> => ({
        ok: false,
        rejection: { code: Code.Unavailable, message: `the actor did not answer: ${(err as Error).message}` },
      }));
      remember(c, running);
      const reply = await running;
      // Refused because a newer owner has the shard: that owner answers it, by Kafka.
      if (!reply.ok && !actors.serves(shard)) return { c, moved: true };
      return { c, r: reply, e: epoch };
    };
    socket.on("data", (chunk: Buffer) => {
      if (hello !== undefined) {
        hello = Buffer.concat([hello, chunk]);
        if (hello.length < PROOF_BYTES) return;
        const proof = hello.subarray(0, PROOF_BYTES);
        const rest = hello.subarray(PROOF_BYTES);
        hello = undefined;
        clearTimeout(helloTimer);
        if (!timingSafeEqual(proof, proofOf(options.key, nonce))) {
          log.warn({ peer: socket.remoteAddress }, "direct commands: a peer without the server secret's proof was refused");
          socket.destroy();
          return;
        }
        if (rest.length === 0) return;
        chunk = rest;
      }
      if (!reader.feed(chunk)) socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.listenPort, options.listenHost, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as net.AddressInfo).port;
  const address = hostPort(options.advertiseHost, port);
  log.info({ address, listen: hostPort(options.listenHost, port) }, "direct commands served");
  return {
    address,
    ran: (correlation) => runs.get(correlation)?.reply,
    remember,
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(sweeper);
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

// ── gateway side ──

interface Waiting {
  readonly answer: (reply: Reply<unknown>, epoch: number | undefined) => void;
  readonly fallback: (reason: "moved" | "lost") => void;
}

/** One authenticated connection to a host; frames wait in `queued` until the handshake is done. */
class Link {
  readonly waiting = new Map<string, Waiting>();
  private readonly socket: net.Socket;
  private readonly writer: FrameWriter;
  private queued: Buffer[] | undefined = [];
  private hello: Buffer | undefined = Buffer.alloc(0);
  private heardAt = Date.now();
  private readonly pinger: NodeJS.Timeout;
  closed = false;

  constructor(
    readonly address: string,
    key: Buffer,
    private readonly onClose: (link: Link) => void,
  ) {
    const at = address.lastIndexOf(":");
    this.socket = net.connect({ host: address.slice(0, at).replace(/^\[|\]$/g, ""), port: Number(address.slice(at + 1)) });
    this.socket.setNoDelay(true);
    this.writer = new FrameWriter(this.socket);
    const reader = new FrameReader((value) => this.onFrame(value as ToGateway));
    this.socket.on("data", (chunk: Buffer) => {
      this.heardAt = Date.now();
      if (this.hello !== undefined) {
        this.hello = Buffer.concat([this.hello, chunk]);
        if (this.hello.length < MAGIC.length + NONCE_BYTES) return;
        if (!this.hello.subarray(0, MAGIC.length).equals(MAGIC)) return void this.socket.destroy();
        const rest = this.hello.subarray(MAGIC.length + NONCE_BYTES);
        this.socket.write(proofOf(key, this.hello.subarray(MAGIC.length, MAGIC.length + NONCE_BYTES)));
        this.hello = undefined;
        for (const b of this.queued!) this.writer.write(b);
        this.queued = undefined;
        if (rest.length === 0) return;
        chunk = rest;
      }
      if (!reader.feed(chunk)) this.socket.destroy();
    });
    this.socket.on("error", () => undefined);
    this.socket.on("close", () => this.close());
    this.pinger = setInterval(() => {
      if (Date.now() - this.heardAt > LINK_SILENCE_MS) return void this.socket.destroy();
      this.write({ ping: Date.now() });
    }, PING_MS);
    this.pinger.unref();
  }

  send(command: CommandFrame, waiting: Waiting): void {
    this.waiting.set(command.c, waiting);
    this.write(command);
  }

  /** A command given up by its asker (its deadline passed): an answer that comes later is dropped. */
  forget(correlation: string): void {
    this.waiting.delete(correlation);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.pinger);
    this.socket.destroy();
    this.onClose(this);
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of waiting) w.fallback("lost");
  }

  private write(value: ToHost): void {
    const bytes = frame(value);
    if (this.queued) this.queued.push(bytes);
    else this.writer.write(bytes);
  }

  private onFrame(f: ToGateway): void {
    if ("pong" in f) return;
    const w = this.waiting.get(f.c);
    if (!w) return;
    this.waiting.delete(f.c);
    if ("moved" in f) w.fallback("moved");
    else w.answer(f.r, f.e);
  }
}

/** The gateway's routes: which host serves each partition, as the replies by Kafka taught it. */
export class DirectRoutes {
  /** Per partition: the host serving it, and the epoch it holds it by, as its last reply said. */
  private readonly routes = new Map<number, { readonly address: string; epoch: number | undefined }>();
  private readonly links = new Map<string, Link>();
  private readonly failedAt = new Map<string, number>();

  constructor(
    private readonly key: Buffer,
    private readonly partitions: number,
    private readonly log: Logger,
  ) {}

  /** A reply by Kafka came from the host at this address, which serves this partition by this epoch. */
  learn(partition: number, address: string, epoch?: number): void {
    const known = this.routes.get(partition);
    if (known?.address === address) {
      known.epoch = epoch;
      return;
    }
    const failed = this.failedAt.get(address);
    if (failed !== undefined && Date.now() - failed < COOL_DOWN_MS) return;
    this.routes.set(partition, { address, epoch });
  }

  /**
   * Sends the command straight to the host serving its partition, when one is known; undefined
   * when none is (the caller sends it by Kafka); else a function that forgets it. Exactly one of
   * answer and fallback is called later, unless the command is forgotten first. `fresh`: a create
   * of an id minted at random for it (AskOptions.fresh), which the host may run without recovery
   * reads if it still holds the partition by the epoch this gateway knows.
   */
  send(
    command: Omit<CommandFrame, "f" | "e" | "h">,
    answer: (reply: Reply<unknown>) => void,
    fallback: Waiting["fallback"],
    fresh = false,
  ): (() => void) | undefined {
    const partition = partitionFor(`${command.t}:${command.i}`, this.partitions);
    const route = this.routes.get(partition);
    if (route === undefined) return undefined;
    const { address } = route;
    let link = this.links.get(address);
    if (!link) this.links.set(address, (link = new Link(address, this.key, (l) => this.closed(l))));
    const on = link;
    // Inside a trace: a CLIENT span for the trip, whose context the frame carries to the host; a
    // fallback to Kafka publishes in the asker's context, as the ask would have.
    const asker = activeTrace();
    const span = childSpan("send direct command", SpanKind.CLIENT, { "media.entity.type": command.t, "media.entity.id": command.i, "server.address": address });
    const trace = span && inSpanContext(span, () => injectTrace(undefined));
    const frame: CommandFrame = {
      ...command,
      ...(fresh && route.epoch !== undefined ? { f: 1 as const, e: route.epoch } : {}),
      ...(trace ? { h: trace } : {}),
    };
    on.send(frame, {
      answer: (reply, epoch) => {
        directCommands.inc({ outcome: "answered" });
        span?.end();
        if (this.routes.get(partition) === route) route.epoch = epoch;
        answer(reply);
      },
      fallback: (reason) => {
        if (reason === "moved" && this.routes.get(partition) === route) this.routes.delete(partition);
        directCommands.inc({ outcome: reason });
        if (span) {
          failedWith(span, reason);
          span.end();
        }
        inContext(asker, () => fallback(reason));
      },
    });
    return () => {
      span?.end();
      on.forget(command.c);
    };
  }

  close(): void {
    for (const link of [...this.links.values()]) link.close();
  }

  private closed(link: Link): void {
    if (this.links.get(link.address) === link) this.links.delete(link.address);
    this.failedAt.set(link.address, Date.now());
    for (const [partition, route] of [...this.routes]) if (route.address === link.address) this.routes.delete(partition);
    this.log.warn({ address: link.address, waiting: link.waiting.size }, "direct commands: link to an actor host closed; its commands go by Kafka");
  }
}
