"""Benchmark the template fit (Auto-Bind, first half) on procedural creatures with known skeletons.

For each family × seed: the creature's mesh under a random similarity (any rotation, scale
10^U(-2, 2), a translation of the same order) is fitted with its family given; the fitted joints
are compared with the creature's own (matched by role, `templates.corresponding_points`), in
percent of its body size. Then family detection (family=None) on `--detect-seeds` seeds per
family. Seeds start at 100, away from the templates' own builds (seeds 1–11).

Run: .venv/bin/python benchmarks/bench_template_fit.py [--seeds 3] [--detect-seeds 1] [--families ...]
One thread; the machine is shared, so seconds are indicative.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch
from scipy.spatial.transform import Rotation

from kirin.kirin_addon.bind.fit_protocol import FitConfig
from kirin.kirin_addon.bind.pipeline import BindPipeline
from kirin.kirin_addon.bind.templates import joint_position_error
from kirin.kirin_addon.core.creature import FAMILIES
from kirin.kirin_addon.library.families.build import build_creature
from kirin.models.bind.template_fit import TorchTemplateFitter


def random_similarity(seed: int) -> np.ndarray:
    """Uniform random rotation, scale 10^U(-2,2), translation of the order of the scale."""
    rng = np.random.default_rng(10_000 + seed)
    scale = 10.0 ** rng.uniform(-2.0, 2.0)
    matrix = np.eye(4)
    matrix[:3, :3] = scale * Rotation.random(random_state=rng.integers(2**31)).as_matrix()
    matrix[:3, 3] = rng.normal(size=3) * scale
    return matrix


def triangle_soup(vertices: np.ndarray, triangles: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each triangle cut into n² with its own vertices (an STL-like soup): (n+1)(n+2)/2 per face."""
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = i + j <= n
    i, j = i[keep], j[keep]
    index = -np.ones((n + 1, n + 1), dtype=np.int64)
    index[i, j] = np.arange(len(i))
    local = np.array([(index[a, b], index[a + 1, b], index[a, b + 1]) for a in range(n) for b in range(n - a)]
                     + [(index[a + 1, b], index[a + 1, b + 1], index[a, b + 1])
                        for a in range(n) for b in range(n - a - 1)])
    corners = vertices[triangles]
    u, v = (i / n)[None, :, None], (j / n)[None, :, None]
    points = corners[:, :1] + u * (corners[:, 1:2] - corners[:, :1]) + v * (corners[:, 2:3] - corners[:, :1])
    faces = local[None] + (len(i) * np.arange(len(triangles)))[:, None, None]
    return points.reshape(-1, 3), faces.reshape(-1, 3)


def run_case(family: str, seed: int, detect: bool, config: FitConfig, soup: int = 0) -> dict:
    creature = build_creature(family, seed)
    matrix = random_similarity(seed)
    vertices = creature.mesh.vertices @ matrix[:3, :3].T + matrix[:3, 3]
    triangles = creature.mesh.triangles
    if soup:
        vertices, triangles = triangle_soup(vertices, triangles, soup)
    start = time.perf_counter()
    result = BindPipeline(TorchTemplateFitter()).fit(vertices, triangles, None if detect else family, config)
    seconds = time.perf_counter() - start
    error = joint_position_error(result.creature, result.rig, creature, creature.rig.transformed(matrix))
    return {"family": family, "seed": seed, "species": creature.species, "detected": result.family,
            "vertices": len(vertices), "error_pct": 100 * error["mean_fraction"],
            "max_pct": 100 * error["max_fraction"], "to_bones_pct": 100 * error["to_bones_fraction"],
            "matched": f"{error['matched']}/{error['joints']}", "chamfer_pct": 100 * result.chamfer["mean"],
            "quality": result.quality, "seconds": seconds, "scores": result.scores,
            "bend": result.deformation["bend_mean_deg"],
            "stretch_pct": 100 * result.deformation["edge_stretch"]}


