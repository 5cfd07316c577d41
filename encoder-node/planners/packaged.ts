// cbcs and cenc: ffmpeg writes clear intermediates, Shaka Packager encrypts them into the layouts.
import path from "node:path";
import { type TrackClass, trackClassOf } from "../../src/drm/types.js";
import { OutputType } from "../../src/gen/media/v1/job_pb.js";
import { HlsPlaylistType } from "../../src/gen/media/v1/preset_pb.js";
import { AUDIO_TRACK_WEIGHT, type AudioPlan, type Rendition, type RenditionContext, audioArgs, renditionWeight, splitGraph, videoArgs } from "../renditions.js";
import { type Clip, FFMPEG_GLOBAL, inputArgs, summary } from "./commands.js";
import { mpdColour } from "./dash.js";
import { drmSystemsOf, secretsDirOf } from "./drm.js";
import { hlsMasterOf } from "./master.js";
import type { LadderStrategy, PackagedPlan, PackagedStream, PackagingPlan, PlanBase, PlanInput } from "./types.js";

/** Folder of a packaged output's clear intermediates, inside its dir. */
const CLEAR_DIR = "_clear";

/**
 * cbcs and cenc (HLS on fmp4, DASH, adaptive): ffmpeg writes one clear MP4 per video rendition
 * (keyframes on the segment grid, from videoArgs) and one per audio track, and the packager
 * encrypts them under the clear layouts' names: HLS `<rendition>/index.m3u8`; DASH `init-N` and
 * `chunk-N-` segments numbered like the dash muxer's streams, video first; adaptive both over one
 * CMAF segment set, with `media_N.m3u8` playlists.
 */
export function packagedPlan(
  ctx: RenditionContext,
  input: PlanInput,
  renditions: Rendition[],
  audio: AudioPlan[],
  base: PlanBase,
  clip: Clip | undefined,
  strategy: LadderStrategy,
  scheme: "cbcs" | "cenc",
  segmentSeconds: number,
): PackagedPlan {
  const spec = ctx.spec;
  const type = spec.type;
  const hls = type !== OutputType.DASH;
  const single = spec.segments?.singleFile === true;
  const master = `${spec.hls?.manifestName || "index"}.m3u8`;
  const mpd = `${spec.dash?.manifestName || "manifest"}.mpd`;
  const clearDir = path.join(base.dir, CLEAR_DIR);
  const clearFile = (name: string) => path.join(clearDir, `${name}.mp4`);
  const playlistOf = (name: string, index: number) => (type === OutputType.HLS ? `${name}/index.m3u8` : `media_${index}.m3u8`);
  const stream = (kind: "video" | "audio", name: string, index: number, trackClass: TrackClass, language: string): PackagedStream => {
    const files =
      type === OutputType.HLS
        ? { init: single ? `${name}/media.m4s` : `${name}/init.mp4`, segments: `${name}/seg_$Number%05d$.m4s` }
        : { init: single ? `stream-${index}.m4s` : `init-${index}.m4s`, segments: `chunk-${index}-$Number%05d$.m4s` };
    return {
      input: clearFile(name),
      kind,
      trackClass,
      name,
      language,
      init: files.init,
      ...(single ? {} : { segmentTemplate: files.segments }),
      ...(hls ? { playlist: playlistOf(name, index) } : {}),
    };
  };
  const streams = [
    // Classes by the short side, the one a resolution is named by: a portrait 480x854 rung is SD.
    ...renditions.map((r, i) => stream("video", r.name, i, trackClassOf("video", Math.min(r.width, r.height)), "")),
    ...audio.map((p, j) => stream("audio", p.name, renditions.length + j, trackClassOf("audio"), p.track.language)),
  ];
  const mp4 = (name: string) => ["-max_muxing_queue_size", "4096", "-f", "mp4", clearFile(name)];
  const videoOut = (r: Rendition, label: string) => ["-map", label, ...videoArgs(r, 0, ctx), ...mp4(r.name)];
  const audioOut = audio.flatMap((p) => ["-map", `0:a:${p.source}`, ...audioArgs(p, 0, ctx.input), ...mp4(p.name)]);
  renditions.forEach((r, i) => (r.file = hls ? playlistOf(r.name, i) : mpd));
  const packaging: PackagingPlan = {
    scheme,
    systems: drmSystemsOf(spec),
    segmentSeconds,
    singleFile: single,
    dir: base.dir,
    clearDir,
    secretsDir: secretsDirOf(base.dir),
    streams,
    ...(type !== OutputType.HLS ? { mpd } : {}),
    ...(hls ? { hls: { master, playlistType: spec.hls?.playlistType === HlsPlaylistType.EVENT ? ("EVENT" as const) : ("VOD" as const) } } : {}),
  };
  const layout = {
    kind: "packaged" as const,
    ...base,
    main: hls ? master : mpd,
    renditions: renditions.map(summary),
    packaging,
    ...(type !== OutputType.HLS ? { dashManifest: { file: mpd, minBufferTimeSeconds: spec.dash?.minBufferTimeSeconds || 2, ...mpdColour(renditions) } } : {}),
    // Written after packaging, over the packager's media playlists: measured bandwidths, probed codecs.
    ...(hls
      ? {
          hlsMaster: hlsMasterOf(
            master,
            renditions,
            audio,
            (name, index, kind) => playlistOf(name, kind === "v" ? index : renditions.length + index),
            spec.hls?.iframePlaylists === true,
          ),
        }
      : {}),
  };
  if (strategy === "split" || renditions.length + (audio.length > 0 ? 1 : 0) <= 1) {
    const cmd = [
      ...FFMPEG_GLOBAL,
      ...inputArgs(input, clip),
      ...(renditions.length > 0 ? ["-filter_complex", splitGraph(renditions)] : []),
      ...renditions.flatMap((r, i) => videoOut(r, `[v${i}]`)),
      ...audioOut,
    ];
    return { ...layout, commands: [cmd], parallel: false, strategy: "split" };
  }
  // One process per video rendition, and one for every audio track together.
  const commands = renditions.map((r) => [...FFMPEG_GLOBAL, ...inputArgs(input, clip), "-filter_complex", splitGraph([r]), ...videoOut(r, "[v0]")]);
  const weights = renditions.map(renditionWeight);
  if (audio.length > 0) {
    commands.push([...FFMPEG_GLOBAL, ...inputArgs(input, clip), ...audioOut]);
    weights.push(AUDIO_TRACK_WEIGHT * audio.length);
  }
  return { ...layout, commands, parallel: true, strategy, weights };
}
