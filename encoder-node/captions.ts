// Captions: uploaded WebVTT and SRT parsed into validated cues, cues built from a transcript's word
// timings, and the text tracks they become (WebVTT files, HLS subtitle renditions, DASH text sets).
// Pure: no file system, no processes.
import { MediaError } from "./media-errors.js";

export interface Cue {
  /** Seconds. */
  start: number;
  end: number;
  /** WebVTT cue text; lines separated by "\n". */
  text: string;
}

export interface TranscriptWord {
  start: number;
  end: number;
  /** Whisper's convention: a leading space starts a new word; none continues the previous one. */
  word: string;
  probability?: number;
}

export interface TranscriptSegment {
  start: number;
  end: number;
  text: string;
  words?: TranscriptWord[];
}

export interface Chapter {
  start: number;
  end: number;
  title: string;
}

/** A subtitle file we refuse; the message names the line. */
export class CaptionError extends Error {
  readonly code = "subtitle_invalid" as const;

  constructor(
    message: string,
    /** 1-based line of the input the message is about. */
    readonly line: number,
  ) {
    super(message);
    this.name = "CaptionError";
  }
}

export const CAPTION_LIMITS = { maxBytes: 2 * 1024 * 1024, maxCues: 20_000, maxCueChars: 1000 };

/** A few U+FFFD come from one badly converted character; more mean the bytes were not text. */
const MAX_REPLACEMENT_CHARS = 8;

const fail = (line: number, what: string) => new CaptionError(`line ${line}: ${what}`, line);

// ───────────────────────────── parsing ─────────────────────────────

const VTT_TIME = /^(?:(\d{2,}):)?([0-5]\d):([0-5]\d)\.(\d{3})$/;
const SRT_TIME = /^(\d+):([0-5]\d):([0-5]\d)[,.](\d{3})$/;
const TIMING = /^\s*(\S+?)\s*-->\s*(\S+)(?:\s.*)?$/;
const isBlank = (line: string) => line.trim() === "";

interface Block {
  lines: string[];
  /** 1-based line number of lines[0]. */
  first: number;
}

/** Runs of non-blank lines from index `from` on. */
function blocksOf(lines: string[], from: number): Block[] {
  const blocks: Block[] = [];
  let current: Block | undefined;
  for (let i = from; i < lines.length; i++) {
    const line = lines[i]!;
    if (isBlank(line)) current = undefined;
    else if (current) current.lines.push(line);
    else blocks.push((current = { lines: [line], first: i + 1 }));
  }
  return blocks;
}

function parseTime(raw: string, pattern: RegExp, line: number, expected: string): number {
  if (raw.startsWith("-")) throw fail(line, `negative time "${raw}"`);
  const m = pattern.exec(raw);
  if (!m) throw fail(line, `bad timestamp "${raw}" (expected ${expected})`);
  const [, h, min, s, ms] = m;
  return (Number(h ?? 0) * 3_600_000 + Number(min) * 60_000 + Number(s) * 1000 + Number(ms)) / 1000;
}

function parseTiming(text: string, line: number, format: "vtt" | "srt"): { start: number; end: number } {
  const m = TIMING.exec(text);
  if (!m) throw fail(line, `bad cue timing "${text}" (expected start --> end)`);
  const time = (raw: string) =>
    format === "vtt" ? parseTime(raw, VTT_TIME, line, "hh:mm:ss.ttt or mm:ss.ttt") : parseTime(raw, SRT_TIME, line, "hh:mm:ss,mmm");
  const start = time(m[1]!);
  const end = time(m[2]!);
  if (end < start) throw fail(line, `the cue ends (${formatVttTime(end)}) before it starts (${formatVttTime(start)})`);
  return { start, end };
}

const TAG_OR_SPECIAL = /<(\/?)([a-zA-Z]+)(?:\s[^<>]*)?>|&(?:#\d+|#[xX][0-9a-fA-F]+|[a-zA-Z][a-zA-Z0-9]*);|[<>&]/g;
const KEPT_TAGS = new Set(["b", "i", "u"]);

/** SRT line to WebVTT cue text: b, i and u kept, font and ASS overrides ({\an8}) dropped, the rest escaped. */
function srtLineToVtt(line: string): string {
  return line.replace(/\{\\[^}]*\}/g, "").replace(TAG_OR_SPECIAL, (token, slash: string | undefined, name: string | undefined) => {
    if (name !== undefined) {
      const tag = name.toLowerCase();
      if (KEPT_TAGS.has(tag)) return `<${slash}${tag}>`;
      if (tag === "font") return "";
      return escapeText(token);
    }
    if (token.length > 1) return token; // an entity
    return token === "<" ? "&lt;" : token === ">" ? "&gt;" : "&amp;";
  });
}

