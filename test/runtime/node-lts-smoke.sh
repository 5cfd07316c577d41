#!/usr/bin/env bash
# Smoke test of `media serve` under the other supported Node.js LTS line (22; every suite runs on 24,
# package.json's `node`), from the npm registry's `node` package (no system install): starts the embedded service on a free port with a temp data folder, waits
# for HealthService/Check, lists API keys with the bootstrap key, then stops it with SIGTERM and
# expects a clean exit. The Node binary is installed once into .cache/node-lts/<version>/.
#
#   bash test/runtime/node-lts-smoke.sh            # pinned LTS below
#   NODE_LTS_VERSION=26.10.0 bash test/runtime/node-lts-smoke.sh
#
# Other MEDIA_* variables (e.g. MEDIA_HTTP_SERVER=node) pass through to the server.
set -euo pipefail

# Node 22 "Jod", maintenance LTS until 2027-04-30: the newest 22.x on the registry. No uWS build
# loads on it on Debian 12 (the local build is made for the Node of package.json), so it serves with
# node:http and says why in one line.
VERSION="${NODE_LTS_VERSION:-22.23.3}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="$ROOT/.cache/node-lts/$VERSION"
NODE="$CACHE/node_modules/node/bin/node"
STARTUP_SECONDS="${SMOKE_STARTUP_SECONDS:-90}"

say() { printf 'node-lts-smoke: %s\n' "$*"; }
fail() { say "FAIL: $*" >&2; [[ -n "${LOG:-}" && -f "$LOG" ]] && { echo "--- server log (tail) ---" >&2; tail -n 40 "$LOG" >&2; }; exit 1; }

# 1. The pinned Node binary, installed once (a lock keeps two concurrent runs from racing).
if [[ "$("$NODE" --version 2>/dev/null || true)" != "v$VERSION" ]]; then
  mkdir -p "$CACHE"
  (
    flock 9
    if [[ "$("$NODE" --version 2>/dev/null || true)" != "v$VERSION" ]]; then
      say "installing node@$VERSION into ${CACHE#"$ROOT"/}"
      npm install --prefix "$CACHE" --no-audit --no-fund --no-package-lock --loglevel=error "node@$VERSION" >/dev/null
    fi
  ) 9>"$CACHE.lock"
fi
[[ "$("$NODE" --version 2>/dev/null || true)" == "v$VERSION" ]] || fail "node@$VERSION did not install at $NODE"
say "using $("$NODE" -p 'process.version + " (abi " + process.versions.modules + ", lts " + (process.release.lts || "none") + ")"')"

# 2. Start the service: temp data folder, free port (MEDIA_HTTP_PORT=0), loopback only.
WORK="$(mktemp -d)"
DATA="$WORK/data"
LOG="$WORK/server.log"
PID=""
cleanup() {
  if [[ -n "$PID" ]] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

cd "$ROOT"
MEDIA_DATA_DIR="$DATA" MEDIA_HTTP_PORT=0 MEDIA_HTTP_HOST=127.0.0.1 \
  "$NODE" bin/media.js serve >"$LOG" 2>&1 &
PID=$!

# 3. Wait for the listening line (it carries the chosen port), then for health.
PORT=""
deadline=$((SECONDS + STARTUP_SECONDS))
while [[ -z "$PORT" ]]; do
  kill -0 "$PID" 2>/dev/null || { wait "$PID" && code=0 || code=$?; PID=""; fail "server exited (code $code) before listening"; }
  ((SECONDS < deadline)) || fail "no \"media API listening\" line within ${STARTUP_SECONDS}s"
  PORT="$(grep -m1 '"msg":"media API listening"' "$LOG" 2>/dev/null | grep -o '"port":[0-9]*' | cut -d: -f2 || true)"
  [[ -n "$PORT" ]] || sleep 0.3
done
BASE="http://127.0.0.1:$PORT"
say "listening: $(grep -m1 '"msg":"media API listening"' "$LOG")"

call() { # call <service/method> [curl args...] -> prints "<status> <body>"
  local path="$1"; shift
  curl -s -m 10 -o "$WORK/body" -w '%{http_code}' -X POST "$BASE/media.v1.$path" \
    -H 'Content-Type: application/json' "$@" -d '{}' || true
  printf ' '; cat "$WORK/body" 2>/dev/null || true
}

status=""
until [[ "$status" == "200" ]]; do
  kill -0 "$PID" 2>/dev/null || fail "server exited while waiting for health"
  ((SECONDS < deadline)) || fail "HealthService/Check not 200 within ${STARTUP_SECONDS}s (last: $status)"
  out="$(call HealthService/Check)"; status="${out%% *}"
  [[ "$status" == "200" ]] || sleep 0.3
done
say "health: ${out#* }"

# 4. An authenticated call with the bootstrap credentials.
[[ -f "$DATA/bootstrap.json" ]] || fail "no $DATA/bootstrap.json"
KEY="$("$NODE" -p 'require(process.argv[1]).api_key' "$DATA/bootstrap.json")"
ORG="$("$NODE" -p 'require(process.argv[1]).organization_id' "$DATA/bootstrap.json")"
out="$(call APIKeyService/List -H "Authorization: Bearer $KEY" -H "X-Organization-ID: $ORG")"
[[ "${out%% *}" == "200" ]] || fail "APIKeyService/List: HTTP ${out%% *}: ${out#* }"
[[ "${out#* }" == *'"bootstrap"'* ]] || fail "APIKeyService/List did not list the bootstrap key: ${out#* }"
say "APIKeyService/List: 200"

# 5. Graceful stop: SIGTERM must end the process with status 0.
kill -TERM "$PID"
for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID" 2>/dev/null && fail "server still running 10s after SIGTERM"
wait "$PID" && code=0 || code=$?
PID=""
((code == 0)) || fail "server exited with status $code after SIGTERM"
say "ok (node $VERSION)"
