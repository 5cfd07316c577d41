// cbcs and cenc: ffmpeg writes clear intermediates, Shaka Packager encrypts them into the layouts.
import path from "node:path";
import { type DrmScheme, type TrackClass, trackClassOf } from "../../src/drm/types.js";
import { OutputType } from "../../src/gen/media/v1/job_pb.js";
import { HlsPlaylistType } from "../../src/gen/media/v1/preset_pb.js";
import { AUDIO_TRACK_WEIGHT, type Rendition, audioArgs, renditionWeight } from "../renditions.js";
import { videoArgs } from "../video-args.js";
import { summary } from "./commands.js";
import { mpdColour } from "./dash.js";
import { drmSystemsOf, secretsDirOf } from "./drm.js";
import { type Layout, ladderInput, oneCommand, plainInput, withFiles } from "./layout.js";
import { hlsMasterOf } from "./master.js";
import type { PackagedPlan, PackagedStream, PackagingPlan } from "./types.js";

/** Folder of a packaged output's clear intermediates, inside its dir. */
const CLEAR_DIR = "_clear";

/** A packaged output's names: what the packager writes, where the clear intermediates go. */
interface PackagedNames {
  readonly type: OutputType;
  /** Whether the output has HLS playlists (hls and adaptive). */
  readonly hls: boolean;
  readonly single: boolean;
  readonly master: string;
  readonly mpd: string;
  readonly clearDir: string;
}

const clearFile = (n: PackagedNames, name: string) => path.join(n.clearDir, `${name}.mp4`);
const playlistOf = (n: PackagedNames, name: string, index: number) => (n.type === OutputType.HLS ? `${name}/index.m3u8` : `media_${index}.m3u8`);

/**
 * cbcs and cenc (HLS on fmp4, DASH, adaptive): ffmpeg writes one clear MP4 per video rendition
 * (keyframes on the segment grid, from videoArgs) and one per audio track, and the packager
 * encrypts them under the clear layouts' names: HLS `<rendition>/index.m3u8`; DASH `init-N` and
 * `chunk-N-` segments numbered like the dash muxer's streams, video first; adaptive both over one
 * CMAF segment set, with `media_N.m3u8` playlists.
 */
export function packagedPlan(l: Layout, scheme: Exclude<DrmScheme, "aes128">, segmentSeconds: number): PackagedPlan {
  const { ctx, audio, base } = l;
  const spec = ctx.spec;
  const type = spec.type;
  const n: PackagedNames = {
    type,
    hls: type !== OutputType.DASH,
    single: spec.segments?.singleFile === true,
    master: `${spec.hls?.manifestName || "index"}.m3u8`,
    mpd: `${spec.dash?.manifestName || "manifest"}.mpd`,
    clearDir: path.join(base.dir, CLEAR_DIR),
  };
  const renditions = withFiles(l.renditions, (r, i) => (n.hls ? playlistOf(n, r.name, i) : n.mpd));
  const packaging: PackagingPlan = {
    scheme,
    systems: drmSystemsOf(spec),
    segmentSeconds,
    singleFile: n.single,
    dir: base.dir,
    clearDir: n.clearDir,
    secretsDir: secretsDirOf(base.dir),
    streams: packagedStreams(l, n, renditions),
    ...(type !== OutputType.HLS ? { mpd: n.mpd } : {}),
    ...(n.hls ? { hls: { master: n.master, playlistType: spec.hls?.playlistType === HlsPlaylistType.EVENT ? ("EVENT" as const) : ("VOD" as const) } } : {}),
  };
  const layout = {
    kind: "packaged" as const,
    ...base,
    main: n.hls ? n.master : n.mpd,
    renditions: renditions.map(summary),
    packaging,
    ...(type !== OutputType.HLS ? { dashManifest: { file: n.mpd, minBufferTimeSeconds: spec.dash?.minBufferTimeSeconds || 2, ...mpdColour(renditions) } } : {}),
    // Written after packaging, over the packager's media playlists: measured bandwidths, probed codecs.
    ...(n.hls
      ? {
          hlsMaster: hlsMasterOf(
            n.master,
            renditions,
            audio,
            (name, index, kind) => playlistOf(n, name, kind === "v" ? index : renditions.length + index),
            spec.hls?.iframePlaylists === true,
          ),
        }
      : {}),
  };
  return { ...layout, ...clearCommands(l, n, renditions) };
}

/** The clear intermediates and where the packager writes each, encrypted: video renditions first, then audio tracks. */
function packagedStreams(l: Layout, n: PackagedNames, renditions: readonly Rendition[]): PackagedStream[] {
  const stream = (kind: "video" | "audio", name: string, index: number, trackClass: TrackClass, language: string): PackagedStream => {
    const files =
      n.type === OutputType.HLS
        ? { init: n.single ? `${name}/media.m4s` : `${name}/init.mp4`, segments: `${name}/seg_$Number%05d$.m4s` }
        : { init: n.single ? `stream-${index}.m4s` : `init-${index}.m4s`, segments: `chunk-${index}-$Number%05d$.m4s` };
    return {
      input: clearFile(n, name),
      kind,
      trackClass,
      name,
      language,
      init: files.init,
      ...(n.single ? {} : { segmentTemplate: files.segments }),
      ...(n.hls ? { playlist: playlistOf(n, name, index) } : {}),
    };
  };
  return [
    // Classes by the short side, the one a resolution is named by: a portrait 480x854 rung is SD.
    ...renditions.map((r, i) => stream("video", r.name, i, trackClassOf("video", Math.min(r.width, r.height)), "")),
    ...l.audio.map((p, j) => stream("audio", p.name, renditions.length + j, trackClassOf("audio"), p.track.language)),
  ];
}

/** The ffmpeg commands writing the clear intermediates: one for the ladder, or one per rendition and one for the audio. */
function clearCommands(l: Layout, n: PackagedNames, renditions: readonly Rendition[]) {
  const { ctx, audio } = l;
  const mp4 = (name: string) => ["-max_muxing_queue_size", "4096", "-f", "mp4", clearFile(n, name)];
  const videoOut = (r: Rendition, label: string) => ["-map", label, ...videoArgs(r, 0, ctx), ...mp4(r.name)];
  const audioOut = audio.flatMap((p) => ["-map", `0:a:${p.source}`, ...audioArgs(p, 0, ctx.input), ...mp4(p.name)]);
  if (oneCommand(l, renditions)) {
    const cmd = [...(renditions.length > 0 ? ladderInput(l, renditions) : plainInput(l)), ...renditions.flatMap((r, i) => videoOut(r, `[v${i}]`)), ...audioOut];
    return { commands: [cmd], parallel: false, strategy: "split" as const };
  }
  // One process per video rendition, and one for every audio track together.
  const commands = renditions.map((r) => [...ladderInput(l, [r]), ...videoOut(r, "[v0]")]);
  const weights = renditions.map(renditionWeight);
  if (audio.length > 0) {
    commands.push([...plainInput(l), ...audioOut]);
    weights.push(AUDIO_TRACK_WEIGHT * audio.length);
  }
  return { commands, parallel: true, strategy: l.strategy, weights };
}
