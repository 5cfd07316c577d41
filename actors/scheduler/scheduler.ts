// The encode queue: one persistent actor that decides which encoder node runs which task. Job
// actors enqueue their probe and encode tasks; an idle node asks for a lease on the next task for
// its worker class, renews it while the task runs and says when it is done. Priority first
// (premium, standard, economy), each priority's tasks placed on its class (premium on the largest
// class seen, economy on the smallest, standard on standard) or, once a task has waited a grace
// per class step, on any; within a priority, apps take turns, and an app's older jobs go first.
// A lease not renewed within its time goes back to the queue, ahead of its priority, so a killed
// node's task is picked up again by the next free node; a node that asks for work holds nothing,
// so whatever it still holds goes back too. A task lost this way in MAX_TASK_LOSSES different lives
// of nodes (a process died or stopped answering while it ran it, each time) is not handed out
// again: it is abandoned, and its job fails with encoder_lost. A drained node's release is no loss,
// and one life losing the task again (an outage of the store or the bus) counts once.
import { Code } from "@connectrpc/connect";
import type { RecordWrite } from "../../src/store/port.js";
import type { Decision, EntityBehavior } from "../host.js";
import type { IntentHandlers } from "../outbox.js";
import {
  ENCODER_NODES,
  NODE_LIVENESS_MS,
  PRIORITIES,
  QUEUE_SUMMARY,
  QUEUE_TYPE,
  WORKER_CLASSES,
  type LeaseGrant,
  type Priority,
  type QueueCommand,
  type QueueReply,
  type TaskKind,
  type TaskRequest,
  type WorkerClass,
  type WorkSignal,
} from "./messages.js";

export * from "./messages.js";

/** Node lives that lost a lease on one task before the task is abandoned (its job fails). */
export const MAX_TASK_LOSSES = 3;
/** How long a task waits for its priority's class before a node of the next class may take it (per class step). */
export const PLACEMENT_GRACE_MS = 3_000;
/** A node is written down again (for health and metrics) when it was last seen this long ago. */
const SEEN_REFRESH_MS = 10_000;
/** Nodes not seen for this long are forgotten. */
const FORGET_MS = 10 * 60_000;

export interface QueuedTask extends TaskRequest {
  readonly enqueuedAt: number;
  /** When a lease on it was given back (expired, released, stale): it was already running, so it goes first. */
  readonly returnedAt?: number;
  /** The node of each life that lost a lease on it (expired or stale), in order, one per life. */
  readonly lostOn?: readonly string[];
  /** Those lives (the lease command's `life`, else the node's name). */
  readonly lostLives?: readonly string[];
}

export interface Lease {
  readonly leaseId: string;
  readonly node: string;
  readonly nodeClass: WorkerClass;
  readonly task: QueuedTask;
  readonly leasedAt: number;
  readonly renewedAt: number;
  readonly ttlMs: number;
  /** The run of the node's process that holds it (absent from nodes that do not say). */
  readonly life?: string;
}

export interface NodeSeen {
  readonly nodeClass: WorkerClass;
  readonly seenAt: number;
}

export interface QueueState {
  readonly queued: readonly QueuedTask[];
  readonly leases: readonly Lease[];
  readonly nodes: Readonly<Record<string, NodeSeen>>;
  /** The app served last at each priority: the next turn goes to the app after it. */
  readonly lastApp: Readonly<Partial<Record<Priority, string>>>;
}

