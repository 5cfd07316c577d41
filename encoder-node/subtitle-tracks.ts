// Subtitle tracks of an output, on the encoder node: generated tracks transcribed from the input's
// (clipped) audio by the recogniser, provided tracks fetched (through the network guard) and
// parsed, then written beside the encoded files: a WebVTT file per track, and a WebVTT chapters file
// for a track that asked for chapters. Transcripts are made once per language per encode attempt.
// An executor: it reports what the manifests list (HLS subtitle renditions, DASH text adaptation
// sets) and manifests/text-tracks.ts writes them.
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { BlobError, fetchUrlToFile, parseStorageUrl, type BlobStore } from "../src/blob/index.js";
import { jobOriginReading, type JobOrigins, type OriginRecord } from "../src/origins.js";
import type { NetGuard } from "../src/net-guard.js";
import { SubtitleFormat, SubtitleKind, SubtitleSource, type OutputSpec, type SubtitleTrack } from "../src/gen/media/v1/job_pb.js";
import { toWhisperLanguage } from "../src/asr-languages.js";
import type { ChapterResultData, SubtitleResultData } from "../actors/job/messages.js";
import {
  CAPTION_LIMITS,
  CaptionError,
  cuesFromTranscript,
  parseSubtitles,
  writeChaptersVtt,
  writeWebVtt,
  type Chapter,
  type Cue,
  type TranscriptSegment,
  type TranscriptWord,
} from "./captions.js";
import { FFMPEG_GLOBAL, languageName, type OutputPlan } from "./plan.js";
import { runFfmpeg } from "./executor.js";
import type { HlsTextTrack } from "./manifests/hls-subtitles.js";
import type { MpdTextTrack } from "./manifests/mpd.js";
import { MediaError } from "./media-errors.js";
import type { ProbeResult } from "./probe.js";
import type { Recogniser, Transcript } from "./recogniser.js";
import { stage } from "./stage-timing.js";

/** What an encode attempt knows for its subtitle tracks. */
export interface SubtitleContext {
  recogniser: Recogniser;
  guard: NetGuard;
  /** Reads a path of the job's input origin into a local file; undefined when the job has none. */
  readInputOriginPath?: (p: string, file: string) => Promise<unknown>;
  /** The job's origins and how to open one: an s3:// or gs:// file is read with the one for its bucket. */
  origins?: { job: JobOrigins; open: (origin: OriginRecord) => BlobStore };
  inputFile: string;
  probe: ProbeResult;
  clip?: { startSeconds: number; endSeconds: number };
  workDir: string;
  signal: AbortSignal;
}

/** A track ready to be written: its cues, and for generated tracks the transcript and chapters. */
export interface PreparedTrack {
  index: number;
  track: SubtitleTrack;
  source: "url" | "generated";
  /** BCP 47 tag as asked, else the detected language's code; "" when unknown. */
  language: string;
  name: string;
  cues: Cue[];
  transcript?: Transcript;
  chapters?: Chapter[];
}

/** The seconds of the input an output covers: the clip, else the whole input. */
function span(ctx: Pick<SubtitleContext, "clip" | "probe">): { start: number; end: number } {
  const total = ctx.probe.durationMs / 1000;
  const start = Math.max(0, ctx.clip?.startSeconds ?? 0);
  const end = ctx.clip && ctx.clip.endSeconds > 0 ? Math.min(ctx.clip.endSeconds, total || Infinity) : total;
  return { start, end };
}

/** Transcripts of one encode attempt, one per language asked ("" detects), made on first use. */
export class Transcripts {
  private readonly made = new Map<string, Promise<Transcript>>();
  private readonly listeners = new Map<string, Set<(fraction: number) => void>>();
  private readonly finished = new Set<string>();
  private wav?: Promise<string>;

  constructor(private readonly ctx: SubtitleContext) {}

  /** Whether the transcript for this language is made (or failed): nothing left to wait for. */
  done(language: string): boolean {
    return this.finished.has(language);
  }

  /** The transcript of a language, started on first ask; onProgress hears its progress from now on. */
  get(language: string, onProgress?: (fraction: number) => void): Promise<Transcript> {
    if (onProgress) {
      const set = this.listeners.get(language) ?? new Set();
      set.add(onProgress);
      this.listeners.set(language, set);
    }
    let t = this.made.get(language);
    if (!t) {
      t = stage("captions", () =>
        this.make(language, (f) => {
          for (const l of this.listeners.get(language) ?? []) l(f);
        }),
      );
      const settle = () => {
        this.finished.add(language);
      };
      t.then(settle, settle);
      this.made.set(language, t);
    }
    return t;
  }

