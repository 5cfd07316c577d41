// @ts-check
// The mutation gate inside npm test: the money (src/pricing.ts, the job actor's estimates and
// settlement), the network guard, the video actor, the encode queue and the encoder's planners,
// re-tested incrementally from a copy of the checked-in results (scripts/test.sh makes it);
// test/mutation/gate-check.mjs then holds each module to its floor.
import base, { ENCODER_PLANNERS } from "../../stryker.config.mjs";

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
const config = {
  ...base,
  mutate: ["src/pricing.ts", "actors/job/job.ts", "src/net-guard.ts", "actors/video/video.ts", "actors/scheduler/scheduler.ts", ...ENCODER_PLANNERS],
  incrementalFile: ".cache/stryker/gate-incremental.json",
  // No type checker: npm test runs the gate only on fresh results (baseline-check.mjs), so no mutant
  // runs and nothing needs checking, yet the checker type-checked the whole project first (3 of the
  // gate's 5 minutes on 2 cores). When checking ended, its concurrency token started a second test
  // runner that the end of the run disposed while it was still loading: Stryker's "Injector is
  // already disposed". npm run test:mutation, which does run mutants, keeps the checker.
  checkers: [],
  reporters: ["clear-text", "json"],
  clearTextReporter: { ...base.clearTextReporter, reportMutants: true },
  jsonReporter: { fileName: ".cache/stryker/gate.json" },
  thresholds: { high: 90, low: 85, break: 85 },
};
export default config;