export type QueueEvent =
  | { readonly type: "enqueued"; readonly task: QueuedTask }
  /** The job's queued tasks leave (with `main`, only its probe and encode: a job's next step replaces its earlier one, not its chunks). */
  | { readonly type: "removed"; readonly jobId: string; readonly at: number; readonly main?: boolean }
  | { readonly type: "granted"; readonly lease: Lease }
  | { readonly type: "renewed"; readonly leaseId: string; readonly node: string; readonly at: number }
  | { readonly type: "finished"; readonly leaseId: string; readonly node: string; readonly at: number }
  | { readonly type: "returned"; readonly leaseId: string; readonly node: string; readonly reason: "expired" | "released" | "stale"; readonly at: number }
  /** Its lease was lost once too often: the task leaves the queue, and its job is told. */
  | {
      readonly type: "abandoned";
      readonly leaseId: string;
      readonly node: string;
      readonly jobId: string;
      readonly kind: TaskKind;
      readonly part?: number;
      readonly lostOn: readonly string[];
      readonly at: number;
    }
  | { readonly type: "node_seen"; readonly node: string; readonly nodeClass: WorkerClass; readonly at: number };

export type QueueIntent =
  | { readonly kind: "nudge" }
  | {
      readonly kind: "abandoned";
      readonly jobId: string;
      readonly task: TaskKind;
      readonly part?: number;
      readonly lostOn: readonly string[];
      readonly at: number;
    };

const initial: QueueState = { queued: [], leases: [], nodes: {}, lastApp: {} };
const rank = (c: WorkerClass) => WORKER_CLASSES.indexOf(c);
const invalid = (message: string) => ({ code: Code.InvalidArgument, message });
const isPriority = (p: unknown): p is Priority => (PRIORITIES as readonly unknown[]).includes(p);
const isClass = (c: unknown): c is WorkerClass => (WORKER_CLASSES as readonly unknown[]).includes(c);

/** The class a priority's tasks go to first, among the classes present. */
export function targetClass(priority: Priority, present: ReadonlySet<WorkerClass>): WorkerClass {
  const classes = WORKER_CLASSES.filter((c) => present.has(c));
  if (classes.length === 0) return "standard";
  if (priority === "premium") return classes[classes.length - 1]!;
  if (priority === "economy") return classes[0]!;
  return present.has("standard") ? "standard" : present.has("large") ? "large" : "small";
}

/** Classes of the nodes seen lately, and the asking node's own. */
function presentClasses(state: QueueState, asking: WorkerClass, at: number): Set<WorkerClass> {
  const present = new Set<WorkerClass>([asking]);
  for (const n of Object.values(state.nodes)) if (at - n.seenAt <= NODE_LIVENESS_MS) present.add(n.nodeClass);
  return present;
}

// Stryker disable next-line ConditionalExpression,EqualityOperator: sort tells only a negative result from the rest, so the 1/0 branch cannot change the order; one id on both sides means both kinds of one job, in line together only when both were given back at one instant, where neither order is promised (the -1 branch is pinned by the age-order spec)
const byAge = (a: QueuedTask, b: QueuedTask) => a.order - b.order || (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0);

/** One task of a job: its kind, and for a chunk, which. */
const sameTask = (a: TaskRequest, b: TaskRequest) => a.jobId === b.jobId && a.kind === b.kind && a.part === b.part;
const isMain = (t: TaskRequest) => t.kind !== "chunk";

/** A chunk of the job for the node that runs the job's encode: one given back first, then the earliest. */
function pickChunk(state: QueueState, jobId: string): QueuedTask | undefined {
  const chunks = state.queued.filter((t) => t.jobId === jobId && t.kind === "chunk");
  return chunks.sort((a, b) => (a.returnedAt ?? Infinity) - (b.returnedAt ?? Infinity) || a.part! - b.part!)[0];
}

/** Whether `a` goes before `b` among tasks given back: the earlier given back, then the older. */
const returnedFirst = (a: QueuedTask, b: QueuedTask) =>
  a.returnedAt! - b.returnedAt! < 0 ||
  (a.returnedAt === b.returnedAt &&
    // Stryker disable next-line EqualityOperator: byAge is 0 only for two tasks of one job (its chunks) given back at one instant, whose order is not promised (byAge's note)
    byAge(a, b) < 0);
/** Whether `a` goes before `b` in app order: the app first in order, then within an app the older. */
const appFirst = (a: QueuedTask, b: QueuedTask) => a.appId < b.appId || (a.appId === b.appId && byAge(a, b) < 0);

