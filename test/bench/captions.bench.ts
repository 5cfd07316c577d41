// Benchmark: generated captions (faster-whisper base, int8, in the encoder node's Python worker).
//   transcribe: real-time factor and peak memory of the worker at 1 and 10 minutes of speech. The
//               audio is the synthesized talk of test/speech.ts (espeak-ng, one piece per
//               sentence), repeated with 1 s of silence after each pass until the length is
//               reached (the last sentence that would not fit is left out, silence pads the rest),
//               as 16 kHz mono WAV. Each length gets a fresh recogniser (startRecogniser), so its
//               peak is that run's: a short clip is transcribed twice first (model load = the
//               cold request minus the warm one), then the long audio. RTF = wall of transcribe()
//               / audio seconds. Memory: the worker (the python child of this process running
//               worker.py) has its VmRSS sampled every 200 ms and its VmHWM read at the end. WER
//               against the known text (the sentences the audio holds, in order).
//   ladder:     the extra wall time a captioned ladder takes over the same ladder without captions
//               (goal: recognition runs beside the encode, adding < 15%). Input: 60 s 1920x1080
//               25 fps testsrc2 (libx264 ultrafast) with the speech as its AAC audio. Output: HLS,
//               four H.264 rungs (1080p, 720p, 480p, 360p; width and height given), AAC, the
//               project's defaults otherwise. Runners, over one warm recogniser (as production
//               reuses its worker; the cold model load is the transcribe suite's figure):
//                 reference     planOutput + runPlan for the spec without subtitle tracks
//                 captioned     the spec plus one generated English track, run as node.ts's
//                               runEncode does: SubtitleContext + Transcripts, startTranscripts,
//                               startTracks, runPlan, await generated, writeTracks
//                 transcription the captioned run's transcription alone (audio extraction + the
//                               warm worker), for comparison: run one after the other, the two
//                               would take reference + transcription
//               Rounds rotate the order (reference and captioned swap places each round); medians
//               are reported, and captioned / reference. Speed is only ever a ratio against the
//               reference measured side by side on this machine, never a timed assertion.
// Each run also records the CPU others used meanwhile (the machine's busy time minus ffmpeg, the
// worker and this process); other heavy work seen (stryker, vitest) marks the results disturbed.
// Writes test/bench/results/captions-<date>.json (BENCH_OUT overrides the file).
// Run: npx tsx test/bench/captions.bench.ts   (npm run bench:captions)
//   BENCH_SUITES (transcribe,ladder), BENCH_LENGTHS (seconds of speech, 60,600), BENCH_ROUNDS (3),
//   BENCH_VIDEO_SECONDS (60), BENCH_NOTE (a note for the results file), BENCH_QUIET_WAIT (longest wait for a quiet machine before each run, 120 s)
import { execFile, execFileSync } from "node:child_process";
import { create } from "@bufbuild/protobuf";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { runPlan } from "../../encoder-node/ffmpeg.js";
import { planOutput, segmentSecondsOf } from "../../encoder-node/plan.js";
import { probe, type ProbeResult } from "../../encoder-node/probe.js";
import { recogniserPaths, startRecogniser, type Recogniser } from "../../encoder-node/recogniser.js";
import { startTracks, startTranscripts, Transcripts, writeTracks, type SubtitleContext } from "../../encoder-node/subtitles.js";
import { OutputSpecSchema, OutputType, SubtitleKind, SubtitleSource, type OutputSpec } from "../../src/gen/media/v1/job_pb.js";
import { AudioCodec, VideoCodec } from "../../src/gen/media/v1/preset_pb.js";
import { createLogger } from "../../src/log.js";
import { NetGuard } from "../../src/net-guard.js";
import { toWhisperLanguage } from "../../src/asr-languages.js";
import { checkOutputSpec } from "../../src/spec-check.js";
import { Check } from "../../src/validation.js";
import { parseHlsMaster } from "../media.js";
import { synthesizeSpeech, TOPICS, wordErrorRate } from "../speech.js";
import { LADDER, waitForQuiet } from "./ladder.bench.js";

