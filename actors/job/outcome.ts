// A managed job's end, told to its video: what the video needs of the job (the stream, the
// renditions, the money, the poster and previews, the keys), and when the video's source goes by
// its app's retention rule as it stands when the job ends.
import { Directory } from "../../src/directory.js";
import type { Store } from "../../src/store/port.js";
import type { Bus } from "../../src/bus/port.js";
import type { Topics } from "../../src/bus/topics.js";
import { tell } from "../commands.js";
import { Video, type JobOutcome, type RenditionRecord, type StreamPublished } from "../video/messages.js";
import type { JobRecord, RenditionResult } from "./messages.js";

export interface VideoOutcomeDeps {
  readonly bus: Bus;
  readonly topics: Topics;
  readonly store: Store;
  /** The length of a retention day in ms (shortened by tests). */
  readonly dayMs: number;
}

/** Tells a managed job's video how the job ended; idempotent on the video's side. */
export async function tellVideoOutcome(d: VideoOutcomeDeps, job: JobRecord): Promise<void> {
  const days = (await new Directory(d.store).app(job.appId))?.hosting?.deleteSourceAfterDays ?? 0;
  await tell(d.bus, d.topics, Video, job.managed!.videoId, { type: "job_ended", outcome: jobOutcome(job), retentionMs: days * d.dayMs });
}

/** Tells a managed job's video that its stream plays, with the rungs complete so far; idempotent on the video's side. */
export async function tellVideoPublished(d: Pick<VideoOutcomeDeps, "bus" | "topics">, job: JobRecord, outputId: string): Promise<void> {
  const published = streamPublished(job, outputId);
  if (published) await tell(d.bus, d.topics, Video, job.managed!.videoId, { type: "playable", published });
}

/**
 * A managed job's progressive stream as its video needs it while it encodes: the job's state now,
 * so a later report carries everything an earlier one did; nothing before it plays.
 */
export function streamPublished(job: JobRecord, outputId: string): StreamPublished | undefined {
  const o = job.outputs.find((x) => x.id === outputId);
  if (!o?.main || o.playableAt === undefined) return undefined;
  const durationSeconds = durationOf(job);
  const renditions = videoRenditions(o.renditions ?? [], durationSeconds);
  return {
    jobId: job.id,
    at: o.playableAt,
    playlistKey: `${o.keyPrefix}/${o.main}`,
    durationSeconds,
    renditions,
    outputSizeBytes: renditions.reduce((s, r) => s + r.sizeBytes, 0),
    ...(o.drm ? { drm: o.drm } : {}),
  };
}

const durationOf = (job: JobRecord) => Math.round((job.inputMetadata?.durationMs ?? 0) / 10) / 100;

/** A stream's renditions as its video lists them. */
function videoRenditions(renditions: readonly RenditionResult[], durationSeconds: number): Omit<RenditionRecord, "id">[] {
  return renditions.map((r) => ({
    resolution: `${Math.min(r.width, r.height)}p`,
    codec: r.codec,
    bitrateKbps: durationSeconds > 0 ? Math.round((r.sizeBytes * 8) / durationSeconds / 1000) : 0,
    width: r.width,
    height: r.height,
    sizeBytes: r.sizeBytes,
  }));
}

/** How a managed job ended, as its video needs it: the stream (HLS master, else a DASH MPD), the renditions, the money, the poster and previews, the keys. */
export function jobOutcome(job: JobRecord): JobOutcome {
  const durationSeconds = durationOf(job);
  // Stryker disable next-line MethodExpression,ConditionalExpression: an output names its main file only once completed (actors/job), so no other output matches below; the filter states the intent
  const completed = job.outputs.filter((o) => o.status === "completed");
  const stream = completed.find((o) => o.main?.endsWith(".m3u8")) ?? completed.find((o) => o.main?.endsWith(".mpd"));
  const renditions = videoRenditions(stream?.renditions ?? [], durationSeconds);
  const thumbs = job.thumbnailResults;
  const poster = thumbs.find((t) => t.mode === "single");
  const webp = thumbs.find((t) => t.mode === "animated" && t.format === "webp");
  // MP4 is a format of animated thumbnails only (ThumbnailFormat.MP4).
  const mp4 = thumbs.find((t) => t.format === "mp4");
  const actualMicros = job.outputs.reduce((s, o) => s + (o.actualMicros ?? 0), 0) + job.fees.reduce((s, f) => s + (f.actualMicros ?? 0), 0);
  return {
    jobId: job.id,
    at: job.completedAt ?? job.updatedAt,
    status: job.status === "completed" || job.status === "partial" || job.status === "failed" ? job.status : "canceled",
    ...(job.errorCode ? { errorCode: job.errorCode } : {}),
    ...(job.errorMessage ? { errorMessage: job.errorMessage } : {}),
    durationSeconds,
    actualMicros,
    ...(stream ? { playlistKey: `${stream.keyPrefix}/${stream.main}` } : {}),
    renditions,
    // The spec's "total stored rendition size": the renditions listed, so the field is their sum.
    outputSizeBytes: renditions.reduce((s, r) => s + r.sizeBytes, 0),
    ...(poster ? { posterKey: poster.key } : {}),
    ...(webp ? { hoverWebpKey: webp.key } : {}),
    ...(mp4 ? { hoverMp4Key: mp4.key } : {}),
    ...(stream?.drm ? { drm: stream.drm } : {}),
  };
}
