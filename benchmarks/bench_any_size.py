"""Issue 31's "any size": every feature on a 256-bone rig against the same creature's 25-bone body,
measured in the same run (the machine is shared: compare the ratios).

The rig: the built biped (seed 1, a robot, Mixamo names) grown to 256 bones by benchmarks/big_rig.py
(five three-bone fingers a hand, twist bones, a 185-bone face). The features that cost per bone see its
bones that matter (core/rig_reduction.py: at most 64) and carry the rest; construction and weight
transfer drive every bone.

1. generate — a 120-frame walk by construction (`GeneratePipeline(None)`: no network), median of
   --repeats after a warm-up; with the shipped motion network (models/weights/motion), "a robot waves
   its right hand" (the network's path, one variant), likewise. Goal: a 256-bone rig generates.
2. pose — a projected drag (bench_pose_space's size section: the same --drags drags of the body's end
   effectors on both rigs). Goal: ≤ 50 ms median at 256 bones.
3. video — a constructed walk of --frames frames rendered at 160 px (kirin_addon/video/synth.py), the
   body's 25 joints tracked where visible and the silhouette seen, fitted with the camera given
   (`VideoPipeline(TorchVideoFitter())`): seconds per frame, the tracked joints' median pixel error
   and PCK@0.1. Goal: the 256-bone rig fits (as well as its body alone).
4. transfer — Transfer Weights (robust) from the 256-bone skin, and from the same skin with every added
   bone's weight given to its body bone (25 groups), subdivided once, onto the same surface subdivided
   --subdivide times and bulged by a smooth wave: seconds (median of --repeats). Goal: it runs.

Run: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_any_size.py [--sections generate pose video
     transfer] [--repeats 3] [--drags 30] [--frames 16] [--subdivide 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from kirin.benchmarks.bench_weight_transfer_speed import subdivide
from kirin.benchmarks.big_rig import big_creature
from kirin.kirin_addon.bind.mesh_geometry import vertex_normals
from kirin.kirin_addon.bind.skin_weights import to_dense
from kirin.kirin_addon.bind.weight_transfer import transfer_weights
from kirin.kirin_addon.core.creature import Creature
from kirin.kirin_addon.core.motion import joint_positions
from kirin.kirin_addon.generate.pipeline import GeneratePipeline
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.library.families.build import build_creature
from kirin.kirin_addon.video.evidence import Evidence2D
from kirin.kirin_addon.video.pipeline import VideoPipeline
from kirin.kirin_addon.video.synth import Framing, frame_camera, render_motion

SECTIONS = ("generate", "pose", "video", "transfer")
MOTION_MODEL = Path(__file__).resolve().parents[1] / "models" / "weights" / "motion"
SIZE = 160


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    fn()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def row(feature: str, small: float, big: float, unit: str = "s", **extra) -> dict:
    return {"feature": feature, "unit": unit, "small": small, "big": big, "ratio": big / small, **extra}


def generate_rows(small: Creature, big: Creature, repeats: int) -> list[dict]:
    """Construction (no network), and the network's path where the shipped network loads."""
    out = []
    pipelines = [("walk by construction", GeneratePipeline(None), "a robot walking forward")]
    if (MOTION_MODEL / "model.json").exists():
        from kirin.models.motion.generator import MotionModel

        pipelines.append(("wave by the network", GeneratePipeline(MotionModel.load(MOTION_MODEL)),
                          "a robot waves its right hand"))
    for label, pipeline, prompt in pipelines:
        request = GenerateRequest(prompt, frames=120, seed=2).check()
        times, joints = [], []
        for creature in (small, big):
            prepared = pipeline.prepare(creature.rig, creature.mesh)
            run = pipeline.run
            times.append(median_seconds(lambda p=prepared, r=request, go=run: go(p, r), repeats))
            by_network = prepared.small is not None and pipeline.network is not None
            joints.append((prepared.small if by_network else prepared).rig.joint_count)
        out.append(row(f"generate: {label}", *times, seen=joints))
    return out


def pose_rows(small: Creature, big: Creature, drags: int) -> list[dict]:
    from kirin.benchmarks.bench_pose_space import size_drags, size_row
    from kirin.kirin_addon.pose.pipeline import PosePipeline
    from kirin.models.pose.sampler import PosePrior

    prior = PosePipeline(PosePrior.load())
    chosen = size_drags(small, drags, np.random.default_rng(0))
    rows = [size_row(prior, creature, chosen) for creature in (small, big)]
    return [row("pose: one projected drag", rows[0]["median_ms"], rows[1]["median_ms"], "ms",
                seen=[r["skeleton"] for r in rows], p95=[r["p95_ms"] for r in rows])]