const looksLikeSrt = (lines: string[]): boolean => {
  const i = lines.findIndex((l) => !isBlank(l));
  if (i < 0) return false;
  return lines[i]!.includes("-->") || (/^\s*\d+\s*$/.test(lines[i]!) && (lines[i + 1] ?? "").includes("-->"));
};

/** Detects (or takes) the format and parses WebVTT or SRT into validated cues, sorted by start. */
export function parseSubtitles(text: string, format?: "vtt" | "srt"): Cue[] {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > CAPTION_LIMITS.maxBytes) throw new CaptionError(`line 1: the file is ${bytes} bytes, over the limit of ${CAPTION_LIMITS.maxBytes}`, 1);
  const body = (text.startsWith("\uFEFF") ? text.slice(1) : text).replace(/\r\n?/g, "\n");
  const lineAt = (index: number) => body.slice(0, index).split("\n").length;
  const nul = body.indexOf("\0");
  if (nul >= 0) throw fail(lineAt(nul), "binary content (a NUL byte), not a text subtitle file");
  const replacements = body.match(/\uFFFD/g)?.length ?? 0;
  if (replacements > MAX_REPLACEMENT_CHARS) throw fail(lineAt(body.indexOf("\uFFFD")), `binary content or not UTF-8 (${replacements} invalid characters)`);
  const lines = body.split("\n");
  if (lines.every(isBlank)) throw fail(1, "the file is empty");
  const kind = format ?? (body.startsWith("WEBVTT") ? "vtt" : looksLikeSrt(lines) ? "srt" : undefined);
  if (!kind) throw fail(1, "neither WebVTT (the first line must be WEBVTT) nor SRT (a cue number, then a line like 00:00:01,000 --> 00:00:02,000)");
  const cues = kind === "vtt" ? vttCues(lines) : srtCues(lines);
  if (cues.length === 0) throw fail(lines.length, "the file holds no cues");
  return cues.sort((a, b) => a.start - b.start);
}

/** Appends a cue, enforcing the count and length limits. */
function pushCue(cues: Cue[], line: number, timing: { start: number; end: number }, textLines: string[], toText: (lines: string[]) => string): void {
  if (cues.length >= CAPTION_LIMITS.maxCues) throw fail(line, `more than ${CAPTION_LIMITS.maxCues} cues`);
  const raw = textLines.join("\n");
  if (raw.length > CAPTION_LIMITS.maxCueChars) throw fail(line, `the cue has ${raw.length} characters, over the limit of ${CAPTION_LIMITS.maxCueChars}`);
  cues.push({ ...timing, text: toText(textLines) });
}

function vttCues(lines: string[]): Cue[] {
  if (!/^WEBVTT(?:[ \t].*)?$/.test(lines[0]!))
    throw fail(1, `the header must be WEBVTT, optionally followed by a space and text, not "${lines[0]!.slice(0, 40)}"`);
  // The header runs to the first blank line (or a timing line, which browsers accept too).
  let i = 1;
  while (i < lines.length && !isBlank(lines[i]!) && !lines[i]!.includes("-->")) i++;
  const cues: Cue[] = [];
  for (const block of blocksOf(lines, i)) {
    const head = block.lines[0]!;
    if (/^NOTE(?:[ \t]|$)/.test(head) || /^(?:STYLE|REGION)[ \t]*$/.test(head)) continue;
    const at = head.includes("-->") ? 0 : 1; // an optional identifier line comes first
    const timingLine = block.lines[at];
    if (timingLine === undefined || !timingLine.includes("-->"))
      throw fail(
        timingLine === undefined ? block.first : block.first + at,
        `expected a cue timing line (start --> end), found "${(timingLine ?? head).slice(0, 40)}"`,
      );
    const line = block.first + at;
    pushCue(cues, line, parseTiming(timingLine, line, "vtt"), block.lines.slice(at + 1), (t) => t.join("\n"));
  }
  return cues;
}

function srtCues(lines: string[]): Cue[] {
  const cues: Cue[] = [];
  for (const block of blocksOf(lines, 0)) {
    // The cue number is optional: some writers drop it, and nothing uses it.
    const at = block.lines[0]!.includes("-->") ? 0 : /^\s*\d+\s*$/.test(block.lines[0]!) ? 1 : -1;
    const timingLine = at < 0 ? undefined : block.lines[at];
    if (timingLine === undefined || !timingLine.includes("-->"))
      throw fail(
        timingLine === undefined ? block.first : block.first + at,
        `expected a cue number and a timing line (00:00:01,000 --> 00:00:02,000), found "${(timingLine ?? block.lines[0]!).slice(0, 40)}"`,
      );
    const line = block.first + at;
    pushCue(cues, line, parseTiming(timingLine, line, "srt"), block.lines.slice(at + 1), (t) => t.map(srtLineToVtt).join("\n"));
  }
  return cues;
}

