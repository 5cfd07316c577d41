// This process's Prometheus metrics: one prom-client registry, the media_* instruments every role records into, and timing wrappers around the store and bus ports.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Bus } from "./bus/port.js";
import { PRIORITIES, type Priority, type WorkerClass } from "./encode-queue.js";
import { VersionConflict } from "./errors.js";
import type { Store } from "./store/port.js";

const registry = new Registry();
const registers = [registry];
/** The registries every media_* instrument of this process registers in (metrics-flow.ts too). */
export const metricRegisters = registers;
let defaultsOn = false;

/** The registry of this process; the first call also adds prom-client's default process and Node.js metrics. */
export function metricsRegistry(): Registry {
  if (!defaultsOn) {
    defaultsOn = true;
    collectDefaultMetrics({ register: registry });
  }
  return registry;
}

const seconds = (since: number) => (performance.now() - since) / 1000;

// ---- RPC (gateways)

const rpcRequests = new Counter({
  name: "media_rpc_requests_total",
  help: "RPCs answered, by method (Service/Method) and Connect code (ok on success); streams count when they end",
  labelNames: ["method", "code"] as const,
  registers,
});
const rpcDuration = new Histogram({
  name: "media_rpc_duration_seconds",
  help: "Time from a call's arrival to its answer (unary) or to its end (streams), by method",
  labelNames: ["method"] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers,
});

/** One finished call: `method` is Service/Method (JobService/Create), `code` a Connect code name or ok. */
export function recordRpc(method: string, code: string, durationSeconds: number): void {
  rpcRequests.inc({ method, code });
  rpcDuration.observe({ method }, durationSeconds);
}

// ---- Store and bus (every role)

const STORE_OPERATIONS = ["get", "commit", "events", "scan", "latestSnapshot", "saveSnapshot"] as const;
export type StoreOperation = (typeof STORE_OPERATIONS)[number];

const PORT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const storeSeconds = new Histogram({
  name: "media_store_operation_seconds",
  help: "Store operations, by operation",
  labelNames: ["operation"] as const,
  buckets: PORT_BUCKETS,
  registers,
});
const storeErrors = new Counter({
  name: "media_store_errors_total",
  help: "Store operations that failed, by operation (a lost condition, VersionConflict, is an answer and not counted)",
  labelNames: ["operation"] as const,
  registers,
});
// At 0 from the start, so a rate over it (the dashboard, the MediaStoreErrors alert) has a series before the first failure.
for (const operation of STORE_OPERATIONS) storeErrors.inc({ operation }, 0);
const busPublishSeconds = new Histogram({
  name: "media_bus_publish_seconds",
  help: "Bus publishes until durable, by topic (without the deployment prefix)",
  labelNames: ["topic"] as const,
  buckets: PORT_BUCKETS,
  registers,
});
const busPublishErrors = new Counter({
  name: "media_bus_publish_errors_total",
  help: "Bus publishes that failed, by topic",
  labelNames: ["topic"] as const,
  registers,
});
const busMessages = new Counter({
  name: "media_bus_messages_published_total",
  help: "Messages published to the bus, by topic",
  labelNames: ["topic"] as const,
  registers,
});
const busBytes = new Counter({
  name: "media_bus_published_bytes_total",
  help: "Bytes of message values (and keys) published to the bus, by topic",
  labelNames: ["topic"] as const,
  registers,
});
/** Statements sent to Cassandra, by the store's name for them (a batch counts once as a batch and once per statement in it). */
export const cqlStatements = new Counter({
  name: "media_cassandra_statements_total",
  help: "CQL statements sent by the Cassandra store, by the store's name for them (journalAppend, recordGet:<table>, logged_batch, ...)",
  labelNames: ["statement"] as const,
  registers,
});
/** Requests sent to Cassandra: a statement or a batch is one; concurrent commits share them (gather.ts). */
export const cqlRequests = new Counter({
  name: "media_cassandra_requests_total",
  help: "Requests sent to Cassandra by the Cassandra store (a batch is one request)",
  registers,
});
/** Requests sent to Kafka brokers, by API: a Produce carries every message published meanwhile, a Fetch every message that had arrived. */
export const kafkaRequests = new Counter({
  name: "media_kafka_requests_total",
  help: "Requests this process sent to Kafka brokers, by API (Produce, Fetch, OffsetCommit, Heartbeat, Metadata, ...)",
  labelNames: ["api"] as const,
  registers,
});
export const directCommands = new Counter({
  name: "media_direct_commands_total",
  help: "The asks a gateway or an encoder node sent straight to an actor host (MEDIA_DIRECT_COMMANDS), by outcome: answered, moved (sent again by Kafka: the host no longer serves the partition) or lost (sent again by Kafka: the link closed or fell silent)",
  labelNames: ["outcome"] as const,
  registers,
});
const busHandlerSeconds = new Histogram({
  name: "media_bus_handler_seconds",
  help: "Time a consumer's handler took over one message, by topic",
  labelNames: ["topic"] as const,
  buckets: [...PORT_BUCKETS, 10, 30, 60],
  registers,
});

