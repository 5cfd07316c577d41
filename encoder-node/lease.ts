// The one lease implementation: asking the encode queue for a task, renewing its lease while the
// task runs (a renewal the queue no longer knows means another node has it now), and ending it.
import type { LeaseGrant, QueueCommand, QueueReply } from "../actors/scheduler/messages.js";
import type { EncoderSettings } from "../src/config.js";
import { randomToken } from "../src/ids.js";
import type { Reply } from "../src/replies.js";

export interface LeaseChannel {
  readonly queue: (command: QueueCommand) => Promise<Reply<QueueReply>>;
  readonly nodeId: string;
  readonly workerClass: EncoderSettings["workerClass"];
  readonly leaseMs: number;
  /** This run of the node: the queue counts a task's losses once per life. */
  readonly life: string;
}

/** The queue answered, refusing the lease. */
export class LeaseRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LeaseRefused";
  }
}

/** A task of any job, or with `jobId` a chunk of that job (leased alongside its encode); undefined when none is free. Throws when the queue did not answer. */
export async function askForLease(c: LeaseChannel, jobId?: string): Promise<LeaseGrant | undefined> {
  const reply = await c.queue({
    type: "lease",
    node: c.nodeId,
    nodeClass: c.workerClass,
    leaseId: randomToken(16),
    ttlMs: c.leaseMs,
    at: Date.now(),
    life: c.life,
    ...(jobId !== undefined ? { jobId } : {}),
  });
  if (!reply.ok) throw new LeaseRefused(reply.rejection.message);
  return reply.state.granted;
}

/**
 * Ends the lease of the task just run and asks for the next task in the same command (one round
 * trip and one write of the queue instead of two); undefined when none is free, or from a queue
 * that grants none so (it ended the lease all the same). `follow`: the job of the task ended,
 * which is queueing its next task; nothing is granted before it is queued (NextLease.follow).
 * When the queue refuses or does not answer, the lease is ended alone, and the error thrown.
 */
export async function doneAndNext(c: LeaseChannel, done: string, follow?: string): Promise<LeaseGrant | undefined> {
  const reply = await c.queue({
    type: "done",
    node: c.nodeId,
    leaseId: done,
    at: Date.now(),
    next: { nodeClass: c.workerClass, leaseId: randomToken(16), ttlMs: c.leaseMs, life: c.life, ...(follow !== undefined ? { follow } : {}) },
  });
  if (reply.ok) return reply.state.granted;
  // Refused (the next lease's fields): the lease ends on its own, the error is the lease's.
  await endLease(c, done, "done");
  throw new LeaseRefused(reply.rejection.message);
}

export interface HeldLease {
  /** Stops renewing and tells the queue the task is done, or handed back; a lost answer lets the lease run out instead. */
  end(how: "done" | "release"): Promise<void>;
  /** Stops renewing without telling the queue. */
  stopRenewing(): void;
}

/** Renews a lease every third of its time until ended; `onLost` when the queue answers that it is no longer held, `onError` when a renewal goes unanswered. */
export function holdLease(
  c: LeaseChannel,
  leaseId: string,
  on: { lost?: () => void; error?: (e: unknown) => void; endError?: (e: unknown, how: string) => void } = {},
): HeldLease {
  const renewals = setInterval(
    () => {
      c.queue({ type: "renew", node: c.nodeId, leaseId, at: Date.now() })
        .then((r) => {
          if (r.ok && r.state.held === false) on.lost?.();
        })
        .catch((e: unknown) => on.error?.(e));
    },
    Math.max(500, Math.floor(c.leaseMs / 3)),
  );
  const stopRenewing = () => clearInterval(renewals);
  return {
    stopRenewing,
    async end(how) {
      stopRenewing();
      await endLease(c, leaseId, how, on.endError);
    },
  };
}

/** Tells the queue a lease's task is done, or handed back; an unanswered end lets the lease run out. */
export async function endLease(c: LeaseChannel, leaseId: string, how: "done" | "release", onError?: (e: unknown, how: string) => void): Promise<void> {
  await c.queue({ type: how, node: c.nodeId, leaseId, at: Date.now() }).then(
    () => undefined,
    (e: unknown) => onError?.(e, how),
  );
}