const run = promisify(execFile);
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const ROUNDS = num("BENCH_ROUNDS", 3);
const VIDEO_SECONDS = num("BENCH_VIDEO_SECONDS", 60);
const LENGTHS = (process.env.BENCH_LENGTHS ?? "60,600").split(",").map(Number);
const SUITES = (process.env.BENCH_SUITES ?? "transcribe,ladder").split(",");
/** Longest wait, before each measured run, for the machine to go quiet (others under 0.35 of a core). */
const QUIET_WAIT = num("BENCH_QUIET_WAIT", 120);
const SAMPLE_RATE = 16_000;
const SILENCE_SECONDS = 1;
const LANGUAGE = "en";
/** The Whisper code of the captioned track's language: the transcript startTranscripts starts. */
const TRACK_LANGUAGE = toWhisperLanguage("en") ?? "";

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const r3 = (x: number) => Math.round(x * 1000) / 1000;
const mb = (kb: number) => Math.round(kb / 102.4) / 10;
const log = (line: string) => process.stdout.write(`${line}\n`);

// ── the speech audio ──

/** The samples of a 16 kHz mono 16-bit WAV (the RIFF chunks walked: ffmpeg may write a LIST chunk). */
function readWav(file: string): Int16Array {
  const b = readFileSync(file);
  let at = 12;
  let format: { channels: number; rate: number; bits: number } | undefined;
  while (at + 8 <= b.length) {
    const id = b.toString("ascii", at, at + 4);
    const size = b.readUInt32LE(at + 4);
    if (id === "fmt ") format = { channels: b.readUInt16LE(at + 10), rate: b.readUInt32LE(at + 12), bits: b.readUInt16LE(at + 22) };
    if (id === "data") {
      if (format?.channels !== 1 || format.rate !== SAMPLE_RATE || format.bits !== 16)
        throw new Error(`${file}: not 16 kHz mono 16-bit (${JSON.stringify(format)})`);
      const end = Math.min(b.length, at + 8 + size);
      const copy = Buffer.from(b.subarray(at + 8, end - ((end - at - 8) % 2)));
      return new Int16Array(copy.buffer, copy.byteOffset, copy.length / 2);
    }
    at += 8 + size + (size % 2);
  }
  throw new Error(`${file}: no data chunk`);
}

function writeWav(file: string, samples: Int16Array): void {
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(36 + samples.byteLength, 4);
  header.write("WAVEfmt ", 8, "ascii");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(SAMPLE_RATE, 24);
  header.writeUInt32LE(SAMPLE_RATE * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36, "ascii");
  header.writeUInt32LE(samples.byteLength, 40);
  writeFileSync(file, Buffer.concat([header, Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength)]));
}

interface Sentence {
  text: string;
  samples: Int16Array;
}

/** The talk of test/speech.ts, synthesized one sentence per piece so the audio can be cut between sentences. */
async function sentences(dir: string): Promise<Sentence[]> {
  const texts = TOPICS.flat();
  mkdirSync(dir, { recursive: true });
  const speech = await synthesizeSpeech(
    dir,
    texts.map((s) => [s]),
  );
  const all = readWav(speech.wav);
  const starts = [...speech.topicStarts.map((s) => Math.round(s * SAMPLE_RATE)), all.length];
  return texts.map((text, i) => ({ text, samples: all.subarray(starts[i]!, starts[i + 1]!) }));
}

interface SpeechAudio {
  wav: string;
  text: string;
  seconds: number;
  /** Seconds of sentences in it (the rest is silence). */
  speechSeconds: number;
  sentences: number;
}

/** `seconds` of the talk repeated (1 s of silence after each pass), whole sentences only, padded with silence. */
function speechAudio(file: string, seconds: number, talk: readonly Sentence[]): SpeechAudio {
  const out = new Int16Array(Math.round(seconds * SAMPLE_RATE));
  const texts: string[] = [];
  let at = 0;
  let speech = 0;
  for (let i = 0; ; i++) {
    const s = talk[i % talk.length]!;
    if (at + s.samples.length > out.length) break;
    out.set(s.samples, at);
    at += s.samples.length;
    speech += s.samples.length;
    texts.push(s.text);
    if (i % talk.length === talk.length - 1) at += SILENCE_SECONDS * SAMPLE_RATE;
  }
  writeWav(file, out);
  return { wav: file, text: texts.join(" "), seconds, speechSeconds: r3(speech / SAMPLE_RATE), sentences: texts.length };
}

