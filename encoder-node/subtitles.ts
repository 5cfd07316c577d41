// Subtitle tracks for callers outside the encode pipeline (test/media, the benches): the executor's
// own (subtitle-tracks.ts), and writeTracks, which writes the track files and then the manifests
// that list them (manifests/text-tracks.ts). The pipeline calls the two itself.
import { writeTrackManifests } from "./manifests/text-tracks.js";
import type { OutputPlan } from "./plan.js";
import { type PreparedTrack, writeTrackFiles } from "./subtitle-tracks.js";

export * from "./subtitle-tracks.js";

/** After the encode: writes every track's files into the plan's folder, lists them in its manifests, and says where they are. */
export async function writeTracks(
  plan: OutputPlan,
  tracks: readonly PreparedTrack[],
  segmentSeconds: number | undefined,
  signal: AbortSignal,
): Promise<{ files: { index: number; file: string; chapters?: string }[] }> {
  const written = await writeTrackFiles(plan, tracks);
  await writeTrackManifests(plan, written, segmentSeconds, signal);
  return { files: written.files };
}
