// The encode queue's rules without I/O: priority order, placement by worker class with its grace,
// apps taking turns, leases (renewed, expired, stale, released, done), de-duplication of tasks,
// the reply of each command, and the rows it keeps for metrics and health.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  ENCODER_NODES,
  MAX_TASK_LOSSES,
  NODE_LIVENESS_MS,
  PLACEMENT_GRACE_MS,
  QUEUE_SUMMARY,
  QueueBehavior as Q,
  pick,
  queueIntentHandlers,
  replyOf,
  summaryOf,
  targetClass,
  type Priority,
  type QueueCommand,
  type QueueEvent,
  type QueueState,
  type TaskRequest,
  type WorkerClass,
  type WorkSignal,
} from "./scheduler.js";

const T0 = 1_000_000;
const TTL = 30_000;

function apply(state: QueueState, c: QueueCommand): { state: QueueState; events: QueueEvent[] } {
  const d = Q.decide(state, c);
  if (!Array.isArray(d)) throw new Error((d as { message: string }).message);
  return { state: (d as QueueEvent[]).reduce(Q.fold, state), events: d as QueueEvent[] };
}
function run(state: QueueState, ...commands: QueueCommand[]): QueueState {
  return commands.reduce((s, c) => apply(s, c).state, state);
}
const task = (jobId: string, appId = "app_a", priority: Priority = "standard", order = T0, kind: TaskRequest["kind"] = "encode"): TaskRequest => ({
  jobId,
  kind,
  appId,
  priority,
  order,
});
const enqueue = (t: TaskRequest, at = T0): QueueCommand => ({ type: "enqueue", task: t, at });
let leases = 0;
const lease = (node: string, nodeClass: WorkerClass = "standard", at = T0, ttlMs = TTL): QueueCommand & { type: "lease" } => ({
  type: "lease",
  node,
  nodeClass,
  leaseId: `lease_${++leases}`,
  ttlMs,
  at,
});
/** Leases once and returns the granted job (or undefined) and the state after. */
function take(
  state: QueueState,
  node: string,
  nodeClass: WorkerClass = "standard",
  at = T0,
): { state: QueueState; jobId: string | undefined; leaseId: string } {
  const c = lease(node, nodeClass, at);
  const next = run(state, c);
  return { state: next, jobId: replyOf(next, c).granted?.jobId, leaseId: c.leaseId };
}
/** Runs every queued task to the end on one node, in the order the queue hands them out. */
function drain(state: QueueState, node: string, nodeClass: WorkerClass = "standard", at = T0): string[] {
  const order: string[] = [];
  for (let i = 0; i < 100; i++) {
    const t = take(state, node, nodeClass, at);
    if (!t.jobId) return order;
    order.push(t.jobId);
    state = run(t.state, { type: "done", node, leaseId: t.leaseId, at });
  }
  throw new Error("the queue never ran dry");
}

describe("encode queue: order", () => {
  it("serves premium before standard before economy, whatever came first", () => {
    const s = run(Q.initial, enqueue(task("e1", "a", "economy")), enqueue(task("s1", "a", "standard")), enqueue(task("p1", "b", "premium")));
    expect(drain(s, "n1")).toEqual(["p1", "s1", "e1"]);
  });

  it("a premium job from another app goes before an economy backlog: it starts in the next slot", () => {
    let s = run(Q.initial, ...[1, 2, 3, 4].map((i) => enqueue(task(`e${i}`, "app_a", "economy", T0 + i))));
    const first = take(s, "n1", "small");
    expect(first.jobId).toBe("e1");
    s = run(first.state, enqueue(task("p1", "app_b", "premium", T0 + 10), T0 + 10), { type: "done", node: "n1", leaseId: first.leaseId, at: T0 + 20 });
    expect(take(s, "n1", "small", T0 + 20).jobId).toBe("p1");
  });

  it("apps take turns within a priority, so an app's backlog does not starve another's", () => {
    const a = [1, 2, 3, 4, 5, 6].map((i) => enqueue(task(`a${i}`, "app_a", "standard", T0 + i)));
    const b = [1, 2, 3].map((i) => enqueue(task(`b${i}`, "app_b", "standard", T0 + 100 + i)));
    const order = drain(run(Q.initial, ...a, ...b), "n1");
    expect(order).toEqual(["a1", "b1", "a2", "b2", "a3", "b3", "a4", "a5", "a6"]);
  });

  it("three apps share in turn; the turn carries over a new arrival", () => {
    let s = run(Q.initial, enqueue(task("c1", "app_c")), enqueue(task("a1", "app_a")), enqueue(task("b1", "app_b")));
    const t1 = take(s, "n1");
    expect(t1.jobId).toBe("a1");
    s = run(t1.state, enqueue(task("a2", "app_a")), { type: "done", node: "n1", leaseId: t1.leaseId, at: T0 });
    expect(drain(s, "n1")).toEqual(["b1", "c1", "a2"]);
  });

  it("within an app, older jobs first (by order, then id), not by arrival", () => {
    const s = run(
      Q.initial,
      enqueue(task("j3", "a", "standard", T0 + 3)),
      enqueue(task("j1", "a", "standard", T0 + 1)),
      enqueue(task("j0", "a", "standard", T0 + 1)),
    );
    expect(drain(s, "n1")).toEqual(["j0", "j1", "j3"]);
  });

  it("tasks given back go first at their priority, the earliest given back first, and never before a higher priority", () => {
    let s = run(Q.initial, enqueue(task("s1", "a")), enqueue(task("s2", "b")), enqueue(task("s3", "c")));
    const x = take(s, "n1");
    const y = take(x.state, "n2");
    s = run(
      y.state,
      { type: "release", node: "n2", leaseId: y.leaseId, at: T0 + 1 },
      { type: "release", node: "n1", leaseId: x.leaseId, at: T0 + 2 },
      enqueue(task("p1", "z", "premium"), T0 + 3),
    );
    expect(drain(s, "n3", "standard", T0 + 4)).toEqual(["p1", y.jobId, x.jobId, "s3"]);
  });

  it("each priority keeps its own turn", () => {
    const s = run(
      Q.initial,
      enqueue(task("pa", "app_a", "premium")),
      enqueue(task("pb", "app_b", "premium")),
      enqueue(task("sb", "app_b")),
      enqueue(task("sa", "app_a")),
    );
    expect(drain(s, "n1")).toEqual(["pa", "pb", "sa", "sb"]);
  });

  it("given back out of clock order, the earliest given back still goes first; given back together, the older job first", () => {
    let s = run(Q.initial, enqueue(task("s1", "a")), enqueue(task("s2", "b")), enqueue(task("s3", "c")));
    const x = take(s, "n1");
    const y = take(x.state, "n2");
    // n1's release arrives first but was stamped later (another gateway's clock).
    s = run(y.state, { type: "release", node: "n1", leaseId: x.leaseId, at: T0 + 2 }, { type: "release", node: "n2", leaseId: y.leaseId, at: T0 + 1 });
    expect(drain(s, "n3", "standard", T0 + 3)).toEqual(["s2", "s1", "s3"]);

    // Both leases run out at once: the job created first goes first, whichever was served (and so
    // given back) first.
    for (const [first, second] of [
      ["young", "old"],
      ["old", "young"],
    ] as const) {
      const age = { old: T0 + 1, young: T0 + 5 };
      const t = run(Q.initial, enqueue(task(first, "app_a", "standard", age[first])), enqueue(task(second, "app_b", "standard", age[second])));
      const a = take(t, "n1");
      const b = take(a.state, "n2");
      expect([a.jobId, b.jobId]).toEqual([first, second]);
      expect(drain(b.state, "n3", "standard", T0 + TTL + 1)).toEqual(["old", "young"]);
    }
  });

  it("a task given back takes no app's turn: the app after the one served last comes next", () => {
    const s = run(
      Q.initial,
      ...["a1", "a2"].map((j) => enqueue(task(j, "app_a"))),
      ...["b1", "b2"].map((j) => enqueue(task(j, "app_b"))),
      enqueue(task("c1", "app_c")),
    );
    const a = take(s, "n1");
    const b = take(a.state, "n2");
    expect([a.jobId, b.jobId]).toEqual(["a1", "b1"]);
    const again = take(run(b.state, { type: "release", node: "n1", leaseId: a.leaseId, at: T0 + 1 }), "n3", "standard", T0 + 2);
    expect(again.jobId).toBe("a1");
    expect(again.state.lastApp.standard).toBe("app_b");
    expect(take(again.state, "n4", "standard", T0 + 2).jobId).toBe("c1");
  });
});

