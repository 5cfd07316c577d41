#!/usr/bin/env bash
# Builds the chart's offline checkers into .cache/helm/bin, idempotently (silent when built):
#   helm       helm.sh/helm/v3 at a pinned release, from the Go module proxy (helm lint, helm template)
#   validate   deploy/helm/validate: every rendered object decoded strictly against the Kubernetes,
#              KEDA and prometheus-operator API types
# One after the other: each compiles most of Kubernetes' client libraries on every core (cold, about
# 4 and 6 CPU-minutes). Prints the two paths on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
BIN="$PWD/.cache/helm/bin"
SRC=deploy/helm/validate

now_ms() { date +%s%3N; }
since() { local d=$(($(now_ms) - $1)); printf '%d.%d' $((d / 1000)) $(((d % 1000) / 100)); }
log() { printf '[helm] %s\n' "$*" >&2; }

command -v go >/dev/null 2>&1 || { log "error: 'go' is not on PATH (the chart's checkers are built from the Go module proxy)"; exit 1; }
mkdir -p "$BIN"

# A stamp beside each binary names what it was built from, so a new pin or a changed validator rebuilds.
stamped() { [[ -x "$BIN/$1" && -f "$BIN/$1.version" && "$(<"$BIN/$1.version")" == "$2" ]]; }

if ! stamped helm "$HELM_VERSION"; then
  t0=$(now_ms)
  log "building helm $HELM_VERSION with go install (first run takes several minutes)"
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/helm-build.XXXXXX")"
  # -s -w: no symbol table or DWARF, which nothing here reads.
  if ! GOBIN="$tmp" GOFLAGS="${GOFLAGS:--buildvcs=false}" go install -ldflags="-s -w" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >"$tmp.log" 2>&1; then
    tail -n 40 "$tmp.log" >&2
    log "error: go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION failed (full output in $tmp.log)"
    exit 1
  fi
  mv -f "$tmp/helm" "$BIN/helm"
  printf '%s' "$HELM_VERSION" >"$BIN/helm.version"
  rm -rf "$tmp" "$tmp.log"
  log "built helm in $(since "$t0")s"
fi

source_hash="$(cat "$SRC"/go.mod "$SRC"/go.sum "$SRC"/*.go | sha256sum | cut -c1-16)"
if ! stamped validate "$source_hash"; then
  t0=$(now_ms)
  log "building the manifest validator ($SRC)"
  if ! (cd "$SRC" && GOFLAGS="${GOFLAGS:--buildvcs=false} -mod=readonly" go build -ldflags="-s -w" -o "$BIN/validate.tmp" .) >"$BIN/validate.log" 2>&1; then
    tail -n 40 "$BIN/validate.log" >&2
    log "error: the validator did not build (full output in $BIN/validate.log)"
    exit 1
  fi
  mv -f "$BIN/validate.tmp" "$BIN/validate"
  printf '%s' "$source_hash" >"$BIN/validate.version"
  rm -f "$BIN/validate.log"
  log "built the validator in $(since "$t0")s"
fi

echo "$BIN/helm"
echo "$BIN/validate"
