#!/usr/bin/env bash
# Builds the observability checkers into .cache/observe/bin, idempotently (silent when built):
#   prometheus, promtool   github.com/prometheus/prometheus at a pinned version, from the Go module
#                          proxy, without the cloud service discoveries (-tags remove_all_sd: the tests
#                          scrape static targets), which halves the build
#   promql-names           deploy/observe/promql-names: the metric names of PromQL expressions, read
#                          by Prometheus's own parser
# Prints the three paths on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."

# Prometheus v3.16's module version (the Go module proxy knows Prometheus by v0.<major*100+minor>).
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
BIN="$PWD/.cache/observe/bin"
SRC=deploy/observe/promql-names

now_ms() { date +%s%3N; }
since() { local d=$(($(now_ms) - $1)); printf '%d.%d' $((d / 1000)) $(((d % 1000) / 100)); }
log() { printf '[observe] %s\n' "$*" >&2; }

command -v go >/dev/null 2>&1 || { log "error: 'go' is not on PATH (Prometheus and promtool are built from the Go module proxy)"; exit 1; }
mkdir -p "$BIN"

# A stamp beside each binary names what it was built from, so a new pin or a changed tool rebuilds.
stamped() { [[ -x "$BIN/$1" && -f "$BIN/$1.version" && "$(<"$BIN/$1.version")" == "$2" ]]; }

if ! stamped prometheus "$PROMETHEUS_VERSION" || ! stamped promtool "$PROMETHEUS_VERSION"; then
  t0=$(now_ms)
  log "building prometheus and promtool $PROMETHEUS_VERSION with go install (first run takes several minutes)"
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/prometheus-build.XXXXXX")"
  # One go install for both: they share most of their packages. -s -w: no symbol table or DWARF.
  if ! GOBIN="$tmp" GOFLAGS="${GOFLAGS:--buildvcs=false}" go install -tags remove_all_sd -ldflags="-s -w" \
    "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION" \
    "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION" >"$tmp.log" 2>&1; then
    tail -n 40 "$tmp.log" >&2
    log "error: go install of prometheus $PROMETHEUS_VERSION failed (full output in $tmp.log)"
    exit 1
  fi
  for b in prometheus promtool; do
    mv -f "$tmp/$b" "$BIN/$b"
    printf '%s' "$PROMETHEUS_VERSION" >"$BIN/$b.version"
  done
  rm -rf "$tmp" "$tmp.log"
  log "built prometheus and promtool in $(since "$t0")s"
fi

source_hash="$(cat "$SRC"/go.mod "$SRC"/go.sum "$SRC"/*.go | sha256sum | cut -c1-16)"
if ! stamped promql-names "$source_hash"; then
  t0=$(now_ms)
  log "building promql-names ($SRC)"
  if ! (cd "$SRC" && GOFLAGS="${GOFLAGS:--buildvcs=false} -mod=readonly" go build -ldflags="-s -w" -o "$BIN/promql-names.tmp" .) >"$BIN/promql-names.log" 2>&1; then
    tail -n 40 "$BIN/promql-names.log" >&2
    log "error: promql-names did not build (full output in $BIN/promql-names.log)"
    exit 1
  fi
  mv -f "$BIN/promql-names.tmp" "$BIN/promql-names"
  printf '%s' "$source_hash" >"$BIN/promql-names.version"
  rm -f "$BIN/promql-names.log"
  log "built promql-names in $(since "$t0")s"
fi

echo "$BIN/prometheus"
echo "$BIN/promtool"
echo "$BIN/promql-names"