describe("encode queue: worker classes", () => {
  it("each priority's class among those present: premium the largest, economy the smallest, standard standard where there is one", () => {
    const all = new Set<WorkerClass>(["small", "standard", "large"]);
    expect(targetClass("premium", all)).toBe("large");
    expect(targetClass("economy", all)).toBe("small");
    expect(targetClass("standard", all)).toBe("standard");
    expect(targetClass("standard", new Set(["small", "large"]))).toBe("large");
    expect(targetClass("standard", new Set(["small"]))).toBe("small");
    expect(targetClass("premium", new Set(["small", "standard"]))).toBe("standard");
    expect(targetClass("economy", new Set(["standard", "large"]))).toBe("standard");
    expect(targetClass("premium", new Set())).toBe("standard");
  });

  it("a premium task waits for a large node while one is about; after the grace any node takes it", () => {
    let s = run(Q.initial, lease("big", "large")); // seen, idle
    s = run(s, enqueue(task("p1", "a", "premium")), enqueue(task("e1", "a", "economy")));
    // The small node gets the economy task, not the premium one meant for the large node.
    expect(take(s, "tiny", "small", T0 + 1).jobId).toBe("e1");
    expect(take(s, "mid", "standard", T0 + PLACEMENT_GRACE_MS - 1).jobId).toBe("e1");
    expect(take(s, "mid", "standard", T0 + PLACEMENT_GRACE_MS).jobId).toBe("p1");
    expect(take(s, "tiny", "small", T0 + 2 * PLACEMENT_GRACE_MS - 1).jobId).toBe("e1");
    expect(take(s, "tiny", "small", T0 + 2 * PLACEMENT_GRACE_MS).jobId).toBe("p1");
    expect(take(s, "big", "large", T0 + 1).jobId).toBe("p1");
  });

  it("an economy task waits for a small node while one is about, then a larger one takes it", () => {
    let s = run(Q.initial, lease("tiny", "small"));
    s = run(s, enqueue(task("e1", "a", "economy")));
    expect(take(s, "big", "large", T0 + 2 * PLACEMENT_GRACE_MS - 1).jobId).toBeUndefined();
    expect(take(s, "big", "large", T0 + 2 * PLACEMENT_GRACE_MS).jobId).toBe("e1");
    expect(take(s, "tiny", "small", T0).jobId).toBe("e1");
  });

  it("with one class only, nothing waits", () => {
    const s = run(Q.initial, lease("n2", "small"), enqueue(task("p1", "a", "premium")), enqueue(task("s1", "a")), enqueue(task("e1", "a", "economy")));
    expect(drain(s, "n1", "small")).toEqual(["p1", "s1", "e1"]);
  });

  it("nodes not heard from lately no longer hold work back", () => {
    let s = run(Q.initial, lease("big", "large"));
    s = run(s, enqueue(task("p1", "a", "premium"), T0 + NODE_LIVENESS_MS));
    expect(take(s, "mid", "standard", T0 + NODE_LIVENESS_MS).jobId).toBeUndefined();
    expect(take(s, "mid", "standard", T0 + NODE_LIVENESS_MS + 1).jobId).toBe("p1");
    expect(pick(s, "standard", T0 + NODE_LIVENESS_MS + 1)?.jobId).toBe("p1");
  });
});

