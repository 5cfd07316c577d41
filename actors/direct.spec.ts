// The direct commands link (direct.ts) between a gateway's routes and an actor host, on loopback:
// answered by the host serving the partition; "moved" (sent again by the caller's Kafka path) when it
// does not; a peer without the server secret's proof, or a frame past the limit, closes the link.
import { createHmac } from "node:crypto";
import { mkdtempSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryBus } from "../src/bus/memory-bus.js";
import { partitionFor, type BusMessage } from "../src/bus/port.js";
import { topicsFor } from "../src/bus/topics.js";
import { createLogger } from "../src/log.js";
import { FileStore } from "../src/store/file-store.js";
import { serveCommands } from "./commands.js";
import { directKey, DirectRoutes, MAX_FRAME_BYTES, serveDirect, type DirectServer } from "./direct.js";
import { ActorHost, type EntityBehavior, type Reply } from "./host.js";

const Counter: EntityBehavior<{ n: number }, { type: "add" }, { type: "added" }> = {
  type: "counter",
  initial: { n: 0 },
  decide: () => [{ type: "added" }],
  fold: (s) => ({ n: s.n + 1 }),
  readModel: () => [],
  repair: () => [],
};

const PARTITIONS = 4;
const log = createLogger("silent");
const key = directKey("a server secret");
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A host (fencing by epoch when its store takes epochs), its direct server and a gateway's routes. */
async function setup<S extends FileStore>(
  store: S = new FileStore(mkdtempSync(path.join(tmpdir(), "direct-"))) as S,
): Promise<{ host: ActorHost; server: DirectServer; routes: DirectRoutes; store: S }> {
  await store.open();
  const host = new ActorHost(store, log, 10_000, undefined, { scope: "s", partitions: PARTITIONS }).register(
    Counter as unknown as EntityBehavior<unknown, unknown, unknown>,
  );
  const server = await serveDirect(host, { key, listenHost: "127.0.0.1", listenPort: 0, advertiseHost: "127.0.0.1", partitions: PARTITIONS }, log);
  const routes = new DirectRoutes(key, PARTITIONS, log);
  cleanups.push(
    () => host.stop(),
    () => server.close(),
    () => routes.close(),
  );
  return { host, server, routes, store };
}

/** Sends one command through the routes: its reply, why it went back ("moved", "lost"), or "no route". */
function send(routes: DirectRoutes, id: string): Promise<Reply<unknown> | "moved" | "lost" | "no route"> {
  return new Promise((resolve) => {
    const sent = routes.send({ c: `c-${id}-${Math.random()}`, t: Counter.type, i: id, m: { type: "add" } }, resolve, resolve);
    if (!sent) resolve("no route");
  });
}

const shardOf = (id: string) => partitionFor(`${Counter.type}:${id}`, PARTITIONS);

