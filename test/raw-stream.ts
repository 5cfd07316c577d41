// A server-streaming call on a raw HTTP/1.1 socket, for tests that control reading: paused, the
// socket is not read at all (the kernel's buffers fill, then the server's), so back-pressure is
// real. Frames are parsed from the de-chunked body, byte for byte as they came.
import net from "node:net";

export interface RawFrame {
  readonly flags: number;
  readonly data: Buffer;
}

export class RawStream {
  private readonly socket: net.Socket;
  private readonly chunks: Buffer[] = [];
  private listeners: (() => void)[] = [];
  closed = false;

  constructor(base: string, path: string, headers: Record<string, string>, body: Uint8Array) {
    const url = new URL(base);
    this.socket = net.connect(Number(url.port), url.hostname);
    const head = [`POST ${path} HTTP/1.1`, `host: ${url.host}`, `content-length: ${body.length}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    this.socket.write(`${head.join("\r\n")}\r\n\r\n`);
    this.socket.write(body);
    this.socket.on("data", (d: Buffer) => {
      this.chunks.push(d);
      this.notify();
    });
    this.socket.on("error", () => undefined);
    this.socket.on("close", () => {
      this.closed = true;
      this.notify();
    });
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  close(): void {
    this.socket.destroy();
  }

  /** Bytes received so far. */
  get received(): number {
    return this.chunks.reduce((n, c) => n + c.length, 0);
  }

  /** The answer so far: status, headers, and its whole frames. */
  read(): { status: number; headers: Map<string, string>; frames: RawFrame[]; ended: boolean } {
    const all = Buffer.concat(this.chunks);
    const split = all.indexOf("\r\n\r\n");
    if (split < 0) return { status: 0, headers: new Map(), frames: [], ended: false };
    const [statusLine, ...lines] = all.subarray(0, split).toString("latin1").split("\r\n");
    const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
    let body = all.subarray(split + 4);
    if (headers.get("transfer-encoding") === "chunked") {
      const parts: Buffer[] = [];
      for (let at = 0; ;) {
        const eol = body.indexOf("\r\n", at);
        if (eol < 0) break;
        const size = parseInt(body.subarray(at, eol).toString("latin1"), 16);
        if (size === 0 || eol + 2 + size > body.length) break;
        parts.push(body.subarray(eol + 2, eol + 2 + size));
        at = eol + 2 + size + 2;
      }
      body = Buffer.concat(parts);
    }
    const frames: RawFrame[] = [];
    for (let at = 0; at + 5 <= body.length;) {
      const length = body.readUInt32BE(at + 1);
      if (at + 5 + length > body.length) break;
      frames.push({ flags: body[at]!, data: body.subarray(at + 5, at + 5 + length) });
      at += 5 + length;
    }
    const last = frames.at(-1);
    const grpcWeb = (headers.get("content-type") ?? "").startsWith("application/grpc-web");
    const ended = last !== undefined && (last.flags & (grpcWeb ? 0x80 : 0x02)) !== 0;
    return { status: Number(statusLine!.split(" ")[1]), headers, frames, ended };
  }

  /** Resolves once `done` holds for what was received (checked as bytes arrive), or rejects after `ms`. */
  until(what: string, done: (r: ReturnType<RawStream["read"]>) => boolean, ms = 30_000): Promise<ReturnType<RawStream["read"]>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const r = this.read();
        if (!done(r)) return this.closed ? (cleanup(), reject(new Error(`${what}: the connection closed first`))) : undefined;
        cleanup();
        resolve(r);
      };
      const timer = setTimeout(() => (cleanup(), reject(new Error(`${what}: not within ${ms} ms`))), ms);
      const cleanup = () => {
        clearTimeout(timer);
        this.listeners = this.listeners.filter((l) => l !== check);
      };
      this.listeners.push(check);
      check();
    });
  }

  private notify(): void {
    for (const l of [...this.listeners]) l();
  }
}

/** A Connect JSON request body: one enveloped message. */
export function enveloped(message: unknown): Uint8Array {
  const json = Buffer.from(JSON.stringify(message));
  const out = Buffer.alloc(5 + json.length);
  out.writeUInt32BE(json.length, 1);
  json.copy(out, 5);
  return out;
}
