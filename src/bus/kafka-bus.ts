// The cluster bus: the Bus port over Kafka with kafkajs.
//
// Producing: acks from all in-sync replicas (-1), Kafka's default partitioner (murmur2 of the key,
// the same as the Java client and the port's partitionFor), at most one request in flight per
// broker connection. Publishes are batched while a send is in flight: one send at a time, and
// every publish that arrives meanwhile goes out in the next one (one request for many messages);
// with lingerMs (off by default) the next send waits that long first to gather more, when some did
// arrive meanwhile (the process is busy); a publish into an idle producer goes at once. Each publish
// resolves when the send that carried it is acknowledged, and messages keep their publish order.
// Not kafkajs's idempotent producer: it is marked experimental and loses messages under concurrent
// sends (tulios/kafkajs#1005); a retried send may therefore duplicate a message, which the bus's
// at-least-once contract already allows.
//
// Consuming: one kafkajs consumer per consume() call, auto-commit off, partitions handled
// concurrently (one worker per partition), each partition in order (each key in order with byKey,
// below). After the handler resolves,
// the offset after the message is committed (awaited) before the next message of that partition.
// When the handler throws, nothing is committed: the partition is seeked back to the message and
// paused for a backoff (100 ms doubling to 1 s), then resumed, so kafkajs fetches the same message
// again while the other partitions keep flowing. (Throwing out of eachMessage would also re-deliver
// it, since kafkajs re-fetches from the last resolved offset, but it stops the fetch loop for every
// partition, retries only `retry.retries` times and then crashes and restarts the consumer, which
// costs a rebalance.) If the partition moves to another member meanwhile, that member starts at
// the committed offset, which is still the failed message. A fetch in progress (up to
// maxWaitTimeMs) can add to a backoff.
//
// Use one group id per topic: Kafka's groups span topics, and kafkajs's round-robin assigner
// hands a group's partitions to its members whatever each subscribed to. (MemoryBus keys groups
// by topic and group.) onAssigned hears each rebalance (kafkajs's GROUP_JOIN) and, after stop(),
// an empty list.
import kafkajs from "kafkajs";
import type { Admin, Consumer as KafkaConsumer, ConsumerRunConfig, EachMessagePayload, IHeaders, LogEntry, Producer } from "kafkajs";
import { ConfigError } from "../config.js";
import type { Logger } from "../log.js";
import { consumerLagOf } from "../metrics-flow.js";
import { kafkaRequests, topicLabel } from "../metrics.js";
import { kafkajsSecurity, listenerHint, securityRefusal, type KafkaConnection } from "./kafka-security.js";
import type { Bus, BusHealth, BusMessage, ConsumeOptions, Consumer, OutgoingMessage, TopicSpec } from "./port.js";

const { Kafka, Partitioners, AssignerProtocol, logLevel: LogLevel } = kafkajs;
type KafkaClient = InstanceType<typeof Kafka>;

/** The brokers and, for a secured Kafka, `tls` and `sasl` (kafkaConnection of the configuration). */
export interface KafkaBusOptions extends KafkaConnection {
  readonly clientId: string;
  /** Per request. Default 30 000 (kafkajs's). */
  readonly requestTimeoutMs?: number;
  /** TCP connect timeout per broker. Default 3000. */
  readonly connectionTimeoutMs?: number;
  /** A member that misses heartbeats this long is dropped from its group. Default 10 000. */
  readonly sessionTimeoutMs?: number;
  /** Default 1000. */
  readonly heartbeatIntervalMs?: number;
  /** Longest a fetch waits for data; bounds how late a member notices a rebalance. Default 500. */
  readonly maxWaitTimeMs?: number;
  /**
   * How long a send waits to gather more messages when publishes arrived while the previous send was
   * in flight (Kafka's linger.ms, but only under load: a publish into an idle producer goes at once).
   * Default 0: whatever is waiting goes as soon as the previous send ends, which already gathers
   * several messages a request under load; lingering saves requests (a broker that counts them), not
   * CPU, and adds its wait to every hop (test/bench/bus.bench.ts, docs/decisions.md).
   */
  readonly lingerMs?: number;
  /** Handled offsets are committed together at most this often. Default 100. */
  readonly commitIntervalMs?: number;
  /** Receives kafkajs's errors (and, with debug, its info and warnings). Without it kafkajs is silent. */
  readonly log?: Logger;
  /** Forward kafkajs's own logging. Default: MEDIA_LOG_LEVEL=debug. */
  readonly debug?: boolean;
}

