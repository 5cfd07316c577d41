// The actors on the bus. Commands: the gateway side publishes a command to topic "commands" keyed
// by the entity, and awaits the reply on "replies" (keyed by its own id, whose partition alone it
// reads: its own replies and few others'); the actor-host side consumes "commands" as one consumer
// group, so partition ownership decides which host owns an entity, runs the command on its actor,
// publishes the reply, and only then lets the offset be committed. A host takes each
// assigned partition's epoch (ActorHost.own) before its first command, and every append it makes
// there is fenced by it, so a host that missed a rebalance cannot overwrite its successor.
// A gateway may also send its asks straight to the owning host (actors/direct.ts), which it learns
// from the `direct` header of the replies Kafka brings it; Kafka stays the route of record.
// Updates: an entity's `update` intent publishes its new state (without secrets) on "updates";
// every gateway reads all of it (Watch streams) through its own one-member group, from the end of
// the log.
import { Code } from "@connectrpc/connect";
import { partitionFor, type Bus, type BusMessage, type Consumer } from "../src/bus/port.js";
import { randomToken } from "../src/ids.js";
import type { Logger } from "../src/log.js";
import type { Topics } from "../src/bus/topics.js";
import type { DirectRoutes, DirectServer } from "./direct.js";
import { entity, type EntityRef } from "./entity.js";
import type { ActorHost, AskOptions, Reply } from "./host.js";

export { topicsFor, type Topics } from "../src/bus/topics.js";

/** Something that runs a command on an entity's actor, wherever that actor lives. */
export interface EntityCommands {
  ask<C, R>(ref: EntityRef<C, R>, id: string, command: C, options?: AskOptions): Promise<Reply<R>>;
}

interface CommandEnvelope {
  readonly type: string;
  readonly id: string;
  readonly command: unknown;
  /** No command: the entity writes its read models again (ActorHost.rewrite). */
  readonly rewrite?: true;
}

const decoder = new TextDecoder();
// Buffer.from, not TextEncoder: small values come from a shared pool, and every update is encoded so.
const encode = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value), "utf8");
const decode = <T>(bytes: Uint8Array) => JSON.parse(decoder.decode(bytes)) as T;

/** Gateway side. */
export class CommandClient implements EntityCommands {
  readonly id = `gw_${randomToken(12)}`;
  private readonly pending = new Map<string, { resolve: (r: Reply<unknown>) => void; timer: NodeJS.Timeout; forget?: () => void }>();
  private consumer: Consumer | undefined;

  constructor(
    private readonly bus: Bus,
    private readonly topics: Topics,
    private readonly timeoutMs = 15_000,
    /** Routes straight to the owning hosts (gateways only); without them every command goes by Kafka. */
    private readonly direct?: DirectRoutes,
  ) {}

