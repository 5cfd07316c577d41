// Content-aware rates (an output's content_aware): before the encode, trial encodes of samples of
// the source, scored with VMAF (vmaf.ts, Netflix's libvmaf), choose each variant's CRF so that the
// variant reaches its target VMAF with as few bits as the content allows: a still scene gets a
// high CRF, a busy one a low one. Then, after the encode, the same samples of the final renditions
// are scored, so the job shows what each rung was predicted and measured to reach.
//
// Method, per variant (its size, codec, preset and options as the output will encode it):
//   samples   up to 6 windows of 2 s spread over the output's timeline (about 4% of it), cut from
//             the source once into a lossless reference, each with a second before it that is
//             encoded but not scored (x264 starting cold scores lower than inside a whole encode);
//   trials    two rounds of every variant from that reference, in one ffmpeg each: first at the
//             variant's tier CRF, then one step towards the target (the step from the first score
//             and the codec's usual VMAF-per-CRF slope, doubled above the target, 2 to 10 CRF); then, for a variant whose
//             target lies beyond its trials (VMAF saturates near 100 on still content, then falls
//             off), a third trial where the line led;
//   score     VMAF (vmaf_v0.6.1) of each trial against the reference scaled to the variant's size:
//             the quality of the encode at the size it is delivered at;
//   choice    the CRF where the line through the two trials meets the target (VMAF falls about
//             linearly with CRF over such a step, and log bitrate too), clamped to the codec's range
//             and to the trials' span widened by 4; min/max_bitrate_kbps then move it to where the
//             predicted bitrate meets the bound, and max_bitrate_kbps also caps it (VBV).
// A variant's target is content_aware.target_vmaf, else its quality tier's (TARGET_VMAF).
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { CODEC_NAMES, type VideoCodecName } from "../src/codec-rules.js";
import { EncodingMode, OutputSpecSchema, OutputType, type OutputSpec } from "../src/gen/media/v1/job_pb.js";
import { QualityTier } from "../src/gen/media/v1/preset_pb.js";
import { encodePlan, runFfmpeg } from "./executor.js";
import { parseMediaPlaylist } from "./manifests/media-playlist.js";
import { MediaError } from "./media-errors.js";
import { FFMPEG_GLOBAL, planOutput, type PlanInput } from "./plan.js";
import { probe, type ProbeResult } from "./probe.js";
import { defaultCrf, type ContentAwareRate } from "./renditions.js";
import { scoreVmaf } from "./vmaf.js";

/** Target VMAF of a quality tier, when content_aware.target_vmaf is 0. */
export const TARGET_VMAF: Record<QualityTier, number> = {
  [QualityTier.UNSPECIFIED]: 93,
  [QualityTier.ECONOMY]: 88,
  [QualityTier.STANDARD]: 93,
  [QualityTier.PREMIUM]: 96,
};

const SAMPLE_SECONDS = 2;
const MAX_SAMPLES = 6;
/** Share of the output's duration sampled. */
const SAMPLED_SHARE = 0.04;
/** Encoded before each sample window and not scored, so the encoder is warm where it is scored. */
const WARM_UP_SECONDS = 1;
/** Trial rounds at most: two, then more for a variant whose target lies beyond its trials. */
const MAX_ROUNDS = 3;
/** Samples up to this size are cut as raw frames, larger ones (long 4K sources) as lossless H.264. */
const RAW_SAMPLES_MAX_BYTES = 512 * 1024 * 1024;
/** Every other frame is scored: the trials' scores move by hundredths, their cost halves. */
const SUBSAMPLE = 2;

/** CRF range searched, the codec's usual VMAF lost per CRF step (the first step's guess), and the CRF's grain. */
const CODEC_SEARCH: Record<VideoCodecName, { min: number; max: number; slope: number; grain: number }> = {
  h264: { min: 12, max: 45, slope: 1.2, grain: 0.5 },
  h265: { min: 12, max: 45, slope: 1.2, grain: 0.5 },
  vp9: { min: 15, max: 60, slope: 0.6, grain: 1 },
  av1: { min: 15, max: 60, slope: 0.6, grain: 1 },
};

