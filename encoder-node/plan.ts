// Planning: one output specification and a probed input become ffmpeg argument vectors and the
// layout of the files they write. Pure: no file system, no processes.
import path from "node:path";
import { EncodingMode, OutputType, type AudioTrack, type OutputSpec, type VideoVariant } from "../src/gen/media/v1/job_pb.js";
import { AudioCodec, BitrateMode, HlsPlaylistType, QualityTier, SegmentFormat, VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { MediaError } from "./media-errors.js";
import type { ProbeResult } from "./probe.js";

export interface PlanInput {
  file: string;
  probe: ProbeResult;
}

export type LadderStrategy = "split" | "per-rendition";

/** One rendition as planned: what runPlan and the uploader may report about it. */
export interface RenditionPlan {
  name: string;
  codec: "h264" | "h265" | "vp9" | "av1";
  width: number;
  height: number;
  frameRate: number;
  /** Main file or media playlist of the rendition, relative to dir. */
  file: string;
}

/** The multivariant playlist runPlan writes once the media playlists and segments exist. */
export interface HlsMasterPlan {
  /** Relative to dir. */
  file: string;
  variants: { playlist: string; width: number; height: number; frameRate: number; audioGroup?: string }[];
  audio: { playlist: string; groupId: string; name: string; language: string; isDefault: boolean; channels: number }[];
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
  dashManifest?: { file: string; minBufferTimeSeconds: number };
}

export interface PlanOptions {
  outputId: string;
  workDir: string;
  clip?: { startSeconds: number; endSeconds: number };
  strategy?: LadderStrategy;
}

/**
 * Default ladder strategy, from test/bench/ladder.bench.ts on 2 cores (20 s 1080p30 source, four
 * H.264 rungs 1080p-360p, veryfast; results/ladder-2026-11-22.json): one decode split four ways
 * took 26.1 s of CPU and 14.5 s of wall time, one ffmpeg per rendition 32.1 s and 16.6 s. The
 * three extra decodes cost more than the parallelism buys: x264's own threads already keep both
 * cores busy inside one process.
 */
export const DEFAULT_STRATEGY: LadderStrategy = "split";

// ───────────────────────────── tables ─────────────────────────────

export const CODEC_NAMES = { [VideoCodec.H264]: "h264", [VideoCodec.H265]: "h265", [VideoCodec.VP9]: "vp9", [VideoCodec.AV1]: "av1" } as const;
type CodecName = (typeof CODEC_NAMES)[keyof typeof CODEC_NAMES];
type Tier = "economy" | "standard" | "premium";

/** Named resolutions give the short side, so a portrait 1080p is 1080 wide. */
export const RESOLUTION_LINES: Readonly<Record<string, number>> = { "480p": 480, "720p": 720, "1080p": 1080, "1440p": 1440, "2160p": 2160, "4320p": 4320 };

/** CRF when neither the variant nor its codec options set one. */
const TIER_CRF: Record<CodecName, Record<Tier, number>> = {
  h264: { economy: 26, standard: 23, premium: 20 },
  h265: { economy: 28, standard: 26, premium: 23 },
  vp9: { economy: 36, standard: 32, premium: 28 },
  av1: { economy: 38, standard: 33, premium: 28 },
};
/** Encoder speed by tier: a slower preset buys quality per bit. */
const TIER_PRESET: Record<CodecName, Record<Tier, string>> = {
  h264: { economy: "veryfast", standard: "fast", premium: "slow" },
  h265: { economy: "superfast", standard: "fast", premium: "medium" },
  vp9: { economy: "good", standard: "good", premium: "good" },
  av1: { economy: "10", standard: "8", premium: "6" },
};
/** Bits an encoder needs for the quality of H.264 at the same size. */
const CODEC_EFFICIENCY: Record<string, number> = { h264: 1, h265: 0.6, hevc: 0.6, vp9: 0.65, av1: 0.5 };
const TIER_RATE: Record<Tier, number> = { economy: 0.7, standard: 1, premium: 1.4 };
/** Relative encode cost per pixel, for progress weights of parallel commands. */
const CODEC_COST: Record<CodecName, number> = { h264: 1, h265: 3, vp9: 2.5, av1: 2 };

/**
 * Target kbps of a rendition for a tier: 5 Mbps H.264 at 1080p30 standard, scaled by
 * pixels^0.75 (bits per pixel fall as size grows) and the square root of the frame-rate ratio.
 */
export function tierTargetKbps(codec: CodecName, width: number, height: number, fps: number, tier: Tier = "standard"): number {
  const pixels = (width * height) / (1920 * 1080);
  const kbps = 5000 * pixels ** 0.75 * Math.sqrt(Math.max(fps, 1) / 30) * CODEC_EFFICIENCY[codec]! * TIER_RATE[tier];
  return Math.max(100, Math.round(kbps));
}

const TIERS: Record<QualityTier, Tier> = {
  [QualityTier.UNSPECIFIED]: "standard",
  [QualityTier.ECONOMY]: "economy",
  [QualityTier.STANDARD]: "standard",
  [QualityTier.PREMIUM]: "premium",
};

const AUDIO = {
  [AudioCodec.AAC]: { encoder: "aac", kbps: 128 },
  [AudioCodec.OPUS]: { encoder: "libopus", kbps: 96 },
  [AudioCodec.MP3]: { encoder: "libmp3lame", kbps: 128 },
} as const;
const OPUS_RATES = [8000, 12000, 16000, 24000, 48000];

/** EBU R128 programme loudness; true peak 1 dB below full scale. */
const LOUDNORM = "loudnorm=I=-23:TP=-1:LRA=7";

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
export const FFMPEG_GLOBAL = ["-hide_banner", "-nostdin", "-y", "-loglevel", "level+info", "-benchmark", "-progress", "pipe:1", "-stats_period", "0.1", "-nostats"];

// ───────────────────────────── renditions ─────────────────────────────

interface Rate {
  mode: "crf" | "cbr" | "vbr";
  crf: number;
  targetKbps: number;
  maxKbps: number;
  bufferKbps: number;
}

/** Everything decided about one video variant, before it is written as arguments. */
interface Rendition extends RenditionPlan {
  variant: VideoVariant;
  codecId: VideoCodec;
  /** Frame rate the fps filter brings the input down to; undefined keeps the input's. */
  fpsFilter?: number;
  keyint: number;
  rate: Rate;
  preset: string;
  pixFmt: string;
  /** Whether scaling is needed (the input's size differs). */
  scale: boolean;
}

interface Context {
  input: ProbeResult;
  spec: OutputSpec;
  /** Segment length for streaming outputs; keyframes are aligned to it. */
  segmentSeconds?: number;
  /** Whether the video is written into an ISO-BMFF file (mp4, mov, fmp4 segments). */
  isoBmff: boolean;
}

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

function displaySize(input: ProbeResult): { width: number; height: number } {
  const v = input.video!;
  const width = v.width * (v.sampleAspectRatio && v.sampleAspectRatio > 0 ? v.sampleAspectRatio : 1);
  const rotated = v.rotation !== undefined && Math.abs(v.rotation) % 180 === 90;
  return rotated ? { width: v.height, height: width } : { width, height: v.height };
}

/**
 * Output size of a variant. Named resolutions never upscale: a 1080p rung over a 720p input is
 * 720p (its files keep the requested name, so keys stay predictable). Explicit width and height
 * are honoured as given; one of them alone keeps the input's display aspect.
 */
function outputSize(v: VideoVariant, input: ProbeResult): { width: number; height: number } {
  const src = displaySize(input);
  const aspect = src.width / src.height;
  if (v.width > 0 && v.height > 0) return { width: even(v.width), height: even(v.height) };
  if (v.width > 0) return { width: even(v.width), height: even(v.width / aspect) };
  if (v.height > 0) return { width: even(v.height * aspect), height: even(v.height) };
  const line = RESOLUTION_LINES[v.resolution];
  const shortSide = Math.min(src.width, src.height);
  const target = line === undefined ? shortSide : Math.min(line, shortSide);
  if (src.width >= src.height) return { width: even(target * aspect), height: even(target) };
  return { width: even(target), height: even(target / aspect) };
}

function codecOptions(v: VideoVariant) {
  switch (v.codec) {
    case VideoCodec.H264:
      return v.h264;
    case VideoCodec.H265:
      return v.h265;
    case VideoCodec.VP9:
      return v.vp9;
    case VideoCodec.AV1:
      return v.av1;
    default:
      return undefined;
  }
}

/**
 * The input's quality ceiling for a rendition: its video bitrate scaled by the pixel ratio and
 * the codecs' efficiency, so auto mode never spends more bits than the source carries.
 */
function inputCeilingKbps(input: ProbeResult, codec: CodecName, width: number, height: number): number | undefined {
  const v = input.video;
  if (!v) return undefined;
  const videoBps = v.bitRate > 0 ? v.bitRate : input.bitRate > 0 ? input.bitRate - (input.audio?.bitRate ?? 0) : 0;
  if (videoBps <= 0) return undefined;
  const pixelRatio = Math.min(1, (width * height) / (v.width * v.height));
  const efficiency = CODEC_EFFICIENCY[codec]! / (CODEC_EFFICIENCY[v.codec] ?? 1);
  return Math.max(100, Math.round((videoBps / 1000) * pixelRatio * efficiency));
}

function rateOf(v: VideoVariant, codec: CodecName, tier: Tier, size: { width: number; height: number }, fps: number, ctx: Context): Rate {
  const o = codecOptions(v);
  const requested = o?.bitrateMode ?? BitrateMode.UNSPECIFIED;
  // A target bitrate without a mode means "about this many bits": VBR.
  const mode = requested === BitrateMode.CBR ? "cbr" : requested === BitrateMode.VBR || (requested === BitrateMode.UNSPECIFIED && v.bitrate > 0) ? "vbr" : "crf";
  let target = v.bitrate > 0 ? v.bitrate : tierTargetKbps(codec, size.width, size.height, fps, tier);
  let max = o?.maxBitrateKbps ?? 0;
  if (mode === "crf" && max === 0 && v.bitrate > 0) max = v.bitrate;
  if (ctx.spec.encodingMode === EncodingMode.AUTO) {
    const ceiling = Math.min(tierTargetKbps(codec, size.width, size.height, fps, tier), inputCeilingKbps(ctx.input, codec, size.width, size.height) ?? Infinity);
    if (mode === "crf") max = max > 0 ? Math.min(max, ceiling) : ceiling;
    else target = Math.min(target, ceiling);
  }
  if (mode === "vbr" && max === 0) max = Math.round(target * 1.5);
  if (mode === "cbr") max = target;
  if (mode === "vbr") max = Math.max(max, target);
  const buffer = o?.bufferSizeKbps || (mode === "cbr" ? target : max * 2);
  return { mode, crf: o?.crf || TIER_CRF[codec][tier], targetKbps: target, maxKbps: max, bufferKbps: max > 0 ? buffer : 0 };
}

function pixelFormat(v: VideoVariant): string {
  if (v.codec === VideoCodec.H265 && v.h265?.profile === "main10") return "yuv420p10le";
  if (v.codec === VideoCodec.VP9) return { "1": "yuv444p", "2": "yuv420p10le", "3": "yuv444p10le" }[v.vp9?.profile ?? ""] ?? "yuv420p";
  return "yuv420p";
}

/** GOP length: the codec option, else about 2 s (1 s when 2 s does not divide the segment length). */
function keyintOf(v: VideoVariant, fps: number, segmentSeconds: number | undefined): number {
  const set = codecOptions(v)?.keyint ?? 0;
  if (set > 0) return set;
  const seconds = segmentSeconds !== undefined && segmentSeconds % 2 !== 0 ? 1 : 2;
  return Math.max(1, Math.round(fps * seconds));
}

function planRenditions(ctx: Context): Rendition[] {
  const input = ctx.input;
  const inFps = input.video && input.video.frameRate > 0 ? input.video.frameRate : 30;
  const list = ctx.spec.video.map((v, index): Rendition => {
    const codec = CODEC_NAMES[v.codec as keyof typeof CODEC_NAMES];
    if (!codec) throw new MediaError("internal", `video[${index}] has no codec; the output specification was not checked`);
    const tier = TIERS[v.quality] ?? "standard";
    const size = outputSize(v, input);
    // Never invent frames: a rate above the input's keeps the input's.
    const fpsFilter = v.framerate > 0 && v.framerate < inFps - 0.01 ? v.framerate : undefined;
    const fps = fpsFilter ?? inFps;
    const label = v.resolution !== "" && v.width === 0 && v.height === 0 ? v.resolution : `${size.width}x${size.height}`;
    const o = codecOptions(v);
    return {
      name: label,
      codec,
      width: size.width,
      height: size.height,
      frameRate: Math.round(fps * 1000) / 1000,
      file: "",
      variant: v,
      codecId: v.codec,
      ...(fpsFilter !== undefined ? { fpsFilter } : {}),
      keyint: keyintOf(v, fps, ctx.segmentSeconds),
      rate: rateOf(v, codec, tier, size, fps, ctx),
      preset: o?.encoderPreset || TIER_PRESET[codec][tier],
      pixFmt: pixelFormat(v),
      scale: size.width !== input.video!.width || size.height !== input.video!.height || (input.video!.sampleAspectRatio ?? 1) !== 1,
    };
  });
  // Names become file and folder names: two variants of one size differ by codec, then by position.
  const dedupe = (suffix: (r: Rendition, i: number) => string) => {
    const names = list.map((r) => r.name);
    list.forEach((r, i) => {
      if (names.filter((n) => n === names[i]).length > 1) r.name = `${r.name}_${suffix(r, i)}`;
    });
  };
  dedupe((r) => r.codec);
  dedupe((_, i) => String(i));
  return list;
}

/** Filter chain from the decoded input to one rendition's frames. */
function videoChain(r: Rendition): string {
  const steps: string[] = [];
  if (r.fpsFilter !== undefined) steps.push(`fps=${r.fpsFilter}`);
  if (r.scale) steps.push(`scale=${r.width}:${r.height}:flags=bicubic`, "setsar=1");
  steps.push(`format=${r.pixFmt}`);
  return steps.join(",");
}

/** -filter_complex graph: one decode split into every rendition's chain, outputs [v0]..[vN]. */
function splitGraph(renditions: Rendition[]): string {
  if (renditions.length === 1) return `[0:v:0]${videoChain(renditions[0]!)}[v0]`;
  const taps = renditions.map((_, i) => `[s${i}]`).join("");
  return [`[0:v:0]split=${renditions.length}${taps}`, ...renditions.map((r, i) => `[s${i}]${videoChain(r)}[v${i}]`)].join(";");
}

const levelNumber = (level: string) => {
  const [major = "0", minor = "0"] = level.split(".");
  return Number(major) * 10 + Number(minor);
};

/** Encoder arguments of one rendition written as video stream n of its output file. */
function videoArgs(r: Rendition, n: number, ctx: Context): string[] {
  const s = `:v:${n}`;
  const a: string[] = [];
  const push = (...xs: (string | number)[]) => a.push(...xs.map(String));
  const { rate, keyint } = r;
  const streaming = ctx.segmentSeconds !== undefined;
  const vbv = () => {
    if (rate.maxKbps > 0) push(`-maxrate${s}`, `${rate.maxKbps}k`, `-bufsize${s}`, `${rate.bufferKbps}k`);
  };
  switch (r.codecId) {
    case VideoCodec.H264: {
      const o = r.variant.h264;
      push(`-c${s}`, "libx264", `-preset${s}`, r.preset);
      if (o?.tune) push(`-tune${s}`, o.tune);
      if (o?.profile) push(`-profile${s}`, o.profile);
      if (o?.level) push(`-level${s}`, o.level);
      if (rate.mode === "crf") push(`-crf${s}`, rate.crf);
      else push(`-b${s}`, `${rate.targetKbps}k`);
      if (rate.mode === "cbr") push(`-minrate${s}`, `${rate.targetKbps}k`, `-x264-params${s}`, "nal-hrd=cbr");
      vbv();
      push(`-g${s}`, keyint);
      // Streaming renditions switch at segment boundaries: no scene-cut keyframes between them.
      if (streaming) push(`-keyint_min${s}`, keyint, `-sc_threshold${s}`, 0);
      if (o?.bframes !== undefined) push(`-bf${s}`, o.bframes);
      if (o?.refs) push(`-refs${s}`, o.refs);
      break;
    }
    case VideoCodec.H265: {
      const o = r.variant.h265;
      const params = [`keyint=${keyint}`, "log-level=error"];
      if (streaming) params.push(`min-keyint=${keyint}`, "scenecut=0", "open-gop=0");
      if (o?.bframes !== undefined) params.push(`bframes=${o.bframes}`);
      if (o?.refs) params.push(`ref=${o.refs}`);
      if (o?.level) params.push(`level-idc=${o.level}`);
      if (rate.mode === "cbr") params.push("strict-cbr=1");
      push(`-c${s}`, "libx265", `-preset${s}`, r.preset);
      if (o?.tune) push(`-tune${s}`, o.tune);
      if (o?.profile) push(`-profile${s}`, o.profile);
      if (rate.mode === "crf") push(`-crf${s}`, rate.crf);
      else push(`-b${s}`, `${rate.targetKbps}k`);
      vbv();
      push(`-x265-params${s}`, params.join(":"));
      // Apple players and browsers want HEVC in ISO-BMFF tagged hvc1 (parameter sets in the sample entry).
      if (ctx.isoBmff) push(`-tag${s}`, "hvc1");
      break;
    }
    case VideoCodec.VP9: {
      const o = r.variant.vp9;
      const deadline = r.preset;
      push(`-c${s}`, "libvpx-vp9", `-deadline${s}`, deadline, `-cpu-used${s}`, o?.cpuUsed ?? (deadline === "realtime" ? 8 : 2));
      // Row-based multithreading only changes speed, never the stream: always on.
      push(`-row-mt${s}`, 1);
      if (o?.tileColumns !== undefined) push(`-tile-columns${s}`, o.tileColumns);
      if (o?.profile) push(`-profile${s}`, o.profile);
      // libvpx: crf with -b:v 0 is constant quality; with a bitrate it is constrained quality.
      if (rate.mode === "crf") push(`-crf${s}`, rate.crf, `-b${s}`, rate.maxKbps > 0 ? `${rate.maxKbps}k` : "0");
      else push(`-b${s}`, `${rate.targetKbps}k`);
      if (rate.mode !== "crf") push(`-minrate${s}`, rate.mode === "cbr" ? `${rate.targetKbps}k` : "0");
      if (rate.mode !== "crf") vbv();
      push(`-g${s}`, keyint);
      if (streaming) push(`-keyint_min${s}`, keyint);
      break;
    }
    case VideoCodec.AV1: {
      const o = r.variant.av1;
      const params: string[] = [];
      if (o?.tune) params.push(`tune=${o.tune === "psnr" ? 1 : 0}`);
      if (o?.filmGrain) params.push(`film-grain=${o.filmGrain}`);
      // SVT-AV1 1.4 has CBR only with the low-delay prediction structure.
      if (rate.mode === "cbr") params.push("rc=2", "pred-struct=1");
      push(`-c${s}`, "libsvtav1", `-preset${s}`, r.preset);
      if (o?.level) push(`-level${s}`, levelNumber(o.level));
      if (rate.mode === "crf") push(`-crf${s}`, rate.crf);
      else push(`-b${s}`, `${rate.targetKbps}k`);
      // With crf, -maxrate is SVT-AV1's capped CRF.
      if (rate.mode === "crf") vbv();
      push(`-g${s}`, keyint);
      if (params.length > 0) push(`-svtav1-params${s}`, params.join(":"));
      break;
    }
    default:
      throw new MediaError("internal", `unsupported video codec ${r.codecId}`);
  }
  if (streaming) push(`-force_key_frames${s}`, `expr:gte(t,n_forced*${ctx.segmentSeconds})`);
  return a;
}

// ───────────────────────────── audio ─────────────────────────────

interface AudioPlan {
  track: AudioTrack;
  codec: AudioCodec.AAC | AudioCodec.OPUS | AudioCodec.MP3;
  /** Index of the input audio stream it is made from. */
  source: number;
  name: string;
  channels: number;
}

/** The audio tracks an output carries: its own, or one default track when the input has audio. */
function planAudio(spec: OutputSpec, input: ProbeResult, defaultCodec: AudioCodec.AAC | AudioCodec.OPUS): AudioPlan[] {
  if (spec.disableAudio || !input.audio) return [];
  const tracks = spec.audio.length > 0 ? spec.audio : [{ codec: defaultCodec, bitrateKbps: 0, sampleRate: 0, channels: 0, normalize: false, language: "", name: "" } as AudioTrack];
  const streams = Math.max(1, input.audioStreams ?? 1);
  return tracks.map((track, i) => {
    const codec = track.codec === AudioCodec.UNSPECIFIED ? defaultCodec : (track.codec as AudioPlan["codec"]);
    // Track i is made from input audio stream i when the input has that many (languages), else from the last.
    const source = Math.min(i, streams - 1);
    let channels = track.channels > 0 ? track.channels : input.audio!.channels;
    if (codec === AudioCodec.MP3) channels = Math.min(channels, 2);
    return { track, codec, source, name: `audio_${i}`, channels };
  });
}

function audioArgs(p: AudioPlan, n: number, input: ProbeResult): string[] {
  const s = `:a:${n}`;
  const t = p.track;
  const spec = AUDIO[p.codec];
  const a = [`-c${s}`, spec.encoder];
  const perChannelPair = Math.max(1, p.channels / 2);
  a.push(`-b${s}`, `${t.bitrateKbps > 0 ? t.bitrateKbps : Math.min(512, Math.round(spec.kbps * perChannelPair))}k`);
  let rate = t.sampleRate > 0 ? t.sampleRate : input.audio?.sampleRate || 48000;
  if (p.codec === AudioCodec.OPUS && !OPUS_RATES.includes(rate)) rate = 48000;
  if (p.codec === AudioCodec.MP3 && rate > 48000) rate = 48000;
  a.push(`-ar${s}`, String(rate));
  if (t.channels > 0 || p.channels !== input.audio?.channels) a.push(`-ac${s}`, String(p.channels));
  // loudnorm works at 192 kHz internally; -ar above brings it back (an aresample in the chain fails to negotiate in 5.1).
  if (t.normalize) a.push(`-filter${s}`, LOUDNORM);
  if (t.language) a.push(`-metadata:s${s}`, `language=${t.language}`);
  if (t.name) a.push(`-metadata:s${s}`, `title=${t.name}`);
  return a;
}

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

const audioMaps = (audio: AudioPlan[]) => audio.flatMap((p) => ["-map", `0:a:${p.source}`]);
const weightOf = (r: Rendition) => r.width * r.height * r.frameRate * CODEC_COST[r.codec];
const AUDIO_WEIGHT = 640 * 360 * 30 * 0.05;

function progressivePlan(ctx: Context, input: PlanInput, renditions: Rendition[], audio: AudioPlan[], container: Container, base: Omit<OutputPlan, "main" | "commands" | "parallel" | "strategy">, clip: Clip | undefined, strategy: LadderStrategy): OutputPlan {
  const mux = (file: string) => [...(container.movflags ? ["-movflags", "+faststart"] : []), "-max_muxing_queue_size", "4096", "-f", container.format, file];
  const audioOut = audio.flatMap((p, j) => audioArgs(p, j, ctx.input));
  if (renditions.length === 0) {
    const file = `audio.${container.ext}`;
    const cmd = [...FFMPEG_GLOBAL, ...inputArgs(input, clip), ...audioMaps(audio), "-vn", ...audioOut, ...mux(path.join(base.dir, file))];
    return { ...base, main: file, commands: [cmd], parallel: false, strategy };
  }
  for (const r of renditions) r.file = `${r.name}.${container.ext}`;
  const output = (r: Rendition, label: string) => ["-map", label, ...videoArgs(r, 0, ctx), ...audioMaps(audio), ...audioOut, ...mux(path.join(base.dir, r.file))];
  const main = [...renditions].sort((x, y) => y.width * y.height - x.width * x.height)[0]!.file;
  const renditionPlans = renditions.map(summary);
  if (strategy === "split" || renditions.length === 1) {
    const cmd = [...FFMPEG_GLOBAL, ...inputArgs(input, clip), "-filter_complex", splitGraph(renditions), ...renditions.flatMap((r, i) => output(r, `[v${i}]`))];
    return { ...base, main, commands: [cmd], parallel: false, strategy, renditions: renditionPlans };
  }
  const commands = renditions.map((r) => [...FFMPEG_GLOBAL, ...inputArgs(input, clip), "-filter_complex", splitGraph([r]), ...output(r, "[v0]")]);
  return { ...base, main, commands, parallel: true, strategy, weights: renditions.map(weightOf), renditions: renditionPlans };
}

const summary = (r: Rendition): RenditionPlan => ({ name: r.name, codec: r.codec, width: r.width, height: r.height, frameRate: r.frameRate, file: r.file });

const AUDIO_GROUP = "audio";

/** Player label of a track without a name: the language's English name (pt-BR → Brazilian Portuguese). */
function languageName(tag: string): string {
  if (tag === "") return "";
  try {
    return new Intl.DisplayNames(["en"], { type: "language" }).of(tag) ?? tag;
  } catch {
    return tag;
  }
}

function hlsMasterOf(file: string, renditions: Rendition[], audio: AudioPlan[], playlistOf: (name: string, index: number, kind: "v" | "a") => string): HlsMasterPlan {
  return {
    file,
    variants: renditions.map((r, i) => ({ playlist: playlistOf(r.name, i, "v"), width: r.width, height: r.height, frameRate: r.frameRate, ...(audio.length > 0 ? { audioGroup: AUDIO_GROUP } : {}) })),
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

function hlsPlan(ctx: Context, input: PlanInput, renditions: Rendition[], audio: AudioPlan[], base: Omit<OutputPlan, "main" | "commands" | "parallel" | "strategy">, clip: Clip | undefined, strategy: LadderStrategy): OutputPlan {
  const spec = ctx.spec;
  const fmp4 = segmentFormatOf(spec, OutputType.HLS) === SegmentFormat.FMP4;
  const ext = fmp4 ? "m4s" : "ts";
  const single = spec.segments?.singleFile === true;
  const master = `${spec.hls?.manifestName || "index"}.m3u8`;
  const muxer = (streams: string) => [
    "-f", "hls",
    "-hls_time", String(ctx.segmentSeconds),
    "-hls_playlist_type", spec.hls?.playlistType === HlsPlaylistType.EVENT ? "event" : "vod",
    "-hls_list_size", "0",
    "-hls_segment_type", fmp4 ? "fmp4" : "mpegts",
    ...(fmp4 ? ["-hls_fmp4_init_filename", "init.mp4"] : []),
    "-hls_flags", single ? "independent_segments+single_file" : "independent_segments",
    "-hls_segment_filename", path.join(base.dir, single ? `%v/media.${ext}` : `%v/seg_%05d.${ext}`),
    "-max_muxing_queue_size", "4096",
    "-var_stream_map", streams,
    path.join(base.dir, "%v/index.m3u8"),
  ];
  for (const r of renditions) r.file = `${r.name}/index.m3u8`;
  const hlsMaster = hlsMasterOf(master, renditions, audio, (name) => `${name}/index.m3u8`);
  const renditionPlans = renditions.map(summary);
  const audioStreams = audio.map((p, j) => `a:${j},name:${p.name}${renditions.length > 0 ? `,agroup:${AUDIO_GROUP}` : ""}`);
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
    return { ...base, main: master, commands: [cmd], parallel: false, strategy: "split", renditions: renditionPlans, hlsMaster };
  }
  // One process per video rendition, and one for every audio track together.
  const commands = renditions.map((r) => [...FFMPEG_GLOBAL, ...inputArgs(input, clip), "-filter_complex", splitGraph([r]), "-map", "[v0]", ...videoArgs(r, 0, ctx), ...muxer(`v:0,name:${r.name}`)]);
  const weights = renditions.map(weightOf);
  if (audio.length > 0) {
    commands.push([...FFMPEG_GLOBAL, ...inputArgs(input, clip), ...audioMaps(audio), ...audio.flatMap((p, j) => audioArgs(p, j, ctx.input)), ...muxer(audio.map((p, j) => `a:${j},name:${p.name}`).join(" "))]);
    weights.push(AUDIO_WEIGHT * audio.length);
  }
  return { ...base, main: master, commands, parallel: true, strategy, weights, renditions: renditionPlans, hlsMaster };
}

/** DASH, and adaptive (CMAF): the dash muxer writes fmp4 segments and the MPD; adaptive adds HLS playlists over the same segments. */
function dashPlan(ctx: Context, input: PlanInput, renditions: Rendition[], audio: AudioPlan[], base: Omit<OutputPlan, "main" | "commands" | "parallel" | "strategy">, clip: Clip | undefined, adaptive: boolean): OutputPlan {
  const spec = ctx.spec;
  const mpd = `${spec.dash?.manifestName || "manifest"}.mpd`;
  const master = `${spec.hls?.manifestName || "index"}.m3u8`;
  const single = spec.segments?.singleFile === true;
  // Video in one adaptation set; audio in one set per language and codec, so players offer languages.
  const groups = new Map<string, number[]>();
  audio.forEach((p, j) => groups.set(`${p.track.language}/${p.codec}`, [...(groups.get(`${p.track.language}/${p.codec}`) ?? []), renditions.length + j]));
  const sets = [...(renditions.length > 0 ? ["streams=v"] : []), ...[...groups.values()].map((streams) => `streams=${streams.join(",")}`)].map((s, id) => `id=${id},${s}`).join(" ");
  const cmd = [
    ...FFMPEG_GLOBAL,
    ...inputArgs(input, clip),
    ...(renditions.length > 0 ? ["-filter_complex", splitGraph(renditions)] : []),
    ...renditions.flatMap((_, i) => ["-map", `[v${i}]`]),
    ...audioMaps(audio),
    ...renditions.flatMap((r, i) => videoArgs(r, i, ctx)),
    ...audio.flatMap((p, j) => audioArgs(p, j, ctx.input)),
    "-f", "dash",
    "-seg_duration", String(ctx.segmentSeconds),
    "-use_template", "1",
    "-use_timeline", spec.dash?.segmentTimeline ? "1" : "0",
    "-dash_segment_type", "mp4",
    "-adaptation_sets", sets,
    ...(single ? ["-single_file", "1", "-single_file_name", "stream-$RepresentationID$.m4s"] : ["-init_seg_name", "init-$RepresentationID$.m4s", "-media_seg_name", "chunk-$RepresentationID$-$Number%05d$.m4s"]),
    ...(adaptive ? ["-hls_playlist", "1", "-hls_master_name", master] : []),
    "-max_muxing_queue_size", "4096",
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
    dashManifest: { file: mpd, minBufferTimeSeconds: spec.dash?.minBufferTimeSeconds || 2 },
  };
  if (adaptive) plan.hlsMaster = hlsMasterOf(master, renditions, audio, (_, index, kind) => `media_${kind === "v" ? index : renditions.length + index}.m3u8`);
  return plan;
}

/** Segment container: fmp4 for DASH and adaptive; for HLS the request, else ts unless a codec needs fmp4. */
export function segmentFormatOf(spec: OutputSpec, type: OutputType): SegmentFormat {
  if (type !== OutputType.HLS) return SegmentFormat.FMP4;
  const asked = spec.hls?.segmentFormat || spec.segments?.segmentFormat || SegmentFormat.UNSPECIFIED;
  if (asked !== SegmentFormat.UNSPECIFIED) return asked;
  // HEVC and AV1 in HLS are specified over fmp4 (Apple's authoring rules); H.264 keeps the widest-played ts.
  return spec.video.some((v) => v.codec === VideoCodec.H265 || v.codec === VideoCodec.AV1) ? SegmentFormat.FMP4 : SegmentFormat.TS;
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

/**
 * Plans one output. Expects a specification that passed checkOutputSpec; input problems the
 * check could not see (no video stream for video variants, a clip past the end) are MediaErrors.
 */
export function planOutput(spec: OutputSpec, input: PlanInput, opts: PlanOptions): OutputPlan {
  const probe = input.probe;
  if (spec.video.length > 0 && !probe.video) throw new MediaError("input_unsupported", "the output has video variants but the input has no video stream");
  if (spec.video.length === 0 && (spec.disableAudio || !probe.audio)) throw new MediaError("input_unsupported", "the output is audio-only but the input has no audio stream");
  const { clip, durationMs } = resolveClip(opts, probe);
  const type = spec.type;
  const container = PROGRESSIVE[type];
  const segmentSeconds = segmentSecondsOf(spec);
  const ctx: Context = {
    input: probe,
    spec,
    ...(segmentSeconds !== undefined ? { segmentSeconds } : {}),
    isoBmff: type === OutputType.MP4 || type === OutputType.MOV || type === OutputType.DASH || type === OutputType.ADAPTIVE || (type === OutputType.HLS && segmentFormatOf(spec, type) === SegmentFormat.FMP4),
  };
  const renditions = planRenditions(ctx);
  const audio = planAudio(spec, probe, type === OutputType.WEBM ? AudioCodec.OPUS : AudioCodec.AAC);
  const base = { outputId: opts.outputId, dir: opts.workDir, durationMs };
  const strategy = opts.strategy ?? DEFAULT_STRATEGY;
  if (container) return progressivePlan(ctx, input, renditions, audio, container, base, clip, strategy);
  if (type === OutputType.HLS) return hlsPlan(ctx, input, renditions, audio, base, clip, strategy);
  if (type === OutputType.DASH || type === OutputType.ADAPTIVE) return dashPlan(ctx, input, renditions, audio, base, clip, type === OutputType.ADAPTIVE);
  throw new MediaError("internal", `output type ${type} cannot be planned; the output specification was not checked`);
}
