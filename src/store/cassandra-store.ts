// Cassandra adapter of the store port (cluster mode). Schema: infra/cql/*.cql.
//
// Journal, fenced by epoch (a batch with `fence`, the actor host in cluster mode): the host took
// its shard's epoch with one lightweight transaction when it was assigned the shard (takeEpoch),
// and knows each entity's last seq from recovering it. Its events are a plain single-partition
// write stamped with the epoch (the row's `epoch`, and a write timestamp whose high bits are the
// epoch, so a stale owner's row never replaces a newer owner's one at the same seq). Once they are
// written the shard's epoch row is read: an epoch that has moved on fails the commit with Fenced
// before any record is written, and the host answers "retry" (its events may stay: a reader
// keeps them only where no newer epoch's row precedes them). A commit that passes the check was
// durable before the new owner took the shard, so the new owner's recovery reads it. Readers
// (events) drop every row whose epoch is lower than an earlier row's: the tail a stale owner
// wrote past a newer owner's rows. docs/decisions.md says why this replaced a Paxos round per event.
//
// Journal, unfenced (a batch without `fence`: tests, tools): a batch's events for one key are
// one single-partition lightweight transaction (INSERT ... IF NOT EXISTS; a conditional BATCH when
// there are several), so a stale owner that writes a sequence number that already exists fails.
// Before it, the key's last seq is read and the events must continue it exactly (no gap). Either
// failure is a VersionConflict.
//
// Records. A write with expectedVersion is a compare-and-set (LWT) on the exact row it read
// (version, partition, sort, expiresAt — or absence), and the condition itself is the FileStore's:
// the live version (0 when absent or expired) must equal expectedVersion. A write without it is
// read-then-write (its version is the previous live one + 1, last write wins). Records are
// written with UPDATE only (never INSERT), so a row exists exactly while its columns do; rows with
// expiresAt also carry a Cassandra TTL (rounded up to a second) so they are purged, while reads
// check expires_at to the millisecond like the FileStore. record_index (one row per partition
// entry, value and version denormalised) is kept in step: the old (part, sort) row is deleted
// when a write moves or deletes a record.
//
// commit(batch) applies the port's steps (port.ts) one after another, each its own write:
//   0. Read the last seq of every event key (not in a fenced commit) and the current row of every
//      record written, and check every condition against that state (as the FileStore does); a
//      failure throws VersionConflict and nothing is written.
//   1. a. The events of each key, one lightweight transaction each (LOCAL_SERIAL; SERIAL with
//      consistency "global"; the commit at LOCAL_QUORUM / QUORUM); in a fenced commit one plain
//      write each, then the read of the shard's epoch (Journal, fenced by epoch, above).
//      b. Each conditionally written record, in the order records first appear in the batch: one
//      compare-and-set of its final state (all its writes in the batch collapse into one), then its
//      record_index change. A compare-and-set that loses to a concurrent change re-reads at SERIAL
//      and retries while the condition still holds; one whose outcome is unknown (timeout, lost
//      connection) is resolved by a SERIAL read.
//   2. The unconditional record writes with their record_index changes.
//   Writes without a condition (2, and the index changes of 1b) go as logged batches (unlogged in a
//   fenced commit: an actor's read models, which its next incarnation rewrites; and in an
//   independent one, Batch.independent: the outbox's markers, read one row at a time), each atomic
//   through the batchlog (a new one above ~40 kB, Cassandra's batch size limit; a single record
//   larger than that statement by statement). They are idempotent and retried once; one that timed
//   out after reaching the batchlog counts as written (Cassandra replays it).
// A failed step rejects the commit (VersionConflict when a condition lost a race, else the error);
// the steps after it do not run and those before it stay. A crash or a lost connection between
// steps leaves such a prefix too: events without their read-model rows, a uniqueness claim without
// the record it names, a record whose index row is missing or stale. Nothing here repairs it;
// callers are written to tolerate it.
// Concurrent unconditional writes to one record are last-write-wins and can give two writes the
// same version. Non-LWT writes use server-side timestamps so they order consistently with LWT
// (ballot) timestamps; that assumes synchronised server clocks.
// Gathered requests (gather.ts), on a one-node cluster only (on several, a request of several
// partitions makes its coordinator forward to the others, which Cassandra advises against: each
// item then goes alone and token-aware): while one request of a kind is in flight, the same
// requests of other callers wait and go together in the next one. Fenced appends and fenced
// commits' read models go as one unlogged batch (whole items, at most 4 kB in all, below
// Cassandra's batch size warning; atomic per partition, which is all either needs; a failed batch
// of several is tried item by item); the shard epoch checks of fenced commits as one read (a check
// joins only a read that begins after its append ended); recoveries' snapshot and journal reads,
// and record reads (gets and the reads before writes; not SERIAL ones), as one `IN` read each.
// Measured alone, a fenced commit then costs Cassandra less than half the CPU (docs/decisions.md).
// Scans read the whole index partition (driver paging, 500 rows a page) for the total, applying
// expiry and the filter client-side; sort keys compare in UTF-8 byte order (same as JavaScript's
// for ASCII keys).
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import cassandra from "cassandra-driver";
import { ConfigError, type ClusterConfig, type TlsFiles } from "../config.js";
import { certificateProblem, tlsClientOptions } from "../tls-client.js";
import { cqlRequests, cqlStatements } from "../metrics.js";
import { Fenced, StoreUnavailable, VersionConflict } from "../errors.js";
import { Gather, togetherOrAlone, type Outcome } from "./gather.js";
import type { Batch, Fence, JournalEvent, RecordWrite, ScanOptions, ScanResult, Snapshot, Store, StoredRecord, StoreHealth } from "./port.js";

const { Client, types, errors: driverErrors, auth } = cassandra;
type Client = InstanceType<typeof Client>;
type Row = cassandra.types.Row;
type ResultSet = cassandra.types.ResultSet;

/** Environment settings these options usually come from; ConfigError names them. */
export const CassandraSettings = {
  contactPoints: "MEDIA_CASSANDRA_CONTACT_POINTS",
  localDataCenter: "MEDIA_CASSANDRA_LOCAL_DC",
  keyspace: "MEDIA_CASSANDRA_KEYSPACE",
  replication: "MEDIA_CASSANDRA_REPLICATION",
  username: "MEDIA_CASSANDRA_USERNAME",
  password: "MEDIA_CASSANDRA_PASSWORD",
  caFile: "MEDIA_CASSANDRA_SSL_CA_FILE",
  verifyHostname: "MEDIA_CASSANDRA_SSL_HOSTNAME_VERIFICATION",
} as const;

