#!/usr/bin/env bash
# Set up .venv and run Kirin's main job headless: retarget a motion onto a character, write a .blend,
# a Cycles CPU preview and a JSON report under out/. Extra arguments go to `kirin retarget`
# (e.g. --source clip.bvh --target character.glb); without them a built-in walk and character are used.
set -euo pipefail
cd "$(dirname "$0")/.."
KIRIN_SKIP_BPY50=1 bash tools/setup_env.sh
mkdir -p out
.venv/bin/kirin retarget --out out/kirin.blend --preview out/kirin_preview.mp4 --json out/kirin_report.json "$@"
