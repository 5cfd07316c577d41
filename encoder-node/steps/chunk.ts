// A chunk of a job's split ladder, encoded wherever a node is free (its own task, or leased beside
// the job's encode), its segments stored where the whole's go; and the wait of the node that split
// the ladder for every chunk.
import { fromJson } from "@bufbuild/protobuf";
import { rm } from "node:fs/promises";
import path from "node:path";
import type { ChunkRendition, JobRecord } from "../../actors/job/messages.js";
import { contentTypeOf } from "../../src/content-types.js";
import { OutputSpecSchema } from "../../src/gen/media/v1/job_pb.js";
import { randomToken } from "../../src/ids.js";
import { chunkFiles, chunkRenditions } from "../chunks.js";
import { askForLease, holdLease, LeaseRefused } from "../lease.js";
import { MediaError } from "../media-errors.js";
import { planOutput } from "../plan.js";
import { failureOf, ReportError, writing } from "../reports.js";
import { hostedStream, type TaskContext } from "./context.js";
import { stage } from "../stage-timing.js";

/** How often the node that split a ladder looks again while other nodes encode its last chunks. */
const CHUNK_WAIT_MS = 500;

/** Encodes one chunk of the job's split ladder, stores its segments where the whole's go, and reports it done. */
async function encodeChunk(c: TaskContext, job: JobRecord, part: number, signal: AbortSignal): Promise<void> {
  const chunked = job.chunked!;
  const output = job.outputs.find((o) => o.id === chunked.outputId);
  const span = chunked.spans[part];
  if (!output || !span) throw new MediaError("internal", `chunk ${part} of ${chunked.outputId} is not planned`);
  c.d.log.info({ job_id: job.id, output_id: output.id, part }, "chunk started");
  const file = await stage("fetch", () => c.exec.fetchInput(job, signal, true));
  const input = job.inputMetadata ?? (await stage("probe", () => c.exec.probe(file, signal)));
  const plan = planOutput(
    fromJson(OutputSpecSchema, output.spec),
    { file, probe: input },
    {
      outputId: output.id,
      workDir: path.join(c.workRoot, job.id, `chunk-${part}-${randomToken(6)}`),
      ...(job.clip ? { clip: job.clip } : {}),
      chunk: span,
      ...(hostedStream(job) === output ? { wholeLowestRung: true } : {}),
    },
  );
  try {
    await c.exec.encodePlan(plan, { signal });
    const renditions = await chunkRenditions(plan, signal);
    const blob = c.exec.outputBlob(job);
    const files = await chunkFiles(plan);
    await stage("upload", async () => {
      for (const rel of files) await writing(() => blob.put(`${output.keyPrefix}/${rel}`, path.join(plan.dir, rel), contentTypeOf(rel)));
    });
    c.d.log.info({ job_id: job.id, output_id: output.id, part, seconds: [span.start, span.end ?? null] }, "chunk encoded");
    await c.reports.ask(job, { type: "chunk_done", at: Date.now(), outputId: output.id, part, node: c.lease.nodeId, renditions });
  } finally {
    await rm(plan.dir, { recursive: true, force: true });
  }
}

/** A chunk, leased as its own task or alongside the job's encode: its failure fails its output. */
export async function runChunk(c: TaskContext, job: JobRecord, part: number, signal: AbortSignal): Promise<void> {
  try {
    await encodeChunk(c, job, part, signal);
  } catch (e) {
    if (e instanceof ReportError) throw e;
    if (signal.aborted) return;
    const failure = failureOf(e, "encode");
    c.d.log.warn({ job_id: job.id, part, code: failure.code, err: e }, "chunk failed");
    await c.reports.ask(job, { type: "chunk_failed", at: Date.now(), outputId: job.chunked!.outputId, part, failure });
  }
}

/**
 * The node that split a ladder, its own part done: encodes the chunks still queued (leased
 * alongside its task), then waits for the others' until every chunk is done; their results, in
 * chunk order. Throws when the output failed (a chunk that could not be encoded) or the job ended.
 */
export async function chunksOf(
  c: TaskContext,
  job: JobRecord,
  outputId: string,
  signal: AbortSignal,
  progress: (done: number) => void,
): Promise<ChunkRendition[][]> {
  for (;;) {
    if (signal.aborted) throw new MediaError("canceled", "encode canceled");
    const now = await c.reports.ask(job, { type: "look" });
    const output = now?.outputs.find((o) => o.id === outputId);
    if (!now || now.status !== "processing" || !output || now.chunked?.outputId !== outputId) throw new MediaError("canceled", "the job ended");
    // Failed already (its chunk's failure is the one recorded): this node's report of it changes nothing.
    if (output.status === "failed") throw new MediaError("encode_failed", output.errorMessage ?? "a chunk failed");
    const done = now.chunked.done;
    if (done.every((x) => x !== null)) return done.map((x) => [...x!.renditions]);
    progress(done.filter((x) => x !== null).length / done.length);
    // A refusal is a wait; a queue that does not answer fails the output, as any failed step does.
    const grant = await askForLease(c.lease, job.id).catch((e: unknown) => {
      if (e instanceof LeaseRefused) return undefined;
      throw e;
    });
    if (!grant || grant.part === undefined) {
      await new Promise((r) => setTimeout(r, CHUNK_WAIT_MS));
      continue;
    }
    const held = holdLease(c.lease, grant.leaseId);
    try {
      await runChunk(c, now, grant.part, signal);
    } finally {
      await held.end("done");
    }
  }
}
