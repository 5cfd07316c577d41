// Videos as the API shows them: the stored record, plus the links computed on every read
// (signed playback and poster URLs, the embed URL and snippet), never stored.
import { create } from "@bufbuild/protobuf";
import type { VideoRecord, Visibility } from "../actors/video/messages.js";
import { VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { VideoSchema, VideoSource, VideoStatus, VideoVisibility, type Video } from "../src/gen/media/v1/video_pb.js";
import { eur } from "../src/pricing.js";
import { ts } from "./present.js";

export const VIDEO_STATUS = {
  uploading: VideoStatus.UPLOADING,
  processing: VideoStatus.PROCESSING,
  ready: VideoStatus.READY,
  error: VideoStatus.ERROR,
  archived: VideoStatus.ARCHIVED,
  deleted: VideoStatus.DELETED,
} as const;
export const VISIBILITY: Record<Visibility, VideoVisibility> = {
  public: VideoVisibility.PUBLIC,
  unlisted: VideoVisibility.UNLISTED,
  private: VideoVisibility.PRIVATE,
};
export const VISIBILITY_NAMES: Partial<Record<VideoVisibility, Visibility>> = {
  [VideoVisibility.PUBLIC]: "public",
  [VideoVisibility.UNLISTED]: "unlisted",
  [VideoVisibility.PRIVATE]: "private",
};
export const VIDEO_STATUS_NAMES: Partial<Record<VideoStatus, VideoRecord["status"]>> = Object.fromEntries(Object.entries(VIDEO_STATUS).map(([k, v]) => [v, k]));
const CODECS = { h264: VideoCodec.H264, h265: VideoCodec.H265, vp9: VideoCodec.VP9, av1: VideoCodec.AV1 } as const;

/** The per-read links of a video; each absent when its conditions are not met. */
export interface VideoLinks {
  readonly playbackUrl?: string;
  readonly posterUrl?: string;
  readonly hoverPreviewUrl?: string;
  readonly hoverPreviewMp4Url?: string;
  readonly embedUrl?: string;
  readonly embedCode?: string;
}

const escapeAttribute = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * The responsive 16:9 embed snippet (spec, Playback rule 4): a wrapper holding an iframe whose src
 * is the embed URL and whose title is the video's (or "Video player"), lazy, with autoplay,
 * fullscreen and picture-in-picture allowed.
 */
export function embedCode(embedUrl: string, title: string | undefined): string {
  return (
    `<div style="position:relative;padding-top:56.25%;">` +
    `<iframe src="${escapeAttribute(embedUrl)}" title="${escapeAttribute(title || "Video player")}" loading="lazy" ` +
    `style="border:0;position:absolute;top:0;left:0;width:100%;height:100%;" allow="autoplay; fullscreen; picture-in-picture" allowfullscreen></iframe></div>`
  );
}

export function videoMessage(v: VideoRecord, links: VideoLinks = {}): Video {
  return create(VideoSchema, {
    id: v.id,
    object: "video",
    appId: v.appId,
    source: v.source === "upload" ? VideoSource.UPLOAD : VideoSource.JOB,
    status: VIDEO_STATUS[v.status],
    visibility: VISIBILITY[v.visibility],
    title: v.title,
    description: v.description,
    tags: [...v.tags],
    inputSizeBytes: v.inputSizeBytes === undefined ? undefined : BigInt(v.inputSizeBytes),
    inputContentType: v.inputContentType,
    jobId: v.jobId,
    preset: v.preset,
    ...links,
    durationSeconds: v.durationSeconds,
    renditions: v.renditions.map((r) => ({
      id: r.id,
      resolution: r.resolution,
      codec: CODECS[r.codec],
      bitrateKbps: r.bitrateKbps,
      width: r.width,
      height: r.height,
      sizeBytes: BigInt(r.sizeBytes),
    })),
    outputSizeBytes: BigInt(v.outputSizeBytes),
    encodingCost: v.encodingCostMicros === undefined ? undefined : eur(v.encodingCostMicros),
    createdAt: ts(v.createdAt),
    updatedAt: ts(v.updatedAt),
    readyAt: ts(v.readyAt),
    sourcePinned: v.sourcePinned,
    sourceScheduledForDeletionAt: ts(v.sourceScheduledForDeletionAt),
    sourceDeletedAt: ts(v.sourceDeletedAt),
    errorCode: v.errorCode,
    errorMessage: v.errorMessage,
    encodedAt: ts(v.encodedAt),
  });
}
