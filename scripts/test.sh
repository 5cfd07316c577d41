#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is missing, type-checks, runs every
# vitest project and the mutation gate (counted as one test), and ends with one plain
# "N passed, N failed" line.
set -euo pipefail
cd "$(dirname "$0")/.."

# A stale mutation baseline fails here, in a second, naming the command that refreshes it.
if [[ $# -eq 0 && "${MUTATION_GATE:-1}" != 0 ]]; then node test/mutation/baseline-check.mjs; fi

bash scripts/setup.sh # Debian packages, npm packages, Go tools, Python venvs, jars: silent once done

# npm put node_modules/.bin first on PATH, but on a fresh clone this shell had already found the
# machine's node for the check above, and bash remembers where it found a command.
export PATH="$PWD/node_modules/.bin:$PATH"
hash -r
# The Node every suite runs on (the registry's `node` package of package.json, first on PATH) and
# the uWebSockets build the gateways load: said first and again on the last line.
runtime="Node $(node -v), $(npx tsx -e 'import("./gateway/uws-loader.ts").then(({ loadUws }) => { const f = loadUws(); console.log(f.label ?? `node:http (${f.refused.join("; ")})`); })')"
echo "tests: on $runtime"
npx tsc --noEmit -p .
npx tsc -p console # the web console: its own settings (browser, JSX), checked the same way
npm run -s lint

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0

# prefix <lane>: each line of a lane's output tagged with its name, as it comes.
prefix() { sed -u "s/^/[$1] /"; }

# run <lane> <vitest arguments...>: one vitest process, its JSON results in $out/<lane>.json.
run() {
  local lane="$1"; shift
  npx vitest run --reporter=default --reporter=json --outputFile="$out/$lane.json" "$@" 2>&1 | prefix "$lane"
}

# The mutation gate: the money (src/pricing.ts, the job actor), the network guard, the video actor
# and the encode queue mutated and re-tested against the unit specs, incrementally from the
# checked-in results (only what changed since is re-run; the check above makes sure that is
# nothing), each module held to its floor in test/mutation/gate-check.mjs, so a change that weakens
# their specs fails here. Whole-suite runs only; MUTATION_GATE=0 skips it.
gate() {
  mkdir -p .cache/stryker
  cp test/mutation/stryker-incremental.json .cache/stryker/gate-incremental.json
  if { npx stryker run test/mutation/stryker.gate.config.mjs && node test/mutation/gate-check.mjs .cache/stryker/gate.json; } 2>&1 | prefix gate; then
    echo passed >"$out/gate"
  else
    echo failed >"$out/gate"
    return 1
  fi
}

# The container engine (deploy/engine.sh: installed and started where missing, stopped at the end
# when this run started it) and the project's images, built beside the lanes (mostly downloads and
# copies); the deploy suites wait for them. Where no engine can run, the deploy suites skip with
# one line and the adapters' contracts stay on the infra/ scripts.
engine=0
if [[ $# -eq 0 ]]; then
  if bash deploy/engine.sh up 2>"$out/engine.log"; then engine=1; else sed 's/^/[deploy] /' "$out/engine.log"; fi
  trap 'bash deploy/engine.sh down; rm -rf "$out"' EXIT
fi
# With an engine, the Kafka and Cassandra contracts run on containers of the project's images
# (the cluster-containers project) instead of in the cluster project (vitest.config.ts).
export MEDIA_TEST_CONTRACTS_IN_CONTAINERS=$engine
images() {
  if ((engine)); then
    if bash deploy/images/build.sh 2>&1 | prefix images; then echo built >"$out/images"; else echo failed >"$out/images"; fi
  else
    echo none >"$out/images"
  fi
}
# after_images <lane> <vitest arguments...>: runs once the images job has ended: with the images
# built, on the container engine (MEDIA_TEST_INFRA=containers for the container-backed contracts);
# without an engine, only what needs none; with images that failed to build, not at all (a failure).
after_images() {
  local lane="$1"; shift
  while [[ ! -s "$out/images" ]]; do sleep 2; done
  case "$(<"$out/images")" in
    built) MEDIA_TEST_INFRA=containers run "$lane" "$@" ;;
    none) if [[ "$*" == *deploy* ]]; then run "$lane" --project deploy; fi ;;
    *) echo "[$lane] FAILED: the images did not build, so these suites did not run: $*" && return 1 ;;
  esac
}

if [[ $# -gt 0 ]]; then
  run vitest "$@" || status=$?
elif [[ "${MEDIA_TEST_LANES:-2}" == 2 ]]; then
  # Two lanes side by side (two cores): the suites on real Kafka and Cassandra, which restart them
  # and so run alone on them, with the fuzzer, and everything else; the gate beside them. The fuzzer
  # rides with the cluster suites so the lanes end together (about 24 minutes of files each on
  # 2026-11-28's figures). Within a lane one file at a time (vitest.config.ts). MEDIA_TEST_LANES=1
  # runs everything in one vitest process instead.
  pids=()
  images &
  # Each lane ends with the suites that need the images: the compose files and the chart after the
  # local suites, the adapters' contracts on containers after the cluster suites.
  (
    st=0
    MEDIA_TEST_INFRA="${MEDIA_TEST_INFRA:-local}" run cluster --project api-cluster --project cluster --project fuzz || st=1
    after_images containers --project cluster-containers || st=1
    exit "$st"
  ) & pids+=($!)
  (
    st=0
    run local --project unit --project api --project media --project browser --project conformance --project runtime --project observe || st=1
    after_images deploy --project deploy || st=1
    exit "$st"
  ) & pids+=($!)
  if [[ "${MUTATION_GATE:-1}" != 0 ]]; then gate & pids+=($!); fi
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
else
  images &
  MEDIA_TEST_INFRA="${MEDIA_TEST_INFRA:-local}" run vitest --project unit --project media --project api --project api-cluster --project cluster \
    --project fuzz --project conformance --project runtime --project browser --project observe || status=1
  after_images deploy --project deploy --project cluster-containers || status=1
  if [[ "${MUTATION_GATE:-1}" != 0 ]]; then gate || status=1; fi
fi

node -e '
  const fs = require("fs");
  const path = require("path");
  const dir = process.argv[1];
  let passed = 0, failed = 0;
  const failures = [];
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".json"))) {
    const r = JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8"));
    passed += r.numPassedTests;
    failed += r.numFailedTests;
    // Time per project (the folder of its files) and the slowest files, for whoever makes it faster.
    const files = r.testResults.map((t) => ({ file: path.relative(process.cwd(), t.name), s: (t.endTime - t.startTime) / 1000 }));
    const projects = {};
    for (const t of files) {
      const folder = t.file.startsWith("test/") ? t.file.split("/")[1] : "unit";
      projects[folder] = (projects[folder] ?? 0) + t.s;
    }
    const lane = f.replace(".json", "");
    const each = Object.entries(projects).map(([p, s]) => `${p} ${(s / 60).toFixed(1)}`).join(", ");
    const slowest = files.sort((a, b) => b.s - a.s).slice(0, 5).map((t) => `${t.file} ${t.s.toFixed(0)} s`).join(", ");
    console.log(`${lane}: ${r.numPassedTests} passed, ${r.numFailedTests} failed; minutes per project: ${each}; slowest files: ${slowest}`);
    // The failures again, last, where a CI log cut to its tail still shows them.
    for (const t of r.testResults) {
      for (const a of t.assertionResults ?? []) {
        if (a.status !== "failed") continue;
        const why = (a.failureMessages ?? []).join(" ").replace(/\u001b\[[0-9;]*m/g, "").split("\n").slice(0, 3).join(" ").slice(0, 400);
        failures.push(`FAILED ${path.relative(process.cwd(), t.name)} > ${a.fullName}: ${why}`);
      }
      if (t.status === "failed" && !(t.assertionResults ?? []).some((a) => a.status === "failed")) failures.push(`FAILED ${path.relative(process.cwd(), t.name)}: ${String(t.message ?? "").slice(0, 400)}`);
    }
    if (r.success === false && r.numFailedTests === 0 && r.numFailedTestSuites === 0) failures.push(`FAILED ${lane}: vitest reported an error outside the tests (an unhandled error; search the log for "Unhandled")`);
  }
  for (const f of failures) console.log(f);
  const gate = fs.existsSync(`${dir}/gate`) ? fs.readFileSync(`${dir}/gate`, "utf8").trim() : "";
  if (gate === "passed") passed++;
  if (gate === "failed") {
    failed++;
    console.log("FAILED the mutation gate: see the [gate] lines (a module under its floor, or Stryker failed)");
  }
  console.log(`tests: ${passed} passed, ${failed} failed (on ${process.argv[2]})`);
' "$out" "$runtime" || true
exit "$status"