interface ConsumerHandle {
  stop(): Promise<void>;
}

const BROKERS_SETTING = "MEDIA_KAFKA_BROKERS";
/** How long ensureTopics waits for the topics' partitions to have leaders. */
const LEADERS_TIMEOUT_MS = 60_000;
/** What a broker answers while its metadata has not caught up with a topic yet. */
const LAGGING_METADATA = new Set(["UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE", "NOT_LEADER_FOR_PARTITION"]);

/** A kafkajs protocol error's type, also under kafkajs's "retries exceeded" wrapper. */
const kafkaErrorType = (e: unknown): string | undefined => {
  const err = e as { type?: string; originalError?: { type?: string }; cause?: { type?: string } };
  return err.type ?? err.originalError?.type ?? err.cause?.type;
};

export class KafkaBus implements Bus {
  private readonly kafka: KafkaClient;
  private readonly producer: Producer;
  private readonly admin: Admin;
  private readonly consumers = new Set<ConsumerHandle>();
  private readonly sessionTimeoutMs: number;
  private readonly heartbeatIntervalMs: number;
  private readonly maxWaitTimeMs: number;
  private readonly commitIntervalMs: number;
  private readonly lingerMs: number;
  private readonly log: Logger | undefined;
  /** Publishes waiting for the send in flight to end; sent together in the next one. */
  private outgoing: { topic: string; messages: readonly OutgoingMessage[]; done: (e?: unknown) => void }[] = [];
  private sending = false;
  private started = false;
  private closed = false;