// ───────────────────────────── transcripts ─────────────────────────────

interface Word {
  start: number;
  end: number;
  text: string;
  /** Joined to the previous word with a space. */
  spaced: boolean;
}

interface CueShape {
  maxLineChars: number;
  maxSeconds: number;
}

const PAUSE_SECONDS = 0.7;
const SENTENCE_END = /[.!?…。！？]["'”’)\]]*$/;
const CLAUSE_END = /[,;:，、；：—–]["'”’)\]]*$/;

const joinWords = (words: Word[]) => words.map((w, i) => (i > 0 && w.spaced ? " " : "") + w.text).join("");
const escapeText = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const ms = (s: number) => Math.round(s * 1000) / 1000;

/** The words as at most two lines of maxLineChars, as balanced as possible, or undefined when they do not fit. */
function wrap(words: Word[], maxLineChars: number): string[] | undefined {
  const whole = joinWords(words);
  if (whole.length <= maxLineChars) return [whole];
  let best: string[] | undefined;
  for (let k = 1; k < words.length; k++) {
    const top = joinWords(words.slice(0, k));
    const bottom = joinWords(words.slice(k));
    if (top.length > maxLineChars || bottom.length > maxLineChars) continue;
    if (!best || Math.max(top.length, bottom.length) < Math.max(best[0]!.length, best[1]!.length)) best = [top, bottom];
  }
  return best;
}

const fits = (words: Word[], shape: CueShape) => words.at(-1)!.end - words[0]!.start <= shape.maxSeconds && wrap(words, shape.maxLineChars) !== undefined;

/** Cue text of words that may not fit (a single overlong word): wrapped when possible, else one line. */
const cueText = (words: Word[], shape: CueShape) => (wrap(words, shape.maxLineChars) ?? [joinWords(words)]).map(escapeText).join("\n");

/** Cues of words spoken without a pause: the longest prefix that fits, cut back to its last sentence end, else to a clause end in its second half. */
function cuesOfRun(run: Word[], shape: CueShape): Cue[] {
  const cues: Cue[] = [];
  let i = 0;
  while (i < run.length) {
    let j = i + 1;
    while (j < run.length && fits(run.slice(i, j + 1), shape)) j++;
    let cut = j;
    if (j < run.length) {
      const lastBreak = (end: RegExp, from: number) => {
        for (let k = j; k > from; k--) if (end.test(run[k - 1]!.text)) return k;
        return undefined;
      };
      cut = lastBreak(SENTENCE_END, i) ?? lastBreak(CLAUSE_END, i + Math.floor((j - i) / 2)) ?? j;
    }
    const words = run.slice(i, cut);
    cues.push({ start: words[0]!.start, end: words.at(-1)!.end, text: cueText(words, shape) });
    i = cut;
  }
  return cues;
}

/** A segment without word timings: one cue, or several splitting its text evenly by characters and its time in proportion. */
function cuesOfText(seg: TranscriptSegment, shape: CueShape): Cue[] {
  const tokens = seg.text
    .trim()
    .split(/\s+/)
    .filter((t) => t !== "");
  if (tokens.length === 0) return [];
  const words = tokens.map((text) => ({ start: seg.start, end: seg.end, text, spaced: true }));
  const total = joinWords(words).length;
  const duration = Math.max(0, seg.end - seg.start);
  const offsets: number[] = [];
  for (let k = 0, at = 0; k < tokens.length; at += tokens[k]!.length + 1, k++) offsets.push(at);
  let n = Math.max(1, Math.ceil(total / (2 * shape.maxLineChars)), Math.ceil(duration / shape.maxSeconds));
  for (; ; n++) {
    // Each word goes to the chunk holding its middle character.
    const chunks: number[][] = Array.from({ length: n }, () => []);
    tokens.forEach((t, k) => chunks[Math.min(n - 1, Math.floor(((offsets[k]! + t.length / 2) * n) / total))]!.push(k));
    const used = chunks.filter((c) => c.length > 0);
    const cues = used.map((c, u) => {
      const from = u === 0 ? 0 : offsets[c[0]!]!;
      const to = u === used.length - 1 ? total : offsets[used[u + 1]![0]!]!;
      return { start: seg.start + (duration * from) / total, end: seg.start + (duration * to) / total, words: c.map((k) => words[k]!) };
    });
    const fit = cues.every((c) => c.end - c.start <= shape.maxSeconds && wrap(c.words, shape.maxLineChars));
    // One word per cue is as far as splitting goes.
    if (fit || n >= tokens.length) return cues.map((c) => ({ start: c.start, end: c.end, text: cueText(c.words, shape) }));
  }
}

/**
 * Caption cues from a transcript's word timings: at most two lines of maxLineChars (42) and
 * maxSeconds (7) per cue. A pause over 0.7 s always ends a cue; a cue that must be cut is cut at
 * its last sentence end, else at a clause end. Each cue starts at its first word and ends at its
 * last, extended to minSeconds (1) where the next cue leaves room, never overlapping the next.
 * Segments without words become one cue each, split evenly by characters when too long.
 */
export function cuesFromTranscript(segments: TranscriptSegment[], opts: { maxLineChars?: number; maxSeconds?: number; minSeconds?: number } = {}): Cue[] {
  const shape: CueShape = { maxLineChars: opts.maxLineChars ?? 42, maxSeconds: opts.maxSeconds ?? 7 };
  const minSeconds = opts.minSeconds ?? 1;
  if (!(shape.maxLineChars >= 1 && shape.maxSeconds > 0 && minSeconds >= 0)) throw new RangeError(`cue limits must be positive: ${JSON.stringify(opts)}`);
  // Words without Whisper's leading spaces (another transcriber) are joined with spaces.
  const whisperSpacing = segments.some((s) => s.words?.some((w) => /^\s/.test(w.word)));
  const cues: Cue[] = [];
  let run: Word[] = [];
  const flush = () => {
    let from = 0;
    for (let k = 1; k <= run.length; k++) {
      if (k < run.length && run[k]!.start - run[k - 1]!.end <= PAUSE_SECONDS) continue;
      cues.push(...cuesOfRun(run.slice(from, k), shape));
      from = k;
    }
    run = [];
  };
  for (const seg of segments) {
    if (seg.words && seg.words.length > 0) {
      for (const w of seg.words) {
        const text = w.word.trim();
        if (text !== "") run.push({ start: w.start, end: Math.max(w.start, w.end), text, spaced: !whisperSpacing || /^\s/.test(w.word) });
      }
    } else {
      flush();
      cues.push(...cuesOfText(seg, shape));
    }
  }
  flush();
  cues.sort((a, b) => a.start - b.start);
  return cues.map((c, k) => {
    const next = cues[k + 1];
    const end = Math.max(c.end, c.start + minSeconds);
    return { start: ms(c.start), end: ms(next ? Math.max(c.start, Math.min(end, next.start)) : end), text: c.text };
  });
}

// ───────────────────────────── writing ─────────────────────────────

/** hh:mm:ss.ttt, always with hours. */
export function formatVttTime(seconds: number): string {
  const total = Math.max(0, Math.round(seconds * 1000));
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${pad(Math.floor(total / 3_600_000))}:${pad(Math.floor(total / 60_000) % 60)}:${pad(Math.floor(total / 1000) % 60)}.${pad(total % 1000, 3)}`;
}

/** A WebVTT file; with timestampMap (HLS segments), the X-TIMESTAMP-MAP header mapping local 0 to that MPEG-TS time. */
export function writeWebVtt(cues: Cue[], opts: { timestampMap?: { mpegts: number } } = {}): string {
  const header = opts.timestampMap ? `WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:${Math.round(opts.timestampMap.mpegts)},LOCAL:00:00:00.000` : "WEBVTT";
  // A blank line would end the cue early and "-->" would start a new one.
  const body = cues.map((c) =>
    [
      `${formatVttTime(c.start)} --> ${formatVttTime(c.end)}`,
      ...c.text
        .split("\n")
        .filter((l) => !isBlank(l))
        .map((l) => l.replaceAll("-->", "--&gt;")),
    ].join("\n"),
  );
  return [header, ...body].join("\n\n") + "\n";
}

/** A WebVTT chapters track: one cue per chapter, its title as plain text. */
export function writeChaptersVtt(chapters: Chapter[]): string {
  return writeWebVtt(chapters.map((c) => ({ start: c.start, end: c.end, text: escapeText(c.title.replace(/\s+/g, " ").trim()) })));
}

/**
 * An HLS subtitle rendition: a VOD playlist of WebVTT segments of segmentSeconds (the last may be
 * shorter), named seg_00000.vtt... beside it. Each segment carries every cue overlapping it, so a
 * cue spanning a boundary is in both (Apple's authoring practice), and the X-TIMESTAMP-MAP header.
 */
export function hlsSubtitleRendition(
  cues: Cue[],
  o: { segmentSeconds: number; durationSeconds: number; mpegts: number },
): { playlist: string; segments: { name: string; text: string }[] } {
  // Whole milliseconds, as the playlist prints them: float error cannot add an empty segment or a second of target.
  const segmentMs = Math.round(o.segmentSeconds * 1000);
  const durationMs = Math.round(o.durationSeconds * 1000);
  if (!(segmentMs > 0 && durationMs > 0))
    throw new RangeError(`segmentSeconds and durationSeconds must be at least 1 ms: ${o.segmentSeconds}, ${o.durationSeconds}`);
  const count = Math.ceil(durationMs / segmentMs);
  const segments: { name: string; text: string; ms: number }[] = [];
  for (let k = 0; k < count; k++) {
    const from = (k * segmentMs) / 1000;
    const to = Math.min((k + 1) * segmentMs, durationMs) / 1000;
    const inside = cues.filter((c) => c.start < to && (c.end > from || (c.end === c.start && c.start >= from)));
    segments.push({
      name: `seg_${String(k).padStart(5, "0")}.vtt`,
      text: writeWebVtt(inside, { timestampMap: { mpegts: o.mpegts } }),
      ms: Math.min(segmentMs, durationMs - k * segmentMs),
    });
  }
  const target = Math.ceil(Math.min(segmentMs, durationMs) / 1000); // the first segment is the longest
  const playlist = [
    "#EXTM3U",
    "#EXT-X-VERSION:3",
    `#EXT-X-TARGETDURATION:${target}`,
    "#EXT-X-MEDIA-SEQUENCE:0",
    "#EXT-X-PLAYLIST-TYPE:VOD",
    ...segments.flatMap((s) => [`#EXTINF:${(s.ms / 1000).toFixed(3)},`, s.name]),
    "#EXT-X-ENDLIST",
    "",
  ].join("\n");
  return { playlist, segments: segments.map(({ name, text }) => ({ name, text })) };
}

const escapeXml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&apos;");

/**
 * Adds one text AdaptationSet per track to the first Period of an MPD as ffmpeg's dash muxer
 * writes it, after its last AdaptationSet. Chapters are no DASH track: they stay a sidecar file.
 */
export function addTextTracksToMpd(mpd: string, tracks: { id: string; language: string; label: string; url: string; role: "subtitle" | "caption" }[]): string {
  const close = mpd.indexOf("</Period>");
  if (close < 0) throw new MediaError("internal", "the MPD has no </Period> to add text tracks to");
  const period = mpd.slice(0, close);
  const ids = [...period.matchAll(/<AdaptationSet\b[^>]*?\sid="(\d+)"/g)].map((m) => Number(m[1]));
  const taken = new Set([...mpd.matchAll(/<Representation\b[^>]*?\sid="([^"]*)"/g)].map((m) => m[1]));
  for (const t of tracks) {
    if (taken.has(t.id)) throw new MediaError("internal", `the MPD already has a Representation with id "${t.id}"`);
    taken.add(t.id);
  }
  // Indent like the Period's own line (ffmpeg: tabs), one level deeper per element.
  const lineStart = mpd.lastIndexOf("\n", close) + 1;
  const indent = mpd.slice(lineStart, close);
  const at = /^[ \t]*$/.test(indent) ? lineStart : close;
  const unit = indent.includes(" ") ? "  " : "\t";
  const pad = (depth: number) => (at === lineStart ? indent : "") + unit.repeat(depth);
  let next = ids.length > 0 ? Math.max(...ids) + 1 : 0;
  const sets = tracks.map((t) =>
    [
      `${pad(1)}<AdaptationSet id="${next++}" contentType="text" mimeType="text/vtt" lang="${escapeXml(t.language)}">`,
      `${pad(2)}<Label>${escapeXml(t.label)}</Label>`,
      `${pad(2)}<Role schemeIdUri="urn:mpeg:dash:role:2011" value="${t.role}" />`,
      `${pad(2)}<Representation id="${escapeXml(t.id)}" bandwidth="256">`,
      `${pad(3)}<BaseURL>${escapeXml(t.url)}</BaseURL>`,
      `${pad(2)}</Representation>`,
      `${pad(1)}</AdaptationSet>`,
      "",
    ].join("\n"),
  );
  return mpd.slice(0, at) + sets.join("") + mpd.slice(at);
}

// Whisper's languages live in src/asr-languages.ts: the gateway checks requests against them.
export { toWhisperLanguage, WHISPER_LANGUAGES } from "../src/asr-languages.js";
