// Entity updates: an entity's `update` intent publishes its new state (without secrets) on topic
// "updates"; every gateway (Watch streams) reads all of it through its own one-member group, from
// the end of the log.
import type { Bus, Consumer } from "../src/bus/port.js";
import { randomToken } from "../src/ids.js";
import type { Logger } from "../src/log.js";
import type { Topics } from "./commands.js";

export interface EntityUpdate<S = unknown> {
  readonly type: string;
  readonly id: string;
  /** Orders updates of one entity; a subscriber drops any at or below what it has shown. */
  readonly version: number;
  readonly state: S;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function publishUpdate(bus: Bus, topics: Topics, update: EntityUpdate): Promise<void> {
  return bus.publish(topics.updates, [{ key: `${update.type}:${update.id}`, value: encoder.encode(JSON.stringify(update)) }]);
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
        let update: EntityUpdate;
        try {
          update = JSON.parse(decoder.decode(m.value)) as EntityUpdate;
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
