// The store port: an event journal with snapshots for persistent actors, and versioned records
// with ordered partitions for read models, uniqueness and idempotency. One contract, several adapters.
//
// A commit is a sequence of steps, not one transaction (Cassandra cannot make a conditional batch
// across partitions), so it promises only this, and callers may rely on nothing more:
//   1. Conditions are checked before anything is written: each event key's events must continue its
//      last seq exactly, and each expectedVersion must match. A condition that fails at that check
//      rejects with VersionConflict and writes nothing.
//   2. The events of one key are appended atomically, fenced by sequence number: a stale writer of
//      an existing seq fails with VersionConflict.
//   3. Each record write is atomic for its record; one with expectedVersion is a compare-and-set.
//   4. Steps apply in this order: the events (key by key), then the conditional record writes in
//      batch order, then the unconditional record writes; each record's index change goes with its
//      write. When a step fails (a concurrent writer won a compare-and-set, an error, a crash), the
//      steps before it stay applied and those after it are not; commit rejects. Nothing is undone.
//      A caller that needs "B only if A" writes A (the claim, the event) before B and tolerates A
//      without B. A fenced batch (Fence) is the exception: its events and read models may go together.
//   5. get reads the last applied write of a record; scan reads the index, written with (Cassandra:
//      right after) the record, so a scan may briefly miss a record being written or show its
//      previous row (for good, if the writer crashed in between, until the record is written again).
// The FileStore applies a whole batch or nothing; that is more than the port promises.

export interface StoredRecord<T = unknown> {
  readonly id: string;
  readonly version: number;
  /** Records of one partition list together, newest first by sort key. */
  readonly partition: string;
  readonly sort: string;
  readonly value: T;
  /** Epoch ms after which the record reads as absent; 0 for never. */
  readonly expiresAt: number;
}

export interface JournalEvent {
  readonly key: string;
  readonly seq: number;
  readonly data: unknown;
  readonly createdAt: number;
}

export interface Snapshot {
  readonly key: string;
  readonly seq: number;
  readonly data: unknown;
  readonly createdAt: number;
}

/** A record's row as its one writer knows it (RecordWrite.current). */
export interface KnownRow {
  readonly version: number;
  readonly partition: string;
  readonly sort: string;
  /** 0 for never. */
  readonly expiresAt: number;
}

export interface RecordWrite {
  readonly table: string;
  readonly id: string;
  /** null deletes the record. */
  readonly value: unknown;
  readonly partition?: string;
  readonly sort?: string;
  /** undefined writes unconditionally; 0 requires absence; n requires the current version to be n. */
  readonly expectedVersion?: number;
  readonly expiresAt?: number;
  /**
   * The record's current row (null: absent), given by a writer that is the record's only writer
   * and knows it from its own earlier writes (an entity's read models): a store that reads a record
   * before writing it need not. Only on unconditional writes; a store may check it, never relies
   * on more than it says.
   */
  readonly current?: KnownRow | null;
  /**
   * The record was never written with a partition (it has no index row): a store that reads a
   * record before deleting it, to find its index row, need not. Only on unconditional deletes; a
   * store may check it.
   */
  readonly unindexed?: true;
}

/**
 * The ownership a batch's events are appended under: the epoch its writer took for the shard (one
 * conditional write per takeover, Store.takeEpoch). A store that fences by epoch appends the
 * events without a per-event condition, then refuses the rest of the batch with Fenced when the
 * shard's epoch has moved on; the writer must know its entity's last seq (it recovered it). A
 * fenced batch's unconditional record writes need not be atomic with one another: they are an
 * entity's read models, which its next incarnation writes again (EntityBehavior.repair). A store
 * may write them in one request with the events, before the epoch check: a batch refused (Fenced)
 * or failed may then have landed its read models without its events, and its writer has the
 * entity's owner write them again (ActorHost's rewrite).
 */
export interface Fence {
  /** What the shards are of, e.g. the commands topic. */
  readonly scope: string;
  readonly shard: number;
  readonly epoch: number;
}

export interface Batch {
  /** Appended in order; each seq must follow the key's last one exactly. */
  readonly events?: readonly JournalEvent[];
  readonly writes?: readonly RecordWrite[];
  /** Set by a fenced writer (the actor host in cluster mode); stores without takeEpoch ignore it. */
  readonly fence?: Fence;
  /**
   * The batch's record writes need not land together: their reader takes each row on its own and
   * tolerates one missing or stale (the outbox's markers), so a store may skip what makes a batch
   * atomic (Cassandra's batchlog). A failed commit may then have landed in part.
   */
  readonly independent?: boolean;
}

export interface ScanOptions<T> {
  /** Only items whose sort key is strictly less than this (cursor paging, newest first). */
  readonly before?: string;
  readonly offset?: number;
  readonly limit: number;
  readonly filter?: (value: T) => boolean;
}

export interface ScanResult<T> {
  readonly items: readonly StoredRecord<T>[];
  /** Whether more matching items follow the last one returned. */
  readonly more: boolean;
  readonly total: number;
}

export interface StoreHealth {
  readonly ok: boolean;
  readonly message?: string;
}

export interface Store {
  /**
   * True when commits become durable in the order they were issued (one log): a commit issued
   * after another is durable only if the earlier one is, so a writer need not wait for the first.
   */
  readonly orderedCommits?: boolean;
  open(): Promise<void>;
  close(): Promise<void>;
  health(): Promise<StoreHealth>;
  get<T>(table: string, id: string): Promise<StoredRecord<T> | undefined>;
  /**
   * Durable when it resolves. Checks every condition first (a failure there writes nothing), then
   * appends the events (atomic and seq-fenced per key), then makes the conditional record writes in
   * batch order (compare-and-sets), then the unconditional ones, each with its index change. A step
   * that fails (a lost compare-and-set, an error, a crash) keeps the steps before it and skips the
   * rest, with no undo, and commit rejects (VersionConflict for a lost condition). See 1–5 above.
   */
  commit(batch: Batch): Promise<void>;
  events(key: string, afterSeq: number): Promise<readonly JournalEvent[]>;
  latestSnapshot(key: string): Promise<Snapshot | undefined>;
  saveSnapshot(snapshot: Snapshot): Promise<void>;
  scan<T>(table: string, partition: string, options: ScanOptions<T>): Promise<ScanResult<T>>;
  /**
   * Takes the next ownership epoch of a shard for `owner` (one conditional write): every fenced
   * commit of an older epoch of that shard is refused from now on. Absent where one process owns
   * every shard (the FileStore).
   */
  takeEpoch?(scope: string, shard: number, owner: string): Promise<number>;
}
