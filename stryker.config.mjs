// @ts-check
// Mutation testing of the core (npm run test:mutation): the money, each entity's decide and fold,
// the JSON codec and request validation, the network guard, paging, webhook signing and schedule,
// playback-token signing, and the encoder's planners (ENCODER_PLANNERS, in the gate too).
// Mutants run against the unit specs only (test/mutation/vitest.config.mjs). Results are kept in
// test/mutation/stryker-incremental.json, checked in, so a run re-tests only what changed since.
/**
 * The encoder's planners: planOutput and a module per concern, pure, every plan's commands decided
 * there. planners/types.ts is types alone, nothing to mutate.
 */
export const ENCODER_PLANNERS = [
  "encoder-node/plan.ts",
  "encoder-node/planners/chunking.ts",
  "encoder-node/planners/commands.ts",
  "encoder-node/planners/dash.ts",
  "encoder-node/planners/drm.ts",
  "encoder-node/planners/files.ts",
  "encoder-node/planners/hls.ts",
  "encoder-node/planners/hls-first-rung.ts",
  "encoder-node/planners/hls-ladder.ts",
  "encoder-node/planners/hls-segments.ts",
  "encoder-node/planners/layout.ts",
  "encoder-node/planners/master.ts",
  "encoder-node/planners/packaged.ts",
  "encoder-node/planners/segments.ts",
];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
const config = {
  testRunner: "vitest",
  vitest: { configFile: "test/mutation/vitest.config.mjs" },
  checkers: ["typescript"],
  tsconfigFile: "tsconfig.json",
  mutate: [
    "src/pricing.ts",
    "actors/job/job.ts",
    "actors/webhook-endpoint/webhook-endpoint.ts",
    "actors/api-key/api-key.ts",
    "wire/codec.ts",
    "src/validation.ts",
    "src/spec-check.ts",
    "src/net-guard.ts",
    "src/pagination.ts",
    "src/webhooks/sign.ts",
    "src/webhooks/schedule.ts",
    "src/cdn-token.ts",
    "actors/video/video.ts",
    "actors/scheduler/scheduler.ts",
    // What moved out of the behaviours into the entities' protocols and the job's folder.
    "actors/job/messages.ts",
    "actors/job/outcome.ts",
    "actors/api-key/messages.ts",
    "actors/webhook-endpoint/messages.ts",
    ...ENCODER_PLANNERS,
  ],
  // Binaries, data and tool folders stay out of the sandbox copy.
  ignorePatterns: [
    "/data",
    "/.infra",
    "/.cache",
    "/.venv-fuzz",
    "/.venv-asr",
    "/.venv-clients",
    "/clients/.bin",
    "/clients/python/.pytest_cache",
    "/test/fuzz/.bin",
    "/test/bench/results",
  ],
  incremental: true,
  // Static mutants (module-level tables such as the price grid) would each re-run every spec: 16% of
  // the mutants, 86% of the time. They are left out; the tables are pinned by spec assertions instead.
  ignoreStatic: true,
  incrementalFile: "test/mutation/stryker-incremental.json",
  reporters: ["clear-text", "json", "progress"],
  clearTextReporter: { logTests: false, reportTests: false },
  jsonReporter: { fileName: ".cache/stryker/mutation.json" },
  // One test runner (and one checker): the machines running this have two cores.
  concurrency: 1,
  thresholds: { high: 85, low: 70, break: null },
};
export default config;