/**
 * The task a node of this class gets now, if any. One pass over the queue per priority, keeping the
 * candidates rather than filtering and sorting copies: a node asks at every task it ends, and the
 * backlog may be tens of thousands of tasks long (the copies and sorts were most of a command's cost).
 */
export function pick(state: QueueState, nodeClass: WorkerClass, at: number): QueuedTask | undefined {
  const present = presentClasses(state, nodeClass, at);
  for (const priority of PRIORITIES) {
    const wait = Math.abs(rank(nodeClass) - rank(targetClass(priority, present))) * PLACEMENT_GRACE_MS;
    const last = state.lastApp[priority];
    /** The first given back; the oldest of the first app after the last served; the oldest of the first app. */
    let returned: QueuedTask | undefined;
    let next: QueuedTask | undefined;
    let first: QueuedTask | undefined;
    for (const t of state.queued) {
      if (t.priority !== priority || at - t.enqueuedAt < wait) continue;
      if (t.returnedAt !== undefined) {
        if (!returned || returnedFirst(t, returned)) returned = t;
      } else {
        if (!first || appFirst(t, first)) first = t;
        if (last !== undefined && t.appId > last && (!next || appFirst(t, next))) next = t;
      }
    }
    // A task that was running when its node died or drained goes before every app's turn.
    const chosen = returned ?? next ?? first;
    if (chosen) return chosen;
  }
  return undefined;
}

/** The task's losses after its lease `l` was lost: a life already counted counts once. */
function losses(l: Lease): Required<Pick<QueuedTask, "lostOn" | "lostLives">> {
  const life = l.life ?? l.node;
  const { lostOn = [], lostLives = [] } = l.task;
  return lostLives.includes(life) ? { lostOn, lostLives } : { lostOn: [...lostOn, l.node], lostLives: [...lostLives, life] };
}

/** A lease lost (its node died or went silent): back to the queue, or abandoned at the last allowed loss. */
function lost(l: Lease, reason: "expired" | "stale", at: number): QueueEvent {
  const { lostOn } = losses(l);
  if (lostOn.length >= MAX_TASK_LOSSES)
    return {
      type: "abandoned",
      leaseId: l.leaseId,
      node: l.node,
      jobId: l.task.jobId,
      kind: l.task.kind,
      ...(l.task.part !== undefined ? { part: l.task.part } : {}),
      lostOn,
      at,
    };
  return { type: "returned", leaseId: l.leaseId, node: l.node, reason, at };
}

/** Leases whose holder has not renewed them in time. */
function expired(state: QueueState, at: number): QueueEvent[] {
  return state.leases.filter((l) => at - l.renewedAt > l.ttlMs).map((l) => lost(l, "expired", at));
}

function validTask(t: TaskRequest | undefined): boolean {
  return (
    !!t &&
    typeof t.jobId === "string" &&
    t.jobId !== "" &&
    (t.kind === "probe" || t.kind === "encode" || (t.kind === "chunk" && Number.isInteger(t.part) && t.part! >= 0)) &&
    (t.kind === "chunk" || t.part === undefined) &&
    typeof t.appId === "string" &&
    isPriority(t.priority) &&
    Number.isFinite(t.order) &&
    (t.traceparent === undefined || typeof t.traceparent === "string")
  );
}

/**
 * A node's lease command (or a done command's `next`), after `events` (the expired leases, the
 * lease just finished): the next task for its class, or with `jobId` a chunk of that job.
 */