describe("encode queue: leases", () => {
  const queued = run(Q.initial, enqueue(task("j1")), enqueue(task("j2", "app_b")));

  it("a grant is answered with the task and takes it out of the queue; renewals are answered whether the lease is held", () => {
    const c = lease("n1");
    const { state, events } = apply(queued, c);
    expect(events).toEqual([
      {
        type: "granted",
        lease: { leaseId: c.leaseId, node: "n1", nodeClass: "standard", task: { ...task("j1"), enqueuedAt: T0 }, leasedAt: T0, renewedAt: T0, ttlMs: TTL },
      },
    ]);
    expect(Q.view!(state, c)).toEqual({ granted: { leaseId: c.leaseId, jobId: "j1", kind: "encode", appId: "app_a", priority: "standard", enqueuedAt: T0 } });
    expect(state.queued.map((t) => t.jobId)).toEqual(["j2"]);
    expect(Q.view!(state, { type: "renew", node: "n1", leaseId: c.leaseId, at: T0 + 1 })).toEqual({ held: true });
    expect(Q.view!(state, { type: "renew", node: "n2", leaseId: c.leaseId, at: T0 + 1 })).toEqual({ held: false });
    expect(Q.view!(state, { type: "done", node: "n1", leaseId: c.leaseId, at: T0 + 1 })).toEqual({});
    expect(Q.view!(queued, lease("n9"))).toEqual({});
  });

  it("a lease not renewed within its time goes back to the queue, ahead of its priority, for the next free node", () => {
    const first = take(queued, "n1");
    const renewed = run(first.state, { type: "renew", node: "n1", leaseId: first.leaseId, at: T0 + TTL });
    // Renewed at T0+TTL: still held at T0+2*TTL, gone just after.
    expect(take(renewed, "n2", "standard", T0 + 2 * TTL).jobId).toBe("j2");
    // Though app b's turn is next (app a was served last), the task that was running goes first.
    const late = take(renewed, "n2", "standard", T0 + 2 * TTL + 1);
    expect(late.jobId).toBe("j1");
    expect(late.state.queued.map((t) => t.jobId)).toEqual(["j2"]);
    // It took no turn: app b's comes next.
    expect(late.state.lastApp.standard).toBe("app_a");
    expect(take(late.state, "n3", "standard", T0 + 2 * TTL + 2).jobId).toBe("j2");
    expect(apply(renewed, lease("n2", "standard", T0 + 2 * TTL + 1)).events[0]).toEqual({
      type: "returned",
      leaseId: first.leaseId,
      node: "n1",
      reason: "expired",
      at: T0 + 2 * TTL + 1,
    });
    // The old holder's renewal now says it lost the lease.
    expect(Q.view!(late.state, { type: "renew", node: "n1", leaseId: first.leaseId, at: T0 + 2 * TTL + 2 })).toEqual({ held: false });
    expect(apply(late.state, { type: "renew", node: "n1", leaseId: first.leaseId, at: T0 + 2 * TTL + 2 }).events).toEqual([]);
  });

  it("a node that asks for work holds nothing: what it held goes back first (a lost reply, an earlier life)", () => {
    const first = take(queued, "n1");
    const again = apply(first.state, lease("n1", "standard", T0 + 5));
    expect(again.events[0]).toEqual({ type: "returned", leaseId: first.leaseId, node: "n1", reason: "stale", at: T0 + 5 });
    expect(again.state.leases).toHaveLength(1);
    expect(again.state.leases[0]!.task.jobId).toBe("j1"); // given out again, first
    expect(again.state.queued.map((t) => t.jobId)).toEqual(["j2"]);
  });

  it("an ask handed over twice, or a copy older than the node's lease (late by Kafka), is answered as before and changes nothing", () => {
    const ask = lease("n1", "standard", T0 + 5);
    const first = apply(queued, ask);
    // The same ask again: the lease it granted stays, and so does its answer.
    const twice = apply(first.state, ask);
    expect(twice.events).toEqual([]);
    expect(Q.view!(twice.state, ask)).toEqual(Q.view!(first.state, ask));
    // A copy of an earlier ask, come after the node was granted that lease: j1 keeps running there, j2 stays queued.
    const late = apply(first.state, lease("n1", "standard", T0 + 4));
    expect(late.events).toEqual([]);
    expect(late.state).toEqual(first.state);
    // The same for a done's next lease: the lease it names is gone already, the next one stays as granted.
    const done: QueueCommand = { type: "done", node: "n1", leaseId: ask.leaseId, at: T0 + 9, next: { nodeClass: "standard", leaseId: "next_1", ttlMs: TTL } };
    const ended = apply(first.state, done);
    expect(ended.events.map((e) => e.type)).toEqual(["finished", "granted"]);
    expect(apply(ended.state, done).events).toEqual([]);
    expect(Q.view!(ended.state, done)).toEqual({ granted: expect.objectContaining({ leaseId: "next_1", jobId: "j2" }) });
    // Another node's lease, granted later, says nothing of this node's ask.
    expect(take(first.state, "n2", "standard", T0 + 1).jobId).toBe("j2");
    // A new ask of the same instant as the lease's (or later) is the node's: what it held goes back.
    expect(apply(first.state, lease("n1", "standard", T0 + 5)).events.map((e) => e.type)).toEqual(["returned", "granted"]);
  });

  it("done ends a lease; release hands the task back; either from another node or for an unknown lease is no change", () => {
    const first = take(queued, "n1");
    expect(apply(first.state, { type: "done", node: "n1", leaseId: first.leaseId, at: T0 }).state.leases).toEqual([]);
    expect(apply(first.state, { type: "done", node: "n2", leaseId: first.leaseId, at: T0 }).events).toEqual([]);
    expect(apply(first.state, { type: "release", node: "n1", leaseId: "nope", at: T0 }).events).toEqual([]);
    const released = apply(first.state, { type: "release", node: "n1", leaseId: first.leaseId, at: T0 });
    expect(released.events).toEqual([{ type: "returned", leaseId: first.leaseId, node: "n1", reason: "released", at: T0 }]);
    expect(released.state.queued.map((t) => t.jobId).sort()).toEqual(["j1", "j2"]);
    expect(released.state.queued.find((t) => t.jobId === "j1")?.returnedAt).toBe(T0);
    expect(Q.effects!(released.state, released.events, { type: "release", node: "n1", leaseId: first.leaseId, at: T0 }, first.state)).toEqual([
      { kind: "nudge" },
    ]);
  });

  it("done with the next lease ends the task (no loss) and grants the next in one command; its reply is that grant", () => {
    const first = take(queued, "n1");
    const c: QueueCommand = {
      type: "done",
      node: "n1",
      leaseId: first.leaseId,
      at: T0 + 1,
      next: { nodeClass: "standard", leaseId: "next_1", ttlMs: TTL, life: "l1" },
    };
    const after = apply(first.state, c);
    expect(after.events).toEqual([
      { type: "finished", leaseId: first.leaseId, node: "n1", at: T0 + 1 },
      { type: "granted", lease: expect.objectContaining({ leaseId: "next_1", node: "n1", nodeClass: "standard", leasedAt: T0 + 1, ttlMs: TTL, life: "l1" }) },
    ]);
    expect(after.state.leases.map((l) => [l.leaseId, l.task.jobId])).toEqual([["next_1", "j2"]]);
    expect(Q.view!(after.state, c)).toMatchObject({ granted: { leaseId: "next_1", jobId: "j2" } });
    // The done task went for good: neither queued again nor counted lost.
    expect(after.state.queued).toEqual([]);
    // Nothing left: the lease ends, the node is seen, nothing is granted.
    const dry = apply(after.state, { type: "done", node: "n1", leaseId: "next_1", at: T0 + 2, next: { nodeClass: "standard", leaseId: "next_2", ttlMs: TTL } });
    expect(dry.events.map((e) => e.type)).toEqual(["finished"]);
    expect(dry.state.leases).toEqual([]);
    expect(
      Q.view!(dry.state, { type: "done", node: "n1", leaseId: "next_1", at: T0 + 2, next: { nodeClass: "standard", leaseId: "next_2", ttlMs: TTL } }),
    ).toEqual({});
    // A done that names no lease it holds still asks: what the node held is stale and goes back first.
    const stale = apply(first.state, { type: "done", node: "n1", leaseId: "nope", at: T0 + 3, next: { nodeClass: "standard", leaseId: "next_3", ttlMs: TTL } });
    expect(stale.events.map((e) => e.type)).toEqual(["returned", "granted"]);
    expect(stale.events[0]).toMatchObject({ leaseId: first.leaseId, reason: "stale" });
    expect(stale.state.leases.map((l) => [l.leaseId, l.task.jobId])).toEqual([["next_3", "j1"]]);
    // Its next lease is checked as a lease command is.
    expect(Q.decide(first.state, { ...c, next: { nodeClass: "huge" as WorkerClass, leaseId: "x", ttlMs: TTL } })).toMatchObject({ code: Code.InvalidArgument });
    expect(Q.decide(first.state, { ...c, next: { nodeClass: "standard", leaseId: "", ttlMs: TTL } })).toMatchObject({ code: Code.InvalidArgument });
    // Without next, a done's reply grants nothing.
    expect(Q.view!(after.state, { type: "done", node: "n1", leaseId: "next_1", at: T0 + 4 })).toEqual({});
  });

  it("done with a next lease that follows its job grants nothing until a task of that job is queued, then picks as always", () => {
    // j1 probed on n1; its encode is on its way. j2 (another app, same priority) is queued.
    const probes = run(Q.initial, enqueue(task("j1", "app_a", "standard", T0, "probe")), enqueue(task("j2", "app_b")));
    const probing = take(probes, "n1");
    expect(probing.jobId).toBe("j1");
    const next = (leaseId: string) => ({ nodeClass: "standard" as const, leaseId, ttlMs: TTL, follow: "j1" });
    const early = apply(probing.state, { type: "done", node: "n1", leaseId: probing.leaseId, at: T0 + 1, next: next("f1") });
    expect(early.events.map((e) => e.type)).toEqual(["finished"]);
    expect(early.state.leases).toEqual([]);
    expect(early.state.queued.map((t) => t.jobId)).toEqual(["j2"]);
    // Holding nothing, the node is woken by the job's task when it comes.
    const encode = enqueue(task("j1", "app_a", "premium"), T0 + 2);
    const queuedEncode = apply(early.state, encode);
    expect(Q.effects!(queuedEncode.state, queuedEncode.events, encode, early.state)).toEqual([{ kind: "nudge" }]);
    // Its task queued first, the same command grants by the queue's order: here the premium encode.
    const late = apply(run(probing.state, encode), { type: "done", node: "n1", leaseId: probing.leaseId, at: T0 + 3, next: next("f2") });
    expect(late.state.leases.map((l) => [l.leaseId, l.task.jobId, l.task.kind])).toEqual([["f2", "j1", "encode"]]);
    // Following a job with a task queued does not take that task out of turn: the order decides.
    const other = run(probing.state, enqueue(task("j1", "app_a", "economy"), T0 + 2));
    const fair = apply(other, { type: "done", node: "n1", leaseId: probing.leaseId, at: T0 + 3, next: next("f3") });
    expect(fair.state.leases.map((l) => [l.leaseId, l.task.jobId])).toEqual([["f3", "j2"]]);
  });

  it("renewing one lease leaves the others to run out on their own time", () => {
    const one = take(queued, "n1");
    const two = take(one.state, "n2");
    const renewed = run(two.state, { type: "renew", node: "n1", leaseId: one.leaseId, at: T0 + TTL });
    const c = lease("n3", "standard", T0 + TTL + 1);
    const after = apply(renewed, c);
    expect(after.events.map((e) => e.type)).toEqual(["returned", "granted"]);
    expect(after.events[0]).toMatchObject({ leaseId: two.leaseId, node: "n2", reason: "expired" });
    expect(after.state.leases.map((l) => [l.node, l.task.jobId, l.renewedAt])).toEqual([
      ["n1", "j1", T0 + TTL],
      ["n3", "j2", T0 + TTL + 1],
    ]);
    expect(Q.view!(after.state, { type: "renew", node: "n1", leaseId: one.leaseId, at: T0 + TTL + 2 })).toEqual({ held: true });
  });

  it("a node's end of its task leaves the other nodes' leases held", () => {
    const one = take(queued, "n1");
    const two = take(one.state, "n2");
    const ended = run(two.state, { type: "done", node: "n1", leaseId: one.leaseId, at: T0 + 1 });
    expect(ended.leases.map((l) => [l.node, l.task.jobId])).toEqual([["n2", "j2"]]);
    expect(Q.view!(ended, { type: "renew", node: "n1", leaseId: one.leaseId, at: T0 + 2 })).toEqual({ held: false });
    const none = run(ended, { type: "done", node: "n2", leaseId: two.leaseId, at: T0 + 2 });
    expect(Q.view!(none, { type: "renew", node: "n2", leaseId: two.leaseId, at: T0 + 3 })).toEqual({ held: false });
  });

  it("a renewal, an end or a release names its lease: another lease id of the same node is not held", () => {
    const first = take(queued, "n1");
    const other = { node: "n1", leaseId: "lease_of_an_earlier_life", at: T0 + 1 };
    expect(Q.view!(first.state, { type: "renew", ...other })).toEqual({ held: false });
    for (const type of ["renew", "done", "release"] as const) expect(apply(first.state, { type, ...other }).events).toEqual([]);
  });

  it("a lease command learns only a grant to the node that asked", () => {
    const c = lease("n1");
    const held = run(run(Q.initial, enqueue(task("j1"))), c);
    // n2's request found nothing to do; the lease id it sent happens to name n1's lease.
    const asked = { ...c, node: "n2", at: T0 + 1 };
    const after = run(held, asked);
    expect(Q.view!(after, asked)).toEqual({});
    expect(Q.view!(after, c)).toMatchObject({ granted: { jobId: "j1" } });
  });

  it("a renewal or a return folded for a lease no longer held changes nothing", () => {
    const first = take(queued, "n1");
    for (const e of [
      { type: "renewed", leaseId: "gone", node: "n1", at: T0 + 1 },
      { type: "returned", leaseId: "gone", node: "n1", reason: "expired", at: T0 + 1 },
    ] as const)
      expect(Q.fold(first.state, e)).toBe(first.state);
  });

  it("a task given back to the queue leaves the job's next task queued beside it", () => {
    const probe = take(run(Q.initial, enqueue(task("j1", "a", "standard", T0, "probe"))), "n1");
    const both = run(probe.state, enqueue(task("j1", "a", "standard", T0, "encode"), T0 + 1));
    // n1 asks again: its probe goes back and is given out again, first; the encode stays.
    const again = take(both, "n1", "standard", T0 + 2);
    expect(again.state.leases.map((l) => l.task.kind)).toEqual(["probe"]);
    expect(again.state.queued.map((t) => [t.jobId, t.kind])).toEqual([["j1", "encode"]]);
  });

  it("idle nodes are nudged when a task is queued or given back, and not otherwise", () => {
    const nudges = (state: QueueState, c: QueueCommand) => {
      const { state: next, events } = apply(state, c);
      return Q.effects!(next, events, c, state);
    };
    expect(nudges(Q.initial, enqueue(task("j1")))).toEqual([{ kind: "nudge" }]);
    const first = take(queued, "n1");
    expect(nudges(queued, lease("n1"))).toEqual([]);
    expect(nudges(first.state, { type: "renew", node: "n1", leaseId: first.leaseId, at: T0 + 1 })).toEqual([]);
    expect(nudges(first.state, { type: "done", node: "n1", leaseId: first.leaseId, at: T0 + 1 })).toEqual([]);
    expect(nudges(queued, { type: "cancel", jobId: "j1", at: T0 + 1 })).toEqual([]);
    expect(nudges(queued, { type: "cancel", jobId: "j9", at: T0 + 1 })).toEqual([]);
    // The job's next task replacing its queued one is a task queued too.
    const probe = run(Q.initial, enqueue(task("j1", "a", "standard", T0, "probe")));
    expect(nudges(probe, enqueue(task("j1", "a", "standard", T0, "encode"), T0 + 1))).toEqual([{ kind: "nudge" }]);
  });

  it("a task queued while every node the queue knows holds a lease wakes none: each asks for work as its task ends", () => {
    const nudges = (state: QueueState, c: QueueCommand) => {
      const { state: next, events } = apply(state, c);
      return Q.effects!(next, events, c, state);
    };
    const busy = take(queued, "n1");
    expect(nudges(busy.state, enqueue(task("j3"), T0 + 1))).toEqual([]);
    // Another node seen idle (it asked and found nothing) is woken.
    const both = take(busy.state, "n2").state;
    const idle = run(both, lease("n3", "standard", T0 + 2));
    expect(idle.leases.map((l) => l.node)).toEqual(["n1", "n2"]);
    expect(nudges(both, enqueue(task("j3"), T0 + 3))).toEqual([]);
    expect(nudges(idle, enqueue(task("j3"), T0 + 3))).toEqual([{ kind: "nudge" }]);
    // So is every node once the one it knew ended its task without asking for more.
    expect(nudges(run(busy.state, { type: "done", node: "n1", leaseId: busy.leaseId, at: T0 + 4 }), enqueue(task("j3"), T0 + 5))).toEqual([{ kind: "nudge" }]);
    // A task given back while every node is busy wakes none either: here n1's stale lease, given
    // back as n1 asks again and is granted a task at once.
    const again = apply(both, lease("n1", "standard", T0 + 6));
    expect(again.events.map((e) => e.type)).toEqual(["returned", "granted"]);
    expect(Q.effects!(again.state, again.events, lease("n1"), both)).toEqual([]);
  });

  it("a nudge publishes a work signal; an abandoned task tells its job", async () => {
    const sent: WorkSignal[] = [];
    const told: unknown[] = [];
    const handlers = queueIntentHandlers(
      async (signal) => {
        sent.push(signal);
      },
      async (...args) => {
        told.push(args);
      },
    );
    const ctx = { type: Q.type, id: "main", state: queued, seq: 1, recovered: false };
    await handlers.nudge({ kind: "nudge" }, ctx);
    expect(sent).toEqual([{ signal: "work" }]);
    expect(told).toEqual([]);
    await handlers.abandoned({ kind: "abandoned", jobId: "j1", task: "encode", lostOn: ["n1", "n2", "n1"], at: T0 + 9 }, ctx);
    expect(told).toEqual([["j1", "encode", ["n1", "n2", "n1"], T0 + 9, undefined]]);
    await handlers.abandoned({ kind: "abandoned", jobId: "j1", task: "chunk", part: 2, lostOn: ["n1", "n2", "n1"], at: T0 + 9 }, ctx);
    expect(told.at(-1)).toEqual(["j1", "chunk", ["n1", "n2", "n1"], T0 + 9, 2]);
    expect(sent).toHaveLength(1);
  });

  it(`a task whose lease is lost in ${MAX_TASK_LOSSES} lives of nodes (expired or stale) is abandoned: it leaves the queue and its job is told; releases are no loss`, () => {
    expect(MAX_TASK_LOSSES).toBe(3);
    const as = (life: string, c: QueueCommand & { type: "lease" }) => ({ ...c, life });
    // Lost by n1 (expired), released by n2 (a drain: no loss), lost by n2's life "a" (stale: it came back and asked again).
    const first = take(queued, "n1");
    const second = take(first.state, "n2", "standard", T0 + TTL + 1);
    expect(second.jobId).toBe("j1");
    expect(second.state.leases.find((l) => l.node === "n2")!.task).toMatchObject({ lostOn: ["n1"], lostLives: ["n1"] });
    const released = run(second.state, { type: "release", node: "n2", leaseId: second.leaseId, at: T0 + TTL + 2 });
    expect(released.queued.find((t) => t.jobId === "j1")).toMatchObject({ lostOn: ["n1"], lostLives: ["n1"] });
    const a1 = as("a", lease("n2", "standard", T0 + TTL + 3));
    const third = run(released, a1);
    expect(replyOf(third, a1).granted?.jobId).toBe("j1");
    expect(third.leases.find((l) => l.node === "n2")).toMatchObject({ life: "a" });
    // Life "a" asks again (a reply it lost): a loss, its first.
    const a2 = as("a", lease("n2", "standard", T0 + TTL + 4));
    const fourth = run(third, a2);
    expect(replyOf(fourth, a2).granted?.jobId).toBe("j1");
    expect(fourth.leases.find((l) => l.node === "n2")!.task).toMatchObject({ lostOn: ["n1", "n2"], lostLives: ["n1", "a"] });
    // And again: the same life counts once, so it is given out again.
    const a3 = as("a", lease("n2", "standard", T0 + TTL + 5));
    const fifth = apply(fourth, a3);
    expect(fifth.events[0]).toEqual({ type: "returned", leaseId: a2.leaseId, node: "n2", reason: "stale", at: T0 + TTL + 5 });
    expect(replyOf(fifth.state, a3).granted?.jobId).toBe("j1");
    // n2 restarted (life "b"): the lease life "a" held is lost again, which "a" has counted already.
    const b1 = as("b", lease("n2", "standard", T0 + TTL + 6));
    const sixth = apply(fifth.state, b1);
    expect(sixth.events[0]).toMatchObject({ type: "returned", leaseId: a3.leaseId, reason: "stale" });
    expect(replyOf(sixth.state, b1).granted?.jobId).toBe("j1");
    // Restarted again (life "c"): the loss in life "b", a third life, abandons the task; the queue hands out the next one.
    const c1 = as("c", lease("n2", "standard", T0 + TTL + 7));
    const last = apply(sixth.state, c1);
    expect(last.events[0]).toEqual({
      type: "abandoned",
      leaseId: b1.leaseId,
      node: "n2",
      jobId: "j1",
      kind: "encode",
      lostOn: ["n1", "n2", "n2"],
      at: T0 + TTL + 7,
    });
    expect(last.events[1]).toMatchObject({ type: "granted", lease: { node: "n2", life: "c", task: { jobId: "j2" } } });
    expect(last.state.queued.some((t) => t.jobId === "j1")).toBe(false);
    expect(last.state.leases.some((l) => l.task.jobId === "j1")).toBe(false);
    expect(Q.effects!(last.state, last.events, c1, sixth.state)).toEqual([
      { kind: "abandoned", jobId: "j1", task: "encode", lostOn: ["n1", "n2", "n2"], at: T0 + TTL + 7 },
    ]);
    // Expiry counts the same: the lease of life "a" running out is its first loss there, and abandons the task too.
    const held = fourth.leases.find((l) => l.node === "n2")!;
    const lapsed = apply(
      { ...fourth, leases: fourth.leases.map((l) => (l === held ? { ...l, life: "c" } : l)) },
      { type: "renew", node: "n9", leaseId: "none", at: T0 + 2 * TTL + 10 },
    );
    expect(lapsed.events).toEqual([
      { type: "abandoned", leaseId: a2.leaseId, node: "n2", jobId: "j1", kind: "encode", lostOn: ["n1", "n2", "n2"], at: T0 + 2 * TTL + 10 },
    ]);
    expect(lapsed.state.leases).toEqual([]);
    const sameLife = apply(fourth, { type: "renew", node: "n9", leaseId: "none", at: T0 + 2 * TTL + 10 });
    expect(sameLife.events).toEqual([{ type: "returned", leaseId: a2.leaseId, node: "n2", reason: "expired", at: T0 + 2 * TTL + 10 }]);
  });

  it("an abandoned lease's node row is rewritten (idle again); a fold of an abandoned lease not held changes nothing but the leases", () => {
    const first = take(queued, "n1");
    const abandoned: QueueEvent = { type: "abandoned", leaseId: first.leaseId, node: "n1", jobId: "j1", kind: "encode", lostOn: ["a", "b", "n1"], at: T0 + 1 };
    const after = Q.fold(first.state, abandoned);
    expect(after.leases).toEqual([]);
    expect(after.queued).toEqual(first.state.queued);
    // Only that lease goes: another node's lease stays.
    const second = take(first.state, "n2");
    expect(Q.fold(second.state, abandoned).leases).toEqual(second.state.leases.filter((l) => l.node === "n2"));
    expect(second.state.leases).toHaveLength(2);
    const rows = Q.readModel(after, abandoned);
    expect(rows.find((r) => r.table === ENCODER_NODES.table)).toMatchObject({ id: "n1", value: { busy: false } });
    expect(Q.fold(after, abandoned)).toEqual(after);
  });
});

