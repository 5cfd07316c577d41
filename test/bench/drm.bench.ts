// Benchmark: what content protection adds to the encode of a 4-rung ladder (goal: under 5% of the
// encode's wall time). A 1080p25 clip (testsrc2 + sine, x264 ultrafast) is encoded to H.264 1080p,
// 720p, 480p, 360p (CRF 23, veryfast as in ladder.bench; GOPs from the planner, on the 6 s segment
// grid; AAC 128k) through planOutput + runPlan, as:
//   clear-adaptive   CMAF, DASH + HLS over one segment set, no DRM (reference of the next two)
//   cbcs-adaptive    the same with cbcs, clearkey: clear MP4 intermediates, then Shaka Packager
//   cenc-dash        DASH with cenc, clearkey: intermediates, then the packager
//   clear-hls-ts     HLS on ts segments, no DRM (reference of the next)
//   aes128-hls-ts    the same with aes_128: ffmpeg's HLS muxer encrypts each segment
// and, to time the packager on its own, two runners that only package (runPackager) a copy of the
// clear intermediates the protected plans' commands wrote once before the rounds:
//   package-cbcs, package-cenc
// Keys come from localKeyProvider, fetched outside the timed part. A packaged plan's runPlan is also
// split in phases by its progress reports: its encode share (0.97) when its commands end, 0.999
// when packaging ends, 1 once its manifests are written.
// Rounds rotate the order; medians are reported, of the runs others did not disturb. CPU is the
// change in this process's cutime+cstime (ffmpeg, packager, ffprobe children) around each run.
// Writes test/bench/results/drm-<date>.json.
// Run: npx tsx test/bench/drm.bench.ts   (npm run bench:drm)
//   BENCH_ROUNDS (3), BENCH_SECONDS (45), BENCH_OUT (results file), BENCH_NOTE (a note for it),
//   BENCH_QUIET_WAIT (longest wait for a quiet machine before each run, 120 s)
import { execFileSync } from "node:child_process";
import { create } from "@bufbuild/protobuf";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { runFfmpeg, runPlan } from "../../encoder-node/ffmpeg.js";
import { runPackager } from "../../encoder-node/packager.js";
import { planOutput, type OutputPlan, type PlanInput } from "../../encoder-node/plan.js";
import { probe } from "../../encoder-node/probe.js";
import { localKeyProvider } from "../../src/drm/keys.js";
import { trackClassOf, type ContentKey, type DrmScheme, type TrackClass } from "../../src/drm/types.js";
import { DrmSystem, EncryptionScheme, OutputSpecSchema, OutputType, type OutputSpec } from "../../src/gen/media/v1/job_pb.js";
import { AudioCodec, SegmentFormat, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { checkOutputSpec } from "../../src/spec-check.js";
import { Check } from "../../src/validation.js";
import { makeTestInput, parseHlsMaster, parseMpd } from "../media.js";
import { LADDER, SETTINGS, waitForQuiet } from "./ladder.bench.js";

const num = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const ROUNDS = num("BENCH_ROUNDS", 3);
const SECONDS = num("BENCH_SECONDS", 45);
const QUIET_WAIT = num("BENCH_QUIET_WAIT", 120);
const FPS = 25;
const GOAL = 0.05;

/**
 * ladder.bench's rungs, but 480p as 864x486: ffmpeg 5.1's dash muxer refuses an adaptation set
 * whose rungs differ in aspect ratio ("Conflicting stream aspect ratios"), and 854x480 is 427:240,
 * not 16:9, so clear-adaptive fails with it. 864x486 is exactly 16:9, 2.4% more pixels.
 */
const RUNGS: readonly { name: string; width: number; height: number }[] = LADDER.map((r) =>
  r.name === "480p" ? { name: r.name, width: 864, height: 486 } : r,
);

const log = (line: string) => process.stdout.write(`${line}\n`);

// ── the outputs ──

type EncodeName = "clear-adaptive" | "cbcs-adaptive" | "cenc-dash" | "clear-hls-ts" | "aes128-hls-ts";
type PackageName = "package-cbcs" | "package-cenc";
type RunnerName = EncodeName | PackageName;

const drmOf = (scheme: EncryptionScheme, systems: DrmSystem[]) => ({ scheme, systems });
const OUTPUTS: Record<EncodeName, { type: OutputType; drm?: ReturnType<typeof drmOf>; reference?: EncodeName }> = {
  "clear-adaptive": { type: OutputType.ADAPTIVE },
  "cbcs-adaptive": { type: OutputType.ADAPTIVE, drm: drmOf(EncryptionScheme.CBCS, [DrmSystem.CLEARKEY]), reference: "clear-adaptive" },
  // No clear DASH run: clear-adaptive's dash muxer writes the same segments and MPD, plus HLS playlists.
  "cenc-dash": { type: OutputType.DASH, drm: drmOf(EncryptionScheme.CENC, [DrmSystem.CLEARKEY]), reference: "clear-adaptive" },
  "clear-hls-ts": { type: OutputType.HLS },
  "aes128-hls-ts": { type: OutputType.HLS, drm: drmOf(EncryptionScheme.AES_128, []), reference: "clear-hls-ts" },
};
/** Package-only runners: the packaging of which protected output, and the clear encode it is set against. */
const PACKAGE_ONLY: Record<PackageName, { of: EncodeName; reference: EncodeName }> = {
  "package-cbcs": { of: "cbcs-adaptive", reference: "clear-adaptive" },
  "package-cenc": { of: "cenc-dash", reference: "clear-adaptive" },
};

function specOf(name: EncodeName): OutputSpec {
  const o = OUTPUTS[name];
  return create(OutputSpecSchema, {
    type: o.type,
    video: RUNGS.map((r) => ({ codec: VideoCodec.H264, width: r.width, height: r.height, h264: { crf: SETTINGS.crf, encoderPreset: SETTINGS.preset } })),
    audio: [{ codec: AudioCodec.AAC, bitrateKbps: SETTINGS.audioKbps }],
    ...(o.type === OutputType.HLS ? { hls: { segmentFormat: SegmentFormat.TS } } : {}),
    ...(o.drm ? { drm: o.drm } : {}),
  });
}

const SCHEMES: Partial<Record<EncryptionScheme, DrmScheme>> = {
  [EncryptionScheme.CBCS]: "cbcs",
  [EncryptionScheme.CENC]: "cenc",
  [EncryptionScheme.AES_128]: "aes128",
};

/** The keys the encoder node would ask for (encoder-node/node.ts): one per track class packaged, one for all with aes_128. */
async function keysFor(name: EncodeName, plan: OutputPlan): Promise<ContentKey[]> {
  const drm = OUTPUTS[name].drm;
  if (!drm) return [];
  const scheme = SCHEMES[drm.scheme]!;
  const present = new Set((plan.packaging?.streams ?? []).map((s) => s.trackClass));
  const classes: TrackClass[] =
    scheme === "aes128"
      ? [trackClassOf("video", Math.max(0, ...(plan.renditions ?? []).map((r) => Math.min(r.width, r.height))))]
      : (["audio", "sd", "hd"] as const).filter((c) => present.has(c));
  return localKeyProvider().keys({ resourceId: `bench-${name}`, classes, scheme, systems: scheme === "aes128" ? [] : ["clearkey"] });
}

const planFor = (name: EncodeName, input: PlanInput, dir: string) =>
  planOutput(specOf(name), input, { outputId: `out_${name.replaceAll("-", "_")}`, workDir: dir });

// ── measuring ──

const TICK = 1 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

/** CPU seconds of this process's reaped children (cutime + cstime, fields 16 and 17 of /proc/self/stat). */
function childrenCpu(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[13]) + Number(fields[14])) * TICK;
}