function leased(
  state: QueueState,
  events: QueueEvent[],
  c: Omit<Extract<QueueCommand, { type: "lease" }>, "type"> & { readonly follow?: string },
): Decision<QueueEvent> {
  if (!isClass(c.nodeClass)) return invalid(`nodeClass must be one of ${WORKER_CLASSES.join(", ")}`);
  if (!c.node || !c.leaseId || !(c.ttlMs > 0)) return invalid("a lease needs a node, a lease id and a time to live");
  const now = events.reduce(fold, state);
  // The same ask again (the bus handed it over twice), or a copy older than a lease the node got
  // since (it went by Kafka when the direct link failed, and came after its asker stopped waiting):
  // answered as before, nothing changes. Taken for new, it would give back the task the node runs.
  if (now.leases.some((l) => l.node === c.node && (l.leaseId === c.leaseId || l.leasedAt > c.at))) return events;
  // A node asking alongside its task keeps it; otherwise what it holds is stale.
  if (c.jobId === undefined) for (const l of now.leases) if (l.node === c.node) events.push(lost(l, "stale", c.at));
  const free = events.reduce(fold, state);
  const waits = c.follow !== undefined && !free.queued.some((t) => t.jobId === c.follow);
  const task = waits ? undefined : c.jobId === undefined ? pick(free, c.nodeClass, c.at) : pickChunk(free, c.jobId);
  if (task) {
    events.push({
      type: "granted",
      lease: {
        leaseId: c.leaseId,
        node: c.node,
        nodeClass: c.nodeClass,
        task,
        leasedAt: c.at,
        renewedAt: c.at,
        ttlMs: c.ttlMs,
        ...(c.life ? { life: c.life } : {}),
      },
    });
  } else {
    const seen = free.nodes[c.node];
    if (!seen || seen.nodeClass !== c.nodeClass || c.at - seen.seenAt >= SEEN_REFRESH_MS)
      events.push({ type: "node_seen", node: c.node, nodeClass: c.nodeClass, at: c.at });
  }
  return events;
}

export function decide(state: QueueState, c: QueueCommand): Decision<QueueEvent> {
  if (!Number.isFinite(c.at)) return invalid("at must be a time");
  const events = expired(state, c.at);
  const now = events.reduce(fold, state);
  switch (c.type) {
    case "enqueue": {
      if (!validTask(c.task)) return invalid("a task needs a job, a kind, an app, a priority and an order");
      const task = c.task;
      if (now.leases.some((l) => sameTask(l.task, task))) return events;
      // One pass: the same task already queued, or the job's earlier step (which its next replaces; its chunks stay).
      let earlier = false;
      for (const t of now.queued) {
        if (t.jobId !== task.jobId) continue;
        if (sameTask(t, task)) return events;
        earlier ||= isMain(t);
      }
      if (isMain(task) && earlier) events.push({ type: "removed", jobId: task.jobId, at: c.at, main: true });
      events.push({ type: "enqueued", task: { ...task, enqueuedAt: c.at } });
      return events;
    }
    case "cancel":
      if (now.queued.some((t) => t.jobId === c.jobId)) events.push({ type: "removed", jobId: c.jobId, at: c.at });
      return events;
    case "lease":
      return leased(state, events, c);
    case "renew":
    case "done":
    case "release": {
      const about = { leaseId: c.leaseId, node: c.node, at: c.at };
      if (now.leases.some((l) => l.leaseId === c.leaseId && l.node === c.node)) {
        if (c.type === "renew") events.push({ type: "renewed", ...about });
        else if (c.type === "done") events.push({ type: "finished", ...about });
        else events.push({ type: "returned", ...about, reason: "released" });
      }
      // A done with the next lease asks for it whether or not it still held the one it names.
      return c.type === "done" && c.next ? leased(state, events, { ...c.next, node: c.node, at: c.at }) : events;
    }
    default:
      return invalid(`unknown command ${(c as { type?: unknown }).type as string}`);
  }
}

function seen(nodes: QueueState["nodes"], node: string, nodeClass: WorkerClass, at: number): QueueState["nodes"] {
  const kept = Object.fromEntries(Object.entries(nodes).filter(([, n]) => at - n.seenAt < FORGET_MS));
  return { ...kept, [node]: { nodeClass, seenAt: at } };
}

