"""Turns and speed words in Generate Motion's constructed locomotion, by the engine alone (no Blender).

For rigs of several sources (the families' built creatures and artists' glTF rigs from ../shared/assets;
those held out in benchmarks/motion_real_sets.py are marked, and nothing was tuned on them), each prompt
is made by `GeneratePipeline(None)` and measured on the body:
its heading change (the pelvis' forward direction over the last second against the first; degrees,
positive turns left: counter-clockwise seen from above, about +Z in the canonical frame, −Y forward),
the largest change of heading from one frame to the next, its travel speed (the pelvis' ground path,
evened over a third of a second, in body sizes per second) and the ratio of that speed to the plain
gait's measured in the same run, and how far a planted foot moves while planted.

Run: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_turns_pace.py [--frames 150] [--rigs NAME ...]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kirin.benchmarks.motion_real_sets import is_held_out
from kirin.kirin_addon.core.motion import forward_kinematics
from kirin.kirin_addon.core.rig import Rig
from kirin.kirin_addon.core.skinning import SkinnedMesh
from kirin.kirin_addon.generate.map_back import nearest_legs
from kirin.kirin_addon.generate.pipeline import GeneratePipeline, PreparedRig
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.generate.rig_roles import detect_roles, planting_joints
from kirin.kirin_addon.io.gltf import load_gltf
from kirin.kirin_addon.library.families.build import build_creature

ASSETS = Path(__file__).resolve().parents[1] / ".." / "shared" / "assets"
# Artists' rigs of several sources.
ASSET_RIGS = (
    "quaternius/animals_pack/Deer.glb",
    "mesh2motion/fox-animations.glb",
    "mesh2motion/horse-animations.glb",
    "khronos_fox/Fox.glb",
    "threejs_robotexpressive/RobotExpressive.glb",
    "khronos_cesiumman/CesiumMan.glb",
    "quaternius/modular_men/Adventurer.glb",
)
# The prompts, each with the plain one its speed is compared with ("{gait}": the family's walk or run).
PACE_PROMPTS = ("slowly", "very slowly", "fast", "quickly", "very fast")
TURN_PROMPTS = ("walking forward, then turning right", "walking forward, then turning left",
                "walks to the right", "walks in a circle")


@dataclass
class Measured:
    heading: float  # degrees, last second against the first (positive: left)
    max_step: float  # degrees, the largest heading change between two frames
    speed: float  # body sizes per second along the pelvis' evened ground path
    slide: float  # body sizes, the furthest a planted foot moves while planted (over a stance)
    report: dict
    headings: np.ndarray  # (T,) radians, unwrapped, the clip's first frame's heading 0
    contacts: np.ndarray  # (T,F) planted feet (prepared.feet)


def rigs(names: list[str] | None = None) -> dict[str, tuple[Rig, SkinnedMesh | None]]:
    """The rigs measured: the built quadruped and biped, and ASSET_RIGS where ../shared/assets has them."""
    out: dict[str, tuple[Rig, SkinnedMesh | None]] = {}
    for family in ("quadruped", "biped"):
        creature = build_creature(family, 3)
        out[f"built {family}"] = (creature.rig, creature.mesh)
    for name in ASSET_RIGS:
        if (ASSETS / name).exists():
            asset = load_gltf(ASSETS / name)
            held_out = " (held out)" if is_held_out(ASSETS / name, ASSETS) else ""
            out[name + held_out] = (asset.rig, asset.mesh)
    return {k: v for k, v in out.items() if names is None or any(n in k for n in names)}


def body_track(prepared: PreparedRig, world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(T,) unwrapped heading (rad, 0 = −Y, positive left) and (T,2) ground track (body sizes) of the
    pelvis in the canonical frame, from the user's rig's world poses (T,J,4,4)."""
    canon = prepared.canon
    pelvis = detect_roles(canon.rig).pelvis
    rotation = canon.frame.rotation
    delta = rotation @ world[:, pelvis, :3, :3] @ prepared.rig.rest[pelvis, :3, :3].T @ rotation.T
    forward = delta @ np.array([0.0, -1.0, 0.0])
    heading = np.unwrap(np.arctan2(forward[:, 0], -forward[:, 1]))
    track = canon.frame.to_canonical_points(world[:, pelvis, :3, 3])[:, :2]
    return heading, track


def measure(pipeline: GeneratePipeline, prepared: PreparedRig, prompt: str, frames: int,
            seed: int = 0) -> Measured:
    made = pipeline.run(prepared, GenerateRequest(prompt, frames=frames, seed=seed).check())[0]
    fps = made.motion.fps
    world = forward_kinematics(prepared.rig, made.motion)
    heading, track = body_track(prepared, world)
    second = int(round(fps))
    turned = np.degrees(heading[-second:].mean() - heading[:second].mean())
    step = float(np.degrees(np.abs(np.diff(heading)).max()))
    window = max(1, int(round(fps / 3)))
    kernel = np.ones(window) / window
    even = np.stack([np.convolve(track[:, k], kernel, mode="valid") for k in range(2)], axis=1)
    speed = float(np.linalg.norm(np.diff(even, axis=0), axis=1).sum() / ((len(even) - 1) / fps))
    return Measured(float(turned), step, speed, planted_slide(prepared, world, made.contacts), made.report,
                    heading - heading[0], np.asarray(made.contacts, dtype=bool))


