#!/usr/bin/env bash
# Storage peers for the tests, on loopback and without Docker: MinIO (S3, and R2 through a custom
# endpoint), its client mc (users and policies) and fake-gcs-server (the GCS JSON API), built from
# the Go module proxy at pinned versions. Tests start their own instances (test/peers.ts); `start`
# runs one of each for trying things by hand.
#
#   bash infra/peers.sh build            go install the pinned versions into $MEDIA_INFRA_DIR/bin (silent when present)
#   bash infra/peers.sh status           exit 0 when every binary is built at its pinned version, 3 otherwise
#   bash infra/peers.sh start            MinIO on http://127.0.0.1:$PEERS_MINIO_PORT (minioadmin/minioadmin)
#                                        and fake-gcs-server on http://127.0.0.1:$PEERS_GCS_PORT
#   bash infra/peers.sh stop [--clean]   stop both; --clean also deletes MinIO's data
set -euo pipefail

SERVICE=peers
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

# Newest versions on the module proxy when written (MinIO and mc publish pseudo-versions only).
MINIO_VERSION="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
MC_VERSION="${MC_VERSION:-v0.0.0-20250313080218-cf909e1063a9}"
FAKE_GCS_VERSION="${FAKE_GCS_VERSION:-v1.56.1}"
PEERS_MINIO_PORT="${PEERS_MINIO_PORT:-9000}"
PEERS_GCS_PORT="${PEERS_GCS_PORT:-4443}"

BIN="$MEDIA_INFRA_DIR/bin"
HOME_DIR="$MEDIA_INFRA_DIR/peers"

# name module version
PEERS=(
  "minio github.com/minio/minio $MINIO_VERSION"
  "mc github.com/minio/mc $MC_VERSION"
  "fake-gcs-server github.com/fsouza/fake-gcs-server $FAKE_GCS_VERSION"
)

# A stamp beside each binary records the version it was built from, so a new pin rebuilds.
built() { [[ -x "$BIN/$1" && -f "$BIN/$1.version" && "$(<"$BIN/$1.version")" == "$2" ]]; }

build_one() {
  local name="$1" module="$2" version="$3" tmp t0
  built "$name" "$version" && return 0
  require go
  t0=$(now_ms)
  log "building $name $version with go install (first run takes a few minutes)"
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/peers-build.XXXXXX")"
  # -s -w: no symbol table or DWARF, which the tests never read; linking MinIO is the longest single step.
  if ! GOBIN="$tmp" GOFLAGS="${GOFLAGS:--buildvcs=false}" go install -ldflags="-s -w" "$module@$version" >"$tmp.log" 2>&1; then
    tail -n 40 "$tmp.log" >&2
    rm -rf "$tmp"
    die "go install $module@$version failed (full output in $tmp.log)"
  fi
  mkdir -p "$BIN"
  mv -f "$tmp/$name" "$BIN/$name"
  printf '%s' "$version" >"$BIN/$name.version"
  rm -rf "$tmp" "$tmp.log"
  log "built $name in $(since "$t0")s"
}

build() {
  local p
  for p in "${PEERS[@]}"; do
    # shellcheck disable=SC2086 # three words on purpose
    # Side by side: one build's download and single-threaded link overlap another's compile.
    build_one $p &
  done
  local failed=0 pid
  for pid in $(jobs -p); do wait "$pid" || failed=1; done
  ((failed == 0)) || die "a peer did not build"
}

status() {
  local p name _module version missing=0
  for p in "${PEERS[@]}"; do
    read -r name _module version <<<"$p"
    if built "$name" "$version"; then log "$name $version built"; else log "$name $version missing"; missing=1; fi
  done
  for name in minio gcs; do
    if pid_running "$HOME_DIR/$name.pid" "$BIN/"; then log "$name running (pid $(<"$HOME_DIR/$name.pid"))"; fi
  done
  ((missing == 0)) || exit 3
}

start() {
  build
  mkdir -p "$HOME_DIR/minio-data"
  if pid_running "$HOME_DIR/minio.pid" "$BIN/minio"; then
    log "minio already running"
  else
    ensure_ports_free 127.0.0.1 "$PEERS_MINIO_PORT"
    MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin MINIO_BROWSER=off \
      spawn "$HOME_DIR/minio.pid" "$HOME_DIR/minio.log" "$BIN/minio" server --quiet --address "127.0.0.1:$PEERS_MINIO_PORT" "$HOME_DIR/minio-data"
    log "minio on http://127.0.0.1:$PEERS_MINIO_PORT (minioadmin/minioadmin)"
  fi
  if pid_running "$HOME_DIR/gcs.pid" "$BIN/fake-gcs-server"; then
    log "fake-gcs-server already running"
  else
    ensure_ports_free 127.0.0.1 "$PEERS_GCS_PORT"
    spawn "$HOME_DIR/gcs.pid" "$HOME_DIR/gcs.log" "$BIN/fake-gcs-server" -scheme http -host 127.0.0.1 -port "$PEERS_GCS_PORT" \
      -backend memory -public-host "127.0.0.1:$PEERS_GCS_PORT" -external-url "http://127.0.0.1:$PEERS_GCS_PORT" -log-level warn
    log "fake-gcs-server on http://127.0.0.1:$PEERS_GCS_PORT"
  fi
  sleep 1
  died_during_start "$HOME_DIR/minio.pid" "$BIN/minio" "$HOME_DIR/minio.log"
  died_during_start "$HOME_DIR/gcs.pid" "$BIN/fake-gcs-server" "$HOME_DIR/gcs.log"
}

stop() {
  parse_down_args "$@"
  stop_pid "$HOME_DIR/minio.pid" "$BIN/minio" 10
  stop_pid "$HOME_DIR/gcs.pid" "$BIN/fake-gcs-server" 10
  if ((CLEAN)); then rm -rf "$HOME_DIR"; log "removed $HOME_DIR"; fi
}

case "${1:-}" in
  build) build ;;
  status) status ;;
  start) start ;;
  stop) shift; stop "$@" ;;
  *) die "usage: $0 build|status|start|stop [--clean]" ;;
esac