  /** Joins the replies topic and resolves once this client can receive replies. */
  async start(): Promise<void> {
    let ready!: () => void;
    const assigned = new Promise<void>((r) => (ready = r));
    this.consumer = await this.bus.consume({
      topic: this.topics.replies,
      group: `${this.topics.replies}-${this.id}`,
      fromLatest: true,
      // Replies are keyed by the asker's id: this client reads their partition, not every gateway's replies.
      only: (partitions) => [partitionFor(this.id, partitions)],
      onAssigned: (partitions) => {
        if (partitions.length > 0) ready();
      },
      handler: async (m) => this.onReply(m),
    });
    await assigned;
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.resolve({ ok: false, rejection: { code: Code.Unavailable, message: "the gateway is shutting down; retry" } });
    }
    this.pending.clear();
    this.direct?.close();
  }

  async ask<C, R>(ref: EntityRef<C, R>, id: string, command: C, options?: AskOptions): Promise<Reply<R>> {
    const correlation = randomToken(16);
    const reply = new Promise<Reply<R>>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.get(correlation)?.forget?.();
        this.pending.delete(correlation);
        resolve({ ok: false, rejection: { code: Code.Unavailable, message: "the command was not answered in time; retry with the same Idempotency-Key" } });
      }, this.timeoutMs);
      this.pending.set(correlation, { resolve: resolve as (r: Reply<unknown>) => void, timer });
    });
    const byBus = () => this.publish(correlation, ref.type, id, command);
    const forget = this.direct?.send(
      { c: correlation, t: ref.type, i: id, m: command },
      (r) => this.settle(correlation, r),
      () => {
        // Moved or lost on the way: the same command by Kafka, if its asker still waits.
        const p = this.pending.get(correlation);
        if (!p) return;
        delete p.forget;
        byBus();
      },
      options?.fresh,
    );
    if (forget) this.pending.get(correlation)!.forget = forget;
    else byBus();
    return reply;
  }

  private publish(correlation: string, type: string, id: string, command: unknown): void {
    const envelope: CommandEnvelope = { type, id, command };
    // Not awaited: the reply's own deadline bounds the call even while the bus retries a publish.
    this.bus
      .publish(this.topics.commands, [{ key: `${type}:${id}`, value: encode(envelope), headers: { "reply-to": this.id, correlation } }])
      .catch((e: unknown) =>
        this.settle(correlation, { ok: false, rejection: { code: Code.Unavailable, message: `the command bus refused the command: ${(e as Error).message}` } }),
      );
  }

  private settle(correlation: string, reply: Reply<unknown>): void {
    const p = this.pending.get(correlation);
    if (!p) return;
    clearTimeout(p.timer);
    this.pending.delete(correlation);
    p.resolve(reply);
  }

  /** A command that needs no answer (a progress report): published, and no reply is asked for. */
  tell<C, R>(ref: EntityRef<C, R>, id: string, command: C): Promise<void> {
    return tell(this.bus, this.topics, ref, id, command);
  }

  private onReply(m: BusMessage): void {
    if (m.headers["reply-to"] !== this.id) return;
    // The host that answered serves that partition, and takes commands straight (actors/direct.ts).
    const address = m.headers.direct;
    const partition = Number(m.headers.partition);
    const epoch = m.headers.epoch ? Number(m.headers.epoch) : undefined;
    if (this.direct && address && Number.isInteger(partition)) this.direct.learn(partition, address, Number.isInteger(epoch) ? epoch : undefined);
    this.settle(m.headers.correlation ?? "", decode<Reply<unknown>>(m.value));
  }
}

/**
 * Whether this host owns a key's command partition: sweeps over shared tables act only on the
 * entities whose commands this host serves.
 */
export function ownedKeys(owned: readonly number[], partitions: number): (key: string) => boolean {
  const mine = new Set(owned);
  return (key) => mine.has(partitionFor(key, partitions));
}

/** How long a told command the entity cannot take (its store is down) is handed over again before it is dropped. */
export const TOLD_RETRY_MS = 5 * 60_000;

/** Sends a command that needs no answer (a fan-out, a report): published, not awaited by anyone. */
export function tell<C, R>(bus: Bus, topics: Topics, ref: EntityRef<C, R>, id: string, command: C): Promise<void> {
  return publishCommand(bus, topics, { type: ref.type, id, command });
}

/**
 * Has the entity's owner write its read models again (ActorHost.rewritesVia): a commit of it failed
 * here, and may have landed them without its events. Told like a report: handed over again while
 * the entity cannot take it.
 */
export function tellRewrite(bus: Bus, topics: Topics, type: string, id: string): Promise<void> {
  return publishCommand(bus, topics, { type, id, command: null, rewrite: true });
}

/** A command nobody waits for, keyed by its entity. */
function publishCommand(bus: Bus, topics: Topics, envelope: CommandEnvelope): Promise<void> {
  return bus.publish(topics.commands, [{ key: `${envelope.type}:${envelope.id}`, value: encode(envelope) }]);
}

