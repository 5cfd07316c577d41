// MD5 of a stream on a worker thread: the ETag of an upload (S3's, for a whole object or a part)
// without hashing on the event loop, which would take the core that reads the sockets. Chunks are
// gathered into 1 MiB batches, moved (not copied) to one shared worker, and acknowledged as they
// are hashed; a writer that gets more than 8 MiB ahead waits, so a fast sender cannot queue a file
// in memory. One worker serves every hash of the process, in turn. Given a file, the worker also
// writes each batch to it: one write of a megabyte where the event loop would have queued one
// write per socket read (the bulk of an upload's CPU, measured in test/bench/hosting.bench.ts).
import { Worker } from "node:worker_threads";

const BATCH_BYTES = 1024 * 1024;
const HIGH_WATER_BYTES = 8 * 1024 * 1024;

// Plain JavaScript evaluated in the worker (no loader there): one MD5 per id, fed in order, and
// with a file each batch written there as it is hashed. (Writes on the thread pool, overlapping the
// hashing, took as long on this machine's disk and spent more CPU: measured, and left out.)
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const fs = require("node:fs");
const streams = new Map();
const closeFd = (s) => {
  const fd = s.fd;
  s.fd = undefined;
  if (fd !== undefined) fs.closeSync(fd);
};
parentPort.on("message", (m) => {
  let s = streams.get(m.id);
  if (!s) streams.set(m.id, (s = { hash: createHash("md5"), fd: undefined, failed: false }));
  try {
    if (m.file !== undefined) s.fd = fs.openSync(m.file, "w", 0o644);
    if (m.chunk) {
      if (!s.failed) {
        s.hash.update(m.chunk);
        for (let at = 0; s.fd !== undefined && at < m.chunk.byteLength; ) at += fs.writeSync(s.fd, m.chunk, at);
      }
      // The batch's memory goes back to be filled again.
      parentPort.postMessage({ id: m.id, hashed: m.chunk.byteLength, buffer: m.chunk.buffer }, [m.chunk.buffer]);
    }
    if (m.end && !s.failed) {
      closeFd(s);
      streams.delete(m.id);
      parentPort.postMessage({ id: m.id, digest: s.hash.digest("hex") });
    }
  } catch (e) {
    // A failed open or write (a full disk): the stream is told once; later batches are only given back.
    if (!s.failed) parentPort.postMessage({ id: m.id, error: String((e && e.message) || e) });
    s.failed = true;
    try { closeFd(s); } catch {}
  }
  if (m.drop) {
    try { closeFd(s); } catch {}
    streams.delete(m.id);
  }
});
`;

interface Pending {
  inFlight: number;
  /** Writers waiting for the worker to catch up (several when chunks keep coming while one waits). */
  drained: (() => void)[];
  done?: { resolve: (hex: string) => void; reject: (e: Error) => void };
  /** Why this stream failed (a write in the worker, a batch that could not be sent), reported at the next update or the digest. */
  error?: Error;
}

let worker: Worker | undefined;
/** Batch buffers the worker gave back: a few circulate, rather than one new megabyte per batch. */
const spare: ArrayBuffer[] = [];
const newBatch = () => new Uint8Array(spare.pop() ?? new ArrayBuffer(BATCH_BYTES));
const pending = new Map<number, Pending>();
let nextId = 1;

function hashWorker(): Worker {
  if (worker) return worker;
  const w = new Worker(WORKER_SOURCE, { eval: true });
  w.unref();
  w.on("message", (m: { id: number; hashed?: number; buffer?: ArrayBuffer; digest?: string; error?: string }) => {
    if (m.buffer?.byteLength === BATCH_BYTES && spare.length < 16) spare.push(m.buffer);
    const p = pending.get(m.id);
    if (!p) return;
    if (m.error !== undefined) {
      p.error = new Error(m.error);
      pending.delete(m.id);
      for (const go of p.drained.splice(0)) go();
      p.done?.reject(p.error);
      return;
    }
    if (m.hashed !== undefined) {
      p.inFlight -= m.hashed;
      if (p.inFlight <= HIGH_WATER_BYTES / 2) for (const go of p.drained.splice(0)) go();
    }
    if (m.digest !== undefined) {
      pending.delete(m.id);
      p.done?.resolve(m.digest);
    }
  });
  const fail = (e: Error) => {
    worker = undefined;
    for (const p of pending.values()) {
      p.error ??= e;
      for (const go of p.drained.splice(0)) go();
      p.done?.reject(e);
    }
    pending.clear();
  };
  w.on("error", fail);
  w.on("exit", (code) => fail(new Error(`the hashing worker exited (${code})`)));
  worker = w;
  return w;
}

/** Starts the hashing worker ahead of the first upload (a gateway at start), so no upload waits for it or pays its memory. */
export function startHashWorker(): void {
  hashWorker();
}

/**
 * An MD5 being computed off the event loop: update with each chunk (awaiting it), then digest. With
 * a file, the worker writes the bytes there too (created or truncated), complete when the digest
 * resolves.
 */
export class OffloadedMd5 {
  private readonly id = nextId++;
  private readonly state: Pending = { inFlight: 0, drained: [] };
  /** The batch being filled: a plain Uint8Array of its own, so it can be moved to the worker. */
  private batch = newBatch();
  private used = 0;

  constructor(file?: string) {
    pending.set(this.id, this.state);
    if (file !== undefined) hashWorker().postMessage({ id: this.id, file });
  }

  /**
   * Takes a chunk, copied before this returns (the caller may reuse its memory at once). Answers a
   * promise when the worker is too far behind, settled once it has caught up: a caller may await
   * it or keep going (the copy is made either way).
   */
  update(chunk: Uint8Array): Promise<void> | undefined {
    if (this.state.error) throw this.state.error;
    for (let at = 0; at < chunk.byteLength;) {
      const n = Math.min(chunk.byteLength - at, BATCH_BYTES - this.used);
      this.batch.set(chunk.subarray(at, at + n), this.used);
      this.used += n;
      at += n;
      if (this.used === BATCH_BYTES) this.flush();
    }
    if (this.state.inFlight <= HIGH_WATER_BYTES) return undefined;
    return new Promise<void>((resolve, reject) => this.state.drained.push(() => (this.state.error ? reject(this.state.error) : resolve())));
  }

  /** The hex digest of everything updated (with a file: once it is written and closed). */
  digest(): Promise<string> {
    if (this.state.error) return Promise.reject(this.state.error);
    this.flush();
    return new Promise<string>((resolve, reject) => {
      this.state.done = { resolve, reject };
      hashWorker().postMessage({ id: this.id, end: true });
    });
  }

  /** Forget a hash that will not be finished (a failed upload); its file is closed, not removed. */
  discard(): void {
    this.used = 0;
    pending.delete(this.id);
    worker?.postMessage({ id: this.id, drop: true });
  }

  private flush(): void {
    if (this.used === 0) return;
    // Uint8Array#slice copies into a buffer of its own (a Buffer's would not).
    const owned = this.used === BATCH_BYTES ? this.batch : this.batch.slice(0, this.used);
    this.batch = newBatch();
    this.used = 0;
    this.state.inFlight += owned.byteLength;
    try {
      hashWorker().postMessage({ id: this.id, chunk: owned }, [owned.buffer]);
    } catch (e) {
      this.state.error = e as Error;
      throw e;
    }
  }
}
