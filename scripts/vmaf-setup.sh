#!/usr/bin/env bash
# Installs the ffmpeg that scores VMAF (encoder-node/vmaf.ts), idempotently (quiet and instant once
# done; a stamp file records what was installed):
#   .cache/vmaf/ffmpeg   the static ffmpeg 9.0.2 of the imageio-ffmpeg wheel, built with libvmaf
#                        (Netflix's library, vmaf_v0.6.1 and the other default models built in);
#                        checked by sha256
# Debian's ffmpeg, which encodes, has no libvmaf; this one only scores. The wheel is downloaded
# without its Python code's dependencies and only the binary is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=.cache/vmaf
WHEEL=imageio-ffmpeg==0.8.1
PLATFORM=manylinux_2_28_x86_64
MEMBER=imageio_ffmpeg/binaries/ffmpeg-linux-x86_64-v9.0.2
FFMPEG_SHA256=0d709a0bed1a43f24cd2c420878c63afea4580671b6949ad19ed124572f3bc3d

stamp="$CACHE/.setup-stamp"
want="$WHEEL $PLATFORM $FFMPEG_SHA256"
if [[ -x "$CACHE/ffmpeg" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
  exit 0
fi

if [[ "$(uname -m)" != x86_64 ]]; then
  echo "vmaf setup: the pinned ffmpeg is for x86_64, this machine is $(uname -m)" >&2
  exit 1
fi
echo "vmaf setup: ffmpeg with libvmaf from $WHEEL into $CACHE (once)" >&2
rm -f "$stamp"
mkdir -p "$CACHE"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Python's own pip where it has one, else a throwaway venv's.
pip=(python3 -m pip)
if ! python3 -m pip --version >/dev/null 2>&1; then
  python3 -m venv "$tmp/venv"
  pip=("$tmp/venv/bin/pip")
fi
"${pip[@]}" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --platform "$PLATFORM" --dest "$tmp" "$WHEEL"
wheel=("$tmp"/imageio_ffmpeg-*.whl)
python3 -c 'import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)' "${wheel[0]}" "$MEMBER" "$CACHE/ffmpeg.tmp"

got="$(sha256sum "$CACHE/ffmpeg.tmp" | cut -d' ' -f1)"
if [[ "$got" != "$FFMPEG_SHA256" ]]; then
  echo "vmaf setup: $MEMBER has sha256 $got, expected $FFMPEG_SHA256" >&2
  rm -f "$CACHE/ffmpeg.tmp"
  exit 1
fi
chmod +x "$CACHE/ffmpeg.tmp"
mv "$CACHE/ffmpeg.tmp" "$CACHE/ffmpeg"
echo "$want" > "$stamp"