  constructor(private readonly options: KafkaBusOptions) {
    if (options.brokers.length === 0) throw new ConfigError(BROKERS_SETTING, "at least one broker (host:port) is required");
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? 10_000;
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 1000;
    this.maxWaitTimeMs = options.maxWaitTimeMs ?? 500;
    this.commitIntervalMs = options.commitIntervalMs ?? 100;
    this.lingerMs = options.lingerMs ?? 0;
    this.log = options.log;
    const debug = options.debug ?? process.env.MEDIA_LOG_LEVEL === "debug";
    this.kafka = new Kafka({
      brokers: [...options.brokers],
      ...kafkajsSecurity(options),
      clientId: options.clientId,
      connectionTimeout: options.connectionTimeoutMs ?? 3000,
      ...(options.requestTimeoutMs !== undefined ? { requestTimeout: options.requestTimeoutMs } : {}),
      logLevel: debug ? LogLevel.INFO : options.log ? LogLevel.ERROR : LogLevel.NOTHING,
      ...(options.log ? { logCreator: forwardTo(options.log, debug) } : {}),
    });
    this.producer = this.kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: false,
      idempotent: false,
      maxInFlightRequests: 1,
    });
    this.admin = this.kafka.admin();
    this.producer.on(this.producer.events.REQUEST, countRequest);
    this.admin.on(this.admin.events.REQUEST, countRequest);
  }

  async start(): Promise<void> {
    if (this.closed) throw new Error("bus is closed");
    if (this.started) return;
    const where = this.options.brokers.join(",");
    // kafkajs's connection retries come from the client (default: 5, backing off to 30 s), and the
    // long-lived clients should keep them. Probe first with a client that gives up quickly.
    const probe = new Kafka({
      brokers: [...this.options.brokers],
      ...kafkajsSecurity(this.options),
      clientId: `${this.options.clientId}-probe`,
      connectionTimeout: this.options.connectionTimeoutMs ?? 3000,
      requestTimeout: 5000,
      retry: { retries: 1, initialRetryTime: 250, maxRetryTime: 1000 },
      logLevel: LogLevel.NOTHING,
    }).admin();
    try {
      await deadline(
        (async () => {
          await probe.connect();
          await probe.describeCluster(); // a real round trip, not only a socket
        })(),
        10_000,
        "no answer within 10 s",
      );
    } catch (e) {
      // A refused login or an untrusted certificate names its own setting, not the brokers'.
      const refusal = securityRefusal(e, this.options);
      if (refusal) throw refusal;
      const silent = /no answer within|closed connection|disconnected before secure TLS|ECONNRESET|timeout/i.test(message(e));
      throw new ConfigError(BROKERS_SETTING, `cannot reach Kafka at ${where}: ${message(e)}${silent ? listenerHint(this.options) : ""}`);
    } finally {
      await probe.disconnect().catch(() => undefined);
    }
    try {
      await deadline(Promise.all([this.admin.connect(), this.producer.connect()]), 30_000, "no answer within 30 s");
    } catch (e) {
      await Promise.allSettled([this.admin.disconnect(), this.producer.disconnect()]);
      throw securityRefusal(e, this.options) ?? new ConfigError(BROKERS_SETTING, `cannot connect to Kafka at ${where}: ${message(e)}`);
    }
    this.started = true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.consumers].map((c) => c.stop()));
    await Promise.allSettled([this.producer.disconnect(), this.admin.disconnect()]);
  }

  async health(): Promise<BusHealth> {
    if (this.closed) return { ok: false, message: "bus is closed" };
    if (!this.started) return { ok: false, message: "bus not started" };
    try {
      const cluster = await deadline(this.admin.describeCluster(), 3000, "describeCluster timed out after 3 s");
      if (cluster.brokers.length === 0) return { ok: false, message: "no brokers in the cluster metadata" };
      return { ok: true };
    } catch (e) {
      return { ok: false, message: `Kafka: ${message(e)}` };
    }
  }

  async ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    this.assertStarted();
    const wanted = new Map<string, number>();
    for (const spec of specs) {
      if (!Number.isInteger(spec.partitions) || spec.partitions < 1) {
        throw new RangeError(`topic "${spec.topic}": partitions must be a positive integer, got ${spec.partitions}`);
      }
      if (!wanted.has(spec.topic)) wanted.set(spec.topic, spec.partitions);
    }
    const existing = new Set(await this.admin.listTopics());
    const missing = [...wanted].filter(([topic]) => !existing.has(topic));
    if (missing.length > 0) {
      try {
        // Resolves false when every topic already exists (another process won the race).
        await this.admin.createTopics({ topics: missing.map(([topic, numPartitions]) => ({ topic, numPartitions })), waitForLeaders: false });
      } catch (e) {
        // Some existed, some did not: the aggregate error lists each; only "already exists" is fine.
        const errors = (e as { errors?: Array<{ type?: string }> }).errors;
        if (!errors || !errors.every((err) => err.type === "TOPIC_ALREADY_EXISTS")) throw e;
      }
    }
    await this.leadersOf([...wanted.keys()]);
  }

  /**
   * Waits until every partition of `topics` has a leader. A broker's metadata lags a topic's
   * creation, and a restart, by a moment, during which it answers UNKNOWN_TOPIC_OR_PARTITION;
   * kafkajs's own wait (createTopics' waitForLeaders) retries only LEADER_NOT_AVAILABLE and throws
   * on it (tulios/kafkajs#1222, #815): a process starting just after Kafka restarted exited so.
   */
  private async leadersOf(topics: readonly string[], timeoutMs = LEADERS_TIMEOUT_MS): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
      let why: string;
      try {
        const { topics: found } = await this.admin.fetchTopicMetadata({ topics: [...topics] });
        const waiting = topics.filter((t) => {
          const partitions = found.find((f) => f.name === t)?.partitions ?? [];
          return partitions.length === 0 || partitions.some((p) => p.leader < 0);
        });
        if (waiting.length === 0) return;
        why = `no leader yet for ${waiting.join(", ")}`;
      } catch (e) {
        if (!LAGGING_METADATA.has(kafkaErrorType(e) ?? "")) throw e;
        why = message(e);
      }
      if (Date.now() + delay > until) throw new Error(`Kafka topics not ready after ${timeoutMs / 1000} s (${topics.join(", ")}): ${why}`);
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  async publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    this.assertStarted();
    if (messages.length === 0) return;
    await new Promise<void>((resolve, reject) => {
      this.outgoing.push({ topic, messages, done: (e) => (e === undefined ? resolve() : reject(e as Error)) });
      if (!this.sending) void this.send();
    });
  }

  /** Sends everything waiting in one request, then again while publishes arrived meanwhile (after lingerMs, if set). */
  private async send(): Promise<void> {
    this.sending = true;
    for (let busy = false; this.outgoing.length > 0; busy = true) {
      if (busy && this.lingerMs > 0) await new Promise((r) => setTimeout(r, this.lingerMs));
      const batch = this.outgoing;
      this.outgoing = [];
      // One entry per topic, messages in publish order.
      const byTopic = new Map<string, kafkajs.Message[]>();
      for (const { topic, messages } of batch) {
        let list = byTopic.get(topic);
        if (!list) byTopic.set(topic, (list = []));
        for (const m of messages) {
          list.push({
            key: m.key,
            value: Buffer.from(m.value.buffer, m.value.byteOffset, m.value.byteLength),
            ...(m.headers ? { headers: { ...m.headers } } : {}),
          });
        }
      }
      let error: unknown;
      try {
        await this.producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
      } catch (e) {
        error = e ?? new Error("send failed");
      }
      for (const p of batch) p.done(error);
    }
    this.sending = false;
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    this.assertStarted();
    const { topic, group, handler } = options;
    const partitionCount = await this.partitionCount(topic);
    const consumer: KafkaConsumer = this.kafka.consumer({
      groupId: group,
      sessionTimeout: this.sessionTimeoutMs,
      heartbeatInterval: this.heartbeatIntervalMs,
      rebalanceTimeout: Math.max(this.sessionTimeoutMs, 30_000),
      maxWaitTimeInMs: this.maxWaitTimeMs,
      allowAutoTopicCreation: false,
      retry: { restartOnFailure: async () => true },
      ...(options.only ? { partitionAssigners: [onlyAssigner(options.only)] } : {}),
    });

    let stopping = false;
    const inflight = new Set<Promise<void>>();
    const failures = new Map<number, { offset: string; count: number }>();
    const backoffTimers = new Set<NodeJS.Timeout>();
    /** The offset to commit next, by partition: after the last message handled there. */
    const marks = new Map<number, string>();
    /** The offset after the last message handled, by partition, committed or not. */
    const handled = new Map<number, string>();
    let commitTimer: NodeJS.Timeout | undefined;
    let commits = Promise.resolve();
    const commitMarks = (): Promise<void> => {
      clearTimeout(commitTimer);
      commitTimer = undefined;
      if (marks.size === 0) return commits;
      const offsets = [...marks].map(([partition, offset]) => ({ topic, partition, offset }));
      marks.clear();
      // Fails (a kafkajs error) when the group is rebalancing and this member lost a partition;
      // whoever owns it starts at the last committed offset and handles the rest again.
      commits = commits
        .then(() => consumer.commitOffsets(offsets))
        .catch((e: unknown) => this.log?.debug({ err: e, topic, group }, "bus offsets not committed"));
      return commits;
    };

    // The lag as of each fetched batch: at its start, the messages from its first on (the batch
    // included: not handled yet); at its end, those after its last. Nothing fetched (caught up, or
    // paused) leaves the last value.
    const lag = consumerLagOf(consumer, topicLabel(topic));
    consumer.on(consumer.events.REQUEST, countRequest);
    consumer.on(consumer.events.START_BATCH_PROCESS, ({ payload: p }) => lag.set(p.partition, Number(BigInt(p.highWatermark) - BigInt(p.firstOffset))));
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload: p }) => lag.set(p.partition, Number(p.offsetLag)));
    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      if (stopping) return;
      const mine = [...(event.payload.memberAssignment[topic] ?? [])].sort((a, b) => a - b);
      lag.keep(mine);
      // A partition that moved is another member's now: its marks must not move its offset. One
      // this member kept is read on from where it was handled, not from the last commit (kafkajs
      // starts every generation at the committed offsets), and that offset is committed now.
      for (const [partition, lane] of [...lanes]) {
        if (!mine.includes(partition)) {
          // Lost: what is in flight finishes without a mark; the new owner starts at the last commit.
          lanes.delete(partition);
          marks.delete(partition);
          for (const wake of lane.waiters.splice(0)) wake();
        } else if (lane.fetched >= 0n) {
          // Kept: its messages in flight go on here; read on after the last one taken.
          consumer.seek({ topic, partition, offset: lane.fetched.toString() });
        }
      }
      for (const partition of [...handled.keys()]) {
        if (!mine.includes(partition)) {
          handled.delete(partition);
          marks.delete(partition);
          continue;
        }
        const offset = handled.get(partition)!;
        consumer.seek({ topic, partition, offset });
        marks.set(partition, offset);
      }
      if (marks.size > 0) void commitMarks();
      try {
        options.onAssigned?.(mine, event.payload.memberId);
      } catch {
        // a listener's failure is not the bus's
      }
    });

    const eachMessage = async ({ partition, message, pause, heartbeat }: EachMessagePayload): Promise<void> => {
      if (stopping) {
        // Do not let kafkajs mark this message as handled: come back to it after a restart.
        consumer.seek({ topic, partition, offset: message.offset });
        return;
      }
      // Handled already by this member, and the partition has not left it since (GROUP_JOIN drops
      // what it loses): kafkajs read it again (an offset lookup retried after a leader moved has
      // been seen to seek a partition back to its start). Not handled twice.
      const after = handled.get(partition);
      if (after !== undefined && BigInt(message.offset) < BigInt(after)) return;
      const busMessage = toBusMessage(topic, partition, message);
      // A handler may run for minutes (an encode): keep the membership alive meanwhile, or the
      // group would hand the partition to another member and the task would run twice.
      const beat = setInterval(() => {
        heartbeat().catch(() => undefined);
      }, this.heartbeatIntervalMs);
      const work = (async () => {
        try {
          await handler(busMessage).finally(() => clearInterval(beat));
        } catch {
          // Not committed, not skipped: read it again after a backoff; this partition waits.
          const previous = failures.get(partition);
          const count = previous?.offset === message.offset ? previous.count + 1 : 1;
          failures.set(partition, { offset: message.offset, count });
          consumer.seek({ topic, partition, offset: message.offset });
          const resume = pause();
          const timer = setTimeout(() => {
            backoffTimers.delete(timer);
            if (!stopping) resume();
          }, backoffMs(count));
          backoffTimers.add(timer);
          return;
        }
        failures.delete(partition);
        const next = (BigInt(message.offset) + 1n).toString();
        handled.set(partition, next);
        marks.set(partition, next);
        commitTimer ??= setTimeout(() => void commitMarks(), this.commitIntervalMs);
      })();
      inflight.add(work);
      try {
        await work;
      } finally {
        inflight.delete(work);
      }
    };

    // byKey: messages of different keys in a partition run side by side (up to LANE_LIMIT in
    // flight), each key's in order; the mark is the lowest offset still in flight (or the next one
    // fetched), so a commit never passes a message that has not been handled. A failed handler is
    // run again after a backoff while the other keys go on; its key's later messages wait for it.
    const lanes = new Map<number, Lane>();
    const eachMessageByKey = async ({ partition, message }: EachMessagePayload): Promise<void> => {
      let lane = lanes.get(partition);
      if (!lane) lanes.set(partition, (lane = { inflight: new Set(), fetched: -1n, chains: new Map(), waiters: [] }));
      while (lane.inflight.size >= LANE_LIMIT && !stopping && lanes.get(partition) === lane) await new Promise<void>((r) => lane!.waiters.push(r));
      if (stopping || lanes.get(partition) !== lane) {
        consumer.seek({ topic, partition, offset: message.offset });
        return;
      }
      const offset = BigInt(message.offset);
      lane.inflight.add(offset);
      lane.fetched = offset + 1n;
      const busMessage = toBusMessage(topic, partition, message);
      const own = lane;
      const abandoned = () => stopping || lanes.get(partition) !== own;
      const work = (own.chains.get(busMessage.key) ?? Promise.resolve()).then(() => untilHandled(handler, busMessage, abandoned));
      own.chains.set(busMessage.key, work);
      const tracked = work.then((handled) => {
        if (own.chains.get(busMessage.key) === work) own.chains.delete(busMessage.key);
        own.inflight.delete(offset);
        own.waiters.shift()?.();
        if (!handled || lanes.get(partition) !== own) return;
        let mark = own.fetched;
        for (const o of own.inflight) if (o < mark) mark = o;
        marks.set(partition, mark.toString());
        commitTimer ??= setTimeout(() => void commitMarks(), this.commitIntervalMs);
      });
      inflight.add(tracked);
      void tracked.finally(() => inflight.delete(tracked));
    };

    const runConfig: ConsumerRunConfig = {
      autoCommit: false,
      partitionsConsumedConcurrently: Math.max(1, partitionCount),
      eachMessage: options.byKey ? eachMessageByKey : eachMessage,
    };

    // kafkajs restarts a consumer after retriable crashes; after any other crash, restart it here.
    let restartTimer: NodeJS.Timeout | undefined;
    const restart = () => {
      restartTimer = setTimeout(() => {
        restartTimer = undefined;
        if (stopping) return;
        consumer
          .connect()
          .then(() => consumer.run(runConfig))
          .catch((e: unknown) => {
            this.log?.error({ err: e, topic, group }, "bus consumer restart failed; trying again");
            restart();
          });
      }, 1000);
    };
    consumer.on(consumer.events.CRASH, (event) => {
      if (stopping) return;
      this.log?.error({ err: event.payload.error, topic, group, restart: event.payload.restart }, "bus consumer crashed");
      if (!event.payload.restart) restart();
    });

    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: !options.fromLatest });
      // kafkajs resolves "latest" on the first fetch after joining; wait for it, so a message
      // published after consume() resolved is never skipped.
      const firstFetch = new Promise<void>((resolve) => {
        const off = consumer.on(consumer.events.FETCH, () => {
          off();
          resolve();
        });
      });
      await consumer.run(runConfig);
      if (options.fromLatest) await deadline(firstFetch, this.sessionTimeoutMs, "").catch(() => undefined);
    } catch (e) {
      stopping = true;
      lag.stop();
      await consumer.disconnect().catch(() => undefined);
      throw e;
    }

    let stopped: Promise<void> | undefined;
    const handle: ConsumerHandle = {
      stop: () =>
        (stopped ??= (async () => {
          stopping = true;
          for (const lane of lanes.values()) for (const wake of lane.waiters.splice(0)) wake();
          clearTimeout(restartTimer);
          for (const timer of backoffTimers) clearTimeout(timer);
          backoffTimers.clear();
          // Let handlers in flight finish and commit while the member still owns its partitions,
          // then leave the group (the others rebalance and take the partitions over).
          try {
            consumer.pause([{ topic }]);
          } catch {
            // not running (crashed): nothing to pause
          }
          await deadline(Promise.allSettled([...inflight]), this.sessionTimeoutMs, "").catch(() => undefined);
          await deadline(commitMarks(), this.sessionTimeoutMs, "").catch(() => undefined);
          await consumer.disconnect().catch((e: unknown) => this.log?.warn({ err: e, topic, group }, "bus consumer disconnect failed"));
          this.consumers.delete(handle);
          lag.stop();
          try {
            options.onAssigned?.([]);
          } catch {
            // a listener's failure is not the bus's
          }
        })()),
    };
    this.consumers.add(handle);
    return handle;
  }

  // ---- internals ----

  private assertStarted(): void {
    if (this.closed) throw new Error("bus is closed");
    if (!this.started) throw new Error("bus not started: call start() first");
  }

  private async partitionCount(topic: string): Promise<number> {
    try {
      const { topics } = await this.admin.fetchTopicMetadata({ topics: [topic] });
      return topics[0]?.partitions.length ?? 1;
    } catch (e) {
      throw new Error(`unknown topic "${topic}": create it with ensureTopics first (${message(e)})`, { cause: e });
    }
  }
}

