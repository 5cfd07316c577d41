// The pricing table: whole micro-EUR everywhere, half-up rounding, resolution and frame-rate
// buckets, and the README showing exactly what the code charges.
import { readFileSync } from "node:fs";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { OutputSpecSchema, VideoVariantSchema } from "./gen/media/v1/job_pb.js";
import { AudioCodec, QualityTier, VideoCodec } from "./gen/media/v1/preset_pb.js";
import {
  amountMicros,
  AUDIO_ONLY_MICROS_PER_MINUTE,
  CURRENCY,
  eur,
  fpsBucket,
  MICROS_PER_EUR,
  outputRateIfKnown,
  outputRateMicrosPerMinute,
  PriceUnknown,
  pricingMarkdown,
  pricingTable,
  PROCESSING_FEE_MICROS,
  rateMicrosPerMinute,
  resolutionBucket,
  transcribedSeconds,
  variantRateIfKnown,
  variantRateMicrosPerMinute,
} from "./pricing.js";

const variant = (init: Parameters<typeof create<typeof VideoVariantSchema>>[1]) => create(VideoVariantSchema, init);
const fhd30 = { width: 1920, height: 1080, frameRate: 30 };

describe("the table", () => {
  it("has one whole, positive micro-EUR rate for every codec, resolution, tier and frame rate", () => {
    const rows = pricingTable();
    expect(rows).toHaveLength(4 * 6 * 3 * 3);
    for (const r of rows) expect(Number.isSafeInteger(r.microsPerMinute) && r.microsPerMinute > 0).toBe(true);
    expect(new Set(rows.map((r) => `${r.codec}${r.resolution}${r.tier}${r.fps}`)).size).toBe(rows.length);
  });

  it("charges the documented H.264 anchors and the fee", () => {
    expect(["480p", "720p", "1080p", "1440p", "2160p", "4320p"].map((r) => rateMicrosPerMinute("h264", r as never, "standard", "30"))).toEqual([
      4_000, 6_000, 9_000, 18_000, 30_000, 90_000,
    ]);
    expect(PROCESSING_FEE_MICROS).toBe(10_000);
    expect(AUDIO_ONLY_MICROS_PER_MINUTE).toBe(1_000);
  });

  it("rises with resolution, codec effort, tier and frame rate", () => {
    for (const r of pricingTable()) {
      expect(rateMicrosPerMinute("h264", r.resolution, r.tier, r.fps)).toBeLessThan(rateMicrosPerMinute("vp9", r.resolution, r.tier, r.fps));
      expect(rateMicrosPerMinute("vp9", r.resolution, r.tier, r.fps)).toBeLessThan(rateMicrosPerMinute("h265", r.resolution, r.tier, r.fps));
      expect(rateMicrosPerMinute("h265", r.resolution, r.tier, r.fps)).toBeLessThan(rateMicrosPerMinute("av1", r.resolution, r.tier, r.fps));
      expect(rateMicrosPerMinute(r.codec, r.resolution, "economy", r.fps)).toBeLessThan(rateMicrosPerMinute(r.codec, r.resolution, "premium", r.fps));
      expect(rateMicrosPerMinute(r.codec, r.resolution, r.tier, "30")).toBeLessThan(rateMicrosPerMinute(r.codec, r.resolution, r.tier, "60"));
      expect(rateMicrosPerMinute(r.codec, r.resolution, r.tier, "60")).toBeLessThan(rateMicrosPerMinute(r.codec, r.resolution, r.tier, "240"));
    }
    expect(rateMicrosPerMinute("h264", "720p", "economy", "60")).toBe(6_750); // 6000 × 75% × 150%
    expect(rateMicrosPerMinute("av1", "4320p", "premium", "240")).toBe(1_080_000);
  });

  it("is what the README's Pricing section shows", () => {
    const readme = readFileSync(path.join(import.meta.dirname, "..", "README.md"), "utf8");
    expect(readme).toContain(pricingMarkdown());
    // Whole lines from first to last, so a table cut short is not a smaller match.
    const lines = pricingMarkdown().split("\n");
    expect(lines[0]).toBe("| per minute, standard tier, ≤ 30 fps | ≤ 480p | ≤ 720p | ≤ 1080p | ≤ 1440p | ≤ 2160p | ≤ 4320p |");
    expect(lines.at(-3)).toBe("Audio-only output: €0.001 per minute. Processing fee: €0.01 per job.");
    expect(lines.at(-1)).toMatch(/^Generated subtitle track \(speech recognition\): €0\.003 per minute of audio per track, billed per second begun/);
    expect(lines).toHaveLength(18);
  });

  it("is in EUR, a million micro-EUR each", () => {
    expect(CURRENCY).toBe("EUR");
    expect(MICROS_PER_EUR).toBe(1_000_000);
  });
});