/** One trial encode of a variant over the samples. */
export interface Trial {
  crf: number;
  kbps: number;
  vmaf: number;
}

/** What the analysis chose for one video variant, and what its final encode measured. */
export interface ContentAwareRung {
  index: number;
  name: string;
  width: number;
  height: number;
  targetVmaf: number;
  crf: number;
  /** The VBV cap (max_bitrate_kbps), 0 for none. */
  maxKbps: number;
  predictedVmaf: number;
  predictedKbps: number;
  trials: Trial[];
  /** VMAF of the final encode over the same samples; absent where it could not be read (encrypted outputs, DASH). */
  measuredVmaf?: number;
}

export interface ContentAwareLadder {
  samples: { start: number; duration: number }[];
  /** The windows as cut, each with its warm-up second, and where the scored part of each lies in the cut. */
  cuts: { start: number; duration: number }[];
  scored: { start: number; duration: number }[];
  /** The source's frame rate (the samples' size as raw frames). */
  frameRate: number;
  rungs: ContentAwareRung[];
  analysisMs: number;
  /** The lossless reference of the samples, kept for measuring the final encode. */
  reference: string;
}

/** Sample windows on the output's timeline (seconds): evenly spread, 2 s each, about 4% of it, 1 to 6. */
export function sampleWindows(durationSeconds: number): { start: number; duration: number }[] {
  if (durationSeconds <= SAMPLE_SECONDS) return [{ start: 0, duration: Math.max(durationSeconds, 0.1) }];
  const count = Math.min(MAX_SAMPLES, Math.max(1, Math.round((durationSeconds * SAMPLED_SHARE) / SAMPLE_SECONDS)));
  return Array.from({ length: count }, (_, i) => {
    const centre = ((i + 0.5) * durationSeconds) / count;
    return { start: Math.round(Math.min(Math.max(0, centre - SAMPLE_SECONDS / 2), durationSeconds - SAMPLE_SECONDS) * 1000) / 1000, duration: SAMPLE_SECONDS };
  });
}

const roundTo = (n: number, grain: number) => Math.round(n / grain) * grain;
const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, n));

/**
 * The trials by CRF, their scores made non-increasing (pool adjacent violators): VMAF falls as CRF
 * rises, and a score that rises instead is measurement noise (x264 smoothing a noisy picture that
 * VMAF then prefers), pooled with its neighbours.
 */
export function monotone(trials: readonly Trial[]): Trial[] {
  const blocks: { trials: Trial[]; vmaf: number }[] = [];
  for (const t of [...trials].sort((x, y) => x.crf - y.crf)) {
    blocks.push({ trials: [t], vmaf: t.vmaf });
    while (blocks.length > 1 && blocks.at(-2)!.vmaf < blocks.at(-1)!.vmaf) {
      const last = blocks.pop()!;
      const into = blocks.at(-1)!;
      into.vmaf = (into.vmaf * into.trials.length + last.vmaf * last.trials.length) / (into.trials.length + last.trials.length);
      into.trials.push(...last.trials);
    }
  }
  return blocks.flatMap((b) => b.trials.map((t) => ({ ...t, vmaf: b.vmaf })));
}

/**
 * The CRF and predictions for a variant from its trials: on the line through the two trials that
 * bracket the target (else the two nearest it, the higher CRF first among equals), VMAF and log bitrate linear in CRF.
 * `last`: no round follows, so a flat line is not followed past the trials.
 */
