// A streamed answer that may have to end while its client reads nothing (a Watch whose client
// stalled): once `urgent` resolves, its host writes what the body still yields, its end included,
// without waiting for the socket to drain. The uWS and node:http hosts honour it (gateway/).
//
// A body may also push: once its iterated chunks are written, the host hands it a sink, and the
// body writes the rest itself as it comes and ends the answer (a Watch's shared frames: thousands
// of streams each waiting a second for its next update hold no promise, no generator step).

export interface UrgentBody extends AsyncIterable<Uint8Array> {
  readonly urgent: Promise<void>;
}

/** Where a pushing body writes, past the chunks its host iterated. */
export interface PushSink {
  /** Writes a chunk now; false when the socket is full (then `drained` tells when it has room). */
  write(chunk: Uint8Array): boolean;
  /** Calls `then` once the socket has room again; never once the client left. */
  drained(then: () => void): void;
  /** Writes `last` and ends the answer. */
  end(last: Uint8Array): void;
}

export interface PushBody extends UrgentBody {
  /**
   * Called by the host once the iterated chunks are written, with the call's signal (the client
   * left). Resolves once the body ended the answer through the sink, or the client left; undefined
   * when the body has nothing to push, and the host ends the answer itself.
   */
  push(sink: PushSink, signal: AbortSignal): Promise<void> | undefined;
}

export const urgentOf = (body: AsyncIterable<Uint8Array> | undefined): Promise<void> | undefined =>
  body && (body as Partial<UrgentBody>).urgent instanceof Promise ? (body as UrgentBody).urgent : undefined;

export const isPushBody = (body: AsyncIterable<Uint8Array> | undefined): body is PushBody =>
  typeof (body as Partial<PushBody> | undefined)?.push === "function";

export const pushOf = (body: AsyncIterable<Uint8Array> | undefined): PushBody["push"] | undefined => (isPushBody(body) ? body.push.bind(body) : undefined);
