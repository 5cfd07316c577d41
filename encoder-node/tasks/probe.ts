// The probe task: the job's input fetched and read by ffprobe; the job learns its streams.
import type { EncodeTask } from "../../actors/job/messages.js";
import { randomToken } from "../../src/ids.js";
import { MediaError } from "../media-errors.js";
import { failureOf, ReportError } from "../reports.js";
import type { TaskContext, TaskEnd } from "../steps/context.js";
import { stage } from "../stage-timing.js";

/** Goes on (TaskEnd) when the job, probed, is queueing its encode. */
export async function runProbe(c: TaskContext, task: EncodeTask, signal: AbortSignal): Promise<TaskEnd> {
  const { ask } = c.reports;
  const attempt = randomToken(12);
  const started = Date.now();
  const job = await ask({ id: task.jobId }, { type: "probe_started", attempt, at: started });
  if (!job || job.status !== "probing" || job.attempt !== attempt) return;
  let file: string;
  try {
    file = await stage("fetch", () => c.exec.fetchInput(job, signal));
  } catch (e) {
    if (!signal.aborted) await ask(job, { type: "probe_failed", attempt, at: Date.now(), failure: failureOf(e, "input") });
    return;
  }
  try {
    const result = await stage("probe", () => c.exec.probe(file, signal));
    if (!result.video && !result.audio) throw new MediaError("input_unsupported", "the input has neither a video nor an audio stream");
    const after = await ask(job, { type: "probed", attempt, at: Date.now(), metadata: result, durationMs: Date.now() - started });
    if (after?.status === "processing") return { goesOn: true };
  } catch (e) {
    if (e instanceof ReportError) throw e;
    if (!signal.aborted) await ask(job, { type: "probe_failed", attempt, at: Date.now(), failure: failureOf(e, "encode") });
  }
}
