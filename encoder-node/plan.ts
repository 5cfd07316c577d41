// Planning: one output specification and a probed input become ffmpeg argument vectors and the
// layout of the files they write: progressive files, HLS, or DASH and CMAF, clear or protected.
// Each stream's own encoder arguments come from renditions.ts. Pure: no file system, no processes.
import path from "node:path";
import { trackClassOf, type DrmScheme, type DrmSystemName, type TrackClass } from "../src/drm/types.js";
import { DrmSystem, EncryptionScheme, OutputType, type OutputSpec } from "../src/gen/media/v1/job_pb.js";
import { AudioCodec, HlsPlaylistType, SegmentFormat } from "../src/gen/media/v1/preset_pb.js";
import { DRM_SYSTEM_NAMES, drmSchemeOf as checkedSchemeOf, hlsSegmentFormat } from "../src/spec-check.js";
import { dashColourOf, type CicpColour, type VideoRange } from "./hdr.js";
import { iframePlaylistOf } from "./iframes.js";
import { MediaError } from "./media-errors.js";
import type { ProbeResult } from "./probe.js";
import {
  AUDIO_TRACK_WEIGHT,
  audioArgs,
  planAudio,
  planRenditions,
  renditionWeight,
  shortFirstSegmentFits,
  splitGraph,
  videoArgs,
  type AudioPlan,
  type ContentAwareRate,
  type Rendition,
  type RenditionContext,
  type RenditionPlan,
} from "./renditions.js";

// Codec names and named sizes are the shared codec rules, target rates are decided per stream;
// exported here too, so callers keep one planning entry point.
export { CODEC_NAMES, RESOLUTION_LINES } from "../src/codec-rules.js";
export { tierTargetKbps, type RenditionPlan } from "./renditions.js";

export interface PlanInput {
  file: string;
  probe: ProbeResult;
}

export type LadderStrategy = "split" | "per-rendition";

/** The multivariant playlist the manifests write (manifests/hls-master.ts) once the media playlists and segments exist, with the facts they report (manifests/hls-facts.ts). */
export interface HlsMasterPlan {
  /** Relative to dir. */
  readonly file: string;
  readonly variants: readonly {
    readonly playlist: string;
    readonly width: number;
    readonly height: number;
    readonly frameRate: number;
    readonly audioGroup?: string;
    /** hls.iframe_playlists: the variant's I-frame playlist (iframes.ts), written with the master. */
    readonly iframes?: { readonly playlist: string };
    /** VIDEO-RANGE of a variant with a colour plan (hdr.mode, or an HDR input); absent means SDR. */
    readonly videoRange?: VideoRange;
  }[];
  readonly audio: readonly {
    readonly playlist: string;
    readonly groupId: string;
    readonly name: string;
    readonly language: string;
    readonly isDefault: boolean;
    readonly channels: number;
  }[];
}

export interface OutputPlan {
  outputId: string;
  /** Local folder holding every file this output produces (manifests, segments, files). */
  dir: string;
  /** Path of the main file or manifest, relative to dir. */
  main: string;
  /** ffmpeg invocations (argument vectors without the "ffmpeg" binary), run in order or in parallel per `parallel`. */
  commands: string[][];
  parallel: boolean;
  /** Duration the encode covers (after clip), for progress. */
  durationMs: number;
  /** How the renditions share work: one decode split N ways, or one process each. */
  strategy?: LadderStrategy;
  /** Share of the total work of each command, for progress; equal when absent. */
  weights?: number[];
  renditions?: RenditionPlan[];
  /** Written by runPlan after the commands: ffmpeg's own master lacks measured bandwidths and AV1 codec strings. */
  hlsMaster?: HlsMasterPlan;
  /** MPD whose minBufferTime runPlan sets after the commands (the dash muxer has no option for it). */
  dashManifest?: { file: string; minBufferTimeSeconds: number; colour?: CicpColour };
  /** cbcs and cenc: the commands write clear intermediates, and runPlan packages them with these settings. */
  packaging?: PackagingPlan;
  /** aes_128: the HLS muxer encrypts with the key info file runPlan writes before the commands (outside dir). */
  aes128?: { keyInfoFile: string };
  /**
   * Progressive HLS (a hosted video's stream): the first command writes the lowest rung and the
   * audio, the second (niced, beside it) the other rungs; every media playlist is an EVENT
   * playlist that grows segment by segment, so the encoder node can publish them while they run.
   */
  progressive?: ProgressivePlan;
  /** Niceness of each command (progressive plans run the later rungs below the first). */
  nice?: number[];
  /**
   * A chunked ladder: the commands write the lowest rung and the audio; these rungs come from
   * chunk plans (PlanOptions.chunk) run anywhere, and the encoder node joins their playlists and
   * writes the master (runPlan does not).
   */
  chunked?: { rest: RenditionPlan[]; segmentSeconds: number };
}

