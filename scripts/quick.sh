#!/usr/bin/env bash
# npm run test:quick, the loop while working: type-check and lint beside the unit specs and the
# embedded API suite, two test files at a time (the full run, scripts/test.sh, takes one at a time).
# Needs what npm test installed once (ffmpeg, the npm packages).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
{ npx tsc --noEmit -p . && npx tsc -p console; } & tsc=$!
# Lint and format checks remember the files they passed (by content): the loop re-checks what
# changed, npm test checks everything.
{ npx eslint . --cache --cache-location .cache/eslint/ && npx prettier --check --cache --log-level warn "**/*.{ts,js,mjs,cjs}"; } & lint=$!
npx vitest run --project unit --project api --fileParallelism --maxWorkers=2
status=$?
wait "$tsc" || status=1
wait "$lint" || status=1
echo "test:quick: $([[ $status == 0 ]] && echo passed || echo FAILED) in $(( $(date +%s) - start )) s"
exit "$status"