describe("encode queue: tasks", () => {
  it("keeps one task of a kind per job: a repeat while queued or leased is no change", () => {
    const s = run(Q.initial, enqueue(task("j1")));
    expect(apply(s, enqueue(task("j1"), T0 + 5)).events).toEqual([]);
    const leased = take(s, "n1");
    expect(apply(leased.state, enqueue(task("j1"), T0 + 5)).events).toEqual([]);
  });

  it("the next kind of a job replaces its queued one, and joins beside a leased one", () => {
    const probe = run(Q.initial, enqueue(task("j1", "a", "standard", T0, "probe")));
    const replaced = apply(probe, enqueue(task("j1", "a", "standard", T0, "encode"), T0 + 1));
    expect(replaced.events.map((e) => e.type)).toEqual(["removed", "enqueued"]);
    expect(replaced.state.queued.map((t) => t.kind)).toEqual(["encode"]);
    const leased = take(probe, "n1");
    expect(apply(leased.state, enqueue(task("j1", "a", "standard", T0, "encode"), T0 + 1)).state.queued.map((t) => t.kind)).toEqual(["encode"]);
  });

  it("a canceled job leaves the queue; a cancel of a job not queued is no change", () => {
    const s = run(Q.initial, enqueue(task("j1")), enqueue(task("j2")));
    expect(run(s, { type: "cancel", jobId: "j1", at: T0 }).queued.map((t) => t.jobId)).toEqual(["j2"]);
    expect(apply(s, { type: "cancel", jobId: "j9", at: T0 }).events).toEqual([]);
  });

  it("refuses malformed commands", () => {
    const bad = (c: unknown) => Q.decide(Q.initial, c as QueueCommand);
    expect(bad({ type: "enqueue", task: { ...task("j1"), priority: "urgent" }, at: T0 })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ type: "enqueue", task: { ...task("j1"), kind: "thumbs" }, at: T0 })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ type: "enqueue", task: { ...task(""), jobId: "" }, at: T0 })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ type: "enqueue", at: T0 })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ ...lease("n1"), nodeClass: "huge" })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ ...lease("n1"), ttlMs: 0 })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ ...lease(""), node: "" })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ type: "enqueue", task: task("j1"), at: Number.NaN })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ type: "enqueue", task: { ...task("j1"), traceparent: 7 }, at: T0 })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ type: "shuffle", at: T0 })).toMatchObject({ code: Code.InvalidArgument });
  });

  it("a task's trace goes with it to the node it is granted to; a task without one is granted without", () => {
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const queuedTraced = run(Q.initial, enqueue({ ...task("j1"), traceparent }), enqueue(task("j2")));
    const first = lease("n1");
    const afterFirst = run(queuedTraced, first);
    expect(Q.view!(afterFirst, first)).toEqual({
      granted: { leaseId: first.leaseId, jobId: "j1", kind: "encode", appId: "app_a", priority: "standard", enqueuedAt: T0, traceparent },
    });
    const second = lease("n2");
    const granted = replyOf(run(afterFirst, second), second).granted!;
    expect(granted.jobId).toBe("j2");
    expect("traceparent" in granted).toBe(false);
  });

  it("a new task is queued as sent, stamped with its time; a cancel removes the job's queued tasks", () => {
    const t = task("j1", "app_a", "premium", T0 - 7, "probe");
    const queuedOne = apply(Q.initial, enqueue(t, T0 + 1));
    expect(queuedOne.events).toEqual([{ type: "enqueued", task: { ...t, enqueuedAt: T0 + 1 } }]);
    expect(queuedOne.state.queued).toEqual([{ ...t, enqueuedAt: T0 + 1 }]);
    expect(apply(queuedOne.state, { type: "cancel", jobId: "j1", at: T0 + 2 }).events).toEqual([{ type: "removed", jobId: "j1", at: T0 + 2 }]);
    // Another job's task joins the line; nothing queued before it goes.
    const second = apply(queuedOne.state, enqueue(task("j2"), T0 + 3));
    expect(second.events).toEqual([{ type: "enqueued", task: { ...task("j2"), enqueuedAt: T0 + 3 } }]);
    expect(second.state.queued.map((q) => q.jobId)).toEqual(["j1", "j2"]);
  });

  it("refusals say what is wrong", () => {
    const bad = (c: unknown) => Q.decide(Q.initial, c as QueueCommand);
    const taskRefusal = { code: Code.InvalidArgument, message: "a task needs a job, a kind, an app, a priority and an order" };
    expect(bad({ type: "enqueue", task: { ...task("j1"), jobId: 7 }, at: T0 })).toEqual(taskRefusal);
    expect(bad({ type: "enqueue", task: { ...task("j1"), appId: 7 }, at: T0 })).toEqual(taskRefusal);
    expect(bad({ type: "enqueue", task: { ...task("j1"), order: Number.POSITIVE_INFINITY }, at: T0 })).toEqual(taskRefusal);
    expect(bad({ type: "enqueue", task: { ...task("j1"), kind: "thumbs" }, at: T0 })).toEqual(taskRefusal);
    expect(bad({ type: "enqueue", task: task("j1"), at: Number.NaN })).toEqual({ code: Code.InvalidArgument, message: "at must be a time" });
    expect(bad({ ...lease("n1"), nodeClass: "huge" })).toEqual({ code: Code.InvalidArgument, message: "nodeClass must be one of small, standard, large" });
    const leaseRefusal = { code: Code.InvalidArgument, message: "a lease needs a node, a lease id and a time to live" };
    expect(bad({ ...lease("n1"), leaseId: "" })).toEqual(leaseRefusal);
    expect(bad({ ...lease("n1"), ttlMs: -1 })).toEqual(leaseRefusal);
    expect(bad({ ...lease("n1"), node: "" })).toEqual(leaseRefusal);
    expect(bad({ type: "shuffle", at: T0 })).toEqual({ code: Code.InvalidArgument, message: "unknown command shuffle" });
  });
});

