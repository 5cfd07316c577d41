// HLS subtitle renditions: each track's segmented WebVTT media playlist, its X-TIMESTAMP-MAP on the
// first media timestamp, and the master written again to list them (with chapters as session data).
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { hlsSubtitleRendition, type Cue } from "../captions.js";
import type { OutputPlan } from "../plan.js";
import { probeStartSeconds } from "../probe.js";
import { hlsFactsOf } from "./hls-facts.js";
import { writeHlsMaster } from "./hls-master.js";
import { parseMediaPlaylist } from "./media-playlist.js";

/** A track as its HLS rendition is written: its cues and how the master names it. */
export interface HlsTextTrack {
  readonly index: number;
  readonly name: string;
  readonly language: string;
  readonly cues: Cue[];
  readonly isDefault: boolean;
  readonly forced: boolean;
  readonly captions: boolean;
  /** Its chapters' Apple JSON, relative to the plan's dir, when it has chapters. */
  readonly chaptersJson?: string;
}

export const hlsSubtitlePlaylist = (index: number) => `subtitles/track_${index}/index.m3u8`;
const SUBTITLE_GROUP = "subs";

/**
 * The MPEG-TS time (90 kHz) at which the HLS media starts: a WebVTT segment's X-TIMESTAMP-MAP maps
 * its local 0 there, so cues line up with the video however the muxer offset its timestamps.
 */
async function mediaStartMpegTs(plan: OutputPlan, signal: AbortSignal): Promise<number> {
  const m = plan.hlsMaster!;
  const known = hlsFactsOf(m).firstTimestampSeconds;
  if (known !== undefined) return Math.round(known * 90_000);
  const playlist = m.variants[0]?.playlist ?? m.audio[0]?.playlist;
  if (!playlist) return 0;
  const base = path.dirname(path.join(plan.dir, playlist));
  const media = parseMediaPlaylist(await readFile(path.join(plan.dir, playlist), "utf8"));
  const first = media.segments[0];
  if (!first) return 0;
  const source = media.init ? `concat:${path.join(base, media.init)}|${path.join(base, first.uri)}` : path.join(base, first.uri);
  return Math.round((await probeStartSeconds(source, signal)) * 90_000);
}

/** Lists the tracks in the master (written again) and writes each one's rendition. */
export async function writeHlsSubtitles(plan: OutputPlan, tracks: readonly HlsTextTrack[], segmentSeconds: number, signal: AbortSignal): Promise<void> {
  const m = plan.hlsMaster;
  if (!m || tracks.length === 0) return;
  const facts = hlsFactsOf(m);
  facts.subtitles = tracks.map((t) => ({
    playlist: hlsSubtitlePlaylist(t.index),
    groupId: SUBTITLE_GROUP,
    name: t.name,
    language: t.language,
    isDefault: t.isDefault,
    forced: t.forced,
    captions: t.captions,
  }));
  const chaptered = tracks.filter((t) => t.chaptersJson !== undefined);
  if (chaptered.length > 0) facts.sessionData = chaptered.map((t) => ({ id: "com.apple.hls.chapters", uri: t.chaptersJson!, language: t.language }));
  // The master was written by the encode; it is written again with the subtitle renditions.
  await writeHlsMaster(plan.dir, m, signal);
  const mpegts = await mediaStartMpegTs(plan, signal);
  const durationSeconds = plan.durationMs / 1000;
  for (const t of tracks) {
    const rendition = hlsSubtitleRendition(t.cues, { segmentSeconds, durationSeconds, mpegts });
    const dir = path.dirname(path.join(plan.dir, hlsSubtitlePlaylist(t.index)));
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(plan.dir, hlsSubtitlePlaylist(t.index)), rendition.playlist);
    for (const s of rendition.segments) await writeFile(path.join(dir, s.name), s.text);
  }
}
