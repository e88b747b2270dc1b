"""Are constructed clips the same bits before and after a change? (issue 30: "behaviour identical")

`--dump OUT.npz` makes every constructed clip of PROMPTS on the artists' Husky and Bull (the engine's
glTF reader, two seeds, 120 frames at 30 fps) through the engine only — canonical frame, roles, the
prompt's plan, `construct_motion` — and saves rotations, root path, contacts and planted joints.
`--compare A.npz B.npz` prints how many arrays are equal, bit for bit and dtype included, and exits 1
when one differs. It calls nothing but those four functions, whose signatures issue 30 kept, so the
same file dumps an older tree:

    git worktree add /tmp/kirin-before 07beb1c && mkdir -p /tmp/kirin-pkg
    ln -s /tmp/kirin-before /tmp/kirin-pkg/kirin
    (cd /tmp && PYTHONPATH=/tmp/kirin-pkg .venv/bin/python $PWD/benchmarks/constructed_identity.py \
        --dump /tmp/before.npz)
    .venv/bin/python benchmarks/constructed_identity.py --dump /tmp/after.npz
    .venv/bin/python benchmarks/constructed_identity.py --compare /tmp/before.npz /tmp/after.npz

(PYTHONPATH is searched before the editable install's finder, so `kirin` is the older tree there.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ASSETS = Path(__file__).resolve().parents[2] / "shared" / "assets"
RIGS = ("quaternius/animals_pack/Husky.glb", "quaternius/animals_pack/Bull.glb")
PROMPTS = ("a husky walking forward", "a wolf trotting forward, then sitting down", "runs, then dies",
           "walks, then gallops", "an idle", "jumps", "attacks", "eating", "walks to the right",
           "walking slowly", "runs fast", "walks in a circle", "trots, then stands still")
SEEDS = (0, 5)


def dump(out: Path, assets: Path) -> int:
    from kirin.kirin_addon.core.canonical import canonical_rig
    from kirin.kirin_addon.generate.construct import construct_motion
    from kirin.kirin_addon.generate.plan import plan_prompt
    from kirin.kirin_addon.generate.rig_roles import detect_roles
    from kirin.kirin_addon.io.gltf import load_gltf

    arrays = {}
    for path in RIGS:
        asset = load_gltf(assets / path)
        asset.rig.validate()
        canon = canonical_rig(asset.rig)
        roles = detect_roles(canon.rig)
        for p, prompt in enumerate(PROMPTS):
            plan = plan_prompt(prompt, roles.family)
            if not plan.constructed:
                print(f"{Path(path).stem}: {prompt!r} is not made by construction")
                continue
            for seed in SEEDS:
                made = construct_motion(canon, asset.rig, plan, 120, 30.0, seed, asset.mesh, roles)
                key = f"{Path(path).stem}_{p}_{seed}"
                arrays[f"{key}_rotations"] = made.motion.rotations
                arrays[f"{key}_root"] = made.motion.root_positions
                arrays[f"{key}_contacts"] = made.contacts
                arrays[f"{key}_feet"] = np.asarray(made.feet)
    np.savez(out, **arrays)
    print(f"{len(arrays)} arrays written to {out}")
    return 0


def compare(first: Path, second: Path) -> int:
    a, b = np.load(first), np.load(second)
    shared = sorted(set(a.files) & set(b.files))
    differ = [k for k in shared if a[k].dtype != b[k].dtype or not np.array_equal(a[k], b[k])]
    alone = sorted(set(a.files) ^ set(b.files))
    print(f"{len(shared) - len(differ)}/{len(shared)} arrays bit-identical; in one file only: {len(alone)}")
    for key in differ[:10]:
        print(f"  differs: {key}")
    return 1 if differ or alone else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", type=Path, help="write the constructed clips here (.npz)")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("A", "B"), help="two dumps to compare")
    parser.add_argument("--assets", type=Path, default=ASSETS)
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.dump:
        return dump(args.dump, args.assets)
    parser.error("give --dump OUT.npz or --compare A.npz B.npz")
    return 2


if __name__ == "__main__":
    sys.exit(main())