/** A topic without its deployment prefix ("media.commands", "test_abc.commands": "commands"), so labels stay few. */
export function topicLabel(topic: string): string {
  return topic.slice(topic.lastIndexOf(".") + 1);
}

async function timed<T>(operation: StoreOperation, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await run();
  } catch (e) {
    if (!(e instanceof VersionConflict)) storeErrors.inc({ operation });
    throw e;
  } finally {
    storeSeconds.observe({ operation }, seconds(started));
  }
}

/** The store with each data operation timed and its failures counted; open, close and health pass through. */
export function timedStore(store: Store): Store {
  return {
    ...(store.orderedCommits !== undefined ? { orderedCommits: store.orderedCommits } : {}),
    open: () => store.open(),
    close: () => store.close(),
    health: () => store.health(),
    get: (table, id) => timed("get", () => store.get(table, id)),
    commit: (batch) => timed("commit", () => store.commit(batch)),
    events: (key, afterSeq) => timed("events", () => store.events(key, afterSeq)),
    latestSnapshot: (key) => timed("latestSnapshot", () => store.latestSnapshot(key)),
    saveSnapshot: (snapshot) => timed("saveSnapshot", () => store.saveSnapshot(snapshot)),
    scan: (table, partition, options) => timed("scan", () => store.scan(table, partition, options)),
    ...(store.takeEpoch ? { takeEpoch: store.takeEpoch.bind(store) } : {}),
  };
}

/** The bus with publishes timed (failures counted) and every consumer's handler timed, by topic. */
export function timedBus(bus: Bus): Bus {
  return {
    start: () => bus.start(),
    close: () => bus.close(),
    health: () => bus.health(),
    ensureTopics: (specs) => bus.ensureTopics(specs),
    async publish(topic, messages) {
      const labels = { topic: topicLabel(topic) };
      const started = performance.now();
      busMessages.inc(labels, messages.length);
      busBytes.inc(
        labels,
        messages.reduce((n, m) => n + m.value.byteLength + m.key.length, 0),
      );
      try {
        await bus.publish(topic, messages);
      } catch (e) {
        busPublishErrors.inc(labels);
        throw e;
      } finally {
        busPublishSeconds.observe(labels, seconds(started));
      }
    },
    consume: (options) =>
      bus.consume({
        ...options,
        async handler(message) {
          const started = performance.now();
          try {
            await options.handler(message);
          } finally {
            busHandlerSeconds.observe({ topic: topicLabel(message.topic) }, seconds(started));
          }
        },
      }),
  };
}

// ---- Watch streams (gateways)

const watchStreams = new Gauge({
  name: "media_watch_streams_open",
  help: "Watch streams open on this gateway, by resource (job, video)",
  labelNames: ["resource"] as const,
  registers,
});

const watchSuperseded = new Counter({
  name: "media_watch_updates_superseded_total",
  help: "Updates a Watch stream skipped because a newer one replaced them before its client had room (coalesced)",
  registers,
});

const watchStalled = new Counter({
  name: "media_watch_streams_stalled_total",
  help: "Watch streams ended because their client read nothing for MEDIA_WATCH_STALL_SECONDS while updates waited",
  registers,
});

/** Counts updates a slow stream skipped for a newer one. */
export function watchUpdatesSuperseded(count: number): void {
  watchSuperseded.inc(count);
}

/** Counts a stream ended for reading nothing. */
export function watchStreamStalled(): void {
  watchStalled.inc();
}

/** Counts a Watch stream as open; call the answer once, when it ends (in a finally). */
export function watchOpened(resource: "job" | "video"): () => void {
  watchStreams.inc({ resource });
  let closed = false;
  return () => {
    if (closed) return;
    closed = true;
    watchStreams.dec({ resource });
  };
}

// ---- Webhook deliveries (actor hosts)

/** Deliveries with an attempt armed (a timer, or the attempt in flight) on this process. */
export const webhookDeliveriesPending = new Gauge({
  name: "media_webhook_deliveries_pending",
  help: "Webhook deliveries armed on this process: waiting for their next attempt or attempting",
  registers,
});
export const webhookDeliveryAttempts = new Counter({
  name: "media_webhook_delivery_attempts_total",
  help: "Webhook delivery attempts made by this process, by result (success, failure)",
  labelNames: ["result"] as const,
  registers,
});