// ── the worker process, CPU accounting, other work ──

const TICK = 1 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

/** Fields of /proc/<pid>/stat after the command name (index 0 is field 3, state). */
function statFields(pid: number | "self"): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** The recogniser's worker: the child of this process running worker.py (others' workers are not ours). */
function findWorker(): number | undefined {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (Number(statFields(Number(name))[1]) !== process.pid) continue;
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").includes("worker.py")) return Number(name);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

function statusKb(pid: number, field: "VmRSS" | "VmHWM"): number {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** utime + stime of a live process, in seconds (0 when it is gone). */
function processCpu(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const f = statFields(pid);
    return (Number(f[11]) + Number(f[12])) * TICK;
  } catch {
    return 0;
  }
}

/** CPU seconds of this process's reaped children (the ffmpegs): cutime + cstime. */
function childrenCpu(): number {
  const f = statFields("self");
  return (Number(f[13]) + Number(f[14])) * TICK;
}

/** Busy CPU seconds of the whole machine (/proc/stat). */
function machineBusy(): number {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = cpu;
  return (user + nice + system + irq + softirq + steal) * TICK;
}

/** Heavy work of others on the machine: stryker, vitest (this bench starts neither). */
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
const heavySeen = new Set<string>();
const noteHeavy = (): string[] => {
  const now = otherHeavyWork();
  for (const h of now) heavySeen.add(h);
  return now;
};

/** Samples the worker's VmRSS every 200 ms (finding it once the recogniser spawned it). */
class WorkerWatch {
  pid: number | undefined;
  peakRssKb = 0;
  samples = 0;
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setInterval(() => this.sample(), 200);
  }

  sample(): void {
    this.pid ??= findWorker();
    if (this.pid === undefined) return;
    const rss = statusKb(this.pid, "VmRSS");
    if (rss > 0) {
      this.samples++;
      this.peakRssKb = Math.max(this.peakRssKb, rss);
    }
  }

  /** The worker's own high-water mark (VmHWM), read before it is stopped. */
  stop(): { vmHwmKb: number; peakSampledRssKb: number; samples: number } {
    clearInterval(this.timer);
    this.sample();
    return { vmHwmKb: this.pid === undefined ? 0 : statusKb(this.pid, "VmHWM"), peakSampledRssKb: this.peakRssKb, samples: this.samples };
  }
}

const newRecogniser = () => startRecogniser(recogniserPaths(), createLogger("silent"));
const said = (segments: readonly { text: string }[]) => segments.map((s) => s.text).join(" ");

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const t0 = performance.now();
  const value = await fn();
  return { value, seconds: (performance.now() - t0) / 1000 };
}

// ── suite 1: transcription ──

interface TranscribeResult {
  audio: Omit<SpeechAudio, "wav" | "text">;
  modelLoad: { coldSeconds: number; warmSeconds: number; loadSeconds: number; clipSeconds: number };
  wallSeconds: number;
  rtf: number;
  workerCpuSeconds: number;
  /** Worker CPU seconds per audio second (over every core). */
  cpuRtf: number;
  wer: number;
  memory: { vmHwmMb: number; peakSampledRssMb: number; samples: number };
  otherCpuSeconds: number;
  /** Others' heavy work (stryker, vitest) running at the start or end of the run. */
  othersSeen: string[];
}

