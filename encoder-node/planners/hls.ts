// HLS: clear or aes_128, a ladder in one ffmpeg or one per rendition, growing (a hosted stream),
// split into chunks, or one chunk of a split ladder.
import path from "node:path";
import { OutputType } from "../../src/gen/media/v1/job_pb.js";
import { HlsPlaylistType, SegmentFormat } from "../../src/gen/media/v1/preset_pb.js";
import { MediaError } from "../media-errors.js";
import { AUDIO_TRACK_WEIGHT, type AudioPlan, type Rendition, type RenditionContext, audioArgs, renditionWeight, splitGraph, videoArgs } from "../renditions.js";
import { chunkInputArgs, chunkOffset } from "./chunking.js";
import { type Clip, FFMPEG_GLOBAL, audioMaps, inputArgs, summary } from "./commands.js";
import { AUDIO_GROUP, hlsMasterOf } from "./master.js";
import { segmentFormatOf } from "./segments.js";
import type { ChunkPlan, ChunkSpan, HlsPlan, LadderStrategy, PlanBase, PlanInput, PlanOptions, ProgressivePlan } from "./types.js";

/** Niceness of the later rungs of a progressive plan: the first rung gets the cores it can use, they the rest. */
export const PROGRESSIVE_NICE = 10;

export function hlsPlan(
  ctx: RenditionContext,
  input: PlanInput,
  renditions: Rendition[],
  audio: AudioPlan[],
  base: PlanBase,
  clip: Clip | undefined,
  strategy: LadderStrategy,
  keyInfoFile: string | undefined,
  opts: PlanOptions,
): HlsPlan | ChunkPlan {
  const spec = ctx.spec;
  const fmp4 = segmentFormatOf(spec, OutputType.HLS) === SegmentFormat.FMP4;
  const ext = fmp4 ? "m4s" : "ts";
  const single = spec.segments?.singleFile === true;
  const master = `${spec.hls?.manifestName || "index"}.m3u8`;
  const growing = opts.progressive === true && !single && renditions.length > 0;
  const split = opts.chunked === true || opts.chunk !== undefined;
  if (split && (single || keyInfoFile !== undefined || renditions.length < 2 || ctx.segmentSeconds === undefined))
    throw new MediaError("internal", "only a clear HLS ladder of separate segments and more than one rung can be split into chunks");
  // A growing stream may start with a short segment (see planOutput); its audio stays apart, in a
  // command of its own, with segments of the whole length (-hls_init_time would cut them all short).
  const short = growing && ctx.firstSegmentSeconds !== undefined;
  const muxer = (streams: string, chunk?: ChunkSpan, video = true) => [
    "-f",
    "hls",
    "-hls_time",
    String(ctx.segmentSeconds),
    ...(short && video ? ["-hls_init_time", String(ctx.firstSegmentSeconds)] : []),
    "-hls_playlist_type",
    !chunk && (growing || spec.hls?.playlistType === HlsPlaylistType.EVENT) ? "event" : "vod",
    // A chunk's segments take their place in the whole: numbered from its first, timestamps from its start.
    ...(chunk ? ["-start_number", String(Math.round(chunk.start / ctx.segmentSeconds!))] : []),
    // Streams encoded apart (chunks; a short-first stream's audio) line up only if ffmpeg shifts none.
    ...(split || short ? ["-output_ts_offset", chunkOffset(chunk)] : []),
    "-hls_list_size",
    "0",
    "-hls_segment_type",
    fmp4 ? "fmp4" : "mpegts",
    ...(fmp4 ? ["-hls_fmp4_init_filename", "init.mp4"] : []),
    "-hls_flags",
    // A growing output's segments appear whole (temp_file): its publisher uploads what its playlists list.
    single ? "independent_segments+single_file" : growing ? "independent_segments+temp_file" : "independent_segments",
    "-hls_segment_filename",
    path.join(base.dir, single ? `%v/media.${ext}` : `%v/seg_%05d.${ext}`),
    ...(keyInfoFile ? ["-hls_key_info_file", keyInfoFile] : []),
    "-max_muxing_queue_size",
    "4096",
    "-var_stream_map",
    streams,
    path.join(base.dir, "%v/index.m3u8"),
  ];
  for (const r of renditions) r.file = `${r.name}/index.m3u8`;
  const hlsMaster = hlsMasterOf(master, renditions, audio, (name) => `${name}/index.m3u8`, spec.hls?.iframePlaylists === true);
  const renditionPlans = renditions.map(summary);
  const audioStreams = audio.map((p, j) => `a:${j},name:${p.name}${renditions.length > 0 ? `,agroup:${AUDIO_GROUP}` : ""}`);
  const aes128 = keyInfoFile ? { aes128: { keyInfoFile } } : {};
  if (growing || split) {
    // The lowest rung first, with the audio: it is the fastest to encode and what a viewer sees first.
    const order = renditions.map((r, i) => ({ r, i })).sort((a, b) => a.r.width * a.r.height - b.r.width * b.r.height);
    const first = order[0]!.r;
    // A split ladder with audio and no rung to play first is chunked whole (see PlanOptions.wholeLowestRung).
    const allChunked = split && !growing && opts.wholeLowestRung !== true && audio.length > 0;
    const rest = allChunked ? renditions : renditions.filter((r) => r !== first);
    const agroup = audio.length > 0 ? `,agroup:${AUDIO_GROUP}` : "";
    if (opts.chunk) {
      // One chunk: the chunked rungs over its span, no audio, segments and playlists as the whole's.
      const chunk = opts.chunk;
      return {
        kind: "chunk",
        ...base,
        durationMs: Math.round(((chunk.end ?? base.durationMs / 1000) - chunk.start) * 1000),
        main: rest[0]!.file,
        commands: [
          [
            ...FFMPEG_GLOBAL,
            ...chunkInputArgs(input, clip, chunk, ctx),
            "-filter_complex",
            splitGraph(rest),
            ...rest.flatMap((_, i) => ["-map", `[v${i}]`]),
            ...rest.flatMap((r, i) => videoArgs(r, i, ctx)),
            // Exactly the chunk's frames: the input is cut a little after its end.
            ...(chunk.end !== undefined ? rest.flatMap((r, i) => [`-frames:v:${i}`, String(Math.round((chunk.end! - chunk.start) * r.frameRate))]) : []),
            ...muxer(rest.map((r, i) => `v:${i},name:${r.name}`).join(" "), chunk),
          ],
        ],
        parallel: false,
        strategy: "split",
        renditions: rest.map(summary),
      };
    }
    /** The audio alone, whole, in a command of its own. */
    const audioCommand = () => [
      ...FFMPEG_GLOBAL,
      ...inputArgs(input, clip),
      ...audioMaps(audio),
      "-vn",
      ...audio.flatMap((p, j) => audioArgs(p, j, ctx.input)),
      ...muxer(audioStreams.join(" "), undefined, false),
    ];
    if (allChunked) {
      // The encode's own command: the audio, whole; every rung comes from the chunks.
      return {
        kind: "hls",
        ...base,
        main: master,
        commands: [audioCommand()],
        parallel: false,
        strategy: "split",
        renditions: renditionPlans,
        hlsMaster,
        chunked: { rest: rest.map(summary), segmentSeconds: ctx.segmentSeconds! },
      };
    }
    const withAudio = !short && audio.length > 0;
    const commands = [
      [
        ...FFMPEG_GLOBAL,
        ...inputArgs(input, clip),
        "-filter_complex",
        splitGraph([first]),
        "-map",
        "[v0]",
        ...(withAudio ? audioMaps(audio) : []),
        ...videoArgs(first, 0, ctx),
        ...(withAudio ? audio.flatMap((p, j) => audioArgs(p, j, ctx.input)) : []),
        ...muxer([`v:0,name:${first.name}${agroup}`, ...(withAudio ? audioStreams : [])].join(" ")),
      ],
    ];
    const weights = [renditionWeight(first) + (withAudio ? AUDIO_TRACK_WEIGHT * audio.length : 0)];
    if (short && audio.length > 0) {
      commands.push(audioCommand());
      weights.push(AUDIO_TRACK_WEIGHT * audio.length);
    }
    if (split) {
      // The other rungs are chunks: the master lists them once the encoder node has joined them.
      return {
        kind: "hls",
        ...base,
        main: master,
        commands,
        parallel: false,
        strategy: "split",
        renditions: renditionPlans,
        hlsMaster,
        chunked: { rest: rest.map(summary), segmentSeconds: ctx.segmentSeconds! },
        ...(growing ? { progressive: { first: [first.file, ...hlsMaster.audio.map((a) => a.playlist)], rest: [] } } : {}),
      };
    }
    if (rest.length > 0) {
      commands.push([
        ...FFMPEG_GLOBAL,
        ...inputArgs(input, clip),
        "-filter_complex",
        splitGraph(rest),
        ...rest.flatMap((_, i) => ["-map", `[v${i}]`]),
        ...rest.flatMap((r, i) => videoArgs(r, i, ctx)),
        ...muxer(rest.map((r, i) => `v:${i},name:${r.name}${agroup}`).join(" ")),
      ]);
      weights.push(rest.reduce((sum, r) => sum + renditionWeight(r), 0));
    }
    const growth: ProgressivePlan = {
      first: [first.file, ...hlsMaster.audio.map((a) => a.playlist)],
      rest: rest.map((r) => r.file),
    };
    return {
      kind: "hls",
      ...base,
      main: master,
      commands,
      parallel: true,
      strategy: "split",
      weights,
      // The later rungs below the first and the audio.
      ...(rest.length > 0 ? { nice: commands.map((_, i) => (i === commands.length - 1 ? PROGRESSIVE_NICE : 0)) } : {}),
      renditions: renditionPlans,
      hlsMaster,
      progressive: growth,
      ...aes128,
    };
  }
  if (strategy === "split" || renditions.length + (audio.length > 0 ? 1 : 0) <= 1) {
    const videoMap = renditions.flatMap((_, i) => ["-map", `[v${i}]`]);
    const streams = [...renditions.map((r, i) => `v:${i},name:${r.name}${audio.length > 0 ? `,agroup:${AUDIO_GROUP}` : ""}`), ...audioStreams].join(" ");
    const cmd = [
      ...FFMPEG_GLOBAL,
      ...inputArgs(input, clip),
      ...(renditions.length > 0 ? ["-filter_complex", splitGraph(renditions)] : []),
      ...videoMap,
      ...audioMaps(audio),
      ...renditions.flatMap((r, i) => videoArgs(r, i, ctx)),
      ...audio.flatMap((p, j) => audioArgs(p, j, ctx.input)),
      ...muxer(streams),
    ];
    return { kind: "hls", ...base, main: master, commands: [cmd], parallel: false, strategy: "split", renditions: renditionPlans, hlsMaster, ...aes128 };
  }
  // One process per video rendition, and one for every audio track together.
  const commands = renditions.map((r) => [
    ...FFMPEG_GLOBAL,
    ...inputArgs(input, clip),
    "-filter_complex",
    splitGraph([r]),
    "-map",
    "[v0]",
    ...videoArgs(r, 0, ctx),
    ...muxer(`v:0,name:${r.name}`),
  ]);
  const weights = renditions.map(renditionWeight);
  if (audio.length > 0) {
    commands.push([
      ...FFMPEG_GLOBAL,
      ...inputArgs(input, clip),
      ...audioMaps(audio),
      ...audio.flatMap((p, j) => audioArgs(p, j, ctx.input)),
      ...muxer(audio.map((p, j) => `a:${j},name:${p.name}`).join(" ")),
    ]);
    weights.push(AUDIO_TRACK_WEIGHT * audio.length);
  }
  return { kind: "hls", ...base, main: master, commands, parallel: true, strategy, weights, renditions: renditionPlans, hlsMaster, ...aes128 };
}