/** Where Cassandra is and how to log in: every Cassandra client of a process (and of the tests) takes the same. */
export interface CassandraConnection {
  /** host or host:port */
  readonly contactPoints: readonly string[];
  readonly localDataCenter: string;
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  /** Client TLS (MEDIA_CASSANDRA_SSL=on); undefined: plaintext. */
  readonly tls?: (TlsFiles & { readonly verifyHostname: boolean }) | undefined;
}

export const cassandraConnection = (c: ClusterConfig): CassandraConnection => ({
  contactPoints: c.cassandraContactPoints,
  localDataCenter: c.cassandraLocalDataCenter,
  username: c.cassandraUsername,
  password: c.cassandraPassword,
  tls: c.cassandraTls,
});

/** The driver's options for a connection: contact points, data centre, password login, TLS. */
export function cassandraClientOptions(c: CassandraConnection): cassandra.ClientOptions {
  return {
    contactPoints: [...c.contactPoints],
    localDataCenter: c.localDataCenter,
    ...(c.username !== undefined ? { authProvider: new auth.PlainTextAuthProvider(c.username, c.password ?? "") } : {}),
    ...(c.tls
      ? {
          sslOptions: {
            ...tlsClientOptions(c.tls),
            // Off: the chain is still verified, only the name is not (nodes reached by address behind a name).
            ...(c.tls.verifyHostname ? {} : { checkServerIdentity: () => undefined }),
          },
        }
      : {}),
  };
}

export interface CassandraStoreOptions extends CassandraConnection {
  readonly keyspace: string;
  /** CQL replication map for CREATE KEYSPACE; default {'class':'SimpleStrategy','replication_factor':1}. */
  readonly replication?: string;
  /** Apply infra/cql/*.cql in order on open, recording them in schema_version (default true). */
  readonly createSchema?: boolean;
  /** "local" (default): LOCAL_QUORUM and LOCAL_SERIAL; "global": QUORUM and SERIAL. */
  readonly consistency?: "local" | "global";
  /** Folder of the versioned CQL files; default <repo>/infra/cql. */
  readonly schemaDir?: string;
}

const DEFAULT_REPLICATION = "{'class':'SimpleStrategy','replication_factor':1}";
const PAGE = 500;
/**
 * Below Cassandra's default batch_size_fail_threshold (50 KiB); above its default
 * batch_size_warn_threshold (5 KiB), which our nodes raise (infra/cassandra.sh,
 * docs/operations.md). A fenced commit's events and read models go as one request up to this;
 * a larger one appends its events, checks its epoch, then writes its read models.
 */
const BATCH_BYTES = 40_000;
/**
 * The most one gathered unlogged batch carries (by statementBytes), below Cassandra's default
 * batch_size_warn_threshold (5 KiB), which logs a warning for every batch above it. An item
 * larger than this goes in a batch of its own, as it did before gathering.
 */
const GATHERED_BATCH_BYTES = 4_000;
/** The most items gathered into one request. */
const GATHER_MOST = 64;
const MAX_TTL = 630_720_000; // Cassandra's maximum: 20 years
const CAS_ATTEMPTS = 4;
const HEALTH_TIMEOUT_MS = 2_000;
/** Write timestamps of fenced appends: the epoch above bit 40, milliseconds since 2026 below (35 years). */
const STAMP_BASE_MS = Date.UTC(2026, 0, 1);
const STAMP_EPOCH_SHIFT = 40n;
const EPOCH_ATTEMPTS = 8;
const DDL_TIMEOUT_MS = 60_000;

/** A records row as stored; value is JSON text. */
interface RowState {
  readonly version: number;
  readonly part: string;
  readonly sort: string;
  readonly value: string;
  readonly expiresAt: number;
}
type State = RowState | undefined;

/** Every write of one record in a batch, collapsed into one change from `before` to `after`. */
interface RecordPlan {
  readonly table: string;
  readonly id: string;
  readonly writes: RecordWrite[];
  expected: number | undefined;
  before: State;
  after: State;
}

/** The events of one key in a batch, with their data as stored. */
interface EventsStep {
  readonly key: string;
  readonly events: readonly JournalEvent[];
  readonly data: readonly string[];
}

interface Statement {
  readonly query: string;
  readonly params: unknown[];
}

/** Items' values grouped by their keys (`pair` gives both), each group without repeats, as entries. */
function groupSets<T, K, V>(items: readonly T[], pair: (t: T) => readonly [K, V]): [K, Set<V>][] {
  const out = new Map<K, Set<V>>();
  for (const t of items) {
    const [k, v] = pair(t);
    let set = out.get(k);
    if (!set) out.set(k, (set = new Set()));
    set.add(v);
  }
  return [...out];
}

/** About what a statement adds to a batch, for Cassandra's batch size limit. */
const statementBytes = (s: Statement): number => 64 + s.params.reduce<number>((m, p) => m + (typeof p === "string" ? Buffer.byteLength(p) : 8), 0);
/** About what statements that go together add to a batch. */
const groupBytes = (group: readonly Statement[]): number => group.reduce((n, s) => n + statementBytes(s), 0);
const json = (value: unknown): string => JSON.stringify(value) ?? "null";
const num = (v: unknown): number => (v === null || v === undefined ? 0 : types.Long.isLong(v) ? (v as cassandra.types.Long).toNumber() : Number(v));
const live = (s: State, now: number): State => (s && (s.expiresAt === 0 || s.expiresAt > now) ? s : undefined);
const ttlOf = (expiresAt: number, now: number): number => (expiresAt === 0 ? 0 : Math.min(MAX_TTL, Math.max(1, Math.ceil((expiresAt - now) / 1000))));
const sameRow = (a: State, b: State): boolean =>
  a === b || (!!a && !!b && a.version === b.version && a.part === b.part && a.sort === b.sort && a.value === b.value && a.expiresAt === b.expiresAt);

/**
 * The row a record's only writer says it has (RecordWrite.current), in place of reading it:
 * undefined when none is given, or when the batch also writes the record conditionally. The value
 * is never compared on an unconditional write.
 */
function knownState(writes: readonly RecordWrite[]): { readonly state: State } | undefined {
  // Deletes of a record without an index row: what its row was changes nothing that is written.
  if (writes.every((x) => x.unindexed === true && x.value === null && x.expectedVersion === undefined)) return { state: undefined };
  const w = writes[0]!;
  if (w.current === undefined || writes.some((x) => x.expectedVersion !== undefined || x.current !== w.current)) return undefined;
  const k = w.current;
  return { state: k ? { version: k.version, part: k.partition, sort: k.sort, value: "", expiresAt: k.expiresAt } : undefined };
}

function rowState(row: Row | undefined): State {
  if (!row || row["version"] === null || row["version"] === undefined) return undefined;
  return {
    version: num(row["version"]),
    part: (row["part"] as string | null) ?? "",
    sort: (row["sort"] as string | null) ?? "",
    value: (row["value"] as string | null) ?? "null",
    expiresAt: num(row["expires_at"]),
  };
}

