// The gateway's Watch fan-out: one subscription per entity to the updates source (the in-process
// hub, or the `updates` topic in cluster mode) however many streams watch it. Each update is
// presented once, in order, and offered to every stream as one shared message; streams that let a
// message wait longer than the stall limit (a client that reads nothing) are ended with an error.
import { Code } from "@connectrpc/connect";
import type { DescMessage, Message } from "@bufbuild/protobuf";
import type { EntityUpdate, UpdatesHub } from "../../actors/commands.js";
import { apiError } from "../../src/errors.js";
import { watchStreamStalled, watchUpdatesSuperseded } from "../../src/metrics.js";
import { SharedMessage } from "./frames.js";
import { WatchStream } from "./stream.js";

/** What the fan-out knows of one kind of entity: how to read its record from an update, and to present it. */
export interface WatchTopic<R extends { readonly version: number }, M extends Message = Message> {
  /** The entity type on the updates source. */
  readonly type: string;
  /** The Watch response message. */
  readonly schema: DescMessage;
  record(state: unknown): R | undefined;
  /** The name of the stream's last message when the record is final, undefined while the stream goes on. */
  terminal(record: R): string | undefined;
  /** The response message of one event. */
  message(eventType: string, record: R): M | Promise<M>;
}

interface Entity {
  readonly streams: Set<WatchStream>;
  readonly unsubscribe: () => void;
  /** The newest version presented; older and repeated updates (at-least-once delivery) are dropped. */
  version: number;
  /** Updates are presented one after the other, so streams see versions in order. */
  chain: Promise<void>;
}

export interface WatchHubOptions {
  /** How long a message may wait for a stream's writer before the stream is ended (MEDIA_WATCH_STALL_SECONDS). */
  readonly stallMs: number;
  /** Reports a failed presentation (its streams are ended with unavailable: they would miss the state, maybe the end). */
  readonly onError: (e: unknown, entity: string) => void;
  readonly now?: () => number;
}

export class WatchHub {
  private readonly entities = new Map<string, Entity>();
  private sweeper: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  constructor(
    private readonly updates: Pick<UpdatesHub, "subscribe">,
    private readonly options: WatchHubOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Streams of one entity that follow the source; subscribe before reading the snapshot. */
  join<R extends { readonly version: number }>(topic: WatchTopic<R>, id: string, stream: WatchStream): () => void {
    const key = `${topic.type}:${id}`;
    let entity = this.entities.get(key);
    if (!entity) {
      const created: Entity = {
        streams: new Set(),
        version: -1,
        chain: Promise.resolve(),
        unsubscribe: this.updates.subscribe(topic.type, id, (u) => {
          created.chain = created.chain.then(() => this.publish(topic, created, u)).catch((e: unknown) => this.failed(created, key, e));
        }),
      };
      this.entities.set(key, (entity = created));
    }
    const joined = entity;
    joined.streams.add(stream);
    this.sweep(true);
    return () => {
      if (!joined.streams.delete(stream) || joined.streams.size > 0) return;
      joined.unsubscribe();
      if (this.entities.get(key) === joined) this.entities.delete(key);
      this.sweep(false);
    };
  }

  /** Streams of the entity (0 when none): one subscription to the source serves them all. */
  streams(type: string, id: string): number {
    return this.entities.get(`${type}:${id}`)?.streams.size ?? 0;
  }

  /** Entities followed on the source. */
  get subscriptions(): number {
    return this.entities.size;
  }

  private async publish<R extends { readonly version: number }>(topic: WatchTopic<R>, entity: Entity, u: EntityUpdate): Promise<void> {
    const record = topic.record(u.state);
    if (!record || record.version <= entity.version || entity.streams.size === 0) return;
    entity.version = record.version;
    const terminal = topic.terminal(record);
    const message = await topic.message(terminal ?? "updated", record);
    const update = { version: record.version, terminal: terminal !== undefined, shared: new SharedMessage(topic.schema, message) };
    let superseded = 0;
    for (const stream of entity.streams) if (stream.offer(update)) superseded++;
    if (superseded > 0) watchUpdatesSuperseded(superseded);
  }

  /** An update that could not be presented: its streams end, as each did alone when its own presentation failed; a new Watch starts from the snapshot. */
  private failed(entity: Entity, key: string, e: unknown): void {
    this.options.onError(e, key);
    const error = apiError(Code.Unavailable, "an update of this stream could not be read; watch again for the latest state");
    for (const stream of entity.streams) stream.end(error);
  }

  /** Runs the stall check while streams exist, at a quarter of the limit (at most each second). */
  private sweep(any: boolean): void {
    if (any && !this.sweeper) {
      this.sweeper = setInterval(() => this.endStalled(), Math.min(1000, Math.max(10, this.options.stallMs / 4)));
      this.sweeper.unref();
    } else if (!any && this.entities.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  private endStalled(): void {
    const now = this.now();
    const seconds = Math.round(this.options.stallMs / 100) / 10;
    for (const entity of this.entities.values()) {
      for (const stream of entity.streams) {
        if (stream.waitingSince === undefined || now - stream.waitingSince < this.options.stallMs) continue;
        watchStreamStalled();
        stream.end(
          apiError(
            Code.ResourceExhausted,
            `the stream was ended: its client read nothing for ${seconds} s while updates waited; watch again for the latest state`,
          ),
        );
      }
    }
  }
}
