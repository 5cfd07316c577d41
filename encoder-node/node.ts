// The encoder node role: leases tasks (probe, encode, chunk) for its worker class from the encode
// queue, one at a time, renewing the lease while it runs, and dispatches each to its file under
// tasks/; drains on stop; says in health whether its machine has what it needs. Tasks are at least
// once: each run is a new attempt, and the job's actor counts only the latest attempt's reports.
import { mkdir, readdir, rm } from "node:fs/promises";
import path from "node:path";
import type { Bus, Consumer } from "../src/bus/port.js";
import type { Topics } from "../src/bus/topics.js";
import type { Config } from "../src/config.js";
import { randomToken } from "../src/ids.js";
import type { ManagedStorage } from "../src/managed-storage.js";
import type { EncodeTask, JobCommand, JobSignal, JobState } from "../actors/job/messages.js";
import type { Logger } from "../src/log.js";
import { encodeTasks, encoderActivity } from "../src/metrics.js";
import type { LeaseGrant, QueueCommand, QueueReply, WorkSignal } from "../actors/scheduler/messages.js";
import type { NetGuard } from "../src/net-guard.js";
import type { Reply } from "../src/replies.js";
import type { SecretBox } from "../src/secrets.js";
import { askForLease, doneAndNext, endLease, holdLease, type LeaseChannel } from "./lease.js";
import { recogniserPaths, startRecogniser, type Recogniser } from "./recogniser.js";
import { checkPrerequisites, standing } from "./prerequisites.js";
import { reportsTo } from "./reports.js";
import { nodeExecutors, type Executors, type TaskContext } from "./steps/context.js";
import { runTask } from "./tasks/index.js";
import { inSpan, pastSpan, SpanKind, traceFrom, type Attributes, type Context } from "../src/tracing.js";

export { withoutPaths } from "./reports.js";

export interface EncoderDeps {
  readonly bus: Bus;
  readonly topics: Topics;
  /** Sends a report to the job's actor, wherever it lives, and resolves with its reply. */
  readonly report: (jobId: string, command: JobCommand) => Promise<Reply<JobState>>;
  /** Asks the encode queue (leases on tasks, their renewals and ends). */
  readonly queue: (command: QueueCommand) => Promise<Reply<QueueReply>>;
  /** Sends a report that needs no reply (progress). */
  readonly notify: (jobId: string, command: JobCommand) => Promise<void>;
  readonly box: SecretBox;
  readonly guard: NetGuard;
  readonly config: Config;
  readonly log: Logger;
  /** Managed storage: hosted videos' sources in, managed jobs' outputs out. */
  readonly managed: ManagedStorage;
  /** Speech recognition for generated subtitle tracks; by default the worker scripts/asr-setup.sh installs. */
  readonly recogniser?: Recogniser;
  /** The effects tasks run (ffmpeg, storage, ...); the real ones by default, fakes in encoder-node/pipeline.spec.ts. */
  readonly executors?: (workRoot: string) => Executors;
}

export interface EncoderNode {
  stop(): Promise<void>;
  /** Whether the node can take tasks: what it needs on its machine is there (encoder-node/prerequisites.ts). */
  health(): { ok: boolean; message?: string };
}

/** An idle node asks the queue for work this often, and at once when work is signalled. */
const IDLE_POLL_MS = 1000;
/** How often a node that lacks a prerequisite looks again. */
const PREREQUISITES_RECHECK_MS = 30_000;

const decoder = new TextDecoder();

/**
 * The queue's part of a task's trace: from when it was queued to the lease this node got, so a
 * trace shows how long the job waited for a node (clocks of two machines: a skew shows in it).
 */
function queueWait(trace: Context | undefined, grant: LeaseGrant, attributes: Attributes): void {
  pastSpan(trace, "encode_queue lease", SpanKind.INTERNAL, { ...attributes, "media.queue.waited_ms": Date.now() - grant.enqueuedAt }, grant.enqueuedAt);
}

