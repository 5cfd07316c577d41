// Thumbnails of the input: single images, images at an interval, a sprite sheet with its WebVTT
// index for scrubbing previews, and short animated loops (WebP or muted MP4).
import { stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ThumbnailSpec } from "../src/gen/media/v1/job_pb.js";
import {
  THUMBNAIL_DEFAULTS as DEFAULTS,
  THUMBNAIL_FORMATS as FORMATS,
  THUMBNAIL_LIMITS,
  THUMBNAIL_MODES as MODES,
  type ThumbnailFormatName as Format,
  type ThumbnailModeName as Mode,
} from "../src/thumbnail-spec.js";
import { formatVttTime } from "./captions.js";
import { sdrStepsOf } from "./hdr.js";
import { runFfmpeg } from "./executor.js";
import { MediaError } from "./media-errors.js";
import type { PlanInput } from "./plan.js";

export interface ThumbnailArtifact {
  /** Relative to dir. */
  file: string;
  mode: "single" | "interval" | "sprite" | "animated";
  /** 0-based position among the artifacts of its spec. */
  index: number;
  /** 0-based position of its spec in the job's thumbnails. */
  thumbnailIndex: number;
  format: "jpg" | "png" | "webp" | "mp4";
  width: number;
  height: number;
  timeSeconds: number;
  sizeBytes: number;
  /** Sprites: the WebVTT file mapping time ranges to tiles (#xywh=), relative to dir; upload it beside the image. */
  indexFile?: string;
}

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

/** Output size: both given as is; one given keeps the input's display aspect; none keeps the input's size. */
function sizeOf(spec: ThumbnailSpec, input: PlanInput, fallbackWidth?: number, evenSides = false): { width: number; height: number } {
  const v = input.probe.video!;
  const rotated = v.rotation !== undefined && Math.abs(v.rotation) % 180 === 90;
  const w = v.width * (v.sampleAspectRatio ?? 1);
  const src = rotated ? { width: v.height, height: w } : { width: w, height: v.height };
  const round = (n: number) => (evenSides ? even(n) : Math.max(1, Math.round(n)));
  let width = spec.width;
  let height = spec.height;
  if (width === 0 && height === 0 && fallbackWidth) width = fallbackWidth;
  if (width === 0 && height === 0) return { width: round(src.width), height: round(src.height) };
  if (height === 0) height = (width * src.height) / src.width;
  if (width === 0) width = (height * src.width) / src.height;
  return { width: round(width), height: round(height) };
}

/**
 * The scaler to a thumbnail's size, then, for a PQ or HLG input, the tone-map to BT.709 that its
 * SDR renditions get (a thumbnail of an HDR video is not washed out); on the small picture, so cheap.
 */
const scaleFor = (input: PlanInput) => {
  const sdr = sdrStepsOf(input.probe);
  return (s: { width: number; height: number }) => [`scale=${s.width}:${s.height}:flags=bicubic,setsar=1`, ...sdr].join(",");
};

const QUALITY: Record<Format, string[]> = {
  jpg: ["-q:v", "3"],
  png: ["-compression_level", "6"],
  webp: ["-c:v", "libwebp", "-quality", "80"],
  mp4: [],
};

/** Renders every spec in order; returns the artifacts (a WebP loop longer than 10 s is skipped). */
export async function renderThumbnails(specs: ThumbnailSpec[], input: PlanInput, opts: { dir: string; signal?: AbortSignal }): Promise<ThumbnailArtifact[]> {
  if (specs.length === 0) return [];
  if (!input.probe.video) throw new MediaError("input_unsupported", "thumbnails need a video stream; the input has none");
  const out: ThumbnailArtifact[] = [];
  for (const [t, spec] of specs.entries()) out.push(...(await renderOne(spec, t, input, opts)));
  return out;
}

