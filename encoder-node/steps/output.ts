// One output of an encode, its steps in order: content-aware analysis, the plan (and the decision
// to split its ladder), subtitle tracks, DRM keys, the encode (published as it grows for a hosted
// stream), the join of a split ladder, VMAF of the final rungs, the tracks' files, the upload, and
// the job's record of it. Each step is a function below; what it produced goes to the next.
import { fromJson } from "@bufbuild/protobuf";
import { mkdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import type { ContentAwareResult, Failure, JobRecord, OutputState, RenditionResult } from "../../actors/job/messages.js";
import type { BlobStore } from "../../src/blob/index.js";
import { contentTypeOf } from "../../src/content-types.js";
import type { ContentKey } from "../../src/drm/types.js";
import { OutputSpecSchema, type OutputSpec } from "../../src/gen/media/v1/job_pb.js";
import { joinChunks } from "../manifests/chunk-join.js";
import { hlsFactsOf } from "../manifests/hls-facts.js";
import { writeGrowingHlsMaster, writeHlsMaster } from "../manifests/hls-master.js";
import { parseMediaPlaylist } from "../manifests/media-playlist.js";
import { writePlanManifests } from "../manifests/plan-manifests.js";
import { writeTrackManifests } from "../manifests/text-tracks.js";
import { ratesOf, type ContentAwareLadder } from "../content-aware.js";
import { chunkable, chunkSpans, planOutput, segmentSecondsOf, wholeRung, type ChunkSpan, type OutputPlan } from "../plan.js";
import { ProgressivePublisher } from "../progressive.js";
import { failureOf, ReportError, writing } from "../reports.js";
import { needsTranscription, trackResults, type PreparedTrack, type SubtitleContext, type Transcripts } from "../subtitle-tracks.js";
import { chunksOf } from "./chunk.js";
import type { TaskContext } from "./context.js";
import type { ProbeResult } from "../probe.js";
import { drmKeysData } from "./drm-keys.js";
import { OutputProgress, ownShareOf } from "./progress.js";
import { folderOf, upload } from "./upload.js";
import { stage } from "../stage-timing.js";

/** What every output of one encode attempt shares. */
export interface EncodeRun {
  readonly c: TaskContext;
  readonly job: JobRecord;
  readonly attempt: string;
  readonly started: number;
  readonly input: { readonly file: string; readonly probe: ProbeResult };
  readonly blob: BlobStore;
  readonly workDir: string;
  readonly subtitles: SubtitleContext;
  readonly transcripts: Transcripts;
  /** The hosted video's stream, split with its lowest rung whole; `stream` when also published as it encodes. */
  readonly hosted: OutputState | undefined;
  readonly stream: OutputState | undefined;
  readonly signal: AbortSignal;
}

/** How an output ended: its failure when it failed, "stop" when the job ended under it. */
export type OutputEnd = { readonly failure?: Failure; readonly stop?: true };

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

/** content_aware: trial encodes of samples choose each variant's rate first. */
async function analyse(r: EncodeRun, output: OutputState, spec: OutputSpec, progress: OutputProgress): Promise<ContentAwareLadder | undefined> {
  if (!spec.contentAware?.enabled) return undefined;
  const ladder = await stage("analysis", () =>
    r.c.exec.analyzeContent(spec, r.input, {
      workDir: path.join(r.workDir, `${output.id}.analysis`),
      ...(r.job.clip ? { clip: r.job.clip } : {}),
      signal: r.signal,
      onProgress: (f) => progress.analysing(f),
    }),
  );
  r.c.d.log.info(
    { job_id: r.job.id, output_id: output.id, analysis_ms: ladder.analysisMs, rungs: ladder.rungs.map(({ trials: _, ...x }) => x) },
    "content-aware rates chosen",
  );
  return ladder;
}

/** The output's plan, its ladder split into chunks when this is the job's first that can be; undefined when the job ended. */
async function planned(r: EncodeRun, output: OutputState, spec: OutputSpec, ladder: ContentAwareLadder | undefined, split: boolean) {
  const planWith = (chunked: boolean) =>
    planOutput(spec, r.input, {
      outputId: output.id,
      workDir: path.join(r.workDir, output.id),
      ...(r.job.clip ? { clip: r.job.clip } : {}),
      ...(output === r.stream ? { progressive: true } : {}),
      ...(ladder ? { contentAware: ratesOf(ladder) } : {}),
      ...(chunked ? { chunked: true, ...(output === r.hosted ? { wholeLowestRung: true } : {}) } : {}),
    });
  const chunkSeconds = r.c.d.config.encoder.chunkSeconds;
  let plan = planWith(split && chunkSeconds > 0 && chunkable(spec, r.input.probe));
  const spans: ChunkSpan[] = plan.chunked ? chunkSpans(plan.durationMs, plan.chunked.segmentSeconds, chunkSeconds) : [];
  if (plan.chunked && spans.length < 2) plan = planWith(false);
  // Queued as tasks now, so other nodes start on them while this one encodes its own part.
  if (plan.chunked && !(await r.c.reports.ask(r.job, { type: "chunks_planned", attempt: r.attempt, at: Date.now(), outputId: output.id, spans })))
    return undefined;
  return plan;
}

/** A progressive plan's publisher: every segment and playlist to storage as ffmpeg writes them; the job told when it plays. */
function publisherOf(r: EncodeRun, output: OutputState, spec: OutputSpec, plan: OutputPlan, keys: ContentKey[] | undefined) {
  if (!plan.progressive) return undefined;
  return new ProgressivePublisher(plan, {
    put: (rel, local) => writing(() => r.blob.put(`${output.keyPrefix}/${rel}`, local, contentTypeOf(rel))).then(() => undefined),
    writeMaster: (playlists, to) => writeGrowingHlsMaster(plan, playlists, to, keys?.[0], r.signal),
    onPublished: async (complete) => {
      r.c.d.log.info({ job_id: r.job.id, output_id: output.id, renditions: complete.length, ms_since_start: Date.now() - r.started }, "output published");
      await r.c.reports.ask(r.job, {
        type: "output_published",
        attempt: r.attempt,
        at: Date.now(),
        outputId: output.id,
        url: r.blob.url(`${output.keyPrefix}/${plan.main}`),
        main: plan.main,
        renditions: complete,
        ...(keys ? { drm: drmKeysData(r.c.d.box, spec, keys) } : {}),
      });
    },
    scratch: path.join(r.workDir, `${output.id}.published`),
  });
}

/**
 * A split ladder, this node's part encoded: the other chunks (encoded here or elsewhere), joined;
 * the bytes they stored per rung folder, and the first chunk's first segment when the first media
 * timestamp must be read back from storage (no rung was encoded here).
 */
async function joined(r: EncodeRun, output: OutputState, plan: OutputPlan, own: number, progress: OutputProgress) {
  const chunks = await chunksOf(r.c, r.job, output.id, r.signal, (done) => progress.encoding(own + (1 - own) * done));
  const chunkBytes = await joinChunks(plan, chunks);
  let firstChunkSegment: string | undefined;
  // Subtitles map their cues from the first media timestamp: the rung encoded here has it,
  // else the first chunk's first segment of the first rung, read back from the output's storage.
  const whole = wholeRung(plan);
  if (whole) {
    const first = parseMediaPlaylist(await readFile(path.join(plan.dir, whole), "utf8")).segments[0];
    const facts = hlsFactsOf(plan.hlsMaster!);
    if (first) facts.firstTimestampSeconds ??= await r.c.exec.probeStartSeconds(path.join(plan.dir, path.dirname(whole), first.uri), r.signal);
  } else {
    const rung = plan.chunked!.rest[0]!;
    const first = chunks[0]!.find((x) => x.playlist === rung.file)?.segments[0];
    if (first) firstChunkSegment = path.posix.join(path.posix.dirname(rung.file), first.uri);
  }
  await writeHlsMaster(plan.dir, plan.hlsMaster!, r.signal);
  return { chunkBytes, firstChunkSegment };
}

/** The first media timestamp of a ladder chunked whole, from its first segment read back beside the plan's dir. */
async function firstTimestampFromStorage(r: EncodeRun, output: OutputState, plan: OutputPlan, segment: string): Promise<void> {
  const folder = path.posix.dirname(segment);
  const local = path.join(r.workDir, `${output.id}-first`);
  await mkdir(local, { recursive: true });
  await r.blob.getToFile(`${output.keyPrefix}/${segment}`, path.join(local, path.posix.basename(segment)));
  let source = path.join(local, path.posix.basename(segment));
  if (segment.endsWith(".m4s")) {
    await r.blob.getToFile(`${output.keyPrefix}/${folder}/init.mp4`, path.join(local, "init.mp4"));
    source = `concat:${path.join(local, "init.mp4")}|${source}`;
  }
  hlsFactsOf(plan.hlsMaster!).firstTimestampSeconds = await r.c.exec.probeStartSeconds(source, r.signal);
}

/** The job's record of a completed output: its renditions (with what they stored) and tracks. */
function completed(
  r: EncodeRun,
  output: OutputState,
  spec: OutputSpec,
  plan: OutputPlan,
  done: {
    stored: { size: number; byFolder: ReadonlyMap<string, number> };
    chunkBytes: ReadonlyMap<string, number>;
    ladder: ContentAwareLadder | undefined;
    tracks: readonly PreparedTrack[];
    files: Parameters<typeof trackResults>[2];
    keys: ContentKey[] | undefined;
  },
) {
  // Renditions of a streaming output live in folders named after them (see plan.ts).
  const renditions: RenditionResult[] = (plan.renditions ?? []).map((x, i) => ({
    name: x.name,
    codec: x.codec,
    width: x.width,
    height: x.height,
    sizeBytes: (done.stored.byFolder.get(folderOf(x.file)) ?? 0) + (done.chunkBytes.get(folderOf(x.file)) ?? 0),
    ...(done.ladder ? { contentAware: contentAwareResult(done.ladder, i) } : {}),
  }));
  const { subtitles, chapters } = trackResults(output.id, done.tracks, done.files, (rel) => ({
    url: r.blob.url(`${output.keyPrefix}/${rel}`),
    key: `${output.keyPrefix}/${rel}`,
  }));
  return {
    type: "output_completed" as const,
    attempt: r.attempt,
    at: Date.now(),
    outputId: output.id,
    url: r.blob.url(`${output.keyPrefix}/${plan.main}`),
    sizeBytes: done.stored.size,
    main: plan.main,
    renditions,
    ...(subtitles.length > 0 ? { subtitles } : {}),
    ...(chapters.length > 0 ? { chapters } : {}),
    ...(done.keys ? { drm: drmKeysData(r.c.d.box, spec, done.keys) } : {}),
  };
}

/** Runs one output's steps; how it ended. `split` says whether its ladder may still be split (the job's first that can). */
export async function runOutput(r: EncodeRun, output: OutputState, split: boolean): Promise<OutputEnd & { split?: true }> {
  const { c, job, attempt, signal } = r;
  let publisher: ProgressivePublisher | undefined;
  let didSplit = false;
  try {
    const spec = fromJson(OutputSpecSchema, output.spec);
    const progress = new OutputProgress(c.reports, job, attempt, output.id, spec.contentAware?.enabled === true);
    const ladder = await analyse(r, output, spec, progress);
    const plan = await planned(r, output, spec, ladder, split);
    if (!plan) return { stop: true };
    didSplit = plan.chunked !== undefined;
    // A split ladder's progress: this node's part, then the chunks by count.
    const own = ownShareOf(plan.chunked, plan.chunked !== undefined && wholeRung(plan) !== undefined);
    progress.waitsOnTranscription(needsTranscription(spec, r.transcripts));
    const { provided, generated } = await c.exec.startTracks(spec, r.subtitles, r.transcripts, (f) => progress.hearing(f));
    // A protected output's keys come first: a key provider that fails stops it before any encode, so nothing leaves clear.
    const keys = spec.drm ? await stage("keys", () => c.exec.contentKeys(spec, output.id, plan, signal)) : undefined;
    publisher = publisherOf(r, output, spec, plan, keys);
    const grower = publisher;
    await c.exec.encodePlan(plan, {
      signal,
      ...(keys ? { keys } : {}),
      ...(grower ? { whileRunning: () => grower.sync() } : {}),
      onProgress: (fraction) => progress.encoding(own * fraction),
    });
    // The manifests from the plan and what the encode produced: their one owner is manifests/.
    await writePlanManifests(plan, keys?.[0], signal);
    await publisher?.finish();
    const { chunkBytes, firstChunkSegment } = plan.chunked
      ? await stage("join", () => joined(r, output, plan, own, progress))
      : { chunkBytes: new Map<string, number>() };
    const tracks = [...provided, ...(await generated)].sort((a, b) => a.index - b.index);
    if (tracks.length > 0 && firstChunkSegment && hlsFactsOf(plan.hlsMaster!).firstTimestampSeconds === undefined)
      await firstTimestampFromStorage(r, output, plan, firstChunkSegment);
    // The final renditions over the analysis's samples: what each rung measured (clear outputs whose renditions have files of their own).
    const rungs = plan.renditions;
    if (ladder && !spec.drm && rungs?.every((x) => !x.file.endsWith(".mpd")))
      await stage("vmaf", () =>
        c.exec.measureRungs(
          ladder,
          rungs.map((x) => ({ file: path.join(plan.dir, x.file), width: x.width, height: x.height })),
          path.join(r.workDir, `${output.id}.analysis`),
          signal,
        ),
      );
    const written = await c.exec.writeTrackFiles(plan, tracks);
    await writeTrackManifests(plan, written, segmentSecondsOf(spec), signal);
    const stored = await stage("upload", () => writing(() => upload(r.blob, plan.dir, output.keyPrefix, plan.main, publisher?.stored)));
    await c.reports.ask(job, completed(r, output, spec, plan, { stored, chunkBytes, ladder, tracks, files: written.files, keys }));
    return didSplit ? { split: true } : {};
  } catch (e) {
    // A stream that was playable ends where it is: its players play what there is, and stop.
    if (publisher?.isPlayable)
      await publisher
        .end()
        .catch((err: unknown) => c.d.log.warn({ job_id: job.id, output_id: output.id, err }, "a playable stream's playlists were not ended"));
    if (signal.aborted) return { stop: true };
    // Not the output's failure: the job never heard how it went.
    if (e instanceof ReportError) throw e;
    const failure = failureOf(e, "encode");
    c.d.log.warn({ job_id: job.id, output_id: output.id, code: failure.code, err: e }, "output failed");
    await c.reports.ask(job, { type: "output_failed", attempt, at: Date.now(), outputId: output.id, failure });
    return { failure, ...(didSplit ? { split: true as const } : {}) };
  } finally {
    await rm(path.join(r.workDir, output.id), { recursive: true, force: true });
    await rm(path.join(r.workDir, `${output.id}.published`), { recursive: true, force: true });
    await rm(path.join(r.workDir, `${output.id}.analysis`), { recursive: true, force: true });
  }
}
