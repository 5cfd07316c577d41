// HLS whose lowest rung goes first: a growing stream (a hosted video's), a ladder split into chunks
// across encoder nodes, and one chunk of such a ladder.
import { AUDIO_TRACK_WEIGHT, type Rendition, audioArgs, renditionWeight, splitGraph } from "../renditions.js";
import { videoArgs } from "../video-args.js";
import { chunkInputArgs } from "./chunking.js";
import { FFMPEG_GLOBAL, audioMaps, summary } from "./commands.js";
import { type HlsLadder, aes128Of, hlsParts } from "./hls-ladder.js";
import { hlsMuxer } from "./hls-segments.js";
import { ladderInput, plainInput } from "./layout.js";
import { AUDIO_GROUP } from "./master.js";
import type { ChunkPlan, ChunkSpan, HlsPlan } from "./types.js";

/** Niceness of the later rungs of a progressive plan: the first rung gets the cores it can use, they the rest. */
export const PROGRESSIVE_NICE = 10;

const area = (r: Rendition) => r.width * r.height;

export function firstRungPlan(h: HlsLadder): HlsPlan | ChunkPlan {
  const { renditions, audio, segmenting: s, opts } = h;
  // The lowest rung first, with the audio: it is the fastest to encode and what a viewer sees first.
  const first = [...renditions].sort((a, b) => area(a) - area(b))[0]!;
  // A split ladder with audio and no rung to play first is chunked whole (see PlanOptions.wholeLowestRung).
  const allChunked = s.split && !s.growing && opts.wholeLowestRung !== true && audio.length > 0;
  const rest = allChunked ? renditions : renditions.filter((r) => r !== first);
  if (opts.chunk) return chunkPlan(h, rest, opts.chunk);
  const chunked = { chunked: { rest: rest.map(summary), segmentSeconds: h.ctx.segmentSeconds! } };
  // The encode's own command: the audio, whole; every rung comes from the chunks.
  if (allChunked) return { ...hlsParts(h), commands: [audioCommand(h)], parallel: false, strategy: "split", ...chunked };
  const { commands, weights } = firstCommands(h, first);
  const playsFirst = [first.file, ...h.hlsMaster.audio.map((a) => a.playlist)];
  // The other rungs are chunks: the master lists them once the encoder node has joined them.
  if (s.split)
    return { ...hlsParts(h), commands, parallel: false, strategy: "split", ...chunked, ...(s.growing ? { progressive: { first: playsFirst, rest: [] } } : {}) };
  if (rest.length > 0) {
    const agroup = audio.length > 0 ? `,agroup:${AUDIO_GROUP}` : "";
    commands.push([
      ...ladderInput(h, rest),
      ...rest.flatMap((_, i) => ["-map", `[v${i}]`]),
      ...rest.flatMap((r, i) => videoArgs(r, i, h.ctx)),
      ...hlsMuxer(s, rest.map((r, i) => `v:${i},name:${r.name}${agroup}`).join(" ")),
    ]);
    weights.push(rest.reduce((sum, r) => sum + renditionWeight(r), 0));
  }
  return {
    ...hlsParts(h),
    commands,
    parallel: true,
    strategy: "split",
    weights,
    // The later rungs below the first and the audio.
    ...(rest.length > 0 ? { nice: commands.map((_, i) => (i === commands.length - 1 ? PROGRESSIVE_NICE : 0)) } : {}),
    progressive: { first: playsFirst, rest: rest.map((r) => r.file) },
    ...aes128Of(h),
  };
}

/** One chunk: the chunked rungs over its span, no audio, segments and playlists as the whole's. */
function chunkPlan(h: HlsLadder, rest: readonly Rendition[], chunk: ChunkSpan): ChunkPlan {
  const { base, ctx } = h;
  return {
    kind: "chunk",
    ...base,
    durationMs: Math.round(((chunk.end ?? base.durationMs / 1000) - chunk.start) * 1000),
    main: rest[0]!.file,
    commands: [
      [
        ...FFMPEG_GLOBAL,
        ...chunkInputArgs(h.input, h.clip, chunk, ctx),
        "-filter_complex",
        splitGraph(rest),
        ...rest.flatMap((_, i) => ["-map", `[v${i}]`]),
        ...rest.flatMap((r, i) => videoArgs(r, i, ctx)),
        // Exactly the chunk's frames: the input is cut a little after its end.
        ...(chunk.end !== undefined ? rest.flatMap((r, i) => [`-frames:v:${i}`, String(Math.round((chunk.end! - chunk.start) * r.frameRate))]) : []),
        ...hlsMuxer(h.segmenting, rest.map((r, i) => `v:${i},name:${r.name}`).join(" "), chunk),
      ],
    ],
    parallel: false,
    strategy: "split",
    renditions: rest.map(summary),
  };
}

/** The audio alone, whole, in a command of its own. */
const audioCommand = (h: HlsLadder) => [
  ...plainInput(h),
  ...audioMaps(h.audio),
  "-vn",
  ...h.audio.flatMap((p, j) => audioArgs(p, j, h.ctx.input)),
  ...hlsMuxer(h.segmenting, h.audioStreams.join(" "), undefined, false),
];

/** The first rung's command, with the audio unless a short first segment keeps the audio in one of its own. */
function firstCommands(h: HlsLadder, first: Rendition): { commands: string[][]; weights: number[] } {
  const { audio, segmenting: s } = h;
  const withAudio = !s.short && audio.length > 0;
  const agroup = audio.length > 0 ? `,agroup:${AUDIO_GROUP}` : "";
  const commands = [
    [
      ...ladderInput(h, [first]),
      "-map",
      "[v0]",
      ...(withAudio ? audioMaps(audio) : []),
      ...videoArgs(first, 0, h.ctx),
      ...(withAudio ? audio.flatMap((p, j) => audioArgs(p, j, h.ctx.input)) : []),
      ...hlsMuxer(s, [`v:0,name:${first.name}${agroup}`, ...(withAudio ? h.audioStreams : [])].join(" ")),
    ],
  ];
  const weights = [renditionWeight(first) + (withAudio ? AUDIO_TRACK_WEIGHT * audio.length : 0)];
  if (s.short && audio.length > 0) {
    commands.push(audioCommand(h));
    weights.push(AUDIO_TRACK_WEIGHT * audio.length);
  }
  return { commands, weights };
}