describe("encode queue: chunks of a split ladder", () => {
  const chunk = (jobId: string, part: number, order = T0): TaskRequest => ({ ...task(jobId, "app_a", "standard", order, "chunk"), part });
  const alongside = (node: string, jobId: string, at = T0): QueueCommand & { type: "lease" } => ({ ...lease(node, "standard", at), jobId });

  it("each chunk is a task of its own: a repeat is no change, and neither the job's encode nor its chunks replace one another", () => {
    const s = run(Q.initial, enqueue(task("j1")), enqueue(chunk("j1", 0)), enqueue(chunk("j1", 1)));
    expect(s.queued.map((t) => `${t.kind}${t.part ?? ""}`)).toEqual(["encode", "chunk0", "chunk1"]);
    expect(apply(s, enqueue(chunk("j1", 1), T0 + 1)).events).toEqual([]);
    // The encode given again (a later attempt) leaves the chunks queued.
    const probe = run(Q.initial, enqueue(task("j1", "app_a", "standard", T0, "probe")), enqueue(chunk("j1", 0)));
    expect(run(probe, enqueue(task("j1"), T0 + 1)).queued.map((t) => `${t.kind}${t.part ?? ""}`)).toEqual(["chunk0", "encode"]);
    // A cancel takes them all.
    expect(run(s, { type: "cancel", jobId: "j1", at: T0 + 2 }).queued).toEqual([]);
  });

  it("any idle node takes a chunk, each a different one, in the job's turn", () => {
    const s = run(Q.initial, enqueue(chunk("j1", 0)), enqueue(chunk("j1", 1)), enqueue(task("j2", "app_b")));
    const a = lease("n1");
    const afterA = run(s, a);
    expect(replyOf(afterA, a).granted).toMatchObject({ jobId: "j1", kind: "chunk", part: 0 });
    const b = lease("n2");
    const afterB = run(afterA, b);
    expect(replyOf(afterB, b).granted).toMatchObject({ jobId: "j2", kind: "encode" });
    expect(replyOf(afterB, b).granted).not.toHaveProperty("part");
    const c = lease("n3");
    expect(replyOf(run(afterB, c), c).granted).toMatchObject({ jobId: "j1", kind: "chunk", part: 1 });
  });

  it("a node asking alongside its task gets only a chunk of that job, given back ones first, and keeps the lease it holds", () => {
    const s = run(Q.initial, enqueue(task("j1")), enqueue(task("j2")));
    const main = take(s, "n1");
    expect(main.jobId).toBe("j1");
    const chunks = run(main.state, enqueue(chunk("j1", 0)), enqueue(chunk("j1", 1)), enqueue(chunk("j1", 2)));
    const first = alongside("n1", "j1");
    const withChunk = run(chunks, first);
    expect(replyOf(withChunk, first).granted).toMatchObject({ jobId: "j1", kind: "chunk", part: 0 });
    expect(withChunk.leases.map((l) => l.leaseId)).toEqual([main.leaseId, first.leaseId]);
    // A chunk another node gave back goes first.
    const other = lease("n2");
    const taken = run(withChunk, other);
    expect(replyOf(taken, other).granted).toMatchObject({ part: 1 });
    const lost = run(taken, { type: "release", node: "n2", leaseId: other.leaseId, at: T0 + 1 });
    const next = alongside("n1", "j1", T0 + 2);
    expect(replyOf(run(lost, next), next).granted).toMatchObject({ part: 1 });
    // Nothing of the job queued: nothing, not another job's task, and the node's leases stay.
    const none = alongside("n1", "j2");
    const s2 = run(main.state, none);
    expect(replyOf(s2, none).granted).toBeUndefined();
    expect(s2.leases.map((l) => l.leaseId)).toEqual([main.leaseId]);
  });

  it("a chunk whose lease is lost too often is abandoned with its part; a chunk without a part, or a part on another kind, is refused", () => {
    let s = run(Q.initial, enqueue(chunk("j1", 3)));
    let events: QueueEvent[] = [];
    for (let i = 0; i < MAX_TASK_LOSSES; i++) {
      s = run(s, { ...lease(`n${i}`), at: T0 + i * 2 * TTL });
      ({ state: s, events } = apply(s, { type: "renew", node: "x", leaseId: "none", at: T0 + i * 2 * TTL + TTL + 1 }));
    }
    expect(events).toMatchObject([{ type: "abandoned", jobId: "j1", kind: "chunk", part: 3 }]);
    expect(Q.effects!(s, events, { type: "renew", node: "x", leaseId: "none", at: T0 }, s)).toEqual([
      expect.objectContaining({ kind: "abandoned", task: "chunk", part: 3 }),
    ]);
    const bad = (t: unknown) => Q.decide(Q.initial, { type: "enqueue", task: t as TaskRequest, at: T0 });
    expect(bad({ ...task("j1", "a", "standard", T0, "chunk") })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ ...chunk("j1", -1) })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ ...chunk("j1", 1.5) })).toMatchObject({ code: Code.InvalidArgument });
    expect(bad({ ...task("j1"), part: 0 })).toMatchObject({ code: Code.InvalidArgument });
  });
});