/**
 * The FileStore's fold of a batch's writes to one record: the version is the live one before the
 * batch + 1 (however many writes), partition and sort are inherited from the write before.
 */
function fold(before: State, writes: readonly RecordWrite[], now: number): State {
  const version = (live(before, now)?.version ?? 0) + 1;
  let current = before;
  for (const w of writes) {
    if (w.value === null) {
      current = undefined;
      continue;
    }
    current = {
      version,
      part: w.partition ?? current?.part ?? "",
      sort: w.sort ?? current?.sort ?? "",
      value: json(w.value),
      expiresAt: w.expiresAt ?? 0,
    };
  }
  return current;
}

const isAuthError = (e: unknown): boolean =>
  e instanceof driverErrors.AuthenticationError || (e instanceof driverErrors.ResponseError && e.code === types.responseErrorCodes.badCredentials);

export class CassandraStore implements Store {
  private client: Client | undefined;
  private readonly keyspace: string;
  private readonly replication: string;
  private readonly consistency: number;
  private readonly serial: number;
  private readonly q: ReturnType<typeof queries>;
  /** The last write timestamp given to a fenced append: timestamps only grow within a process. */
  private lastStamp = 0n;
  // Concurrent commits' and recoveries' requests of one kind, gathered into one (gather.ts).
  /** Fenced appends and fenced commits' read models: unlogged, each item's rows atomic per partition. */
  private readonly unlogged = this.gather((items: readonly (readonly Statement[])[]) => this.sendUnlogged(items));
  /** Shard epochs read after fenced appends: one read answers every append that ended before it began. */
  private readonly epochs = this.gather((items: readonly { readonly scope: string; readonly shard: number }[]) => this.readEpochs(items));
  private readonly snapshots = this.gather((keys: readonly string[]) => this.readSnapshots(keys));
  /** Record reads (gets, and the reads before unknown unconditional writes); SERIAL ones go alone. */
  private readonly rows = this.gather((items: readonly { readonly table: string; readonly id: string }[]) => this.readRows(items));
  private readonly journals = this.gather((items: readonly { readonly key: string; readonly afterSeq: number }[]) => this.readJournals(items));

  constructor(private readonly options: CassandraStoreOptions) {
    this.keyspace = options.keyspace;
    this.replication = options.replication ?? DEFAULT_REPLICATION;
    const global = options.consistency === "global";
    this.consistency = global ? types.consistencies.quorum : types.consistencies.localQuorum;
    this.serial = global ? types.consistencies.serial : types.consistencies.localSerial;
    this.q = queries(this.keyspace);
  }

  async open(): Promise<void> {
    if (this.client) return;
    const o = this.options;
    if (o.contactPoints.length === 0 || o.contactPoints.some((c) => c.trim() === "")) {
      throw new ConfigError(CassandraSettings.contactPoints, "needs at least one host or host:port");
    }
    if (!/^[a-z][a-z0-9_]{0,47}$/.test(this.keyspace)) {
      throw new ConfigError(
        CassandraSettings.keyspace,
        `"${this.keyspace}" is not a keyspace name: lowercase letters, digits and _, starting with a letter, at most 48`,
      );
    }
    if (!/^\{[^;]*\}$/s.test(this.replication.trim())) {
      throw new ConfigError(CassandraSettings.replication, `must be a CQL map such as ${DEFAULT_REPLICATION}, got "${this.replication}"`);
    }
    if (!o.localDataCenter) throw new ConfigError(CassandraSettings.localDataCenter, "is required (e.g. datacenter1)");
    const client = new Client({
      ...cassandraClientOptions(o),
      queryOptions: { consistency: this.consistency, serialConsistency: this.serial, prepare: true, fetchSize: PAGE },
      socketOptions: { connectTimeout: 5_000, readTimeout: 12_000 },
      // Server-side timestamps: ordered with the ballot timestamps of the LWTs on the same rows.
      policies: { timestampGeneration: null as never },
    });
    try {
      await client.connect();
    } catch (e) {
      await dispose(client);
      throw this.connectError(e);
    }
    countStatements(client, this.q);
    try {
      this.client = client;
      if (o.createSchema ?? true) await this.applySchema(client);
      else await this.checkSchema(client);
    } catch (e) {
      this.client = undefined;
      await client.shutdown().catch(() => {});
      throw e;
    }
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    await client?.shutdown();
  }

  async health(): Promise<StoreHealth> {
    const client = this.client;
    if (!client) return { ok: false, message: "store is not open" };
    try {
      await client.execute("SELECT release_version FROM system.local", [], {
        prepare: true,
        readTimeout: HEALTH_TIMEOUT_MS,
        consistency: types.consistencies.localOne,
        isIdempotent: true,
      });
      return { ok: true };
    } catch (e) {
      return { ok: false, message: `cassandra: ${e instanceof Error ? e.message : String(e)}` };
    }
  }

  async get<T>(table: string, id: string): Promise<StoredRecord<T> | undefined> {
    const state = live(await this.readRow(table, id, this.consistency), Date.now());
    return state ? toRecord<T>(id, state) : undefined;
  }

