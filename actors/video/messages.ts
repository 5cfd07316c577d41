// The video's protocol: its reference, records, commands and read-model tables. Everything outside
// actors/video/ that speaks to a video or reads one imports this file, never the behaviour.
import { entity, type CommandOf, type CommandUnion } from "../entity.js";
import type { DrmKeysData, JobRequest } from "../job/messages.js";

export const VIDEOS = "videos";

export type VideoStatus = "uploading" | "processing" | "ready" | "error" | "archived" | "deleted";
export type Visibility = "public" | "unlisted" | "private";

export interface RenditionRecord {
  readonly id: string;
  readonly resolution: string;
  readonly codec: "h264" | "h265" | "vp9" | "av1";
  readonly bitrateKbps: number;
  readonly width: number;
  readonly height: number;
  readonly sizeBytes: number;
}

export interface UploadRecord {
  readonly kind: "single" | "multipart";
  /** Names the multipart upload (and its parts' folder); "" for single uploads. */
  readonly uploadId: string;
  readonly filename: string;
  /** Declared size: CompleteUpload checks the stored bytes against it. */
  readonly sizeBytes: number;
  readonly partSizeBytes: number;
  readonly expiresAt: number;
}

export interface VideoRecord {
  readonly id: string;
  readonly appId: string;
  readonly organizationId: string;
  /** Number of events folded: Watch streams order updates by it. */
  readonly version: number;
  readonly source: "upload" | "job";
  readonly status: VideoStatus;
  /** The status before an archive (ready or error). */
  readonly archivedFrom?: VideoStatus;
  readonly visibility: Visibility;
  readonly title?: string;
  readonly description?: string;
  readonly tags: readonly string[];
  readonly inputSizeBytes?: number;
  readonly inputContentType: string;
  readonly jobId: string;
  readonly preset?: string;
  readonly hoverPreviews: boolean;
  /** URL ingest: the source URL. */
  readonly url?: string;
  readonly upload?: UploadRecord;
  /** The ingest job, decided at creation; started once the source is there. */
  readonly jobRequest: JobRequest;
  readonly durationSeconds: number;
  readonly renditions: readonly RenditionRecord[];
  readonly outputSizeBytes: number;
  readonly encodingCostMicros?: number;
  /** Storage keys of what the player needs, under the playable directory. */
  readonly playlistKey?: string;
  readonly posterKey?: string;
  readonly hoverWebpKey?: string;
  readonly hoverMp4Key?: string;
  /** A protected stream's key IDs and sealed keys: what the edge's key server answers from. */
  readonly drm?: DrmKeysData;
  readonly errorCode?: string;
  readonly errorMessage?: string;
  readonly requestId?: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** When the video became playable (its stream's first rung published, or its job done). */
  readonly readyAt?: number;
  /** Ready and its ladder still encoding (a progressive stream): cleared when the job ends. */
  readonly encoding?: boolean;
  /** When every rendition was done: the job completed (absent while encoding, and when it failed after the video was ready). */
  readonly encodedAt?: number;
  readonly sourcePinned: boolean;
  readonly sourceScheduledForDeletionAt?: number;
  readonly sourceDeletedAt?: number;
}

export interface VideoState {
  readonly video?: VideoRecord;
}

/** How the video's job ended, as the job tells it (see the job's `video` intent). */
export interface JobOutcome {
  readonly jobId: string;
  readonly at: number;
  readonly status: "completed" | "partial" | "failed" | "canceled";
  readonly errorCode?: string;
  readonly errorMessage?: string;
  readonly durationSeconds: number;
  readonly actualMicros: number;
  readonly playlistKey?: string;
  readonly renditions: readonly Omit<RenditionRecord, "id">[];
  readonly outputSizeBytes: number;
  readonly posterKey?: string;
  readonly hoverWebpKey?: string;
  readonly hoverMp4Key?: string;
  readonly drm?: DrmKeysData;
}

/** A progressive stream so far, as the job tells it (see the job's `video_published` intent). */
export interface StreamPublished {
  readonly jobId: string;
  /** When it became playable. */
  readonly at: number;
  readonly playlistKey: string;
  readonly durationSeconds: number;
  /** The rungs complete so far. */
  readonly renditions: readonly Omit<RenditionRecord, "id">[];
  readonly outputSizeBytes: number;
  readonly drm?: DrmKeysData;
}

export interface VideoPatch {
  readonly title?: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  readonly visibility?: Visibility;
  readonly sourcePinned?: boolean;
}

/**
 * What a video is created from: the caller's fields and the ingest job the gateway decided with it
 * (a preset resolved from the store, the app's ladder). The video decides the rest of its record:
 * uploading or processing, the upload URL's expiry, its version and times. Omitted fields take a
 * managed job's defaults: unlisted, no tags, no previews.
 */
export interface VideoRequest {
  readonly appId: string;
  readonly organizationId: string;
  readonly source: "upload" | "job";
  readonly visibility?: Visibility;
  readonly title?: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  readonly inputContentType?: string;
  readonly jobId: string;
  readonly preset?: string;
  readonly hoverPreviews?: boolean;
  /** URL ingest: the source URL. */
  readonly url?: string;
  /** An upload: the video waits for it, its URLs valid for UPLOAD_URL_SECONDS from creation. */
  readonly upload?: Omit<UploadRecord, "expiresAt">;
  readonly jobRequest: JobRequest;
  readonly requestId?: string;
}

export interface VideoCommands {
  /** `at` is the creation time; the same id, job and time again is a retry. */
  readonly create: { readonly id: string; readonly at: number; readonly request: VideoRequest };
  /** The gateway verified the stored upload: the source is in place. */
  readonly complete_upload: { readonly at: number; readonly sizeBytes: number; readonly requestId?: string };
  /** The job's stream plays (its first rung is published), or has more complete rungs. */
  readonly playable: { readonly published: StreamPublished };
  /** retentionMs: the app's delete_source_after_days when the job ended, in ms (0 keeps the source). */
  readonly job_ended: { readonly outcome: JobOutcome; readonly retentionMs?: number };
  readonly update: { readonly at: number; readonly patch: VideoPatch; readonly deleteSourceAt?: number | null };
  readonly archive: { readonly at: number };
  readonly delete: { readonly at: number };
  readonly source_deleted: { readonly at: number };
}
export type VideoCommandOf<K extends keyof VideoCommands> = CommandOf<VideoCommands, K>;
export type VideoCommand = CommandUnion<VideoCommands>;

/** A video entity: asked with a VideoCommand, it answers its whole state. */
export const Video = entity<VideoCommand, VideoState>("video");

/** Sources due for deletion, one partition: what the retention sweep of each actor host reads. */
export const SOURCE_DELETIONS = "source_deletions";
export const SOURCE_DELETIONS_PARTITION = "all";
/** A pending source deletion (rows written before appId was kept lack it). */
export interface SourceDeletionRow {
  readonly videoId: string;
  readonly appId?: string;
  readonly due: number;
}
