// Embedded store: all state in memory, every commit appended to one log file and fdatasync'ed
// before it resolves (group commit), replayed and compacted on open. Survives kill -9: a torn
// last line is dropped, and it was never acknowledged.
import { closeSync, existsSync, fdatasyncSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, writeSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { VersionConflict } from "../errors.js";
import type { Batch, JournalEvent, RecordWrite, ScanOptions, ScanResult, Snapshot, Store, StoredRecord, StoreHealth } from "./port.js";

/**
 * The log's format: one JSON object a line, `{e?, w?, s?}` (events, writes with the version they
 * produced, a snapshot). Backups name it; raise it when a line changes meaning, so that an older
 * build refuses to restore what it would misread.
 */
export const FILE_STORE_FORMAT = 1;

export const STORE_LOG = "store.log";

/**
 * The log's committed lines as they are now, read beside a running store (another process may).
 * A commit resolves only after its line is written and synced, and the log only grows between
 * opens (compaction at open renames a whole new file in): so every line acknowledged before this
 * call lies within the length it reads first, and cutting after the last newline drops only a
 * line still being written, never acknowledged. What remains is a prefix of the commits, as a
 * crash would leave it, which replay reads.
 */
export function readCommittedLog(dir: string): Buffer {
  const fd = openSync(path.join(dir, STORE_LOG), "r");
  try {
    const length = fstatSync(fd).size;
    const bytes = Buffer.alloc(length);
    for (let at = 0; at < length;) {
      const n = readSync(fd, bytes, at, length - at, at);
      if (n === 0) break;
      at += n;
    }
    return bytes.subarray(0, bytes.lastIndexOf(0x0a) + 1);
  } finally {
    closeSync(fd);
  }
}

/** A write as logged: with the version it produced, so replay and compaction keep versions. */
type LoggedWrite = RecordWrite & { readonly version?: number };

interface LogLine {
  e?: JournalEvent[];
  w?: LoggedWrite[];
  s?: Snapshot;
}

interface PendingWrite {
  readonly line: string;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
}

/** Index of the first entry whose sort key is not less than `sort` (the list is ascending). */
function lowerBound(list: readonly { sort: string }[], sort: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.sort < sort) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class FileStore implements Store {
  /** One log, appended and synced in commit order. */
  readonly orderedCommits = true;
  private readonly records = new Map<string, Map<string, StoredRecord>>();
  /** table \0 partition → sort keys with ids, ascending. */
  private readonly partitions = new Map<string, { sort: string; id: string }[]>();
  private readonly journals = new Map<string, JournalEvent[]>();
  private readonly snapshots = new Map<string, Snapshot>();
  private handle: FileHandle | undefined;
  private queue: PendingWrite[] = [];
  private flushing = false;
  private failure: unknown;

  constructor(private readonly dir: string) {}

  private get logPath(): string {
    return path.join(this.dir, STORE_LOG);
  }

  async open(): Promise<void> {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    if (existsSync(this.logPath)) this.replay(readFileSync(this.logPath, "utf8"));
    this.compact();
    this.handle = await open(this.logPath, "a", 0o600);
  }

  async close(): Promise<void> {
    while (this.flushing || this.queue.length > 0) await new Promise((r) => setTimeout(r, 2));
    await this.handle?.close();
    this.handle = undefined;
  }

  async health(): Promise<StoreHealth> {
    if (this.failure) return { ok: false, message: `store log write failed: ${String(this.failure)}` };
    if (!this.handle) return { ok: false, message: "store is not open" };
    return { ok: true };
  }

  async get<T>(table: string, id: string): Promise<StoredRecord<T> | undefined> {
    return this.live(this.records.get(table)?.get(id)) as StoredRecord<T> | undefined;
  }

  commit(batch: Batch): Promise<void> {
    if (!this.handle) return Promise.reject(new Error("store is not open"));
    if (this.failure) return Promise.reject(this.failure);
    try {
      this.check(batch);
    } catch (e) {
      return Promise.reject(e);
    }
    const line: LogLine = {};
    if (batch.events?.length) line.e = [...batch.events];
    if (batch.writes?.length) {
      line.w = batch.writes.map(({ current: _known, unindexed: _unindexed, ...w }) => ({
        ...w,
        version: (this.live(this.records.get(w.table)?.get(w.id))?.version ?? 0) + 1,
      }));
    }
    this.apply(line);
    return this.append(JSON.stringify(line));
  }

  async events(key: string, afterSeq: number): Promise<readonly JournalEvent[]> {
    return (this.journals.get(key) ?? []).filter((e) => e.seq > afterSeq);
  }

  async latestSnapshot(key: string): Promise<Snapshot | undefined> {
    return this.snapshots.get(key);
  }

  saveSnapshot(snapshot: Snapshot): Promise<void> {
    const current = this.snapshots.get(snapshot.key);
    if (current && current.seq >= snapshot.seq) return Promise.resolve();
    this.apply({ s: snapshot });
    return this.append(JSON.stringify({ s: snapshot }));
  }

  async scan<T>(table: string, partition: string, options: ScanOptions<T>): Promise<ScanResult<T>> {
    const index = this.partitions.get(`${table}\0${partition}`) ?? [];
    const rows = this.records.get(table);
    const items: StoredRecord<T>[] = [];
    let skip = options.offset ?? 0;
    let total = 0;
    let more = false;
    for (let i = index.length - 1; i >= 0; i--) {
      const entry = index[i]!;
      const record = this.live(rows?.get(entry.id)) as StoredRecord<T> | undefined;
      if (!record || (options.filter && !options.filter(record.value))) continue;
      total++;
      if (options.before !== undefined && entry.sort >= options.before) continue;
      if (skip > 0) {
        skip--;
        continue;
      }
      if (items.length < options.limit) items.push(record);
      else more = true;
    }
    return { items, more, total };
  }

  private live(record: StoredRecord | undefined): StoredRecord | undefined {
    if (!record) return undefined;
    return record.expiresAt !== 0 && record.expiresAt <= Date.now() ? undefined : record;
  }

  private check(batch: Batch): void {
    const nextSeq = new Map<string, number>();
    for (const event of batch.events ?? []) {
      const last = nextSeq.get(event.key) ?? this.journals.get(event.key)?.at(-1)?.seq ?? 0;
      if (event.seq !== last + 1) throw new VersionConflict(event.key, last + 1, event.seq);
      nextSeq.set(event.key, event.seq);
    }
    for (const write of batch.writes ?? []) {
      if (write.current !== undefined) this.checkKnown(write);
      if (write.unindexed && this.records.get(write.table)?.get(write.id)?.partition)
        throw new Error(`${write.table}/${write.id}: deleted as unindexed, but it has an index row`);
      if (write.expectedVersion === undefined) continue;
      const current = this.live(this.records.get(write.table)?.get(write.id))?.version ?? 0;
      if (current !== write.expectedVersion) throw new VersionConflict(`${write.table}/${write.id}`, write.expectedVersion, current);
    }
  }

  /** A writer's known row must be the row: nothing here relies on it, a Cassandra store does. */
  private checkKnown(write: RecordWrite): void {
    const row = this.records.get(write.table)?.get(write.id);
    const actual = row ? { version: row.version, partition: row.partition, sort: row.sort, expiresAt: row.expiresAt } : null;
    const known = write.current ?? null;
    const same = actual === null || known === null ? actual === known : Object.entries(known).every(([k, v]) => actual[k as keyof typeof actual] === v);
    if (!same) throw new Error(`${write.table}/${write.id}: the writer's known row ${JSON.stringify(known)} is not the stored ${JSON.stringify(actual)}`);
  }

  private apply(line: LogLine): void {
    for (const event of line.e ?? []) {
      let journal = this.journals.get(event.key);
      if (!journal) this.journals.set(event.key, (journal = []));
      journal.push(event);
    }
    for (const write of line.w ?? []) this.applyWrite(write);
    if (line.s) this.snapshots.set(line.s.key, line.s);
  }

  private applyWrite(write: LoggedWrite): void {
    let table = this.records.get(write.table);
    if (!table) this.records.set(write.table, (table = new Map()));
    const previous = table.get(write.id);
    if (previous) this.unindex(write.table, previous);
    if (write.value === null) {
      table.delete(write.id);
      return;
    }
    const record: StoredRecord = {
      id: write.id,
      version: write.version ?? (this.live(previous)?.version ?? 0) + 1,
      partition: write.partition ?? previous?.partition ?? "",
      sort: write.sort ?? previous?.sort ?? "",
      value: write.value,
      expiresAt: write.expiresAt ?? 0,
    };
    table.set(write.id, record);
    if (record.partition !== "") this.index(write.table, record);
  }

  private index(table: string, record: StoredRecord): void {
    const key = `${table}\0${record.partition}`;
    let list = this.partitions.get(key);
    if (!list) this.partitions.set(key, (list = []));
    list.splice(lowerBound(list, record.sort), 0, { sort: record.sort, id: record.id });
  }

  private unindex(table: string, record: StoredRecord): void {
    const list = this.partitions.get(`${table}\0${record.partition}`);
    if (!list) return;
    // From the first entry of this sort key, step over ties to the id.
    for (let at = lowerBound(list, record.sort); at < list.length && list[at]!.sort === record.sort; at++) {
      if (list[at]!.id === record.id) {
        list.splice(at, 1);
        return;
      }
    }
  }

  private append(line: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ line, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      try {
        await this.handle!.write(batch.map((p) => p.line + "\n").join(""));
        await this.handle!.datasync();
        for (const p of batch) p.resolve();
      } catch (e) {
        // Memory is now ahead of the disk: refuse every later write rather than acknowledge it.
        this.failure = e;
        for (const p of batch) p.reject(e);
      }
    }
    this.flushing = false;
  }

  private replay(text: string): void {
    for (const raw of text.split("\n")) {
      if (raw === "") continue;
      let line: LogLine;
      try {
        line = JSON.parse(raw) as LogLine;
      } catch {
        break; // a torn tail from a crash mid-write: it was never acknowledged
      }
      this.apply(line);
    }
  }

  /** Rewrites the log as its live content, atomically (write, fsync, rename). */
  private compact(): void {
    const tmp = `${this.logPath}.compact`;
    const fd = openSync(tmp, "w", 0o600);
    const write = (line: LogLine) => writeSync(fd, JSON.stringify(line) + "\n");
    for (const [table, rows] of this.records) {
      for (const r of rows.values()) {
        if (!this.live(r)) continue;
        write({ w: [{ table, id: r.id, value: r.value, partition: r.partition, sort: r.sort, expiresAt: r.expiresAt, version: r.version }] });
      }
    }
    for (const events of this.journals.values()) if (events.length) write({ e: events });
    for (const s of this.snapshots.values()) write({ s });
    fdatasyncSync(fd);
    closeSync(fd);
    renameSync(tmp, this.logPath);
  }
}
