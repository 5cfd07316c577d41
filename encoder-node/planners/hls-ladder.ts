// An HLS output laid out before its commands: its renditions with their playlists, its segmenting
// and its master; what the HLS planners (hls.ts, hls-first-rung.ts) share.
import { summary } from "./commands.js";
import { type HlsLayout, type HlsSegmenting, hlsSegmenting } from "./hls-segments.js";
import { withFiles } from "./layout.js";
import { AUDIO_GROUP, hlsMasterOf } from "./master.js";
import type { HlsMasterPlan } from "./types.js";

/** An HLS output laid out: its renditions with their playlists, its segmenting, its master. */
export interface HlsLadder extends HlsLayout {
  readonly segmenting: HlsSegmenting;
  /** The multivariant playlist's file, relative to dir. */
  readonly master: string;
  readonly hlsMaster: HlsMasterPlan;
  /** The audio tracks' entries in a -var_stream_map, in the variants' group when there is video. */
  readonly audioStreams: readonly string[];
}

/** The output's renditions given their playlists, its segmenting and its master. */
export function hlsLadderOf(l: HlsLayout): HlsLadder {
  const segmenting = hlsSegmenting(l);
  const spec = l.ctx.spec;
  const master = `${spec.hls?.manifestName || "index"}.m3u8`;
  const renditions = withFiles(l.renditions, (r) => `${r.name}/index.m3u8`);
  return {
    ...l,
    renditions,
    segmenting,
    master,
    hlsMaster: hlsMasterOf(master, renditions, l.audio, (name) => `${name}/index.m3u8`, spec.hls?.iframePlaylists === true),
    audioStreams: l.audio.map((p, j) => `a:${j},name:${p.name}${renditions.length > 0 ? `,agroup:${AUDIO_GROUP}` : ""}`),
  };
}

/** What every HLS plan of the whole output carries besides its commands. */
export const hlsParts = (h: HlsLadder) => ({
  kind: "hls" as const,
  ...h.base,
  main: h.master,
  renditions: h.renditions.map(summary),
  hlsMaster: h.hlsMaster,
});

/** aes_128: the key info file the muxer encrypts with. */
export const aes128Of = (h: HlsLadder) => (h.keyInfoFile ? { aes128: { keyInfoFile: h.keyInfoFile } } : {});
