#!/usr/bin/env bash
# The container engine the images, the compose files and the container tests need, on a machine
# that may have none: Debian's docker.io and docker-compose, installed when missing, and a dockerd
# started when none answers. Only what this script started is stopped by it.
#
#   bash deploy/engine.sh up       install if missing, start if not answering; exit 0 when it answers
#   bash deploy/engine.sh status   exit 0 when an engine answers, 3 when none does
#   bash deploy/engine.sh down     stop the dockerd this script started (none other)
#
# `up` prints one line saying why when no engine can run here (no root, no apt, a daemon that does
# not come up): the callers skip what needs one with that line.
set -euo pipefail
cd "$(dirname "$0")/.."

STATE=.cache/engine
PIDFILE="$STATE/dockerd.pid"
LOG="$STATE/dockerd.log"
START_TIMEOUT="${MEDIA_ENGINE_START_TIMEOUT:-60}"

# Debian's client first: a newer client found earlier on PATH may lack the classic builder or the
# API version of Debian's daemon.
docker_cli() { if [[ -x /usr/bin/docker ]]; then echo /usr/bin/docker; else command -v docker; fi; }

answers() {
  local cli
  cli="$(docker_cli)" || return 1
  timeout 10 "$cli" info >/dev/null 2>&1
}

install() {
  command -v dockerd >/dev/null 2>&1 && command -v docker-compose >/dev/null 2>&1 && return 0
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "engine: docker.io is not installed and this user cannot install it (needs root and apt-get)" >&2
    return 1
  fi
  echo "engine: installing docker.io and docker-compose (Debian packages)" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose; } >"$STATE/apt.log" 2>&1 ||
    { echo "engine: apt-get could not install docker.io and docker-compose:" >&2; tail -n 5 "$STATE/apt.log" >&2; return 1; }
}

up() {
  mkdir -p "$STATE"
  if answers; then return 0; fi
  install
  if [[ $(id -u) != 0 ]]; then
    echo "engine: no Docker engine answers and dockerd needs root to start" >&2
    return 1
  fi
  echo "engine: starting dockerd (log $LOG)" >&2
  setsid dockerd >"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  local deadline=$((SECONDS + START_TIMEOUT))
  until answers; do
    if ! kill -0 "$(<"$PIDFILE")" 2>/dev/null; then
      echo "engine: dockerd exited during start:" >&2
      tail -n 5 "$LOG" >&2
      rm -f "$PIDFILE"
      return 1
    fi
    ((SECONDS < deadline)) || { echo "engine: dockerd does not answer after ${START_TIMEOUT} s; see $LOG" >&2; return 1; }
    sleep 0.5
  done
}

down() {
  [[ -f "$PIDFILE" ]] || return 0
  local pid
  pid="$(<"$PIDFILE")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) if answers; then exit 0; else exit 3; fi ;;
  *) echo "usage: bash deploy/engine.sh up|status|down" >&2; exit 2 ;;
esac
