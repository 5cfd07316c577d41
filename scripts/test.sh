#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is missing, type-checks, runs every
# vitest project and the mutation gate (counted as one test), and ends with one plain
# "N passed, N failed" line.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the suites need: curl (front-door test), a JDK and Maven (the infra/ scripts
# fetch and run Kafka and Cassandra from Maven Central), ffmpeg and ffprobe (the encoder), chromium
# (the player tests) and espeak-ng (speech for the caption tests).
missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v ffmpeg >/dev/null 2>&1 || missing+=(ffmpeg)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v espeak-ng >/dev/null 2>&1 || missing+=(espeak-ng) # speech for the caption tests
if ((${#missing[@]})); then
  echo "installing ${missing[*]}"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null
fi
bash infra/peers.sh build # storage peers (MinIO, mc, fake-gcs-server) from the Go module proxy; silent once built
npm install --no-audit --no-fund --loglevel=error
bash scripts/asr-setup.sh # the encoder's speech recogniser (pinned Python packages and weights); silent once made

npx tsc --noEmit -p .
npx eslint .

results="$(mktemp)"
status=0
npx vitest run --reporter=default --reporter=json --outputFile="$results" "$@" || status=$?

# The mutation gate: the money (src/pricing.ts, the job actor) and the network guard mutated and
# re-tested against the unit specs, incrementally from the checked-in results (only what changed
# since is re-run), each module held to its floor in test/mutation/gate-check.mjs, so a change
# that weakens their specs fails here. Whole-suite runs only; MUTATION_GATE=0 skips it.
gate=""
if [[ $# -eq 0 && "${MUTATION_GATE:-1}" != 0 ]]; then
  mkdir -p .cache/stryker
  cp test/mutation/stryker-incremental.json .cache/stryker/gate-incremental.json
  gate=passed
  { npx stryker run test/mutation/stryker.gate.config.mjs && node test/mutation/gate-check.mjs .cache/stryker/gate.json; } || { gate=failed; status=1; }
fi
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const gate = process.argv[2];
  const passed = r.numPassedTests + (gate === "passed" ? 1 : 0);
  const failed = r.numFailedTests + (gate === "failed" ? 1 : 0);
  console.log(`tests: ${passed} passed, ${failed} failed`);
' "$results" "$gate" || true
rm -f "$results"
exit "$status"
