import { describe, expect, it } from "vitest";
import { Gather, togetherOrAlone, type Outcome } from "./gather.js";

/** A send that records each request and answers it when told. */
function recorder<I>() {
  const requests: I[][] = [];
  const pending: (() => void)[] = [];
  const send = (items: readonly I[]): Promise<Outcome<string>[]> => {
    requests.push([...items]);
    return new Promise((resolve) => pending.push(() => resolve(items.map((i) => ({ ok: true, value: `done ${String(i)}` })))));
  };
  return { requests, send, answer: () => pending.shift()!() };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("Gather", () => {
  it("sends the items of one turn of the event loop together when nothing is in flight, and gathers those that arrive meanwhile into the next request", async () => {
    const r = recorder<number>();
    const g = new Gather(r.send);
    const first = g.run(1);
    const same = g.run(0);
    expect(r.requests).toEqual([]); // at the end of the turn
    await tick();
    expect(r.requests).toEqual([[1, 0]]); // no timer when idle: the turn's callers together
    const rest = [g.run(2), g.run(3), g.run(4)];
    await tick();
    expect(r.requests).toEqual([[1, 0]]); // one in flight at a time
    r.answer();
    expect(await Promise.all([first, same])).toEqual(["done 1", "done 0"]);
    await tick();
    expect(r.requests).toEqual([
      [1, 0],
      [2, 3, 4],
    ]);
    r.answer();
    expect(await Promise.all(rest)).toEqual(["done 2", "done 3", "done 4"]);
  });

  it("sends at most `most` items in one request", async () => {
    const r = recorder<number>();
    const g = new Gather(r.send, 2);
    const all = [g.run(1), g.run(2), g.run(3), g.run(4), g.run(5)];
    for (let i = 0; i < 3; i++) {
      await tick();
      r.answer();
    }
    await Promise.all(all);
    expect(r.requests).toEqual([[1, 2], [3, 4], [5]]);
  });

  it("fails each item with its own outcome, every item when the send throws, and goes on after", async () => {
    let fail = true;
    const g = new Gather<number, number>(async (items) => {
      if (fail) throw new Error("down");
      return items.map((i) => (i % 2 ? { ok: true, value: i } : { ok: false, error: new Error(`odd only: ${i}`) }));
    });
    await expect(g.run(1)).rejects.toThrow("down");
    fail = false;
    await expect(g.run(3)).resolves.toBe(3);
    await expect(g.run(4)).rejects.toThrow("odd only: 4");
  });

  it("sends each item by itself, at once and side by side, while `alone` says so", async () => {
    const r = recorder<number>();
    let alone = true;
    const g = new Gather(r.send, 64, () => alone);
    const both = [g.run(1), g.run(2)];
    expect(r.requests).toEqual([[1], [2]]);
    r.answer();
    r.answer();
    expect(await Promise.all(both)).toEqual(["done 1", "done 2"]);
    alone = false;
    const gathered = [g.run(3), g.run(4)];
    await tick();
    r.answer();
    await Promise.all(gathered);
    expect(r.requests).toEqual([[1], [2], [3, 4]]); // gathered again
  });
});

describe("togetherOrAlone", () => {
  it("tries the items together once, and alone when together fails: one bad item fails only itself", async () => {
    const calls: number[][] = [];
    const outcomes = await togetherOrAlone([1, 2, 3], async (items) => {
      calls.push([...items]);
      if (items.includes(2)) throw new Error("bad 2");
      return items.map((i) => i * 10);
    });
    expect(calls).toEqual([[1, 2, 3], [1], [2], [3]]);
    expect(outcomes).toEqual([
      { ok: true, value: 10 },
      { ok: false, error: new Error("bad 2") },
      { ok: true, value: 30 },
    ]);
  });

  it("does not try a lone item twice", async () => {
    let calls = 0;
    const outcomes = await togetherOrAlone([7], async () => {
      calls++;
      throw new Error("no");
    });
    expect(calls).toBe(1);
    expect(outcomes).toEqual([{ ok: false, error: new Error("no") }]);
  });
});
