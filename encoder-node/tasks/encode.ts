// The encode task: the job's input, then each output's steps in order (steps/output.ts), then its
// thumbnails; the job hears each output's end, then that the encode finished.
import { fromJson } from "@bufbuild/protobuf";
import path from "node:path";
import type { EncodeTask, JobRecord } from "../../actors/job/messages.js";
import { OutputSpecSchema } from "../../src/gen/media/v1/job_pb.js";
import { randomToken } from "../../src/ids.js";
import { openOriginBlob, originKey } from "../../src/origins.js";
import type { ProbeResult } from "../probe.js";
import { failureOf, ReportError } from "../reports.js";
import { startTranscripts, Transcripts, type SubtitleContext } from "../subtitle-tracks.js";
import { runOutput, type EncodeRun } from "../steps/output.js";
import { storeThumbnails } from "../steps/thumbnails.js";
import { hostedStream, type TaskContext } from "../steps/context.js";
import { stage } from "../stage-timing.js";

/** What the subtitle tracks of an attempt read: the recogniser, the job's origins, the input. */
function subtitleContext(c: TaskContext, job: JobRecord, input: EncodeRun["input"], workDir: string, signal: AbortSignal): SubtitleContext {
  const { box, guard, config } = c.d;
  const inputOrigin = job.inputOrigin;
  return {
    recogniser: c.recogniser,
    guard,
    ...(inputOrigin
      ? { readInputOriginPath: (p: string, to: string) => openOriginBlob(inputOrigin, box, guard, config).getToFile(originKey(inputOrigin, p), to) }
      : {}),
    origins: { job, open: (origin) => openOriginBlob(origin, box, guard, config) },
    inputFile: input.file,
    probe: input.probe,
    ...(job.clip ? { clip: job.clip } : {}),
    workDir: path.join(workDir, "subtitles"),
    signal,
  };
}

export async function runEncode(c: TaskContext, task: EncodeTask, signal: AbortSignal): Promise<void> {
  const { ask } = c.reports;
  const attempt = randomToken(12);
  const started = Date.now();
  const job = await ask({ id: task.jobId }, { type: "encode_started", attempt, at: started });
  if (!job || job.status !== "processing" || job.attempt !== attempt) return;
  let file: string;
  let probe: ProbeResult;
  try {
    file = await stage("fetch", () => c.exec.fetchInput(job, signal));
    const fetched = file;
    probe = job.inputMetadata ?? (await stage("probe", () => c.exec.probe(fetched, signal)));
  } catch (e) {
    if (!signal.aborted) await ask(job, { type: "encode_finished", attempt, at: Date.now(), durationMs: Date.now() - started, failure: failureOf(e, "input") });
    return;
  }
  const input = { file, probe };
  const workDir = path.join(c.workRoot, job.id, attempt);
  const subtitles = subtitleContext(c, job, input, workDir, signal);
  const transcripts = new Transcripts(subtitles);
  startTranscripts(
    job.outputs.filter((o) => o.status !== "completed").map((o) => fromJson(OutputSpecSchema, o.spec)),
    transcripts,
  );
  // A hosted video's stream (a managed job's first HLS output) is published while it encodes: playable in seconds.
  const hosted = hostedStream(job);
  const run: EncodeRun = {
    c,
    job,
    attempt,
    started,
    input,
    blob: c.exec.outputBlob(job),
    workDir,
    subtitles,
    transcripts,
    hosted,
    stream: c.d.config.encoder.progressive ? hosted : undefined,
    signal,
  };
  // One ladder of the job may be split into chunks for every free node: the first that can.
  let split = true;
  let writeDenied = false;
  for (const output of job.outputs) {
    if (signal.aborted) return;
    if (output.status === "completed") continue;
    const end = await runOutput(run, output, split);
    if (end.stop) return;
    if (end.split) split = false;
    if (end.failure?.code === "output_write_denied") writeDenied = true;
  }
  await transcripts.dispose();
  if (job.thumbnails.length > 0 && !signal.aborted && !writeDenied) {
    try {
      const results = await stage("thumbnails", () => storeThumbnails(c.exec, run.blob, job, input, workDir, signal));
      await ask(job, { type: "thumbnails_done", attempt, at: Date.now(), results });
    } catch (e) {
      if (e instanceof ReportError) throw e;
      c.d.log.warn({ job_id: job.id, err: e }, "thumbnails failed");
    }
  }
  if (signal.aborted) return;
  await ask(job, { type: "encode_finished", attempt, at: Date.now(), durationMs: Date.now() - started });
}
