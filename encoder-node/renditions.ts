// Renditions: what each video variant and audio track of an output becomes (size, frame rate, rate
// control, GOP, pixel format, filter chain) and the audio's encoder arguments; video-args.ts writes
// each rendition's. Pure; plan.ts lays these streams out as progressive files, HLS or DASH.
import { AUDIO_RULES, CODEC_NAMES, RESOLUTION_LINES, type VideoCodecName } from "../src/codec-rules.js";
import { EncodingMode, OutputType, type AudioTrack, type OutputSpec, type VideoVariant } from "../src/gen/media/v1/job_pb.js";
import { AudioCodec, BitrateMode, QualityTier, VideoCodec } from "../src/gen/media/v1/preset_pb.js";
import { colourPlanOf, type ColourPlan } from "./hdr.js";
import { MediaError } from "./media-errors.js";
import type { ProbeResult } from "./probe.js";

/** One rendition as planned: what runPlan and the uploader may report about it. */
export interface RenditionPlan {
  readonly name: string;
  readonly codec: "h264" | "h265" | "vp9" | "av1";
  readonly width: number;
  readonly height: number;
  readonly frameRate: number;
  /** Main file or media playlist of the rendition, relative to dir. */
  readonly file: string;
}

type Working<T> = { -readonly [K in keyof T]: T[K] };

// ───────────────────────────── tables ─────────────────────────────

type Tier = "economy" | "standard" | "premium";

/** CRF when neither the variant nor its codec options set one. */
const TIER_CRF: Record<VideoCodecName, Record<Tier, number>> = {
  h264: { economy: 26, standard: 23, premium: 20 },
  h265: { economy: 28, standard: 26, premium: 23 },
  vp9: { economy: 36, standard: 32, premium: 28 },
  av1: { economy: 38, standard: 33, premium: 28 },
};
/** Encoder speed by tier: a slower preset buys quality per bit. */
const TIER_PRESET: Record<VideoCodecName, Record<Tier, string>> = {
  h264: { economy: "veryfast", standard: "fast", premium: "slow" },
  h265: { economy: "superfast", standard: "fast", premium: "medium" },
  vp9: { economy: "good", standard: "good", premium: "good" },
  av1: { economy: "10", standard: "8", premium: "6" },
};
/** Bits an encoder needs for the quality of H.264 at the same size. */
const CODEC_EFFICIENCY: Record<string, number> = { h264: 1, h265: 0.6, hevc: 0.6, vp9: 0.65, av1: 0.5 };
const TIER_RATE: Record<Tier, number> = { economy: 0.7, standard: 1, premium: 1.4 };
/** Relative encode cost per pixel, for progress weights of parallel commands. */
const CODEC_COST: Record<VideoCodecName, number> = { h264: 1, h265: 3, vp9: 2.5, av1: 2 };

/**
 * Target kbps of a rendition for a tier: 5 Mbps H.264 at 1080p30 standard, scaled by
 * pixels^0.75 (bits per pixel fall as size grows) and the square root of the frame-rate ratio.
 */