describe("transcribed seconds", () => {
  it("counts each second begun, from 0, and refuses a negative or unknown duration", () => {
    expect(transcribedSeconds(0)).toBe(0);
    expect(transcribedSeconds(1)).toBe(1);
    expect(transcribedSeconds(1000)).toBe(1);
    expect(transcribedSeconds(1001)).toBe(2);
    expect(() => transcribedSeconds(-1)).toThrow(new RangeError("duration must not be negative, got -1"));
    expect(() => transcribedSeconds(Number.NaN)).toThrow(new RangeError("duration must not be negative, got NaN"));
    expect(() => transcribedSeconds(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});

describe("buckets", () => {
  it("puts a frame in the smallest bucket both its sides fit, portrait or landscape", () => {
    expect(resolutionBucket(640, 360)).toBe("480p");
    expect(resolutionBucket(854, 480)).toBe("480p");
    expect(resolutionBucket(720, 576)).toBe("480p");
    expect(resolutionBucket(1280, 720)).toBe("720p");
    expect(resolutionBucket(1920, 1080)).toBe("1080p");
    expect(resolutionBucket(1080, 1920)).toBe("1080p");
    expect(resolutionBucket(1440, 1080)).toBe("1080p");
    expect(resolutionBucket(2048, 1080)).toBe("1440p");
    expect(resolutionBucket(4096, 2160)).toBe("2160p");
    expect(resolutionBucket(3840, 2160)).toBe("2160p");
    expect(resolutionBucket(7680, 4320)).toBe("4320p");
  });

  it("counts 29.97 and 30 fps as up to 30, 59.94 and 60 as up to 60", () => {
    expect([0, 24, 29.97, 30, 30.01, 59.94, 60, 60.5, 120, 240].map(fpsBucket)).toEqual(["30", "30", "30", "30", "60", "60", "60", "240", "240", "240"]);
  });

  it("prices a variant by its resolution, else its dimensions, else the input", () => {
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.H264, resolution: "720p" }), undefined)).toBe(6_000);
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.H264, width: 1080, height: 1920 }), undefined)).toBe(9_000);
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.H264, height: 720 }), undefined)).toBe(6_000);
    // Height alone with a portrait input: the width follows the input's aspect.
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.H264, height: 1920 }), { width: 1080, height: 1920, frameRate: 30 })).toBe(9_000);
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.H264 }), { width: 3840, height: 2160, frameRate: 25 })).toBe(30_000);
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.H264, resolution: "480p" }), { width: 3840, height: 2160, frameRate: 25 })).toBe(4_000);
  });

  it("takes the input's frame rate when the variant keeps it, and the variant's own otherwise", () => {
    const keep = variant({ codec: VideoCodec.H265, resolution: "1080p" });
    expect(variantRateMicrosPerMinute(keep, { ...fhd30, frameRate: 59.94 })).toBe(27_000);
    expect(variantRateMicrosPerMinute(keep, undefined)).toBe(18_000); // quoted at up to 30 fps
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.H265, resolution: "1080p", framerate: 30 }), { ...fhd30, frameRate: 60 })).toBe(18_000);
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.H265, resolution: "1080p", framerate: 120 }), fhd30)).toBe(36_000);
  });

  it("applies each variant's quality tier, standard by default", () => {
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.VP9, resolution: "1080p", quality: QualityTier.ECONOMY }), fhd30)).toBe(10_800);
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.VP9, resolution: "1080p", quality: QualityTier.PREMIUM }), fhd30)).toBe(21_600);
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.VP9, resolution: "1080p" }), fhd30)).toBe(14_400);
  });

  it("knows no price without a size to go by or without a codec", () => {
    expect(variantRateIfKnown(variant({ codec: VideoCodec.AV1 }), undefined)).toBeUndefined();
    expect(() => variantRateMicrosPerMinute(variant({ codec: VideoCodec.AV1 }), undefined)).toThrow(PriceUnknown);
    expect(() => variantRateMicrosPerMinute(variant({ resolution: "720p" }), fhd30)).toThrow(PriceUnknown);
  });
});

