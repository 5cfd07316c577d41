// The one pricing table: integer micro-EUR per encoded minute by codec, resolution, frame rate and
// quality tier, an audio-only rate and a per-job processing fee. EUR numbers exist only on the wire.
import type { OutputSpec, VideoVariant } from "./gen/media/v1/job_pb.js";
import { QualityTier, VideoCodec } from "./gen/media/v1/preset_pb.js";

export const CURRENCY = "EUR";
export const MICROS_PER_EUR = 1_000_000;

/** Charged once for every job an encoder starts (fee_type processing, unit job). */
export const PROCESSING_FEE_MICROS = 10_000;
/**
 * A generated subtitle track (speech recognition of the input's audio): per second of (clipped)
 * audio, each second begun counted, per track. 50 micro-EUR a second is EUR 0.003 a minute.
 * Provided tracks (a WebVTT or SRT file) are free.
 */
export const TRANSCRIPTION_MICROS_PER_SECOND = 50;
/** An output without video: one audio rendition, whatever its codec. */
export const AUDIO_ONLY_MICROS_PER_MINUTE = 1_000;

export const PRICED_CODECS = ["h264", "h265", "vp9", "av1"] as const;
export type PricedCodec = (typeof PRICED_CODECS)[number];
/** A bucket holds every frame up to its size (see resolutionBucket). */
export const RESOLUTION_BUCKETS = ["480p", "720p", "1080p", "1440p", "2160p", "4320p"] as const;
export type ResolutionBucket = (typeof RESOLUTION_BUCKETS)[number];
export const TIERS = ["economy", "standard", "premium"] as const;
export type Tier = (typeof TIERS)[number];
/** Frame rate buckets by their upper bound: up to 30 fps, 31 to 60, above 60. */
export const FPS_BUCKETS = ["30", "60", "240"] as const;
export type FpsBucket = (typeof FPS_BUCKETS)[number];

/**
 * Standard tier, up to 30 fps, micro-EUR per minute. HEVC costs 2x H.264, VP9 1.6x, AV1 4x
 * (roughly their encode time). Every entry is a multiple of 8, so the tier and frame-rate
 * percentages below always give whole micro-EUR.
 */
const BASE: Readonly<Record<PricedCodec, Readonly<Record<ResolutionBucket, number>>>> = {
  h264: { "480p": 4_000, "720p": 6_000, "1080p": 9_000, "1440p": 18_000, "2160p": 30_000, "4320p": 90_000 },
  h265: { "480p": 8_000, "720p": 12_000, "1080p": 18_000, "1440p": 36_000, "2160p": 60_000, "4320p": 180_000 },
  vp9: { "480p": 6_400, "720p": 9_600, "1080p": 14_400, "1440p": 28_800, "2160p": 48_000, "4320p": 144_000 },
  av1: { "480p": 16_000, "720p": 24_000, "1080p": 36_000, "1440p": 72_000, "2160p": 120_000, "4320p": 360_000 },
};
export const TIER_PERCENT: Readonly<Record<Tier, number>> = { economy: 75, standard: 100, premium: 150 };
export const FPS_PERCENT: Readonly<Record<FpsBucket, number>> = { "30": 100, "60": 150, "240": 200 };

export interface PriceRow {
  readonly codec: PricedCodec;
  readonly resolution: ResolutionBucket;
  readonly tier: Tier;
  readonly fps: FpsBucket;
  readonly microsPerMinute: number;
}

const key = (codec: PricedCodec, resolution: ResolutionBucket, tier: Tier, fps: FpsBucket) => `${codec}|${resolution}|${tier}|${fps}`;

// Built once with integer arithmetic; a base price that would leave a fraction stops the process.
const TABLE: readonly PriceRow[] = PRICED_CODECS.flatMap((codec) =>
  RESOLUTION_BUCKETS.flatMap((resolution) =>
    TIERS.flatMap((tier) =>
      FPS_BUCKETS.map((fps): PriceRow => {
        const scaled = BASE[codec][resolution] * TIER_PERCENT[tier] * FPS_PERCENT[fps];
        // Stryker disable next-line ConditionalExpression,StringLiteral: every BASE entry is a multiple of 8, so no cell leaves a fraction and the stop (and its message) is never reached; it guards edits to BASE
        if (scaled % 10_000 !== 0) throw new Error(`pricing: ${key(codec, resolution, tier, fps)} is not a whole micro-EUR`);
        return Object.freeze({ codec, resolution, tier, fps, microsPerMinute: scaled / 10_000 });
      }),
    ),
  ),
);
const BY_KEY = new Map(TABLE.map((r) => [key(r.codec, r.resolution, r.tier, r.fps), r.microsPerMinute]));