async function transcribeSuite(work: string, talk: readonly Sentence[], clip: string, clipSeconds: number): Promise<TranscribeResult[]> {
  const results: TranscribeResult[] = [];
  for (const seconds of LENGTHS) {
    const audio = speechAudio(path.join(work, `speech-${seconds}s.wav`), seconds, talk);
    await waitForQuiet(0.35, QUIET_WAIT);
    const seenBefore = noteHeavy();
    const recogniser = newRecogniser();
    const watch = new WorkerWatch();
    try {
      // The first request starts the worker and loads the model; the second has both.
      const cold = await timed(() => recogniser.transcribe(clip, LANGUAGE, {}));
      const warm = await timed(() => recogniser.transcribe(clip, LANGUAGE, {}));
      const cpu0 = processCpu(watch.pid ?? findWorker());
      const busy0 = machineBusy();
      const self0 = process.cpuUsage();
      const long = await timed(() => recogniser.transcribe(audio.wav, LANGUAGE, {}));
      const workerCpu = processCpu(watch.pid) - cpu0;
      const self = process.cpuUsage(self0);
      const others = Math.max(0, machineBusy() - busy0 - workerCpu - (self.user + self.system) / 1e6);
      const memory = watch.stop();
      const seen = [...new Set([...seenBefore, ...noteHeavy()])].sort();
      const wer = wordErrorRate(audio.text, said(long.value.segments));
      const r: TranscribeResult = {
        audio: { seconds: audio.seconds, speechSeconds: audio.speechSeconds, sentences: audio.sentences },
        modelLoad: { coldSeconds: r3(cold.seconds), warmSeconds: r3(warm.seconds), loadSeconds: r3(cold.seconds - warm.seconds), clipSeconds: r3(clipSeconds) },
        wallSeconds: r3(long.seconds),
        rtf: r3(long.seconds / seconds),
        workerCpuSeconds: r3(workerCpu),
        cpuRtf: r3(workerCpu / seconds),
        wer: r3(wer),
        memory: { vmHwmMb: mb(memory.vmHwmKb), peakSampledRssMb: mb(memory.peakSampledRssKb), samples: memory.samples },
        otherCpuSeconds: r3(others),
        othersSeen: seen,
      };
      results.push(r);
      log(
        `transcribe ${seconds} s: wall ${r.wallSeconds.toFixed(2)} s  RTF ${r.rtf.toFixed(3)}  worker cpu ${r.workerCpuSeconds.toFixed(1)} s  WER ${(r.wer * 100).toFixed(1)}%  ` +
          `VmHWM ${r.memory.vmHwmMb} MB (sampled peak ${r.memory.peakSampledRssMb} MB)  model load ${r.modelLoad.loadSeconds.toFixed(2)} s (cold ${r.modelLoad.coldSeconds.toFixed(2)}, warm ${r.modelLoad.warmSeconds.toFixed(2)})  others ${r.otherCpuSeconds.toFixed(1)} s`,
      );
    } finally {
      watch.stop();
      await recogniser.stop();
    }
  }
  return results;
}

// ── suite 2: the ladder with and without captions ──

function ladderSpec(captioned: boolean): OutputSpec {
  return create(OutputSpecSchema, {
    type: OutputType.HLS,
    video: LADDER.map((r) => ({ codec: VideoCodec.H264, width: r.width, height: r.height })),
    audio: [{ codec: AudioCodec.AAC }],
    subtitleTracks: captioned ? [{ source: SubtitleSource.GENERATED, language: "en", name: "English", kind: SubtitleKind.CAPTIONS, isDefault: true }] : [],
  });
}

interface LadderInput {
  file: string;
  probe: ProbeResult;
  text: string;
}

interface RunnerOutput {
  /** Generated track's transcript (captioned and transcription). */
  transcript?: string;
  /** Captioned: when the encode and the transcription finished, seconds from the start. */
  encodeDoneSeconds?: number;
  transcriptDoneSeconds?: number;
  outDir?: string;
}

interface Runner {
  name: "reference" | "captioned" | "transcription";
  run(input: LadderInput, dir: string, recogniser: Recogniser, guard: NetGuard): Promise<RunnerOutput>;
}

const context = (input: LadderInput, dir: string, recogniser: Recogniser, guard: NetGuard, signal: AbortSignal): SubtitleContext => ({
  recogniser,
  guard,
  inputFile: input.file,
  probe: input.probe,
  workDir: path.join(dir, "subtitles"),
  signal,
});

