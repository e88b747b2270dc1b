"""Regenerate the README's pictures of Generate Motion: the main job (`kirin generate`) on the
built-in creature (a trot) and on the Fox (a walk, when ../shared/assets is there), three variants:
a filmstrip PNG (Workbench, side view, 8 frames of each variant, one row each:
benchmarks/motion_real_filmstrip.py) and a short 480×270 MP4 of the variants side by side, under docs/.

    .venv/bin/python tools/make_readme_media.py [--threads 1] [--frames 72]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOX = ROOT.parent / "shared" / "assets" / "khronos_fox" / "Fox.glb"
JOBS = [
    ("generate_creature", None, "a wolf trotting forward"),
    ("generate_fox", FOX, "a fox walking forward"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs"))
    parser.add_argument("--frames", type=int, default=72)
    parser.add_argument("--variants", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="backend CPU threads (0: its default)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kirin = ROOT / ".venv" / "bin" / "kirin"
    made = {}
    for name, rig, prompt in JOBS:
        if rig is not None and not rig.is_file():
            print(f"skipping {name}: {rig} is absent", file=sys.stderr)
            continue
        work = Path(tempfile.mkdtemp(prefix="kirin-media-"))
        command = [str(kirin), "generate", "--prompt", prompt, "--frames", str(args.frames),
                   "--variants", str(args.variants), "--threads", str(args.threads),
                   "--out", str(work / f"{name}.blend"), "--json", str(work / f"{name}.json"),
                   "--preview", str(out / f"{name}.mp4"), "--preview-size", "480x270"]
        if rig is not None:
            command += ["--rig", str(rig)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        strip = [str(ROOT / ".venv" / "bin" / "python"), "-m", "kirin.benchmarks.motion_real_filmstrip",
                 str(work / f"{name}.blend"), str(out / f"{name}.png")]
        subprocess.run(strip, check=True, stdout=subprocess.DEVNULL)
        report = json.loads((work / f"{name}.json").read_text())
        made[name] = {
            "prompt": prompt,
            "rig": report["rig"],
            "device": report["device"],
            "seconds_to_first_action": report["seconds_to_first_action"],
            "seconds_model": report["seconds_model"],
            "variants": [{k: v[k] for k in ("action", "foot_skating", "jitter", "bone_length_error")}
                         for v in report["variants"]],
            "files": [f"{name}.png", f"{name}.mp4"],
        }
    (out / "generate_media.json").write_text(json.dumps(made, indent=2) + "\n")
    print(json.dumps(made, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
