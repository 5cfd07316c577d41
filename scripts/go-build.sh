# Sourced by the scripts that build Go tools into a folder of .cache (deploy/helm/setup.sh,
# deploy/observe/setup.sh, infra/otlp-receiver/setup.sh): a stamp beside each binary names what it
# was built from (a pinned version, or the hash of its sources), so a new pin or a changed source
# rebuilds and anything else costs nothing. The sourcing script sets BIN (the folder) and TAG (its
# log prefix) first.
# shellcheck shell=bash

now_ms() { date +%s%3N; }
since() { local d=$(($(now_ms) - $1)); printf '%d.%d' $((d / 1000)) $(((d % 1000) / 100)); }
log() { printf '[%s] %s\n' "$TAG" "$*" >&2; }

command -v go >/dev/null 2>&1 || { log "error: 'go' is not on PATH (these tools are built from the Go module proxy)"; exit 1; }
mkdir -p "$BIN"

stamped() { [[ -x "$BIN/$1" && -f "$BIN/$1.version" && "$(<"$BIN/$1.version")" == "$2" ]]; }

# go_install <version> <names, space-separated> <go install arguments...>: one go install of pinned
# module packages (several in one go install share their compiled packages), each binary stamped.
# -s -w: no symbol table or DWARF, which nothing here reads.
go_install() {
  local version="$1" names="$2" name missing=0 tmp t0
  shift 2
  for name in $names; do stamped "$name" "$version" || missing=1; done
  ((missing)) || return 0
  t0=$(now_ms)
  log "building $names $version with go install (first run takes several minutes)"
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/go-install.XXXXXX")"
  if ! GOBIN="$tmp" GOFLAGS="${GOFLAGS:--buildvcs=false}" go install -ldflags="-s -w" "$@" >"$tmp.log" 2>&1; then
    tail -n 40 "$tmp.log" >&2
    log "error: go install $* failed (full output in $tmp.log)"
    exit 1
  fi
  for name in $names; do
    mv -f "$tmp/$name" "$BIN/$name"
    printf '%s' "$version" >"$BIN/$name.version"
  done
  rm -rf "$tmp" "$tmp.log"
  log "built $names in $(since "$t0")s"
}

# go_build_source <name> <folder>: a Go module of this project (its own go.mod and go.sum), stamped
# with the hash of its sources.
go_build_source() {
  local name="$1" src="$2" hash t0
  hash="$(cat "$src"/go.mod "$src"/go.sum "$src"/*.go | sha256sum | cut -c1-16)"
  stamped "$name" "$hash" && return 0
  t0=$(now_ms)
  log "building $name ($src)"
  if ! (cd "$src" && GOFLAGS="${GOFLAGS:--buildvcs=false} -mod=readonly" go build -ldflags="-s -w" -o "$BIN/$name.tmp" .) >"$BIN/$name.log" 2>&1; then
    tail -n 40 "$BIN/$name.log" >&2
    log "error: $name did not build (full output in $BIN/$name.log)"
    exit 1
  fi
  mv -f "$BIN/$name.tmp" "$BIN/$name"
  printf '%s' "$hash" >"$BIN/$name.version"
  rm -f "$BIN/$name.log"
  log "built $name in $(since "$t0")s"
}
