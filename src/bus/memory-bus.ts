// The embedded bus: in-process, with Kafka's semantics. Topics have N partitions and a message
// goes to the partition Kafka's default partitioner would pick for its key (murmur2, as in the
// Java client and kafkajs). Each partition is an append-only log. A consumer group has one
// committed offset per partition; its partitions are spread round-robin over its members, in join
// order, and every join or stop rebalances the group: partitions that move are first drained (the
// old owner's in-flight handler finishes), then every member hears its new set through onAssigned.
// Delivery runs one loop per group and partition: one message at a time, in order, committed only
// after the handler resolves; a handler that throws gets the same message again after a backoff
// (100 ms doubling to 1 s) and nothing behind it moves. Different partitions run concurrently.
// Handlers never run inside publish: delivery starts on a later turn of the event loop. After
// stop() resolves, the member's in-flight handlers are done and it has heard onAssigned([]).
//
// Memory stays bounded: a partition's log is cut below the lowest committed offset of the groups
// that read the topic (while no group reads a topic, its log is kept for a future reader). As in
// Kafka, offsets of a group that has had no member for `emptyGroupRetentionMs` expire, and a
// partition never keeps more than `maxRetainedPerPartition` messages: a group whose offset falls
// below the start of the log resumes at the start (auto.offset.reset=earliest).
import { partitionFor, type Bus, type BusHealth, type BusMessage, type ConsumeOptions, type Consumer, type OutgoingMessage, type TopicSpec } from "./port.js";

export interface MemoryBusOptions {
  /** Hard cap on the messages a partition keeps, consumed or not (Kafka's retention). Default 100 000. */
  readonly maxRetainedPerPartition?: number;
  /** A group without members for this long loses its offsets and stops holding the log. Default 10 min. */
  readonly emptyGroupRetentionMs?: number;
  /** How long a rebalance waits for a moving partition's in-flight handler. Default 30 s. */
  readonly rebalanceTimeoutMs?: number;
}

/** Append-only log of one partition; `base` is the offset of the oldest message kept. */
class PartitionLog {
  private items: BusMessage[] = [];
  private start = 0;
  base = 0;

  get end(): number {
    return this.base + this.items.length - this.start;
  }

  get size(): number {
    return this.items.length - this.start;
  }

  get(offset: number): BusMessage | undefined {
    if (offset < this.base || offset >= this.end) return undefined;
    return this.items[this.start + offset - this.base];
  }

  append(message: BusMessage): void {
    this.items.push(message);
  }

  /** Drops every message below `offset`. */
  truncateTo(offset: number): void {
    const n = Math.min(offset, this.end) - this.base;
    if (n <= 0) return;
    for (let i = this.start; i < this.start + n; i++) (this.items as Array<BusMessage | undefined>)[i] = undefined;
    this.start += n;
    this.base += n;
    if (this.start >= 1024 && this.start * 2 >= this.items.length) {
      this.items = this.items.slice(this.start);
      this.start = 0;
    }
  }
}

interface Topic {
  readonly name: string;
  readonly logs: PartitionLog[];
  readonly groups: Map<string, Group>;
}

interface Member {
  readonly id: number;
  readonly options: ConsumeOptions;
  stopped: boolean;
}

interface Group {
  readonly name: string;
  readonly topic: Topic;
  readonly members: Member[];
  /** Current owner per partition; undefined while nobody owns it or while it moves. */
  readonly owner: Array<Member | undefined>;
  /** Next offset to hand out per partition (the committed offset). */
  readonly committed: number[];
  readonly driving: boolean[];
  readonly failures: number[];
  /** The delivery in progress per partition. */
  readonly inflight: Array<Promise<void> | undefined>;
  rebalancing: Promise<void>;
  emptySince: number | undefined;
  deleted: boolean;
}

export class MemoryBus implements Bus {
  private readonly topics = new Map<string, Topic>();
  private readonly timers = new Map<NodeJS.Timeout, () => void>();
  private readonly maxRetained: number;
  private readonly emptyGroupRetentionMs: number;
  private readonly rebalanceTimeoutMs: number;
  private nextMemberId = 1;
  private started = false;
  private closed = false;

