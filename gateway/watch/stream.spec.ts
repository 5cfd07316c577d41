// A stream's slot: the latest update replaces an unsent one, the terminal message is never dropped
// and always last, nothing at or below what was shown goes out, and a stream ends once.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { WatchJobResponseSchema } from "../../src/gen/media/v1/job_pb.js";
import { SharedMessage } from "./frames.js";
import { WatchStream, type StreamUpdate } from "./stream.js";

const update = (version: number, terminal = false): StreamUpdate => ({
  version,
  terminal,
  shared: new SharedMessage(WatchJobResponseSchema, create(WatchJobResponseSchema, { eventType: terminal ? "completed" : "updated" })),
});

/** A writer's pending ask, kept across drains: as the writer, it asks for the next update once at a time. */
const asked = new WeakMap<WatchStream, Promise<StreamUpdate | undefined>>();

/** Everything the stream has ready now, as the writer would take it. */
async function drain(s: WatchStream): Promise<number[]> {
  const out: number[] = [];
  for (;;) {
    const ask = asked.get(s) ?? s.next();
    const next = await Promise.race([ask, new Promise<"none">((r) => setImmediate(() => r("none")))]);
    if (next === "none") {
      asked.set(s, ask);
      return out;
    }
    asked.delete(s);
    if (next === undefined) return out;
    out.push(next.version);
  }
}

describe("WatchStream", () => {
  it("holds updates until the snapshot, then drops those the snapshot already showed", async () => {
    const s = new WatchStream();
    s.offer(update(3));
    s.offer(update(5));
    s.start(5);
    expect(await drain(s)).toEqual([]);
    s.offer(update(6));
    expect(await drain(s)).toEqual([6]);
  });

  it("keeps only the latest unsent update, and counts the replaced one", async () => {
    const s = new WatchStream();
    s.start(1);
    expect(s.offer(update(2))).toBe(false);
    expect(s.offer(update(3))).toBe(true);
    expect(s.offer(update(4))).toBe(true);
    expect(await drain(s)).toEqual([4]);
    expect(s.offer(update(4))).toBe(false); // a repeat (at least once delivery) is dropped
    expect(s.offer(update(3))).toBe(false);
    expect(await drain(s)).toEqual([]);
  });

  it("gives an update at once to a writer that is waiting", async () => {
    const s = new WatchStream();
    s.start(1);
    const next = s.next();
    s.offer(update(2));
    expect((await next)?.version).toBe(2);
    expect(s.waitingSince).toBeUndefined();
  });

  it("never drops the terminal message and ends with it; an unsent update gives way to it", async () => {
    const s = new WatchStream();
    s.start(1);
    s.offer(update(2));
    s.offer(update(3, true));
    s.offer(update(4)); // nothing after the end
    expect(await drain(s)).toEqual([3]);
    await expect(s.finished).resolves.toBeUndefined();
    expect(await s.next()).toBeUndefined();
  });

  it("a terminal message sent before the snapshot's version is not sent again", async () => {
    const s = new WatchStream();
    s.offer(update(3, true));
    s.start(3); // the snapshot was already final: the handler answers it by name itself
    expect(await drain(s)).toEqual([]);
  });

  it("marks when a message began to wait for a writer, and clears it when taken", async () => {
    let now = 1000;
    const s = new WatchStream(() => now);
    s.start(0);
    s.offer(update(1));
    expect(s.waitingSince).toBe(1000);
    now = 2000;
    s.offer(update(2)); // still the same wait
    expect(s.waitingSince).toBe(1000);
    await s.next();
    expect(s.waitingSince).toBeUndefined();
  });

  it("ends with an error: the writer is released, the handler's wait fails, the rest turns urgent", async () => {
    const s = new WatchStream();
    s.start(0);
    const waiting = s.next();
    const error = new ConnectError("stalled", Code.ResourceExhausted);
    s.end(error);
    expect(await waiting).toBeUndefined();
    await expect(s.finished).rejects.toBe(error);
    await expect(s.urgent).resolves.toBeUndefined();
    expect(s.failed).toBe(error);
    s.end(); // once
    expect(s.failed).toBe(error);
  });

  it("hands a writer the waiting update at once, else the next one as it is offered, with no promise in between", () => {
    const s = new WatchStream();
    s.start(1);
    const got: (number | undefined)[] = [];
    const take = (u: StreamUpdate | undefined) => got.push(u?.version);
    s.offer(update(2));
    s.nextThen(take);
    expect(got).toEqual([2]); // synchronously
    s.nextThen(take);
    expect(got).toEqual([2]);
    s.offer(update(3));
    expect(got).toEqual([2, 3]); // inside offer
    s.nextThen(take);
    s.offer(update(4, true));
    expect(got).toEqual([2, 3, 4]);
    s.nextThen(take);
    expect(got).toEqual([2, 3, 4, undefined]); // the terminal message was the last
  });

  it("ends with the deadline's error when its deadline passes first, and not after it ended", async () => {
    const late = new WatchStream();
    late.start(1);
    const error = new ConnectError("the operation timed out", Code.DeadlineExceeded);
    late.deadline(20, error);
    await expect(late.finished).rejects.toBe(error);
    expect(late.failed).toBe(error);

    const done = new WatchStream();
    done.start(1);
    done.deadline(20, error);
    done.offer(update(2, true));
    expect((await done.next())?.version).toBe(2);
    await new Promise((r) => setTimeout(r, 40));
    expect(done.failed).toBeUndefined();
    await expect(done.finished).resolves.toBeUndefined();
  });
});