  async commit(batch: Batch): Promise<void> {
    const client = this.open_();
    const events = batch.events ?? [];
    const writes = batch.writes ?? [];
    if (events.length === 0 && writes.length === 0) return;

    // 0. Read the state every condition refers to, and check them all before writing anything.
    const byKey = new Map<string, JournalEvent[]>();
    for (const e of events) {
      let list = byKey.get(e.key);
      if (!list) byKey.set(e.key, (list = []));
      list.push(e);
    }
    const plans = new Map<string, RecordPlan>();
    for (const w of writes) {
      const k = `${w.table}\0${w.id}`;
      let plan = plans.get(k);
      if (!plan) plans.set(k, (plan = { table: w.table, id: w.id, writes: [], expected: undefined, before: undefined, after: undefined }));
      plan.writes.push(w);
    }
    const fence = batch.fence;
    // A fenced writer knows each key's last seq (it recovered the entity): only the batch's own
    // order is checked; the epoch, checked after the append, stands for the rest.
    const [lastSeqs] = await Promise.all([
      Promise.all([...byKey.entries()].map(([key, list]) => (fence ? list[0]!.seq - 1 : this.lastSeq(key)))),
      Promise.all(
        [...plans.values()].map(async (p) => {
          const known = knownState(p.writes);
          p.before = known ? known.state : await this.readRow(p.table, p.id, this.consistency);
        }),
      ),
    ]);
    [...byKey.entries()].forEach(([key, list], i) => {
      let last = lastSeqs[i]!;
      for (const e of list) {
        if (e.seq !== last + 1) throw new VersionConflict(key, last + 1, e.seq);
        last = e.seq;
      }
    });
    const now = Date.now();
    for (const w of writes) {
      if (w.expectedVersion === undefined) continue;
      const plan = plans.get(`${w.table}\0${w.id}`)!;
      const current = live(plan.before, now)?.version ?? 0;
      if (current !== w.expectedVersion) throw new VersionConflict(`${w.table}/${w.id}`, w.expectedVersion, current);
      plan.expected = w.expectedVersion;
    }
    for (const plan of plans.values()) plan.after = fold(plan.before, plan.writes, now);
    await this.afterPrecheck();

    // 1. The events, then each compare-and-set and its index change; a failure keeps what came before.
    // A fenced writer's records are its entity's read models, which its next incarnation writes
    // again (repair), and an independent batch's rows stand alone (Batch.independent): they go as
    // plain (unlogged) batches, without the batchlog's extra writes.
    const logged = !fence && batch.independent !== true;
    if (fence) {
      const appends = [...byKey.values()].map((list) => this.appendStatements(list, fence));
      // The events and the read models in one request, then the epoch check (Fence): a refused
      // batch may have landed its read models, which its writer has the owner write again.
      const together =
        appends.length > 0 && [...plans.values()].every((p) => p.expected === undefined) ? [...appends.flat(), ...this.rowGroups(plans.values()).flat()] : [];
      if (together.length > 0 && groupBytes(together) <= BATCH_BYTES) {
        await this.unlogged.run(together);
        await this.checkFence(fence);
        return;
      }
      for (const statements of appends) await this.unlogged.run(statements);
      if (appends.length > 0) await this.checkFence(fence);
    } else {
      for (const [key, list] of byKey) await this.appendEvents(client, { key, events: list, data: list.map((e) => json(e.data)) });
    }
    const unconditional: RecordPlan[] = [];
    for (const plan of plans.values()) {
      if (plan.expected === undefined) {
        unconditional.push(plan);
        continue;
      }
      await this.compareAndSet(plan);
      await this.writeLogged(client, [plan], logged);
    }
    // 2. The unconditional writes with their index changes.
    await this.writeLogged(client, unconditional, logged);
  }

  async events(key: string, afterSeq: number): Promise<readonly JournalEvent[]> {
    return this.journals.run({ key, afterSeq });
  }

  async takeEpoch(scope: string, shard: number, owner: string): Promise<number> {
    const client = this.open_();
    for (let attempt = 1; ; attempt++) {
      const row = (await client.execute(this.q.epochGet, [scope, shard], { consistency: this.serial, isIdempotent: true })).first();
      const current = row ? num(row["epoch"]) : 0;
      const next = current + 1;
      const takenAt = Date.now();
      const set = [next, owner, takenAt, scope, shard];
      try {
        const rs = row
          ? await client.execute(this.q.epochTakeFrom, [...set, current], { serialConsistency: this.serial })
          : await client.execute(this.q.epochTakeFirst, set, { serialConsistency: this.serial });
        if (rs.wasApplied()) return next;
      } catch (e) {
        if (attempt >= EPOCH_ATTEMPTS) throw e;
        // Unknown outcome: a SERIAL read settles it; ours if the row names this owner and instant.
        const settled = (await client.execute(this.q.epochGet, [scope, shard], { consistency: this.serial, isIdempotent: true })).first();
        if (settled && num(settled["epoch"]) === next && settled["owner"] === owner && num(settled["taken_at"]) === takenAt) return next;
      }
      if (attempt >= EPOCH_ATTEMPTS) throw new VersionConflict(`shard_epochs/${scope}/${shard}`, current, current + 1);
    }
  }

  async latestSnapshot(key: string): Promise<Snapshot | undefined> {
    return this.snapshots.run(key);
  }

  async saveSnapshot(snapshot: Snapshot): Promise<void> {
    const current = await this.latestSnapshot(snapshot.key);
    if (current && current.seq >= snapshot.seq) return;
    await this.open_().execute(this.q.snapshotPut, [snapshot.key, snapshot.seq, json(snapshot.data), snapshot.createdAt], { isIdempotent: true });
  }

  async scan<T>(table: string, partition: string, options: ScanOptions<T>): Promise<ScanResult<T>> {
    const first = await this.scanPass(table, partition, options, undefined);
    // A stale index row (left by a failure between steps, or by racing unconditional writers)
    // sorted ahead of the current one: count again, keeping only the newest version of each id.
    return first.winners ? (await this.scanPass(table, partition, options, first.winners)).result : first.result;
  }

  /** Hook between the checks of a commit and its first write; tests use it to interleave a racing writer. */
  protected async afterPrecheck(): Promise<void> {}

  // ── commit steps ──

  /** A fenced append of one key's events: plain writes (atomic: one partition), stamped with the epoch. */
  private appendStatements(events: readonly JournalEvent[], fence: Fence): Statement[] {
    const stamp = types.Long.fromString(this.stamp(fence.epoch).toString());
    // Idempotent: a retry writes the same cells with the same timestamp.
    return events.map((e): Statement => ({ query: this.q.journalAppend, params: [e.key, e.seq, json(e.data), e.createdAt, fence.epoch, stamp] }));
  }

  /** Fails with Fenced when the shard has been taken since the writer took its epoch. */
  protected async checkFence(fence: Fence): Promise<void> {
    const current = await this.epochs.run({ scope: fence.scope, shard: fence.shard });
    if (current !== fence.epoch) throw new Fenced(fence.scope, fence.shard, fence.epoch, current);
  }

  // ── gathered requests ──

  private gather<I, R>(send: (items: readonly I[]) => Promise<readonly Outcome<R>[]>): Gather<I, R> {
    return new Gather(send, GATHER_MOST, () => this.spread());
  }

  /**
   * Whether the cluster has more than one node: then a request of several partitions would make its
   * coordinator forward to the others (Cassandra advises against multi-partition batches and `IN`
   * reads there), so each item goes alone and token-aware, as before gathering.
   */
  protected spread(): boolean {
    return (this.client?.hosts.length ?? 1) > 1;
  }