describe("outputs", () => {
  it("sums the variants of a ladder and charges audio-only outputs the audio rate", () => {
    const ladder = create(OutputSpecSchema, {
      video: [
        { codec: VideoCodec.H264, resolution: "1080p" },
        { codec: VideoCodec.H264, resolution: "720p", quality: QualityTier.PREMIUM },
        { codec: VideoCodec.H264, width: 640, height: 360 },
      ],
    });
    expect(outputRateMicrosPerMinute(ladder, fhd30)).toBe(9_000 + 9_000 + 4_000);
    const audio = create(OutputSpecSchema, { audio: [{ codec: AudioCodec.AAC, bitrateKbps: 128 }] });
    expect(outputRateMicrosPerMinute(audio, undefined)).toBe(AUDIO_ONLY_MICROS_PER_MINUTE);
    expect(outputRateIfKnown(create(OutputSpecSchema, { video: [{ codec: VideoCodec.H264 }] }), undefined)).toBeUndefined();
  });
});

describe("amounts", () => {
  it("is rate × minutes rounded half up to a whole micro-EUR", () => {
    expect(amountMicros(9_000, 60_000)).toBe(9_000);
    expect(amountMicros(9_000, 90_000)).toBe(13_500);
    expect(amountMicros(1, 30_000)).toBe(1); // exactly half: up
    expect(amountMicros(1, 29_999)).toBe(0);
    expect(amountMicros(6_750, 1)).toBe(0); // 0.1125 micro-EUR
    expect(amountMicros(6_000, 5)).toBe(1); // 0.5 exactly
    expect(amountMicros(4_000, 3_723_456)).toBe(248_230); // 248230.4
    expect(amountMicros(0, 1_000_000)).toBe(0);
    expect(amountMicros(1_080_000, 10n * 3_600_000n)).toBe(648_000_000);
  });

  it("stays exact where floating point would not", () => {
    // 0.3 minutes at 7 micro-EUR a minute is 2.1 exactly, so 2, whatever 0.3 is in binary.
    expect(amountMicros(7, 18_000)).toBe(2);
    expect(amountMicros(Number.MAX_SAFE_INTEGER, 60_000)).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => amountMicros(1.5, 60_000)).toThrow(RangeError);
    expect(() => amountMicros(1, -1)).toThrow(RangeError);
  });

  it("writes EUR as the exact decimal of the micro-EUR amount", () => {
    expect(eur(123)).toBe(0.000123);
    expect(String(eur(123))).toBe("0.000123");
    expect(eur(10_000)).toBe(0.01);
    expect(eur(-4_500)).toBe(-0.0045);
    for (let m = 0; m < 200_000; m += 37) {
      const text = `${Math.floor(m / 1e6)}.${String(m % 1e6).padStart(6, "0")}`.replace(/\.?0+$/, "") || "0";
      expect(String(eur(m))).toBe(text);
    }
    expect(String(eur(123_456_789_012))).toBe("123456.789012");
    expect(() => eur(0.5)).toThrow(RangeError);
  });

  it("keeps line sums exact: summing micros then converting equals the converted total", () => {
    const lines = [amountMicros(9_000, 61_234), amountMicros(6_000, 61_234), PROCESSING_FEE_MICROS];
    const total = lines.reduce((a, b) => a + b, 0);
    expect(eur(total)).toBe(Number(`0.${String(total).padStart(6, "0")}`));
  });
});