def planted_slide(prepared: PreparedRig, world: np.ndarray, contacts: np.ndarray) -> float:
    """The furthest (body sizes, over the ground) the joint a leg plants moves in one stance. `contacts`
    (T,F) are per foot of the rig (prepared.feet); each leg's are those of the rig's foot nearest it."""
    planting = planting_joints(detect_roles(prepared.canon.rig))
    columns = nearest_legs(prepared.canon, planting)
    slide = 0.0
    for leg, joint in enumerate(planting):
        if leg not in columns:
            continue
        foot = prepared.canon.frame.to_canonical_points(world[:, joint, :3, 3])[:, :2]
        planted = np.flatnonzero(contacts[:, int(np.flatnonzero(columns == leg)[0])])
        for run in np.split(planted, np.flatnonzero(np.diff(planted) > 1) + 1):
            if len(run) > 1:
                slide = max(slide, float(np.ptp(foot[run], axis=0).max()))
    return slide


def rows_of(name: str, rig: Rig, mesh: SkinnedMesh | None, frames: int) -> list[dict]:
    pipeline = GeneratePipeline(None)
    prepared = pipeline.prepare(rig, mesh)
    family = detect_roles(prepared.canon.rig).family
    rows = []
    for gait in ("walking", "running"):
        plain = measure(pipeline, prepared, f"{gait} forward", frames)
        rows.append({"rig": name, "family": family, "prompt": f"{gait} forward", "m": plain, "ratio": 1.0})
        for word in PACE_PROMPTS:
            m = measure(pipeline, prepared, f"{gait} {word}", frames)
            rows.append({"rig": name, "family": family, "prompt": f"{gait} {word}", "m": m,
                         "ratio": m.speed / plain.speed})
    walk = rows[0]["m"]
    for prompt in TURN_PROMPTS:
        m = measure(pipeline, prepared, prompt, frames)
        rows.append({"rig": name, "family": family, "prompt": prompt, "m": m, "ratio": m.speed / walk.speed})
    return rows


# CMU subject 7 (held out: never calibrated on; here only the reference the speed words are compared with):
# its walks, slow walks and brisk walk (cmu_descriptions.csv).
CMU_WALKS = {"walk": (1, 2, 3, 6, 7, 8, 9, 10, 11), "slow walk": (4, 5), "brisk walk": (12,)}


def authored_reference(assets: Path = ASSETS) -> dict[str, tuple[float, float]] | None:
    """{kind: (speed ratio, cadence ratio)} of CMU subject 7's slow and brisk walks against the median of
    its walks: the root's travel over the middle 60 % of the take in statures per second, the left foot's
    stride frequency. None where the files are absent."""
    from kirin.kirin_addon.eval.metrics import stride_frequency
    from kirin.kirin_addon.io.bvh import load_bvh

    folder = assets / "bvh_cmu_subjects_01_07"
    if not folder.is_dir():
        return None
    measured: dict[str, list[tuple[float, float]]] = {}
    for kind, takes in CMU_WALKS.items():
        for take in takes:
            rig, motion = load_bvh(folder / f"007_{take:02d}.bvh")
            world = forward_kinematics(rig, motion)[:, :, :3, 3]
            head = next(i for i, n in enumerate(rig.names) if n.lower().endswith("head"))
            left, right = rig.names.index("CC_Base_L_Foot"), rig.names.index("CC_Base_R_Foot")
            up = (world[:, head] - 0.5 * (world[:, left] + world[:, right])).mean(axis=0)
            stature = float(np.linalg.norm(up))
            flat = np.eye(3) - np.outer(up, up) / stature**2
            a, b = int(0.2 * len(world)), int(0.8 * len(world))
            root = world[:, rig.main_root] @ flat
            speed = float(np.linalg.norm(root[b] - root[a])) / ((b - a) / motion.fps) / stature
            foot = np.linalg.norm(np.gradient(world[:, left] @ flat, axis=0), axis=1)
            measured.setdefault(kind, []).append((speed, stride_frequency(foot[:, None], motion.fps)))
    plain = np.median(np.array(measured["walk"]), axis=0)
    return {kind: tuple(float(x) for x in np.mean(np.array(values), axis=0) / plain)
            for kind, values in measured.items() if kind != "walk"}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--rigs", nargs="*", default=None, help="only rigs whose name contains one of these")
    args = parser.parse_args(argv)
    rows = []
    print(f"{'rig':44s} {'prompt':38s} {'heading°':>9s} {'max°/fr':>8s} {'speed bs/s':>10s} "
          f"{'ratio':>6s} {'slide bs':>9s} {'Hz':>6s}")
    for name, (rig, mesh) in rigs(args.rigs).items():
        for row in rows_of(name, rig, mesh, args.frames):
            m = row["m"]
            hz = m.report.get("stride_frequency") or [float("nan")]
            print(f"{name:44s} {row['prompt']:38s} {m.heading:9.1f} {m.max_step:8.2f} {m.speed:10.3f} "
                  f"{row['ratio']:6.2f} {m.slide:9.4f} {hz[0]:6.2f}", flush=True)
            rows.append(row)
    reference = authored_reference()
    if reference is not None:
        for kind, (speed, cadence) in reference.items():
            print(f"CMU subject 7 (held out), {kind}: speed {speed:.2f}x, cadence {cadence:.2f}x its walks'")
    return rows


if __name__ == "__main__":
    main()