async function renderOne(spec: ThumbnailSpec, t: number, input: PlanInput, opts: { dir: string; signal?: AbortSignal }): Promise<ThumbnailArtifact[]> {
  const mode: Mode = MODES[spec.mode as keyof typeof MODES] ?? "single";
  const format: Format = FORMATS[spec.format as keyof typeof FORMATS] ?? (mode === "animated" ? "webp" : "jpg");
  const duration = input.probe.durationMs / 1000;
  const fps = input.probe.video!.frameRate || 25;
  const scale = scaleFor(input);
  // The last frame starts one frame before the end: seeking past it yields nothing.
  const latest = Math.max(0, duration - 2 / fps);
  const run = (args: string[]) =>
    runFfmpeg(["-hide_banner", "-nostdin", "-y", "-loglevel", "level+error", ...args], { durationMs: 0, ...(opts.signal ? { signal: opts.signal } : {}) });
  const artifact = async (
    file: string,
    index: number,
    size: { width: number; height: number },
    timeSeconds: number,
    extra: Partial<ThumbnailArtifact> = {},
  ): Promise<ThumbnailArtifact> => {
    const sizeBytes = (await stat(path.join(opts.dir, file)).catch(() => undefined))?.size;
    if (!sizeBytes) throw new MediaError("encode_failed", `thumbnail ${file} was not written`);
    return {
      file,
      mode,
      index,
      thumbnailIndex: t,
      format,
      width: size.width,
      height: size.height,
      timeSeconds: Math.round(timeSeconds * 1000) / 1000,
      sizeBytes,
      ...extra,
    };
  };

  switch (mode) {
    case "single": {
      const at = Math.min(spec.timeSeconds ?? duration * DEFAULTS.singleAt, latest);
      const size = sizeOf(spec, input);
      const file = `thumbnail-${t}.${format}`;
      await run(["-ss", at.toFixed(3), "-i", input.file, "-map", "0:v:0", "-frames:v", "1", "-vf", scale(size), ...QUALITY[format], path.join(opts.dir, file)]);
      return [await artifact(file, 0, size, at)];
    }
    case "interval": {
      const start = Math.min(spec.timeSeconds ?? 0, latest);
      const every = spec.intervalSeconds;
      const count = Math.min(spec.count || DEFAULTS.intervalCount, Math.floor((latest - start) / every) + 1);
      const size = sizeOf(spec, input);
      const pattern = `thumbnail-${t}-%03d.${format}`;
      // One decode of the span, the fps filter picking the frame nearest each tick.
      await run([
        "-ss",
        start.toFixed(3),
        "-i",
        input.file,
        "-map",
        "0:v:0",
        "-vf",
        `fps=1000000/${Math.round(every * 1e6)},${scale(size)}`,
        "-frames:v",
        String(count),
        "-start_number",
        "0",
        ...QUALITY[format],
        "-f",
        "image2",
        path.join(opts.dir, pattern),
      ]);
      return Promise.all(Array.from({ length: count }, (_, k) => artifact(pattern.replace("%03d", String(k).padStart(3, "0")), k, size, start + k * every)));
    }
    case "sprite": {
      const start = Math.min(spec.timeSeconds ?? 0, latest);
      const span = Math.max(duration - start, 0.001);
      const wanted = spec.count || DEFAULTS.spriteCount;
      const every = spec.intervalSeconds > 0 ? spec.intervalSeconds : span / wanted;
      const count = Math.max(1, Math.min(wanted, Math.floor((latest - start) / every) + 1));
      const cols = Math.ceil(Math.sqrt(count));
      const rows = Math.ceil(count / cols);
      // A grid of full-size frames would be enormous: tiles default to 160 px wide.
      const tile = sizeOf(spec, input, DEFAULTS.spriteTileWidth);
      const file = `sprite-${t}.${format}`;
      const vtt = `sprite-${t}.vtt`;
      await run([
        "-ss",
        start.toFixed(3),
        "-i",
        input.file,
        "-map",
        "0:v:0",
        "-vf",
        `fps=1000000/${Math.round(every * 1e6)},${scale(tile)},tile=${cols}x${rows}`,
        "-frames:v",
        "1",
        ...QUALITY[format],
        path.join(opts.dir, file),
      ]);
      const cues = Array.from({ length: count }, (_, k) => {
        const from = start + k * every;
        const to = k === count - 1 ? Math.max(duration, from + 0.001) : from + every;
        const x = (k % cols) * tile.width;
        const y = Math.floor(k / cols) * tile.height;
        return `${formatVttTime(from)} --> ${formatVttTime(to)}\n${file}#xywh=${x},${y},${tile.width},${tile.height}`;
      });
      await writeFile(path.join(opts.dir, vtt), `WEBVTT\n\n${cues.join("\n\n")}\n`);
      return [await artifact(file, 0, { width: cols * tile.width, height: rows * tile.height }, start, { indexFile: vtt })];
    }
    case "animated": {
      const start = Math.min(spec.timeSeconds ?? 0, latest);
      const length = Math.min(spec.durationSeconds || DEFAULTS.animatedSeconds, Math.max(duration - start, 0.1));
      if (format === "webp" && length > THUMBNAIL_LIMITS.webpMaxSeconds) return [];
      const rate = spec.fps || DEFAULTS.animatedFps;
      const size = sizeOf(spec, input, undefined, format === "mp4");
      const file = `animated-${t}.${format}`;
      const codec =
        format === "mp4"
          ? ["-c:v", "libx264", "-preset", "veryfast", "-crf", "28", "-pix_fmt", "yuv420p", "-movflags", "+faststart"]
          : ["-c:v", "libwebp_anim", "-quality", "70", "-loop", "0"];
      await run([
        "-ss",
        start.toFixed(3),
        "-t",
        length.toFixed(3),
        "-i",
        input.file,
        "-map",
        "0:v:0",
        "-an",
        "-vf",
        `fps=${rate},${scale(size)}`,
        ...codec,
        path.join(opts.dir, file),
      ]);
      return [await artifact(file, 0, size, start)];
    }
  }
}
