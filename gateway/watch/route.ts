// The Watch methods' handler: Connect's own (through the JSON bridge) reads the request, runs the
// interceptors and the service, and writes the snapshot. The service then hands its stream over
// and returns, so Connect's part of the call ends there; its end frame is held back while the
// updates go out as shared frames in the answer's format, pushed to the host's sink each as the
// socket has room (src/urgent-body.ts). The held end goes out with the terminal message, or as the
// error the stream failed with (stalled, unreadable update, deadline).
import { createContextKey } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import type { PushBody, PushSink } from "../../src/urgent-body.js";
import { wrapHandler } from "../handler.js";
import { failedEnd, isEndFrame, isGrpcWeb, wireFormatOf, type WireFormat } from "./frames.js";
import { WatchStream, type StreamUpdate } from "./stream.js";

/** The call's stream, for the service (absent when the call did not come through this handler). */
export const WATCH_STREAM = createContextKey<WatchStream | undefined>(undefined, { description: "the Watch call's shared-frame stream" });

export function withSharedFrames(inner: UniversalHandler): UniversalHandler {
  const fn = async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
    const stream = new WatchStream();
    req.contextValues?.set(WATCH_STREAM, stream);
    // The client going away ends the stream, also once Connect's part of the call is over.
    const gone = () => stream.end();
    req.signal.addEventListener("abort", gone, { once: true });
    void stream.finished.then(
      () => req.signal.removeEventListener("abort", gone),
      () => req.signal.removeEventListener("abort", gone),
    );
    let res: UniversalServerResponse;
    try {
      res = await inner(req);
    } catch (e) {
      stream.end();
      throw e;
    }
    return sharedFrames(res, stream);
  };
  return wrapHandler(inner, fn);
}

/**
 * Connect's answer with the stream's shared frames after its own. Its own scope, apart from the
 * abort listener's: a closure's context holds every variable its function's closures capture, so
 * the listener, kept for the whole stream, would otherwise keep Connect's finished pipeline (tens
 * of KiB a stream). For the same reason Connect's body is let go once iterated.
 */
function sharedFrames(res: UniversalServerResponse, stream: WatchStream): UniversalServerResponse {
  const format = wireFormatOf(res.header);
  let body = res.body as AsyncIterable<Uint8Array> | undefined;
  if (!body || format === undefined) {
    stream.end();
    return res;
  }
  const grpcWeb = isGrpcWeb(res.header);
  const end: Uint8Array[] = [];
  const merged: PushBody = {
    urgent: stream.urgent,
    [Symbol.asyncIterator]: () => {
      if (!body) throw new Error("a Watch answer's body is read once");
      const frames = connectFrames(body, stream, grpcWeb, end);
      body = undefined;
      return frames;
    },
    push: (sink, signal) => (stream.handedOver && end.length > 0 ? pushFrames(stream, format, grpcWeb, end, sink, signal) : (stream.end(), undefined)),
  };
  return { ...res, body: merged };
}

/** Connect's frames: the snapshot (or the whole call, when it ended before any update); its end held (into `end`) once the stream is handed over. */
async function* connectFrames(body: AsyncIterable<Uint8Array>, stream: WatchStream, grpcWeb: boolean, end: Uint8Array[]): AsyncGenerator<Uint8Array> {
  const inner = body[Symbol.asyncIterator]();
  try {
    // Each chunk is one frame (the bridge and the error shaping yield them so).
    for (let step = await inner.next(); !step.done; step = await inner.next()) {
      if (stream.handedOver && isEndFrame(step.value, grpcWeb)) end.push(step.value);
      else yield step.value;
    }
  } finally {
    // Lets Connect's pipeline (and the service's cleanup) finish when the client left before the hand-over.
    void inner.return?.().catch(() => undefined);
  }
}

/**
 * The stream's shared frames, each written as the socket has room, then the held end: with the
 * terminal message in one write, or as the error the stream failed with (at once, though the
 * client reads nothing). Resolves when the answer ended or the client left.
 */
function pushFrames(stream: WatchStream, format: WireFormat, grpcWeb: boolean, end: Uint8Array[], sink: PushSink, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (last: Uint8Array | undefined) => {
      if (done) return;
      done = true;
      signal.removeEventListener("abort", gone);
      stream.end();
      if (last && !signal.aborted) sink.end(last);
      resolve();
    };
    const gone = () => finish(undefined);
    const take = (u: StreamUpdate | undefined): void => {
      if (done) return;
      if (!u) {
        const failure = stream.failed;
        return finish(failure ? failedEnd(end[end.length - 1]!, failure, grpcWeb, format) : Buffer.concat(end));
      }
      const frame = u.shared.frame(format);
      if (u.terminal) return finish(Buffer.concat([frame, ...end]));
      if (sink.write(frame)) stream.nextThen(take);
      else sink.drained(() => stream.nextThen(take));
    };
    if (signal.aborted) return finish(undefined);
    signal.addEventListener("abort", gone, { once: true });
    void stream.urgent.then(() => take(undefined));
    stream.nextThen(take);
  });
}