export function chooseRate(
  codec: VideoCodecName,
  trials: readonly Trial[],
  target: number,
  bounds: { minKbps: number; maxKbps: number },
  last = false,
): { crf: number; maxKbps: number; predictedVmaf: number; predictedKbps: number; extrapolated: boolean } {
  const search = CODEC_SEARCH[codec];
  if (trials.length < 2) throw new MediaError("internal", "content-aware rates need two trials");
  const sorted = monotone(trials);
  const bracket = sorted.findIndex((t, i) => i + 1 < sorted.length && t.vmaf >= target && sorted[i + 1]!.vmaf <= target);
  const [a, b] =
    bracket >= 0
      ? [sorted[bracket]!, sorted[bracket + 1]!]
      : [...sorted]
          .sort((x, y) => Math.abs(x.vmaf - target) - Math.abs(y.vmaf - target) || y.crf - x.crf)
          .slice(0, 2)
          .sort((x, y) => x.crf - y.crf);
  // A flat or rising VMAF (a saturated score) is read as flat.
  const vmafSlope = Math.min(0, (b!.vmaf - a!.vmaf) / (b!.crf - a!.crf));
  // 4 CRF past the trials, 8 on a nearly flat line far above the target (a still picture, whose score falls late).
  const reach = vmafSlope > -search.slope / 5 && b!.vmaf > target + 2 ? 8 : 4;
  const lo = Math.max(search.min, a!.crf - 4);
  const hi = Math.min(search.max, b!.crf + reach);
  const rateSlope = (Math.log(b!.kbps) - Math.log(a!.kbps)) / (b!.crf - a!.crf);
  const vmafAt = (crf: number) => clamp(a!.vmaf + vmafSlope * (crf - a!.crf), 0, 100);
  const kbpsAt = (crf: number) => Math.exp(Math.log(a!.kbps) + rateSlope * (crf - a!.crf));
  // Saturated (flat): past the trials when both reach the target, for the next round to try, else the lowest.
  const unbounded = vmafSlope < 0 ? a!.crf + (target - a!.vmaf) / vmafSlope : b!.vmaf < target ? lo - 1 : hi + 1;
  // With no round left and the target not between two trials, the trial nearest it on the safe side:
  // a score measured, not a line followed past what was measured (VMAF can fall off a cliff there).
  let crf = last && bracket < 0 ? (b!.vmaf >= target ? b!.crf : a!.crf) : clamp(unbounded, lo, hi);
  // Bitrate bounds: the CRF where the predicted bitrate meets them.
  if (rateSlope < 0) {
    if (bounds.maxKbps > 0 && kbpsAt(crf) > bounds.maxKbps) crf = clamp(a!.crf + (Math.log(bounds.maxKbps) - Math.log(a!.kbps)) / rateSlope, lo, hi);
    if (bounds.minKbps > 0 && kbpsAt(crf) < bounds.minKbps) crf = clamp(a!.crf + (Math.log(bounds.minKbps) - Math.log(a!.kbps)) / rateSlope, lo, hi);
  }
  crf = clamp(roundTo(crf, search.grain), search.min, search.max);
  const predictedKbps = Math.round(bounds.maxKbps > 0 ? Math.min(kbpsAt(crf), bounds.maxKbps) : kbpsAt(crf));
  return {
    crf,
    maxKbps: bounds.maxKbps,
    predictedVmaf: Math.round(vmafAt(crf) * 100) / 100,
    predictedKbps,
    // Beyond the trials (or held back from where the line led): a third round there makes the prediction a measurement.
    extrapolated: bracket < 0 || unbounded < lo || unbounded > hi,
  };
}

/** The second trial's CRF: one step from the first towards the target. */
export function nextTrialCrf(codec: VideoCodecName, first: Trial, target: number): number {
  const search = CODEC_SEARCH[codec];
  // Above the target, twice the usual step: VMAF falls slowly from near 100, then fast.
  const guess = ((first.vmaf - target) / search.slope) * (first.vmaf > target ? 2 : 1);
  const step = Math.sign(guess || 1) * clamp(Math.abs(guess), 2, 10);
  const crf = clamp(roundTo(first.crf + step, search.grain), search.min, search.max);
  // At an end of the range, step the other way: two different CRFs make the line.
  return crf !== first.crf ? crf : clamp(first.crf - Math.sign(step) * 2, search.min, search.max);
}

