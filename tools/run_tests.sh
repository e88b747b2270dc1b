#!/usr/bin/env bash
# Set up from scratch (idempotent) and run every test: engine + Blender on bpy 4.5 LTS, Blender again on 5.0.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_env.sh
.venv/bin/ruff check .
# bpy 4.5 can hang at interpreter exit if something stays registered: always under a timeout.
timeout 2700 .venv/bin/python -m pytest -q -p no:cacheprovider tests
timeout 1800 .venv-bpy50/bin/python -m pytest -q -p no:cacheprovider tests/blender
