// Content-aware rates on real encodes (encoder-node/content-aware.ts): a talking-head-like source
// and a high-motion one (test/sources.ts), each as a two-rung HLS ladder planned fixed (the tiers'
// CRF) and content-aware (trial encodes scored with libvmaf). Held to the marks: the
// talking head's content-aware ladder takes at least 30% fewer bits than the fixed one at the same
// sizes; every content-aware rung's VMAF over the whole output (not only the samples) is within 2
// of its target; the high-motion source gets more bits than the still one, rung by rung.
import { create } from "@bufbuild/protobuf";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  analyzeContent,
  chooseRate,
  measureRungs,
  monotone,
  nextTrialCrf,
  ratesOf,
  sampleWindows,
  type ContentAwareLadder,
} from "../../encoder-node/content-aware.js";
import { runPlan } from "../../encoder-node/ffmpeg.js";
import { planOutput, type OutputPlan } from "../../encoder-node/plan.js";
import { probe } from "../../encoder-node/probe.js";
import { scoreVmaf } from "../../encoder-node/vmaf.js";
import { OutputSpecSchema, OutputType, type OutputSpec } from "../../src/gen/media/v1/job_pb.js";
import { SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { makeSource, type SourceKind } from "../sources.js";

const root = mkdtempSync(path.join(tmpdir(), "content-aware-"));
const signal = new AbortController().signal;
afterAll(() => rmSync(root, { recursive: true, force: true }));

const spec = (contentAware: boolean): OutputSpec =>
  create(OutputSpecSchema, {
    type: OutputType.HLS,
    hls: { segmentFormat: SegmentFormat.FMP4, segmentDurationSeconds: 2 },
    video: [
      { codec: VideoCodec.H264, width: 640, height: 360 },
      { codec: VideoCodec.H264, width: 384, height: 216 },
    ],
    disableAudio: true,
    ...(contentAware ? { contentAware: { enabled: true } } : {}),
  });

/** Bytes of each rendition's folder (its init and segments). */
const bytesOf = (plan: OutputPlan) =>
  plan.renditions!.map((r) =>
    readdirSync(path.join(plan.dir, path.dirname(r.file))).reduce((sum, f) => sum + statSync(path.join(plan.dir, path.dirname(r.file), f)).size, 0),
  );

interface Encoded {
  ladder: ContentAwareLadder;
  fixed: number[];
  aware: number[];
  /** Each content-aware rung's VMAF over the whole output, at its size. */
  vmaf: number[];
}

async function encodeBoth(kind: SourceKind): Promise<Encoded> {
  const file = await makeSource(path.join(root, `${kind}.mp4`), kind, 640, 360, 6);
  const input = { file, probe: await probe(file) };
  const ladder = await analyzeContent(spec(true), input, { workDir: path.join(root, `${kind}-analysis`), signal });
  const fixed = planOutput(spec(false), input, { outputId: "fixed", workDir: path.join(root, `${kind}-fixed`) });
  const aware = planOutput(spec(true), input, { outputId: "aware", workDir: path.join(root, `${kind}-aware`), contentAware: ratesOf(ladder) });
  await runPlan(fixed, { signal });
  await runPlan(aware, { signal });
  await measureRungs(
    ladder,
    aware.renditions!.map((r) => ({ file: path.join(aware.dir, r.file), width: r.width, height: r.height })),
    path.join(root, `${kind}-analysis`),
    signal,
  );
  const vmaf: number[] = [];
  for (const r of aware.renditions!)
    vmaf.push((await scoreVmaf({ reference: file, distorted: path.join(aware.dir, r.file), width: r.width, height: r.height, subsample: 2, signal })).mean);
  return { ladder, fixed: bytesOf(fixed), aware: bytesOf(aware), vmaf };
}

describe("content-aware rates", { timeout: 240_000 }, () => {
  let talking: Encoded;
  let motion: Encoded;

  it("a talking head: at least 30% fewer bits than the fixed ladder, every rung within 2 VMAF of its target", async () => {
    talking = await encodeBoth("talking");
    const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    expect(total(talking.aware) / total(talking.fixed), JSON.stringify(talking)).toBeLessThanOrEqual(0.7);
    talking.ladder.rungs.forEach((r, i) => {
      expect(Math.abs(talking.vmaf[i]! - r.targetVmaf), `rung ${r.name}: ${JSON.stringify(r)}, whole ${talking.vmaf[i]}`).toBeLessThanOrEqual(2);
      // The samples of the final encode tell the same.
      expect(Math.abs(r.measuredVmaf! - r.predictedVmaf), JSON.stringify(r)).toBeLessThan(2);
    });
  });

  it("high motion: more bits than the talking head on every rung, every rung within 2 VMAF of its target", async () => {
    motion = await encodeBoth("motion");
    motion.ladder.rungs.forEach((r, i) => {
      expect(Math.abs(motion.vmaf[i]! - r.targetVmaf), `rung ${r.name}: ${JSON.stringify(r)}, whole ${motion.vmaf[i]}`).toBeLessThanOrEqual(2);
      expect(motion.aware[i]!).toBeGreaterThan(talking.aware[i]!);
      expect(r.crf).toBeLessThan(talking.ladder.rungs[i]!.crf);
    });
  });
});

describe("the choice from trials", () => {
  const bounds = { minKbps: 0, maxKbps: 0 };
  it("interpolates between the trials that bracket the target, VMAF and log bitrate linear in CRF", () => {
    const c = chooseRate(
      "h264",
      [
        { crf: 23, kbps: 1000, vmaf: 95 },
        { crf: 27, kbps: 500, vmaf: 91 },
      ],
      93,
      bounds,
    );
    expect(c).toEqual({ crf: 25, maxKbps: 0, predictedVmaf: 93, predictedKbps: 707, extrapolated: false });
  });

  it("extrapolates at most 4 CRF past the trials (8 on a flat line far above the target), and says so; a saturated score goes as far as allowed", () => {
    const far = chooseRate(
      "h264",
      [
        { crf: 23, kbps: 1000, vmaf: 99 },
        { crf: 25, kbps: 800, vmaf: 98.8 },
      ],
      93,
      bounds,
    );
    expect([far.crf, far.extrapolated]).toEqual([33, true]);
    // Close to the target, the usual 4.
    const near = chooseRate(
      "h264",
      [
        { crf: 23, kbps: 1000, vmaf: 94.5 },
        { crf: 25, kbps: 800, vmaf: 94.4 },
      ],
      93,
      bounds,
    );
    expect([near.crf, near.extrapolated]).toEqual([29, true]);
    const flat = chooseRate(
      "vp9",
      [
        { crf: 32, kbps: 300, vmaf: 97 },
        { crf: 36, kbps: 200, vmaf: 97.2 },
      ],
      93,
      bounds,
    );
    expect([flat.crf, flat.predictedVmaf, flat.extrapolated]).toEqual([44, 97.1, true]);
  });

  it("reads scores as non-increasing in CRF: a rise is noise, pooled with its neighbours", () => {
    const t = (crf: number, vmaf: number) => ({ crf, kbps: 100, vmaf });
    expect(monotone([t(33.5, 95), t(23, 96.6), t(29, 93.2), t(29.5, 94.2)]).map((x) => [x.crf, Math.round(x.vmaf * 100) / 100])).toEqual([
      [23, 96.6],
      [29, 94.13],
      [29.5, 94.13],
      [33.5, 94.13],
    ]);
    expect(monotone([t(20, 97), t(25, 94), t(30, 90)]).map((x) => x.vmaf)).toEqual([97, 94, 90]);
    // Flat after pooling: every trial above the target, so as far as the trials allow.
    const c = chooseRate("h264", [t(23, 96.6), t(29, 93.2), t(29.5, 94.2), t(33.5, 95)], 93, bounds);
    expect([c.crf, c.extrapolated]).toEqual([37.5, true]);
    // With no round left, the highest CRF tried: its score is a measurement.
    const last = chooseRate("h264", [t(23, 96.6), t(29, 93.2), t(29.5, 94.2), t(33.5, 95)], 93, bounds, true);
    expect([last.crf, Math.round(last.predictedVmaf * 100) / 100]).toEqual([33.5, 94.13]);
    // Nor is a falling line followed past the trials: the highest CRF tried above the target, or the lowest below it.
    expect(chooseRate("h264", [t(23, 96.5), t(29, 96.3), t(37, 95.7)], 93, bounds, true).crf).toBe(37);
    expect(chooseRate("h264", [t(23, 80), t(15, 90)], 93, bounds, true).crf).toBe(15);
    // Between two trials it interpolates, as in any round.
    expect(chooseRate("h264", [t(23, 95), t(27, 91)], 93, bounds, true).crf).toBe(25);
  });

  it("moves to where the predicted bitrate meets max_bitrate_kbps or min_bitrate_kbps, and caps at the maximum", () => {
    const trials = [
      { crf: 20, kbps: 4000, vmaf: 97 },
      { crf: 26, kbps: 1000, vmaf: 91 },
    ];
    const capped = chooseRate("h264", trials, 96, { minKbps: 0, maxKbps: 2000 });
    expect([capped.crf, capped.maxKbps, capped.predictedKbps]).toEqual([23, 2000, 2000]);
    const floored = chooseRate("h264", trials, 90, { minKbps: 2000, maxKbps: 0 });
    expect([floored.crf, floored.predictedKbps]).toEqual([23, 2000]);
  });

  it("steps the second trial towards the target by the codec's usual slope (twice it from above), 2 to 10 CRF, inside the codec's range", () => {
    expect(nextTrialCrf("h264", { crf: 23, kbps: 1, vmaf: 97.8 }, 93)).toBe(31);
    expect(nextTrialCrf("h264", { crf: 23, kbps: 1, vmaf: 99.8 }, 93)).toBe(33);
    expect(nextTrialCrf("h264", { crf: 23, kbps: 1, vmaf: 80 }, 93)).toBe(13);
    expect(nextTrialCrf("h264", { crf: 23, kbps: 1, vmaf: 93 }, 93)).toBe(25);
    expect(nextTrialCrf("av1", { crf: 58, kbps: 1, vmaf: 99 }, 93)).toBe(60);
    expect(nextTrialCrf("av1", { crf: 60, kbps: 1, vmaf: 99 }, 93)).toBe(58);
  });

  it("samples 2 s windows, about 4% of the output, spread over it", () => {
    expect(sampleWindows(1.5)).toEqual([{ start: 0, duration: 1.5 }]);
    expect(sampleWindows(30)).toEqual([{ start: 14, duration: 2 }]);
    expect(sampleWindows(300)).toEqual([
      { start: 24, duration: 2 },
      { start: 74, duration: 2 },
      { start: 124, duration: 2 },
      { start: 174, duration: 2 },
      { start: 224, duration: 2 },
      { start: 274, duration: 2 },
    ]);
  });
});
