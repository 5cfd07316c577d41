#!/usr/bin/env bash
# Builds the tests' OTLP trace receiver (this folder) into .cache/otlp-receiver/bin, idempotently:
# a stamp beside the binary names the hash of the sources it was built from, so a change rebuilds
# and an unchanged tree costs nothing. Prints the binary's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN="$PWD/.cache/otlp-receiver/bin"
SRC=infra/otlp-receiver

log() { printf '[otlp-receiver] %s\n' "$*" >&2; }
command -v go >/dev/null 2>&1 || { log "error: 'go' is not on PATH (the receiver is built from the Go module proxy)"; exit 1; }
mkdir -p "$BIN"

hash="$(cat "$SRC"/go.mod "$SRC"/go.sum "$SRC"/*.go | sha256sum | cut -c1-16)"
if ! [[ -x "$BIN/otlp-receiver" && -f "$BIN/otlp-receiver.version" && "$(<"$BIN/otlp-receiver.version")" == "$hash" ]]; then
  log "building the OTLP receiver ($SRC)"
  if ! (cd "$SRC" && GOFLAGS="${GOFLAGS:--buildvcs=false} -mod=readonly" go build -ldflags="-s -w" -o "$BIN/otlp-receiver.tmp" .) >"$BIN/build.log" 2>&1; then
    tail -n 40 "$BIN/build.log" >&2
    log "error: the receiver did not build (full output in $BIN/build.log)"
    exit 1
  fi
  mv -f "$BIN/otlp-receiver.tmp" "$BIN/otlp-receiver"
  printf '%s' "$hash" >"$BIN/otlp-receiver.version"
  rm -f "$BIN/build.log"
fi
echo "$BIN/otlp-receiver"