/** A partition consumed byKey: offsets in flight, the next offset to fetch, each key's last handler. */
interface Lane {
  readonly inflight: Set<bigint>;
  fetched: bigint;
  readonly chains: Map<string, Promise<boolean>>;
  readonly waiters: (() => void)[];
}
/** Messages in flight per partition consumed byKey. */
const LANE_LIMIT = 256;

/** The wait before a failed handler's next attempt: 100 ms, doubling up to 1 s. */
const backoffMs = (attempt: number): number => Math.min(100 * 2 ** (attempt - 1), 1000);

/** Runs a handler until it resolves (backing off as backoffMs says); false if given up. */
async function untilHandled(handler: (m: BusMessage) => Promise<void>, message: BusMessage, abandoned: () => boolean): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    if (abandoned()) return false;
    try {
      await handler(message);
      return true;
    } catch {
      await new Promise((r) => setTimeout(r, backoffMs(attempt)));
    }
  }
}

/**
 * The group's assignor when it reads only some partitions (ConsumeOptions.only, given the topic's
 * partition count as of the assignment): those, spread over its members in member id order, and no
 * other. Kafka runs the assignor its members all name.
 */
function onlyAssigner(only: (partitions: number) => readonly number[]): kafkajs.PartitionAssigner {
  const name = "MediaOnlyAssigner";
  return ({ cluster }) => ({
    name,
    version: 0,
    async assign({ members, topics }) {
      const ids = members.map((m) => m.memberId).sort();
      const chosen = topics.map((topic) => [topic, only(cluster.findTopicPartitionMetadata(topic).length)] as const);
      return ids.map((memberId, i) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 0,
          assignment: Object.fromEntries(chosen.map(([topic, partitions]) => [topic, partitions.filter((_, j) => j % ids.length === i)])),
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol: ({ topics }) => ({ name, metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }) }),
  });
}