export interface AnalysisOptions {
  workDir: string;
  clip?: { startSeconds: number; endSeconds: number };
  signal: AbortSignal;
  /** 0 to 1 over the analysis. */
  onProgress?: (fraction: number) => void;
}

/** Bytes of the samples as raw frames of this size: 4:2:0, two bytes a sample above 8 bits. */
function rawSize(
  v: { width: number; height: number; frameRate: number; pixelFormat?: string } | ProbeResult,
  windows: readonly { duration: number }[],
): number {
  const video = "format" in v ? v.video : v;
  if (!video) return Infinity;
  const bytesPerSample = /1[026]/.test(video.pixelFormat ?? "") ? 2 : 1;
  return windows.reduce((sum, w) => sum + w.duration, 0) * (video.frameRate || 30) * video.width * video.height * 1.5 * bytesPerSample;
}

/** Cuts the windows from the source into one lossless file (timeline: the windows one after another). */
async function cutSamples(
  input: string,
  windows: readonly { start: number; duration: number }[],
  offset: number,
  to: string,
  signal: AbortSignal,
  rawBytes: number,
): Promise<void> {
  const sources = await Promise.all(windows.map((w, i) => windowSource(input, offset + w.start, w.duration, `${to}.${i}`)));
  try {
    // A file is seeked (ffmpeg decodes from the key frame before); segments joined from a playlist are
    // decoded from their first frame and trimmed, since seeking a ts segment may start mid-GOP.
    const inputs = sources.flatMap((src, i) =>
      src.joined ? ["-i", src.file] : ["-ss", src.start.toFixed(3), "-t", windows[i]!.duration.toFixed(3), "-i", src.file],
    );
    const trims = sources.map((src, i) =>
      src.joined
        ? `[${i}:v:0]setpts=PTS-STARTPTS,trim=start=${src.start.toFixed(3)}:duration=${windows[i]!.duration.toFixed(3)},setpts=PTS-STARTPTS[w${i}]`
        : `[${i}:v:0]setpts=PTS-STARTPTS[w${i}]`,
    );
    const graph = `${trims.join(";")};${windows.map((_, i) => `[w${i}]`).join("")}concat=n=${windows.length}:v=1:a=0[v]`;
    // Raw frames where they fit (nothing to decode in each trial and score), else lossless H.264.
    const codec =
      rawBytes <= RAW_SAMPLES_MAX_BYTES ? ["-c:v", "rawvideo", "-f", "nut"] : ["-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-f", "matroska"];
    await runFfmpeg([...FFMPEG_GLOBAL, ...inputs, "-filter_complex", graph, "-map", "[v]", ...codec, "-an", to], {
      signal,
      durationMs: windows.reduce((sum, w) => sum + w.duration, 0) * 1000,
    });
  } finally {
    await Promise.all(sources.filter((src) => src.file !== input).map((src) => rm(src.file, { force: true })));
  }
}

/**
 * Where to read a window from: the file itself, or for an HLS media playlist the segments that hold
 * the window joined into one file (after the init segment), since ffmpeg 5.1 cannot seek an fMP4
 * playlist. Byte-range playlists are read from their start.
 */
async function windowSource(file: string, start: number, duration: number, scratch: string): Promise<{ file: string; start: number; joined?: boolean }> {
  if (!file.endsWith(".m3u8")) return { file, start };
  const media = parseMediaPlaylist(await readFile(file, "utf8"));
  if (media.segments.some((seg) => seg.bytes !== undefined)) return { file, start };
  const base = path.dirname(file);
  let at = 0;
  const parts: string[] = media.init ? [path.join(base, media.init)] : [];
  let first: number | undefined;
  for (const seg of media.segments) {
    // The segment before the window's too: a window may begin before the first key frame of its segment's timestamps.
    if (at + seg.duration > start - 0.5 && at < start + duration + 0.5) {
      first ??= at;
      parts.push(path.join(base, seg.uri));
    }
    at += seg.duration;
  }
  if (first === undefined) return { file, start };
  await writeFile(scratch, Buffer.concat(await Promise.all(parts.map((part) => readFile(part)))));
  return { file: scratch, start: start - first, joined: true };
}

