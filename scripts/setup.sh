#!/usr/bin/env bash
# Installs what the test suites need on a fresh machine, idempotently (silent and quick once done),
# and says how long each step took. Independent chains run side by side, so the network-bound
# installs overlap the CPU-bound Go builds:
#   apt        the Debian packages the machine lacks (the chains that need one wait for it)
#   npm        the project's packages (npm install)
#   go         storage peers (MinIO, mc, fake-gcs-server), the Connect conformance runner, the
#              fuzzer's OpenAPI generator (with its schemathesis venv), helm and the chart's
#              manifest validator (deploy/helm/setup.sh), Prometheus and promtool (deploy/observe/setup.sh),
#              the tests' OTLP trace receiver (infra/otlp-receiver/setup.sh)
#   python     the encoder's speech recogniser and its model data (scripts/asr-setup.sh), and the
#              ffmpeg with libvmaf that scores quality (scripts/vmaf-setup.sh)
#   jars       Kafka's and Cassandra's jars from Maven Central (infra/*.sh fetch)
#   clients    the SDKs' generators (Go module proxy) and the Python SDK's venv (clients/setup.sh)
#   engine     the container engine (deploy/engine.sh): Debian's docker.io, started
set -euo pipefail
cd "$(dirname "$0")/.."

now() { date +%s; }
t0=$(now)

# Debian packages the suites need: curl (front-door test), a JDK and Maven (the infra/ scripts
# fetch and run Kafka and Cassandra from Maven Central), ffmpeg and ffprobe (the encoder), chromium
# (the player tests), espeak-ng (speech for the caption tests), Python's venv (the Python tools). Go
# comes with the machine (Debian's is too old for MinIO); infra/peers.sh says so when it is missing.
# apt runs as a chain of its own, beside the npm install and the Go builds, which need none of it;
# the chains that do (the jars need Java and Maven, the Python tools a venv) wait for it only when
# the machine lacks what they need.
missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
# $jdk and $venv are after_apt where the chain that needs them must wait for apt, else nothing.
jdk=""
command -v java >/dev/null 2>&1 || { missing+=(openjdk-17-jre-headless); jdk=after_apt; }
command -v mvn >/dev/null 2>&1 || { missing+=(maven); jdk=after_apt; }
command -v ffmpeg >/dev/null 2>&1 || missing+=(ffmpeg)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v espeak-ng >/dev/null 2>&1 || missing+=(espeak-ng)
venv=""
python3 -c 'import ensurepip' >/dev/null 2>&1 || { missing+=(python3-venv); venv=after_apt; }
apt_packages() {
  echo "setup: installing ${missing[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
}
apt_chain() {
  if apt_packages; then echo ok >"$apt_done"; else echo failed >"$apt_done"; return 1; fi
}
# after_apt <command...>: waits for the apt chain first when it runs and the command needs it.
apt_done="$(mktemp -u)"
after_apt() {
  if ((${#missing[@]})); then
    while [[ ! -e "$apt_done" ]]; do sleep 1; done
    [[ "$(<"$apt_done")" == ok ]] || { echo "the Debian packages did not install"; return 1; }
  fi
  "$@"
}

logs="$(mktemp -d)"
# chain <name> <command...>: runs in the background, output kept for a failure, duration reported.
chain() {
  local name="$1"; shift
  (
    local s; s=$(now)
    if "$@" >"$logs/$name.log" 2>&1; then
      (($(now) - s < 2)) || echo "setup: $name $(($(now) - s)) s" >&2
    else
      echo "setup: $name failed:" >&2
      tail -n 40 "$logs/$name.log" >&2
      exit 1
    fi
  ) &
}
# The Go builds side by side (each alone leaves a core idle while it downloads and links).
go_tools() {
  bash infra/peers.sh build & local peers=$!
  bash test/conformance/setup.sh >/dev/null & local conformance=$!
  bash deploy/helm/setup.sh >/dev/null & local chart=$!
  bash infra/otlp-receiver/setup.sh >/dev/null & local receiver=$!
  bash deploy/observe/setup.sh >/dev/null & local observe=$!
  $venv bash test/fuzz/setup.sh # its schemathesis venv needs Python's venv
  local status=0
  wait "$peers" || status=1
  wait "$conformance" || status=1
  wait "$chart" || status=1
  wait "$receiver" || status=1
  wait "$observe" || status=1
  return "$status"
}
# && as chain runs this in an if, where set -e does not stop at a failed first step.
python_tools() {
  bash scripts/asr-setup.sh && bash scripts/vmaf-setup.sh
}
jars() {
  bash infra/kafka.sh fetch
  bash infra/cassandra.sh fetch
}
if ((${#missing[@]})); then
  chain apt apt_chain
fi
chain npm npm install --no-audit --no-fund --loglevel=error
chain go go_tools
chain jars $jdk jars
chain python $venv python_tools
chain clients $venv bash clients/setup.sh
# The container engine of the deploy suites (Debian's docker.io, started): after the apt chain, whose
# lock it would wait for. Where none can run, scripts/test.sh says why and the deploy suites skip.
engine() { bash deploy/engine.sh up || true; }
chain engine after_apt engine
status=0
for job in $(jobs -p); do wait "$job" || status=1; done
rm -rf "$logs" "$apt_done"
(($(now) - t0 < 2)) || echo "setup: done in $(($(now) - t0)) s" >&2
exit "$status"
