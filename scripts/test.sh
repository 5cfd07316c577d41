#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is missing, type-checks, runs every
# vitest project, and ends with one plain "N passed, N failed" line.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v curl >/dev/null 2>&1; then
  echo "installing curl (the front-door test calls it)"
  (apt-get update -qq && apt-get install -y -qq curl) >/dev/null
fi
npm install --no-audit --no-fund --loglevel=error

npx tsc --noEmit -p .

results="$(mktemp)"
status=0
npx vitest run --reporter=default --reporter=json --outputFile="$results" "$@" || status=$?
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed`);
' "$results" || true
rm -f "$results"
exit "$status"