  constructor(options: MemoryBusOptions = {}) {
    this.maxRetained = Math.max(1, options.maxRetainedPerPartition ?? 100_000);
    this.emptyGroupRetentionMs = options.emptyGroupRetentionMs ?? 10 * 60_000;
    this.rebalanceTimeoutMs = options.rebalanceTimeoutMs ?? 30_000;
  }

  async start(): Promise<void> {
    if (this.closed) throw new Error("bus is closed");
    this.started = true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const inflight: Promise<void>[] = [];
    for (const topic of this.topics.values()) {
      for (const group of topic.groups.values()) {
        for (const member of group.members) member.stopped = true;
        for (const p of group.inflight) if (p) inflight.push(p);
      }
    }
    for (const [timer, wake] of this.timers) {
      clearTimeout(timer);
      wake();
    }
    this.timers.clear();
    await Promise.allSettled(inflight);
  }

  async health(): Promise<BusHealth> {
    if (this.closed) return { ok: false, message: "bus is closed" };
    return this.started ? { ok: true } : { ok: false, message: "bus not started" };
  }

  async ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    this.assertOpen();
    for (const spec of specs) {
      if (!Number.isInteger(spec.partitions) || spec.partitions < 1) {
        throw new RangeError(`topic "${spec.topic}": partitions must be a positive integer, got ${spec.partitions}`);
      }
    }
    for (const spec of specs) {
      if (this.topics.has(spec.topic)) continue;
      this.topics.set(spec.topic, {
        name: spec.topic,
        logs: Array.from({ length: spec.partitions }, () => new PartitionLog()),
        groups: new Map(),
      });
    }
  }

  async publish(topicName: string, messages: readonly OutgoingMessage[]): Promise<void> {
    this.assertOpen();
    const topic = this.topic(topicName);
    const touched = new Set<number>();
    for (const m of messages) {
      const partition = partitionFor(m.key, topic.logs.length);
      const log = topic.logs[partition]!;
      log.append(
        Object.freeze({
          topic: topic.name,
          partition,
          offset: String(log.end),
          key: m.key,
          value: m.value.slice(), // the bus owns its copy, as a broker would
          headers: Object.freeze({ ...(m.headers ?? {}) }),
        }),
      );
      if (log.size > this.maxRetained) log.truncateTo(log.end - this.maxRetained);
      touched.add(partition);
    }
    if (touched.size === 0) return;
    // Deliver on a later turn: never inside publish.
    setImmediate(() => {
      for (const group of topic.groups.values()) for (const p of touched) void this.drive(group, p);
    });
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    this.assertOpen();
    const topic = this.topic(options.topic);
    let group = topic.groups.get(options.group);
    if (group === undefined) {
      const n = topic.logs.length;
      group = {
        name: options.group,
        topic,
        members: [],
        owner: new Array<Member | undefined>(n).fill(undefined),
        // A new group starts at the earliest kept message, or at the end for fromLatest.
        committed: topic.logs.map((log) => (options.fromLatest ? log.end : log.base)),
        driving: new Array<boolean>(n).fill(false),
        failures: new Array<number>(n).fill(0),
        inflight: new Array<Promise<void> | undefined>(n).fill(undefined),
        rebalancing: Promise.resolve(),
        emptySince: undefined,
        deleted: false,
      };
      topic.groups.set(options.group, group);
    }
    const member: Member = { id: this.nextMemberId++, options, stopped: false };
    group.members.push(member);
    group.emptySince = undefined;
    await this.rebalance(group);

    const g = group;
    let stopping: Promise<void> | undefined;
    return {
      stop: () =>
        (stopping ??= (async () => {
          member.stopped = true;
          const i = g.members.indexOf(member);
          if (i >= 0) g.members.splice(i, 1);
          if (g.members.length === 0) g.emptySince = Date.now();
          await this.rebalance(g); // drains this member's in-flight deliveries first
          safely(() => options.onAssigned?.([]));
        })()),
    };
  }

  // ---- internals ----

  private assertOpen(): void {
    if (this.closed) throw new Error("bus is closed");
  }

  private topic(name: string): Topic {
    const topic = this.topics.get(name);
    if (topic === undefined) throw new Error(`unknown topic "${name}": create it with ensureTopics first`);
    return topic;
  }

  /** Queues a rebalance of the group and resolves once it (and those before it) are done. */
  private rebalance(group: Group): Promise<void> {
    group.rebalancing = group.rebalancing.then(() => this.doRebalance(group));
    return group.rebalancing;
  }

  private async doRebalance(group: Group): Promise<void> {
    const live = group.members.filter((m) => !m.stopped);
    const n = group.owner.length;
    // A member that reads only some partitions (ConsumeOptions.only) is given no other.
    const takes = live.map((m) => (m.options.only ? new Set(m.options.only(n)) : undefined));
    const next = Array.from({ length: n }, (_, p) => {
      const candidates = live.filter((_, i) => takes[i]?.has(p) ?? true);
      return candidates.length > 0 ? candidates[p % candidates.length] : undefined;
    });
    // Revoke partitions that move, then wait for their in-flight handlers: one owner at a time.
    const draining: Promise<void>[] = [];
    for (let p = 0; p < n; p++) {
      if (group.owner[p] !== next[p]) {
        group.owner[p] = undefined;
        const inflight = group.inflight[p];
        if (inflight) draining.push(inflight);
      }
    }
    if (draining.length > 0) await withTimeout(Promise.allSettled(draining), this.rebalanceTimeoutMs);
    if (this.closed) return;
    // Members that came or went while draining have their own rebalance queued behind this one.
    for (let p = 0; p < n; p++) group.owner[p] = next[p];
    for (const m of live) {
      if (m.stopped) continue;
      const mine: number[] = [];
      for (let p = 0; p < n; p++) if (group.owner[p] === m) mine.push(p);
      safely(() => m.options.onAssigned?.(mine));
    }
    setImmediate(() => {
      for (let p = 0; p < n; p++) void this.drive(group, p);
    });
  }

  /** The delivery loop of one group and partition; at most one runs at a time. */
  private async drive(group: Group, p: number): Promise<void> {
    if (group.driving[p] || group.deleted) return;
    group.driving[p] = true;
    try {
      const log = group.topic.logs[p]!;
      while (!this.closed && !group.deleted) {
        const owner = group.owner[p];
        if (owner === undefined || owner.stopped) return;
        // Offsets below the start of the log were dropped by retention: resume at the start.
        const offset = Math.max(group.committed[p]!, log.base);
        group.committed[p] = offset;
        const message = log.get(offset);
        if (message === undefined) return; // caught up; publish wakes us
        const delivery = (async () => owner.options.handler(message))();
        group.inflight[p] = delivery.then(
          () => undefined,
          () => undefined,
        );
        let ok: boolean;
        try {
          await delivery;
          ok = true;
        } catch {
          ok = false;
        } finally {
          group.inflight[p] = undefined;
        }
        if (ok) {
          if (group.committed[p] === offset) group.committed[p] = offset + 1;
          group.failures[p] = 0;
          this.truncate(group.topic, p);
        } else {
          const failures = ++group.failures[p]!;
          await this.sleep(Math.min(100 * 2 ** (failures - 1), 1000));
        }
      }
    } finally {
      group.driving[p] = false;
    }
  }

  /** Cuts the partition's log below the lowest committed offset of the groups reading the topic. */
  private truncate(topic: Topic, p: number): void {
    const now = Date.now();
    let min = Infinity;
    for (const group of topic.groups.values()) {
      if (group.members.length === 0 && group.emptySince !== undefined && now - group.emptySince >= this.emptyGroupRetentionMs) {
        group.deleted = true;
        topic.groups.delete(group.name);
        continue;
      }
      min = Math.min(min, group.committed[p]!);
    }
    if (min !== Infinity) topic.logs[p]!.truncateTo(min);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.set(timer, resolve);
    });
  }
}

function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    // a listener's failure is not the bus's
  }
}

async function withTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
