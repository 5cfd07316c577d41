// Cues from a transcript, without the recogniser: lines, pauses, lengths and long talks.
import { describe, expect, it } from "vitest";
import { cuesFromTranscript, type TranscriptWord } from "./captions.js";

/** Whisper-style words (leading spaces), one every `step` seconds from `at`, each spoken for `dur`; times in whole centiseconds. */
function speak(text: string, at = 0, step = 0.3, dur = 0.25): TranscriptWord[] {
  return text
    .split(" ")
    .map((word, k) => ({ start: Math.round((at + k * step) * 100) / 100, end: Math.round((at + k * step + dur) * 100) / 100, word: ` ${word}` }));
}

/** A long deterministic transcript: varied word lengths, punctuation, and now and then a pause. */
function lecture(count: number): TranscriptWord[] {
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const words: TranscriptWord[] = [];
  let cs = 50; // centiseconds
  for (let k = 0; k < count; k++) {
    const word = "abcdefghijklmnopqrstuvwxyz".slice(0, 1 + Math.floor(next() * 11)) + (next() < 0.08 ? "." : next() < 0.1 ? "," : "");
    const length = 15 + Math.floor(next() * 40);
    words.push({ start: cs / 100, end: (cs + length) / 100, word: ` ${word}` });
    cs += length + (next() < 0.07 ? 80 + Math.floor(next() * 200) : Math.floor(next() * 15));
  }
  return words;
}