/** Media playlists of a progressive plan, relative to its dir. */
export interface ProgressivePlan {
  /** The first rung's playlist and the audio playlists: playable once each has a segment. */
  first: string[];
  /** The other rungs' playlists, listed in the master once every one of them is complete. */
  rest: string[];
}

/** One clear intermediate and where the packager writes it encrypted. Output paths are relative to the plan's dir. */
export interface PackagedStream {
  /** The clear MP4 ffmpeg writes (absolute). */
  input: string;
  kind: "video" | "audio";
  /** Which key encrypts it: the packager's drm_label. */
  trackClass: TrackClass;
  /** The rendition's name, or the audio track's (audio_0, ...). */
  name: string;
  /** Audio: the track's BCP 47 tag, "" when none. */
  language: string;
  /** The init segment, or with singleFile the whole stream. */
  init: string;
  /** Media segments, a $Number$ template; absent with singleFile. */
  segmentTemplate?: string;
  /** HLS media playlist (hls and adaptive). */
  playlist?: string;
}

/** A Shaka Packager run: common encryption of the clear intermediates into CMAF segments and manifests. */
export interface PackagingPlan {
  scheme: "cbcs" | "cenc";
  systems: DrmSystemName[];
  segmentSeconds: number;
  singleFile: boolean;
  /** The output folder (the plan's dir). */
  dir: string;
  /** Folder of the clear intermediates inside dir, removed after packaging so it is never uploaded. */
  clearDir: string;
  /** Folder beside dir for the flag file that carries the keys: outside dir, so never uploaded; removed after the run. */
  secretsDir: string;
  streams: PackagedStream[];
  /** MPD, relative to dir (dash and adaptive). */
  mpd?: string;
  /** HLS (hls and adaptive): the packager writes media playlists only beside a master; runPlan writes the master again from hlsMaster. */
  hls?: { master: string; playlistType: "VOD" | "EVENT" };
}

export interface PlanOptions {
  outputId: string;
  workDir: string;
  clip?: { startSeconds: number; endSeconds: number };
  strategy?: LadderStrategy;
  /** Plan a clear or aes_128 HLS output progressively (see OutputPlan.progressive): what a hosted video's stream gets. */
  progressive?: boolean;
  /**
   * Split a clear HLS ladder across encoder nodes (see OutputPlan.chunked): the plan's one command
   * encodes the lowest rung and the audio over the whole output, the other rungs are chunks.
   */
  chunked?: boolean;
  /** Plan one chunk of a chunked output: its chunked rungs over the span, segments numbered from the span's first. */
  chunk?: ChunkSpan;
  /**
   * A split ladder (chunked, or one chunk of it) whose lowest rung is encoded whole by the node
   * running the encode: a hosted video's stream, whose lowest rung is what plays first. Otherwise,
   * when the ladder has audio, every rung is cut into chunks and the encode's own command is the
   * audio alone: the source is decoded once, and the chunks share all of the work.
   */
  wholeLowestRung?: boolean;
  /** content_aware: the analysis's rate for each video variant, by index (content-aware.ts). */
  contentAware?: readonly ContentAwareRate[];
}

