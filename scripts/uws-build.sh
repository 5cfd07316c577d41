#!/usr/bin/env bash
# Builds uWebSockets.js from source for the given Node (default: `node` on PATH) into
#   .cache/uws/<VER>/{uws.js,index.d.ts,ESM_wrapper.mjs,package.json,uws_linux_<arch>_<abi>.node}
# Why: the published uWS.js binaries either lack Node 24 (ABI 137) builds or need glibc >= 2.38.
# Sources come only from package registries (GitHub is unreachable here):
#   - npm `uwebsockets@3.0.6`: a republish of uWebSockets.js that ships src/addon.cpp + wrappers + uws.js + index.d.ts
#   - crates.io `libuwebsockets-sys@0.0.10`: vendors uWebSockets v20.58.0 (src/*.h) with its exact uSockets submodule
# Idempotent and silent on success; on failure prints ONE line on stderr and exits non-zero.
# --if-needed (npm's postinstall): nothing to do where the published build loads; a failure is that
# one line, kept in .cache/uws/why-not for the server's own line, and the install goes on (the
# gateway then serves with node:http).
set -euo pipefail
IF_NEEDED=""; [[ "${1:-}" == --if-needed ]] && { IF_NEEDED=1; shift; }
NODE="${1:-node}"
JS_PKG=uwebsockets@3.0.6 CRATE=libuwebsockets-sys CRATE_VER=0.0.10 VER=20.58.0
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/.cache/uws/$VER" LOG="$ROOT/.cache/uws/build.log"
die() {
  echo "uws-build: $*" >&2
  [[ -z "$IF_NEEDED" ]] && exit 1
  mkdir -p "$ROOT/.cache/uws" && echo "$*" >"$ROOT/.cache/uws/why-not"
  echo "uws-build: the gateway will serve with node:http" >&2
  exit 0
}

command -v "$NODE" >/dev/null 2>&1 || die "node binary '$NODE' not found (pass its path as the first argument)"
NODE="$(readlink -f "$(command -v "$NODE")")" # absolute: the build runs in a scratch folder
read -r NVER ABI ARCH < <("$NODE" -p 'process.version.slice(1)+" "+process.versions.modules+" "+process.arch')
BIN="$OUT/uws_linux_${ARCH}_${ABI}.node"
# Already built and loadable by this node, or (--if-needed) the published build loads: nothing to do.
[ -f "$BIN" ] && "$NODE" -e "require('$OUT/uws.js')" >/dev/null 2>&1 && exit 0
[[ -n "$IF_NEEDED" ]] && (cd "$ROOT" && "$NODE" -e "require('uWebSockets.js')") >/dev/null 2>&1 && exit 0
rm -f "$ROOT/.cache/uws/why-not"

[ "$(uname -s)" = Linux ] || die "only Linux is supported"
command -v gcc >/dev/null && command -v g++ >/dev/null || die "no C/C++ compiler: install gcc and g++ (g++ >= 10 for C++20)"
command -v npm >/dev/null || die "npm is needed to fetch the uWebSockets.js sources"
command -v cargo >/dev/null || die "cargo is needed to fetch the uWebSockets/uSockets sources from crates.io"
mkdir -p "$ROOT/.cache/uws"
W="$(mktemp -d "$ROOT/.cache/uws/.build.XXXXXX")"; trap 'rm -rf "$W"' EXIT
exec 3>"$LOG"   # all tool chatter goes to the log, so the script stays silent

# Node headers (v8, node, uv, openssl, zlib): next to the binary (official tarballs and the
# npm node-linux-<arch> package both ship include/node), else the same version from npm.
INC="$(dirname "$NODE")/../include/node"
# The registry's `node` package keeps them in its per-platform package.
[ -f "$INC/node.h" ] || INC="$(dirname "$NODE")/../node_modules/node-linux-$ARCH/include/node"
if [ ! -f "$INC/node.h" ]; then
  (cd "$W" && npm pack --silent "node-linux-$ARCH@$NVER" >&3 2>&3 && tar xzf node-linux-*.tgz package/include) \
    || die "no Node headers next to $NODE and npm pack node-linux-$ARCH@$NVER failed (see $LOG)"
  INC="$W/package/include/node"
fi

# uWebSockets.js sources (the package's prebuilt .node files are not extracted).
(cd "$W" && npm pack --silent "$JS_PKG" >&3 2>&3 && mkdir js && tar xzf uwebsockets-*.tgz -C js --strip-components=1 \
  package/src package/uws.js package/index.d.ts package/ESM_wrapper.mjs) || die "could not fetch $JS_PKG from npm (see $LOG)"
