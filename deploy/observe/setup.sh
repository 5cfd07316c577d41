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
TAG=observe
# shellcheck source=../../scripts/go-build.sh
source scripts/go-build.sh

go_install "$PROMETHEUS_VERSION" "prometheus promtool" -tags remove_all_sd \
  "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION" \
  "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION"
go_build_source promql-names deploy/observe/promql-names

echo "$BIN/prometheus"
echo "$BIN/promtool"
echo "$BIN/promql-names"
