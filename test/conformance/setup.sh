#!/usr/bin/env bash
# Installs the official Connect conformance runner (connectconformance, pinned) into GOBIN
# (default: $(go env GOPATH)/bin). Idempotent and quick when the pinned version is already there.
# Prints the path of the binary on stdout.
set -euo pipefail
VERSION=v1.0.7
GOBIN="${GOBIN:-$(go env GOPATH)/bin}"
BIN="$GOBIN/connectconformance"
if [[ -x "$BIN" ]] && [[ "$("$BIN" --version 2>/dev/null)" == "connectconformance $VERSION" ]]; then
  echo "$BIN"
  exit 0
fi
echo "installing connectconformance $VERSION into $GOBIN" >&2
GOBIN="$GOBIN" GOFLAGS=-mod=mod go install "connectrpc.com/conformance/cmd/connectconformance@$VERSION" >&2
echo "$BIN"