  private async make(language: string, onProgress: (fraction: number) => void): Promise<Transcript> {
    const wav = await (this.wav ??= this.extract());
    // The audio extraction is quick next to recognition: it is not counted in progress.
    return this.ctx.recogniser.transcribe(wav, language, { signal: this.ctx.signal, onProgress });
  }

  /** The input's first audio stream after the clip, as 16 kHz mono 16-bit WAV (what Whisper hears). */
  private async extract(): Promise<string> {
    if (!this.ctx.probe.audio)
      throw new MediaError("input_unsupported", "the output has a generated subtitle track, but the input has no audio stream to transcribe");
    const { start, end } = span(this.ctx);
    const file = path.join(this.ctx.workDir, "speech.wav");
    await mkdir(this.ctx.workDir, { recursive: true });
    const args = [...FFMPEG_GLOBAL];
    if (start > 0) args.push("-ss", start.toFixed(3));
    if (this.ctx.clip && this.ctx.clip.endSeconds > 0) args.push("-to", end.toFixed(3));
    args.push("-i", this.ctx.inputFile, "-map", "0:a:0", "-vn", "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-f", "wav", file);
    await runFfmpeg(args, { durationMs: Math.max(1, (end - start) * 1000), signal: this.ctx.signal });
    return file;
  }

  async dispose(): Promise<void> {
    await rm(path.join(this.ctx.workDir, "speech.wav"), { force: true });
  }
}

/** Whether an output has a generated track whose transcript is not made yet. */
export function needsTranscription(spec: OutputSpec, transcripts: Transcripts): boolean {
  return spec.subtitleTracks.some((t) => t.source === SubtitleSource.GENERATED && !transcripts.done(toWhisperLanguage(t.language) ?? ""));
}

/** Reads an s3:// or gs:// file with the job's origin for its bucket; the key is the URL's path, as for input URLs. */
async function readStorageUrl(url: string, file: string, index: number, ctx: SubtitleContext): Promise<void> {
  const at = parseStorageUrl(url);
  const origin = ctx.origins && jobOriginReading(ctx.origins.job, at);
  if (!ctx.origins || !origin) throw new MediaError("subtitle_unreachable", `subtitle track ${index}: no origin of the job reads bucket ${at.bucket}`);
  await ctx.origins.open(origin).getToFile(at.key, file);
}

