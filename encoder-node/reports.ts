// Reports to the job, in one place: a report that needs the job's answer is sent again while the
// bus or the job's host cannot take it; progress needs none and is sent once. A failure becomes
// the job's error code and a message without the node's paths.
import { Code } from "@connectrpc/connect";
import { BlobError } from "../src/blob/index.js";
import { isJobErrorCode, type Failure, type JobCommand, type JobRecord, type JobState } from "../actors/job/messages.js";
import type { Logger } from "../src/log.js";
import type { Reply } from "../src/replies.js";
import { MediaError } from "./media-errors.js";

/** How long a report the bus or the actors cannot take now is sent again before the task gives up. */
const REPORT_RETRY_MS = 120_000;

/** A report the job's actor did not take: the task's outcome is unknown to the job, so the task runs again (its lease runs out). */
export class ReportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReportError";
  }
}

/** An upload that failed after a good encode: the output's failure is the storage's. */
export class OutputWriteError extends Error {
  constructor(readonly failure: Failure) {
    super(failure.message);
    this.name = "OutputWriteError";
  }
}

/**
 * A failure's message as callers see it: the node's own files named by their base name only
 * (ffprobe and ffmpeg quote the paths they were given, which are the node's work folder). URLs
 * keep their paths: a slash after ":" or "/" is not a path's start.
 */
export function withoutPaths(message: string): string {
  return message.replace(
    /(^|[\s'"(=[])\/[^\s'"():,[\]]*\/([^\s'"():,[\]/]*)/g,
    (_all, before: string, base: string) => `${before}${base === "" ? "(a folder)" : base}`,
  );
}

/** The job's failure for an error at a stage of a task. */
export function failureOf(e: unknown, stage: "input" | "output" | "encode"): Failure {
  if (e instanceof OutputWriteError) return e.failure;
  const message = withoutPaths(e instanceof Error ? e.message : String(e));
  if (e instanceof MediaError) return { code: isJobErrorCode(e.code) ? e.code : "internal", message };
  if (e instanceof BlobError) {
    if (stage === "input") return { code: e.kind === "forbidden_address" ? "input_forbidden" : "input_unreachable", message };
    return { code: e.kind === "denied" || e.kind === "read_only" ? "output_write_denied" : "output_write_failed", message };
  }
  return { code: "internal", message };
}

/** Runs a storage write; its failure is the output's (output_write_denied or output_write_failed). */
export async function writing<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (e) {
    throw new OutputWriteError(failureOf(e, "output"));
  }
}

export interface Reports {
  /** A report the job answers: its record after it, undefined when the job does not exist. Throws ReportError when not taken. */
  ask(job: Pick<JobRecord, "id">, command: JobCommand): Promise<JobRecord | undefined>;
  /** Progress is advisory: a lost report is replaced by the next one. */
  tell(job: Pick<JobRecord, "id">, command: JobCommand): void;
}

export interface ReportChannels {
  readonly report: (jobId: string, command: JobCommand) => Promise<Reply<JobState>>;
  readonly notify: (jobId: string, command: JobCommand) => Promise<void>;
  readonly log: Logger;
}

export function reportsTo(d: ReportChannels, retryMs = REPORT_RETRY_MS): Reports {
  return {
    async ask(job, command) {
      // A report the bus or the job's host cannot take now (a restart under way) is sent again, for a
      // while: the job's actor takes a report once, so a repeat changes nothing.
      const deadline = Date.now() + retryMs;
      for (let delay = 250; ; delay = Math.min(delay * 2, 5_000)) {
        const reply = await d.report(job.id, command);
        // A job that does not exist will never take the task: drop it.
        if (!reply.ok && reply.rejection.code === Code.NotFound) return undefined;
        if (reply.ok) return reply.state.job;
        if (reply.rejection.code !== Code.Unavailable || Date.now() + delay > deadline)
          throw new ReportError(`job ${job.id} refused ${command.type}: ${reply.rejection.message}`);
        d.log.warn({ job_id: job.id, report: command.type, reason: reply.rejection.message }, "report not taken; sending it again");
        await new Promise((r) => setTimeout(r, delay));
      }
    },
    tell(job, command) {
      d.notify(job.id, command).catch((e: unknown) => d.log.warn({ err: e, job_id: job.id }, "progress report lost"));
    },
  };
}