describe("direct commands", () => {
  it("are answered by the host that serves the partition, and sent back where it does not", async () => {
    const { host, server, routes } = await setup();
    host.own([0, 1, 2, 3]);
    expect(await send(routes, "a")).toBe("no route");
    routes.learn(shardOf("a"), server.address);
    expect(await send(routes, "a")).toEqual({ ok: true, state: { n: 1 } });
    expect(await send(routes, "a")).toEqual({ ok: true, state: { n: 2 } });
    // The partition moved away: the host answers "moved", and the route is forgotten.
    host.own([0, 1, 2, 3].filter((p) => p !== shardOf("a")));
    expect(await send(routes, "a")).toBe("moved");
    expect(await send(routes, "a")).toBe("no route");
  });

  it("close the link of a peer without the server secret's proof: its commands go back", async () => {
    const { host, server } = await setup();
    host.own([0, 1, 2, 3]);
    const stranger = new DirectRoutes(directKey("another secret"), PARTITIONS, log);
    cleanups.push(() => stranger.close());
    stranger.learn(shardOf("b"), server.address);
    expect(await send(stranger, "b")).toBe("lost");
    // The address failed: what the replies teach about it is ignored for a while.
    stranger.learn(shardOf("b"), server.address);
    expect(await send(stranger, "b")).toBe("no route");
  });

  it("close a connection that announces a frame past the limit, or sends no proof", async () => {
    const { server } = await setup();
    const port = Number(server.address.split(":")[1]);
    const closed = (write: (s: net.Socket, hello: Buffer) => void) =>
      new Promise<void>((resolve) => {
        const s = net.connect({ host: "127.0.0.1", port });
        s.once("data", (hello) => write(s, hello));
        s.on("error", () => undefined);
        s.on("close", () => resolve());
      });
    // A right proof, then a frame header past MAX_FRAME_BYTES.
    await closed((s, hello) => {
      s.write(createHmac("sha256", key).update(hello.subarray(4, 36)).digest());
      const head = Buffer.alloc(4);
      head.writeUInt32BE(MAX_FRAME_BYTES + 1);
      s.write(head);
    });
    // A wrong proof.
    await closed((s) => s.write(Buffer.alloc(32)));
  });

  it("a command a host ran from a link and then got again by Kafka (same correlation) is answered as it was, not run twice", async () => {
    const { host, server, routes } = await setup();
    const bus = new MemoryBus();
    await bus.start();
    const topics = topicsFor("d");
    await bus.ensureTopics([
      { topic: topics.commands, partitions: PARTITIONS },
      { topic: topics.replies, partitions: 1 },
    ]);
    const consumer = await serveCommands(bus, topics, host, log, () => undefined, server);
    const replies: BusMessage[] = [];
    const reader = await bus.consume({ topic: topics.replies, group: "test", handler: async (m) => void replies.push(m) });
    cleanups.push(
      () => bus.close(),
      () => consumer.stop(),
      () => reader.stop(),
    );
    await expect.poll(() => host.serves(shardOf("d"))).toBe(true);
    routes.learn(shardOf("d"), server.address);
    const correlation = "c-lost-link";
    const direct = await new Promise((resolve) => routes.send({ c: correlation, t: Counter.type, i: "d", m: { type: "add" } }, resolve, resolve));
    expect(direct).toEqual({ ok: true, state: { n: 1 } });
    const byKafka = (c: string) =>
      bus.publish(topics.commands, [
        {
          key: `${Counter.type}:d`,
          value: Buffer.from(JSON.stringify({ type: Counter.type, id: "d", command: { type: "add" } })),
          headers: { "reply-to": "gw", correlation: c },
        },
      ]);
    await byKafka(correlation);
    await expect.poll(() => replies.length).toBe(1);
    expect(JSON.parse(Buffer.from(replies[0]!.value).toString())).toEqual({ ok: true, state: { n: 1 } });
    // The routes learn the host's address from its replies by Kafka.
    expect(replies[0]!.headers).toMatchObject({ direct: server.address, partition: String(shardOf("d")) });
    // Another command (another correlation) runs.
    await byKafka("c-other");
    await expect.poll(() => replies.length).toBe(2);
    expect(JSON.parse(Buffer.from(replies[1]!.value).toString())).toEqual({ ok: true, state: { n: 2 } });
  });

  it("start the actor of a fresh create empty, without recovery reads, only when it was sent for the host's epoch", async () => {
    class EpochStore extends FileStore {
      epochs = 0;
      reads = 0;
      async takeEpoch(): Promise<number> {
        return ++this.epochs;
      }
      override async latestSnapshot(key: string) {
        this.reads++;
        return super.latestSnapshot(key);
      }
      override async events(key: string, afterSeq: number) {
        this.reads++;
        return super.events(key, afterSeq);
      }
    }
    const { host, server, routes, store } = await setup(new EpochStore(mkdtempSync(path.join(tmpdir(), "direct-fresh-"))));
    host.own([0, 1, 2, 3]);
    for (const p of [0, 1, 2, 3]) await host.ready(p);
    const sendFresh = (id: string) =>
      new Promise((resolve) => routes.send({ c: `c-${id}`, t: Counter.type, i: id, m: { type: "add" } }, resolve, resolve, true));
    const epoch = host.epochOf(shardOf("f1"))!;
    expect(epoch).toBeGreaterThan(0);

    routes.learn(shardOf("f1"), server.address, epoch);
    expect(await sendFresh("f1")).toEqual({ ok: true, state: { n: 1 } });
    expect(store.reads).toBe(0);
    // Sent for another epoch (the host took the shard again since): recovered as any entity is.
    routes.learn(shardOf("f2"), server.address, epoch + 1);
    expect(await sendFresh("f2")).toEqual({ ok: true, state: { n: 1 } });
    expect(store.reads).toBe(2);
    // Without the gateway's word that the id is new: recovered.
    routes.learn(shardOf("f3"), server.address, epoch);
    expect(await new Promise((resolve) => routes.send({ c: "c-f3", t: Counter.type, i: "f3", m: { type: "add" } }, resolve, resolve))).toEqual({
      ok: true,
      state: { n: 1 },
    });
    expect(store.reads).toBe(4);
  });
});
