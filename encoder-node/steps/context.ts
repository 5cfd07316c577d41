// What every task of the node runs with: the job's reports, the lease channel, the node's work
// folder, and the executors (ffprobe, ffmpeg, the analysis, storage), which the pipeline spec fakes.
import { fromJson } from "@bufbuild/protobuf";
import type { JobRecord } from "../../actors/job/messages.js";
import type { BlobStore } from "../../src/blob/index.js";
import type { Config } from "../../src/config.js";
import { OutputSpecSchema, OutputType } from "../../src/gen/media/v1/job_pb.js";
import type { Logger } from "../../src/log.js";
import type { ManagedStorage } from "../../src/managed-storage.js";
import type { NetGuard } from "../../src/net-guard.js";
import { openOriginBlob } from "../../src/origins.js";
import type { SecretBox } from "../../src/secrets.js";
import { analyzeContent, measureRungs } from "../content-aware.js";
import { encodePlan } from "../executor.js";
import type { LeaseChannel } from "../lease.js";
import { probe, probeStartSeconds } from "../probe.js";
import type { Recogniser } from "../recogniser.js";
import type { Reports } from "../reports.js";
import { contentKeys } from "./drm-keys.js";
import { fetchInput, inputFileOf } from "./input.js";
import { startTracks, writeTrackFiles } from "../subtitle-tracks.js";
import { renderThumbnails } from "../thumbnails.js";

/** The effects a task runs; each reports what it produced. Faked whole in encoder-node/pipeline.spec.ts. */
export interface Executors {
  fetchInput(job: JobRecord, signal: AbortSignal, forChunk?: boolean): Promise<string>;
  readonly probe: typeof probe;
  readonly probeStartSeconds: typeof probeStartSeconds;
  readonly analyzeContent: typeof analyzeContent;
  readonly measureRungs: typeof measureRungs;
  readonly encodePlan: typeof encodePlan;
  readonly startTracks: typeof startTracks;
  readonly writeTrackFiles: typeof writeTrackFiles;
  readonly renderThumbnails: typeof renderThumbnails;
  readonly contentKeys: (...a: Parameters<typeof contentKeys> extends [unknown, ...infer R] ? R : never) => ReturnType<typeof contentKeys>;
  /** Where the job's outputs go: managed storage for a hosted video, else its output origin. */
  outputBlob(job: JobRecord): BlobStore;
}

export interface TaskDeps {
  readonly box: SecretBox;
  readonly guard: NetGuard;
  readonly config: Config;
  readonly log: Logger;
  readonly managed: ManagedStorage;
}

export interface TaskContext {
  readonly d: TaskDeps;
  readonly reports: Reports;
  readonly lease: LeaseChannel;
  /** The node's own work folder: one folder per job under it. */
  readonly workRoot: string;
  readonly recogniser: Recogniser;
  readonly exec: Executors;
}

/** The executors of a real node: ffprobe, ffmpeg, libvmaf, the recogniser's tracks, storage. */
export function nodeExecutors(d: TaskDeps, workRoot: string): Executors {
  return {
    fetchInput: (job, signal, forChunk) => fetchInput(d, inputFileOf(workRoot, job), job, signal, forChunk),
    probe,
    probeStartSeconds,
    analyzeContent,
    measureRungs,
    encodePlan,
    startTracks,
    writeTrackFiles,
    renderThumbnails,
    contentKeys: (...a) => contentKeys(d, ...a),
    outputBlob: (job) => (job.managed ? d.managed.blob : openOriginBlob(job.outputOrigin!, d.box, d.guard, d.config)),
  };
}

/**
 * A hosted video's stream: a managed job's first HLS output. Split, it keeps its lowest rung whole
 * (what plays first); other ladders are chunked whole. Read from the job alone, so the node that
 * splits a ladder and the nodes encoding its chunks agree, whatever their settings.
 */
export const hostedStream = (job: JobRecord) => (job.managed ? job.outputs.find((o) => fromJson(OutputSpecSchema, o.spec).type === OutputType.HLS) : undefined);

/** A task's end: `goesOn` when its job's actor is queueing the job's next task (a probe's encode). */
export type TaskEnd = void | { readonly goesOn: true };