export function fold(state: QueueState, e: QueueEvent): QueueState {
  switch (e.type) {
    case "enqueued":
      // concat, not a spread: a copy of the array at memory speed, not element by element through its iterator.
      return { ...state, queued: state.queued.concat([e.task]) };
    case "removed":
      return { ...state, queued: state.queued.filter((t) => t.jobId !== e.jobId || (e.main === true && !isMain(t))) };
    case "granted": {
      const t = e.lease.task;
      return {
        ...state,
        queued: state.queued.filter((q) => !sameTask(q, t)),
        leases: [...state.leases, e.lease],
        // A task given out again takes no app's turn.
        lastApp: t.returnedAt === undefined ? { ...state.lastApp, [t.priority]: t.appId } : state.lastApp,
        nodes: seen(state.nodes, e.lease.node, e.lease.nodeClass, e.lease.leasedAt),
      };
    }
    case "renewed": {
      const lease = state.leases.find((l) => l.leaseId === e.leaseId);
      if (!lease) return state;
      return {
        ...state,
        leases: state.leases.map((l) => (l === lease ? { ...l, renewedAt: e.at } : l)),
        nodes: seen(state.nodes, lease.node, lease.nodeClass, e.at),
      };
    }
    case "finished":
      return { ...state, leases: state.leases.filter((l) => l.leaseId !== e.leaseId) };
    case "returned": {
      const lease = state.leases.find((l) => l.leaseId === e.leaseId);
      if (!lease) return state;
      // Back in line ahead of the others of its priority: it had its turn and lost it through no fault of its own.
      const task: QueuedTask = e.reason === "released" ? { ...lease.task, returnedAt: e.at } : { ...lease.task, returnedAt: e.at, ...losses(lease) };
      return { ...state, leases: state.leases.filter((l) => l !== lease), queued: state.queued.concat([task]) };
    }
    case "abandoned":
      return { ...state, leases: state.leases.filter((l) => l.leaseId !== e.leaseId) };
    case "node_seen":
      return { ...state, nodes: seen(state.nodes, e.node, e.nodeClass, e.at) };
  }
}

export interface QueueSummary {
  readonly at: number;
  readonly priorities: Readonly<Record<Priority, { readonly depth: number; readonly oldestEnqueuedAt: number }>>;
  readonly leases: Readonly<Record<WorkerClass, number>>;
}

/**
 * One pass over the queue and one over the leases: a backlog may be of any length, and the summary
 * is made at every change (spreading the queue's times into Math.min, as before, cost a millisecond
 * per command at 15,000 tasks, and threw past some 150,000 tasks of one priority: the call stack).
 */
export function summaryOf(state: QueueState, at: number): QueueSummary {
  const priorities = Object.fromEntries(PRIORITIES.map((p) => [p, { depth: 0, oldestEnqueuedAt: 0 }])) as Record<
    Priority,
    { depth: number; oldestEnqueuedAt: number }
  >;
  for (const t of state.queued) {
    const p = priorities[t.priority];
    // Stryker disable next-line EqualityOperator: of two tasks enqueued at the same time either is the oldest, at that time
    if (p.depth === 0 || t.enqueuedAt < p.oldestEnqueuedAt) p.oldestEnqueuedAt = t.enqueuedAt;
    p.depth++;
  }
  const leases = Object.fromEntries(WORKER_CLASSES.map((c) => [c, 0])) as Record<WorkerClass, number>;
  for (const l of state.leases) leases[l.nodeClass]++;
  return { at, priorities, leases };
}

function nodeRow(state: QueueState, node: string): RecordWrite {
  const n = state.nodes[node];
  if (!n) return { table: ENCODER_NODES.table, id: node, value: null };
  const busy = state.leases.some((l) => l.node === node);
  return {
    table: ENCODER_NODES.table,
    id: node,
    partition: ENCODER_NODES.partition,
    sort: node,
    value: { nodeId: node, class: n.nodeClass, busy, at: n.seenAt },
    expiresAt: n.seenAt + NODE_LIVENESS_MS,
  };
}