def _row(row: dict) -> str:
    return (f"{row['family']:10} {row['seed']:4d} {row['species']:15} {row['vertices']:9d} "
            f"{row['error_pct']:8.2f} {row['max_pct']:6.1f} {row['to_bones_pct']:8.2f} {row['matched']:>6} "
            f"{row['chamfer_pct']:9.2f} {row['bend']:6.1f} {row['stretch_pct']:8.2f} {row['quality']:>7} "
            f"{row['seconds']:6.1f}")


HEADER = (f"{'family':10} {'seed':>4} {'species':15} {'vertices':>9} {'err %':>8} {'max %':>6} "
          f"{'bones %':>8} {'joints':>6} {'chamfer %':>9} {'bend °':>6} {'stretch %':>8} {'quality':>7} "
          f"{'s':>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="*", default=list(FAMILIES))
    parser.add_argument("--seeds", type=int, default=3, help="fitted seeds per family (family given)")
    parser.add_argument("--detect-seeds", type=int, default=1, help="seeds per family for detection")
    parser.add_argument("--first-seed", type=int, default=100)
    parser.add_argument("--big", action="store_true", help="also time a ~20k- and a ~2M-vertex mesh")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = FitConfig(threads=1)
    print("err: mean joint-position error, max: worst joint, bones: mean distance of the fitted joints to\n"
          "the true bones (all in % of body size); chamfer: mean bidirectional, % of the bbox diagonal;\n"
          "bend: mean bind-pose rotation per joint; stretch: mean relative stretch of template edges.")

    rows: list[dict] = []
    if args.seeds:
        print(HEADER)
        for family in args.families:
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                rows.append(run_case(family, seed, False, config))
                print(_row(rows[-1]), flush=True)
        print()
        print(f"{'family':10} {'mean err %':>10} {'worst err %':>11} {'mean bones %':>12} {'chamfer %':>9} "
              f"{'mean s':>7}")
        for family in args.families:
            mine = [r for r in rows if r["family"] == family]
            print(f"{family:10} {statistics.mean(r['error_pct'] for r in mine):10.2f} "
                  f"{max(r['error_pct'] for r in mine):11.2f} "
                  f"{statistics.mean(r['to_bones_pct'] for r in mine):12.2f} "
                  f"{statistics.mean(r['chamfer_pct'] for r in mine):9.2f} "
                  f"{statistics.mean(r['seconds'] for r in mine):7.1f}")
        print(f"{'all':10} {statistics.mean(r['error_pct'] for r in rows):10.2f} "
              f"{max(r['error_pct'] for r in rows):11.2f} "
              f"{statistics.mean(r['to_bones_pct'] for r in rows):12.2f} "
              f"{statistics.mean(r['chamfer_pct'] for r in rows):9.2f} "
              f"{statistics.mean(r['seconds'] for r in rows):7.1f}")

    big: list[dict] = []
    if args.big:
        print("\nlarge meshes (quadruped, the mesh cut into a triangle soup):")
        print(HEADER)
        for soup in (2, 33):  # ~20k and ~2M vertices
            big.append(run_case("quadruped", args.first_seed, False, config, soup=soup))
            print(_row(big[-1]), flush=True)

    detections: list[dict] = []
    if args.detect_seeds:
        print("\ndetection (family=None):")
        print(f"{'family':10} {'seed':>4} {'detected':10} {'err %':>8} {'s':>6}  runner-up")
        for family in args.families:
            for seed in range(args.first_seed + 50, args.first_seed + 50 + args.detect_seeds):
                row = run_case(family, seed, True, config)
                detections.append(row)
                ranked = sorted(row["scores"].items(), key=lambda item: item[1])
                second = next((f"{name} {100 * score:.2f}% vs {100 * row['scores'][row['detected']]:.2f}%"
                               for name, score in ranked if name != row["detected"]), "")
                print(f"{family:10} {seed:4d} {row['detected']:10} {row['error_pct']:8.2f} "
                      f"{row['seconds']:6.1f}  {second}", flush=True)
        right = sum(r["detected"] == r["family"] for r in detections)
        print(f"detection: {right}/{len(detections)} right, "
              f"mean {statistics.mean(r['seconds'] for r in detections):.1f} s per mesh")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"fits": rows, "big": big, "detections": detections}, handle, indent=1)


if __name__ == "__main__":
    main()
