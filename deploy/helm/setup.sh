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
TAG=helm
# shellcheck source=../../scripts/go-build.sh
source scripts/go-build.sh

go_install "$HELM_VERSION" helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
go_build_source validate deploy/helm/validate

echo "$BIN/helm"
echo "$BIN/validate"