  /**
   * Unlogged batches of whole items up to GATHERED_BATCH_BYTES (an item larger than that alone),
   * side by side; a batch of several items that fails is tried again item by item, so one item's fault
   * (or a timeout) is its own. Every item is idempotent.
   */
  private async sendUnlogged(items: readonly (readonly Statement[])[]): Promise<Outcome<void>[]> {
    const client = this.open_();
    const chunks: { at: number[]; items: (readonly Statement[])[] }[] = [];
    let chunk: { at: number[]; items: (readonly Statement[])[] } | undefined;
    let bytes = 0;
    items.forEach((item, i) => {
      const size = groupBytes(item);
      if (!chunk || bytes + size > GATHERED_BATCH_BYTES) {
        chunks.push((chunk = { at: [], items: [] }));
        bytes = 0;
      }
      chunk.at.push(i);
      chunk.items.push(item);
      bytes += size;
    });
    const out: Outcome<void>[] = [];
    await Promise.all(
      chunks.map(async (c) => {
        const outcomes = await togetherOrAlone(c.items, async (some) => {
          await this.run(client, some.flat(), { idempotent: true, unlogged: true });
          return some.map(() => undefined);
        });
        c.at.forEach((i, j) => (out[i] = outcomes[j]!));
      }),
    );
    return out;
  }

  private async readEpochs(items: readonly { readonly scope: string; readonly shard: number }[]): Promise<Outcome<number>[]> {
    const client = this.open_();
    const found = new Map<string, number>();
    await Promise.all(
      groupSets(items, (i) => [i.scope, i.shard] as const).map(async ([scope, shards]) => {
        const rs = await client.execute(this.q.epochsIn, [scope, [...shards]], { isIdempotent: true });
        for (const row of rs.rows) found.set(`${scope}\0${num(row["shard"])}`, num(row["epoch"]));
      }),
    );
    return items.map(({ scope, shard }) => ({ ok: true, value: found.get(`${scope}\0${shard}`) ?? 0 }));
  }

  private async readRows(items: readonly { readonly table: string; readonly id: string }[]): Promise<Outcome<State>[]> {
    const client = this.open_();
    const found = new Map<string, State>();
    await Promise.all(
      groupSets(items, (i) => [i.table, i.id] as const).map(async ([table, ids]) => {
        // One record alone is read as before gathering (recordGet).
        const only = ids.size === 1 ? [...ids][0]! : undefined;
        const rs = only
          ? await client.execute(this.q.recordGet, [table, only], { isIdempotent: true })
          : await client.execute(this.q.recordsIn, [table, [...ids]], { isIdempotent: true });
        for (const row of rs.rows) found.set(`${table}\0${only ?? (row["id"] as string)}`, rowState(row));
      }),
    );
    return items.map(({ table, id }) => ({ ok: true, value: found.get(`${table}\0${id}`) }));
  }

  private async readSnapshots(keys: readonly string[]): Promise<Outcome<Snapshot | undefined>[]> {
    const rs = await this.open_().execute(this.q.snapshotsIn, [[...new Set(keys)]], { isIdempotent: true });
    const found = new Map<string, Snapshot>();
    for (const row of rs.rows) {
      const key = row["key"] as string;
      found.set(key, { key, seq: num(row["seq"]), data: JSON.parse(row["data"] as string) as unknown, createdAt: num(row["created_at"]) });
    }
    return keys.map((key) => ({ ok: true, value: found.get(key) }));
  }

  /** The journals of several keys: one read per distinct starting seq (recoveries mostly start at 0 or a snapshot's). */
  private async readJournals(items: readonly { readonly key: string; readonly afterSeq: number }[]): Promise<Outcome<JournalEvent[]>[]> {
    const client = this.open_();
    const found = new Map<string, JournalEvent[]>();
    await Promise.all(
      groupSets(items, (i) => [i.afterSeq, i.key] as const).map(async ([afterSeq, keys]) => {
        // From the row at afterSeq (a snapshot's, a relay's mark), whose epoch the rows after it must not go below.
        const rs = await client.execute(this.q.journalsFrom, [[...keys], afterSeq], { fetchSize: PAGE, isIdempotent: true });
        const epochs = new Map<string, number>();
        for await (const row of rs) {
          const key = row["key"] as string;
          const seq = num(row["seq"]);
          const rowEpoch = num(row["epoch"]);
          if (rowEpoch < (epochs.get(key) ?? 0)) continue; // a stale owner's row after a newer owner's: never kept
          epochs.set(key, rowEpoch);
          if (seq <= afterSeq) continue;
          const at = `${afterSeq}\0${key}`;
          let list = found.get(at);
          if (!list) found.set(at, (list = []));
          list.push({ key, seq, data: JSON.parse(row["data"] as string) as unknown, createdAt: num(row["created_at"]) });
        }
      }),
    );
    // Each caller its own copy: two recoveries of one key may share a read.
    return items.map(({ key, afterSeq }) => ({ ok: true, value: [...(found.get(`${afterSeq}\0${key}`) ?? [])] }));
  }

  /** The write timestamp of a fenced append: the epoch in the high bits, growing within this process. */
  protected stamp(epoch: number): bigint {
    const high = BigInt(epoch) << STAMP_EPOCH_SHIFT;
    let next = high | BigInt(Math.max(0, Date.now() - STAMP_BASE_MS));
    if (next <= this.lastStamp && this.lastStamp >> STAMP_EPOCH_SHIFT === BigInt(epoch)) next = this.lastStamp + 1n;
    this.lastStamp = next;
    return next;
  }

  private async lastSeq(key: string, consistency = this.consistency): Promise<number> {
    const row = (await this.open_().execute(this.q.journalLast, [key], { consistency, isIdempotent: true })).first();
    return row ? num(row["seq"]) : 0;
  }

  private async appendEvents(client: Client, step: EventsStep): Promise<void> {
    const statements = step.events.map((e, i): Statement => ({ query: this.q.journalInsert, params: [e.key, e.seq, step.data[i], e.createdAt] }));
    const first = step.events[0]!;
    for (let attempt = 1; ; attempt++) {
      let applied: boolean | undefined;
      try {
        applied = (await this.run(client, statements, { serial: true })).wasApplied();
      } catch (e) {
        if (attempt >= CAS_ATTEMPTS) throw e;
        applied = await this.resolveEvents(step); // undefined: not applied, nobody else's either
        if (applied === undefined) continue;
      }
      if (applied) return;
      const last = await this.lastSeq(step.key, this.serial);
      throw new VersionConflict(step.key, last + 1, first.seq);
    }
  }

  /** After an LWT with an unknown outcome: true if ours is in, false if another writer's is, undefined if neither. */
  private async resolveEvents(step: EventsStep): Promise<boolean | undefined> {
    const first = step.events[0]!;
    const last = step.events.at(-1)!;
    const rs = await this.open_().execute(this.q.journalRange, [step.key, first.seq, last.seq], { consistency: this.serial });
    if (rs.rows.length === 0) return undefined;
    return step.events.every((e, i) => {
      const row = rs.rows.find((r) => num(r["seq"]) === e.seq);
      return row !== undefined && row["data"] === step.data[i] && num(row["created_at"]) === e.createdAt;
    });
  }

