"""Benchmark skin weight transfer: a ~100k-vertex target from a ~13k-triangle skinned source.

Run: .venv/bin/python benchmarks/bench_weight_transfer_speed.py [--subdivide 3] [--repeats 3] [--json F]
The source is a procedural quadruped subdivided once; the target is the same creature subdivided
`--subdivide` times (3: ~107k vertices) with its vertices pushed along their normals by a smooth
wave of amplitude `--noise` × the body's diagonal, so nothing lies exactly on the source. Both
methods are timed (median of `--repeats`, after a warm-up) with their per-stage seconds, against a
baseline measured in the same run: a scipy cKDTree build plus 10-NN query of the same points, the
cheapest possible transfer. The machine is shared and noisy; compare the ratios.
`--family dragon --seed 0` gives a 16.6k-triangle source and a 133k-vertex target.
Budget (docs/ARCHITECTURE.md): robust ≤ 2 s for a 100k-vertex target on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from kirin.kirin_addon.bind import closest_surface
from kirin.kirin_addon.bind.mesh_geometry import vertex_normals
from kirin.kirin_addon.bind.skin_weights import to_dense
from kirin.kirin_addon.bind.weight_transfer import TransferConfig, transfer_weights
from kirin.kirin_addon.library.families.build import build_creature


def subdivide(vertices: np.ndarray, triangles: np.ndarray, weights: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Midpoint subdivision (each triangle into 4, shared edge midpoints), weights interpolated."""
    edges = np.concatenate([triangles[:, [1, 2]], triangles[:, [2, 0]], triangles[:, [0, 1]]])
    edges = np.sort(edges, axis=1)
    unique, inverse = np.unique(edges, axis=0, return_inverse=True)
    mid = len(vertices) + inverse.reshape(3, -1).T  # midpoint of the edge opposite each corner
    a, b, c = triangles.T
    ma, mb, mc = mid.T
    faces = np.concatenate([np.stack([a, mc, mb], 1), np.stack([mc, b, ma], 1), np.stack([mb, ma, c], 1),
                            np.stack([ma, mb, mc], 1)])
    new_vertices = np.concatenate([vertices, vertices[unique].mean(axis=1)])
    new_weights = np.concatenate([weights, weights[unique].mean(axis=1)])
    return new_vertices, faces, new_weights


def timed(fn, repeats: int) -> tuple[float, object]:
    """Median seconds of `repeats` calls after a warm-up, and the result of the median call."""
    fn()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        runs.append((time.perf_counter() - start, result))
    runs.sort(key=lambda run: run[0])
    return runs[len(runs) // 2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--family", default="quadruped")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--subdivide", type=int, default=3, help="target subdivisions (3: ~107k vertices)")
    parser.add_argument("--source-subdivide", type=int, default=1)
    parser.add_argument("--noise", type=float, default=0.002, help="normal offset, fraction of the diagonal")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="k-NN and BLAS threads (0: all)")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()
    workers = args.threads or -1
    closest_surface.KDTREE_WORKERS = workers  # the closest-point and nearest-vertex k-NN queries
    if args.threads:
        try:  # BLAS hardly matters here (sparse LU is single-threaded), but cap it when we can
            from threadpoolctl import threadpool_limits
            threadpool_limits(args.threads)
        except ImportError:
            pass

    mesh = build_creature(args.family, args.seed).mesh
    joints = int(mesh.joint_indices.max()) + 1
    weights = to_dense(mesh.joint_indices, mesh.joint_weights, joints)
    source = (mesh.vertices, mesh.triangles, weights)
    for _ in range(args.source_subdivide):
        source = subdivide(*source)
    target_vertices, target_triangles, _ = source
    for _ in range(args.subdivide - args.source_subdivide):
        target_vertices, target_triangles, _ = subdivide(target_vertices, target_triangles,
                                                         np.zeros((len(target_vertices), 1)))
    # A smooth bulge (a random-phase wave over the body), like a re-modelled or dressed copy; per-vertex
    # noise would scramble the target's normals and fail every angle test.
    diagonal = float(np.linalg.norm(np.ptp(target_vertices, axis=0)))
    wave = np.sin(target_vertices @ (np.array([7.0, 5.0, 3.0]) / diagonal * 2.6) + 0.3)
    offset = wave * args.noise * diagonal
    target_vertices = target_vertices + offset[:, None] * vertex_normals(target_vertices, target_triangles)

    def baseline() -> None:
        cKDTree(source[0]).query(target_vertices, k=10, workers=workers)

    base_seconds, _ = timed(baseline, args.repeats)
    numbers = {"target_vertices": len(target_vertices), "target_triangles": len(target_triangles),
               "source_vertices": len(source[0]), "source_triangles": len(source[1]), "joints": joints,
               "baseline_knn_seconds": base_seconds, "methods": {}}
    print(f"{args.family} seed {args.seed}: source {len(source[0])} vertices / {len(source[1])} triangles, "
          f"target {len(target_vertices)} vertices / {len(target_triangles)} triangles, {joints} joints")
    print(f"baseline (cKDTree build + 10-NN query, {args.threads or 'all'} threads): {base_seconds:.3f} s")
    for method in ("robust", "nearest"):
        config = TransferConfig(method=method)

        def run(config: TransferConfig = config):
            return transfer_weights(*source, target_vertices, target_triangles, config)

        seconds, result = timed(run, args.repeats)
        stages = {k: v for k, v in result.stats["seconds"].items() if k != "total"}
        numbers["methods"][method] = {"seconds": seconds, "ratio_to_baseline": seconds / base_seconds,
                                      "stages": stages, "matched": result.stats["matched"],
                                      "inpainted": result.stats["inpainted"],
                                      "fallback": result.stats["fallback"]}
        print(f"\n{method}: {seconds:.3f} s median of {args.repeats} "
              f"({seconds / base_seconds:.1f}x the baseline; budget 2 s for robust)")
        certified = result.stats.get("closest_certified")
        print(f"  matched {result.stats['matched']}, inpainted {result.stats['inpainted']}, "
              f"fallback {result.stats['fallback']}"
              + (f", closest points certified {certified / len(target_vertices):.0%}" if certified else ""))
        print("  seconds (median run): " + "  ".join(f"{name} {value:.3f}" for name, value in stages.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=2))


if __name__ == "__main__":
    main()