describe("encode queue: rows for metrics and health", () => {
  it("the summary counts queued tasks and their oldest age by priority, and leases by class", () => {
    const s = run(
      Q.initial,
      enqueue(task("p1", "a", "premium"), T0 + 5),
      enqueue(task("e1", "a", "economy"), T0 + 1),
      enqueue(task("e2", "a", "economy"), T0 + 2),
    );
    const leased = take(s, "big", "large", T0 + 9).state;
    expect(summaryOf(leased, T0 + 10)).toEqual({
      at: T0 + 10,
      priorities: { premium: { depth: 0, oldestEnqueuedAt: 0 }, standard: { depth: 0, oldestEnqueuedAt: 0 }, economy: { depth: 2, oldestEnqueuedAt: T0 + 1 } },
      leases: { small: 0, standard: 0, large: 1 },
    });
  });

  it("the summary holds for a backlog of any length (400,000 tasks, the oldest last in the queue)", () => {
    const n = 400_000;
    const queued = Array.from({ length: n }, (_, i) => ({ ...task(`j${i}`, "a", i % 2 === 0 ? "premium" : "economy"), enqueuedAt: T0 + n - i }));
    expect(summaryOf({ ...Q.initial, queued }, T0).priorities).toEqual({
      premium: { depth: n / 2, oldestEnqueuedAt: T0 + 2 },
      standard: { depth: 0, oldestEnqueuedAt: 0 },
      economy: { depth: n / 2, oldestEnqueuedAt: T0 + 1 },
    });
  });

  it("each change rewrites the summary and the row of the node it concerns, which expires unless the node is heard from", () => {
    const s = run(Q.initial, enqueue(task("j1")));
    const c = lease("n1", "small", T0 + 3);
    const { state, events } = apply(s, c);
    expect(Q.readModel(state, events[0]!)).toEqual([
      { table: QUEUE_SUMMARY.table, id: QUEUE_SUMMARY.id, value: summaryOf(state, T0 + 3) },
      {
        table: ENCODER_NODES.table,
        id: "n1",
        partition: ENCODER_NODES.partition,
        sort: "n1",
        value: { nodeId: "n1", class: "small", busy: true, at: T0 + 3 },
        expiresAt: T0 + 3 + NODE_LIVENESS_MS,
      },
    ]);
    const idle = apply(state, { type: "done", node: "n1", leaseId: c.leaseId, at: T0 + 4 });
    expect(Q.readModel(idle.state, idle.events[0]!)[1]).toMatchObject({ value: { nodeId: "n1", busy: false, at: T0 + 3 } });
    expect(Q.readModel(s, { type: "enqueued", task: { ...task("j2"), enqueuedAt: T0 } })).toHaveLength(1);
    expect(Q.repair(state).map((w) => w.table)).toEqual([QUEUE_SUMMARY.table, ENCODER_NODES.table]);
  });

  it("an idle node is written down when new, when its class changes, and every 10 s; forgotten after 10 minutes", () => {
    const first = apply(Q.initial, lease("n1", "small"));
    expect(first.events).toEqual([{ type: "node_seen", node: "n1", nodeClass: "small", at: T0 }]);
    expect(apply(first.state, lease("n1", "small", T0 + 9_999)).events).toEqual([]);
    expect(apply(first.state, lease("n1", "small", T0 + 10_000)).events).toHaveLength(1);
    expect(apply(first.state, lease("n1", "large", T0 + 1)).events).toHaveLength(1);
    const later = run(first.state, lease("n2", "small", T0 + 10 * 60_000));
    expect(Object.keys(later.nodes)).toEqual(["n2"]);
    expect(Q.effects!(first.state, first.events, lease("n1"), Q.initial)).toEqual([]);
  });
  it("the summary is stamped with the time of the change, whatever the change", () => {
    const stamps: number[] = [];
    let s = Q.initial;
    const step = (c: QueueCommand) => {
      const { events } = apply(s, c);
      for (const e of events) {
        s = Q.fold(s, e);
        stamps.push((Q.readModel(s, e)[0]!.value as { at: number }).at);
      }
    };
    step(enqueue(task("j1"), T0 + 1));
    step({ type: "cancel", jobId: "j1", at: T0 + 2 });
    step(lease("n1", "standard", T0 + 3));
    step(enqueue(task("j2"), T0 + 4));
    const c = lease("n1", "standard", T0 + 5);
    step(c);
    step({ type: "renew", node: "n1", leaseId: c.leaseId, at: T0 + 6 });
    step({ type: "release", node: "n1", leaseId: c.leaseId, at: T0 + 7 });
    expect(stamps).toEqual([T0 + 1, T0 + 2, T0 + 3, T0 + 4, T0 + 5, T0 + 6, T0 + 7]);
  });

  it("a node's row says it is idle while another node is busy, and goes once the queue has forgotten the node", () => {
    const c = lease("n1", "standard", T0, 20 * 60_000);
    const busy = run(Q.initial, enqueue(task("j1")), c);
    const idle = apply(busy, lease("n2", "small", T0 + 1));
    expect(Q.readModel(idle.state, idle.events[0]!)[1]).toMatchObject({ id: "n2", value: { nodeId: "n2", class: "small", busy: false } });
    // Seeing one node forgets none of the others heard from lately.
    expect(Object.keys(idle.state.nodes).sort()).toEqual(["n1", "n2"]);
    expect(Object.keys(run(idle.state, lease("n2", "small", T0 + 10 * 60_000 - 1)).nodes).sort()).toEqual(["n1", "n2"]);
    // n1 runs a task with a long lease and is not heard from for 10 minutes: forgotten, its row goes.
    const later = run(idle.state, lease("n2", "small", T0 + 10 * 60_000));
    expect(Object.keys(later.nodes)).toEqual(["n2"]);
    const done = apply(later, { type: "done", node: "n1", leaseId: c.leaseId, at: T0 + 10 * 60_000 + 1 });
    expect(Q.readModel(done.state, done.events[0]!)[1]).toEqual({ table: ENCODER_NODES.table, id: "n1", value: null });
  });
});