/** Fetches a provided track (https through the guard, s3:// or gs:// with the job's origin, or a path in the input origin), bounded in size. */
async function fetchProvided(t: SubtitleTrack, index: number, ctx: SubtitleContext): Promise<string> {
  const file = path.join(ctx.workDir, `provided_${index}`);
  await mkdir(ctx.workDir, { recursive: true });
  try {
    if (/^https:\/\//i.test(t.url)) await fetchUrlToFile(t.url, file, ctx.guard);
    else if (/^(s3|gs):\/\//.test(t.url)) await readStorageUrl(t.url, file, index, ctx);
    else if (ctx.readInputOriginPath) await ctx.readInputOriginPath(t.url, file);
    else throw new MediaError("subtitle_unreachable", `subtitle track ${index}: ${t.url} is a path, but the job has no input origin`);
  } catch (e) {
    if (e instanceof MediaError) throw e;
    const why = e instanceof BlobError ? e.message : (e as Error).message;
    throw new MediaError("subtitle_unreachable", `subtitle track ${index}: ${why}`);
  }
  const size = (await stat(file)).size;
  if (size > CAPTION_LIMITS.maxBytes)
    throw new MediaError("subtitle_invalid", `subtitle track ${index}: the file is ${size} bytes; the limit is ${CAPTION_LIMITS.maxBytes}`);
  const bytes = await readFile(file);
  await rm(file, { force: true });
  return bytes.toString("utf8");
}

/** Provided cues moved onto the output's timeline: shifted by the clip's start, cut to its end. */
function clipCues(cues: Cue[], ctx: SubtitleContext): Cue[] {
  const { start, end } = span(ctx);
  const length = end - start;
  return cues
    .map((c) => ({ ...c, start: c.start - start, end: c.end - start }))
    .filter((c) => c.end > 0 && (!(length > 0) || c.start < length))
    .map((c) => ({ ...c, start: Math.max(0, c.start), end: length > 0 ? Math.min(c.end, length) : c.end }));
}

/** The minimum chapter length for a transcript: a tenth of it, between 10 s and 2 min. */
export const chapterMinSeconds = (durationSeconds: number) => Math.min(120, Math.max(10, durationSeconds / 10));
export const MAX_CHAPTERS = 20;

// A word that ends a sentence: it ends in . ? ! (or their CJK forms), maybe then a closing quote or bracket.
const SENTENCE_END = /[.?!。？！]["'”’)\]]*$/;
/** Without punctuation, a run of words is still cut at the first segment end after this long. */
const MAX_SENTENCE_SECONDS = 20;

/**
 * The transcript's sentences, the units chapters are made of: its words regrouped at sentence ends,
 * since a Whisper segment may run on across a sentence end (and a change of topic) or stop mid-sentence.
 * A segment without word times is taken whole.
 */
export function chapterSentences(segments: readonly TranscriptSegment[]): { start: number; end: number; text: string }[] {
  const sentences: { start: number; end: number; text: string }[] = [];
  let run: TranscriptWord[] = [];
  const flush = () => {
    const [first, last] = [run[0], run.at(-1)];
    if (first && last) sentences.push({ start: first.start, end: last.end, text: run.map((w) => w.word.trim()).join(" ") });
    run = [];
  };
  const runSeconds = () => (run.at(-1)?.end ?? 0) - (run[0]?.start ?? 0);
  for (const segment of segments) {
    const words = (segment.words ?? []).filter((w) => w.word.trim() !== "");
    if (words.length === 0) {
      flush();
      if (segment.text.trim() !== "") sentences.push({ start: segment.start, end: segment.end, text: segment.text.trim() });
      continue;
    }
    for (const word of words) {
      run.push(word);
      if (SENTENCE_END.test(word.word.trim())) flush();
    }
    if (runSeconds() >= MAX_SENTENCE_SECONDS) flush();
  }
  flush();
  return sentences;
}

/** A generated track's cues and chapters, once its transcript is made. */
async function generatedTrack(index: number, track: SubtitleTrack, transcript: Transcript, ctx: SubtitleContext): Promise<PreparedTrack> {
  const language = track.language || transcript.language;
  const cues = cuesFromTranscript(transcript.segments);
  // The first chapter starts with the video, whatever silence comes before the first words.
  const chapters =
    track.generateChapters && transcript.segments.length > 0
      ? (await ctx.recogniser.chapters(chapterSentences(transcript.segments), chapterMinSeconds(transcript.durationSeconds), MAX_CHAPTERS)).map((c, i) =>
          i === 0 ? { ...c, start: 0 } : c,
        )
      : undefined;
  return {
    index,
    track,
    source: "generated",
    language,
    name: track.name || languageName(language) || "Captions",
    cues,
    transcript,
    ...(chapters ? { chapters } : {}),
  };
}

/** A provided track, fetched, validated, converted and moved onto the clip's timeline. */
async function providedTrack(index: number, track: SubtitleTrack, ctx: SubtitleContext): Promise<PreparedTrack> {
  const text = await fetchProvided(track, index, ctx);
  let cues: Cue[];
  try {
    cues = parseSubtitles(text, track.format === SubtitleFormat.SRT ? "srt" : track.format === SubtitleFormat.VTT ? "vtt" : undefined);
  } catch (e) {
    if (e instanceof CaptionError) throw new MediaError("subtitle_invalid", `subtitle track ${index}: ${e.message}`);
    throw e;
  }
  return {
    index,
    track,
    source: "url",
    language: track.language,
    name: track.name || languageName(track.language) || `Subtitles ${index + 1}`,
    cues: clipCues(cues, ctx),
  };
}

/**
 * An output's tracks, in two steps so that speech recognition runs beside the encode: `provided`
 * (fetched and checked before the encode, so a bad file fails the output early) and `generated`
 * (started at once, awaited after the encode).
 */
export async function startTracks(
  spec: OutputSpec,
  ctx: SubtitleContext,
  transcripts: Transcripts,
  onProgress?: (fraction: number) => void,
): Promise<{ provided: PreparedTrack[]; generated: Promise<PreparedTrack[]> }> {
  const kinds = spec.subtitleTracks.map((track, index) => ({ track, index }));
  const asked = kinds.filter((k) => k.track.source === SubtitleSource.GENERATED);
  const fractions = asked.map(() => 0);
  const generated = Promise.all(
    asked.map(async ({ track, index }, j) => {
      const transcript = await transcripts.get(toWhisperLanguage(track.language) ?? "", (f) => {
        fractions[j] = f;
        onProgress?.(fractions.reduce((a, b) => a + b, 0) / asked.length);
      });
      return generatedTrack(index, track, transcript, ctx);
    }),
  );
  // Awaited later; a failure is handled there, not left unhandled meanwhile.
  generated.catch(() => undefined);
  const provided: PreparedTrack[] = [];
  for (const { track, index } of kinds) {
    if (ctx.signal.aborted) throw new MediaError("canceled", "canceled");
    if (track.source === SubtitleSource.URL) provided.push(await providedTrack(index, track, ctx));
  }
  return { provided, generated };
}

/** Starts every transcript the job's outputs will need, so recognition runs beside the first encode. */
export function startTranscripts(specs: readonly OutputSpec[], transcripts: Transcripts): void {
  for (const spec of specs) {
    for (const t of spec.subtitleTracks) if (t.source === SubtitleSource.GENERATED) transcripts.get(toWhisperLanguage(t.language) ?? "").catch(() => undefined);
  }
}

const trackFile = (index: number) => `subtitles/track_${index}.vtt`;
const chaptersFile = (index: number) => `subtitles/chapters_${index}.vtt`;
const chaptersJsonFile = (index: number) => `subtitles/chapters_${index}.json`;

/** Apple's HLS chapter list (com.apple.hls.chapters): start and duration of each chapter, its title by language. */
export function appleChapters(chapters: readonly Chapter[], language: string): string {
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return JSON.stringify(
    chapters.map((c, i) => ({
      chapter: i + 1,
      "start-time": round(c.start),
      duration: round(c.end - c.start),
      titles: [{ language: language || "und", title: c.title }],
    })),
  );
}
/** The track files written into a plan's folder, and what the manifests list of them. */
export interface TrackFiles {
  readonly files: { index: number; file: string; chapters?: string }[];
  /** HLS subtitle renditions (the plan has an HLS master). */
  readonly hls: readonly HlsTextTrack[];
  /** DASH text adaptation sets (the plan has an MPD). */
  readonly mpd: readonly MpdTextTrack[];
}

/** After the encode: writes every track's files into the plan's folder and says where they are. */
export async function writeTrackFiles(plan: OutputPlan, tracks: readonly PreparedTrack[]): Promise<TrackFiles> {
  if (tracks.length === 0) return { files: [], hls: [], mpd: [] };
  await mkdir(path.join(plan.dir, "subtitles"), { recursive: true });
  const files: { index: number; file: string; chapters?: string }[] = [];
  for (const t of tracks) {
    await writeFile(path.join(plan.dir, trackFile(t.index)), writeWebVtt(t.cues));
    const entry: { index: number; file: string; chapters?: string } = { index: t.index, file: trackFile(t.index) };
    if (t.chapters && t.chapters.length > 0) {
      await writeFile(path.join(plan.dir, chaptersFile(t.index)), writeChaptersVtt(t.chapters));
      if (plan.hlsMaster) await writeFile(path.join(plan.dir, chaptersJsonFile(t.index)), appleChapters(t.chapters, t.language));
      entry.chapters = chaptersFile(t.index);
    }
    files.push(entry);
  }
  const hls = tracks.map((t) => ({
    index: t.index,
    name: t.name,
    language: t.language,
    cues: t.cues,
    isDefault: t.track.isDefault,
    forced: t.track.forced,
    captions: t.track.kind === SubtitleKind.CAPTIONS,
    ...(t.chapters && t.chapters.length > 0 ? { chaptersJson: chaptersJsonFile(t.index) } : {}),
  }));
  const mpd = tracks.map((t) => ({
    id: `subtitle_${t.index}`,
    language: t.language || "und",
    label: t.name,
    url: trackFile(t.index),
    role: t.track.kind === SubtitleKind.CAPTIONS || t.source === "generated" ? ("caption" as const) : ("subtitle" as const),
  }));
  return { files, hls, mpd };
}

/** The job's records of an output's tracks, with URLs in the output's storage. */
export function trackResults(
  outputId: string,
  tracks: readonly PreparedTrack[],
  files: readonly { index: number; file: string; chapters?: string }[],
  at: (rel: string) => { url: string; key: string },
): { subtitles: SubtitleResultData[]; chapters: ChapterResultData[] } {
  const round = (n: number) => Math.round(n * 1000) / 1000;
  const subtitles: SubtitleResultData[] = [];
  const chapters: ChapterResultData[] = [];
  for (const t of tracks) {
    const f = files.find((x) => x.index === t.index);
    if (!f) continue;
    subtitles.push({
      outputId,
      trackIndex: t.index,
      source: t.source,
      language: t.language,
      name: t.name,
      ...at(f.file),
      ...(t.transcript ? { transcript: t.transcript.segments.map((s) => ({ start: round(s.start), end: round(s.end), text: s.text })) } : {}),
    });
    if (f.chapters && t.chapters)
      chapters.push({
        outputId,
        trackIndex: t.index,
        language: t.language,
        ...at(f.chapters),
        chapters: t.chapters.map((c) => ({ start: round(c.start), end: round(c.end), title: c.title })),
      });
  }
  return { subtitles, chapters };
}
