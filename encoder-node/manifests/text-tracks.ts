// An output's subtitle tracks in its manifests, from the track files written (subtitle-tracks.ts):
// HLS subtitle renditions listed in the master, text adaptation sets in the MPD.
import type { OutputPlan } from "../plan.js";
import type { TrackFiles } from "../subtitle-tracks.js";
import { writeHlsSubtitles } from "./hls-subtitles.js";
import { addMpdTextTracks } from "./mpd.js";

export async function writeTrackManifests(plan: OutputPlan, written: TrackFiles, segmentSeconds: number | undefined, signal: AbortSignal): Promise<void> {
  if (written.files.length === 0) return;
  if (plan.hlsMaster && segmentSeconds !== undefined) await writeHlsSubtitles(plan, written.hls, segmentSeconds, signal);
  if (plan.dashManifest) await addMpdTextTracks(plan.dir, plan.dashManifest, written.mpd);
}
