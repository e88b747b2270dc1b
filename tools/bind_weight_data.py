"""Training data for Auto-Bind's learned weights (issue 20): the artists' characters, re-bound.

For every character file of ../shared/assets that is not held out (data/bind_heldout.txt), as
benchmarks/bench_autobind.py measures it: import, record the artist's deformation at --frames poses,
strip the rig, fit the template, and compute the weight sets the network corrects (bone heat,
the transferred template weights, their blend). The target is the artist's deformation itself: the
fitted bones' rigid moves that reproduce it best under the artist's weights (moved onto the fitted
bones), so a weight set is trained to reproduce the artist's mesh with the fitted skeleton — the
weights-alone measure.

One .npz per character under --out (never in the repository: it is derived from the assets).
Characters already there are skipped, so a stopped run resumes.

Run: .venv/bin/python tools/bind_weight_data.py [--out ~/.cache/kirin/bind_weights] [--only Fox ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kirin.kirin_addon.io.scratch import private_blender_resources

private_blender_resources("kirin-bench-")

import bpy  # noqa: E402
import numpy as np  # noqa: E402

from kirin.benchmarks import bench_autobind as bench  # noqa: E402
from kirin.benchmarks import skinning_support as support  # noqa: E402
from kirin.kirin_addon.bind import best_pose  # noqa: E402
from kirin.kirin_addon.core.skinning import SkinnedMesh  # noqa: E402

DEFAULT_OUT = Path.home() / ".cache" / "kirin" / "bind_weights"
WEIGHT_SETS = ("heat", "heat+prior", "robust")  # the bench's names: bone heat, blend, transfer


def dense(weights: support.Weights, joints: int) -> np.ndarray:
    mesh = SkinnedMesh(np.zeros((len(weights[0]), 3)), np.zeros((0, 3)), *weights)
    return support.dense_weights(mesh, joints)


def character_data(name: str, source: Path, family: str | None, frames: int) -> dict[str, np.ndarray]:
    """Everything the features and the deformation loss need, for one character."""
    subject, _ = bench.record_subject(name, source, frames, np.random.default_rng(0))
    fitted = bench.fit_skeleton(subject, family)
    skins = bench.skin_all(subject, fitted, WEIGHT_SETS)
    try:
        mapping = bench.retarget_poses(subject, fitted, align_rest=False).mapping
    except ValueError:  # no fitted joint maps to the artist's: its bones go to the nearest fitted joints
        mapping = {}
    artist = bench.mapped_artist_weights(subject, fitted, mapping)
    rig = fitted.rig
    owner = best_pose.nearest_bone(subject.vertices, rig)
    start = best_pose.segment_moves(subject.vertices, subject.truth, rig, owner)
    moves = bench.best_moves(subject, artist, start, best_pose.SWEEPS)
    joints = rig.joint_count
    return {
        "name": np.array(name), "family": np.array(fitted.fit.family),
        "vertices": subject.vertices, "triangles": subject.triangles,
        "names": np.array(rig.names), "parents": rig.parents, "rest": rig.rest, "tails": rig.tails,
        "deform": rig.deform, "moves": moves, "truth": subject.truth,
        "artist": dense(artist, joints),
        **{f"weights_{m}": dense(skins[m][0], joints) for m in WEIGHT_SETS},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", type=Path, default=bench.DEFAULT_ASSETS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--frames", type=int, default=16)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    held = bench.held_out(args.assets)
    for name, source, family in bench.skeleton_rows(args.assets, args.only):
        target = args.out / (name.replace("/", "__") + ".npz")
        if source in held or target.exists():
            continue
        bpy.ops.wm.read_factory_settings(use_empty=True)
        started = time.perf_counter()
        try:
            data = character_data(name, source, family, args.frames)
        except Exception as exc:  # noqa: BLE001 — a character that cannot be re-bound is reported and skipped
            print(f"{name}: skipped ({type(exc).__name__}: {exc})", flush=True)
            continue
        np.savez_compressed(target, **data)
        print(f"{name}: {len(data['vertices'])} vertices, {len(data['names'])} bones ({data['family']}), "
              f"{time.perf_counter() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