/** The spec of one trial round: those of the output's variants, as a file each (their rates come as PlanOptions.contentAware). */
function trialSpec(spec: OutputSpec, variants: readonly number[]): OutputSpec {
  return create(OutputSpecSchema, { type: OutputType.MKV, video: variants.map((i) => spec.video[i]!), disableAudio: true, encodingMode: EncodingMode.FIXED });
}

/**
 * Runs the analysis of one output: its samples, two trial rounds, and each variant's rate. Its
 * rates go to planOutput (PlanOptions.contentAware).
 */
export async function analyzeContent(spec: OutputSpec, input: PlanInput, opts: AnalysisOptions): Promise<ContentAwareLadder> {
  const started = Date.now();
  const ca = spec.contentAware;
  if (!ca?.enabled) throw new MediaError("internal", "content-aware analysis of an output without content_aware");
  const clipStart = opts.clip?.startSeconds ?? 0;
  const total = input.probe.durationMs / 1000;
  const duration = Math.max(0, (opts.clip ? Math.min(opts.clip.endSeconds, total) : total) - clipStart);
  const samples = sampleWindows(duration);
  // Each window is cut with a second before it, encoded but not scored: x264 starting cold on a
  // short clip scored up to 1.7 lower than the same frames inside a whole encode.
  const cuts = samples.map((w) => {
    const warm = Math.min(WARM_UP_SECONDS, w.start);
    return { start: w.start - warm, duration: w.duration + warm };
  });
  let at = 0;
  const scored = samples.map((w, i) => {
    const span = { start: at + (cuts[i]!.duration - w.duration), duration: w.duration };
    at += cuts[i]!.duration;
    return span;
  });
  await mkdir(opts.workDir, { recursive: true });
  const reference = path.join(opts.workDir, "reference.samples");
  await cutSamples(input.file, cuts, clipStart, reference, opts.signal, rawSize(input.probe, cuts));
  const referenceProbe = await probe(reference, opts.signal);
  const seconds = referenceProbe.durationMs / 1000;
  const codecs = spec.video.map((v) => CODEC_NAMES[v.codec as keyof typeof CODEC_NAMES]!);
  const targets = spec.video.map((v) => ca.targetVmaf || TARGET_VMAF[v.quality] || 93);
  const steps = 2 * (1 + spec.video.length);
  let done = 0;
  // Two rounds, perhaps a third: the last one's steps past 99% are not shown.
  const tick = () => opts.onProgress?.(Math.min(0.99, ++done / steps));

  /** One round: every variant encoded at its CRF, then each scored at its size. */
  /** One round: the variants given a CRF encoded at it (one ffmpeg), then each scored at its size. */
  const round = async (
    n: number,
    crfs: readonly (number | undefined)[],
  ): Promise<{ trials: (Trial | undefined)[]; sizes: { name: string; width: number; height: number }[] }> => {
    const dir = path.join(opts.workDir, `round_${n}`);
    const chosen = crfs.flatMap((crf, i) => (crf === undefined ? [] : [{ crf, i }]));
    const plan = planOutput(
      trialSpec(
        spec,
        chosen.map((c) => c.i),
      ),
      { file: reference, probe: referenceProbe },
      { outputId: `trial_${n}`, workDir: dir, contentAware: chosen.map(({ crf }) => ({ crf })) },
    );
    await encodePlan(plan, { signal: opts.signal });
    tick();
    const trials: (Trial | undefined)[] = crfs.map(() => undefined);
    const sizes: { name: string; width: number; height: number }[] = [];
    // Scored side by side, one thread each: much of a score is its decode and scaling, which run on one.
    await Promise.all(
      plan.renditions!.map(async (r, k) => {
        const file = path.join(dir, r.file);
        const score = await scoreVmaf({
          reference,
          distorted: file,
          width: r.width,
          height: r.height,
          subsample: SUBSAMPLE,
          threads: 1,
          select: scored,
          signal: opts.signal,
        });
        trials[chosen[k]!.i] = {
          crf: chosen[k]!.crf,
          kbps: Math.max(1, Math.round(((await stat(file)).size * 8) / 1000 / Math.max(seconds, 0.001))),
          vmaf: score.mean,
        };
        sizes[chosen[k]!.i] = { name: r.name, width: r.width, height: r.height };
        tick();
      }),
    );
    await rm(dir, { recursive: true, force: true });
    return { trials, sizes };
  };

  const bounds = { minKbps: ca.minBitrateKbps, maxKbps: ca.maxBitrateKbps };
  const first = await round(
    0,
    spec.video.map((v) => defaultCrf(v)),
  );
  const second = await round(
    1,
    first.trials.map((t, i) => nextTrialCrf(codecs[i]!, t!, targets[i]!)),
  );
  const trials = spec.video.map((_, i) => [first.trials[i]!, second.trials[i]!]);
  let chosen = trials.map((t, i) => chooseRate(codecs[i]!, t, targets[i]!, bounds));
  // A target beyond a variant's trials (a score saturated near 100, or far from the tier's CRF):
  // another trial where the line led, up to MAX_ROUNDS, for those variants only.
  for (let n = 2; n < MAX_ROUNDS; n++) {
    const next = chosen.map((c, i) => (c.extrapolated && !trials[i]!.some((t) => t.crf === c.crf) ? c.crf : undefined));
    if (next.every((crf) => crf === undefined)) break;
    const more = await round(n, next);
    more.trials.forEach((t, i) => t && trials[i]!.push(t));
    chosen = trials.map((t, i) => chooseRate(codecs[i]!, t, targets[i]!, bounds));
  }
  chosen = trials.map((t, i) => chooseRate(codecs[i]!, t, targets[i]!, bounds, true));
  const rungs = spec.video.map((__, i): ContentAwareRung => {
    const { extrapolated: _, ...rate } = chosen[i]!;
    return { index: i, ...first.sizes[i]!, targetVmaf: targets[i]!, ...rate, trials: trials[i]! };
  });
  return { samples, cuts, scored, frameRate: input.probe.video?.frameRate || 30, rungs, analysisMs: Date.now() - started, reference };
}