/** A chunk of a chunked output: seconds on the output's timeline (after the clip), a whole number of segments; the last is open. */
export interface ChunkSpan {
  readonly start: number;
  readonly end?: number;
}

/**
 * Finer chunks where `chunkSeconds` gives fewer than this many, down to MIN_CHUNK_SECONDS: the
 * ladder is ready when its last chunk is, so a split finishes at about half the work plus half a
 * chunk on two nodes (bench:chunks: 5 chunks of a 120 s ladder took 0.66x the time of one node).
 */
export const MIN_CHUNKS = 8;
export const MIN_CHUNK_SECONDS = 12;

/**
 * The chunks of an output of this duration, each a whole number of segments. Worth splitting when
 * two chunks of `chunkSeconds` fit (rounded to whole segments); then chunks of that length, or
 * finer ones where that length gives fewer than MIN_CHUNKS (not shorter than MIN_CHUNK_SECONDS),
 * the segments shared out evenly (the first chunks get one more where they do not divide) and the
 * last one open, to the end.
 */
export function chunkSpans(durationMs: number, segmentSeconds: number, chunkSeconds: number): ChunkSpan[] {
  if (!(segmentSeconds > 0) || !(chunkSeconds > 0)) return [];
  const segmentsOf = (seconds: number) => Math.max(1, Math.round(seconds / segmentSeconds));
  const whole = Math.floor(durationMs / 1000 / segmentSeconds + 1e-9);
  const most = segmentsOf(chunkSeconds);
  if (Math.floor(whole / most) < 2) return [];
  const per = Math.min(most, segmentsOf(Math.max(MIN_CHUNK_SECONDS, durationMs / 1000 / MIN_CHUNKS)));
  const n = Math.floor(whole / per);
  const [base, extra] = [Math.floor(whole / n), whole % n];
  const spans: ChunkSpan[] = [];
  for (let k = 0, at = 0; k < n; k++) {
    const next = at + base + (k < extra ? 1 : 0);
    spans.push(k === n - 1 ? { start: at * segmentSeconds } : { start: at * segmentSeconds, end: next * segmentSeconds });
    at = next;
  }
  return spans;
}

/**
 * Whether an output's ladder can be split into chunks: clear HLS segments (a single file, or keys
 * applied per command, cannot be joined), more than one rung, a video to cut at frames, no
 * I-frame playlists and no content-aware rates.
 */
export function chunkable(spec: OutputSpec, probe: ProbeResult): boolean {
  return (
    spec.type === OutputType.HLS &&
    !spec.drm &&
    // I-frame playlists are read from the segments, which a chunked ladder's nodes store, not the encode node.
    spec.hls?.iframePlaylists !== true &&
    // The content-aware rates are the encode node's analysis: a chunk, planned elsewhere from the job, has none.
    spec.contentAware?.enabled !== true &&
    spec.segments?.singleFile !== true &&
    spec.video.length > 1 &&
    (probe.video?.frameRate ?? 0) > 0 &&
    segmentSecondsOf(spec) !== undefined
  );
}

/**
 * The first segment of a growing stream, in seconds: how much of the lowest rung must be encoded
 * before a video is playable. Shorter than the hosted 4 s segment, it makes a 1080p source
 * playable about 2 s sooner on 2 cores; the next segment ends where a whole first one would have.
 */
export const FIRST_SEGMENT_SECONDS = 1;

/** Niceness of the later rungs of a progressive plan: the first rung gets the cores it can use, they the rest. */
export const PROGRESSIVE_NICE = 10;