describe("cuesFromTranscript", () => {
  it("cuts at the last sentence end, then a clause end, and wraps two balanced lines", () => {
    const text = "So today we are going to talk about captions. They matter because many people watch videos without sound, and some cannot hear at all.";
    expect(cuesFromTranscript([{ start: 0, end: 7.15, text, words: speak(text) }])).toEqual([
      { start: 0, end: 2.65, text: "So today we are going\nto talk about captions." },
      { start: 2.7, end: 5.35, text: "They matter because many people\nwatch videos without sound," },
      { start: 5.4, end: 7.15, text: "and some cannot hear at all." },
    ]);
  });

  it("keeps short sentences together when they fit", () => {
    expect(cuesFromTranscript([{ start: 0, end: 2, text: "", words: speak("Hi there. How are you?") }])).toEqual([
      { start: 0, end: 1.45, text: "Hi there. How are you?" },
    ]);
  });

  it("ends a cue at a pause over 0.7 s, not at one of 0.7 s", () => {
    const words = (gap: number) => [...speak("one two three", 0, 0.3, 0.4), ...speak("four five", 1 + gap)];
    expect(cuesFromTranscript([{ start: 0, end: 3, text: "", words: words(0.71) }]).map((c) => c.text)).toEqual(["one two three", "four five"]);
    expect(cuesFromTranscript([{ start: 0, end: 3, text: "", words: words(0.7) }]).map((c) => c.text)).toEqual(["one two three four five"]);
  });

  it("holds a cue to maxSeconds", () => {
    expect(cuesFromTranscript([{ start: 0, end: 10, text: "", words: speak("a b c d e f g h i j", 0, 1, 0.9) }])).toEqual([
      { start: 0, end: 6.9, text: "a b c d e f g" },
      { start: 7, end: 9.9, text: "h i j" },
    ]);
    expect(cuesFromTranscript([{ start: 0, end: 10, text: "", words: speak("a b c d e f g h i j", 0, 1, 0.9) }], { maxSeconds: 3 }).map((c) => c.text)).toEqual(
      ["a b c", "d e f", "g h i", "j"],
    );
  });

  it("stretches a short cue to minSeconds where the next cue leaves room, and stops at the next cue's start", () => {
    const roomy = [
      { start: 0, end: 0.3, word: " Hi." },
      { start: 1.1, end: 1.4, word: " Okay." },
    ];
    expect(cuesFromTranscript([{ start: 0, end: 2, text: "", words: roomy }])).toEqual([
      { start: 0, end: 1, text: "Hi." },
      { start: 1.1, end: 2.1, text: "Okay." },
    ]);
    const tight = [
      { start: 0, end: 0.2, word: " Hi." },
      { start: 0.95, end: 1.4, word: " Okay." },
    ];
    expect(cuesFromTranscript([{ start: 0, end: 2, text: "", words: tight }], { minSeconds: 2 })).toEqual([
      { start: 0, end: 0.95, text: "Hi." },
      { start: 0.95, end: 2.95, text: "Okay." },
    ]);
  });

  it("joins Whisper's word pieces, spaces words that carry no spacing, and escapes WebVTT's special characters", () => {
    const pieces = [
      { start: 0, end: 0.2, word: " Hel" },
      { start: 0.2, end: 0.4, word: "lo" },
      { start: 0.5, end: 0.7, word: " AT&T" },
      { start: 0.8, end: 1, word: " <3" },
      { start: 1, end: 1.1, word: "!" },
    ];
    expect(cuesFromTranscript([{ start: 0, end: 1.1, text: "", words: pieces }])).toEqual([{ start: 0, end: 1.1, text: "Hello AT&amp;T &lt;3!" }]);
    const bare = [
      { start: 0, end: 0.5, word: "Hello" },
      { start: 0.5, end: 1.2, word: "world" },
    ];
    expect(cuesFromTranscript([{ start: 0, end: 1.2, text: "", words: bare }])).toEqual([{ start: 0, end: 1.2, text: "Hello world" }]);
  });

  it("makes one cue of a short segment without words, and splits a long one evenly by characters", () => {
    expect(cuesFromTranscript([{ start: 1, end: 3, text: "  Hello   there. " }])).toEqual([{ start: 1, end: 3, text: "Hello there." }]);
    const text =
      "A long segment without any word timings at all, which has to be split into several cues because it is far too long for two lines of forty-two characters.";
    const cues = cuesFromTranscript([{ start: 0, end: 20, text }]);
    expect(cues.map((c) => c.text)).toEqual([
      "A long segment without any word timings",
      "at all, which has to be split into",
      "several cues because it is far too long",
      "for two lines of forty-two characters.",
    ]);
    // Time in proportion to characters, with no gaps.
    const at = (s: string) => Math.round((20 * text.indexOf(s) * 1000) / text.length) / 1000;
    expect(cues.map((c) => [c.start, c.end])).toEqual([
      [0, at("at all")],
      [at("at all"), at("several")],
      [at("several"), at("for two")],
      [at("for two"), 20],
    ]);
  });

  it("keeps segments with and without words in time order", () => {
    const cues = cuesFromTranscript([
      { start: 0, end: 1, text: "", words: speak("Hello there.") },
      { start: 2, end: 4, text: "[music]" },
      { start: 4.5, end: 6, text: "", words: speak("Welcome back.", 4.5) },
    ]);
    expect(cues).toEqual([
      { start: 0, end: 1, text: "Hello there." },
      { start: 2, end: 4, text: "[music]" },
      { start: 4.5, end: 5.5, text: "Welcome back." },
    ]);
  });

  it.each([42, 20])(
    "on a long transcript with lines of %i: loses no word, starts each cue at its first word, never overlaps, never breaks the limits",
    (maxLineChars) => {
      const words = lecture(600);
      const cues = cuesFromTranscript(
        [
          { start: 0, end: 999, text: "", words: words.slice(0, 250) },
          { start: 0, end: 999, text: "", words: words.slice(250) },
        ],
        { maxLineChars },
      );
      expect(cues.flatMap((c) => c.text.split(/[\n ]/))).toEqual(words.map((w) => w.word.trim()));
      let k = 0;
      cues.forEach((cue, n) => {
        const own = words.slice(k, (k += cue.text.split(/[\n ]/).length));
        const first = own[0]!;
        const last = own.at(-1)!;
        expect(cue.start).toBe(first.start);
        const next = cues[n + 1];
        expect(cue.end).toBe(Math.round(Math.min(Math.max(last.end, first.start + 1), next?.start ?? Infinity) * 1000) / 1000);
        if (next) expect(cue.end).toBeLessThanOrEqual(next.start);
        expect(last.end - first.start).toBeLessThanOrEqual(7);
        own.slice(1).forEach((w, j) => expect(w.start - own[j]!.end).toBeLessThanOrEqual(0.7));
        const lines = cue.text.split("\n");
        expect(lines.length).toBeLessThanOrEqual(2);
        for (const line of lines) expect(line.length).toBeLessThanOrEqual(maxLineChars);
      });
      expect(k).toBe(words.length);
    },
  );

  it("refuses limits that cannot make cues", () => {
    expect(() => cuesFromTranscript([], { maxLineChars: 0 })).toThrow(RangeError);
    expect(cuesFromTranscript([])).toEqual([]);
  });
});
