#!/usr/bin/env bash
# Installs what the SDK suites (test/clients/) need, idempotently (quiet and quick when all is there):
#   clients/.bin/protoc-gen-go, protoc-gen-connect-go  the Go SDK's generators, at the versions in
#                                                      clients/go/tools/go.mod (Go module proxy)
#   clients/go modules                                 connect-go and protobuf for the Go SDK
#   .venv-clients/                                     the Python SDK's runtime (connectrpc), its
#                                                      generators and pytest, pinned below (PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=clients/.bin
VENV=.venv-clients
PYTHON_PACKAGES=(connectrpc==0.13.0 protoc-gen-py==0.7.0 protoc-gen-connectrpc==0.13.0 pytest==9.2.0)

go_tools() {
  local want stamp="$BIN/versions"
  want="$(awk '$1 ~ /^(connectrpc.com\/connect|google.golang.org\/protobuf)$/ { print $1 "@" $2 }' clients/go/tools/go.mod | sort | tr '\n' ' ')"
  if [[ -x "$BIN/protoc-gen-go" && -x "$BIN/protoc-gen-connect-go" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then return 0; fi
  echo "clients setup: building protoc-gen-go and protoc-gen-connect-go ($want)" >&2
  mkdir -p "$BIN"
  (cd clients/go/tools && go build -o ../../.bin/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go && go build -o ../../.bin/protoc-gen-connect-go connectrpc.com/connect/cmd/protoc-gen-connect-go)
  echo "$want" >"$stamp"
}

go_modules() {
  (cd clients/go && go mod download)
}

python_venv() {
  local want="${PYTHON_PACKAGES[*]}" stamp="$VENV/.packages"
  if [[ -x "$VENV/bin/python" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then return 0; fi
  echo "clients setup: ${PYTHON_PACKAGES[*]} into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "${PYTHON_PACKAGES[@]}"
  echo "$want" >"$stamp"
}

command -v go >/dev/null 2>&1 || { echo "clients setup: go is missing (the Go SDK needs it)" >&2; exit 1; }
go_tools
go_modules
python_venv
