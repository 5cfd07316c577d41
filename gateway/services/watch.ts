// JobService.Watch and VideoService.Watch: one path. Subscribe (one subscription per entity per
// gateway, shared), read the snapshot, answer it through Connect; then hand the stream to the
// shared-frame writer (gateway/watch/route.ts) and return: Connect's part of the call ends, and the
// stream's end (the terminal message taken, the client gone, the stream stalled or past its
// deadline) releases the subscription.
import { Code, type HandlerContext } from "@connectrpc/connect";
import type { Message } from "@bufbuild/protobuf";
import { apiError } from "../../src/errors.js";
import { watchOpened } from "../../src/metrics.js";
import type { WatchHub, WatchTopic } from "../watch/hub.js";
import { WATCH_STREAM } from "../watch/route.js";

export async function* watchEntity<R extends { readonly version: number }, M extends Message>(
  hub: WatchHub | undefined,
  ctx: HandlerContext,
  topic: WatchTopic<R, M>,
  id: string,
  read: () => Promise<R>,
  resource: "job" | "video",
): AsyncGenerator<M> {
  if (!hub) throw apiError(Code.Unavailable, `this gateway does not follow ${resource} updates`);
  const stream = ctx.values.get(WATCH_STREAM);
  if (!stream) throw apiError(Code.Internal, `${resource} Watch is served only through the shared-frame writer`);
  // Subscribe before reading the snapshot, so no change falls between the two.
  const leave = hub.join(topic, id, stream);
  const closed = watchOpened(resource);
  const over = () => (leave(), closed());
  const abort = () => stream.end();
  ctx.signal.addEventListener("abort", abort, { once: true });
  let handedOver = false;
  try {
    const record = await read();
    yield await topic.message("snapshot", record);
    // A subscriber that connects after the end still gets the final state by name.
    const terminal = topic.terminal(record);
    if (terminal !== undefined) {
      yield await topic.message(terminal, record);
      return;
    }
    if (ctx.signal.aborted) return;
    // The stream outlives this call: its deadline, if the caller set one, goes with it.
    const timeoutMs = ctx.timeoutMs();
    if (timeoutMs !== undefined) stream.deadline(timeoutMs, apiError(Code.DeadlineExceeded, "the operation timed out"));
    stream.start(record.version);
    handedOver = true;
    void stream.finished.then(over, over);
  } finally {
    ctx.signal.removeEventListener("abort", abort);
    if (!handedOver) {
      stream.end();
      over();
    }
  }
}