export function pricingTable(): readonly PriceRow[] {
  return TABLE;
}

/** Rate of one table cell. */
export function rateMicrosPerMinute(codec: PricedCodec, resolution: ResolutionBucket, tier: Tier, fps: FpsBucket): number {
  return BY_KEY.get(key(codec, resolution, tier, fps))!;
}

/** A price needs facts nobody has yet (no resolution and no input to take it from, or no codec). */
export class PriceUnknown extends Error {
  readonly retryable = false;
  constructor(reason: string) {
    super(`price unknown: ${reason}`);
    this.name = "PriceUnknown";
  }
}

export type InputFacts = { width: number; height: number; frameRate: number } | undefined;

const CODEC: Partial<Record<VideoCodec, PricedCodec>> = {
  [VideoCodec.H264]: "h264",
  [VideoCodec.H265]: "h265",
  [VideoCodec.VP9]: "vp9",
  [VideoCodec.AV1]: "av1",
};
const TIER: Record<QualityTier, Tier> = {
  [QualityTier.UNSPECIFIED]: "standard",
  [QualityTier.ECONOMY]: "economy",
  [QualityTier.STANDARD]: "standard",
  [QualityTier.PREMIUM]: "premium",
};

// A frame belongs to the smallest bucket whose long side and short side both hold it, so
// portrait video (1080x1920) is priced as 1080p, and DCI 4K (4096x2160) as 2160p.
const LONG_SIDE = [1024, 1280, 1920, 2560, 4096] as const;
const SHORT_SIDE = [576, 720, 1080, 1440, 2160] as const;

/** Bucket of a frame size; a side of 0 is unknown and does not count. */
export function resolutionBucket(width: number, height: number): ResolutionBucket {
  const long = Math.max(width, height);
  // An unknown side of 0 makes the short side 0, which every bucket holds: the long side decides.
  const short = Math.min(width, height);
  const byLong = LONG_SIDE.findIndex((limit) => long <= limit);
  const byShort = SHORT_SIDE.findIndex((limit) => short <= limit);
  const index = Math.max(byLong === -1 ? 5 : byLong, byShort === -1 ? 5 : byShort);
  return RESOLUTION_BUCKETS[index]!;
}

export function fpsBucket(frameRate: number): FpsBucket {
  return frameRate <= 30 ? "30" : frameRate <= 60 ? "60" : "240";
}

function variantBucket(variant: VideoVariant, input: InputFacts): ResolutionBucket | undefined {
  if ((RESOLUTION_BUCKETS as readonly string[]).includes(variant.resolution)) return variant.resolution as ResolutionBucket;
  const { width, height } = variant;
  const inW = input?.width ?? 0;
  const inH = input?.height ?? 0;
  if (width > 0 && height > 0) return resolutionBucket(width, height);
  // One side given: the other follows the input's aspect; without an input, assume landscape.
  if (height > 0) return inW > 0 && inH > 0 ? resolutionBucket(Math.round((height * inW) / inH), height) : bucketOfShortSide(height);
  if (width > 0) return inW > 0 && inH > 0 ? resolutionBucket(width, Math.round((width * inH) / inW)) : resolutionBucket(width, 0);
  if (input) return resolutionBucket(inW, inH);
  return undefined;
}

function bucketOfShortSide(short: number): ResolutionBucket {
  const i = SHORT_SIDE.findIndex((limit) => short <= limit);
  return RESOLUTION_BUCKETS[i === -1 ? 5 : i]!;
}

/** Like variantRateMicrosPerMinute, but undefined when the price cannot be known yet. */
export function variantRateIfKnown(variant: VideoVariant, input: InputFacts): number | undefined {
  const codec = CODEC[variant.codec];
  const resolution = variantBucket(variant, input);
  if (!codec || !resolution) return undefined;
  // Without an input, a variant that keeps the source frame rate is quoted at up to 30 fps.
  const fps = variant.framerate > 0 ? variant.framerate : (input?.frameRate ?? 0);
  return rateMicrosPerMinute(codec, resolution, TIER[variant.quality] ?? "standard", fpsBucket(fps));
}

