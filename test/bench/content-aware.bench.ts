// Content-aware encoding against the fixed ladder, side by side on this machine: a talking-head-like
// source and a high-motion one (test/sources.ts), BENCH_SECONDS long (default 60) at 1280x720, each
// as a three-rung HLS ladder (720p, 480p, 360p; fMP4) encoded with the tiers' CRF (fixed) and with
// the rates the analysis chose (content-aware). Reported per source: the analysis time against the
// content-aware encode it planned (the mark: at most 30%), each rung's bitrate both ways,
// and its VMAF (vmaf_v0.6.1, at its size, every other frame) over the whole output against its target.
// BENCH_SOURCES=talking (or motion) runs one. Writes test/bench/results/content-aware-<date>.json.
import { create } from "@bufbuild/protobuf";
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { analyzeContent, measureRungs, ratesOf } from "../../encoder-node/content-aware.js";
import { runPlan } from "../../encoder-node/ffmpeg.js";
import { planOutput, type OutputPlan } from "../../encoder-node/plan.js";
import { probe } from "../../encoder-node/probe.js";
import { scoreVmaf } from "../../encoder-node/vmaf.js";
import { OutputSpecSchema, OutputType, type OutputSpec } from "../../src/gen/media/v1/job_pb.js";
import { SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { makeSource, type SourceKind } from "../sources.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const root = path.join(tmpdir(), "bench-content-aware");
mkdirSync(root, { recursive: true });
const signal = new AbortController().signal;

const spec = (contentAware: boolean): OutputSpec =>
  create(OutputSpecSchema, {
    type: OutputType.HLS,
    hls: { segmentFormat: SegmentFormat.FMP4 },
    video: [
      { codec: VideoCodec.H264, width: 1280, height: 720 },
      { codec: VideoCodec.H264, width: 854, height: 480 },
      { codec: VideoCodec.H264, width: 640, height: 360 },
    ],
    disableAudio: true,
    ...(contentAware ? { contentAware: { enabled: true } } : {}),
  });

const kbpsOf = (plan: OutputPlan, file: string) => {
  const dir = path.join(plan.dir, path.dirname(file));
  const bytes = readdirSync(dir).reduce((sum, f) => sum + statSync(path.join(dir, f)).size, 0);
  return Math.round((bytes * 8) / 1000 / SECONDS);
};

async function bench(kind: SourceKind) {
  const file = await makeSource(path.join(root, `${kind}-${SECONDS}.mp4`), kind, 1280, 720, SECONDS);
  const input = { file, probe: await probe(file) };
  rmSync(path.join(root, kind), { recursive: true, force: true });
  const ladder = await analyzeContent(spec(true), input, { workDir: path.join(root, kind, "analysis"), signal });
  const fixed = planOutput(spec(false), input, { outputId: "fixed", workDir: path.join(root, kind, "fixed") });
  const aware = planOutput(spec(true), input, { outputId: "aware", workDir: path.join(root, kind, "aware"), contentAware: ratesOf(ladder) });
  let started = Date.now();
  await runPlan(fixed, { signal });
  const fixedMs = Date.now() - started;
  started = Date.now();
  await runPlan(aware, { signal });
  const awareMs = Date.now() - started;
  await measureRungs(
    ladder,
    aware.renditions!.map((r) => ({ file: path.join(aware.dir, r.file), width: r.width, height: r.height })),
    path.join(root, kind, "analysis"),
    signal,
  );
  const rungs: { name: string; target_vmaf: number; aware: { kbps: number; vmaf: number }; fixed: { kbps: number; vmaf: number }; [more: string]: unknown }[] =
    [];
  for (const [i, r] of aware.renditions!.entries()) {
    const whole = async (plan: OutputPlan) =>
      (await scoreVmaf({ reference: file, distorted: path.join(plan.dir, plan.renditions![i]!.file), width: r.width, height: r.height, subsample: 2, signal }))
        .mean;
    const rung = ladder.rungs[i]!;
    rungs.push({
      name: r.name,
      target_vmaf: rung.targetVmaf,
      crf: rung.crf,
      trials: rung.trials.map((t) => ({ crf: t.crf, kbps: t.kbps, vmaf: Math.round(t.vmaf * 100) / 100 })),
      predicted_vmaf: rung.predictedVmaf,
      measured_vmaf_samples: rung.measuredVmaf,
      aware: { kbps: kbpsOf(aware, r.file), vmaf: Math.round((await whole(aware)) * 100) / 100 },
      fixed: { kbps: kbpsOf(fixed, fixed.renditions![i]!.file), vmaf: Math.round((await whole(fixed)) * 100) / 100 },
    });
  }
  const total = (which: "aware" | "fixed") => rungs.reduce((sum, r) => sum + r[which].kbps, 0);
  const result = {
    source: kind,
    samples: ladder.samples,
    analysis_ms: ladder.analysisMs,
    aware_encode_ms: awareMs,
    fixed_encode_ms: fixedMs,
    analysis_over_encode: Math.round((ladder.analysisMs / awareMs) * 1000) / 1000,
    bits_aware_over_fixed: Math.round((total("aware") / total("fixed")) * 1000) / 1000,
    max_vmaf_miss: Math.round(Math.max(...rungs.map((r) => Math.abs(r.aware.vmaf - r.target_vmaf))) * 100) / 100,
    rungs,
  };
  console.log(JSON.stringify(result));
  return result;
}

const results = {
  bench: "content-aware",
  date: new Date().toISOString(),
  machine: { cores: availableParallelism() },
  seconds: SECONDS,
  sources: await (async () => {
    const out = [];
    for (const kind of (process.env.BENCH_SOURCES ?? "talking,motion").split(",") as SourceKind[]) out.push(await bench(kind));
    return out;
  })(),
};
const dir = path.join(import.meta.dirname, "results");
mkdirSync(dir, { recursive: true });
const out = path.join(dir, `content-aware-${results.date.slice(0, 10)}.json`);
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
console.log(`results in ${out}`);