const RUNNERS: readonly Runner[] = [
  {
    name: "reference",
    async run(input, dir) {
      const outDir = path.join(dir, "out_bench");
      const plan = planOutput(ladderSpec(false), { file: input.file, probe: input.probe }, { outputId: "out_bench", workDir: outDir });
      await runPlan(plan, { signal: new AbortController().signal });
      return { outDir };
    },
  },
  {
    name: "captioned",
    // As encoder-node/node.ts runEncode: transcripts started first, recognition beside the encode.
    async run(input, dir, recogniser, guard) {
      const t0 = performance.now();
      const signal = new AbortController().signal;
      const spec = ladderSpec(true);
      const ctx = context(input, dir, recogniser, guard, signal);
      const transcripts = new Transcripts(ctx);
      startTranscripts([spec], transcripts);
      // The same promise startTranscripts started: when the transcript was ready.
      let transcriptDoneSeconds = 0;
      transcripts.get(TRACK_LANGUAGE).then(
        () => (transcriptDoneSeconds = (performance.now() - t0) / 1000),
        () => undefined,
      );
      const outDir = path.join(dir, "out_bench");
      const plan = planOutput(spec, { file: input.file, probe: input.probe }, { outputId: "out_bench", workDir: outDir });
      const { provided, generated } = await startTracks(spec, ctx, transcripts);
      await runPlan(plan, { signal });
      const encodeDoneSeconds = (performance.now() - t0) / 1000;
      const tracks = [...provided, ...(await generated)].sort((a, b) => a.index - b.index);
      await writeTracks(plan, tracks, segmentSecondsOf(spec), signal);
      await transcripts.dispose();
      return { transcript: said(tracks[0]?.transcript?.segments ?? []), encodeDoneSeconds, transcriptDoneSeconds, outDir };
    },
  },
  {
    name: "transcription",
    async run(input, dir, recogniser, guard) {
      const transcripts = new Transcripts(context(input, dir, recogniser, guard, new AbortController().signal));
      const t = await transcripts.get(TRACK_LANGUAGE);
      await transcripts.dispose();
      return { transcript: said(t.segments) };
    },
  },
];

interface LadderRun {
  runner: Runner["name"];
  round: number;
  wallSeconds: number;
  ffmpegCpuSeconds: number;
  workerCpuSeconds: number;
  otherCpuSeconds: number;
  /** Others used more than 5% of the run's CPU (at least 1 s). */
  contended: boolean;
  encodeDoneSeconds?: number;
  transcriptDoneSeconds?: number;
  wer?: number;
  /** Others' heavy work (stryker, vitest) running at the start or end of the run. */
  othersSeen: string[];
}

function checkOutput(name: string, out: RunnerOutput, captioned: boolean): { subtitleSegments?: number } {
  const dir = out.outDir!;
  const text = readFileSync(
    path.join(
      dir,
      readdirSync(dir).find((f) => f.endsWith(".m3u8"))!,
    ),
    "utf8",
  );
  const master = parseHlsMaster(text);
  if (master.variants.length !== LADDER.length) throw new Error(`${name}: the master lists ${master.variants.length} variants, expected ${LADDER.length}`);
  if (!captioned) return {};
  const playlist = path.join(dir, "subtitles", "track_0", "index.m3u8");
  if (!existsSync(playlist)) throw new Error(`${name}: no subtitle rendition at ${playlist}`);
  if (!text.includes("TYPE=SUBTITLES")) throw new Error(`${name}: the master has no subtitle rendition`);
  return {
    subtitleSegments: readFileSync(playlist, "utf8")
      .split("\n")
      .filter((l) => l.endsWith(".vtt")).length,
  };
}

