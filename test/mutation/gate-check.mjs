// @ts-check
// The mutation gate's verdict (scripts/test.sh runs it after test/mutation/stryker.gate.config.mjs):
// each gated module's score over the code the specs reach, from the run's JSON report, against the
// floor checked in here. Stryker's own `break` judges the score of every file in its report, which
// the incremental base fills with the other modules too; this judges the gated ones one by one.
import { readFileSync } from "node:fs";
import { ENCODER_PLANNERS } from "../../stryker.config.mjs";

/**
 * Floors, a little under the scores of the run that set them (pricing 97.7, job 96.4, net-guard
 * 91.3); the video actor and the encode queue at the 90% their issue asked for (both 100% when
 * they joined).
 */
/** @type {Record<string, number>} */
const FLOORS = {
  "src/pricing.ts": 95,
  "actors/job/job.ts": 95,
  "src/net-guard.ts": 88,
  "actors/video/video.ts": 90,
  "actors/scheduler/scheduler.ts": 90,
  // The encoder's planners, each at the 90% their issue asked for.
  ...Object.fromEntries(ENCODER_PLANNERS.map((file) => [file, 90])),
};
/** No unreached code in money, the guard, the video's states, the queue and the planners. */
/** @type {Record<string, number>} */
const NO_COVERAGE_ALLOWED = {
  "src/pricing.ts": 0,
  "actors/job/job.ts": Infinity,
  "src/net-guard.ts": 0,
  "actors/video/video.ts": 0,
  "actors/scheduler/scheduler.ts": 0,
  ...Object.fromEntries(ENCODER_PLANNERS.map((file) => [file, 0])),
};

/** @type {{ files: Record<string, { mutants: { status: string }[] } | undefined> }} */
const report = JSON.parse(readFileSync(process.argv[2] ?? ".cache/stryker/gate.json", "utf8"));
let failed = false;
for (const [file, floor] of Object.entries(FLOORS)) {
  const mutants = report.files[file]?.mutants ?? [];
  const count = (/** @type {string[]} */ ...statuses) => mutants.filter((m) => statuses.includes(m.status)).length;
  const detected = count("Killed", "Timeout");
  const survived = count("Survived");
  const unreached = count("NoCoverage");
  const covered = detected + survived === 0 ? 0 : (100 * detected) / (detected + survived);
  const ok = covered >= floor && unreached <= (NO_COVERAGE_ALLOWED[file] ?? 0);
  failed ||= !ok;
  console.log(
    `${ok ? "ok  " : "FAIL"} ${file}: ${covered.toFixed(2)}% of reached mutants detected (floor ${floor}%), ${survived} survived, ${unreached} unreached`,
  );
}
process.exit(failed ? 1 : 0);