/**
 * Default ladder strategy, from test/bench/ladder.bench.ts on 2 cores (20 s 1080p30 source, four
 * H.264 rungs 1080p-360p, veryfast; results/ladder-2026-11-22.json): one decode split four ways
 * took 26.1 s of CPU and 14.5 s of wall time, one ffmpeg per rendition 32.1 s and 16.6 s. The
 * three extra decodes cost more than the parallelism buys: x264's own threads already keep both
 * cores busy inside one process.
 */
export const DEFAULT_STRATEGY: LadderStrategy = "split";

interface Container {
  ext: string;
  format: string;
  movflags: boolean;
}
const PROGRESSIVE: Partial<Record<OutputType, Container>> = {
  [OutputType.MP4]: { ext: "mp4", format: "mp4", movflags: true },
  [OutputType.WEBM]: { ext: "webm", format: "webm", movflags: false },
  [OutputType.MKV]: { ext: "mkv", format: "matroska", movflags: false },
  [OutputType.MOV]: { ext: "mov", format: "mov", movflags: true },
};

/**
 * Options every command starts with: quiet banner, machine-readable progress, CPU figures at exit.
 * Progress every 0.1 s: a 1080p ladder moves about 3% per half second, and callers are told every
 * whole percent, which ffmpeg can only show if it reports that often.
 */
export const FFMPEG_GLOBAL = [
  "-hide_banner",
  "-nostdin",
  "-y",
  "-loglevel",
  "level+info",
  "-benchmark",
  "-progress",
  "pipe:1",
  "-stats_period",
  "0.1",
  "-nostats",
];

// ───────────────────────────── layouts ─────────────────────────────

function inputArgs(input: PlanInput, clip: Clip | undefined): string[] {
  const a: string[] = [];
  if (clip && clip.start > 0) a.push("-ss", clip.start.toFixed(3));
  if (clip && clip.end !== undefined) a.push("-to", clip.end.toFixed(3));
  a.push("-i", input.file);
  return a;
}

interface Clip {
  start: number;
  end?: number;
}

function resolveClip(opts: PlanOptions, input: ProbeResult): { clip?: Clip; durationMs: number } {
  const total = input.durationMs / 1000;
  if (!opts.clip || (opts.clip.startSeconds <= 0 && opts.clip.endSeconds <= 0)) return { durationMs: input.durationMs };
  const start = Math.max(0, opts.clip.startSeconds);
  const end = opts.clip.endSeconds > 0 ? Math.min(opts.clip.endSeconds, total > 0 ? total : Infinity) : undefined;
  if (total > 0 && start >= total) throw new MediaError("input_unsupported", `the clip starts at ${start} s but the input is ${total.toFixed(3)} s long`);
  if (end !== undefined && end <= start) throw new MediaError("input_unsupported", `the clip ends at ${end} s, before it starts at ${start} s`);
  const stop = end ?? total;
  return { clip: { start, ...(end !== undefined ? { end } : {}) }, durationMs: Math.max(0, Math.round((stop - start) * 1000)) };
}

/**
 * The input of one chunk: from its start (ffmpeg decodes from the keyframe before and drops the
 * frames before the start) to half a frame after its end; the command keeps the chunk's frames by
 * count (see hlsPlan). Frames of a constant integral rate sit exactly on the boundaries, which
 * are whole segments; at 29.97 fps a chunk starts on the frame at or after its start.
 */
function chunkInputArgs(input: PlanInput, clip: Clip | undefined, chunk: ChunkSpan, ctx: RenditionContext): string[] {
  const half = 0.5 / ctx.input.video!.frameRate;
  const base = clip?.start ?? 0;
  const from = base + chunk.start;
  const to = chunk.end !== undefined ? Math.min(base + chunk.end + half, clip?.end ?? Infinity) : clip?.end;
  return [...(from > 0 ? ["-ss", from.toFixed(6)] : []), ...(to !== undefined ? ["-to", to.toFixed(6)] : []), "-i", input.file];
}