describe("bucket edges", () => {
  it("holds a frame in a bucket up to its long-side and short-side limits, and no further", () => {
    // Long side limits 1024, 1280, 1920, 2560, 4096 with a short side that fits the smallest bucket.
    expect([1024, 1025, 1280, 1281, 1920, 1921, 2560, 2561, 4096, 4097].map((w) => resolutionBucket(w, 400))).toEqual([
      "480p",
      "720p",
      "720p",
      "1080p",
      "1080p",
      "1440p",
      "1440p",
      "2160p",
      "2160p",
      "4320p",
    ]);
    // Short side limits 576, 720, 1080, 1440, 2160 on square frames, where the short side decides.
    expect([576, 577, 720, 721, 1080, 1081, 1440, 1441, 2160, 2161].map((s) => resolutionBucket(s, s))).toEqual([
      "480p",
      "720p",
      "720p",
      "1080p",
      "1080p",
      "1440p",
      "1440p",
      "2160p",
      "2160p",
      "4320p",
    ]);
  });

  it("prices a square or portrait frame by its short side too: 1440x1440 is 1440p, not 1080p", () => {
    expect(resolutionBucket(1440, 1440)).toBe("1440p");
    expect(resolutionBucket(1080, 1080)).toBe("1080p");
    expect(resolutionBucket(1080, 1440)).toBe("1080p");
    expect(resolutionBucket(1440, 1920)).toBe("1440p");
    expect(resolutionBucket(2160, 3840)).toBe("2160p");
    expect(resolutionBucket(3000, 3000)).toBe("4320p");
    expect(resolutionBucket(4096, 4096)).toBe("4320p");
    expect(variantRateMicrosPerMinute(variant({ codec: VideoCodec.H264, width: 1440, height: 1440 }), undefined)).toBe(18_000);
  });

  it("counts a side of 0 as unknown: the other side decides", () => {
    expect(resolutionBucket(1920, 0)).toBe("1080p");
    expect(resolutionBucket(0, 1280)).toBe("720p");
    expect(resolutionBucket(0, 0)).toBe("480p");
  });
});

describe("a variant with one side", () => {
  const hd = { width: 1920, height: 1080, frameRate: 30 };
  const portrait = { width: 1080, height: 1920, frameRate: 30 };
  const bucketOf = (init: { width?: number; height?: number }, input: { width: number; height: number; frameRate: number } | undefined) =>
    variantRateMicrosPerMinute(variant({ codec: VideoCodec.H264, ...init }), input);

  it("given a height, takes its width from the input's aspect: a 1080-high variant of a 16:9 input is 1080p", () => {
    expect(bucketOf({ height: 1080 }, hd)).toBe(9_000);
    expect(bucketOf({ height: 720 }, hd)).toBe(6_000);
    expect(bucketOf({ height: 1440 }, hd)).toBe(18_000); // 2560x1440
    expect(bucketOf({ height: 1920 }, portrait)).toBe(9_000); // 1080x1920
    expect(bucketOf({ height: 1080 }, { width: 1440, height: 1080, frameRate: 30 })).toBe(9_000); // 1440x1080
    expect(bucketOf({ height: 1080 }, { width: 4096, height: 1080, frameRate: 30 })).toBe(30_000); // 4096x1080: 2160p by its long side
  });

  it("given a width, takes its height from the input's aspect", () => {
    expect(bucketOf({ width: 1920 }, hd)).toBe(9_000);
    expect(bucketOf({ width: 1080 }, portrait)).toBe(9_000); // 1080x1920
    expect(bucketOf({ width: 1440 }, { width: 1440, height: 1440, frameRate: 30 })).toBe(18_000); // 1440x1440
    expect(bucketOf({ width: 1280 }, { width: 1280, height: 2560, frameRate: 30 })).toBe(18_000); // 1280x2560
  });

  it("without an input size, a height is a landscape short side and a width a long side", () => {
    for (const input of [
      undefined,
      { width: 0, height: 0, frameRate: 30 },
      { width: 1920, height: 0, frameRate: 30 },
      { width: 0, height: 1080, frameRate: 30 },
    ]) {
      expect(bucketOf({ height: 1080 }, input), JSON.stringify(input)).toBe(9_000);
      expect(bucketOf({ height: 2400 }, input), JSON.stringify(input)).toBe(90_000);
      expect(bucketOf({ width: 1280 }, input), JSON.stringify(input)).toBe(6_000);
      expect(bucketOf({ width: 1921 }, input), JSON.stringify(input)).toBe(18_000);
    }
  });

  it("with an input but no size of its own, is the input's frame", () => {
    expect(bucketOf({}, portrait)).toBe(9_000);
    expect(bucketOf({}, { width: 1440, height: 1440, frameRate: 30 })).toBe(18_000);
  });
});

