// Commands over the bus: one that nobody waits for (a tell) and that the entity could not take
// because its store was down is handed over again by the bus, not dropped; an asked one is answered
// unavailable, for its caller to retry.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../src/bus/memory-bus.js";
import { topicsFor } from "../src/bus/topics.js";
import { createLogger } from "../src/log.js";
import { FileStore } from "../src/store/file-store.js";
import type { Batch } from "../src/store/port.js";
import { CommandClient, serveCommands, tell } from "./commands.js";
import { ActorHost, type EntityBehavior } from "./host.js";

const Counter: EntityBehavior<{ n: number }, { type: "add" }, { type: "added" }> = {
  type: "counter",
  initial: { n: 0 },
  decide: () => [{ type: "added" }],
  fold: (s) => ({ n: s.n + 1 }),
  readModel: (s) => [{ table: "counters", id: "c", value: s }],
  repair: () => [],
};

/** A store whose next `failures` commits fail, as when the database goes down. */
class FlakyStore extends FileStore {
  failures = 0;
  override async commit(batch: Batch): Promise<void> {
    if (this.failures > 0) {
      this.failures--;
      throw new Error("database down");
    }
    return super.commit(batch);
  }
}

async function setup() {
  const store = new FlakyStore(mkdtempSync(path.join(tmpdir(), "commands-")));
  await store.open();
  const bus = new MemoryBus();
  await bus.start();
  const topics = topicsFor("t");
  await bus.ensureTopics([
    { topic: topics.commands, partitions: 2 },
    { topic: topics.replies, partitions: 1 },
  ]);
  const host = new ActorHost(store, createLogger("silent")).register(Counter as unknown as EntityBehavior<unknown, unknown, unknown>);
  const consumer = await serveCommands(bus, topics, host, createLogger("silent"));
  return { store, bus, topics, host, consumer };
}

describe("commands over the bus", () => {
  it("a told command the store could not take is delivered again until it is", async () => {
    const { store, bus, topics, host, consumer } = await setup();
    store.failures = 2;
    await tell(bus, topics, Counter, "c1", { type: "add" });
    await expect.poll(async () => (await store.get<{ n: number }>("counters", "c"))?.value.n, { timeout: 5_000 }).toBe(1);
    expect(store.failures).toBe(0);
    await consumer.stop();
    host.stop();
    await bus.close();
  });

  it("an asked command the store could not take is answered unavailable, once", async () => {
    const { store, bus, topics, host, consumer } = await setup();
    const client = new CommandClient(bus, topics);
    await client.start();
    store.failures = 1;
    const reply = await client.ask(Counter, "c1", { type: "add" });
    expect(reply).toEqual({ ok: false, rejection: { code: expect.any(Number), message: "the write did not complete; retry" } });
    expect((await client.ask(Counter, "c1", { type: "add" })).ok).toBe(true);
    expect((await store.get<{ n: number }>("counters", "c"))?.value.n).toBe(1);
    await client.stop();
    await consumer.stop();
    host.stop();
    await bus.close();
  });
});