async function ladderSuite(work: string, talk: readonly Sentence[], clip: string): Promise<Record<string, unknown>> {
  for (const c of [false, true]) {
    const check = new Check();
    checkOutputSpec(check, "outputs[0]", ladderSpec(c));
    if (check.violations.length > 0) throw new Error(`the bench's spec is invalid: ${JSON.stringify(check.violations)}`);
  }
  const audio = speechAudio(path.join(work, `video-speech-${VIDEO_SECONDS}s.wav`), VIDEO_SECONDS, talk);
  const file = path.join(work, "input.mp4");
  log(`generating a ${VIDEO_SECONDS} s 1920x1080 25 fps input with the speech…`);
  await run("ffmpeg", [
    "-hide_banner",
    "-loglevel",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    `testsrc2=size=1920x1080:rate=25:duration=${VIDEO_SECONDS}`,
    "-i",
    audio.wav,
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-b:a",
    "128k",
    "-shortest",
    file,
  ]);
  const input: LadderInput = { file, probe: await probe(file), text: audio.text };
  const guard = new NetGuard({ net: { allow: [] } });
  // One warm worker for every run, as production reuses it; the cold load is the transcribe suite's.
  const recogniser = newRecogniser();
  const watch = new WorkerWatch();
  let workerPeak = { vmHwmKb: 0, peakSampledRssKb: 0, samples: 0 };
  const runs: LadderRun[] = [];
  let subtitleSegments: number | undefined;
  let warmupSeconds = 0;
  try {
    warmupSeconds = (await timed(() => recogniser.transcribe(clip, LANGUAGE, {}))).seconds;
    log(`warm-up transcription (cold worker): ${warmupSeconds.toFixed(2)} s`);
    for (let round = 0; round < ROUNDS; round++) {
      const order = RUNNERS.map((_, i) => RUNNERS[(i + round) % RUNNERS.length]!);
      for (const runner of order) {
        await waitForQuiet(0.35, QUIET_WAIT);
        const seenBefore = noteHeavy();
        const dir = path.join(work, `run-${runner.name}`);
        rmSync(dir, { recursive: true, force: true });
        mkdirSync(dir, { recursive: true });
        const worker = watch.pid ?? findWorker();
        const ff0 = childrenCpu();
        const w0 = processCpu(worker);
        const busy0 = machineBusy();
        const self0 = process.cpuUsage();
        const { value: out, seconds } = await timed(() => runner.run(input, dir, recogniser, guard));
        const ffmpegCpu = childrenCpu() - ff0;
        const workerCpu = processCpu(worker) - w0;
        const self = process.cpuUsage(self0);
        const ours = ffmpegCpu + workerCpu + (self.user + self.system) / 1e6;
        const others = Math.max(0, machineBusy() - busy0 - ours);
        if (round === 0 && runner.name !== "transcription")
          subtitleSegments = checkOutput(runner.name, out, runner.name === "captioned").subtitleSegments ?? subtitleSegments;
        const m: LadderRun = {
          runner: runner.name,
          round,
          wallSeconds: r3(seconds),
          ffmpegCpuSeconds: r3(ffmpegCpu),
          workerCpuSeconds: r3(workerCpu),
          otherCpuSeconds: r3(others),
          contended: others > Math.max(1, 0.05 * ours),
          ...(out.encodeDoneSeconds !== undefined ? { encodeDoneSeconds: r3(out.encodeDoneSeconds) } : {}),
          ...(out.transcriptDoneSeconds !== undefined ? { transcriptDoneSeconds: r3(out.transcriptDoneSeconds) } : {}),
          ...(out.transcript !== undefined ? { wer: r3(wordErrorRate(input.text, out.transcript)) } : {}),
          othersSeen: [...new Set([...seenBefore, ...noteHeavy()])].sort(),
        };
        runs.push(m);
        rmSync(dir, { recursive: true, force: true });
        log(
          `round ${round + 1} ${runner.name.padEnd(13)} wall ${m.wallSeconds.toFixed(2)} s  ffmpeg cpu ${m.ffmpegCpuSeconds.toFixed(1)} s  worker cpu ${m.workerCpuSeconds.toFixed(1)} s  others ${m.otherCpuSeconds.toFixed(1)} s` +
            `${m.encodeDoneSeconds !== undefined ? `  encode done at ${m.encodeDoneSeconds.toFixed(2)} s, transcript at ${m.transcriptDoneSeconds!.toFixed(2)} s` : ""}${m.wer !== undefined ? `  WER ${(m.wer * 100).toFixed(1)}%` : ""}${m.contended ? "  (contended)" : ""}`,
        );
      }
    }
  } finally {
    workerPeak = watch.stop();
    await recogniser.stop();
  }
  noteHeavy();
  const of = (name: Runner["name"]) => runs.filter((r) => r.runner === name);
  const med = (name: Runner["name"], key: "wallSeconds" | "ffmpegCpuSeconds" | "workerCpuSeconds") => r3(median(of(name).map((r) => r[key])));
  const medians = Object.fromEntries(
    RUNNERS.map((r) => [
      r.name,
      {
        wallSeconds: med(r.name, "wallSeconds"),
        ffmpegCpuSeconds: med(r.name, "ffmpegCpuSeconds"),
        workerCpuSeconds: med(r.name, "workerCpuSeconds"),
        runs: of(r.name).length,
      },
    ]),
  );
  const ref = medians.reference!.wallSeconds;
  const cap = medians.captioned!.wallSeconds;
  const alone = medians.transcription!.wallSeconds;
  const ratios = {
    captionedVsReference: r3(cap / ref),
    extraWallPercent: Math.round((cap / ref - 1) * 1000) / 10,
    /** Run one after the other instead: reference + transcription alone, over reference. */
    sequentialVsReference: r3((ref + alone) / ref),
    /** Of the transcription's own wall time, the share the captioned run did not hide behind the encode. */
    transcriptionNotHidden: r3((cap - ref) / alone),
  };
  const goal = 1.15;
  log(`\nmedians of ${ROUNDS} rounds (${VIDEO_SECONDS} s 1080p25 → HLS ${LADDER.map((r) => r.name).join(", ")}):`);
  for (const [name, m] of Object.entries(medians))
    log(
      `  ${name.padEnd(13)} wall ${m.wallSeconds.toFixed(2)} s  ffmpeg cpu ${m.ffmpegCpuSeconds.toFixed(1)} s  worker cpu ${m.workerCpuSeconds.toFixed(1)} s`,
    );
  log(
    `captioned / reference: ${ratios.captionedVsReference.toFixed(3)} (${ratios.extraWallPercent >= 0 ? "+" : ""}${ratios.extraWallPercent}%)  goal < ${goal} ${ratios.captionedVsReference < goal ? "met" : "MISSED"}`,
  );
  log(`sequential (reference + transcription alone) / reference: ${ratios.sequentialVsReference.toFixed(3)}`);
  return {
    input: {
      seconds: VIDEO_SECONDS,
      width: 1920,
      height: 1080,
      fps: 25,
      encoder: "libx264 ultrafast",
      audio: `aac 128k: the speech (${audio.sentences} sentences, ${audio.speechSeconds} s of speech)`,
      size_bytes: input.probe.sizeBytes,
    },
    output: "hls (project defaults: ts segments, 6 s), 4 H.264 rungs given by width and height, one AAC track",
    ladder: LADDER,
    captioned_track: "one generated track, language en, kind captions, no chapters; a subtitle rendition in the HLS master",
    recogniser: "one warm worker for all runs (production reuses it); its cold start is the transcribe suite's model load",
    warmup_first_request_seconds: r3(warmupSeconds),
    rounds: ROUNDS,
    order: "rotated each round: reference, captioned, transcription / captioned, transcription, reference / transcription, reference, captioned",
    medians,
    ratios,
    goal: { captionedVsReference: goal, met: ratios.captionedVsReference < goal },
    subtitle_segments: subtitleSegments,
    worker_memory_during_ladder: { vmHwmMb: mb(workerPeak.vmHwmKb), peakSampledRssMb: mb(workerPeak.peakSampledRssKb) },
    runs,
  };
}

