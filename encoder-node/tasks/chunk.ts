// The chunk task: one chunk of a job's split ladder, while the job still waits for it (steps/chunk.ts).
import type { EncodeTask } from "../../actors/job/messages.js";
import type { TaskContext } from "../steps/context.js";
import { runChunk } from "../steps/chunk.js";

export async function runChunkTask(c: TaskContext, task: EncodeTask, signal: AbortSignal): Promise<void> {
  const job = await c.reports.ask({ id: task.jobId }, { type: "look" });
  const part = task.part ?? -1;
  if (!job || job.status !== "processing" || job.chunked?.done[part] !== null) return;
  await runChunk(c, job, part, signal);
}
