// @ts-check
// The vitest Stryker runs: the unit project alone (the specs beside the code), taken from the root
// config so the two never list different files. The other projects need ffmpeg, Kafka or a server.
// JavaScript, not TypeScript: importing vitest.config.ts from the TypeScript project would pull it
// into the project, where the lint setup keeps it out.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import root from "../../vitest.config.ts";

const unit = root.test?.projects?.find((p) => typeof p === "object" && !(p instanceof Promise) && p.test?.name === "unit");
if (typeof unit !== "object" || unit instanceof Promise || !unit.test) throw new Error("vitest.config.ts has no project named unit");

export default defineConfig({
  root: fileURLToPath(new URL("../..", import.meta.url)),
  // includeTaskLocation: each test's position reaches Stryker (patches/ backports the runner's side,
  // stryker-js #6188), so its incremental diff re-tests only what an edited spec's changed tests killed.
  test: { ...unit.test, fileParallelism: false, includeTaskLocation: true },
});
