// @ts-check
// The mutation gate inside npm test: the money (src/pricing.ts, the job actor's estimates and
// settlement), the network guard, the video actor and the encode queue, re-tested incrementally
// from a copy of the checked-in results (scripts/test.sh makes it); test/mutation/gate-check.mjs
// then holds each module to its floor.
import base from "../../stryker.config.mjs";

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
const config = {
  ...base,
  mutate: ["src/pricing.ts", "actors/job/job.ts", "src/net-guard.ts", "actors/video/video.ts", "actors/scheduler/scheduler.ts"],
  incrementalFile: ".cache/stryker/gate-incremental.json",
  reporters: ["clear-text", "json"],
  clearTextReporter: { ...base.clearTextReporter, reportMutants: true },
  jsonReporter: { fileName: ".cache/stryker/gate.json" },
  thresholds: { high: 90, low: 85, break: 85 },
};
export default config;