// ── main ──

async function main(): Promise<void> {
  const loadBefore = os.loadavg();
  const heavyAtStart = otherHeavyWork();
  for (const h of heavyAtStart) heavySeen.add(h);
  const work = mkdtempSync(path.join(os.tmpdir(), "captions-bench-"));
  const report: Record<string, unknown> = {};
  try {
    log("synthesizing the talk (espeak-ng, one piece per sentence)…");
    const talk = await sentences(path.join(work, "talk"));
    const talkSeconds = talk.reduce((a, s) => a + s.samples.length, 0) / SAMPLE_RATE;
    // The model-load clip: the first two sentences.
    const clipAudio = speechAudio(path.join(work, "clip.wav"), (talk[0]!.samples.length + talk[1]!.samples.length) / SAMPLE_RATE + 0.5, talk);
    log(`talk: ${talk.length} sentences, ${talkSeconds.toFixed(1)} s; model-load clip ${clipAudio.seconds.toFixed(1)} s`);
    if (SUITES.includes("transcribe")) {
      const results = await transcribeSuite(work, talk, clipAudio.wav, clipAudio.seconds);
      report.transcribe = {
        method: "fresh recogniser per length; clip transcribed twice (cold, warm), then the long audio on the warm worker; language en",
        memory_method: "worker = child of this process running worker.py; VmHWM from /proc/<pid>/status at the end, VmRSS sampled every 200 ms",
        results,
        model_load_seconds_median: r3(median(results.map((r) => r.modelLoad.loadSeconds))),
      };
    }
    if (SUITES.includes("ladder")) report.ladder = await ladderSuite(work, talk, clipAudio.wav);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const loadAfter = os.loadavg();
  const contended = Object.values(report).some((s) => {
    const o = s as { results?: { otherCpuSeconds: number; workerCpuSeconds: number }[]; runs?: { contended: boolean }[] };
    return (o.results ?? []).some((r) => r.otherCpuSeconds > Math.max(1, 0.05 * r.workerCpuSeconds)) || (o.runs ?? []).some((r) => r.contended);
  });
  const disturbed = heavySeen.size > 0 || contended;
  const commit = (() => {
    try {
      return execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    } catch {
      return "";
    }
  })();
  const paths = recogniserPaths();
  const fasterWhisper = (() => {
    try {
      return execFileSync(paths.python, ["-c", "import importlib.metadata as m; print(m.version('faster-whisper'), m.version('ctranslate2'))"], {
        encoding: "utf8",
      })
        .trim()
        .split(" ");
    } catch {
      return [];
    }
  })();
  const out = process.env.BENCH_OUT ?? path.join(import.meta.dirname, "results", `captions-${new Date().toISOString().slice(0, 10)}.json`);
  mkdirSync(path.dirname(out), { recursive: true });
  const full = {
    at: new Date().toISOString(),
    commit,
    node: process.version,
    ffmpeg: execFileSync("ffmpeg", ["-version"], { encoding: "utf8" }).split("\n")[0],
    faster_whisper: fasterWhisper[0] ?? "",
    ctranslate2: fasterWhisper[1] ?? "",
    model: `${path.basename(paths.model)} (int8, cpu_threads = cores)`,
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model ?? "",
    load_average_before: loadBefore.map((x) => Math.round(x * 100) / 100),
    load_average_after: loadAfter.map((x) => Math.round(x * 100) / 100),
    disturbed,
    other_heavy_work_seen: [...heavySeen].sort(),
    ...(process.env.BENCH_NOTE ? { note: process.env.BENCH_NOTE } : {}),
    speech:
      "test/speech.ts talk (espeak-ng en-us, 150 wpm), synthesized per sentence, repeated with 1 s of silence after each pass, whole sentences only, padded with silence to the length",
    ...report,
  };
  writeFileSync(out, `${JSON.stringify(full, null, 2)}\n`);
  log(
    `${disturbed ? `DISTURBED (others seen: ${[...heavySeen].join(", ") || "none"}; contended runs: ${contended}; load ${loadBefore.map((x) => x.toFixed(2)).join(" ")})\n` : ""}results: ${path.relative(process.cwd(), out)}`,
  );
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