// ---- Jobs and encoders

const JOB_OUTCOMES: ReadonlySet<string> = new Set(["completed", "partial", "failed", "canceled"]);
const jobDuration = new Histogram({
  name: "media_job_duration_seconds",
  help: "Jobs from creation to their end, by outcome (completed, partial, failed, canceled)",
  labelNames: ["outcome"] as const,
  buckets: [1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200],
  registers,
});

const jobFailures = new Counter({
  name: "media_job_failures_total",
  help: "Jobs that ended failed or partial, by outcome and the job's error_code (other for a code outside the spec's list)",
  labelNames: ["outcome", "error_code"] as const,
  registers,
});
const outputFailures = new Counter({
  name: "media_job_output_failures_total",
  help: "Outputs that failed in jobs that ended (failed or partial), by the output's error_code",
  labelNames: ["error_code"] as const,
  registers,
});

/** The spec's closed list of job error codes (actors/job/messages.ts), told by the server at start; other codes count as other. */
const errorCodes = new Set<string>();

/** Declares the job error codes, each series starting at 0. */
export function knowJobErrorCodes(codes: readonly string[]): void {
  for (const code of [...codes, "other"]) {
    errorCodes.add(code);
    outputFailures.inc({ error_code: code }, 0);
    for (const outcome of ["failed", "partial"]) jobFailures.inc({ outcome, error_code: code }, 0);
  }
}

const codeLabel = (code: string | undefined) => (code !== undefined && errorCodes.has(code) ? code : "other");

/** What observeJobEnded reads of a job (JobRecord fits). */
export interface EndedJob {
  readonly status: string;
  readonly createdAt: number;
  readonly completedAt?: number | undefined;
  readonly errorCode?: string | undefined;
  readonly outputs?: readonly { readonly status: string; readonly errorCode?: string | undefined }[];
}

/**
 * One job that ended, from its record (JobRecord fits): creation to completedAt (now when absent),
 * and a failed or partial one's error codes, the job's and its failed outputs'.
 * Call it once per job, where the end is decided and journaled, never while an actor recovers.
 * A status that is not an end is ignored.
 */
export function observeJobEnded(job: EndedJob): void {
  if (!JOB_OUTCOMES.has(job.status)) return;
  const end = job.completedAt ?? Date.now();
  jobDuration.observe({ outcome: job.status }, Math.max(0, (end - job.createdAt) / 1000));
  if (job.status !== "failed" && job.status !== "partial") return;
  const failed = (job.outputs ?? []).filter((o) => o.status === "failed");
  // A partial job may carry no code of its own: its first failed output's says why.
  jobFailures.inc({ outcome: job.status, error_code: codeLabel(job.errorCode ?? failed[0]?.errorCode) });
  for (const o of failed) outputFailures.inc({ error_code: codeLabel(o.errorCode) });
}

const CLASSES: readonly WorkerClass[] = ["small", "standard", "large"];

/** Tasks an encoder node of this process took: inc({ kind: "probe" | "encode", priority, class }). */
export const encodeTasks = new Counter({
  name: "media_encode_tasks_total",
  help: "Tasks run by this process's encoder node, by kind (probe, encode), job priority and worker class",
  labelNames: ["kind", "priority", "class"] as const,
  registers,
});

const encoderBusy = new Gauge({
  name: "media_encoder_busy",
  help: "1 while this process's encoder node runs a task, else 0, by worker class",
  labelNames: ["class"] as const,
  registers,
});

/** Per class: tasks running, and when busy time was last added to the counter. */
const activity = new Map<WorkerClass, { running: number; mark: number }>();

/** Adds the busy time since the last mark, so the counter grows during a long encode, not only at its end. */
function accrue(counter: Counter<"class">, cls: WorkerClass, now: number): void {
  const a = activity.get(cls);
  if (!a || a.running === 0) return;
  counter.inc({ class: cls }, Math.max(0, (now - a.mark) / 1000));
  a.mark = now;
}

const encoderBusySeconds = new Counter({
  name: "media_encoder_busy_seconds_total",
  help: "Seconds this process's encoder node spent running tasks, by worker class (its rate is the busy ratio)",
  labelNames: ["class"] as const,
  registers,
  collect() {
    const now = performance.now();
    for (const cls of activity.keys()) accrue(this, cls, now);
  },
});