  /** Compare-and-set of one record from plan.before to plan.after, re-reading on a lost race. */
  private async compareAndSet(plan: RecordPlan): Promise<void> {
    const key = `${plan.table}/${plan.id}`;
    for (let attempt = 1; ; attempt++) {
      const statement = this.casStatement(plan);
      let applied = false;
      let unknown = false;
      try {
        applied = (await this.open_().execute(statement.query, statement.params, { serialConsistency: this.serial })).wasApplied();
      } catch (e) {
        if (attempt >= CAS_ATTEMPTS) throw e;
        unknown = true; // resolved below by a SERIAL read, which settles any in-flight proposal
      }
      if (applied) return;
      const current = await this.readRow(plan.table, plan.id, this.serial);
      if (unknown && sameRow(current, plan.after)) return; // the lost answer was a success
      const now = Date.now();
      const version = live(current, now)?.version ?? 0;
      if (version !== plan.expected || attempt >= CAS_ATTEMPTS) throw new VersionConflict(key, plan.expected ?? 0, version);
      plan.before = current;
      plan.after = fold(current, plan.writes, now);
    }
  }

  private casStatement(plan: RecordPlan): Statement {
    const { table, id, before, after } = plan;
    const now = Date.now();
    if (after) {
      const set = [ttlOf(after.expiresAt, now), after.version, after.part, after.sort, after.value, after.expiresAt, table, id];
      return before
        ? { query: this.q.recordPutIfState, params: [...set, before.version, before.part, before.sort, before.expiresAt] }
        : { query: this.q.recordPutIfAbsent, params: set };
    }
    return before
      ? { query: this.q.recordDeleteIfState, params: [table, id, before.version, before.part, before.sort, before.expiresAt] }
      : { query: this.q.recordDeleteIfAbsent, params: [table, id] };
  }