/** Actor-host side: serves the commands of the partitions this host owns, for the types registered with it. */
export async function serveCommands(
  bus: Bus,
  topics: Topics,
  actors: ActorHost,
  log: Logger,
  onAssigned: (partitions: readonly number[]) => void = () => undefined,
  /** This host's direct commands (its address named in its replies); undefined when it serves none. */
  direct?: Pick<DirectServer, "address" | "ran" | "remember">,
): Promise<Consumer> {
  /** Told commands being handed over again, by partition and offset: since when. */
  const failing = new Map<string, number>();
  return bus.consume({
    topic: topics.commands,
    group: topics.actorHosts,
    // Each entity's commands in order (its key), different entities of a partition side by side.
    byKey: true,
    // Another host may have owned these entities: drop every cached actor and recover from the store.
    onAssigned: (partitions, member) => {
      actors.own(partitions, member);
      log.info({ partitions }, "command partitions assigned");
      onAssigned(partitions);
    },
    handler: async (m) => {
      // The shard's epoch first: every append of this command is fenced by it.
      await actors.ready(m.partition);
      const envelope = decode<CommandEnvelope>(m.value);
      const replyTo = m.headers["reply-to"];
      // A command this host already ran from a gateway's direct link, sent again by Kafka when the
      // link failed, is answered as it was; one that could not be taken then runs now.
      const correlation = m.headers.correlation ?? "";
      const earlier = replyTo ? direct?.ran(correlation) : undefined;
      const answered = earlier && (await earlier);
      let reply: Reply<unknown>;
      if (answered && (answered.ok || answered.rejection.code !== Code.Unavailable)) reply = answered;
      else {
        const ref = entity(envelope.type);
        const running: Promise<Reply<unknown>> = actors.runs(envelope.type)
          ? (envelope.rewrite === true ? actors.rewrite(ref, envelope.id) : actors.ask(ref, envelope.id, envelope.command)).catch((e: unknown) => ({
              ok: false as const,
              rejection: { code: Code.Unavailable, message: `the actor did not answer: ${(e as Error).message}` },
            }))
          : Promise.resolve({ ok: false, rejection: { code: Code.Internal, message: `no actor of type ${envelope.type}` } });
        // A direct copy of it that comes late is answered with this reply, not run again.
        if (replyTo) direct?.remember(correlation, running);
        reply = await running;
      }
      // A command nobody waits for (a report, an enqueue, a video told how its job ended) that the
      // entity could not take now (its store is down) is not dropped: the bus hands it over again,
      // for up to TOLD_RETRY_MS, after which it is dropped with an error (an entity that can never
      // take it must not hold its partition forever). Asked commands are answered; callers retry.
      const id = `${m.partition}:${m.offset}`;
      if (!replyTo && !reply.ok && reply.rejection.code === Code.Unavailable) {
        const since = failing.get(id) ?? Date.now();
        if (Date.now() - since < TOLD_RETRY_MS) {
          failing.set(id, since);
          throw new Error(`${envelope.type} ${envelope.id}: ${reply.rejection.message}`);
        }
        log.error({ entity: `${envelope.type}:${envelope.id}`, reason: reply.rejection.message }, "a told command was not taken for too long; dropped");
      }
      failing.delete(id);
      if (replyTo) {
        const headers: Record<string, string> = { "reply-to": replyTo, correlation: m.headers.correlation ?? "" };
        if (direct) Object.assign(headers, { direct: direct.address, partition: String(m.partition), epoch: String(actors.epochOf(m.partition) ?? "") });
        await bus.publish(topics.replies, [{ key: replyTo, value: encode(reply), headers }]);
      }
    },
  });
}

// ── updates ──

export interface EntityUpdate<S = unknown> {
  readonly type: string;
  readonly id: string;
  /** Orders updates of one entity; a subscriber drops any at or below what it has shown. */
  readonly version: number;
  readonly state: S;
}

export function publishUpdate(bus: Bus, topics: Topics, update: EntityUpdate): Promise<void> {
  return bus.publish(topics.updates, [{ key: `${update.type}:${update.id}`, value: encode(update) }]);
}

type Listener = (update: EntityUpdate) => void;

export class UpdatesHub {
  private readonly listeners = new Map<string, Set<Listener>>();
  private consumer: Consumer | undefined;

  constructor(
    private readonly bus: Bus,
    private readonly topics: Topics,
    private readonly log: Logger,
  ) {}

  /** Resolves once this process receives every update published from now on. */
  async start(): Promise<void> {
    let ready!: () => void;
    const assigned = new Promise<void>((r) => (ready = r));
    this.consumer = await this.bus.consume({
      topic: this.topics.updates,
      group: `${this.topics.updates}-${randomToken(12)}`,
      fromLatest: true,
      onAssigned: (partitions) => {
        if (partitions.length > 0) ready();
      },
      handler: async (m) => {
        // The key names the entity (publishUpdate): an update nobody here follows is not decoded.
        if (!this.listeners.has(m.key)) return;
        let update: EntityUpdate;
        try {
          update = decode<EntityUpdate>(m.value);
        } catch (e) {
          this.log.warn({ err: e }, "unreadable update skipped");
          return;
        }
        for (const l of this.listeners.get(`${update.type}:${update.id}`) ?? []) l(update);
      },
    });
    await assigned;
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
  }

  /** Updates of one entity; returns the unsubscribe function. */
  subscribe(type: string, id: string, listener: Listener): () => void {
    const key = `${type}:${id}`;
    let set = this.listeners.get(key);
    if (!set) this.listeners.set(key, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(key);
    };
  }
}
