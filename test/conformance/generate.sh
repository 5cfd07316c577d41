#!/usr/bin/env bash
# Regenerates test/conformance/gen/ from the conformance protos of the pinned runner's Go module
# (connectrpc.com/conformance@v1.0.7 ships its proto/ directory).
set -euo pipefail
VERSION=v1.0.7
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
MOD="$(cd "$HERE" && GOFLAGS=-mod=mod go mod download -json "connectrpc.com/conformance@$VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
[[ -d "$MOD/proto" ]] || { echo "no proto/ in $MOD" >&2; exit 1; }
cd "$HERE"
PATH="$ROOT/node_modules/.bin:$PATH" buf generate "$MOD/proto" --template "$HERE/buf.gen.yaml"
echo "generated into $HERE/gen" >&2
