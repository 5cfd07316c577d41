// @ts-check
// Fails fast when the checked-in mutation results (test/mutation/stryker-incremental.json) are older
// than a gated module or a spec that covers its mutants: the gate would re-test those mutants on
// every run until the refreshed results are committed. scripts/test.sh runs it before anything slow.
import { readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import gate from "./stryker.gate.config.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BASELINE = "test/mutation/stryker-incremental.json";
const REFRESH = "npm run test:mutation";

const read = (/** @type {string} */ file) => {
  const at = path.join(ROOT, file);
  return existsSync(at) ? readFileSync(at, "utf8") : undefined;
};

/** @type {{ files: Record<string, { source: string, mutants: { coveredBy?: string[], killedBy?: string[] }[] }>, testFiles?: Record<string, { source?: string, tests: { id: string }[] }> }} */
const baseline = JSON.parse(read(BASELINE) ?? '{"files":{}}');
const gated = /** @type {string[]} */ (gate.mutate ?? []);

/** Why each stale file is stale. */
const stale = new Map();
const testFileOf = new Map();
for (const [file, entry] of Object.entries(baseline.testFiles ?? {})) for (const t of entry.tests) testFileOf.set(t.id, file);

for (const module of gated) {
  const entry = baseline.files[module];
  if (!entry) {
    stale.set(module, "not in the results");
    continue;
  }
  if (entry.source !== read(module)) stale.set(module, "changed");
  const specs = new Set();
  for (const m of entry.mutants) for (const id of [...(m.coveredBy ?? []), ...(m.killedBy ?? [])]) specs.add(testFileOf.get(id));
  for (const spec of specs) {
    if (spec === undefined || stale.has(spec)) continue;
    if (baseline.testFiles?.[spec]?.source !== read(spec)) stale.set(spec, `changed (covers ${module})`);
  }
}

if (stale.size > 0) {
  process.stderr.write(`mutation gate: ${BASELINE} is older than:\n`);
  for (const [file, why] of stale) process.stderr.write(`  ${file}: ${why}\n`);
  process.stderr.write(`Every test run would re-test their mutants. Refresh the results and commit them with the change:\n  ${REFRESH}\n`);
  process.exit(1);
}
