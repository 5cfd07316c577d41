// The bus port: keyed, partitioned topics with consumer-group semantics. Each partition of a
// topic is owned by one member of a group at a time; a message is handed to its handler in
// partition order, and its offset is committed only after the handler resolves (at least once).
// A group of one member per process (a unique group id) reads every partition: a broadcast.

// Every adapter places a keyed message where Kafka's default partitioner would (the Java client,
// kafkajs's DefaultPartitioner), so callers that shard work by key (the outbox relay, the command
// client, legacy callbacks) compute the same partition as the bus, whichever adapter runs.
/** Kafka's murmur2 (org.apache.kafka.common.utils.Utils#murmur2), as a signed 32-bit integer. */
export function murmur2(data: Uint8Array): number {
  const m = 0x5bd1e995;
  const length = data.length;
  let h = (0x9747b28c ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = (data[i4]! & 0xff) | ((data[i4 + 1]! & 0xff) << 8) | ((data[i4 + 2]! & 0xff) << 16) | ((data[i4 + 3]! & 0xff) << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  const tail = length & ~3;
  switch (length % 4) {
    case 3:
      h ^= (data[tail + 2]! & 0xff) << 16;
    // falls through
    case 2:
      h ^= (data[tail + 1]! & 0xff) << 8;
    // falls through
    case 1:
      h ^= data[tail]! & 0xff;
      h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition Kafka's default partitioner (Java client, kafkajs DefaultPartitioner) picks for a key. */
export function partitionFor(key: string, partitions: number): number {
  // Buffer.from takes a short key's bytes from a shared pool (TextEncoder allocates a buffer each time).
  return (murmur2(Buffer.from(key, "utf8")) & 0x7fffffff) % partitions;
}

export interface BusMessage {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: string;
  readonly value: Uint8Array;
  readonly headers: Readonly<Record<string, string>>;
}

export interface OutgoingMessage {
  readonly key: string;
  readonly value: Uint8Array;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface TopicSpec {
  readonly topic: string;
  readonly partitions: number;
}

export interface ConsumeOptions {
  readonly topic: string;
  readonly group: string;
  readonly handler: (message: BusMessage) => Promise<void>;
  /**
   * Partitions this member now owns / no longer owns, after each rebalance, with the member's id in
   * the group where the bus has one: the same id in two rebalances in a row means the member took
   * part in every generation between them (one that misses a generation rejoins under a new id).
   */
  readonly onAssigned?: (partitions: readonly number[], member?: string) => void;
  /** Start at the end of the log when the group has no committed offset (broadcast readers). */
  readonly fromLatest?: boolean;
  /**
   * Order per key instead of per partition: messages of different keys in one partition may be
   * handled side by side, each key's in order, and an offset is committed only once every message
   * before it is handled. A failed handler holds back its key's later messages, not the partition's.
   */
  readonly byKey?: boolean;
  /**
   * The partitions the group reads, given the topic's count: the others are nobody's in this group.
   * For a one-member group that reads only what is addressed to it: a gateway's replies, keyed by
   * its id, are all in partitionFor(id), so it reads those and no other gateway's.
   */
  readonly only?: (partitions: number) => readonly number[];
}

export interface Consumer {
  stop(): Promise<void>;
}

export interface BusHealth {
  readonly ok: boolean;
  readonly message?: string;
}

export interface Bus {
  start(): Promise<void>;
  close(): Promise<void>;
  health(): Promise<BusHealth>;
  /** Creates missing topics with the given partition counts; existing ones are left alone. */
  ensureTopics(specs: readonly TopicSpec[]): Promise<void>;
  /** Resolves once the messages are durable on the bus (acks from all in-sync replicas). */
  publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void>;
  consume(options: ConsumeOptions): Promise<Consumer>;
}