/**
 * Where the timestamps of a chunked ladder's command start: a chunk's first frame (at 0 after the
 * cut) at the time it has in the whole output, plus CHUNKED_START_SECONDS for every command. A
 * stream whose first timestamps would be negative (an encoder's reordering delay, AAC's priming)
 * is shifted by ffmpeg, by that delay: the first chunk would be, the others not, and their frames
 * would not line up; audio encoded alone would be shifted by its priming, not by the video's
 * delay, and so play 43 ms early. Started a second in, none is. Every command of a plan whose
 * streams are encoded apart (chunks; a growing stream with a short first segment) starts there.
 */
function chunkOffset(chunk: ChunkSpan | undefined): string {
  return ((chunk?.start ?? 0) + CHUNKED_START_SECONDS).toFixed(6);
}
const CHUNKED_START_SECONDS = 1;

const audioMaps = (audio: AudioPlan[]) => audio.flatMap((p) => ["-map", `0:a:${p.source}`]);

function progressivePlan(
  ctx: RenditionContext,
  input: PlanInput,
  renditions: Rendition[],
  audio: AudioPlan[],
  container: Container,
  base: Omit<OutputPlan, "main" | "commands" | "parallel" | "strategy">,
  clip: Clip | undefined,
  strategy: LadderStrategy,
): OutputPlan {
  const mux = (file: string) => [...(container.movflags ? ["-movflags", "+faststart"] : []), "-max_muxing_queue_size", "4096", "-f", container.format, file];
  const audioOut = audio.flatMap((p, j) => audioArgs(p, j, ctx.input));
  if (renditions.length === 0) {
    const file = `audio.${container.ext}`;
    const cmd = [...FFMPEG_GLOBAL, ...inputArgs(input, clip), ...audioMaps(audio), "-vn", ...audioOut, ...mux(path.join(base.dir, file))];
    return { ...base, main: file, commands: [cmd], parallel: false, strategy };
  }
  for (const r of renditions) r.file = `${r.name}.${container.ext}`;
  const output = (r: Rendition, label: string) => [
    "-map",
    label,
    ...videoArgs(r, 0, ctx),
    ...audioMaps(audio),
    ...audioOut,
    ...mux(path.join(base.dir, r.file)),
  ];
  const main = [...renditions].sort((x, y) => y.width * y.height - x.width * x.height)[0]!.file;
  const renditionPlans = renditions.map(summary);
  if (strategy === "split" || renditions.length === 1) {
    const cmd = [...FFMPEG_GLOBAL, ...inputArgs(input, clip), "-filter_complex", splitGraph(renditions), ...renditions.flatMap((r, i) => output(r, `[v${i}]`))];
    return { ...base, main, commands: [cmd], parallel: false, strategy, renditions: renditionPlans };
  }
  const commands = renditions.map((r) => [...FFMPEG_GLOBAL, ...inputArgs(input, clip), "-filter_complex", splitGraph([r]), ...output(r, "[v0]")]);
  return { ...base, main, commands, parallel: true, strategy, weights: renditions.map(renditionWeight), renditions: renditionPlans };
}

const summary = (r: Rendition): RenditionPlan => ({ name: r.name, codec: r.codec, width: r.width, height: r.height, frameRate: r.frameRate, file: r.file });

const AUDIO_GROUP = "audio";

/** Player label of a track without a name: the language's English name (pt-BR → Brazilian Portuguese). */
export function languageName(tag: string): string {
  if (tag === "") return "";
  try {
    return new Intl.DisplayNames(["en"], { type: "language" }).of(tag) ?? tag;
  } catch {
    return tag;
  }
}