/** Busy CPU seconds of the whole machine (/proc/stat), to spot other work during a run. */
function machineBusy(): number {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = cpu;
  return (user + nice + system + irq + softirq + steal) * TICK;
}

/** Others' heavy work (a Stryker run, vitest) seen now. */
function otherHeavyWork(): string[] {
  const seen = new Set<string>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ");
      if (/stryker run|@stryker-mutator/.test(cmd)) seen.add("stryker");
      else if (/(^|[/ ])vitest\b/.test(cmd)) seen.add("vitest");
    } catch {
      // gone meanwhile
    }
  }
  return [...seen].sort();
}

function bytesUnder(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? bytesUnder(p) : statSync(p).size;
  }
  return total;
}

interface Phases {
  /** Until the commands ended. */
  encodeSeconds: number;
  /** runPackager: flag file, packager, playlists finished, intermediates removed. */
  packagingSeconds?: number;
  /** After that: aes_128 codec probing, MPD minBufferTime, the HLS master (probes and measures segments). */
  manifestsSeconds: number;
}

interface Run {
  runner: RunnerName;
  round: number;
  wallSeconds: number;
  cpuSeconds: number;
  /** Busy CPU of the machine not spent by this process or its children during the run. */
  otherCpuSeconds: number;
  /** Others used more than 5% of the run's CPU (at least 1 s). */
  contended: boolean;
  phases?: Phases;
  outputBytes: number;
  othersSeen: string[];
}