/** The busy state of an encoder node of class `cls`: `start()` when a task begins; call what it answers when it ends. */
export function encoderActivity(cls: WorkerClass): { start(): () => void } {
  if (!activity.has(cls)) {
    activity.set(cls, { running: 0, mark: performance.now() });
    encoderBusy.set({ class: cls }, 0);
    encoderBusySeconds.inc({ class: cls }, 0);
  }
  const a = activity.get(cls)!;
  return {
    start() {
      const now = performance.now();
      accrue(encoderBusySeconds, cls, now);
      if (a.running++ === 0) a.mark = now;
      encoderBusy.set({ class: cls }, 1);
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        accrue(encoderBusySeconds, cls, performance.now());
        if (--a.running === 0) encoderBusy.set({ class: cls }, 0);
      };
    },
  };
}

// ---- The encode queue, as the scheduler writes it down (the same on every process)

/** Record encode_queue/summary, rewritten by the scheduler as the queue changes. */
export interface QueueSummary {
  readonly at: number;
  readonly priorities: Readonly<Record<Priority, { readonly depth: number; /** epoch ms, 0 when empty */ readonly oldestEnqueuedAt: number }>>;
  readonly leases: Readonly<Record<WorkerClass, number>>;
}

/** A row of encoder_nodes (partition all), one per node seen lately; rows expire by themselves. */
export interface EncoderNodeRow {
  readonly nodeId: string;
  readonly class: WorkerClass;
  readonly busy: boolean;
  readonly at: number;
}

interface QueueView {
  readonly summary: QueueSummary | undefined;
  readonly nodes: Readonly<Record<WorkerClass, number>>;
}

let queueStore: Store | undefined;
let lastRead: { readonly store: Store; readonly at: number; readonly view: Promise<QueueView | undefined> } | undefined;

/** The queue as stored, read once per scrape (the four gauges share it); undefined when unreadable. */
function queueView(): Promise<QueueView | undefined> {
  const store = queueStore;
  if (!store) return Promise.resolve(undefined);
  const now = Date.now();
  if (lastRead && lastRead.store === store && now - lastRead.at < 1000) return lastRead.view;
  const view = (async () => {
    const summary = (await store.get<QueueSummary>("encode_queue", "summary"))?.value;
    const rows = await store.scan<EncoderNodeRow>("encoder_nodes", "all", { limit: 1000 });
    const nodes: Record<WorkerClass, number> = { small: 0, standard: 0, large: 0 };
    for (const row of rows.items) if (row.value.class in nodes) nodes[row.value.class]++;
    return { summary, nodes };
  })().catch(() => undefined); // a failed read keeps the last values; the store's own metrics show the failure
  lastRead = { store, at: now, view };
  return view;
}

new Gauge({
  name: "media_encode_queue_depth",
  help: "Encode tasks waiting in the deployment's queue, by priority (deployment-wide: the same on every process)",
  labelNames: ["priority"] as const,
  registers,
  async collect() {
    const q = await queueView();
    if (q) for (const p of PRIORITIES) this.set({ priority: p }, q.summary?.priorities[p]?.depth ?? 0);
  },
});

new Gauge({
  name: "media_encode_queue_oldest_age_seconds",
  help: "Age of the oldest waiting encode task, by priority; 0 when none waits (deployment-wide)",
  labelNames: ["priority"] as const,
  registers,
  async collect() {
    const q = await queueView();
    if (!q) return;
    const now = Date.now();
    for (const p of PRIORITIES) {
      const oldest = q.summary?.priorities[p]?.oldestEnqueuedAt ?? 0;
      this.set({ priority: p }, oldest > 0 ? Math.max(0, (now - oldest) / 1000) : 0);
    }
  },
});

new Gauge({
  name: "media_encode_leases",
  help: "Encode tasks leased to (running on) encoder nodes, by worker class (deployment-wide)",
  labelNames: ["class"] as const,
  registers,
  async collect() {
    const q = await queueView();
    if (q) for (const c of CLASSES) this.set({ class: c }, q.summary?.leases[c] ?? 0);
  },
});

new Gauge({
  name: "media_encoder_nodes",
  help: "Encoder nodes seen lately, by worker class (deployment-wide)",
  labelNames: ["class"] as const,
  registers,
  async collect() {
    const q = await queueView();
    if (q) for (const c of CLASSES) this.set({ class: c }, q.nodes[c]);
  },
});

/** Fills the encode queue gauges from `store` at each scrape; the answer stops that (a later call replaces it). */
export function registerStoreGauges(store: Store): () => void {
  queueStore = store;
  lastRead = undefined;
  return () => {
    if (queueStore === store) queueStore = undefined;
  };
}