/** Resolution bucket of a variant: its resolution enum, else its width/height (one side alone follows the input's aspect), else the input's frame; see resolutionBucket. Throws PriceUnknown when none is known. */
export function variantRateMicrosPerMinute(variant: VideoVariant, input: InputFacts): number {
  const rate = variantRateIfKnown(variant, input);
  if (rate === undefined)
    throw new PriceUnknown(CODEC[variant.codec] ? "the variant has no resolution and there is no input to take it from" : "the variant has no codec");
  return rate;
}

/** Like outputRateMicrosPerMinute, but undefined when any variant's price cannot be known yet. */
export function outputRateIfKnown(spec: OutputSpec, input: InputFacts): number | undefined {
  if (spec.video.length === 0) return AUDIO_ONLY_MICROS_PER_MINUTE;
  let sum = 0;
  for (const v of spec.video) {
    const rate = variantRateIfKnown(v, input);
    if (rate === undefined) return undefined;
    sum += rate;
  }
  return sum;
}

/** Rate of a whole output spec: sum of its video variants (each at its own quality tier, default standard) plus audio-only rate when it has no video. */
export function outputRateMicrosPerMinute(spec: OutputSpec, input: InputFacts): number {
  if (spec.video.length === 0) return AUDIO_ONLY_MICROS_PER_MINUTE;
  return spec.video.reduce((sum, v) => sum + variantRateMicrosPerMinute(v, input), 0);
}

/** Amount for a duration: rate × minutes, rounded half up to a whole micro-EUR. */
export function amountMicros(ratePerMinuteMicros: number, durationMs: number | bigint): number {
  if (!Number.isSafeInteger(ratePerMinuteMicros) || ratePerMinuteMicros < 0)
    throw new RangeError(`rate must be a whole, non-negative micro-EUR amount, got ${ratePerMinuteMicros}`);
  const ms = BigInt(durationMs);
  if (ms < 0n) throw new RangeError(`duration must not be negative, got ${durationMs}`);
  // BigInt keeps rate × milliseconds exact however long the input is.
  const amount = (BigInt(ratePerMinuteMicros) * ms + 30_000n) / 60_000n;
  if (amount > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError("amount exceeds the exact range of a number");
  return Number(amount);
}

/** Billed seconds of a transcription: each second begun counts. */
export function transcribedSeconds(durationMs: number): number {
  if (!Number.isFinite(durationMs) || durationMs < 0) throw new RangeError(`duration must not be negative, got ${durationMs}`);
  return Math.ceil(durationMs / 1000);
}

/** micros / 1e6 as a JSON-safe number (no float noise: e.g. 0.000123). */
export function eur(micros: number): number {
  if (!Number.isSafeInteger(micros)) throw new RangeError(`micro-EUR amounts are whole numbers, got ${micros}`);
  // One correctly rounded division gives the double nearest the exact decimal, which prints as it.
  return micros / MICROS_PER_EUR;
}

/** The README's Pricing tables, generated from the table above so the two never disagree. */
export function pricingMarkdown(): string {
  const price = (micros: number) => `€${eur(micros)}`;
  const lines = [
    `| per minute, standard tier, ≤ 30 fps | ${RESOLUTION_BUCKETS.map((r) => `≤ ${r}`).join(" | ")} |`,
    `|---|${RESOLUTION_BUCKETS.map(() => "---:").join("|")}|`,
    ...PRICED_CODECS.map((c) => `| ${c} | ${RESOLUTION_BUCKETS.map((r) => price(rateMicrosPerMinute(c, r, "standard", "30"))).join(" | ")} |`),
    "",
    `| quality tier | ${TIERS.join(" | ")} |`,
    "|---|---:|---:|---:|",
    `| × | ${TIERS.map((t) => `${TIER_PERCENT[t]}%`).join(" | ")} |`,
    "",
    "| frame rate | ≤ 30 fps | 31–60 fps | > 60 fps |",
    "|---|---:|---:|---:|",
    `| × | ${FPS_BUCKETS.map((f) => `${FPS_PERCENT[f]}%`).join(" | ")} |`,
    "",
    `Audio-only output: ${price(AUDIO_ONLY_MICROS_PER_MINUTE)} per minute. Processing fee: ${price(PROCESSING_FEE_MICROS)} per job.`,
    "",
    `Generated subtitle track (speech recognition): ${price(TRANSCRIPTION_MICROS_PER_SECOND * 60)} per minute of audio per track, billed per second begun, as a \`transcription\` fee that is due only when its output is delivered. Provided subtitle tracks are free.`,
  ];
  return lines.join("\n");
}
