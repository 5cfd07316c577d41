// The contract of the bus port, as vitest blocks every adapter must pass (MemoryBus in the unit
// project, KafkaBus against a real broker in test/cluster). Each test uses its own topic and group
// names, so the suite can share one bus and a broker that keeps data between runs.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { partitionFor } from "./port.js";
import type { Bus, BusMessage, ConsumeOptions, Consumer } from "./port.js";

export interface BusContractOptions {
  /** Per test (and for the bus's start and close). Default 10 s; Kafka needs more (rebalances take seconds). */
  readonly timeoutMs?: number;
  /** How long to keep listening after the expected messages arrived, to catch duplicates. Default 50 ms. */
  readonly settleMs?: number;
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const text = (m: BusMessage) => dec.decode(m.value);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const sorted = (xs: Iterable<number>) => [...xs].sort((a, b) => a - b);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

let serial = 0;
const run = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
/** A topic or group name no other test (or earlier run against the same broker) uses. */
const unique = (prefix: string) => `contract-${prefix}-${run}-${++serial}`;

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** A handler that records what it got, and the member's latest assignment. */
function recorder() {
  const got: BusMessage[] = [];
  const state = { assigned: undefined as readonly number[] | undefined, assignments: [] as Array<readonly number[]> };
  return {
    got,
    state,
    handler: async (m: BusMessage) => {
      got.push(m);
    },
    onAssigned: (p: readonly number[]) => {
      state.assigned = [...p];
      state.assignments.push([...p]);
    },
    texts: () => got.map(text),
  };
}

export function busContract(name: string, make: () => Promise<Bus>, options: BusContractOptions = {}): void {
  const timeout = options.timeoutMs ?? 10_000;
  const settle = options.settleMs ?? 50;
  // Waits inside a test get most of its budget.
  const wait = Math.floor(timeout * 0.8);

  describe(`Bus contract: ${name}`, () => {
    let bus: Bus;
    const open: Consumer[] = [];

    beforeAll(async () => {
      bus = await make();
    }, timeout);
    afterEach(async () => {
      await Promise.allSettled(open.splice(0).map((c) => c.stop()));
    }, timeout);
    afterAll(async () => {
      await bus?.close();
    }, timeout);

    async function consume(o: ConsumeOptions): Promise<Consumer> {
      const c = await bus.consume(o);
      open.push(c);
      return c;
    }

    async function topic(partitions: number): Promise<string> {
      const t = unique("t");
      await bus.ensureTopics([{ topic: t, partitions }]);
      return t;
    }

    const msg = (key: string, value: string, headers?: Record<string, string>) => ({ key, value: enc.encode(value), ...(headers ? { headers } : {}) });

    /** Two members of one group, once they split the partitions between them. */
    async function pair(t: string, partitions: number) {
      const group = unique("g");
      const a = recorder();
      const b = recorder();
      const ca = await consume({ topic: t, group, handler: a.handler, onAssigned: a.onAssigned });
      const cb = await consume({ topic: t, group, handler: b.handler, onAssigned: b.onAssigned });
      await until(
        () => {
          const pa = a.state.assigned ?? [];
          const pb = b.state.assigned ?? [];
          return pa.length > 0 && pb.length > 0 && sorted([...pa, ...pb]).join() === range(partitions).join();
        },
        wait,
        "the two members to split the partitions",
      );
      return { group, a, b, ca, cb };
    }

    it("is healthy once started", async () => {
      expect((await bus.health()).ok).toBe(true);
    });

    it(
      "delivers the messages of one key in order, from one partition, with key and headers",
      async () => {
        const t = await topic(4);
        const r = recorder();
        await consume({ topic: t, group: unique("g"), handler: r.handler });
        for (let batch = 0; batch < 10; batch++) {
          const messages = [];
          for (let i = batch * 10; i < batch * 10 + 10; i++) {
            messages.push(msg("entity-1", `a${i}`, { seq: String(i) }), msg("entity-2", `b${i}`));
          }
          await bus.publish(t, messages);
        }
        await until(() => r.got.length >= 200, wait, "200 messages");
        for (const [key, prefix] of [
          ["entity-1", "a"],
          ["entity-2", "b"],
        ] as const) {
          const mine = r.got.filter((m) => m.key === key);
          expect(mine.map(text)).toEqual(range(100).map((i) => `${prefix}${i}`));
          expect(new Set(mine.map((m) => m.partition))).toEqual(new Set([partitionFor(key, 4)]));
          const offsets = mine.map((m) => BigInt(m.offset));
          for (let i = 1; i < offsets.length; i++) expect(offsets[i]! > offsets[i - 1]!).toBe(true);
          for (const m of mine) expect(m.topic).toBe(t);
        }
        const first = r.got.find((m) => m.key === "entity-1")!;
        expect(first.headers).toEqual({ seq: "0" });
        expect(r.got.find((m) => m.key === "entity-2")!.headers).toEqual({});
      },
      timeout,
    );

    it(
      "spreads keys over the partitions the way Kafka's default partitioner does",
      async () => {
        const t = await topic(4);
        const r = recorder();
        await consume({ topic: t, group: unique("g"), handler: r.handler });
        const keys = range(64).map((i) => `job_${i.toString(36)}x${i * 7919}`);
        await bus.publish(
          t,
          keys.map((k) => msg(k, k)),
        );
        await bus.publish(
          t,
          keys.map((k) => msg(k, `${k}-again`)),
        );
        await until(() => r.got.length >= 128, wait, "128 messages");
        for (const m of r.got) expect(m.partition, m.key).toBe(partitionFor(m.key, 4));
        expect(new Set(r.got.map((m) => m.partition))).toEqual(new Set([0, 1, 2, 3]));
      },
      timeout,
    );

    it(
      "splits the partitions between two members of a group; together they get every message once",
      async () => {
        const t = await topic(4);
        const { a, b } = await pair(t, 4);
        const pa = a.state.assigned!;
        const pb = b.state.assigned!;
        expect(pa.filter((p) => pb.includes(p))).toEqual([]);
        await bus.publish(
          t,
          range(200).map((i) => msg(`k${i}`, `m${i}`)),
        );
        await until(() => a.got.length + b.got.length >= 200, wait, "200 messages");
        await sleep(settle);
        const all = [...a.texts(), ...b.texts()];
        expect(all).toHaveLength(200);
        expect(new Set(all).size).toBe(200);
        expect(a.got.length).toBeGreaterThan(0);
        expect(b.got.length).toBeGreaterThan(0);
        for (const m of a.got) expect(pa).toContain(m.partition);
        for (const m of b.got) expect(pb).toContain(m.partition);
      },
      timeout,
    );

    it(
      "hands a stopped member's partitions to the one that stays",
      async () => {
        const t = await topic(4);
        const { a, b, cb } = await pair(t, 4);
        await bus.publish(
          t,
          range(40).map((i) => msg(`k${i}`, `first${i}`)),
        );
        await until(() => a.got.length + b.got.length >= 40, wait, "the first 40 messages");
        await cb.stop();
        expect(b.state.assigned).toEqual([]);
        await until(() => (a.state.assigned ?? []).join() === "0,1,2,3", wait, "the remaining member to own every partition");
        const bBefore = b.got.length;
        await bus.publish(
          t,
          range(40).map((i) => msg(`k${i}`, `second${i}`)),
        );
        await until(() => a.texts().filter((s) => s.startsWith("second")).length >= 40, wait, "the next 40 messages at the remaining member");
        await sleep(settle);
        expect(b.got.length).toBe(bBefore);
        const second = a.texts().filter((s) => s.startsWith("second"));
        expect(sorted(second.map((s) => Number(s.slice(6))))).toEqual(range(40));
        const first = [...a.texts(), ...b.texts()].filter((s) => s.startsWith("first"));
        expect(first).toHaveLength(40); // committed before the stop: nothing handled twice
      },
      timeout,
    );

    it(
      "delivers a message again when its handler throws; later messages of its partition wait",
      async () => {
        const t = await topic(4);
        const key = "flaky";
        const home = partitionFor(key, 4);
        const other = range(100)
          .map((i) => `other${i}`)
          .find((k) => partitionFor(k, 4) !== home)!;
        // Each attempt with the offset it was read at. A producer that retries a send whose first
        // try was written after all (Kafka without an idempotent producer, on a loaded machine)
        // puts a second copy of a value in the log at another offset: the consumer's behaviour is
        // judged on the offsets each value was first read at.
        const attempts: Array<{ value: string; offset: string }> = [];
        const done: Array<{ value: string; offset: string; at: number }> = [];
        let failuresLeft = 2;
        await consume({
          topic: t,
          group: unique("g"),
          handler: async (m) => {
            const v = text(m);
            attempts.push({ value: v, offset: `${m.partition}:${m.offset}` });
            if (v === "f3" && failuresLeft > 0) {
              failuresLeft--;
              throw new Error("handler failed");
            }
            done.push({ value: v, offset: `${m.partition}:${m.offset}`, at: Date.now() });
          },
        });
        await bus.publish(t, [...range(10).map((i) => msg(key, `f${i}`)), msg(other, "o0")]);
        await until(() => done.length >= 11, wait, "every message handled");
        await sleep(settle);
        const firstOffset = new Map<string, string>();
        for (const a of attempts) if (!firstOffset.has(a.value)) firstOffset.set(a.value, a.offset);
        const original = (a: { value: string; offset: string }) => firstOffset.get(a.value) === a.offset;
        const flaky = attempts.filter((a) => a.value.startsWith("f") && original(a)).map((a) => a.value);
        expect(flaky, JSON.stringify(attempts)).toEqual(["f0", "f1", "f2", "f3", "f3", "f3", "f4", "f5", "f6", "f7", "f8", "f9"]);
        expect(done.filter((d) => d.value.startsWith("f") && original(d)).map((d) => d.value)).toEqual(range(10).map((i) => `f${i}`));
        // The other partition was not held up by the retries (they back off for at least 300 ms).
        const at = (v: string) => done.find((d) => d.value === v)!.at;
        expect(at("o0")).toBeLessThan(at("f3"));
      },
      timeout,
    );

    it(
      "keeps committed offsets: a new consumer of the group gets only what was not handled",
      async () => {
        const t = await topic(2);
        const group = unique("g");
        const first = recorder();
        const c1 = await consume({ topic: t, group, handler: first.handler });
        await bus.publish(
          t,
          range(10).map((i) => msg(`k${i}`, `old${i}`)),
        );
        await until(() => first.got.length >= 10, wait, "the first 10 messages");
        await c1.stop();
        await bus.publish(
          t,
          range(10).map((i) => msg(`k${i}`, `new${i}`)),
        );
        const second = recorder();
        await consume({ topic: t, group, handler: second.handler });
        await until(() => second.got.length >= 10, wait, "the next 10 messages");
        await sleep(settle);
        expect(first.got).toHaveLength(10);
        expect(sorted(second.texts().map((s) => Number(s.replace(/^\D+/, ""))))).toEqual(range(10));
        expect(second.texts().every((s) => s.startsWith("new"))).toBe(true);
      },
      timeout,
    );

    it(
      "gives every message to each of two groups (broadcast)",
      async () => {
        const t = await topic(3);
        const x = recorder();
        const y = recorder();
        await consume({ topic: t, group: unique("g"), handler: x.handler });
        await consume({ topic: t, group: unique("g"), handler: y.handler });
        await bus.publish(
          t,
          range(50).map((i) => msg(`k${i}`, `m${i}`)),
        );
        await until(() => x.got.length >= 50 && y.got.length >= 50, wait, "50 messages in each group");
        await sleep(settle);
        expect(sorted(x.texts().map((s) => Number(s.slice(1))))).toEqual(range(50));
        expect(sorted(y.texts().map((s) => Number(s.slice(1))))).toEqual(range(50));
      },
      timeout,
    );

    it(
      "gives a group that reads only some partitions (only) their messages and no other, beside a group that reads all",
      async () => {
        const t = await topic(4);
        const mine = recorder();
        const all = recorder();
        await consume({ topic: t, group: unique("g"), handler: mine.handler, onAssigned: mine.onAssigned, fromLatest: true, only: (n) => [1, n - 1] });
        await consume({ topic: t, group: unique("g"), handler: all.handler, fromLatest: true });
        await until(() => mine.state.assigned !== undefined, wait, "the partitions of the group that reads some");
        expect(mine.state.assigned).toEqual([1, 3]);
        const keys = range(60).map((i) => `key-${i}`);
        await bus.publish(
          t,
          keys.map((k) => msg(k, k)),
        );
        const theirs = keys.filter((k) => [1, 3].includes(partitionFor(k, 4)));
        expect(theirs.length).toBeGreaterThan(0);
        expect(theirs.length).toBeLessThan(keys.length);
        await until(
          () => all.got.length >= keys.length && mine.got.length >= theirs.length,
          wait,
          "every message in the group that reads all, theirs in the other",
        );
        await sleep(settle);
        expect(mine.got.map((m) => m.key).sort()).toEqual([...theirs].sort());
        expect(all.got.length).toBe(keys.length);
      },
      timeout,
    );

    it(
      "starts a new fromLatest group at the end of the log, and misses nothing published after consume()",
      async () => {
        const t = await topic(2);
        await bus.publish(
          t,
          range(10).map((i) => msg(`k${i}`, `history${i}`)),
        );
        const r = recorder();
        await consume({ topic: t, group: unique("g"), handler: r.handler, fromLatest: true });
        await bus.publish(
          t,
          range(5).map((i) => msg(`k${i}`, `live${i}`)),
        );
        await until(() => r.got.length >= 5, wait, "the 5 live messages");
        await sleep(settle);
        expect(sorted(r.texts().map((s) => Number(s.slice(4))))).toEqual(range(5));
        expect(r.texts().every((s) => s.startsWith("live"))).toBe(true);
      },
      timeout,
    );

    it(
      "ensureTopics is idempotent and leaves existing topics alone",
      async () => {
        const t = unique("t");
        const u = unique("t");
        await bus.ensureTopics([{ topic: t, partitions: 3 }]);
        await bus.ensureTopics([{ topic: t, partitions: 3 }]);
        await bus.ensureTopics([
          { topic: t, partitions: 6 },
          { topic: u, partitions: 2 },
        ]);
        const r = recorder();
        await consume({ topic: t, group: unique("g"), handler: r.handler, onAssigned: r.onAssigned });
        expect(r.state.assigned).toEqual([0, 1, 2]);
        await bus.publish(
          t,
          range(30).map((i) => msg(`k${i}`, `m${i}`)),
        );
        await bus.publish(u, [msg("k", "v")]);
        await until(() => r.got.length >= 30, wait, "30 messages");
        for (const m of r.got) expect(m.partition).toBe(partitionFor(m.key, 3));
      },
      timeout,
    );
  });
}
