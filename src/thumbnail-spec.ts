// ThumbnailSpec rules without ffmpeg: the limits from job.proto, the modes and formats, and the
// defaults where a field is 0. The gateway checks requests with them; the encoder renders by them.
import { ThumbnailFormat, ThumbnailMode, type ThumbnailSpec } from "./gen/media/v1/job_pb.js";
import type { Check } from "./validation.js";

export const THUMBNAIL_LIMITS = {
  width: [16, 3840],
  height: [16, 2160],
  count: [1, 100],
  fps: [1, 30],
  durationSeconds: [0.5, 30],
  minIntervalSeconds: 1,
  /** Animated WebP files grow fast; longer loops are MP4 only. */
  webpMaxSeconds: 10,
} as const;

export const THUMBNAIL_MODES = {
  [ThumbnailMode.SINGLE]: "single",
  [ThumbnailMode.INTERVAL]: "interval",
  [ThumbnailMode.SPRITE]: "sprite",
  [ThumbnailMode.ANIMATED]: "animated",
} as const;
export const THUMBNAIL_FORMATS = {
  [ThumbnailFormat.JPG]: "jpg",
  [ThumbnailFormat.PNG]: "png",
  [ThumbnailFormat.WEBP]: "webp",
  [ThumbnailFormat.MP4]: "mp4",
} as const;
export type ThumbnailModeName = (typeof THUMBNAIL_MODES)[keyof typeof THUMBNAIL_MODES];
export type ThumbnailFormatName = (typeof THUMBNAIL_FORMATS)[keyof typeof THUMBNAIL_FORMATS];

/** Defaults where the spec leaves a field at 0. */
export const THUMBNAIL_DEFAULTS = { spriteCount: 25, spriteTileWidth: 160, intervalCount: 100, animatedSeconds: 3, animatedFps: 10, singleAt: 0.1 } as const;

/** The limits from job.proto's ThumbnailSpec; the number of specs (5) is checked by the caller. */
export function checkThumbnailSpec(check: Check, at: string, spec: ThumbnailSpec): void {
  const mode = THUMBNAIL_MODES[spec.mode as keyof typeof THUMBNAIL_MODES];
  if (spec.mode === ThumbnailMode.UNSPECIFIED) check.add(`${at}.mode`, "is required: single, interval, sprite or animated");
  else if (!mode) check.add(`${at}.mode`, "must be single, interval, sprite or animated");
  const format = THUMBNAIL_FORMATS[spec.format as keyof typeof THUMBNAIL_FORMATS];
  if (spec.format !== ThumbnailFormat.UNSPECIFIED && !format) check.add(`${at}.format`, "must be jpg, png, webp or mp4");
  if (mode === "animated" && (format === "jpg" || format === "png")) check.add(`${at}.format`, "animated thumbnails are webp or mp4");
  if (mode && mode !== "animated" && format === "mp4") check.add(`${at}.format`, "mp4 is for animated thumbnails; images are jpg, png or webp");
  const within = (field: string, value: number, [min, max]: readonly [number, number], zeroMeans: string) => {
    if (value !== 0 && !(value >= min && value <= max)) check.add(`${at}.${field}`, `must be ${min} to ${max} (or 0 for ${zeroMeans})`);
  };
  within("width", spec.width, THUMBNAIL_LIMITS.width, "scaling from height");
  within("height", spec.height, THUMBNAIL_LIMITS.height, "scaling from width");
  if (!Number.isInteger(spec.width)) check.add(`${at}.width`, "must be a whole number");
  if (!Number.isInteger(spec.height)) check.add(`${at}.height`, "must be a whole number");
  if (spec.timeSeconds !== undefined && !(spec.timeSeconds >= 0 && Number.isFinite(spec.timeSeconds))) check.add(`${at}.time_seconds`, "must be 0 or more");
  if (mode === "interval" && !(spec.intervalSeconds >= THUMBNAIL_LIMITS.minIntervalSeconds))
    check.add(`${at}.interval_seconds`, `is required for interval thumbnails: at least ${THUMBNAIL_LIMITS.minIntervalSeconds}`);
  if (mode === "sprite" && spec.intervalSeconds !== 0 && !(spec.intervalSeconds >= THUMBNAIL_LIMITS.minIntervalSeconds))
    check.add(`${at}.interval_seconds`, `must be at least ${THUMBNAIL_LIMITS.minIntervalSeconds} (or 0 to spread count over the input)`);
  within("count", spec.count, THUMBNAIL_LIMITS.count, "the default");
  if (!Number.isInteger(spec.count)) check.add(`${at}.count`, "must be a whole number");
  within("fps", spec.fps, THUMBNAIL_LIMITS.fps, `${THUMBNAIL_DEFAULTS.animatedFps}`);
  within("duration_seconds", spec.durationSeconds, THUMBNAIL_LIMITS.durationSeconds, `${THUMBNAIL_DEFAULTS.animatedSeconds} seconds`);
}