describe("codecs, tiers and unknown prices", () => {
  it("maps every priced codec and every tier, standard for an unknown tier", () => {
    const rate = (codec: VideoCodec, quality?: QualityTier) =>
      variantRateMicrosPerMinute(variant({ codec, resolution: "720p", ...(quality !== undefined ? { quality } : {}) }), undefined);
    expect([VideoCodec.H264, VideoCodec.H265, VideoCodec.VP9, VideoCodec.AV1].map((c) => rate(c))).toEqual([6_000, 12_000, 9_600, 24_000]);
    expect([QualityTier.UNSPECIFIED, QualityTier.ECONOMY, QualityTier.STANDARD, QualityTier.PREMIUM].map((q) => rate(VideoCodec.H264, q))).toEqual([
      6_000, 4_500, 6_000, 9_000,
    ]);
    expect(rate(VideoCodec.H264, 99 as QualityTier)).toBe(6_000);
  });

  it("says why a price is unknown, and that retrying will not help", () => {
    expect(() => variantRateMicrosPerMinute(variant({ codec: VideoCodec.AV1 }), undefined)).toThrow(
      "price unknown: the variant has no resolution and there is no input to take it from",
    );
    expect(() => variantRateMicrosPerMinute(variant({ resolution: "720p" }), fhd30)).toThrow("price unknown: the variant has no codec");
    const e = new PriceUnknown("why");
    expect([e.name, e.message, e.retryable]).toEqual(["PriceUnknown", "price unknown: why", false]);
    expect(variantRateIfKnown(variant({ resolution: "720p" }), fhd30)).toBeUndefined();
    expect(variantRateIfKnown(variant({ codec: VideoCodec.H264, resolution: "720p" }), undefined)).toBe(6_000);
  });

  it("an output is unknown if any of its variants is, and sums them otherwise", () => {
    const known = { codec: VideoCodec.H264, resolution: "720p" };
    const unknown = { codec: VideoCodec.H264 };
    expect(outputRateIfKnown(create(OutputSpecSchema, { video: [known, unknown] }), undefined)).toBeUndefined();
    expect(outputRateIfKnown(create(OutputSpecSchema, { video: [unknown, known] }), undefined)).toBeUndefined();
    expect(outputRateIfKnown(create(OutputSpecSchema, { video: [known, known] }), undefined)).toBe(12_000);
    expect(outputRateIfKnown(create(OutputSpecSchema, { audio: [{ codec: AudioCodec.AAC, bitrateKbps: 96 }] }), undefined)).toBe(AUDIO_ONLY_MICROS_PER_MINUTE);
    expect(() => outputRateMicrosPerMinute(create(OutputSpecSchema, { video: [known, unknown] }), undefined)).toThrow(PriceUnknown);
  });
});

describe("amount limits", () => {
  it("refuses rates that are not whole and non-negative, negative durations and amounts past exact numbers, saying which", () => {
    expect(amountMicros(9_000, 0)).toBe(0);
    expect(amountMicros(9_000, 0n)).toBe(0);
    expect(() => amountMicros(-1, 60_000)).toThrow("rate must be a whole, non-negative micro-EUR amount, got -1");
    expect(() => amountMicros(Number.MAX_SAFE_INTEGER + 1, 60_000)).toThrow(RangeError);
    expect(() => amountMicros(1, -1)).toThrow("duration must not be negative, got -1");
    expect(() => amountMicros(1, -1n)).toThrow("duration must not be negative, got -1");
    expect(() => amountMicros(Number.MAX_SAFE_INTEGER, 120_000)).toThrow("amount exceeds the exact range of a number");
    expect(() => eur(Number.MAX_SAFE_INTEGER + 1)).toThrow(`micro-EUR amounts are whole numbers, got ${Number.MAX_SAFE_INTEGER + 1}`);
  });
});
