// gzip for Connect's handlers and the JSON bridge, bounded: a request body inflates on the event
// loop, one at a time, and stops at readMaxBytes, so a decompression bomb costs a few milliseconds
// and at most one message's worth of memory however many arrive at once (connect-node's own gzip
// inflates on the thread pool, every bomb in parallel, each up to the limit).
import { promisify } from "node:util";
import { constants, gunzipSync, gzip } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression } from "@connectrpc/connect/protocol";

const gzipAsync = promisify(gzip);
const INFLATE_CHUNK = 64 * 1024;

export const boundedGzip: Compression = {
  name: "gzip",
  compress: (bytes) => gzipAsync(bytes, {}),
  decompress(bytes, readMaxBytes) {
    try {
      return Promise.resolve(inflate(bytes, readMaxBytes, false));
    } catch (e) {
      return Promise.reject(e as Error);
    }
  },
};

/** The first look into a gzip body is taken once this much has arrived, the next at twice as much, and so on. */
const FIRST_LOOK = 64 * 1024;

/**
 * A gzip request body, read as it arrives and inflated within readMaxBytes. Whatever has arrived
 * is inflated on the event loop (one at a time, so memory holds at most one message's worth) at
 * 64 KiB, then at every doubling: a bomb is refused at its first 64 KiB, before the rest is read;
 * an honest body costs at most twice its inflation. Both sizes are held to readMaxBytes.
 */
export async function gunzipStream(body: AsyncIterable<Uint8Array>, readMaxBytes: number): Promise<Uint8Array<ArrayBuffer>> {
  let chunks: Uint8Array[] = [];
  let read = 0;
  let nextLook = FIRST_LOOK;
  for await (const chunk of body) {
    read += chunk.byteLength;
    if (read > readMaxBytes) throw new ConnectError(`message is larger than the limit of ${readMaxBytes} bytes`, Code.ResourceExhausted);
    chunks.push(chunk);
    if (read >= nextLook) {
      chunks = [Buffer.concat(chunks, read)];
      inflate(chunks[0]!, readMaxBytes, true);
      nextLook = read * 2;
    }
  }
  return inflate(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, read), readMaxBytes, false);
}

function inflate(bytes: Uint8Array, readMaxBytes: number, partial: boolean): Uint8Array<ArrayBuffer> {
  if (bytes.byteLength === 0) return new Uint8Array(0);
  try {
    // A partial body ends mid-stream: sync flush inflates what is there without calling it truncated.
    return gunzipSync(bytes, { maxOutputLength: readMaxBytes, chunkSize: INFLATE_CHUNK, ...(partial ? { finishFlush: constants.Z_SYNC_FLUSH } : {}) });
  } catch (e) {
    if ((e as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge(readMaxBytes);
    throw new ConnectError("the body is not valid gzip", Code.InvalidArgument);
  }
}

const tooLarge = (readMaxBytes: number) =>
  new ConnectError(`message is larger than the limit of ${readMaxBytes} bytes after decompression`, Code.ResourceExhausted);
