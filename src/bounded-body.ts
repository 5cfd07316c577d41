// Reading an answer of a server we called, whole but bounded: a body past its limit is destroyed
// unread, and the caller's signal (a deadline) ends the read too.
import type { Readable } from "node:stream";

/** The whole body, or undefined (and the body destroyed) once it passes `limit` bytes. */
export async function readBounded(body: Readable, limit: number, signal: AbortSignal): Promise<Buffer | undefined> {
  const onAbort = () => body.destroy(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    signal.throwIfAborted();
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      const buffer: Buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      size += buffer.length;
      if (size > limit) {
        body.destroy();
        return undefined;
      }
      chunks.push(buffer);
    }
    return Buffer.concat(chunks);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
