// The fan-out: one subscription per entity however many streams, one presentation per update,
// in order and never twice, and a stream that lets a message wait past the limit is ended.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { EntityUpdate } from "../../actors/commands.js";
import { WatchJobResponseSchema, type WatchJobResponse } from "../../src/gen/media/v1/job_pb.js";
import { WatchHub, type WatchTopic } from "./hub.js";
import { WatchStream } from "./stream.js";

interface Rec {
  readonly version: number;
  readonly done?: boolean;
}

/** The updates source: listeners by entity, as UpdatesHub keeps them. */
class Source {
  readonly listeners = new Map<string, Set<(u: EntityUpdate) => void>>();
  subscriptions = 0;
  subscribe(type: string, id: string, listener: (u: EntityUpdate) => void): () => void {
    const key = `${type}:${id}`;
    this.subscriptions++;
    const set = this.listeners.get(key) ?? new Set();
    this.listeners.set(key, set.add(listener));
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(key);
    };
  }
  publish(id: string, version: number, done = false): void {
    for (const l of this.listeners.get(`thing:${id}`) ?? []) l({ type: "thing", id, version, state: { rec: { version, done } } });
  }
}

function topic(presented: number[]): WatchTopic<Rec, WatchJobResponse> {
  return {
    type: "thing",
    schema: WatchJobResponseSchema,
    record: (state) => (state as { rec?: Rec }).rec,
    terminal: (r) => (r.done ? "completed" : undefined),
    message: async (eventType, r) => {
      presented.push(r.version);
      await new Promise((resolve) => setImmediate(resolve)); // presenting takes a while (a read)
      return create(WatchJobResponseSchema, { eventType });
    },
  };
}

const settle = () => new Promise((r) => setTimeout(r, 5));

afterEach(() => {
  vi.useRealTimers();
});

describe("WatchHub", () => {
  it("subscribes once per entity however many streams, and leaves with the last one", () => {
    const source = new Source();
    const hub = new WatchHub(source, { stallMs: 60_000, onError: () => undefined });
    const t = topic([]);
    const leaves = Array.from({ length: 100 }, () => hub.join(t, "a", new WatchStream()));
    hub.join(t, "b", new WatchStream());
    expect(source.subscriptions).toBe(2);
    expect(hub.streams("thing", "a")).toBe(100);
    for (const leave of leaves) leave();
    expect(hub.streams("thing", "a")).toBe(0);
    expect(source.listeners.has("thing:a")).toBe(false);
    expect(hub.subscriptions).toBe(1);
  });

  it("presents each update once, in order, and shares it with every stream; repeats and older versions are dropped", async () => {
    const source = new Source();
    const presented: number[] = [];
    const hub = new WatchHub(source, { stallMs: 60_000, onError: () => undefined });
    const streams = Array.from({ length: 50 }, () => new WatchStream());
    for (const s of streams) (hub.join(topic(presented), "a", s), s.start(0));
    const got = streams.map(() => [] as unknown[]);
    const readers = streams.map(async (s, i) => {
      for (let u = await s.next(); u; u = await s.next()) got[i]!.push(u.shared);
    });
    source.publish("a", 1);
    source.publish("a", 2);
    source.publish("a", 2);
    source.publish("a", 1);
    source.publish("a", 3, true);
    await Promise.all(readers);
    expect(presented).toEqual([1, 2, 3]);
    for (const g of got) {
      expect(g).toHaveLength(3);
      g.forEach((shared, i) => expect(shared).toBe(got[0]![i])); // the same object: encoded once
    }
  });

  it("ends a stream whose message waited past the limit with resource_exhausted; a reading one goes on", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "Date"] });
    const source = new Source();
    const hub = new WatchHub(source, { stallMs: 2000, onError: () => undefined });
    const stalled = new WatchStream();
    const reading = new WatchStream();
    hub.join(topic([]), "a", stalled);
    hub.join(topic([]), "a", reading);
    stalled.start(0);
    reading.start(0);
    let taken = 0;
    const reader = (async () => {
      for (let u = await reading.next(); u; u = await reading.next()) taken++;
    })();
    source.publish("a", 1);
    await vi.advanceTimersByTimeAsync(1500);
    expect(stalled.failed).toBeUndefined();
    source.publish("a", 2);
    await vi.advanceTimersByTimeAsync(1000);
    const error = stalled.failed;
    expect(error).toBeInstanceOf(ConnectError);
    expect(error?.code).toBe(Code.ResourceExhausted);
    expect(error?.rawMessage).toMatch(/read nothing for 2 s/);
    expect(reading.failed).toBeUndefined();
    expect(taken).toBe(2);
    reading.end();
    await reader;
  });

  it("ends the entity's streams with unavailable when an update cannot be presented (it may be the end)", async () => {
    const source = new Source();
    const errors: unknown[] = [];
    const base = topic([]);
    const hub = new WatchHub(source, { stallMs: 60_000, onError: (e) => errors.push(e) });
    const failing: WatchTopic<Rec, WatchJobResponse> = {
      ...base,
      message: (eventType, r) => (r.version === 1 ? Promise.reject(new Error("store down")) : base.message(eventType, r)),
    };
    const s = new WatchStream();
    hub.join(failing, "a", s);
    s.start(0);
    source.publish("a", 1);
    await settle();
    expect(errors).toHaveLength(1);
    expect(s.failed?.code).toBe(Code.Unavailable);
    await expect(s.finished).rejects.toBe(s.failed);
    expect(await s.next()).toBeUndefined();
  });
});