const eventAt = (e: QueueEvent): number => (e.type === "enqueued" ? e.task.enqueuedAt : e.type === "granted" ? e.lease.leasedAt : e.at);

function nodeOf(e: QueueEvent): string | undefined {
  if (e.type === "granted") return e.lease.node;
  if (e.type === "enqueued" || e.type === "removed") return undefined;
  return e.node;
}

/** The reply of a command, from the state after it: a lease's grant, a renewal's standing. */
export function replyOf(state: QueueState, c: QueueCommand): QueueReply {
  if (c.type === "lease" || (c.type === "done" && c.next)) {
    const leaseId = c.type === "lease" ? c.leaseId : c.next!.leaseId;
    // Stryker disable next-line ConditionalExpression: after its lease command a node holds at most the lease that command granted, so the lease id adds nothing to the node match (pinned by the reply specs)
    const lease = state.leases.find((l) => l.leaseId === leaseId && l.node === c.node);
    if (!lease) return {};
    const { jobId, kind, part, appId, priority, enqueuedAt, traceparent } = lease.task;
    const granted: LeaseGrant = {
      leaseId: lease.leaseId,
      jobId,
      kind,
      ...(part !== undefined ? { part } : {}),
      appId,
      priority,
      enqueuedAt,
      ...(traceparent !== undefined ? { traceparent } : {}),
    };
    return { granted };
  }
  if (c.type === "renew") return { held: state.leases.some((l) => l.leaseId === c.leaseId && l.node === c.node) };
  return {};
}

export const QueueBehavior: EntityBehavior<QueueState, QueueCommand, QueueEvent, QueueIntent, QueueReply> = {
  type: QUEUE_TYPE,
  initial,
  decide,
  fold,
  readModel(state, event) {
    const writes: RecordWrite[] = [{ table: QUEUE_SUMMARY.table, id: QUEUE_SUMMARY.id, value: summaryOf(state, eventAt(event)) }];
    const node = nodeOf(event);
    if (node) writes.push(nodeRow(state, node));
    return writes;
  },
  repair: (state) => [
    { table: QUEUE_SUMMARY.table, id: QUEUE_SUMMARY.id, value: summaryOf(state, Date.now()) },
    ...Object.keys(state.nodes).map((n) => nodeRow(state, n)),
  ],
  effects: (state, events) => [
    ...events.flatMap((e): QueueIntent[] =>
      e.type === "abandoned"
        ? [{ kind: "abandoned", jobId: e.jobId, task: e.kind, ...(e.part !== undefined ? { part: e.part } : {}), lostOn: e.lostOn, at: e.at }]
        : [],
    ),
    ...(events.some((e) => e.type === "enqueued" || e.type === "returned") && mayBeIdle(state) ? [{ kind: "nudge" } as const] : []),
  ],
  view: replyOf,
};

/**
 * Whether a node may be waiting for work: one the queue knows of that holds no lease, or none known
 * yet. A node that holds one asks for its next task as it ends it (the done command's `next`), so
 * a work signal would only wake it to find itself busy.
 */
function mayBeIdle(state: QueueState): boolean {
  const nodes = Object.keys(state.nodes);
  return nodes.length === 0 || nodes.some((n) => !state.leases.some((l) => l.node === n));
}

/**
 * The queue's intents: tell idle nodes there is work (they would find it at their next poll
 * anyway); tell a job its task was abandoned.
 */
export function queueIntentHandlers(
  publishSignal: (signal: WorkSignal) => Promise<void>,
  abandoned: (jobId: string, task: TaskKind, lostOn: readonly string[], at: number, part?: number) => Promise<void>,
): IntentHandlers<QueueIntent, QueueState> {
  return {
    nudge: () => publishSignal({ signal: "work" }),
    abandoned: (intent) => abandoned(intent.jobId, intent.task, intent.lostOn, intent.at, intent.part),
  };
}