/**
 * Splits a packaged plan's runPlan by its progress reports (monotonic): it holds its encode share
 * (0.97) from the end of its commands until packaging ends at 0.999, and reports 1 after its
 * manifests. A clear plan cannot be split so: runPlan passes on a report only at a new whole
 * percent, so its 0.999 at the end of the commands is swallowed after ffmpeg's own 99%.
 */
function phasesOf(reports: { t: number; f: number }[], t0: number, end: number): Phases | undefined {
  const done = reports.find((r) => r.f >= 0.999);
  if (!done) return undefined;
  const s = (ms: number) => ms / 1000;
  const plateau = reports.filter((r) => r.f < 0.999).at(-1);
  const encoded = plateau && reports.find((r) => r.f === plateau.f);
  if (!encoded) return undefined;
  return { encodeSeconds: s(encoded.t - t0), packagingSeconds: s(done.t - encoded.t), manifestsSeconds: s(end - done.t) };
}

/** Round-0 check: the output is what its name says (4 variants, encrypted or not), with no intermediates left. */
function checkOutput(name: RunnerName, plan: OutputPlan): void {
  const fail = (why: string) => {
    throw new Error(`${name}: ${why}`);
  };
  const encode: EncodeName = name === "package-cbcs" || name === "package-cenc" ? PACKAGE_ONLY[name].of : name;
  const dir = plan.dir;
  if (existsSync(path.join(dir, "_clear"))) fail("the clear intermediates were left in the output");
  const text = (rel: string) => readFileSync(path.join(dir, rel), "utf8");
  const type = OUTPUTS[encode].type;
  const mpd = type === OutputType.HLS ? undefined : text(plan.dashManifest?.file ?? "manifest.mpd");
  if (mpd !== undefined && parseMpd(mpd).representations.filter((r) => r.contentType === "video").length !== RUNGS.length)
    fail(`the MPD does not list ${RUNGS.length} video representations`);
  let media = "";
  if (type !== OutputType.DASH && !name.startsWith("package-")) {
    const master = parseHlsMaster(text(plan.hlsMaster?.file ?? "index.m3u8"));
    if (master.variants.length !== RUNGS.length) fail(`the master lists ${master.variants.length} variants, expected ${RUNGS.length}`);
    media = text(plan.hlsMaster!.variants[0]!.playlist);
  } else if (type !== OutputType.DASH) media = text(plan.packaging!.streams[0]!.playlist!);
  const marker: Record<EncodeName, [string, RegExp][]> = {
    "clear-adaptive": [],
    "clear-hls-ts": [],
    "cbcs-adaptive": [
      ["media playlist", /#EXT-X-KEY:METHOD=SAMPLE-AES/],
      ["MPD", /value="cbcs"/],
    ],
    "cenc-dash": [["MPD", /value="cenc"/]],
    "aes128-hls-ts": [["media playlist", /#EXT-X-KEY:METHOD=AES-128/]],
  };
  for (const [where, re] of marker[encode]) if (!re.test(where === "MPD" ? (mpd ?? "") : media)) fail(`the ${where} lacks ${re.source}`);
  if (marker[encode].length === 0 && (/#EXT-X-KEY/.test(media) || /ContentProtection/.test(mpd ?? ""))) fail("a clear output signals encryption");
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const r3 = (x: number) => Math.round(x * 1000) / 1000;
const pct = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;

// ── main ──

async function main(): Promise<void> {
  const loadBefore = os.loadavg();
  const heavySeen = new Set(otherHeavyWork());
  for (const name of Object.keys(OUTPUTS) as EncodeName[]) {
    const check = new Check();
    checkOutputSpec(check, name, specOf(name));
    if (check.violations.length > 0) throw new Error(`the bench's ${name} spec is invalid: ${JSON.stringify(check.violations)}`);
  }
  const work = mkdtempSync(path.join(os.tmpdir(), "drm-bench-"));
  const runs: Run[] = [];
  const intermediates: { for: EncodeName[]; wallSeconds: number; cpuSeconds: number; bytes: number }[] = [];
  try {
    log(`generating a ${SECONDS} s 1920x1080 ${FPS} fps input (testsrc2 + sine)…`);
    const file = await makeTestInput(path.join(work, "input.mp4"), { seconds: SECONDS, width: 1920, height: 1080, fps: FPS, audio: true });
    const input: PlanInput = { file, probe: await probe(file) };

    // The clear intermediates of each packaged output, encoded once by its plan's own commands and
    // kept aside; outputs whose commands are the same (the folder aside) share one set.
    const stash = new Map<PackageName, string>();
    const made = new Map<string, { dir: string; entry: (typeof intermediates)[number] }>();
    for (const [pkg, { of }] of Object.entries(PACKAGE_ONLY) as [PackageName, (typeof PACKAGE_ONLY)[PackageName]][]) {
      const dir = path.join(work, `prep-${of}`);
      const plan = planFor(of, input, dir);
      const key = JSON.stringify(plan.commands).replaceAll(dir, "<dir>");
      const have = made.get(key);
      if (have) {
        stash.set(pkg, have.dir);
        have.entry.for.push(of);
        continue;
      }
      await waitForQuiet(0.35, QUIET_WAIT);
      const cpu0 = childrenCpu();
      const t0 = performance.now();
      mkdirSync(plan.packaging!.clearDir, { recursive: true });
      for (const cmd of plan.commands) await runFfmpeg(cmd, { durationMs: plan.durationMs });
      const wallSeconds = (performance.now() - t0) / 1000;
      const kept = path.join(work, `intermediates-${made.size}`);
      renameSync(plan.packaging!.clearDir, kept);
      rmSync(dir, { recursive: true, force: true });
      const entry = { for: [of], wallSeconds: r3(wallSeconds), cpuSeconds: r3(childrenCpu() - cpu0), bytes: bytesUnder(kept) };
      intermediates.push(entry);
      made.set(key, { dir: kept, entry });
      stash.set(pkg, kept);
      log(`intermediates for ${of}: ${wallSeconds.toFixed(2)} s, ${(entry.bytes / 1e6).toFixed(1)} MB (encoded once, not a measured run)`);
    }

    const names: RunnerName[] = [...(Object.keys(OUTPUTS) as EncodeName[]), ...(Object.keys(PACKAGE_ONLY) as PackageName[])];
    for (let round = 0; round < ROUNDS; round++) {
      // Each round starts with a different runner, so none always runs on a warm or a cool machine.
      const order = names.map((_, i) => names[(i + round) % names.length]!);
      for (const name of order) {
        const dir = path.join(work, `run-${name}`);
        rmSync(dir, { recursive: true, force: true });
        mkdirSync(dir, { recursive: true });
        const isPackage = name === "package-cbcs" || name === "package-cenc";
        const encodeName = isPackage ? PACKAGE_ONLY[name].of : name;
        const plan = planFor(encodeName, input, dir);
        const keys = await keysFor(encodeName, plan);
        if (isPackage) cpSync(stash.get(name)!, plan.packaging!.clearDir, { recursive: true });
        await waitForQuiet(0.35, QUIET_WAIT);
        const seenBefore = otherHeavyWork();
        const reports: { t: number; f: number }[] = [];
        const self0 = process.cpuUsage();
        const cpu0 = childrenCpu();
        const busy0 = machineBusy();
        const t0 = performance.now();
        if (isPackage) await runPackager(plan.packaging!, keys, {});
        else await runPlan(plan, { keys, onProgress: (f) => reports.push({ t: performance.now(), f }) });
        const end = performance.now();
        const cpuSeconds = childrenCpu() - cpu0;
        const self = process.cpuUsage(self0);
        const otherCpuSeconds = Math.max(0, machineBusy() - busy0 - cpuSeconds - (self.user + self.system) / 1e6);
        const phases = !isPackage && plan.packaging ? phasesOf(reports, t0, end) : undefined;
        if (round === 0) checkOutput(name, plan);
        const seen = [...new Set([...seenBefore, ...otherHeavyWork()])].sort();
        for (const h of seen) heavySeen.add(h);
        const run: Run = {
          runner: name,
          round,
          wallSeconds: r3((end - t0) / 1000),
          cpuSeconds: r3(cpuSeconds),
          otherCpuSeconds: r3(otherCpuSeconds),
          contended: otherCpuSeconds > Math.max(1, 0.05 * cpuSeconds),
          ...(phases
            ? {
                phases: {
                  encodeSeconds: r3(phases.encodeSeconds),
                  ...(phases.packagingSeconds !== undefined ? { packagingSeconds: r3(phases.packagingSeconds) } : {}),
                  manifestsSeconds: r3(phases.manifestsSeconds),
                },
              }
            : {}),
          outputBytes: bytesUnder(dir),
          othersSeen: seen,
        };
        runs.push(run);
        rmSync(dir, { recursive: true, force: true });
        const p = run.phases;
        log(
          `round ${round + 1} ${name.padEnd(14)} wall ${run.wallSeconds.toFixed(2)} s  cpu ${run.cpuSeconds.toFixed(1)} s  others ${run.otherCpuSeconds.toFixed(1)} s` +
            (p
              ? `  [encode ${p.encodeSeconds.toFixed(2)}${p.packagingSeconds !== undefined ? ` + package ${p.packagingSeconds.toFixed(2)}` : ""} + manifests ${p.manifestsSeconds.toFixed(2)}]`
              : "") +
            `${run.contended ? "  (contended)" : ""}`,
        );
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const loadAfter = os.loadavg();
  for (const h of otherHeavyWork()) heavySeen.add(h);

  // ── medians and ratios ──

  const names = [...(Object.keys(OUTPUTS) as EncodeName[]), ...(Object.keys(PACKAGE_ONLY) as PackageName[])];
  /** A runner's runs, without those others disturbed unless every one was. */
  const of = (name: RunnerName) => {
    const all = runs.filter((r) => r.runner === name);
    return all.some((r) => !r.contended) ? all.filter((r) => !r.contended) : all;
  };
  const medOf = (name: RunnerName, get: (r: Run) => number | undefined) => {
    const xs = of(name)
      .map(get)
      .filter((x): x is number => x !== undefined);
    return xs.length > 0 ? r3(median(xs)) : undefined;
  };
  const medians = Object.fromEntries(
    names.map((n) => [
      n,
      {
        wallSeconds: medOf(n, (r) => r.wallSeconds)!,
        cpuSeconds: medOf(n, (r) => r.cpuSeconds)!,
        encodeSeconds: medOf(n, (r) => r.phases?.encodeSeconds),
        packagingSeconds: medOf(n, (r) => r.phases?.packagingSeconds),
        manifestsSeconds: medOf(n, (r) => r.phases?.manifestsSeconds),
        outputBytes: medOf(n, (r) => r.outputBytes)!,
        wallRange: [Math.min(...of(n).map((r) => r.wallSeconds)), Math.max(...of(n).map((r) => r.wallSeconds))],
        runs: of(n).length,
      },
    ]),
  ) as Record<
    RunnerName,
    {
      wallSeconds: number;
      cpuSeconds: number;
      encodeSeconds?: number;
      packagingSeconds?: number;
      manifestsSeconds?: number;
      outputBytes: number;
      wallRange: number[];
      runs: number;
    }
  >;

  /** Same round's counted run of a runner, for ratios paired in time. */
  const inRound = (name: RunnerName, round: number) => of(name).find((r) => r.round === round);
  const pairedMedian = (a: RunnerName, b: RunnerName, get: (r: Run) => number) => {
    const xs: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const x = inRound(a, round);
      const y = inRound(b, round);
      if (x && y) xs.push(get(x) / get(y) - 1);
    }
    return xs.length > 0 ? r3(median(xs)) : undefined;
  };

  const overhead = Object.fromEntries(
    (Object.keys(OUTPUTS) as EncodeName[])
      .filter((n) => OUTPUTS[n].reference)
      .map((n) => {
        const ref = OUTPUTS[n].reference!;
        const wall = r3(medians[n].wallSeconds / medians[ref].wallSeconds - 1);
        return [
          n,
          {
            reference: ref,
            wall,
            cpu: r3(medians[n].cpuSeconds / medians[ref].cpuSeconds - 1),
            /** Median over rounds of (protected − clear)/clear within one round. */
            wallPairedByRound: pairedMedian(n, ref, (r) => r.wallSeconds),
            outputBytes: r3(medians[n].outputBytes / medians[ref].outputBytes - 1),
            met: wall < GOAL,
          },
        ];
      }),
  );
  const packaging = Object.fromEntries(
    (Object.keys(PACKAGE_ONLY) as PackageName[]).map((pkg) => {
      const { of: protectedName, reference } = PACKAGE_ONLY[pkg];
      const inSitu = of(protectedName)
        .map((r) => (r.phases?.packagingSeconds !== undefined ? r.phases.packagingSeconds / r.phases.encodeSeconds : undefined))
        .filter((x): x is number => x !== undefined);
      return [
        protectedName,
        {
          /** Packager alone (package-only runner) over the clear encode of the same ladder. */
          packagerAloneWallOverClearEncode: r3(medians[pkg].wallSeconds / medians[reference].wallSeconds),
          packagerAloneCpuOverClearEncode: r3(medians[pkg].cpuSeconds / medians[reference].cpuSeconds),
          /** Inside the protected runPlan: packaging phase over encode phase, median over rounds. */
          packagingPhaseOverEncodePhase: inSitu.length > 0 ? r3(median(inSitu)) : undefined,
        },
      ];
    }),
  );

  log(
    `\nmedians of ${ROUNDS} rounds (${SECONDS} s 1080p${FPS} → ${RUNGS.map((r) => `${r.width}x${r.height}`).join(", ")}; H.264 CRF ${SETTINGS.crf} ${SETTINGS.preset}, AAC ${SETTINGS.audioKbps}k):`,
  );
  log(
    `  ${"runner".padEnd(14)} ${"wall s".padStart(7)} ${"cpu s".padStart(7)} ${"encode".padStart(7)} ${"package".padStart(7)} ${"manif.".padStart(7)} ${"MB".padStart(6)}  ${"wall vs ref".padStart(11)} ${"cpu vs ref".padStart(10)}`,
  );
  const f2 = (x: number | undefined) => (x === undefined ? "-" : x.toFixed(2)).padStart(7);
  for (const n of names) {
    const m = medians[n];
    const o = overhead[n];
    log(
      `  ${n.padEnd(14)} ${f2(m.wallSeconds)} ${f2(m.cpuSeconds)} ${f2(m.encodeSeconds)} ${f2(m.packagingSeconds)} ${f2(m.manifestsSeconds)} ${(m.outputBytes / 1e6).toFixed(1).padStart(6)}  ${(o ? pct(o.wall) : "").padStart(11)} ${(o ? pct(o.cpu) : "").padStart(10)}`,
    );
  }
  for (const [n, o] of Object.entries(overhead)) {
    log(
      `${n}: overhead (protected − clear)/clear vs ${o.reference}: wall ${pct(o.wall)} (paired by round ${o.wallPairedByRound === undefined ? "-" : pct(o.wallPairedByRound)}), cpu ${pct(o.cpu)}; goal < ${GOAL * 100}% ${o.met ? "met" : "MISSED"}`,
    );
  }
  for (const [n, p] of Object.entries(packaging)) {
    log(
      `${n}: packager alone / clear encode: wall ${(p.packagerAloneWallOverClearEncode * 100).toFixed(1)}%, cpu ${(p.packagerAloneCpuOverClearEncode * 100).toFixed(1)}%; packaging phase / encode phase in runPlan: ${p.packagingPhaseOverEncodePhase === undefined ? "-" : `${(p.packagingPhaseOverEncodePhase * 100).toFixed(1)}%`}`,
    );
  }

  const disturbed = heavySeen.size > 0 || runs.some((r) => r.contended);
  const commit = (() => {
    try {
      return execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    } catch {
      return "";
    }
  })();
  const packagerVersion = (() => {
    try {
      const pkg = JSON.parse(readFileSync(path.join(import.meta.dirname, "..", "..", "node_modules", "shaka-packager", "package.json"), "utf8")) as {
        version?: string;
      };
      return pkg.version ?? "";
    } catch {
      return "";
    }
  })();
  const out = process.env.BENCH_OUT ?? path.join(import.meta.dirname, "results", `drm-${new Date().toISOString().slice(0, 10)}.json`);
  mkdirSync(path.dirname(out), { recursive: true });
  const report = {
    at: new Date().toISOString(),
    commit,
    node: process.version,
    ffmpeg: execFileSync("ffmpeg", ["-version"], { encoding: "utf8" }).split("\n")[0],
    shaka_packager: packagerVersion,
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model ?? "",
    load_average_before: loadBefore.map((x) => Math.round(x * 100) / 100),
    load_average_after: loadAfter.map((x) => Math.round(x * 100) / 100),
    disturbed,
    other_heavy_work_seen: [...heavySeen].sort(),
    ...(process.env.BENCH_NOTE ? { note: process.env.BENCH_NOTE } : {}),
    input: { seconds: SECONDS, width: 1920, height: 1080, fps: FPS, encoder: "libx264 ultrafast", audio: "aac 96k, sine tone" },
    ladder: RUNGS,
    ladder_note:
      "ladder.bench's 1080p, 720p, 480p, 360p with 480p as 864x486: ffmpeg 5.1's dash muxer rejects 854x480 (427:240) beside 16:9 rungs in one adaptation set",
    settings: {
      codec: "h264",
      crf: SETTINGS.crf,
      preset: SETTINGS.preset,
      keyint: "planner default (2 s, on the 6 s segment grid)",
      audioKbps: SETTINGS.audioKbps,
      segmentSeconds: 6,
    },
    outputs: {
      "clear-adaptive": "adaptive (CMAF: DASH + HLS over one fmp4 segment set), dash muxer",
      "cbcs-adaptive": "adaptive, drm cbcs + clearkey: clear MP4 intermediates, Shaka Packager",
      "cenc-dash": "dash, drm cenc + clearkey: clear MP4 intermediates, Shaka Packager",
      "clear-hls-ts": "hls on ts segments",
      "aes128-hls-ts": "hls on ts segments, drm aes_128: ffmpeg's hls muxer encrypts",
      "package-cbcs": "runPackager alone on a copy of cbcs-adaptive's clear intermediates",
      "package-cenc": "runPackager alone on a copy of cenc-dash's clear intermediates",
    },
    keys: "localKeyProvider, fetched before each run (not timed)",
    method:
      "wall = runPlan (or runPackager) alone; cpu = change in cutime+cstime of the bench process; phases of packaged plans read from runPlan's progress reports (commands end at 0.97, packaging at 0.999, manifests at 1; clear plans are not split); medians of uncontended runs",
    rounds: ROUNDS,
    order: "rotated each round over the 7 runners",
    intermediates,
    medians,
    overhead,
    packaging,
    goal: { overheadWallBelow: GOAL },
    runs,
  };
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  log(
    `${disturbed ? `DISTURBED (others seen: ${[...heavySeen].join(", ") || "none"}; contended runs: ${runs.filter((r) => r.contended).length})\n` : ""}results: ${path.relative(process.cwd(), out)}`,
  );
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
