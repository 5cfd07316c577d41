// DASH, and adaptive (CMAF): the dash muxer writes fmp4 segments and the MPD; adaptive adds HLS
// playlists over the same segments.
import path from "node:path";
import { type CicpColour, dashColourOf } from "../hdr.js";
import { type AudioPlan, type Rendition, audioArgs } from "../renditions.js";
import { videoArgs } from "../video-args.js";
import { audioMaps, summary } from "./commands.js";
import { type Layout, ladderInput, plainInput, withFiles } from "./layout.js";
import { hlsMasterOf } from "./master.js";
import type { DashPlan } from "./types.js";

/** DASH, and adaptive (CMAF): the dash muxer writes fmp4 segments and the MPD; adaptive adds HLS playlists over the same segments. */
export function dashPlan(l: Layout, adaptive: boolean): DashPlan {
  const { ctx, audio } = l;
  const spec = ctx.spec;
  const mpd = `${spec.dash?.manifestName || "manifest"}.mpd`;
  // The dash muxer numbers representations (and media_N.m3u8) by output stream: video first, then audio.
  const renditions = withFiles(l.renditions, (_, i) => (adaptive ? `media_${i}.m3u8` : mpd));
  const master = `${spec.hls?.manifestName || "index"}.m3u8`;
  const cmd = [
    ...(renditions.length > 0 ? ladderInput(l, renditions) : plainInput(l)),
    ...renditions.flatMap((_, i) => ["-map", `[v${i}]`]),
    ...audioMaps(audio),
    ...renditions.flatMap((r, i) => videoArgs(r, i, ctx)),
    ...audio.flatMap((p, j) => audioArgs(p, j, ctx.input)),
    ...dashMuxer(l, renditions, { mpd, master, adaptive }),
  ];
  return {
    kind: "dash",
    ...l.base,
    main: adaptive ? master : mpd,
    commands: [cmd],
    parallel: false,
    strategy: "split",
    renditions: renditions.map(summary),
    dashManifest: { file: mpd, minBufferTimeSeconds: spec.dash?.minBufferTimeSeconds || 2, ...mpdColour(renditions) },
    ...(adaptive
      ? {
          hlsMaster: hlsMasterOf(
            master,
            renditions,
            audio,
            (_, index, kind) => `media_${kind === "v" ? index : renditions.length + index}.m3u8`,
            spec.hls?.iframePlaylists === true,
          ),
        }
      : {}),
  };
}

/** Video in one adaptation set; audio in one set per language and codec, so players offer languages. */
function adaptationSets(renditions: readonly Rendition[], audio: readonly AudioPlan[]): string {
  const groups = new Map<string, number[]>();
  audio.forEach((p, j) => groups.set(`${p.track.language}/${p.codec}`, [...(groups.get(`${p.track.language}/${p.codec}`) ?? []), renditions.length + j]));
  return [...(renditions.length > 0 ? ["streams=v"] : []), ...[...groups.values()].map((streams) => `streams=${streams.join(",")}`)]
    .map((s, id) => `id=${id},${s}`)
    .join(" ");
}

/** The dash muxer: segments, the MPD, and with adaptive the HLS playlists over the same segments. */
function dashMuxer(
  l: Layout,
  renditions: readonly Rendition[],
  files: { readonly mpd: string; readonly master: string; readonly adaptive: boolean },
): string[] {
  const spec = l.ctx.spec;
  const single = spec.segments?.singleFile === true;
  const { mpd, master, adaptive } = files;
  return [
    "-f",
    "dash",
    "-seg_duration",
    String(l.ctx.segmentSeconds),
    "-use_template",
    "1",
    "-use_timeline",
    spec.dash?.segmentTimeline ? "1" : "0",
    "-dash_segment_type",
    "mp4",
    "-adaptation_sets",
    adaptationSets(renditions, l.audio),
    ...(single
      ? ["-single_file", "1", "-single_file_name", "stream-$RepresentationID$.m4s"]
      : ["-init_seg_name", "init-$RepresentationID$.m4s", "-media_seg_name", "chunk-$RepresentationID$-$Number%05d$.m4s"]),
    ...(adaptive ? ["-hls_playlist", "1", "-hls_master_name", master] : []),
    "-max_muxing_queue_size",
    "4096",
    path.join(l.base.dir, mpd),
  ];
}

/** The CICP descriptors the manifests add to an MPD whose video is PQ or HLG. */
export function mpdColour(renditions: readonly Rendition[]): { colour?: CicpColour } {
  const colour = dashColourOf(renditions.map((r) => r.colour));
  return colour ? { colour } : {};
}