export async function startEncoderNode(d: EncoderDeps): Promise<EncoderNode> {
  // One work folder per node: nodes may share a data folder (one machine), and a task given to
  // another node must not lose its files to the cleanup of the node that gave it up.
  const workRoot = path.join(d.config.dataDir, "work", d.config.encoder.nodeId);
  await rm(workRoot, { recursive: true, force: true }); // what an earlier life of this node left
  await mkdir(workRoot, { recursive: true });
  const running = new Map<string, AbortController>();
  const recogniser = d.recogniser ?? startRecogniser(recogniserPaths(), d.log);
  // What the node needs on its machine: without ffmpeg and ffprobe it takes no task (jobs wait,
  // health says why); each missing part is one plain line on stderr, whatever the log level.
  let prerequisites = standing([]);
  const checkMachine = async (first: boolean) => {
    const found = await checkPrerequisites();
    const was = prerequisites;
    prerequisites = standing(found);
    if (first) for (const p of found.filter((f) => !f.ok)) process.stderr.write(`media: ${p.required ? "encoder stopped" : "warning"}: ${p.detail}\n`);
    if (!first && !was.ok && prerequisites.ok) d.log.info("the encoder's prerequisites are there now; taking tasks");
    for (const p of found)
      d.log[p.ok ? "debug" : p.required ? "error" : "warn"]({ prerequisite: p.name, detail: p.detail }, p.ok ? "prerequisite found" : "prerequisite missing");
  };
  await checkMachine(true);

  // A canceled job stops its ffmpeg at once; signalled work wakes an idle node.
  const signals: Consumer = await d.bus.consume({
    topic: d.topics.signals,
    group: `${d.topics.signals}-${randomToken(12)}`,
    fromLatest: true,
    handler: async (m) => {
      const signal = JSON.parse(decoder.decode(m.value)) as JobSignal | WorkSignal;
      if (signal.signal === "stop") running.get(signal.jobId)?.abort();
      else if (signal.signal === "work") wake();
    },
  });

  // One task at a time (ffmpeg already uses every core of the node), leased from the encode queue.
  const { nodeId, workerClass, leaseMs, drainMs } = d.config.encoder;
  const lease: LeaseChannel = { queue: d.queue, nodeId, workerClass, leaseMs, life: randomToken(8) };
  const context: TaskContext = {
    d,
    reports: reportsTo(d),
    lease,
    workRoot,
    recogniser,
    exec: (d.executors ?? ((root) => nodeExecutors(d, root)))(workRoot),
  };
  let draining = false;
  let wake: () => void = () => undefined;
  /** Resolves after `ms`, or at once when work is signalled or the node stops. */
  const idle = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = () => undefined;
        resolve();
      }
      wake = done;
    });
  let current: { leaseId: string; controller: AbortController; handedBack: boolean } | undefined;
  /**
   * The lease of the task just run, ended with the next ask for work (doneAndNext), or alone when
   * there is none; `follow` names its job when the job is queueing its next task.
   */
  let justRan: { leaseId: string; follow?: string } | undefined;
  const endFinished = async () => {
    const leaseId = justRan?.leaseId;
    justRan = undefined;
    if (leaseId !== undefined)
      await endLease(lease, leaseId, "done", (e) => d.log.warn({ err: e, lease_id: leaseId }, "lease done not told; it runs out instead"));
  };
  const activity = encoderActivity(workerClass);

  /** Runs a leased task; false when the job's actor could not be told its outcome (the task runs again). */
  async function leased(grant: LeaseGrant): Promise<boolean> {
    const controller = new AbortController();
    const task: EncodeTask = { kind: grant.kind, jobId: grant.jobId, ...(grant.part !== undefined ? { part: grant.part } : {}) };
    const mine = { leaseId: grant.leaseId, controller, handedBack: false };
    current = mine;
    running.set(grant.jobId, controller);
    // Renewals keep the lease; one the queue no longer knows (it expired and went to another node) stops the work.
    const held = holdLease(lease, grant.leaseId, {
      lost: () => {
        d.log.warn({ job_id: grant.jobId, lease_id: grant.leaseId }, "lease lost; stopping the task");
        controller.abort();
      },
      error: (e) => d.log.warn({ err: e, job_id: grant.jobId }, "lease not renewed"),
      endError: (e, how) => d.log.warn({ err: e, job_id: grant.jobId }, `lease ${how} not told; it runs out instead`),
    });
    const idleAgain = activity.start();
    let goesOn = false; // the job is queueing its next task (a probe's encode)
    encodeTasks.inc({ kind: grant.kind, priority: grant.priority, class: workerClass });
    const part = grant.part !== undefined ? { part: grant.part } : {};
    d.log.info({ job_id: grant.jobId, kind: grant.kind, ...part, priority: grant.priority, waited_ms: Date.now() - grant.enqueuedAt }, "task started");
    try {
      // Only the job this task is for keeps its files here (a chunk's input stays for the next chunk of it).
      for (const entry of await readdir(workRoot)) if (entry !== task.jobId) await rm(path.join(workRoot, entry), { recursive: true, force: true });
      // The task continues the trace of the job that queued it: its stages' spans nest under it.
      const trace = traceFrom(grant.traceparent);
      const attributes = {
        "media.job_id": task.jobId,
        "media.task.kind": task.kind,
        ...(grant.part !== undefined ? { "media.task.part": grant.part } : {}),
        "media.encoder.node": nodeId,
        "media.encoder.class": workerClass,
        "media.lease_id": grant.leaseId,
        "media.priority": grant.priority,
      };
      queueWait(trace, grant, attributes);
      goesOn =
        (await inSpan(trace, `encode_task ${task.kind}`, SpanKind.CONSUMER, attributes, () => runTask(context, task, controller.signal)))?.goesOn === true;
    } catch (e) {
      // The job's actor did not take a report: the lease runs out and the task is run again.
      d.log.error({ err: e, job_id: task.jobId, kind: task.kind }, "encode task failed");
      return false;
    } finally {
      held.stopRenewing();
      idleAgain();
      running.delete(task.jobId);
      current = undefined;
      // The input stays for the encode task after a probe, and for the next chunk; an ended job needs nothing.
      if (task.kind === "encode" || controller.signal.aborted) await rm(path.join(workRoot, task.jobId), { recursive: true, force: true });
    }
    if (mine.handedBack) await held.end("release");
    else justRan = { leaseId: grant.leaseId, ...(goesOn ? { follow: grant.jobId } : {}) };
    return true;
  }

  const loop = (async () => {
    while (!draining) {
      if (!prerequisites.ok) {
        await endFinished();
        // Looked at again now and then: installing ffmpeg needs no restart.
        await idle(PREREQUISITES_RECHECK_MS);
        if (!draining) await checkMachine(false);
        continue;
      }
      let grant: LeaseGrant | undefined;
      try {
        grant = justRan !== undefined ? await doneAndNext(lease, justRan.leaseId, justRan.follow) : await askForLease(lease);
      } catch (e) {
        d.log.warn({ err: e }, "the encode queue did not answer; asking again");
      } finally {
        justRan = undefined;
      }
      if (draining) {
        // Granted while stopping: hand it straight back.
        if (grant) await endLease(lease, grant.leaseId, "release");
        break;
      }
      // After a failed task, a pause before asking again (its lease goes back to the queue then).
      if (!grant || !(await leased(grant))) await idle(IDLE_POLL_MS);
    }
    await endFinished();
  })();
  d.log.info({ work_dir: workRoot }, "encoder node ready");

  return {
    async stop() {
      // Drain: ask for no more work; the running task may finish within the drain time, else it is
      // stopped and handed back to the queue, which gives it to another node at once.
      draining = true;
      wake();
      const finished = await Promise.race([loop.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), drainMs).unref())]);
      if (!finished && current) {
        d.log.warn({ lease_id: current.leaseId }, "drain time over; handing the running task back");
        current.handedBack = true;
        current.controller.abort();
        await loop;
      }
      await signals.stop();
      await recogniser.stop();
    },
    health: () => prerequisites,
  };
}
