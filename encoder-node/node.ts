// The encoder node role: leases tasks (probe, then encode) for its worker class from the encode
// queue, one at a time, renewing the lease while it runs; runs ffprobe and ffmpeg on a local copy
// of the input, writes outputs to the job's output origin under deterministic keys, and reports
// every step to the job's actor over the command topic. Tasks are at least once: each run is a new
// attempt, and the actor counts only the latest attempt's reports.
import { fromJson } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { BlobError, fetchUrlToFile, parseStorageUrl, type BlobStore } from "../src/blob/index.js";
import type { Bus, Consumer } from "../src/bus/port.js";
import type { Topics } from "../src/bus/topics.js";
import type { Config } from "../src/config.js";
import { OutputSpecSchema, OutputType, ThumbnailSpecSchema, type OutputSpec } from "../src/gen/media/v1/job_pb.js";
import { keyProviderFor, sealKeys } from "../src/drm/keys.js";
import { DrmKeyError, trackClassOf, type ContentKey, type TrackClass } from "../src/drm/types.js";
import { randomToken } from "../src/ids.js";
import { sourceKey } from "../src/hosting.js";
import { contentTypeOf } from "../src/content-types.js";
import type { ManagedStorage } from "../src/managed-storage.js";
import {
  isJobErrorCode,
  type ChunkRendition,
  type ContentAwareResult,
  type DrmKeysData,
  type EncodeTask,
  type Failure,
  type JobCommand,
  type JobRecord,
  type JobSignal,
  type JobState,
} from "../actors/job/messages.js";
import type { Logger } from "../src/log.js";
import { encodeTasks, encoderActivity } from "../src/metrics.js";
import type { LeaseGrant, QueueCommand, QueueReply, WorkSignal } from "../actors/scheduler/messages.js";
import type { NetGuard } from "../src/net-guard.js";
import { openOriginBlob, originKey } from "../src/origins.js";
import type { Reply } from "../src/replies.js";
import type { SecretBox } from "../src/secrets.js";
import { runPlan, writeGrowingHlsMaster, writeHlsMaster, parseMediaPlaylist } from "./ffmpeg.js";
import { chunkFiles, chunkRenditions, joinChunks, wholeRung } from "./chunks.js";
import { analyzeContent, measureRungs, ratesOf, type ContentAwareLadder } from "./content-aware.js";
import { ProgressivePublisher } from "./progressive.js";
import { MediaError } from "./media-errors.js";
import { chunkable, chunkSpans, drmSchemeOf, drmSystemsOf, planOutput, segmentSecondsOf, type ChunkSpan, type OutputPlan } from "./plan.js";
import { probe, probeStartSeconds, type ProbeResult } from "./probe.js";
import { renderThumbnails } from "./thumbnails.js";
import { recogniserPaths, startRecogniser, type Recogniser } from "./recogniser.js";
import { checkPrerequisites, standing } from "./prerequisites.js";
import { needsTranscription, startTracks, startTranscripts, Transcripts, trackResults, writeTracks, type SubtitleContext } from "./subtitles.js";

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
}

/** How often the node that split a ladder looks again while other nodes encode its last chunks. */
const CHUNK_WAIT_MS = 500;

/** A rendition's top folder (its name, for HLS). */
const folderOf = (file: string) => (file.includes("/") ? file.slice(0, file.indexOf("/")) : "");

/** An idle node asks the queue for work this often, and at once when work is signalled. */
const IDLE_POLL_MS = 1000;

/** Share of an output's progress that its transcription takes, when one has to be made for it. */
const TRANSCRIPTION_SHARE = 0.3;
/** Share of a content-aware output's encode progress that its analysis takes (it is planned at about a fifth of the encode). */
const ANALYSIS_SHARE = 0.2;

/** What a content-aware rendition reports: its rung of the ladder (renditions and variants share their order). */
function contentAwareResult(ladder: ContentAwareLadder, index: number): ContentAwareResult | undefined {
  const rung = ladder.rungs[index];
  if (!rung) return undefined;
  return {
    targetVmaf: rung.targetVmaf,
    crf: rung.crf,
    maxKbps: rung.maxKbps,
    predictedVmaf: rung.predictedVmaf,
    predictedKbps: rung.predictedKbps,
    ...(rung.measuredVmaf !== undefined ? { measuredVmaf: rung.measuredVmaf } : {}),
    analysisMs: ladder.analysisMs,
  };
}

export interface EncoderNode {
  stop(): Promise<void>;
  /** Whether the node can take tasks: what it needs on its machine is there (encoder-node/prerequisites.ts). */
  health(): { ok: boolean; message?: string };
}

