#!/usr/bin/env bash
# Installs what the fuzz test needs, idempotently (quiet and quick when all is there):
#   .venv-fuzz/                                 Python venv with schemathesis (pinned below)
#   test/fuzz/.bin/protoc-gen-connect-openapi   the OpenAPI generator, at the version pinned in
#                                               test/fuzz/tools/go.mod (built from the Go module
#                                               proxy; `go install pkg@version` is refused there
#                                               because its deprecation lookup needs the module's
#                                               version list)
set -euo pipefail
cd "$(dirname "$0")/../.."

SCHEMATHESIS_VERSION=4.32.5
VENV=.venv-fuzz
BIN=test/fuzz/.bin/protoc-gen-connect-openapi

if ! "$VENV/bin/python" -c "import schemathesis, sys; sys.exit(schemathesis.__version__ != '$SCHEMATHESIS_VERSION')" 2>/dev/null; then
  echo "fuzz setup: schemathesis $SCHEMATHESIS_VERSION into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

want="$(awk '$1 == "require" && $2 == "github.com/sudorandom/protoc-gen-connect-openapi" { print $3 }' test/fuzz/tools/go.mod)"
stamp="$BIN.version"
if [[ ! -x "$BIN" || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  echo "fuzz setup: building protoc-gen-connect-openapi $want (takes a few minutes once)" >&2
  (cd test/fuzz/tools && go build -o ../.bin/protoc-gen-connect-openapi github.com/sudorandom/protoc-gen-connect-openapi)
  echo "$want" > "$stamp"
fi