export function tierTargetKbps(codec: VideoCodecName, width: number, height: number, fps: number, tier: Tier = "standard"): number {
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

/** EBU R128 programme loudness; true peak 1 dB below full scale. */
const LOUDNORM = "loudnorm=I=-23:TP=-1:LRA=7";

/** A variant's starting point: its codec options' CRF, else its tier's. */
export function defaultCrf(v: VideoVariant): number {
  const codec = CODEC_NAMES[v.codec as keyof typeof CODEC_NAMES];
  if (!codec) throw new MediaError("internal", "a variant without a codec; the output specification was not checked");
  return codecOptions(v)?.crf || TIER_CRF[codec][TIERS[v.quality] ?? "standard"];
}

// ───────────────────────────── renditions ─────────────────────────────

interface Rate {
  mode: "crf" | "cbr" | "vbr";
  crf: number;
  targetKbps: number;
  maxKbps: number;
  bufferKbps: number;
}

/** Everything decided about one video variant, before it is written as arguments. */
/** A rendition while the planners lay it out (its file and name are settled there); the plan keeps its RenditionPlan summary, readonly. */
export interface Rendition extends Working<RenditionPlan> {
  variant: VideoVariant;
  codecId: VideoCodec;
  /** Frame rate the fps filter brings the input down to; undefined keeps the input's. */
  fpsFilter?: number;
  keyint: number;
  rate: Rate;
  preset: string;
  pixFmt: string;
  /** hdr.mode (or an HDR input): conversion steps, colour flags and HDR metadata (hdr.ts); undefined keeps the input's colour as ffmpeg carries it. */
  colour?: ColourPlan;
  /** Whether scaling is needed (the input's size differs). */
  scale: boolean;
  /** Display aspect to keep when the even size rounds away from it (see sharedAspect); else pixels are square. */
  dar?: string;
}

export interface RenditionContext {
  input: ProbeResult;
  spec: OutputSpec;
  /** Segment length for streaming outputs; keyframes are aligned to it. */
  segmentSeconds?: number;
  /**
   * A shorter first segment (a growing stream's): keyframes at 0, here, then every segmentSeconds,
   * so the first segment is this long and the second ends where the first would have.
   */
  firstSegmentSeconds?: number;
  /** Whether the video is written into an ISO-BMFF file (mp4, mov, fmp4 segments). */
  isoBmff: boolean;
  /** content_aware: each variant's rate as the analysis chose it (content-aware.ts), by variant index. */
  contentAware?: readonly ContentAwareRate[];
}

/** A variant's rate chosen by the content-aware analysis: a CRF, capped where the output's max_bitrate_kbps says. */
export interface ContentAwareRate {
  crf: number;
  /** VBV cap; 0 or absent for none. */
  maxKbps?: number;
}

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

function displaySize(input: ProbeResult): { width: number; height: number } {
  const v = input.video!;
  const width = v.width * (v.sampleAspectRatio && v.sampleAspectRatio > 0 ? v.sampleAspectRatio : 1);
  const rotated = v.rotation !== undefined && Math.abs(v.rotation) % 180 === 90;
  return rotated ? { width: v.height, height: width } : { width, height: v.height };
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * ffmpeg's DASH muxer refuses an adaptation set whose representations differ in display aspect,
 * and an even size can only come near the source's: 854x480 of 16:9 is 427:240. Such a rung of a
 * DASH or adaptive output keeps the source's aspect in its pixel shape (setdar) instead of square
 * pixels. Sizes given whole (width and height) are the caller's: left as they are.
 */
function sharedAspect(ctx: RenditionContext, v: VideoVariant, size: { width: number; height: number }): string | undefined {
  if (ctx.spec.type !== OutputType.DASH && ctx.spec.type !== OutputType.ADAPTIVE) return undefined;
  if (v.width > 0 && v.height > 0) return undefined;
  const src = displaySize(ctx.input);
  const w = Math.round(src.width);
  const h = Math.round(src.height);
  if (size.width * h === w * size.height) return undefined;
  const g = gcd(w, h);
  return `${w / g}/${h / g}`;
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
function inputCeilingKbps(input: ProbeResult, codec: VideoCodecName, width: number, height: number): number | undefined {
  const v = input.video;
  if (!v) return undefined;
  const videoBps = v.bitRate > 0 ? v.bitRate : input.bitRate > 0 ? input.bitRate - (input.audio?.bitRate ?? 0) : 0;
  if (videoBps <= 0) return undefined;
  const pixelRatio = Math.min(1, (width * height) / (v.width * v.height));
  const efficiency = CODEC_EFFICIENCY[codec]! / (CODEC_EFFICIENCY[v.codec] ?? 1);
  return Math.max(100, Math.round((videoBps / 1000) * pixelRatio * efficiency));
}

function rateOf(
  v: VideoVariant,
  codec: VideoCodecName,
  tier: Tier,
  size: { width: number; height: number },
  fps: number,
  ctx: RenditionContext,
  index: number,
): Rate {
  const chosen = ctx.contentAware?.[index];
  if (chosen) {
    const max = chosen.maxKbps ?? 0;
    return { mode: "crf", crf: chosen.crf, targetKbps: tierTargetKbps(codec, size.width, size.height, fps, tier), maxKbps: max, bufferKbps: max * 2 };
  }
  const o = codecOptions(v);
  const requested = o?.bitrateMode ?? BitrateMode.UNSPECIFIED;
  // A target bitrate without a mode means "about this many bits": VBR.
  const mode =
    requested === BitrateMode.CBR ? "cbr" : requested === BitrateMode.VBR || (requested === BitrateMode.UNSPECIFIED && v.bitrate > 0) ? "vbr" : "crf";
  let target = v.bitrate > 0 ? v.bitrate : tierTargetKbps(codec, size.width, size.height, fps, tier);
  let max = o?.maxBitrateKbps ?? 0;
  if (mode === "crf" && max === 0 && v.bitrate > 0) max = v.bitrate;
  if (ctx.spec.encodingMode === EncodingMode.AUTO) {
    const ceiling = Math.min(
      tierTargetKbps(codec, size.width, size.height, fps, tier),
      inputCeilingKbps(ctx.input, codec, size.width, size.height) ?? Infinity,
    );
    if (mode === "crf") max = max > 0 ? Math.min(max, ceiling) : ceiling;
    else target = Math.min(target, ceiling);
  }
  if (mode === "vbr" && max === 0) max = Math.round(target * 1.5);
  if (mode === "cbr") max = target;
  if (mode === "vbr") max = Math.max(max, target);
  const buffer = o?.bufferSizeKbps || (mode === "cbr" ? target : max * 2);
  return { mode, crf: o?.crf || TIER_CRF[codec][tier], targetKbps: target, maxKbps: max, bufferKbps: max > 0 ? buffer : 0 };
}

function pixelFormat(v: VideoVariant, colour: ColourPlan | undefined): string {
  // PQ and HLG are 10-bit; VP9 profile 3 keeps its 4:4:4 (spec-check refuses the 8-bit profiles with them).
  if (colour?.tenBit) return v.codec === VideoCodec.VP9 && v.vp9?.profile === "3" ? "yuv444p10le" : "yuv420p10le";
  if (v.codec === VideoCodec.H265 && v.h265?.profile === "main10") return "yuv420p10le";
  if (v.codec === VideoCodec.VP9) return { "1": "yuv444p", "2": "yuv420p10le", "3": "yuv444p10le" }[v.vp9?.profile ?? ""] ?? "yuv420p";
  return "yuv420p";
}

/**
 * Whether these variants can start with a shorter first segment: H.264 only (x264 makes every
 * forced keyframe an IDR), with no GOP length of the caller's (the segments end at keyframes).
 */
export function shortFirstSegmentFits(variants: readonly VideoVariant[]): boolean {
  return variants.length > 0 && variants.every((v) => v.codec === VideoCodec.H264 && !((codecOptions(v)?.keyint ?? 0) > 0));
}

/**
 * GOP length: the codec option, else about 2 s (1 s when 2 s does not divide the segment length),
 * or a whole segment after a shorter first one: the HLS muxer, once given a first segment length,
 * ends a segment at every keyframe past it, so keyframes must fall only where segments end.
 */
function keyintOf(v: VideoVariant, fps: number, segmentSeconds: number | undefined, firstSegmentSeconds: number | undefined): number {
  const set = codecOptions(v)?.keyint ?? 0;
  if (set > 0) return set;
  if (segmentSeconds !== undefined && firstSegmentSeconds !== undefined) return Math.max(1, Math.round(fps * segmentSeconds));
  const seconds = segmentSeconds !== undefined && segmentSeconds % 2 !== 0 ? 1 : 2;
  return Math.max(1, Math.round(fps * seconds));
}

export function planRenditions(ctx: RenditionContext): Rendition[] {
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
    const dar = sharedAspect(ctx, v, size);
    const colour = colourPlanOf(v, input);
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
      keyint: keyintOf(v, fps, ctx.segmentSeconds, ctx.firstSegmentSeconds),
      rate: rateOf(v, codec, tier, size, fps, ctx, index),
      preset: o?.encoderPreset || TIER_PRESET[codec][tier],
      pixFmt: pixelFormat(v, colour),
      ...(colour ? { colour } : {}),
      scale: size.width !== input.video!.width || size.height !== input.video!.height || (input.video!.sampleAspectRatio ?? 1) !== 1,
      ...(dar !== undefined ? { dar } : {}),
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
  if (r.scale) steps.push(`scale=${r.width}:${r.height}:flags=bicubic`, r.dar ? `setdar=${r.dar}` : "setsar=1");
  // Colour conversions after the scaler: on the rendition's pixels, not the input's.
  if (r.colour) steps.push(...r.colour.steps);
  steps.push(`format=${r.pixFmt}`);
  return steps.join(",");
}

/** -filter_complex graph: one decode split into every rendition's chain, outputs [v0]..[vN]. */
export function splitGraph(renditions: readonly Rendition[]): string {
  if (renditions.length === 1) return `[0:v:0]${videoChain(renditions[0]!)}[v0]`;
  const taps = renditions.map((_, i) => `[s${i}]`).join("");
  return [`[0:v:0]split=${renditions.length}${taps}`, ...renditions.map((r, i) => `[s${i}]${videoChain(r)}[v${i}]`)].join(";");
}

/** Relative work of a rendition, for the progress weights of parallel commands. */
export const renditionWeight = (r: Rendition) => r.width * r.height * r.frameRate * CODEC_COST[r.codec];
/** Relative work of one audio track, in renditionWeight's units. */
export const AUDIO_TRACK_WEIGHT = 640 * 360 * 30 * 0.05;

// ───────────────────────────── audio ─────────────────────────────

export interface AudioPlan {
  track: AudioTrack;
  codec: AudioCodec.AAC | AudioCodec.OPUS | AudioCodec.MP3;
  /** Index of the input audio stream it is made from. */
  source: number;
  name: string;
  channels: number;
}

/** The audio tracks an output carries: its own, or one default track when the input has audio. */
export function planAudio(spec: OutputSpec, input: ProbeResult, defaultCodec: AudioCodec.AAC | AudioCodec.OPUS): AudioPlan[] {
  if (spec.disableAudio || !input.audio) return [];
  const tracks =
    spec.audio.length > 0
      ? spec.audio
      : [{ codec: defaultCodec, bitrateKbps: 0, sampleRate: 0, channels: 0, normalize: false, language: "", name: "" } as AudioTrack];
  const streams = Math.max(1, input.audioStreams ?? 1);
  return tracks.map((track, i) => {
    const codec = track.codec === AudioCodec.UNSPECIFIED ? defaultCodec : (track.codec as AudioPlan["codec"]);
    // Track i is made from input audio stream i when the input has that many (languages), else from the last.
    const source = Math.min(i, streams - 1);
    let channels = track.channels > 0 ? track.channels : input.audio!.channels;
    if (codec === AudioCodec.MP3) channels = Math.min(channels, AUDIO_RULES.mp3.maxChannels);
    return { track, codec, source, name: `audio_${i}`, channels };
  });
}

export function audioArgs(p: AudioPlan, n: number, input: ProbeResult): string[] {
  const s = `:a:${n}`;
  const t = p.track;
  const spec = AUDIO[p.codec];
  const a = [`-c${s}`, spec.encoder];
  const perChannelPair = Math.max(1, p.channels / 2);
  a.push(`-b${s}`, `${t.bitrateKbps > 0 ? t.bitrateKbps : Math.min(512, Math.round(spec.kbps * perChannelPair))}k`);
  let rate = t.sampleRate > 0 ? t.sampleRate : input.audio?.sampleRate || 48000;
  if (p.codec === AudioCodec.OPUS && !AUDIO_RULES.opus.sampleRates.includes(rate)) rate = 48000;
  if (p.codec === AudioCodec.MP3 && rate > 48000) rate = 48000;
  a.push(`-ar${s}`, String(rate));
  if (t.channels > 0 || p.channels !== input.audio?.channels) a.push(`-ac${s}`, String(p.channels));
  // loudnorm works at 192 kHz internally; -ar above brings it back (an aresample in the chain fails to negotiate in 5.1).
  if (t.normalize) a.push(`-filter${s}`, LOUDNORM);
  if (t.language) a.push(`-metadata:s${s}`, `language=${t.language}`);
  if (t.name) a.push(`-metadata:s${s}`, `title=${t.name}`);
  return a;
}