function hlsMasterOf(
  file: string,
  renditions: Rendition[],
  audio: AudioPlan[],
  playlistOf: (name: string, index: number, kind: "v" | "a") => string,
  iframes = false,
): HlsMasterPlan {
  return {
    file,
    variants: renditions.map((r, i) => ({
      playlist: playlistOf(r.name, i, "v"),
      width: r.width,
      height: r.height,
      frameRate: r.frameRate,
      ...(audio.length > 0 ? { audioGroup: AUDIO_GROUP } : {}),
      ...(iframes ? { iframes: { playlist: iframePlaylistOf(playlistOf(r.name, i, "v")) } } : {}),
      ...(r.colour ? { videoRange: r.colour.range } : {}),
    })),
    audio: audio.map((p, j) => ({
      playlist: playlistOf(p.name, j, "a"),
      groupId: AUDIO_GROUP,
      name: p.track.name || languageName(p.track.language) || (audio.length > 1 ? `Audio ${j + 1}` : "Audio"),
      language: p.track.language,
      isDefault: j === 0,
      channels: p.channels,
    })),
  };
}

function hlsPlan(
  ctx: RenditionContext,
  input: PlanInput,
  renditions: Rendition[],
  audio: AudioPlan[],
  base: Omit<OutputPlan, "main" | "commands" | "parallel" | "strategy">,
  clip: Clip | undefined,
  strategy: LadderStrategy,
  keyInfoFile: string | undefined,
  opts: PlanOptions,
): OutputPlan {
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
    return { ...base, main: master, commands: [cmd], parallel: false, strategy: "split", renditions: renditionPlans, hlsMaster, ...aes128 };
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
  return { ...base, main: master, commands, parallel: true, strategy, weights, renditions: renditionPlans, hlsMaster, ...aes128 };
}

/** DASH, and adaptive (CMAF): the dash muxer writes fmp4 segments and the MPD; adaptive adds HLS playlists over the same segments. */
function dashPlan(
  ctx: RenditionContext,
  input: PlanInput,
  renditions: Rendition[],
  audio: AudioPlan[],
  base: Omit<OutputPlan, "main" | "commands" | "parallel" | "strategy">,
  clip: Clip | undefined,
  adaptive: boolean,
): OutputPlan {
  const spec = ctx.spec;
  const mpd = `${spec.dash?.manifestName || "manifest"}.mpd`;
  const master = `${spec.hls?.manifestName || "index"}.m3u8`;
  const single = spec.segments?.singleFile === true;
  // Video in one adaptation set; audio in one set per language and codec, so players offer languages.
  const groups = new Map<string, number[]>();
  audio.forEach((p, j) => groups.set(`${p.track.language}/${p.codec}`, [...(groups.get(`${p.track.language}/${p.codec}`) ?? []), renditions.length + j]));
  const sets = [...(renditions.length > 0 ? ["streams=v"] : []), ...[...groups.values()].map((streams) => `streams=${streams.join(",")}`)]
    .map((s, id) => `id=${id},${s}`)
    .join(" ");
  const cmd = [
    ...FFMPEG_GLOBAL,
    ...inputArgs(input, clip),
    ...(renditions.length > 0 ? ["-filter_complex", splitGraph(renditions)] : []),
    ...renditions.flatMap((_, i) => ["-map", `[v${i}]`]),
    ...audioMaps(audio),
    ...renditions.flatMap((r, i) => videoArgs(r, i, ctx)),
    ...audio.flatMap((p, j) => audioArgs(p, j, ctx.input)),
    "-f",
    "dash",
    "-seg_duration",
    String(ctx.segmentSeconds),
    "-use_template",
    "1",
    "-use_timeline",
    spec.dash?.segmentTimeline ? "1" : "0",
    "-dash_segment_type",
    "mp4",
    "-adaptation_sets",
    sets,
    ...(single
      ? ["-single_file", "1", "-single_file_name", "stream-$RepresentationID$.m4s"]
      : ["-init_seg_name", "init-$RepresentationID$.m4s", "-media_seg_name", "chunk-$RepresentationID$-$Number%05d$.m4s"]),
    ...(adaptive ? ["-hls_playlist", "1", "-hls_master_name", master] : []),
    "-max_muxing_queue_size",
    "4096",
    path.join(base.dir, mpd),
  ];
  // The dash muxer numbers representations (and media_N.m3u8) by output stream: video first, then audio.
  renditions.forEach((r, i) => (r.file = adaptive ? `media_${i}.m3u8` : mpd));
  const plan: OutputPlan = {
    ...base,
    main: adaptive ? master : mpd,
    commands: [cmd],
    parallel: false,
    strategy: "split",
    renditions: renditions.map(summary),
    dashManifest: { file: mpd, minBufferTimeSeconds: spec.dash?.minBufferTimeSeconds || 2, ...mpdColour(renditions) },
  };
  if (adaptive)
    plan.hlsMaster = hlsMasterOf(
      master,
      renditions,
      audio,
      (_, index, kind) => `media_${kind === "v" ? index : renditions.length + index}.m3u8`,
      spec.hls?.iframePlaylists === true,
    );
  return plan;
}