  /**
   * Writes as batches, logged unless `logged` is false (a fenced commit's read models): idempotent,
   * so retried once; a logged one that reached the batchlog holds.
   */
  private async writeLogged(client: Client, plans: readonly RecordPlan[], logged = true): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.writeRows(client, plans, logged);
      } catch (e) {
        if (isBatchlogged(e)) return; // Cassandra replays it
        if (attempt >= 2 || !this.client) throw e;
      }
    }
  }

  /** The plans' unconditional record writes and every index change they make. */
  private async writeRows(client: Client, plans: readonly RecordPlan[], logged: boolean): Promise<void> {
    const groups = this.rowGroups(plans);
    // Big records statement by statement; the rest packed whole into batches under the size limit:
    // logged ones, or a fenced commit's items of the gathered unlogged batches.
    const sized = groups.map((group) => ({ group, size: groupBytes(group) }));
    for (const { group, size } of sized) if (size > BATCH_BYTES) for (const s of group) await this.run(client, [s], { idempotent: true });
    let chunk: Statement[] = [];
    let bytes = 0;
    const sent: Promise<unknown>[] = [];
    const flush = async () => {
      if (chunk.length) {
        if (logged) await this.run(client, chunk, { idempotent: true });
        else {
          const item = this.unlogged.run(chunk);
          item.catch(() => undefined); // awaited below, with the others
          sent.push(item);
        }
      }
      chunk = [];
      bytes = 0;
    };
    for (const { group, size } of sized) {
      if (size > BATCH_BYTES) continue; // sent above
      if (bytes + size > BATCH_BYTES) await flush();
      chunk.push(...group);
      bytes += size;
    }
    await flush();
    await Promise.all(sent);
  }

  /** Per plan, its unconditional record write and the index change it makes, as statements that go together. */
  private rowGroups(plans: Iterable<RecordPlan>): Statement[][] {
    const now = Date.now();
    const groups: Statement[][] = [];
    for (const { table, id, before, after, expected } of plans) {
      const group: Statement[] = [];
      if (expected === undefined) {
        group.push(
          after
            ? { query: this.q.recordPut, params: [ttlOf(after.expiresAt, now), after.version, after.part, after.sort, after.value, after.expiresAt, table, id] }
            : { query: this.q.recordDelete, params: [table, id] },
        );
      }
      if (before && before.part !== "" && (!after || after.part !== before.part || after.sort !== before.sort)) {
        group.push({ query: this.q.indexDelete, params: [table, before.part, before.sort, id] });
      }
      if (after && after.part !== "") {
        group.push({
          query: this.q.indexPut,
          params: [ttlOf(after.expiresAt, now), after.version, after.value, after.expiresAt, table, after.part, after.sort, id],
        });
      }
      if (group.length) groups.push(group);
    }
    return groups;
  }

  /** One statement, or a logged batch (a conditional one when the statements carry IF). */
  private async run(client: Client, statements: readonly Statement[], o: { serial?: boolean; idempotent?: boolean; unlogged?: boolean }): Promise<ResultSet> {
    const options = {
      prepare: true,
      consistency: this.consistency,
      ...(o.serial ? { serialConsistency: this.serial } : {}),
      isIdempotent: o.idempotent ?? false,
    };
    if (statements.length === 1) return client.execute(statements[0]!.query, statements[0]!.params, options);
    return client.batch(
      statements.map((s) => ({ query: s.query, params: s.params })),
      { ...options, logged: !o.unlogged },
    );
  }

  private async readRow(table: string, id: string, consistency: number): Promise<State> {
    if (consistency === this.consistency) return this.rows.run({ table, id });
    const rs = await this.open_().execute(this.q.recordGet, [table, id], { consistency, isIdempotent: true });
    return rowState(rs.first() ?? undefined);
  }

  private async scanPass<T>(
    table: string,
    partition: string,
    options: ScanOptions<T>,
    winners: Map<string, number> | undefined,
  ): Promise<{ result: ScanResult<T>; winners?: Map<string, number> }> {
    const rs = await this.open_().execute(this.q.indexScan, [table, partition], { fetchSize: PAGE, isIdempotent: true });
    const now = Date.now();
    const seen = new Map<string, number>();
    let stale = false;
    const items: StoredRecord<T>[] = [];
    let skip = options.offset ?? 0;
    let total = 0;
    let more = false;
    for await (const row of rs) {
      const id = row["id"] as string;
      const version = num(row["version"]);
      const previous = seen.get(id);
      if (previous === undefined || version > previous) seen.set(id, version);
      if (previous !== undefined) {
        if (version > previous) stale = true;
        continue; // only the first row of an id counts in this pass
      }
      if (winners && winners.get(id) !== version) {
        seen.delete(id); // not the newest row of this id: let the newest one count later
        continue;
      }
      const expiresAt = num(row["expires_at"]);
      if (expiresAt !== 0 && expiresAt <= now) continue;
      const sort = row["sort"] as string;
      let value: T | undefined;
      if (options.filter) {
        value = JSON.parse(row["value"] as string) as T;
        if (!options.filter(value)) continue;
      }
      total++;
      if (options.before !== undefined && sort >= options.before) continue;
      if (skip > 0) {
        skip--;
        continue;
      }
      if (items.length < options.limit) {
        value ??= JSON.parse(row["value"] as string) as T;
        items.push({ id, version, partition, sort, value, expiresAt });
      } else more = true;
    }
    return { result: { items, more, total }, ...(stale && !winners ? { winners: seen } : {}) };
  }

  // ── schema ──

  private schemaDir(): string {
    return this.options.schemaDir ?? fileURLToPath(new URL("../../infra/cql/", import.meta.url));
  }

  private migrations(): { name: string; text: string; checksum: string }[] {
    const dir = this.schemaDir();
    if (!existsSync(dir)) throw new Error(`Cassandra schema folder ${dir} not found`);
    return readdirSync(dir)
      .filter((f) => f.endsWith(".cql"))
      .sort()
      .map((f) => {
        const text = readFileSync(path.join(dir, f), "utf8");
        return { name: f.slice(0, -".cql".length), text, checksum: createHash("sha256").update(text).digest("hex") };
      });
  }

  private async applied(client: Client): Promise<Set<string> | undefined> {
    const ks = await client.execute("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?", [this.keyspace], { prepare: true });
    if (ks.rowLength === 0) return undefined;
    const table = await client.execute(
      "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = 'schema_version'",
      [this.keyspace],
      { prepare: true },
    );
    if (table.rowLength === 0) return new Set();
    const rows = await client.execute(`SELECT version FROM ${this.keyspace}.schema_version`, [], { prepare: true });
    return new Set(rows.rows.map((r) => r["version"] as string));
  }

  private async applySchema(client: Client): Promise<void> {
    const done = (await this.applied(client)) ?? new Set<string>();
    for (const m of this.migrations()) {
      if (done.has(m.name)) continue;
      for (const statement of renderCql(m.text, { keyspace: this.keyspace, replication: this.replication })) {
        try {
          await client.execute(statement, [], { readTimeout: DDL_TIMEOUT_MS });
        } catch (e) {
          throw this.schemaError(e, m.name, statement);
        }
      }
      await client.execute(`INSERT INTO ${this.keyspace}.schema_version (version, checksum, applied_at) VALUES (?, ?, ?)`, [m.name, m.checksum, Date.now()], {
        prepare: true,
      });
    }
  }

  private async checkSchema(client: Client): Promise<void> {
    const done = await this.applied(client);
    if (!done) {
      throw new ConfigError(
        CassandraSettings.keyspace,
        `keyspace "${this.keyspace}" does not exist and schema creation is off: create it from infra/cql/*.cql, or let the store create it`,
      );
    }
    const missing = this.migrations()
      .filter((m) => !done.has(m.name))
      .map((m) => m.name);
    if (missing.length) {
      throw new ConfigError(
        CassandraSettings.keyspace,
        `keyspace "${this.keyspace}" lacks schema migration(s) ${missing.join(", ")} (infra/cql) and schema creation is off`,
      );
    }
  }

  private schemaError(e: unknown, migration: string, statement: string): Error {
    const message = e instanceof Error ? e.message : String(e);
    if (e instanceof driverErrors.ResponseError && e.code === types.responseErrorCodes.unauthorized) {
      return new ConfigError(
        CassandraSettings.username,
        `user "${this.options.username ?? ""}" may not apply schema ${migration}: ${message}; create the schema beforehand and turn schema creation off`,
      );
    }
    if (/^\s*CREATE KEYSPACE/i.test(statement)) return new ConfigError(CassandraSettings.replication, `CREATE KEYSPACE ${this.keyspace} failed: ${message}`);
    return new Error(`applying Cassandra schema ${migration} failed: ${message}`, { cause: e });
  }

  private connectError(e: unknown): Error {
    const where = this.options.contactPoints.join(",");
    const cert = certificateProblem(e);
    if (cert?.kind === "hostname") {
      return new ConfigError(
        CassandraSettings.verifyHostname,
        `Cassandra's certificate at ${where} names other hosts (${cert.message}); connect by a name it holds, or set ${CassandraSettings.verifyHostname}=off`,
      );
    }
    if (cert) {
      const ca = this.options.tls?.caFile;
      return new ConfigError(
        CassandraSettings.caFile,
        `Cassandra's certificate at ${where} is not trusted (${cert.message}); ${
          ca ? `${ca} is not the CA that signed it` : `set ${CassandraSettings.caFile} to the PEM of the CA that signed it`
        }`,
      );
    }
    if (e instanceof driverErrors.NoHostAvailableError) {
      const inner = Object.entries((e.innerErrors ?? {}) as Record<string, unknown>);
      const auth = inner.find(([, err]) => isAuthError(err));
      if (auth) {
        const message = auth[1] instanceof Error ? auth[1].message : String(auth[1]);
        return new ConfigError(
          CassandraSettings.username,
          `authentication to Cassandra at ${auth[0]} failed (check ${CassandraSettings.username} and ${CassandraSettings.password}): ${message}`,
        );
      }
      const dc = inner.find(([, err]) => err instanceof driverErrors.ArgumentError && /localDataCenter/.test(err.message));
      if (dc) return new ConfigError(CassandraSettings.localDataCenter, (dc[1] as Error).message);
      const details = inner.map(([host, err]) => `${host}: ${err instanceof Error ? err.message : String(err)}`).join("; ");
      return new ConfigError(CassandraSettings.contactPoints, `no Cassandra node reachable at ${where}${details ? ` (${details})` : ""}`);
    }
    if (isAuthError(e)) return new ConfigError(CassandraSettings.username, `authentication failed: ${(e as Error).message}`);
    if (e instanceof driverErrors.ArgumentError && /localDataCenter/.test(e.message)) return new ConfigError(CassandraSettings.localDataCenter, e.message);
    return new ConfigError(CassandraSettings.contactPoints, `connecting to Cassandra at ${where} failed: ${e instanceof Error ? e.message : String(e)}`);
  }

  private open_(): Client {
    if (!this.client) throw new Error("store is not open");
    return this.client;
  }
}

