// A plan run whole, for callers outside the encode pipeline (test/media, the benches): the executor
// (executor.ts) runs the commands and the packager, then the manifests' one writer
// (manifests/plan-manifests.ts) writes the plan's manifests. The pipeline calls the two itself.
import type { ContentKey } from "../src/drm/types.js";
import { encodePlan, type RunResult } from "./executor.js";
import { writePlanManifests } from "./manifests/plan-manifests.js";
import type { OutputPlan } from "./plan.js";

// Where callers have always found them: the executor's and the manifests' own.
export { runFfmpeg, type RunOptions, type RunProgress, type RunResult } from "./executor.js";
export { codecString, parseMediaPlaylist, playlistCodecString, type MediaPlaylist } from "./manifests/media-playlist.js";
export { writeGrowingHlsMaster, writeHlsMaster } from "./manifests/hls-master.js";

/** encodePlan's options, and whether to write the manifests after it (by default yes). */
export type RunPlanOptions = Omit<Parameters<typeof encodePlan>[1], "finish"> & {
  /** false: run the commands and the packager only, and leave the manifests to the caller (manifests/plan-manifests.ts). */
  readonly manifests?: boolean;
};

/**
 * Runs a plan's commands, packages a protected plan with `keys`, and writes the manifests the plan
 * asks for, before its progress reaches 1 (aes_128 encrypts with the first key given).
 */
export function runPlan(plan: OutputPlan, opts: RunPlanOptions): Promise<RunResult> {
  const { manifests, ...rest } = opts;
  const key: ContentKey | undefined = opts.keys?.[0];
  return encodePlan(plan, manifests === false ? rest : { ...rest, finish: (signal) => writePlanManifests(plan, key, signal) });
}