/** The CICP descriptors runPlan adds to an MPD whose video is PQ or HLG. */
function mpdColour(renditions: Rendition[]): { colour?: CicpColour } {
  const colour = dashColourOf(renditions.map((r) => r.colour));
  return colour ? { colour } : {};
}

/** Folder of a packaged output's clear intermediates, inside its dir. */
const CLEAR_DIR = "_clear";

/**
 * cbcs and cenc (HLS on fmp4, DASH, adaptive): ffmpeg writes one clear MP4 per video rendition
 * (keyframes on the segment grid, from videoArgs) and one per audio track, and the packager
 * encrypts them under the clear layouts' names: HLS `<rendition>/index.m3u8`; DASH `init-N` and
 * `chunk-N-` segments numbered like the dash muxer's streams, video first; adaptive both over one
 * CMAF segment set, with `media_N.m3u8` playlists.
 */
function packagedPlan(
  ctx: RenditionContext,
  input: PlanInput,
  renditions: Rendition[],
  audio: AudioPlan[],
  base: Omit<OutputPlan, "main" | "commands" | "parallel" | "strategy">,
  clip: Clip | undefined,
  strategy: LadderStrategy,
  scheme: "cbcs" | "cenc",
  segmentSeconds: number,
): OutputPlan {
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

/** Segment container: fmp4 for DASH and adaptive; for HLS the request, else ts unless a codec needs fmp4. */
export function segmentFormatOf(spec: OutputSpec, type: OutputType): SegmentFormat {
  return type === OutputType.HLS ? hlsSegmentFormat(spec) : SegmentFormat.FMP4;
}

/** Segment length of a streaming output: the type's own setting, then the shared one, then 6 s. */
export function segmentSecondsOf(spec: OutputSpec): number | undefined {
  const shared = spec.segments?.segmentDurationSeconds || 0;
  switch (spec.type) {
    case OutputType.HLS:
      return spec.hls?.segmentDurationSeconds || shared || 6;
    case OutputType.DASH:
      return spec.dash?.segmentDurationSeconds || shared || 6;
    case OutputType.ADAPTIVE:
      return shared || spec.hls?.segmentDurationSeconds || spec.dash?.segmentDurationSeconds || 6;
    default:
      return undefined;
  }
}

/** The scheme an output is protected with, the default filled in: aes128 on ts HLS, else cbcs; undefined when clear. */
export function drmSchemeOf(spec: OutputSpec): DrmScheme | undefined {
  const scheme = checkedSchemeOf(spec);
  if (scheme === undefined) return undefined;
  return scheme === EncryptionScheme.CENC ? "cenc" : scheme === EncryptionScheme.AES_128 ? "aes128" : "cbcs";
}

/** The DRM systems an output is signalled for, in the order asked, each once. */
export function drmSystemsOf(spec: OutputSpec): DrmSystemName[] {
  const names = (spec.drm?.systems ?? []).map((s) => DRM_SYSTEM_NAMES[s]).filter((n): n is DrmSystemName => n !== undefined);
  return [...new Set(names)];
}

/** Folder for an output's key material: beside its dir, never inside it, so the uploader cannot see it. */
const secretsDirOf = (dir: string) => path.join(path.dirname(dir), `${path.basename(dir)}.keys`);

/**
 * Plans one output. Expects a specification that passed checkOutputSpec; input problems the
 * check could not see (no video stream for video variants, a clip past the end) are MediaErrors.
 */
export function planOutput(spec: OutputSpec, input: PlanInput, opts: PlanOptions): OutputPlan {
  const probe = input.probe;
  if (spec.video.length > 0 && !probe.video) throw new MediaError("input_unsupported", "the output has video variants but the input has no video stream");
  if (spec.video.length === 0 && (spec.disableAudio || !probe.audio))
    throw new MediaError("input_unsupported", "the output is audio-only but the input has no audio stream");
  const { clip, durationMs } = resolveClip(opts, probe);
  const type = spec.type;
  const container = PROGRESSIVE[type];
  const segmentSeconds = segmentSecondsOf(spec);
  // A growing stream starts with a short segment, so a player has something to play sooner. A split
  // ladder keeps equal segments: its chunks are numbered by them.
  const shortFirst =
    opts.progressive === true &&
    type === OutputType.HLS &&
    spec.segments?.singleFile !== true &&
    opts.chunked !== true &&
    opts.chunk === undefined &&
    segmentSeconds !== undefined &&
    segmentSeconds > FIRST_SEGMENT_SECONDS &&
    drmSchemeOf(spec) !== "cbcs" &&
    shortFirstSegmentFits(spec.video);
  const ctx: RenditionContext = {
    input: probe,
    spec,
    ...(segmentSeconds !== undefined ? { segmentSeconds } : {}),
    ...(shortFirst ? { firstSegmentSeconds: FIRST_SEGMENT_SECONDS } : {}),
    ...(opts.contentAware ? { contentAware: opts.contentAware } : {}),
    isoBmff:
      type === OutputType.MP4 ||
      type === OutputType.MOV ||
      type === OutputType.DASH ||
      type === OutputType.ADAPTIVE ||
      (type === OutputType.HLS && segmentFormatOf(spec, type) === SegmentFormat.FMP4),
  };
  const renditions = planRenditions(ctx);
  const audio = planAudio(spec, probe, type === OutputType.WEBM ? AudioCodec.OPUS : AudioCodec.AAC);
  const base = { outputId: opts.outputId, dir: opts.workDir, durationMs };
  const strategy = opts.strategy ?? DEFAULT_STRATEGY;
  if (container) return progressivePlan(ctx, input, renditions, audio, container, base, clip, strategy);
  const scheme = drmSchemeOf(spec);
  if ((scheme === "cbcs" || scheme === "cenc") && segmentSeconds !== undefined)
    return packagedPlan(ctx, input, renditions, audio, base, clip, strategy, scheme, segmentSeconds);
  if (type === OutputType.HLS)
    return hlsPlan(
      ctx,
      input,
      renditions,
      audio,
      base,
      clip,
      strategy,
      scheme === "aes128" ? path.join(secretsDirOf(base.dir), "aes128.keyinfo") : undefined,
      opts,
    );
  if (type === OutputType.DASH || type === OutputType.ADAPTIVE) return dashPlan(ctx, input, renditions, audio, base, clip, type === OutputType.ADAPTIVE);
  throw new MediaError("internal", `output type ${type} cannot be planned; the output specification was not checked`);
}

/** The rung a chunked plan encodes whole (the one rendition the chunks do not), if any. */
export function wholeRung(plan: OutputPlan): string | undefined {
  const rest = new Set(plan.chunked!.rest.map((r) => r.file));
  return (plan.renditions ?? []).find((r) => !rest.has(r.file))?.file;
}
