// MD5 of a stream on a worker thread: the ETag of an upload (S3's, for a whole object or a part)
// without hashing on the event loop, which would take the core that reads the sockets. Chunks are
// gathered into 1 MiB batches, moved (not copied) to one shared worker, and acknowledged as they
// are hashed; a writer that gets more than 8 MiB ahead waits, so a fast sender cannot queue a file
// in memory. One worker serves every hash of the process, in turn.
import { Worker } from "node:worker_threads";

const BATCH_BYTES = 1024 * 1024;
const HIGH_WATER_BYTES = 8 * 1024 * 1024;

// Plain JavaScript evaluated in the worker (no loader there): one MD5 per id, fed in order.
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const hashes = new Map();
parentPort.on("message", (m) => {
  let h = hashes.get(m.id);
  if (!h) hashes.set(m.id, (h = createHash("md5")));
  if (m.chunk) {
    h.update(m.chunk);
    // The batch's memory goes back to be filled again.
    parentPort.postMessage({ id: m.id, hashed: m.chunk.byteLength, buffer: m.chunk.buffer }, [m.chunk.buffer]);
  }
  if (m.end) {
    hashes.delete(m.id);
    parentPort.postMessage({ id: m.id, digest: h.digest("hex") });
  }
  if (m.drop) hashes.delete(m.id);
});
`;

interface Pending {
  inFlight: number;
  drained?: () => void;
  done?: { resolve: (hex: string) => void; reject: (e: Error) => void };
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
  w.on("message", (m: { id: number; hashed?: number; buffer?: ArrayBuffer; digest?: string }) => {
    if (m.buffer?.byteLength === BATCH_BYTES && spare.length < 16) spare.push(m.buffer);
    const p = pending.get(m.id);
    if (!p) return;
    if (m.hashed !== undefined) {
      p.inFlight -= m.hashed;
      if (p.inFlight <= HIGH_WATER_BYTES / 2 && p.drained) {
        const go = p.drained;
        p.drained = undefined;
        go();
      }
    }
    if (m.digest !== undefined) {
      pending.delete(m.id);
      p.done?.resolve(m.digest);
    }
  });
  const fail = (e: Error) => {
    worker = undefined;
    for (const p of pending.values()) {
      p.drained?.();
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

/** An MD5 being computed off the event loop: update with each chunk (awaiting it), then digest. */
export class OffloadedMd5 {
  private readonly id = nextId++;
  private readonly state: Pending = { inFlight: 0 };
  /** The batch being filled: a plain Uint8Array of its own, so it can be moved to the worker. */
  private batch = newBatch();
  private used = 0;
  private failed: Error | undefined;

  constructor() {
    pending.set(this.id, this.state);
  }

  /** Takes a chunk (copied: the caller may reuse it at once); resolves when the worker is not too far behind. */
  async update(chunk: Uint8Array): Promise<void> {
    if (this.failed) throw this.failed;
    for (let at = 0; at < chunk.byteLength; ) {
      const n = Math.min(chunk.byteLength - at, BATCH_BYTES - this.used);
      this.batch.set(chunk.subarray(at, at + n), this.used);
      this.used += n;
      at += n;
      if (this.used === BATCH_BYTES) this.flush();
    }
    if (this.state.inFlight > HIGH_WATER_BYTES) await new Promise<void>((r) => (this.state.drained = r));
  }

  /** The hex digest of everything updated. */
  digest(): Promise<string> {
    this.flush();
    return new Promise<string>((resolve, reject) => {
      this.state.done = { resolve, reject };
      hashWorker().postMessage({ id: this.id, end: true });
    });
  }

  /** Forget a hash that will not be finished (a failed upload). */
  discard(): void {
    this.used = 0;
    if (pending.delete(this.id)) worker?.postMessage({ id: this.id, drop: true });
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
      this.failed = e as Error;
      throw e;
    }
  }
}