/** The rates planOutput takes, by variant index. */
export const ratesOf = (ladder: ContentAwareLadder): ContentAwareRate[] =>
  ladder.rungs.map((r) => ({ crf: r.crf, ...(r.maxKbps > 0 ? { maxKbps: r.maxKbps } : {}) }));

/**
 * Scores the final renditions over the analysis's samples (cut the same way from each rung's main
 * file or media playlist) and records each as the rung's measuredVmaf.
 */
export async function measureRungs(
  ladder: ContentAwareLadder,
  files: readonly { file: string; width: number; height: number }[],
  workDir: string,
  signal: AbortSignal,
): Promise<void> {
  for (const rung of ladder.rungs) {
    const r = files[rung.index];
    if (!r) continue;
    const cut = path.join(workDir, `final_${rung.index}.samples`);
    await cutSamples(r.file, ladder.cuts, 0, cut, signal, rawSize({ width: r.width, height: r.height, frameRate: ladder.frameRate }, ladder.cuts));
    const score = await scoreVmaf({
      reference: ladder.reference,
      distorted: cut,
      width: r.width,
      height: r.height,
      subsample: SUBSAMPLE,
      select: ladder.scored,
      signal,
    });
    rung.measuredVmaf = Math.round(score.mean * 100) / 100;
    await rm(cut, { force: true });
  }
}
