// The bus port: keyed, partitioned topics with consumer-group semantics. Each partition of a
// topic is owned by one member of a group at a time; a message is handed to its handler in
// partition order, and its offset is committed only after the handler resolves (at least once).
// A group of one member per process (a unique group id) reads every partition: a broadcast.

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
  /** Partitions this member now owns / no longer owns, after each rebalance. */
  readonly onAssigned?: (partitions: readonly number[]) => void;
  /** Start at the end of the log when the group has no committed offset (broadcast readers). */
  readonly fromLatest?: boolean;
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