# uWebSockets + uSockets: `cargo info` downloads the .crate into cargo's cache without resolving any deps.
CRATE_FILE() { ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$CRATE-$CRATE_VER.crate" 2>/dev/null | head -1; }
[ -n "$(CRATE_FILE)" ] || (cd "$W" && cargo info "$CRATE@$CRATE_VER" >&3 2>&3) || true
[ -n "$(CRATE_FILE)" ] || die "could not fetch $CRATE@$CRATE_VER from crates.io (see $LOG)"
tar xzf "$(CRATE_FILE)" -C "$W" && U="$W/$CRATE-$CRATE_VER/uWebSockets" S="$W/$CRATE-$CRATE_VER/uWebSockets/uSockets/src"
[ -f "$U/src/App.h" ] && [ -f "$S/libusockets.h" ] && [ -f "$W/js/src/addon.cpp" ] || die "downloaded packages lack the expected sources"

# Patches: V8 in Node >= 23 removed FunctionCallbackInfo::Holder() (upstream switched to This()).
# HTTP/3 needs lsquic+BoringSSL, which we do not build: drop the H3App export; the few us_quic_*
# symbols still referenced by the (unreachable) QUIC templates get aborting stubs below.
sed -i 's/\.Holder()/.This()/g' "$W"/js/src/*.h "$W"/js/src/*.cpp
# RFC 9110's token: a header name may hold any tchar ("X_Trace", "x.trace", "x~t"), which uWebSockets
# 20.58 refused by closing the connection without an answer (20.60 accepts them). Lower-casing now
# touches letters only: '_' | 0x20 would be DEL.
P="$U/src/HttpParser.h"
perl -0pi -e 's/return \(x == .-.\) \|\n(\s*)\(\(x > .\/.\)/return (x == \x27-\x27) | (x == \x27!\x27) | ((x > \x27"\x27) & (x < \x27(\x27)) | (x == \x27*\x27) | (x == \x27+\x27) | (x == \x27.\x27) |\n$1(x == \x27^\x27) | (x == \x27_\x27) | (x == \x27`\x27) | (x == \x27|\x27) | (x == \x27~\x27) |\n$1((x > \x27\/\x27)/' "$P"
perl -0pi -e 's/\*\(p\+\+\) \|= 0x20;/if (*p >= \x27A\x27 \&\& *p <= \x27Z\x27) *p |= 0x20;\n                    p++;/' "$P"
grep -q "(x == '_')" "$P" && grep -q "if (\*p >= 'A'" "$P" || die "the header-name patch no longer applies to $P"
sed -i '/"H3App"/d' "$W/js/src/addon.cpp"
printf '#include <stdlib.h>\n' > "$W/quic_stub.c"
for f in get_header send_headers set_header; do echo "void us_quic_socket_context_$f(void){abort();}"; done >> "$W/quic_stub.c"
for f in ext shutdown write; do echo "void us_quic_stream_$f(void){abort();}"; done >> "$W/quic_stub.c"

# Like uWS.js build.c: libuv eventing (shares Node's loop), OpenSSL = the one Node exports (so
# SSLApp works; headers in include/node/openssl), zlib from Node too. No -flto: slower on 2 cores.
DEFS="-DLIBUS_USE_LIBUV -DLIBUS_USE_OPENSSL -DUWS_WITH_PROXY"
cd "$W"
# The C part is small: compile it in the background while the big C++ TU builds (2 cores).
( gcc $DEFS -O3 -fPIC -c -I"$S" -I"$INC" "$S"/*.c "$S"/eventing/*.c "$S"/crypto/*.c quic_stub.c ) >&3 2>&3 & CPID=$!
g++ $DEFS -DLIBUS_USE_QUIC -O3 -fPIC -c -std=c++20 -Ijs/src -I"$S" -I"$U/src" -I"$INC" \
  js/src/addon.cpp "$S/crypto/sni_tree.cpp" >&3 2>&3 || die "C++ compile failed (see $LOG)"
wait "$CPID" || die "uSockets C compile failed (see $LOG)"
g++ -O3 ./*.o -shared -static-libstdc++ -static-libgcc -s -o "uws_linux_${ARCH}_${ABI}.node" >&3 2>&3 || die "link failed (see $LOG)"

mkdir -p "$OUT" && cp js/uws.js js/index.d.ts js/ESM_wrapper.mjs "uws_linux_${ARCH}_${ABI}.node" "$OUT/"
cat > "$OUT/package.json" <<EOF
{ "name": "uWebSockets.js", "version": "$VER", "main": "uws.js", "types": "index.d.ts",
  "exports": { "types": "./index.d.ts", "import": "./ESM_wrapper.mjs", "require": "./uws.js" },
  "description": "Local build: $JS_PKG addon sources + uWebSockets $VER ($CRATE@$CRATE_VER)" }
EOF
"$NODE" -e "require('$OUT/uws.js').App()" >&3 2>&3 || die "built $BIN but it does not load in $NODE (see $LOG)"
