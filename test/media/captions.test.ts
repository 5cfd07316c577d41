// The recogniser worker on real speech (espeak-ng): transcript accuracy, word and cue timing,
// language detection, chapters of a three-topic talk, chunked long audio, cancellation and the
// worker's errors. The encoder node's pipeline on top (ffmpeg, packaging) is in test/api/captions.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cuesFromTranscript } from "../../encoder-node/captions.js";
import { MediaError } from "../../encoder-node/media-errors.js";
import { recogniserPaths, startRecogniser, type Recogniser, type Transcript } from "../../encoder-node/recogniser.js";
import { chapterMinSeconds } from "../../encoder-node/subtitles.js";
import { createLogger } from "../../src/log.js";
import { synthesizeSpeech, TOPICS, wordErrorRate, type Speech } from "../speech.js";

const run = promisify(execFile);
const root = mkdtempSync(path.join(tmpdir(), "captions-media-"));
let recogniser: Recogniser;
let speech: Speech;
let english: Transcript;

describe("the speech recogniser", { timeout: 180_000 }, () => {
  beforeAll(async () => {
    speech = await synthesizeSpeech(root);
    recogniser = startRecogniser(recogniserPaths(), createLogger("silent"));
    const progress: number[] = [];
    english = await recogniser.transcribe(speech.wav, "en", { onProgress: (f) => progress.push(f) });
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.every((f, i) => f >= 0 && f <= 1 && (i === 0 || f >= progress[i - 1]!))).toBe(true);
  }, 180_000);
  afterAll(async () => {
    await recogniser?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("transcribes the talks with a word error rate under 15%", () => {
    const said = english.segments.map((s) => s.text).join(" ");
    expect(wordErrorRate(speech.text, said)).toBeLessThan(0.15);
    expect(english.language).toBe("en");
    expect(english.durationSeconds).toBeCloseTo(speech.durationSeconds, 0);
  });

  it("times words inside their segment, in order, and the cues made from them within 0.5 s of the words", () => {
    const words = english.segments.flatMap((s) => s.words ?? []);
    expect(words.length).toBeGreaterThan(80);
    for (let i = 1; i < words.length; i++) expect(words[i]!.start).toBeGreaterThanOrEqual(words[i - 1]!.start);
    for (const s of english.segments) for (const w of s.words ?? []) expect(w.start >= s.start - 0.01 && w.end <= s.end + 0.01).toBe(true);
    const cues = cuesFromTranscript(english.segments);
    expect(cues.length).toBeGreaterThan(5);
    for (const c of cues) {
      // Each cue starts at a word's start and ends at (or up to the minimum length after) a word's end.
      expect(Math.min(...words.map((w) => Math.abs(w.start - c.start)))).toBeLessThan(0.5);
      expect(Math.min(...words.map((w) => Math.abs(w.end - c.end)))).toBeLessThan(0.5 + 1);
      expect(c.end).toBeGreaterThan(c.start);
    }
    for (let i = 1; i < cues.length; i++) expect(cues[i]!.start).toBeGreaterThanOrEqual(cues[i - 1]!.end);
    // The first word of each topic (after the synthesiser's pause) is timed where the topic starts.
    TOPICS.forEach((_, i) => {
      const w = words.find((x) => x.start >= speech.topicStarts[i]! - 0.5);
      expect(w, `first word of topic ${i}`).toBeDefined();
      expect(Math.abs(w!.start - speech.topicStarts[i]!), `topic ${i}: ${w!.word} at ${w!.start}`).toBeLessThan(0.8);
    });
  });

  it("detects the language when none is given", async () => {
    const detected = await recogniser.transcribe(speech.wav, "", {});
    expect(detected.language).toBe("en");
    expect(wordErrorRate(speech.text, detected.segments.map((s) => s.text).join(" "))).toBeLessThan(0.15);
  });

  it("splits the three-topic talk into three chapters at the sentences where the topic changes", async () => {
    const chapters = await recogniser.chapters(english.segments, chapterMinSeconds(english.durationSeconds), 20);
    expect(chapters).toHaveLength(3);
    expect(chapters[0]!.start).toBeLessThan(1);
    for (let i = 1; i < 3; i++) {
      expect(Math.abs(chapters[i]!.start - speech.topicStarts[i]!)).toBeLessThan(1.5);
      expect(chapters[i]!.start).toBe(chapters[i - 1]!.end);
    }
    for (const c of chapters) expect(c.title.length).toBeGreaterThan(0);
    expect(chapters.map((c) => c.title.toLowerCase()).join(" | ")).toMatch(/volcan|lava|erupt|earth/);
  });

  it("transcribes long audio in chunks, offsetting each chunk's times", async () => {
    // Six minutes: the talks three times with pauses, cut into 2-minute chunks at quiet points.
    const list = path.join(root, "long.txt");
    const silence = path.join(root, "silence.wav");
    await run("ffmpeg", [
      "-hide_banner",
      "-loglevel",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "anullsrc=r=16000:cl=mono",
      "-t",
      "20",
      "-c:a",
      "pcm_s16le",
      silence,
    ]);
    writeFileSync(list, Array.from({ length: 4 }, () => `file '${speech.wav}'\nfile '${silence}'`).join("\n"));
    const long = path.join(root, "long.wav");
    await run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-f", "concat", "-safe", "0", "-i", list, "-c:a", "pcm_s16le", long]);
    const t = await recogniser.transcribe(long, "en", {});
    const period = speech.durationSeconds + 20;
    expect(t.durationSeconds).toBeCloseTo(4 * period, 0);
    for (let i = 1; i < t.segments.length; i++) expect(t.segments[i]!.start).toBeGreaterThanOrEqual(t.segments[i - 1]!.start);
    // Each repetition is found where it was put, and transcribed as well as the first.
    for (let k = 0; k < 4; k++) {
      const inside = t.segments.filter((s) => s.start >= k * period - 1 && s.end <= k * period + speech.durationSeconds + 1);
      expect(wordErrorRate(speech.text, inside.map((s) => s.text).join(" ")), `repetition ${k}`).toBeLessThan(0.2);
    }
  });

  it("answers a missing file with an error and keeps serving; a canceled request kills only itself", async () => {
    await expect(recogniser.transcribe(path.join(root, "nope.wav"), "en", {})).rejects.toSatisfy(
      (e: unknown) => e instanceof MediaError && e.code === "transcription_failed",
    );
    const controller = new AbortController();
    const canceled = recogniser.transcribe(speech.wav, "en", { signal: controller.signal });
    setTimeout(() => controller.abort(), 300);
    await expect(canceled).rejects.toSatisfy((e: unknown) => e instanceof MediaError && e.code === "canceled");
    const again = await recogniser.transcribe(speech.wav, "en", {});
    expect(wordErrorRate(speech.text, again.segments.map((s) => s.text).join(" "))).toBeLessThan(0.15);
  });

  it("says when the recogniser is not installed", async () => {
    const missing = startRecogniser({ ...recogniserPaths(), python: path.join(root, "no-python") }, createLogger("silent"));
    await expect(missing.transcribe(speech.wav, "en", {})).rejects.toSatisfy(
      (e: unknown) => e instanceof MediaError && e.code === "transcription_failed" && /asr-setup/.test(e.message),
    );
  });
});
