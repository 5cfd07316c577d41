// Benchmark: chapter detection on synthetic talks (issue 27). Each talk of test/chapter-texts.ts is
// spoken by espeak-ng, transcribed by the real recogniser (faster-whisper base) and chaptered as an
// encode does; printed per talk: the distance from each topic start after the first to the nearest
// chapter start after the first, chapters matching no topic start (extra), chapters shorter than
// chapterMinSeconds, and the transcription's wall time. Then recall (topic starts after the first
// with a chapter start within 1.5 s) per set: the held-out talks, 30 s to 10 min, the 10 min one
// too slow for test/media/chapters-heldout.test.ts; and the tuning talks, for comparison only.
// One-topic talks count the chapters they were cut into. Recall is a measure, not a pass/fail.
// Run: npm run bench:chapters   (BENCH_SETS: heldout,tuning; BENCH_OUT: also write the results as JSON there)
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { recogniserPaths, startRecogniser } from "../../encoder-node/recogniser.js";
import { createLogger } from "../../src/log.js";
import {
  chapterTalk,
  describeTalk,
  extraChapters,
  HELD_OUT,
  HELD_OUT_SINGLE,
  MATCH_SECONDS,
  shortChapters,
  topicStartErrors,
  TUNING,
  TUNING_SINGLE,
  type TopicTalk,
} from "../chapter-texts.js";
import { TOPICS } from "../speech.js";

const SETS: Record<string, readonly TopicTalk[]> = {
  heldout: [...HELD_OUT, ...HELD_OUT_SINGLE],
  tuning: [{ name: "volcanoes, bread, the stock market (test/speech.ts)", topics: TOPICS }, ...TUNING, ...TUNING_SINGLE],
};
const chosen = (process.env["BENCH_SETS"] ?? "heldout,tuning").split(",").filter((s) => s in SETS);

const root = mkdtempSync(path.join(tmpdir(), "chapters-bench-"));
const recogniser = startRecogniser(recogniserPaths(), createLogger("silent"));
const results: Record<string, unknown> = {};
try {
  for (const set of chosen) {
    console.log(`\n${set}:`);
    const talks = [];
    for (const [i, talk] of SETS[set]!.entries()) {
      const dir = path.join(root, `${set}_${i}`);
      mkdirSync(dir);
      const t = await chapterTalk(recogniser, dir, talk);
      console.log(`  ${describeTalk(t)}${shortChapters(t).length > 0 ? `, ${shortChapters(t).length} SHORT` : ""}`);
      talks.push(t);
    }
    const errors = talks.flatMap(topicStartErrors);
    const found = errors.filter((e) => e <= MATCH_SECONDS).length;
    const single = talks.filter((t) => t.talk.topics.length === 1);
    const summary = {
      recall: Number((found / Math.max(1, errors.length)).toFixed(3)),
      found,
      topicStarts: errors.length,
      extraChapters: talks.reduce((n, t) => n + extraChapters(t), 0),
      shortChapters: talks.reduce((n, t) => n + shortChapters(t).length, 0),
      oneTopicTalksCut: single.filter((t) => t.chapters.length > 1).length,
      oneTopicTalks: single.length,
      audioSeconds: Number(talks.reduce((s, t) => s + t.durationSeconds, 0).toFixed(1)),
      transcribeSeconds: Number(talks.reduce((s, t) => s + t.transcribeSeconds, 0).toFixed(1)),
    };
    console.log(`  ${set}: recall ${found}/${errors.length} = ${summary.recall} within ${MATCH_SECONDS} s; ${JSON.stringify(summary)}`);
    results[set] = {
      summary,
      talks: talks.map((t) => ({
        name: t.talk.name,
        durationSeconds: t.durationSeconds,
        minSeconds: t.minSeconds,
        topicStarts: t.topicStarts,
        chapters: t.chapters,
        errors: topicStartErrors(t),
      })),
    };
  }
} finally {
  await recogniser.stop();
  rmSync(root, { recursive: true, force: true });
}
const out = process.env["BENCH_OUT"];
if (out) writeFileSync(out, `${JSON.stringify({ at: new Date().toISOString(), ...results }, null, 2)}\n`);
