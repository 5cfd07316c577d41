// The parts every ffmpeg command shares: global options, the input (clipped), audio maps.
import { MediaError } from "../media-errors.js";
import type { ProbeResult } from "../probe.js";
import type { AudioPlan, Rendition, RenditionPlan } from "../renditions.js";
import type { PlanInput, PlanOptions } from "./types.js";

/**
 * Options every command starts with: quiet banner, machine-readable progress, CPU figures at exit.
 * Progress every 0.1 s: a 1080p ladder moves about 3% per half second, and callers are told every
 * whole percent, which ffmpeg can only show if it reports that often.
 */
export const FFMPEG_GLOBAL = [
  "-hide_banner",
  "-nostdin",
  "-y",
  "-loglevel",
  "level+info",
  "-benchmark",
  "-progress",
  "pipe:1",
  "-stats_period",
  "0.1",
  "-nostats",
];

export function inputArgs(input: PlanInput, clip: Clip | undefined): string[] {
  const a: string[] = [];
  if (clip && clip.start > 0) a.push("-ss", clip.start.toFixed(3));
  if (clip && clip.end !== undefined) a.push("-to", clip.end.toFixed(3));
  a.push("-i", input.file);
  return a;
}

export interface Clip {
  start: number;
  end?: number;
}

export function resolveClip(opts: PlanOptions, input: ProbeResult): { clip?: Clip; durationMs: number } {
  const total = input.durationMs / 1000;
  if (!opts.clip || (opts.clip.startSeconds <= 0 && opts.clip.endSeconds <= 0)) return { durationMs: input.durationMs };
  const start = Math.max(0, opts.clip.startSeconds);
  const end = opts.clip.endSeconds > 0 ? Math.min(opts.clip.endSeconds, total > 0 ? total : Infinity) : undefined;
  if (total > 0 && start >= total) throw new MediaError("input_unsupported", `the clip starts at ${start} s but the input is ${total.toFixed(3)} s long`);
  if (end !== undefined && end <= start) throw new MediaError("input_unsupported", `the clip ends at ${end} s, before it starts at ${start} s`);
  const stop = end ?? total;
  return { clip: { start, ...(end !== undefined ? { end } : {}) }, durationMs: Math.max(0, Math.round((stop - start) * 1000)) };
}

export const audioMaps = (audio: readonly AudioPlan[]) => audio.flatMap((p) => ["-map", `0:a:${p.source}`]);

export const summary = (r: Rendition): RenditionPlan => ({
  name: r.name,
  codec: r.codec,
  width: r.width,
  height: r.height,
  frameRate: r.frameRate,
  file: r.file,
});
