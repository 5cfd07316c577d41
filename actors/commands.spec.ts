// Commands over the bus: one that nobody waits for (a tell) and that the entity could not take
// because its store was down is handed over again by the bus, not dropped; an asked one is answered
// unavailable, for its caller to retry.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../src/bus/memory-bus.js";
import { partitionFor, type ConsumeOptions, type Consumer } from "../src/bus/port.js";
import { topicsFor } from "../src/bus/topics.js";
import { createLogger } from "../src/log.js";
import { FileStore } from "../src/store/file-store.js";
import type { Batch } from "../src/store/port.js";
import { CommandClient, publishUpdate, serveCommands, tell, tellRewrite, UpdatesHub } from "./commands.js";
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

/** A bus that counts the messages each group's handlers took. */
class CountingBus extends MemoryBus {
  readonly handled = new Map<string, number>();
  override consume(options: ConsumeOptions): Promise<Consumer> {
    return super.consume({
      ...options,
      handler: (m) => (this.handled.set(options.group, (this.handled.get(options.group) ?? 0) + 1), options.handler(m)),
    });
  }
}

async function setup(replyPartitions = 1) {
  const store = new FlakyStore(mkdtempSync(path.join(tmpdir(), "commands-")));
  await store.open();
  const bus = new CountingBus();
  await bus.start();
  const topics = topicsFor("t");
  await bus.ensureTopics([
    { topic: topics.commands, partitions: 2 },
    { topic: topics.replies, partitions: replyPartitions },
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

describe("a rewrite over the bus", () => {
  it("the owner writes a failed commit's entity's read models again, handed over until the store takes it", async () => {
    const Repaired: EntityBehavior<{ n: number }, { type: "add" }, { type: "added" }> = {
      ...Counter,
      type: "repaired",
      readModel: (s) => Repaired.repair(s),
      repair: (s) => [{ table: "repaired", id: "r", value: s }],
    };
    const { store, bus, topics, host, consumer } = await setup();
    host.register(Repaired as unknown as EntityBehavior<unknown, unknown, unknown>);
    host.rewritesVia((type, id) => tellRewrite(bus, topics, type, id));
    const client = new CommandClient(bus, topics);
    await client.start();
    expect((await client.ask(Repaired, "r", { type: "add" })).ok).toBe(true);
    // A refused commit elsewhere left its read model (as a fenced Cassandra batch may), then this
    // host's next commit fails, and so does the rewrite's first try.
    await store.commit({ writes: [{ table: "repaired", id: "r", value: { n: 99 } }] });
    store.failures = 2;
    expect((await client.ask(Repaired, "r", { type: "add" })).ok).toBe(false);
    await expect.poll(async () => (await store.get<{ n: number }>("repaired", "r"))?.value.n, { timeout: 5_000 }).toBe(1);
    expect(store.failures).toBe(0);
    await client.stop();
    await consumer.stop();
    host.stop();
    await bus.close();
  });
});

describe("replies", () => {
  it("each asker reads the replies of its id's partition only, not every asker's", async () => {
    const { bus, topics, host, consumer } = await setup(8);
    // Askers until two of them read different partitions (ids are random).
    const clients: CommandClient[] = [];
    while (clients.length < 3 || new Set(clients.map((c) => partitionFor(c.id, 8))).size < 2) {
      const client = new CommandClient(bus, topics);
      await client.start();
      clients.push(client);
    }
    for (const [i, client] of clients.entries()) {
      for (let n = 0; n < 5; n++) expect((await client.ask(Counter, `c${i}`, { type: "add" })).ok).toBe(true);
    }
    for (const client of clients) {
      const sharing = clients.filter((c) => partitionFor(c.id, 8) === partitionFor(client.id, 8));
      expect(bus.handled.get(`${topics.replies}-${client.id}`) ?? 0, client.id).toBe(5 * sharing.length);
    }
    for (const client of clients) await client.stop();
    await consumer.stop();
    host.stop();
    await bus.close();
  });
});

describe("the updates hub", () => {
  it("decodes only the updates of entities someone here follows, and hands each to its listeners", async () => {
    const bus = new MemoryBus();
    await bus.start();
    const topics = topicsFor("u");
    await bus.ensureTopics([{ topic: topics.updates, partitions: 2 }]);
    const warned: unknown[] = [];
    const log = createLogger("silent");
    log.warn = ((o: unknown) => void warned.push(o)) as typeof log.warn;
    const hub = new UpdatesHub(bus, topics, log);
    await hub.start();
    const seen: number[] = [];
    const leave = hub.subscribe("job", "job_1", (u) => seen.push(u.version));
    // Bytes that do not parse: under a key nobody follows they are not even read; under a followed one, skipped with a warning.
    await bus.publish(topics.updates, [{ key: "job:job_2", value: new TextEncoder().encode("not json") }]);
    await publishUpdate(bus, topics, { type: "job", id: "job_2", version: 1, state: {} });
    await publishUpdate(bus, topics, { type: "job", id: "job_1", version: 7, state: {} });
    await bus.publish(topics.updates, [{ key: "job:job_1", value: new TextEncoder().encode("not json") }]);
    await publishUpdate(bus, topics, { type: "job", id: "job_1", version: 8, state: {} });
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual([7, 8]);
    expect(warned).toHaveLength(1);
    leave();
    await hub.stop();
    await bus.close();
  });
});