/** Counts every statement the client sends by its name in queries() (media_cassandra_statements_total). */
function countStatements(client: Client, q: Readonly<Record<string, string>>): void {
  const names = new Map(Object.entries(q).map(([name, text]) => [text, name]));
  const name = (query: string) => names.get(query) ?? "other";
  const execute = client.execute.bind(client) as (...args: unknown[]) => Promise<ResultSet>;
  const batch = client.batch.bind(client) as (...args: unknown[]) => Promise<ResultSet>;
  Object.assign(client, {
    execute: (query: string, ...rest: unknown[]) => {
      const params = rest[0];
      // Record reads by table (the first parameter of recordGet; a known, small set of names).
      const table = ["recordGet", "recordsIn"].includes(name(query)) && Array.isArray(params) && typeof params[0] === "string" ? `:${params[0]}` : "";
      cqlStatements.inc({ statement: `${name(query)}${table}` });
      cqlRequests.inc();
      return execute(query, ...rest);
    },
    batch: (queries: readonly { query: string }[], options?: { logged?: boolean }, ...rest: unknown[]) => {
      cqlStatements.inc({ statement: options?.logged === false ? "unlogged_batch" : "logged_batch" });
      cqlRequests.inc();
      for (const q of queries) cqlStatements.inc({ statement: name(q.query) });
      return batch(queries, options, ...rest);
    },
  });
}

function toRecord<T>(id: string, s: RowState): StoredRecord<T> {
  return { id, version: s.version, partition: s.part, sort: s.sort, value: JSON.parse(s.value) as T, expiresAt: s.expiresAt };
}

/** Shuts down a client whose connect() failed. */
async function dispose(client: Client): Promise<void> {
  await client.shutdown().catch(() => {});
  // Driver 4.10 leaves the control connection open when connect() fails after it connected
  // (e.g. a wrong localDataCenter), which keeps the process alive: close it.
  const control = (client as unknown as { controlConnection?: { connection?: { close(done: () => void): void } | null } }).controlConnection;
  control?.connection?.close(() => {});
}

/** A logged batch that timed out after reaching the batchlog: Cassandra will replay it. */
function isBatchlogged(e: unknown): boolean {
  return e instanceof driverErrors.ResponseError && e.code === types.responseErrorCodes.writeTimeout && (e as { writeType?: string }).writeType === "BATCH";
}

/** Splits a versioned CQL file into statements with its {{placeholders}} filled in. */
export function renderCql(text: string, values: Record<string, string>): string[] {
  const body = text
    .split("\n")
    .filter((line) => !/^\s*--/.test(line))
    .join("\n")
    .replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
      const value = values[name];
      if (value === undefined) throw new Error(`CQL placeholder {{${name}}} has no value`);
      return value;
    });
  return body
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function queries(ks: string) {
  const set = "USING TTL ? SET version = ?, part = ?, sort = ?, value = ?, expires_at = ? WHERE tbl = ? AND id = ?";
  const state = "version = ? AND part = ? AND sort = ? AND expires_at = ?";
  return {
    journalLast: `SELECT seq FROM ${ks}.journal WHERE key = ? ORDER BY seq DESC LIMIT 1`,
    journalInsert: `INSERT INTO ${ks}.journal (key, seq, data, created_at) VALUES (?, ?, ?, ?) IF NOT EXISTS`,
    journalsFrom: `SELECT key, seq, data, created_at, epoch FROM ${ks}.journal WHERE key IN ? AND seq >= ?`,
    journalAppend: `INSERT INTO ${ks}.journal (key, seq, data, created_at, epoch) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?`,
    epochGet: `SELECT epoch, owner, taken_at FROM ${ks}.shard_epochs WHERE scope = ? AND shard = ?`,
    epochsIn: `SELECT shard, epoch FROM ${ks}.shard_epochs WHERE scope = ? AND shard IN ?`,
    epochTakeFirst: `UPDATE ${ks}.shard_epochs SET epoch = ?, owner = ?, taken_at = ? WHERE scope = ? AND shard = ? IF epoch = null`,
    epochTakeFrom: `UPDATE ${ks}.shard_epochs SET epoch = ?, owner = ?, taken_at = ? WHERE scope = ? AND shard = ? IF epoch = ?`,
    journalRange: `SELECT seq, data, created_at FROM ${ks}.journal WHERE key = ? AND seq >= ? AND seq <= ?`,
    snapshotsIn: `SELECT key, seq, data, created_at FROM ${ks}.snapshots WHERE key IN ?`,
    snapshotPut: `INSERT INTO ${ks}.snapshots (key, seq, data, created_at) VALUES (?, ?, ?, ?)`,
    recordGet: `SELECT version, part, sort, value, expires_at FROM ${ks}.records WHERE tbl = ? AND id = ?`,
    recordsIn: `SELECT id, version, part, sort, value, expires_at FROM ${ks}.records WHERE tbl = ? AND id IN ?`,
    recordPut: `UPDATE ${ks}.records ${set}`,
    recordDelete: `DELETE FROM ${ks}.records WHERE tbl = ? AND id = ?`,
    recordPutIfAbsent: `UPDATE ${ks}.records ${set} IF version = null`,
    recordPutIfState: `UPDATE ${ks}.records ${set} IF ${state}`,
    recordDeleteIfAbsent: `DELETE FROM ${ks}.records WHERE tbl = ? AND id = ? IF version = null`,
    recordDeleteIfState: `DELETE FROM ${ks}.records WHERE tbl = ? AND id = ? IF ${state}`,
    indexPut: `UPDATE ${ks}.record_index USING TTL ? SET version = ?, value = ?, expires_at = ? WHERE tbl = ? AND part = ? AND sort = ? AND id = ?`,
    indexDelete: `DELETE FROM ${ks}.record_index WHERE tbl = ? AND part = ? AND sort = ? AND id = ?`,
    indexScan: `SELECT sort, id, version, value, expires_at FROM ${ks}.record_index WHERE tbl = ? AND part = ?`,
  };
}

/** The driver's errors for a database that is down or too slow, which a caller may retry. */
const UNAVAILABLE = new Set(["NoHostAvailableError", "OperationTimedOutError", "BusyConnectionError"]);
const UNAVAILABLE_CODES = new Set([
  types.responseErrorCodes.unavailableException,
  types.responseErrorCodes.readTimeout,
  types.responseErrorCodes.writeTimeout,
  types.responseErrorCodes.overloaded,
]);

function rethrowUnavailable(e: unknown): never {
  const code = (e as { code?: unknown }).code;
  if (e instanceof Error && (UNAVAILABLE.has(e.name) || (e.name === "ResponseError" && typeof code === "number" && UNAVAILABLE_CODES.has(code)))) {
    throw new StoreUnavailable(`cassandra: ${e.message}`, { cause: e });
  }
  throw e;
}

// Every operation of the port names an unreachable database as StoreUnavailable (the gateway
// answers unavailable, a retry may succeed), whatever the driver called it.
for (const name of ["get", "commit", "events", "latestSnapshot", "saveSnapshot", "scan", "takeEpoch"] as const) {
  const operation: (...args: never[]) => Promise<unknown> = CassandraStore.prototype[name];
  Object.defineProperty(CassandraStore.prototype, name, {
    value: function (this: CassandraStore, ...args: never[]) {
      return operation.apply(this, args).catch(rethrowUnavailable);
    },
  });
}
