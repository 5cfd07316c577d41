// A request body its host can hand over chunk by chunk as the socket reads it, with no copy queued
// in between: the consumer copies what it needs (into a batch, a file) before it returns. The uWS
// host offers it (gateway/uws.ts); a 1 GiB upload then allocates nothing per chunk, where a queue
// of copies kept the garbage collector busy for a third of the upload's CPU.

/** What a consumer does with one chunk: use it before returning; a promise pauses the socket until it settles. */
export type TakeChunk = (chunk: Uint8Array) => void | Promise<void>;

export interface DirectBody extends AsyncIterable<Uint8Array> {
  /**
   * Gives every chunk to `take` as it arrives (the memory is reused after the call: copy what you
   * keep). Resolves after the last chunk and every promise `take` returned; rejects with the first
   * error `take` threw or rejected with, or when the client goes away. Either this or iteration, once.
   */
  forEachChunk(take: TakeChunk): Promise<void>;
}

export const isDirectBody = (body: AsyncIterable<Uint8Array>): body is DirectBody => typeof (body as Partial<DirectBody>).forEachChunk === "function";
