// Real speech for the caption tests: three short talks on unrelated topics, synthesised with
// espeak-ng (Debian) at test time, so the words, the sentences and where each topic starts are
// known exactly. Also the word error rate the tests judge transcripts by.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Three topics of four sentences each: plain words, no numbers (a recogniser may write "10" for "ten"). */
export const TOPICS: readonly (readonly string[])[] = [
  [
    "Volcanoes form where hot rock from deep inside the earth rises to the surface.",
    "When a volcano erupts, lava flows down its sides and ash fills the sky.",
    "Some volcanoes sleep for thousands of years before they wake again.",
    "Scientists watch the ground for small earthquakes that warn of an eruption.",
  ],
  [
    "Baking bread at home needs only flour, water, salt and yeast.",
    "Mix the dough and knead it until it feels smooth and soft.",
    "Let the dough rise in a warm kitchen until it doubles in size.",
    "Bake the loaf in a hot oven until the crust turns golden brown.",
  ],
  [
    "The stock market is a place where people buy and sell shares of companies.",
    "When a company earns more money, its share price often goes up.",
    "Investors spread their savings across many companies to lower their risk.",
    "Prices can fall quickly when traders become afraid.",
  ],
];

export interface Speech {
  /** 16 kHz mono WAV of the three talks, one after the other. */
  wav: string;
  /** The talks over a test pattern: H.264 and AAC in MP4. */
  mp4: string;
  text: string;
  /** Where each topic starts, in seconds. */
  topicStarts: number[];
  durationSeconds: number;
}

async function seconds(file: string): Promise<number> {
  const { stdout } = await run("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", file]);
  return Number(stdout.trim());
}

/** The talks as 16 kHz mono WAV alone, without the MP4 (once into dir: later calls reuse the files). */
export async function synthesizeWav(dir: string, topics: readonly (readonly string[])[] = TOPICS): Promise<Omit<Speech, "mp4">> {
  const parts: string[] = [];
  for (const [i, sentences] of topics.entries()) {
    const part = path.join(dir, `topic_${i}.wav`);
    if (!existsSync(part)) await run("espeak-ng", ["-v", "en-us", "-s", "150", "-g", "4", "-w", part, sentences.join(" ")]);
    parts.push(part);
  }
  const topicStarts: number[] = [];
  let at = 0;
  for (const p of parts) {
    topicStarts.push(at);
    at += await seconds(p);
  }
  const list = path.join(dir, "topics.txt");
  await writeFile(list, parts.map((p) => `file '${p}'`).join("\n"));
  const wav = path.join(dir, "speech.wav");
  if (!existsSync(wav))
    await run("ffmpeg", [
      "-hide_banner",
      "-loglevel",
      "error",
      "-y",
      "-f",
      "concat",
      "-safe",
      "0",
      "-i",
      list,
      "-ac",
      "1",
      "-ar",
      "16000",
      "-c:a",
      "pcm_s16le",
      wav,
    ]);
  return { wav, text: topics.flat().join(" "), topicStarts, durationSeconds: at };
}

/** Synthesises the talks into dir (once: later calls reuse the files). */
export async function synthesizeSpeech(dir: string, topics: readonly (readonly string[])[] = TOPICS): Promise<Speech> {
  const { wav, text, topicStarts, durationSeconds: at } = await synthesizeWav(dir, topics);
  const mp4 = path.join(dir, "speech.mp4");
  if (!existsSync(mp4)) {
    await run("ffmpeg", [
      "-hide_banner",
      "-loglevel",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      `testsrc2=size=320x180:rate=25:duration=${at.toFixed(3)}`,
      "-i",
      wav,
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-b:a",
      "96k",
      "-shortest",
      mp4,
    ]);
  }
  return { wav, mp4, text, topicStarts, durationSeconds: at };
}

const words = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z' ]+/g, " ")
    .split(/\s+/)
    .filter(Boolean);

/** Word error rate of a hypothesis against the reference: word-level edit distance over the reference's length. */
export function wordErrorRate(reference: string, hypothesis: string): number {
  const r = words(reference);
  const h = words(hypothesis);
  let prev = Array.from({ length: h.length + 1 }, (_, j) => j);
  for (let i = 1; i <= r.length; i++) {
    const row = [i];
    for (let j = 1; j <= h.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (r[i - 1] === h[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[h.length]! / Math.max(1, r.length);
}
