// The store port: an event journal with snapshots for persistent actors, and versioned records
// with ordered partitions for read models, uniqueness and idempotency. One contract, several adapters.

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
}

export interface Batch {
  /** Appended in order; each seq must follow the key's last one exactly. */
  readonly events?: readonly JournalEvent[];
  readonly writes?: readonly RecordWrite[];
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
  open(): Promise<void>;
  close(): Promise<void>;
  health(): Promise<StoreHealth>;
  get<T>(table: string, id: string): Promise<StoredRecord<T> | undefined>;
  /** Atomic and durable when it resolves; rejects with VersionConflict when a condition fails. */
  commit(batch: Batch): Promise<void>;
  events(key: string, afterSeq: number): Promise<readonly JournalEvent[]>;
  latestSnapshot(key: string): Promise<Snapshot | undefined>;
  saveSnapshot(snapshot: Snapshot): Promise<void>;
  scan<T>(table: string, partition: string, options: ScanOptions<T>): Promise<ScanResult<T>>;
}
