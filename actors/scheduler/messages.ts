// The encode queue's protocol: what job actors enqueue and what encoder nodes ask of it (a lease on
// the next task for their worker class, its renewals, its end). Encoder nodes speak it, so it
// imports only the kernel.

import type { Priority, WorkerClass } from "../../src/encode-queue.js";
import { entity } from "../entity.js";

export { PRIORITIES, WORKER_CLASSES, type Priority, type WorkerClass } from "../../src/encode-queue.js";

/** The one queue of a deployment: entity type and id. */
export const QUEUE_TYPE = "encode_queue";
export const QUEUE_ID = "main";

/** A job's probe, its encode, and the chunks of a ladder split across nodes (each its own task: `part`). */
export type TaskKind = "probe" | "encode" | "chunk";

export interface TaskRequest {
  readonly jobId: string;
  readonly kind: TaskKind;
  /** A chunk task: which chunk of the job's chunked output (0-based). */
  readonly part?: number;
  readonly appId: string;
  readonly priority: Priority;
  /** Orders an app's jobs: older jobs first (the job's creation time). */
  readonly order: number;
  /** The W3C traceparent of the trace the task belongs to (src/tracing.ts); absent outside a trace and in older records. */
  readonly traceparent?: string;
}

export type QueueCommand =
  | { readonly type: "enqueue"; readonly task: TaskRequest; readonly at: number }
  /** The job ended or was canceled: its queued tasks go. */
  | { readonly type: "cancel"; readonly jobId: string; readonly at: number }
  /**
   * An idle node asks for work. A node runs one task at a time, so any lease it still holds is
   * stale (a reply it never got, or an earlier life of the node) and goes back to the queue first.
   * `life` names this run of the node's process (a token drawn at its start): a task is abandoned
   * after leases lost in 3 different lives, so one life that loses it again and again (the store or
   * the bus away for longer than a lease) counts once.
   */
  | {
      readonly type: "lease";
      readonly node: string;
      readonly nodeClass: WorkerClass;
      readonly leaseId: string;
      readonly ttlMs: number;
      readonly at: number;
      readonly life?: string;
      /**
       * Alongside the task it runs: a chunk of this job, which the node runs within that task
       * (the node that splits a ladder encodes chunks too, once its own part is done). The node's
       * other lease is kept; only a chunk of the job is granted.
       */
      readonly jobId?: string;
    }
  | { readonly type: "renew"; readonly node: string; readonly leaseId: string; readonly at: number }
  /**
   * The task ran (whatever its outcome: the job knows it). With `next`, the node also asks for its
   * next task, as a lease command would (one command and one write instead of two); a queue that
   * does not know `next` ends the lease and grants nothing, and the node asks again at its next poll.
   */
  | { readonly type: "done"; readonly node: string; readonly leaseId: string; readonly at: number; readonly next?: NextLease }
  /** A draining node gives its task back unfinished. */
  | { readonly type: "release"; readonly node: string; readonly leaseId: string; readonly at: number };

/** A lease asked for with the end of the one before (the done command's `next`): a lease command's fields. */
export interface NextLease {
  readonly nodeClass: WorkerClass;
  readonly leaseId: string;
  readonly ttlMs: number;
  readonly life?: string;
  /**
   * The job whose task just ended goes on to its next task, which its actor is queueing: nothing is
   * granted until a task of that job is queued (then the queue picks as it always does). A node
   * granted nothing holds no lease, so the job's task wakes it when it comes: the job's next step
   * is not passed over by work queued behind it because the node asked first.
   */
  readonly follow?: string;
}

export interface LeaseGrant {
  readonly leaseId: string;
  readonly jobId: string;
  readonly kind: TaskKind;
  readonly part?: number;
  readonly appId: string;
  readonly priority: Priority;
  /** When the task was first queued (epoch ms): the scheduling delay starts there. */
  readonly enqueuedAt: number;
  /** The task's trace, which the node's task span continues. */
  readonly traceparent?: string;
}

/** What the queue answers: a lease command learns its grant, a renewal whether the lease is still held. */
export interface QueueReply {
  readonly granted?: LeaseGrant;
  readonly held?: boolean;
}

/** The deployment's one encode queue (id QUEUE_ID): asked with a QueueCommand, it answers a QueueReply. */
export const Queue = entity<QueueCommand, QueueReply>(QUEUE_TYPE);

/** Sent on the signals topic when work is queued: idle nodes ask for it at once instead of at their next poll. */
export interface WorkSignal {
  readonly signal: "work";
}

/** The store record the queue keeps of itself for metrics and health (table encode_queue, id summary). */
export const QUEUE_SUMMARY = { table: "encode_queue", id: "summary" } as const;
/** One row per encoder node seen lately (table encoder_nodes, partition all); rows expire by themselves. */
export const ENCODER_NODES = { table: "encoder_nodes", partition: "all" } as const;
/** A node not heard from for this long is not counted as part of the pool. */
export const NODE_LIVENESS_MS = 30_000;
