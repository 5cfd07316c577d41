// DASH manifests: the MPD the dash muxer or the packager wrote, finished here (minBufferTime, PQ
// or HLG signalling, neither of which they have an option for), and its text adaptation sets.
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { addTextTracksToMpd } from "../captions.js";
import { signalMpdColour } from "../hdr.js";
import type { DashManifestPlan } from "../plan.js";

/** Sets an MPD's minBufferTime, and signals PQ or HLG video (hdr.ts). */
export async function finishMpd(dir: string, m: DashManifestPlan): Promise<void> {
  const file = path.join(dir, m.file);
  const mpd = (await readFile(file, "utf8")).replace(/minBufferTime="[^"]*"/, `minBufferTime="PT${m.minBufferTimeSeconds}S"`);
  await writeFile(file, m.colour ? signalMpdColour(mpd, m.colour) : mpd);
}

/** A subtitle track as an MPD text adaptation set lists it. */
export type MpdTextTrack = Parameters<typeof addTextTracksToMpd>[1][number];

/** Adds the output's subtitle tracks to its MPD. */
export async function addMpdTextTracks(dir: string, m: DashManifestPlan, tracks: readonly MpdTextTrack[]): Promise<void> {
  const file = path.join(dir, m.file);
  await writeFile(file, addTextTracksToMpd(await readFile(file, "utf8"), [...tracks]));
}
