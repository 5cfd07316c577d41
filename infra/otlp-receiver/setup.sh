#!/usr/bin/env bash
# Builds the tests' OTLP trace receiver (this folder) into .cache/otlp-receiver/bin, idempotently:
# a stamp beside the binary names the hash of the sources it was built from, so a change rebuilds
# and an unchanged tree costs nothing. Prints the binary's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN="$PWD/.cache/otlp-receiver/bin"
TAG=otlp-receiver
# shellcheck source=../../scripts/go-build.sh
source scripts/go-build.sh

go_build_source otlp-receiver infra/otlp-receiver
echo "$BIN/otlp-receiver"