/** A fetched Kafka message as the port hands it to a handler. */
function toBusMessage(topic: string, partition: number, message: EachMessagePayload["message"]): BusMessage {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key?.toString("utf8") ?? "",
    value: message.value ?? new Uint8Array(0),
    headers: headersOf(message.headers),
  };
}

function headersOf(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const one = Array.isArray(value) ? value[value.length - 1] : value;
    if (one !== undefined) out[name] = one.toString();
  }
  return out;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

async function deadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(what)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

// Protocol errors that are part of a normal rebalance; kafkajs logs them as errors.
const REBALANCE_NOISE = /rebalanc|not aware of this member|generation id is not valid|not the correct coordinator/i;

/** A kafkajs logCreator that writes into the service's pino logger. */
function forwardTo(log: Logger, debug: boolean) {
  return () =>
    ({ namespace, level, log: entry }: LogEntry): void => {
      const { message: text, timestamp: _t, logger: _l, ...fields } = entry as LogEntry["log"] & { logger?: unknown };
      const data = { kafkajs: namespace, ...fields };
      const msg = `kafkajs: ${text}`;
      switch (level) {
        case LogLevel.ERROR:
          if (!debug && REBALANCE_NOISE.test(`${text} ${String(fields.error ?? "")}`)) return;
          log.error(data, msg);
          return;
        case LogLevel.WARN:
          log.warn(data, msg);
          return;
        case LogLevel.INFO:
          log.info(data, msg);
          return;
        default:
          log.debug(data, msg);
      }
    };
}

/** Counts a request a kafkajs client sent (its instrumentation event), by API: media_kafka_requests_total. */
function countRequest(event: { payload: { apiName: string } }): void {
  kafkaRequests.inc({ api: event.payload.apiName });
}