const decoder = new TextDecoder();

function failureOf(e: unknown, stage: "input" | "output" | "encode"): Failure {
  const message = withoutPaths(e instanceof Error ? e.message : String(e));
  if (e instanceof MediaError) return { code: isJobErrorCode(e.code) ? e.code : "internal", message };
  if (e instanceof BlobError) {
    if (stage === "input") return { code: e.kind === "forbidden_address" ? "input_forbidden" : "input_unreachable", message };
    return { code: e.kind === "denied" || e.kind === "read_only" ? "output_write_denied" : "output_write_failed", message };
  }
  return { code: "internal", message };
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

/** A report the job's actor did not take: the task's outcome is unknown to the job, so the task runs again (its lease runs out). */
class ReportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReportError";
  }
}

/** How often a node that lacks a prerequisite looks again. */
const PREREQUISITES_RECHECK_MS = 30_000;

/** How long a report the bus or the actors cannot take now is sent again before the task gives up. */
const REPORT_RETRY_MS = 120_000;

/** An upload that failed after a good encode: the output's failure is the storage's. */
class OutputWriteError extends Error {
  constructor(readonly failure: Failure) {
    super(failure.message);
    this.name = "OutputWriteError";
  }
}

async function filesUnder(dir: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(dir, rel), { withFileTypes: true })) {
    const child = path.posix.join(rel, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(dir, child)));
    else out.push(child);
  }
  return out;
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

  // A canceled job stops its ffmpeg at once.
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

  const ask = async (job: Pick<JobRecord, "id">, command: JobCommand): Promise<JobRecord | undefined> => {
    // A report the bus or the job's host cannot take now (a restart under way) is sent again, for a
    // while: the job's actor takes a report once, so a repeat changes nothing.
    const deadline = Date.now() + REPORT_RETRY_MS;
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
  };
  /** Progress is advisory: a lost report is replaced by the next one. */
  const tell = (job: JobRecord, command: JobCommand) => {
    d.notify(job.id, command).catch((e: unknown) => d.log.warn({ err: e, job_id: job.id }, "progress report lost"));
  };

  const inputFile = (job: JobRecord) => path.join(workRoot, job.id, "input");

  /** A local copy of the job's input, fetched through the network guard (for a chunk, without storing a hosted video's source again). */
  async function fetchInput(job: JobRecord, signal: AbortSignal, forChunk = false): Promise<string> {
    const file = inputFile(job);
    if (existsSync(file)) return file;
    await mkdir(path.dirname(file), { recursive: true });
    const partial = `${file}.part`;
    if (job.inputVideoId) {
      // A hosted video's source; a job that needs a deleted one says so.
      try {
        await d.managed.blob.getToFile(sourceKey(job.inputVideoId), partial);
      } catch (e) {
        if (e instanceof BlobError && e.kind === "not_found")
          throw new MediaError("input_unreachable", `the source file of ${job.inputVideoId} is not in managed storage (deleted, or never uploaded)`);
        throw e;
      }
    } else if (job.inputOrigin) {
      const blob = openOriginBlob(job.inputOrigin, d.box, d.guard, d.config);
      await blob.getToFile(originKey(job.inputOrigin, job.inputPath), partial);
    } else if (job.inputUrl.startsWith("https://") || (job.managed && job.inputUrl.startsWith("http://"))) {
      // Plain http only for URL ingest of hosted videos (the spec allows it there), still through the guard.
      await fetchUrlToFile(job.inputUrl, partial, d.guard, { allowHttp: job.inputUrl.startsWith("http://") });
    } else if (job.inputUrlOrigin) {
      const { key } = parseStorageUrl(job.inputUrl);
      await openOriginBlob(job.inputUrlOrigin, d.box, d.guard, d.config).getToFile(key, partial);
    } else {
      throw new MediaError("input_unreachable", `no way to read ${job.inputUrl || job.inputVideoId}`);
    }
    if (signal.aborted) throw new MediaError("canceled", "canceled");
    // A hosted video ingested from a URL or a bucket keeps its source, as an upload does.
    if (job.managed && !job.inputVideoId && !forChunk) await d.managed.blob.put(sourceKey(job.managed.videoId), partial);
    await rename(partial, file);
    return file;
  }

  async function runProbe(task: EncodeTask, signal: AbortSignal): Promise<void> {
    const attempt = randomToken(12);
    const started = Date.now();
    const job = await ask({ id: task.jobId }, { type: "probe_started", attempt, at: started });
    if (!job || job.status !== "probing" || job.attempt !== attempt) return;
    let file: string;
    try {
      file = await fetchInput(job, signal);
    } catch (e) {
      if (!signal.aborted) await ask(job, { type: "probe_failed", attempt, at: Date.now(), failure: failureOf(e, "input") });
      return;
    }
    try {
      const result = await probe(file, signal);
      if (!result.video && !result.audio) throw new MediaError("input_unsupported", "the input has neither a video nor an audio stream");
      await ask(job, { type: "probed", attempt, at: Date.now(), metadata: result, durationMs: Date.now() - started });
    } catch (e) {
      if (e instanceof ReportError) throw e;
      if (!signal.aborted) await ask(job, { type: "probe_failed", attempt, at: Date.now(), failure: failureOf(e, "encode") });
    }
  }

  /** Uploads a plan's files; their total size, and the size under each top folder (a rendition's, for HLS). */
  async function upload(
    blob: BlobStore,
    dir: string,
    prefix: string,
    main: string,
    stored: ReadonlySet<string> = new Set(),
  ): Promise<{ size: number; byFolder: Map<string, number> }> {
    let size = 0;
    const byFolder = new Map<string, number>();
    // The main file last: a player that reads it finds everything it names.
    const files = (await filesUnder(dir)).sort((a, b) => Number(a === main) - Number(b === main));
    for (const rel of files) {
      const key = `${prefix}/${rel}`;
      // What a progressive output's publisher stored already (final segments) is counted, not sent again.
      const r = stored.has(rel) ? await stat(path.join(dir, rel)) : await blob.put(key, path.join(dir, rel), contentTypeOf(rel));
      size += r.size;
      const folder = rel.includes("/") ? rel.slice(0, rel.indexOf("/")) : "";
      byFolder.set(folder, (byFolder.get(folder) ?? 0) + r.size);
    }
    return { size, byFolder };
  }

  /** The keys of a protected output from its key provider: one per track class it has (one for all with aes_128, which ffmpeg applies per command). */
  async function contentKeys(spec: OutputSpec, outputId: string, plan: OutputPlan, signal: AbortSignal): Promise<ContentKey[]> {
    const drm = spec.drm!;
    const scheme = drmSchemeOf(spec)!;
    // The packager encrypts each stream with its class's key; ffmpeg's aes_128 has one key per output.
    const order: TrackClass[] = ["audio", "sd", "hd"];
    const present = new Set((plan.packaging?.streams ?? []).map((st) => st.trackClass));
    const classes =
      scheme === "aes128"
        ? [trackClassOf("video", Math.max(0, ...(plan.renditions ?? []).map((r) => Math.min(r.width, r.height))))]
        : order.filter((c) => present.has(c));
    try {
      return await keyProviderFor(drm, { guard: d.guard, log: d.log }).keys({
        resourceId: drm.resourceId || outputId,
        classes,
        scheme,
        systems: drmSystemsOf(spec),
        signal,
      });
    } catch (e) {
      if (e instanceof DrmKeyError) throw new MediaError("drm_key_unavailable", e.message);
      throw e;
    }
  }

  const drmKeysData = (spec: OutputSpec, keys: readonly ContentKey[]): DrmKeysData => ({
    scheme: drmSchemeOf(spec)!,
    clearKey: drmSchemeOf(spec) === "aes128" || drmSystemsOf(spec).includes("clearkey"),
    kids: keys.map((k) => ({ trackClass: k.trackClass, kid: k.kid })),
    sealed: sealKeys(d.box, keys),
  });

  const outputBlob = (job: JobRecord): BlobStore => (job.managed ? d.managed.blob : openOriginBlob(job.outputOrigin!, d.box, d.guard, d.config));

  /**
   * A hosted video's stream: a managed job's first HLS output. Split, it keeps its lowest rung whole
   * (what plays first); other ladders are chunked whole. Read from the job alone, so the node that
   * splits a ladder and the nodes encoding its chunks agree, whatever their settings.
   */
  const hostedStream = (job: JobRecord) => (job.managed ? job.outputs.find((o) => fromJson(OutputSpecSchema, o.spec).type === OutputType.HLS) : undefined);

  /** Encodes one chunk of the job's split ladder, stores its segments where the whole's go, and reports it done. */
  async function encodeChunk(job: JobRecord, part: number, signal: AbortSignal): Promise<void> {
    const chunked = job.chunked!;
    const output = job.outputs.find((o) => o.id === chunked.outputId);
    const span = chunked.spans[part];
    if (!output || !span) throw new MediaError("internal", `chunk ${part} of ${chunked.outputId} is not planned`);
    d.log.info({ job_id: job.id, output_id: output.id, part }, "chunk started");
    const file = await fetchInput(job, signal, true);
    const input = job.inputMetadata ?? (await probe(file, signal));
    const plan = planOutput(
      fromJson(OutputSpecSchema, output.spec),
      { file, probe: input },
      {
        outputId: output.id,
        workDir: path.join(workRoot, job.id, `chunk-${part}-${randomToken(6)}`),
        ...(job.clip ? { clip: job.clip } : {}),
        chunk: span,
        ...(hostedStream(job) === output ? { wholeLowestRung: true } : {}),
      },
    );
    try {
      await runPlan(plan, { signal });
      const renditions = await chunkRenditions(plan, signal);
      const blob = outputBlob(job);
      for (const rel of await chunkFiles(plan)) {
        try {
          await blob.put(`${output.keyPrefix}/${rel}`, path.join(plan.dir, rel), contentTypeOf(rel));
        } catch (e) {
          throw new OutputWriteError(failureOf(e, "output"));
        }
      }
      d.log.info({ job_id: job.id, output_id: output.id, part, seconds: [span.start, span.end ?? null] }, "chunk encoded");
      await ask(job, { type: "chunk_done", at: Date.now(), outputId: output.id, part, node: nodeId, renditions });
    } finally {
      await rm(plan.dir, { recursive: true, force: true });
    }
  }

  /** A chunk, leased as its own task or alongside the job's encode: its failure fails its output. */
  async function runChunk(job: JobRecord, part: number, signal: AbortSignal): Promise<void> {
    try {
      await encodeChunk(job, part, signal);
    } catch (e) {
      if (e instanceof ReportError) throw e;
      if (signal.aborted) return;
      const failure = e instanceof OutputWriteError ? e.failure : failureOf(e, "encode");
      d.log.warn({ job_id: job.id, part, code: failure.code, err: e }, "chunk failed");
      await ask(job, { type: "chunk_failed", at: Date.now(), outputId: job.chunked!.outputId, part, failure });
    }
  }

  async function runChunkTask(task: EncodeTask, signal: AbortSignal): Promise<void> {
    const job = await ask({ id: task.jobId }, { type: "look" });
    const part = task.part ?? -1;
    if (!job || job.status !== "processing" || job.chunked?.done[part] !== null) return;
    await runChunk(job, part, signal);
  }

  /**
   * The node that split a ladder, its own part done: encodes the chunks still queued (leased
   * alongside its task), then waits for the others' until every chunk is done; their results, in
   * chunk order. Throws when the output failed (a chunk that could not be encoded) or the job ended.
   */
  async function chunksOf(job: JobRecord, outputId: string, signal: AbortSignal, progress: (done: number) => void): Promise<ChunkRendition[][]> {
    for (;;) {
      if (signal.aborted) throw new MediaError("canceled", "encode canceled");
      const now = await ask(job, { type: "look" });
      const output = now?.outputs.find((o) => o.id === outputId);
      if (!now || now.status !== "processing" || !output || now.chunked?.outputId !== outputId) throw new MediaError("canceled", "the job ended");
      // Failed already (its chunk's failure is the one recorded): this node's report of it changes nothing.
      if (output.status === "failed") throw new MediaError("encode_failed", output.errorMessage ?? "a chunk failed");
      const done = now.chunked.done;
      if (done.every((c) => c !== null)) return done.map((c) => [...c!.renditions]);
      progress(done.filter((c) => c !== null).length / done.length);
      const reply = await d.queue({
        type: "lease",
        node: nodeId,
        nodeClass: workerClass,
        leaseId: randomToken(16),
        ttlMs: leaseMs,
        at: Date.now(),
        life,
        jobId: job.id,
      });
      const grant = reply.ok ? reply.state.granted : undefined;
      if (!grant || grant.part === undefined) {
        await new Promise((r) => setTimeout(r, CHUNK_WAIT_MS));
        continue;
      }
      const renewals = setInterval(
        () => void d.queue({ type: "renew", node: nodeId, leaseId: grant.leaseId, at: Date.now() }).catch(() => undefined),
        Math.max(500, Math.floor(leaseMs / 3)),
      );
      try {
        await runChunk(now, grant.part, signal);
      } finally {
        clearInterval(renewals);
        await d.queue({ type: "done", node: nodeId, leaseId: grant.leaseId, at: Date.now() }).catch(() => undefined);
      }
    }
  }

  async function runEncode(task: EncodeTask, signal: AbortSignal): Promise<void> {
    const attempt = randomToken(12);
    const started = Date.now();
    const job = await ask({ id: task.jobId }, { type: "encode_started", attempt, at: started });
    if (!job || job.status !== "processing" || job.attempt !== attempt) return;
    let file: string;
    let input: ProbeResult;
    try {
      file = await fetchInput(job, signal);
      input = job.inputMetadata ?? (await probe(file, signal));
    } catch (e) {
      if (!signal.aborted)
        await ask(job, { type: "encode_finished", attempt, at: Date.now(), durationMs: Date.now() - started, failure: failureOf(e, "input") });
      return;
    }
    const blob = outputBlob(job);
    const workDir = path.join(workRoot, job.id, attempt);
    let writeFailure: Failure | undefined;
    const inputOrigin = job.inputOrigin;
    const subtitleContext: SubtitleContext = {
      recogniser,
      guard: d.guard,
      ...(inputOrigin
        ? { readInputOriginPath: (p: string, to: string) => openOriginBlob(inputOrigin, d.box, d.guard, d.config).getToFile(originKey(inputOrigin, p), to) }
        : {}),
      origins: { job, open: (origin) => openOriginBlob(origin, d.box, d.guard, d.config) },
      inputFile: file,
      probe: input,
      ...(job.clip ? { clip: job.clip } : {}),
      workDir: path.join(workDir, "subtitles"),
      signal,
    };
    const transcripts = new Transcripts(subtitleContext);
    startTranscripts(
      job.outputs.filter((o) => o.status !== "completed").map((o) => fromJson(OutputSpecSchema, o.spec)),
      transcripts,
    );
    // A hosted video's stream (a managed job's first HLS output) is published while it encodes: playable in seconds.
    const hosted = hostedStream(job);
    const stream = d.config.encoder.progressive ? hosted : undefined;
    // One ladder of the job may be split into chunks for every free node: the first that can.
    let splitOne = false;
    for (const output of job.outputs) {
      if (signal.aborted) return;
      if (output.status === "completed") continue;
      let publisher: ProgressivePublisher | undefined;
      try {
        const spec = fromJson(OutputSpecSchema, output.spec);
        // content_aware: trial encodes of samples choose each variant's rate first (a share of the output's progress).
        const analysisShare = spec.contentAware?.enabled ? ANALYSIS_SHARE : 0;
        let analysed = 0;
        const ladder = spec.contentAware?.enabled
          ? await analyzeContent(
              spec,
              { file, probe: input },
              {
                workDir: path.join(workDir, `${output.id}.analysis`),
                ...(job.clip ? { clip: job.clip } : {}),
                signal,
                onProgress: (f) => {
                  analysed = f;
                  tell(job, { type: "output_progress", attempt, at: Date.now(), outputId: output.id, progress: Math.floor(f * analysisShare * 100) });
                },
              },
            )
          : undefined;
        if (ladder)
          d.log.info(
            { job_id: job.id, output_id: output.id, analysis_ms: ladder.analysisMs, rungs: ladder.rungs.map(({ trials: _, ...r }) => r) },
            "content-aware rates chosen",
          );
        const planWith = (chunked: boolean) =>
          planOutput(
            spec,
            { file, probe: input },
            {
              outputId: output.id,
              workDir: path.join(workDir, output.id),
              ...(job.clip ? { clip: job.clip } : {}),
              ...(output === stream ? { progressive: true } : {}),
              ...(ladder ? { contentAware: ratesOf(ladder) } : {}),
              ...(chunked ? { chunked: true, ...(output === hosted ? { wholeLowestRung: true } : {}) } : {}),
            },
          );
        const chunkSeconds = d.config.encoder.chunkSeconds;
        let plan = planWith(!splitOne && chunkSeconds > 0 && chunkable(spec, input));
        const spans: ChunkSpan[] = plan.chunked ? chunkSpans(plan.durationMs, plan.chunked.segmentSeconds, chunkSeconds) : [];
        if (plan.chunked && spans.length < 2) plan = planWith(false);
        if (plan.chunked) {
          splitOne = true;
          // Queued as tasks now, so other nodes start on them while this one encodes its own part.
          if (!(await ask(job, { type: "chunks_planned", attempt, at: Date.now(), outputId: output.id, spans }))) return;
        }
        // A split ladder's progress: this node's part, then the chunks by count.
        // (A ladder chunked whole: this node's part is the audio, a small share.)
        const ownShare = plan.chunked ? (wholeRung(plan) ? 1 / (1 + plan.chunked.rest.length) : 0.05) : 1;
        let last = -1;
        let lastAt = 0;
        const report = (fraction: number) => {
          const percent = Math.floor(fraction * 100);
          const now = Date.now();
          if (percent > last || now - lastAt >= 1000) {
            last = Math.max(last, percent);
            lastAt = now;
            tell(job, { type: "output_progress", attempt, at: now, outputId: output.id, progress: percent });
          }
        };
        // Speech recognition runs beside the encode; when this output waits on one, it is a share of its progress.
        const share = needsTranscription(spec, transcripts) ? TRANSCRIPTION_SHARE : 0;
        let heard = 0;
        let encoded = 0;
        const both = () => report(share * heard + (1 - share) * (analysisShare * analysed + (1 - analysisShare) * encoded));
        const { provided, generated } = await startTracks(spec, subtitleContext, transcripts, (f) => {
          heard = f;
          both();
        });
        // A protected output's keys come first: a key provider that fails stops it before any encode, so nothing leaves clear.
        const keys = spec.drm ? await contentKeys(spec, output.id, plan, signal) : undefined;
        const grower = plan.progressive
          ? new ProgressivePublisher(plan, {
              put: async (rel, local) => {
                try {
                  await blob.put(`${output.keyPrefix}/${rel}`, local, contentTypeOf(rel));
                } catch (e) {
                  throw new OutputWriteError(failureOf(e, "output"));
                }
              },
              writeMaster: (playlists, to) => writeGrowingHlsMaster(plan, playlists, to, keys?.[0], signal),
              onPublished: async (complete) => {
                d.log.info({ job_id: job.id, output_id: output.id, renditions: complete.length, ms_since_start: Date.now() - started }, "output published");
                await ask(job, {
                  type: "output_published",
                  attempt,
                  at: Date.now(),
                  outputId: output.id,
                  url: blob.url(`${output.keyPrefix}/${plan.main}`),
                  main: plan.main,
                  renditions: complete,
                  ...(keys ? { drm: drmKeysData(spec, keys) } : {}),
                });
              },
              scratch: path.join(workDir, `${output.id}.published`),
            })
          : undefined;
        publisher = grower;
        await runPlan(plan, {
          signal,
          ...(keys ? { keys } : {}),
          ...(grower ? { whileRunning: () => grower.sync() } : {}),
          onProgress: (fraction) => {
            encoded = ownShare * fraction;
            both();
          },
        });
        await publisher?.finish();
        let chunkBytes = new Map<string, number>();
        /** A ladder chunked whole: its first segment, stored by a chunk (relative to the plan's dir). */
        let firstChunkSegment: string | undefined;
        if (plan.chunked) {
          const chunks = await chunksOf(job, output.id, signal, (done) => {
            encoded = ownShare + (1 - ownShare) * done;
            both();
          });
          chunkBytes = await joinChunks(plan, chunks);
          // Subtitles map their cues from the first media timestamp: the rung encoded here has it,
          // else the first chunk's first segment of the first rung, read back from the output's storage.
          const own = wholeRung(plan);
          if (own) {
            const first = parseMediaPlaylist(await readFile(path.join(plan.dir, own), "utf8")).segments[0];
            if (first) plan.hlsMaster!.firstTimestampSeconds ??= await probeStartSeconds(path.join(plan.dir, path.dirname(own), first.uri), signal);
          } else {
            const rung = plan.chunked.rest[0]!;
            const first = chunks[0]!.find((c) => c.playlist === rung.file)?.segments[0];
            if (first) firstChunkSegment = path.posix.join(path.posix.dirname(rung.file), first.uri);
          }
          await writeHlsMaster(plan.dir, plan.hlsMaster!, signal);
        }
        const tracks = [...provided, ...(await generated)].sort((a, b) => a.index - b.index);
        if (tracks.length > 0 && firstChunkSegment && plan.hlsMaster!.firstTimestampSeconds === undefined) {
          // Read back from the output's storage, beside the plan's dir (which is uploaded as it is).
          const folder = path.posix.dirname(firstChunkSegment);
          const local = path.join(workDir, `${output.id}-first`);
          await mkdir(local, { recursive: true });
          await blob.getToFile(`${output.keyPrefix}/${firstChunkSegment}`, path.join(local, path.posix.basename(firstChunkSegment)));
          let source = path.join(local, path.posix.basename(firstChunkSegment));
          if (firstChunkSegment.endsWith(".m4s")) {
            await blob.getToFile(`${output.keyPrefix}/${folder}/init.mp4`, path.join(local, "init.mp4"));
            source = `concat:${path.join(local, "init.mp4")}|${source}`;
          }
          plan.hlsMaster!.firstTimestampSeconds = await probeStartSeconds(source, signal);
        }
        // The final renditions over the analysis's samples: what each rung measured (clear outputs whose renditions have files of their own).
        if (ladder && !spec.drm && plan.renditions?.every((r) => !r.file.endsWith(".mpd")))
          await measureRungs(
            ladder,
            plan.renditions.map((r) => ({ file: path.join(plan.dir, r.file), width: r.width, height: r.height })),
            path.join(workDir, `${output.id}.analysis`),
            signal,
          );
        const written = await writeTracks(plan, tracks, segmentSecondsOf(spec), signal);
        let stored: { size: number; byFolder: Map<string, number> };
        try {
          stored = await upload(blob, plan.dir, output.keyPrefix, plan.main, publisher?.stored);
        } catch (e) {
          throw new OutputWriteError(failureOf(e, "output"));
        }
        // Renditions of a streaming output live in folders named after them (see plan.ts).
        const renditions = (plan.renditions ?? []).map((r, i) => ({
          name: r.name,
          codec: r.codec,
          width: r.width,
          height: r.height,
          sizeBytes: (stored.byFolder.get(folderOf(r.file)) ?? 0) + (chunkBytes.get(folderOf(r.file)) ?? 0),
          ...(ladder ? { contentAware: contentAwareResult(ladder, i) } : {}),
        }));
        const { subtitles, chapters } = trackResults(output.id, tracks, written.files, (rel) => ({
          url: blob.url(`${output.keyPrefix}/${rel}`),
          key: `${output.keyPrefix}/${rel}`,
        }));
        await ask(job, {
          type: "output_completed",
          attempt,
          at: Date.now(),
          outputId: output.id,
          url: blob.url(`${output.keyPrefix}/${plan.main}`),
          sizeBytes: stored.size,
          main: plan.main,
          renditions,
          ...(subtitles.length > 0 ? { subtitles } : {}),
          ...(chapters.length > 0 ? { chapters } : {}),
          ...(keys ? { drm: drmKeysData(spec, keys) } : {}),
        });
      } catch (e) {
        // A stream that was playable ends where it is: its players play what there is, and stop.
        if (publisher?.isPlayable)
          await publisher
            .end()
            .catch((err: unknown) => d.log.warn({ job_id: job.id, output_id: output.id, err }, "a playable stream's playlists were not ended"));
        if (signal.aborted) return;
        // Not the output's failure: the job never heard how it went.
        if (e instanceof ReportError) throw e;
        const failure = e instanceof OutputWriteError ? e.failure : failureOf(e, "encode");
        if (failure.code === "output_write_denied") writeFailure = failure;
        d.log.warn({ job_id: job.id, output_id: output.id, code: failure.code, err: e }, "output failed");
        await ask(job, { type: "output_failed", attempt, at: Date.now(), outputId: output.id, failure });
      } finally {
        await rm(path.join(workDir, output.id), { recursive: true, force: true });
        await rm(path.join(workDir, `${output.id}.published`), { recursive: true, force: true });
        await rm(path.join(workDir, `${output.id}.analysis`), { recursive: true, force: true });
      }
    }
    await transcripts.dispose();
    if (job.thumbnails.length > 0 && !signal.aborted && !writeFailure) {
      try {
        const dir = path.join(workDir, "thumbnails");
        await mkdir(dir, { recursive: true });
        const specs = job.thumbnails.map((t) => fromJson(ThumbnailSpecSchema, t));
        const artifacts = await renderThumbnails(specs, { file, probe: input }, { dir, signal });
        const results = [];
        for (const a of artifacts) {
          const key = `${job.thumbnailPrefix}/${a.file}`;
          // A sprite's WebVTT index names its tiles by the image's file name: it goes beside it.
          for (const f of a.indexFile ? [a.file, a.indexFile] : [a.file]) {
            await blob.put(`${job.thumbnailPrefix}/${f}`, path.join(dir, f), contentTypeOf(f));
          }
          results.push({
            url: blob.url(key),
            key,
            mode: a.mode,
            index: a.index,
            thumbnailIndex: a.thumbnailIndex,
            format: a.format,
            width: a.width,
            height: a.height,
            timeSeconds: a.timeSeconds,
            sizeBytes: a.sizeBytes,
          });
        }
        await ask(job, { type: "thumbnails_done", attempt, at: Date.now(), results });
      } catch (e) {
        if (e instanceof ReportError) throw e;
        d.log.warn({ job_id: job.id, err: e }, "thumbnails failed");
      }
    }
    if (signal.aborted) return;
    await ask(job, { type: "encode_finished", attempt, at: Date.now(), durationMs: Date.now() - started });
  }

  // One task at a time (ffmpeg already uses every core of the node), leased from the encode queue.
  const { nodeId, workerClass, leaseMs, drainMs } = d.config.encoder;
  /** This run of the node: the queue counts a task's losses once per life. */
  const life = randomToken(8);
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
  const activity = encoderActivity(workerClass);

  /** Runs a leased task; false when the job's actor could not be told its outcome (the task runs again). */
  async function runTask(grant: LeaseGrant): Promise<boolean> {
    const controller = new AbortController();
    const lease = { leaseId: grant.leaseId, controller, handedBack: false };
    current = lease;
    running.set(grant.jobId, controller);
    const task: EncodeTask = { kind: grant.kind, jobId: grant.jobId, ...(grant.part !== undefined ? { part: grant.part } : {}) };
    // Renewals keep the lease; one the queue no longer knows (it expired and went to another node) stops the work.
    const renewals = setInterval(
      () => {
        d.queue({ type: "renew", node: nodeId, leaseId: grant.leaseId, at: Date.now() })
          .then((r) => {
            if (r.ok && r.state.held === false) {
              d.log.warn({ job_id: grant.jobId, lease_id: grant.leaseId }, "lease lost; stopping the task");
              controller.abort();
            }
          })
          .catch((e: unknown) => d.log.warn({ err: e, job_id: grant.jobId }, "lease not renewed"));
      },
      Math.max(500, Math.floor(leaseMs / 3)),
    );
    const idleAgain = activity.start();
    encodeTasks.inc({ kind: grant.kind, priority: grant.priority, class: workerClass });
    d.log.info(
      {
        job_id: grant.jobId,
        kind: grant.kind,
        ...(grant.part !== undefined ? { part: grant.part } : {}),
        priority: grant.priority,
        waited_ms: Date.now() - grant.enqueuedAt,
      },
      "task started",
    );
    try {
      // Only the job this task is for keeps its files here (a chunk's input stays for the next chunk of it).
      for (const entry of await readdir(workRoot)) if (entry !== task.jobId) await rm(path.join(workRoot, entry), { recursive: true, force: true });
      if (task.kind === "probe") await runProbe(task, controller.signal);
      else if (task.kind === "chunk") await runChunkTask(task, controller.signal);
      else await runEncode(task, controller.signal);
    } catch (e) {
      // The job's actor did not take a report: the lease runs out and the task is run again.
      d.log.error({ err: e, job_id: task.jobId, kind: task.kind }, "encode task failed");
      return false;
    } finally {
      clearInterval(renewals);
      idleAgain();
      running.delete(task.jobId);
      current = undefined;
      // The input stays for the encode task after a probe, and for the next chunk; an ended job needs nothing.
      if (task.kind === "encode" || controller.signal.aborted) await rm(path.join(workRoot, task.jobId), { recursive: true, force: true });
    }
    const end = lease.handedBack ? "release" : "done";
    await d
      .queue({ type: end, node: nodeId, leaseId: grant.leaseId, at: Date.now() })
      .catch((e: unknown) => d.log.warn({ err: e, job_id: task.jobId }, `lease ${end} not told; it runs out instead`));
    return true;
  }

  const loop = (async () => {
    while (!draining) {
      if (!prerequisites.ok) {
        // Looked at again now and then: installing ffmpeg needs no restart.
        await idle(PREREQUISITES_RECHECK_MS);
        if (!draining) await checkMachine(false);
        continue;
      }
      let grant: LeaseGrant | undefined;
      try {
        const reply = await d.queue({ type: "lease", node: nodeId, nodeClass: workerClass, leaseId: randomToken(16), ttlMs: leaseMs, at: Date.now(), life });
        if (!reply.ok) throw new Error(reply.rejection.message);
        grant = reply.state.granted;
      } catch (e) {
        d.log.warn({ err: e }, "the encode queue did not answer; asking again");
      }
      if (draining) {
        // Granted while stopping: hand it straight back.
        if (grant) await d.queue({ type: "release", node: nodeId, leaseId: grant.leaseId, at: Date.now() }).catch(() => undefined);
        break;
      }
      // After a failed task, a pause before asking again (its lease goes back to the queue then).
      if (!grant || !(await runTask(grant))) await idle(IDLE_POLL_MS);
    }
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
