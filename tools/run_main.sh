#!/usr/bin/env bash
# Set up .venv and run Kirin's main job headless: Generate Motion on a character through the add-on's
# operator and a local CPU/GPU backend; writes a .blend (the first variant as the active action, the
# others as muted NLA takes), a Cycles preview of the variants side by side and a JSON report under out/.
# Extra arguments go to `kirin generate` (e.g. --rig character.glb --prompt "a fox trotting forward");
# without them a built-in procedural quadruped (rig and skinned mesh made in code) is animated.
set -euo pipefail
cd "$(dirname "$0")/.."
KIRIN_SKIP_BPY50=1 bash tools/setup_env.sh
mkdir -p out
.venv/bin/kirin generate --prompt "a wolf trotting forward" \
    --out out/kirin.blend --preview out/kirin_preview.mp4 --json out/kirin_report.json "$@"
