// The Watch methods' handler: Connect's own (through the JSON bridge) reads the request, runs the
// interceptors and the service, and writes the snapshot and the end of the stream; between them,
// once the service hands its stream over, the updates go out as shared frames in the answer's
// format, taken one at a time as the host asks for the next chunk (so as the socket has room).
import { createContextKey } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import type { UrgentBody } from "../../src/urgent-body.js";
import { wrapHandler } from "../handler.js";
import { wireFormatOf, type WireFormat } from "./frames.js";
import { WatchStream } from "./stream.js";

/** The call's stream, for the service (absent when the call did not come through this handler). */
export const WATCH_STREAM = createContextKey<WatchStream | undefined>(undefined, { description: "the Watch call's shared-frame stream" });

export function withSharedFrames(inner: UniversalHandler): UniversalHandler {
  const fn = async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
    const stream = new WatchStream();
    req.contextValues?.set(WATCH_STREAM, stream);
    let res: UniversalServerResponse;
    try {
      res = await inner(req);
    } catch (e) {
      stream.end();
      throw e;
    }
    const format = wireFormatOf(res.header);
    const body = res.body as AsyncIterable<Uint8Array> | undefined;
    if (!body || format === undefined) {
      stream.end();
      return res;
    }
    const merged: UrgentBody = { urgent: stream.urgent, [Symbol.asyncIterator]: () => frames(body, stream, format) };
    return { ...res, body: merged };
  };
  return wrapHandler(inner, fn);
}

const ATTACHED = Symbol("attached");

/** Connect's frames until the service hands its stream over, then the stream's shared frames, then the rest of Connect's (the end). */
async function* frames(body: AsyncIterable<Uint8Array>, stream: WatchStream, format: WireFormat): AsyncGenerator<Uint8Array> {
  const inner = body[Symbol.asyncIterator]();
  const attached: Promise<typeof ATTACHED> = stream.attached.then(() => ATTACHED);
  let handedOver = false;
  let next: Promise<IteratorResult<Uint8Array>> | undefined;
  try {
    for (;;) {
      next ??= inner.next();
      const step: IteratorResult<Uint8Array> | typeof ATTACHED = handedOver ? await next : await Promise.race([next, attached]);
      if (step === ATTACHED) {
        handedOver = true;
        // The service waits for the stream's end: nothing comes from Connect meanwhile.
        for (let u = await stream.next(); u; u = await stream.next()) yield u.shared.frame(format);
        continue;
      }
      next = undefined;
      if (step.done) return;
      yield step.value;
    }
  } finally {
    stream.end();
    next?.catch(() => undefined);
    // Lets Connect's pipeline (and the service's cleanup) finish; it may be waiting on the service.
    void inner.return?.().catch(() => undefined);
  }
}
