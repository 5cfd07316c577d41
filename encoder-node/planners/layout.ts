// What every layout planner (files, hls, dash, packaged) starts from, as one readonly record, and
// the command parts they share: the ladder's input, split from one decode.
import { type AudioPlan, type Rendition, type RenditionContext, splitGraph } from "../renditions.js";
import { type Clip, FFMPEG_GLOBAL, inputArgs } from "./commands.js";
import type { LadderStrategy, PlanBase, PlanInput } from "./types.js";

/** An output's ladder and audio, decided by planOutput before its kind's planner lays them out in files and commands. */
export interface Layout {
  readonly ctx: RenditionContext;
  readonly input: PlanInput;
  readonly renditions: readonly Rendition[];
  readonly audio: readonly AudioPlan[];
  readonly base: PlanBase;
  readonly clip: Clip | undefined;
  readonly strategy: LadderStrategy;
}

/** The renditions with the files their layout gives them: copies, so the layout's input stays as planOutput made it. */
export const withFiles = (renditions: readonly Rendition[], fileOf: (r: Rendition, index: number) => string): Rendition[] =>
  renditions.map((r, i) => ({ ...r, file: fileOf(r, i) }));

/** Whether the ladder is one command: the split strategy, or nothing to run apart (at most one rung, or audio alone). */
export const oneCommand = (l: Layout, renditions: readonly Rendition[] = l.renditions) =>
  l.strategy === "split" || renditions.length + (l.audio.length > 0 ? 1 : 0) <= 1;

/** A command's start: the input (clipped), then these rungs from one decode, labelled [v0]..[vN]. */
export const ladderInput = (l: Layout, rungs: readonly Rendition[]) => [...FFMPEG_GLOBAL, ...inputArgs(l.input, l.clip), "-filter_complex", splitGraph(rungs)];

/** A command's start without video: the input (clipped) alone. */
export const plainInput = (l: Layout) => [...FFMPEG_GLOBAL, ...inputArgs(l.input, l.clip)];