def filmed_walk(creature: Creature, frames: int) -> tuple[Evidence2D, object, np.ndarray]:
    pipeline = GeneratePipeline(None)
    walk = pipeline.run(pipeline.prepare(creature.rig, creature.mesh),
                        GenerateRequest("a robot walking forward", frames=frames, seed=2))[0].motion
    heads = joint_positions(creature.rig, walk)
    camera = frame_camera(heads, (SIZE, SIZE), azimuth=0.3, elevation=np.radians(10), framing=Framing(40.0))
    video = render_motion(creature.rig, creature.mesh, walk, camera, (SIZE, SIZE))
    body = np.arange(build_creature("biped", 1).rig.joint_count)  # the body's joints, first on the grown rig
    confidence = np.zeros(video.keypoints.shape[:2])
    confidence[:, body] = video.visibility[:, body]
    masks = video.masks.astype(np.float32)
    return Evidence2D((SIZE, SIZE), 30.0, video.keypoints, confidence, masks), camera, body


def video_rows(small: Creature, big: Creature, frames: int) -> list[dict]:
    from kirin.models.video.fitter import TorchVideoFitter

    pipeline = VideoPipeline(TorchVideoFitter())
    per_frame, errors, pcks, seen = [], [], [], []
    for creature in (small, big):
        evidence, camera, body = filmed_walk(creature, frames)
        started = time.perf_counter()
        result = pipeline.fit(creature.rig, evidence, mesh=creature.mesh, camera=camera)
        per_frame.append((time.perf_counter() - started) / frames)
        projected = result.camera.project(joint_positions(creature.rig, result.motion))
        error = np.linalg.norm(projected - evidence.points, axis=-1)
        tracked = evidence.confidence > 0
        diagonal = np.linalg.norm(np.ptp(evidence.points[:, body], axis=1), axis=-1)
        errors.append(float(np.median(error[tracked])))
        pcks.append(float(np.mean((error <= 0.1 * diagonal[:, None])[tracked])))
        seen.append(result.report.get("joints_fitted", creature.rig.joint_count))
    return [row("video: fit per frame", *per_frame, seen=seen, median_px=errors, pck=pcks)]


def transfer_rows(big: Creature, subdivisions: int, repeats: int) -> list[dict]:
    """The same surfaces, the 256-bone skin against its 25 body groups (each added bone's weight on the
    body bone it hangs from)."""
    rig, mesh = big.rig, big.mesh
    body = np.arange(rig.joint_count)
    for j in rig.topological_order:
        if j >= 25:
            body[j] = body[rig.parents[j]]
    full = to_dense(mesh.joint_indices, mesh.joint_weights, rig.joint_count)
    groups = to_dense(body[mesh.joint_indices], mesh.joint_weights, 25)
    times, vertices = [], 0
    for weights in (groups, full):
        source = subdivide(mesh.vertices, mesh.triangles, weights)
        target, triangles = source[0], source[1]
        for _ in range(subdivisions - 1):
            target, triangles, _ = subdivide(target, triangles, np.zeros((len(target), 1)))
        diagonal = float(np.linalg.norm(np.ptp(target, axis=0)))
        wave = np.sin(target @ (np.array([7.0, 5.0, 3.0]) / diagonal * 2.6) + 0.3) * 0.002 * diagonal
        target = target + wave[:, None] * vertex_normals(target, triangles)
        vertices = len(target)
        times.append(median_seconds(lambda s=source, t=target, f=triangles: transfer_weights(*s, t, f),
                                    repeats))
    return [row(f"transfer: robust onto {vertices:,} vertices", *times, seen=[25, rig.joint_count])]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--drags", type=int, default=30)
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--subdivide", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # as the backend runs it on a shared machine
    small, big = build_creature("biped", 1, naming="mixamo"), big_creature("biped", 1)
    rows: list[dict] = []
    if "generate" in args.sections:
        rows += generate_rows(small, big, args.repeats)
    if "pose" in args.sections:
        rows += pose_rows(small, big, args.drags)
    if "video" in args.sections:
        rows += video_rows(small, big, args.frames)
    if "transfer" in args.sections:
        rows += transfer_rows(big, args.subdivide, args.repeats)
    print(f"\n{'feature':44} {'25 bones':>10} {'256 bones':>10} {'ratio':>7}  joints seen (25 / 256)")
    for r in rows:
        extra = "  ".join(f"{k} {v}" for k, v in r.items() if k in ("median_px", "pck", "p95"))
        print(f"{r['feature']:44} {r['small']:9.3f}{r['unit']:<1} {r['big']:9.3f}{r['unit']:<1} "
              f"{r['ratio']:6.2f}×  {r['seen'][0]} / {r['seen'][1]}  {extra}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, default=float))
    return {"rows": rows}


if __name__ == "__main__":
    main(sys.argv[1:])
