"""Same-surface skin weight transfer: Kirin's robust transfer and 10-NN against Blender's own tools.

For every skinned character under --assets (the Khronos Fox and CesiumMan, the Quaternius animals
and modular humanoids):

1. each skinned mesh of the character (the modular humanoids have 4-5: body, head, legs, feet,
   backpack) is one part, handled as an artist would: remeshed on its own and re-skinned from its
   own original; errors are pooled over all parts, one row per character. (Joining the parts into
   one mesh instead makes bone heat fail on the whole body where it fails on one part.) Each part
   is taken in armature space, triangulated, with the artist's weights normalised as Blender's
   armature modifier does;
2. each part is remeshed with bpy: merge by distance (seam duplicates), Decimate (collapse), then
   every vertex is projected onto the ORIGINAL surface and slid a random small amount inside the
   triangle it lands on. Each remeshed vertex keeps (original triangle, barycentric coordinates),
   so its ground truth is exact: the barycentric blend of the artist-skinned original corners.
   No remeshed vertex coincides with an original one (checked);
3. the weight-stripped remesh is re-skinned four ways: (a) Kirin robust transfer, (b) Kirin 10-NN
   (both cut to 4 influences), (c) Blender's Data Transfer modifier (vertex groups, nearest face
   interpolated), (d) Blender's Automatic Weights (bone heat, all parts selected at once like
   Ctrl+P; vertices it leaves unweighted stay at rest, as in Blender, and count in the error);
4. poses: the character's authored clips (--frames frames spread over all its actions) or, without
   clips, seeded random poses of up to 35° per joint, evaluated by Blender;
5. error per vertex and frame = |LBS(method) − ground truth| / rest bounding-box diagonal of the
   whole character, in %. The JSON also holds the "floor": the error of the artist's own weights
   interpolated at each point (LBS is not linear across a triangle, so even those are not exact).

Run: .venv/bin/python benchmarks/bench_weight_transfer.py [--assets ../shared/assets]
     [--only Fox CesiumMan ...] [--frames 16] [--json out.json]
Seconds: Kirin = transfer + cut to 4 influences; Blender = operator(s) + reading the groups back.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kirin.kirin_addon.io.scratch import private_blender_resources

private_blender_resources("kirin-bench-")

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils.bvhtree import BVHTree  # noqa: E402
from scipy.spatial import cKDTree  # noqa: E402

from kirin.benchmarks import skinning_support as support  # noqa: E402
from kirin.benchmarks.skinning_support import (  # noqa: E402
    MAX_INFLUENCES,
    Weights,
    character_name,
    character_poses,
    cut,
    dense_weights,
    error_stats,
    have_kirin_transfer,
    read_array,
    sparse_weights,
)
from kirin.kirin_addon.core.skinning import SkinnedMesh, linear_blend_skinning, skin_matrices  # noqa: E402
from kirin.operators.headless import common as headless  # noqa: E402
from kirin.operators.scene_io.mesh import create_skinned_mesh, read_skinned_mesh  # noqa: E402
from kirin.operators.scene_io.rig import read_rig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ASSETS = ROOT.parent / "shared" / "assets"
CHARACTER_GLOBS = ("khronos_fox/*.glb", "khronos_cesiumman/*.glb", "quaternius/animals_pack/*.glb",
                   "quaternius/modular_men/*.glb", "quaternius/modular_women/*.glb")
METHODS = ("robust", "robust-uncut", "10-NN", "DataTransfer", "BoneHeat")
KIRIN_METHODS = ("robust", "robust-uncut", "10-NN")
DECIMATE_RATIO = 0.5
SLIDE_RANGE = (0.05, 0.3)  # share of the way towards a random point of the landing triangle
MERGE_DISTANCE = 1e-5  # × bounding-box diagonal: seam duplicates are coincident up to float noise
GOAL_VS_DATA_TRANSFER, GOAL_VS_BONE_HEAT = 1.2, 0.5


@dataclass
class Part:
    """One skinned mesh of the character: armature space, triangles, dense normalised weights (V,J),
    and its bpy object rebuilt from exactly these arrays (the Data Transfer source)."""

    name: str
    vertices: np.ndarray
    triangles: np.ndarray
    weights: np.ndarray
    source: bpy.types.Object


@dataclass
class Character:
    parts: list[Part]
    max_influences: int  # of the artist's skinning

    @property
    def vertices(self) -> np.ndarray:
        return np.concatenate([p.vertices for p in self.parts])

    @property
    def diagonal(self) -> float:
        return float(np.linalg.norm(np.ptp(self.vertices, axis=0)))


@dataclass
class Remesh:
    """Remeshed surface; vertex v = Σ_i barycentric[v,i] · original corner i of triangle[v]."""

    vertices: np.ndarray
    triangles: np.ndarray
    source_triangle: np.ndarray
    barycentric: np.ndarray
    merged_count: int
    min_distance: float  # to the nearest original vertex


# --------------------------------------------------------------------------- characters
def find_characters(assets: Path, only: list[str] | None = None) -> list[Path]:
    return support.find_characters(assets, CHARACTER_GLOBS, only)


def load_character(path: Path) -> tuple[bpy.types.Object, object, Character]:
    """Import into the current scene; each imported mesh is replaced by a part rebuilt from its
    arrays (triangulated, normalised weights), so that Blender and Kirin read the same source."""
    arm, meshes = headless.import_rig_file(str(path))
    rig = read_rig(arm)
    parts, influences = [], 0
    for obj in meshes:
        mesh = read_skinned_mesh(obj, arm, rig)
        influences = max(influences, int((mesh.joint_weights > 0).sum(axis=1).max()))
        weights = dense_weights(mesh, rig.joint_count)
        rebuilt = SkinnedMesh(mesh.vertices, mesh.triangles, *sparse_weights(weights))
        name = obj.name
        bpy.data.objects.remove(obj)
        source = create_skinned_mesh(rebuilt, arm, rig, f"source {name}")
        parts.append(Part(name, mesh.vertices, mesh.triangles, weights, source))
    return arm, rig, Character(parts, influences)


# --------------------------------------------------------------------------- remeshing
def merged_and_decimated(source_obj: bpy.types.Object, merge_distance: float,
                         ratio: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Merge by distance then Decimate (collapse) a weight-less copy; (vertices, triangles, merged)."""
    copy = source_obj.copy()
    copy.data = source_obj.data.copy()
    bpy.context.scene.collection.objects.link(copy)
    copy.modifiers.clear()
    copy.vertex_groups.clear()
    merged = support.merge_by_distance(copy.data, merge_distance)
    decimate = copy.modifiers.new("Decimate", "DECIMATE")
    decimate.decimate_type, decimate.ratio = "COLLAPSE", ratio
    # The evaluated mesh is the applied modifier, without needing an operator context.
    evaluated = bpy.data.meshes.new_from_object(copy.evaluated_get(bpy.context.evaluated_depsgraph_get()))
    vertices = read_array(evaluated.vertices, "co", 3, np.float32).astype(np.float64)
    evaluated.calc_loop_triangles()
    triangles = read_array(evaluated.loop_triangles, "vertices", 3, np.int32).astype(np.int64)
    mesh = copy.data
    bpy.data.objects.remove(copy)
    bpy.data.meshes.remove(mesh)
    bpy.data.meshes.remove(evaluated)
    return vertices, triangles, merged


def barycentric(points: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """(N,3) barycentric coordinates of points in triangles (N,3,3), clipped onto the triangle."""
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    e0, e1, d = b - a, c - a, points - a
    d00, d01, d11 = (e0 * e0).sum(1), (e0 * e1).sum(1), (e1 * e1).sum(1)
    d20, d21 = (d * e0).sum(1), (d * e1).sum(1)
    denom = d00 * d11 - d01 * d01
    v = (d11 * d20 - d01 * d21) / denom
    w = (d00 * d21 - d01 * d20) / denom
    bary = np.clip(np.stack([1.0 - v - w, v, w], axis=1), 0.0, 1.0)
    return bary / bary.sum(axis=1, keepdims=True)


def project_to_surface(points: np.ndarray, part: Part, diagonal: float) -> tuple[np.ndarray, np.ndarray]:
    """Closest point of the original surface: (triangle index, barycentric) per point."""
    corners = part.vertices[part.triangles]
    area2 = np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    # Degenerate (zero-area) triangles have no usable barycentric frame: leave them out.
    usable = np.flatnonzero(area2 > 1e-12 * diagonal ** 2)
    tree = BVHTree.FromPolygons(part.vertices.tolist(), part.triangles[usable].tolist(), all_triangles=True)
    hits = [tree.find_nearest(p) for p in points.tolist()]
    triangle = usable[np.array([h[2] for h in hits], dtype=np.int64)]
    location = np.array([h[0] for h in hits], dtype=np.float64)
    return triangle, barycentric(location, corners[triangle])


def slide(bary: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Move each point part of the way towards a random interior point of its triangle: it stays
    on the original surface, strictly inside the triangle, so never on an original vertex."""
    target = rng.dirichlet(np.ones(3), size=len(bary))
    t = rng.uniform(*SLIDE_RANGE, size=(len(bary), 1))
    return (1.0 - t) * bary + t * target


def remesh(part: Part, diagonal: float, rng: np.random.Generator, ratio: float = DECIMATE_RATIO) -> Remesh:
    decimated, triangles, merged = merged_and_decimated(part.source, MERGE_DISTANCE * diagonal, ratio)
    source_triangle, bary = project_to_surface(decimated, part, diagonal)
    bary = slide(bary, rng)
    vertices = np.einsum("vi,vij->vj", bary, part.vertices[part.triangles[source_triangle]])
    return Remesh(vertices, triangles, source_triangle, bary, merged, math.inf)


def remesh_character(character: Character, rng: np.random.Generator, ratio: float) -> list[Remesh]:
    """Every part remeshed; none of the new vertices may sit on any original vertex."""
    diagonal = character.diagonal
    remeshes = [remesh(part, diagonal, rng, ratio) for part in character.parts]
    tree = cKDTree(character.vertices)
    for remeshed in remeshes:
        remeshed.min_distance = float(tree.query(remeshed.vertices)[0].min())
        if not remeshed.min_distance > 0.0:
            raise AssertionError("a remeshed vertex coincides with an original vertex")
    return remeshes


# --------------------------------------------------------------------------- the four methods
def kirin_transfer(part: Part, remeshed: Remesh, method: str) -> tuple[Weights, dict]:
    """Kirin's transfer (robust, robust-uncut or 10-NN) from the part's original."""
    return support.kirin_transfer(part.vertices, part.triangles, part.weights, remeshed.vertices,
                                  remeshed.triangles, method)


def target_object(remeshed: Remesh, arm: bpy.types.Object, name: str) -> bpy.types.Object:
    """The remesh as a weight-less mesh object placed like the armature (armature space = local)."""
    return support.mesh_object(remeshed.vertices, remeshed.triangles, name, arm.matrix_world)


def blender_weights(method: str, character: Character, remeshes: list[Remesh], arm: bpy.types.Object,
                    rig) -> tuple[list[Weights], float]:
    """Data Transfer (each part from its own original) or bone heat, on fresh weight-less objects."""
    pairs = list(zip(character.parts, remeshes, strict=True))
    targets = [target_object(r, arm, f"{method} {p.name}") for p, r in pairs]
    start = time.perf_counter()
    if method == "DataTransfer":
        weights = [support.data_transfer(t, p.source, arm, rig)
                   for t, (p, _) in zip(targets, pairs, strict=True)]
    else:
        weights = support.bone_heat(targets, arm, rig)
    return weights, time.perf_counter() - start


def reskin(method: str, character: Character, remeshes: list[Remesh], arm: bpy.types.Object,
           rig) -> tuple[list[Weights], float, dict]:
    """Per-part weights of one method, its seconds (all parts) and counts."""
    info: dict = {}
    if method in KIRIN_METHODS:
        start = time.perf_counter()
        weights = []
        for part, remeshed in zip(character.parts, remeshes, strict=True):
            got, counts = kirin_transfer(part, remeshed, method)
            weights.append(got)
            for key, value in counts.items():
                info[key] = info.get(key, 0) + value
        seconds = time.perf_counter() - start
    else:
        weights, seconds = blender_weights(method, character, remeshes, arm, rig)
    info["unweighted"] = sum(int(np.count_nonzero(w.sum(axis=1) <= 0)) for _, w in weights)
    info["max_influences"] = max(int((w > 0).sum(axis=1).max()) for _, w in weights)
    return weights, seconds, info


# --------------------------------------------------------------------------- poses
# --------------------------------------------------------------------------- errors
def ground_truth(part: Part, remeshed: Remesh, mats: np.ndarray) -> np.ndarray:
    """(T,V,3) artist-skinned positions of the remeshed vertices' surface points."""
    deformed = linear_blend_skinning(part.vertices, *sparse_weights(part.weights), mats)
    corners = deformed[:, part.triangles[remeshed.source_triangle]]  # (T,V,3,3)
    return np.einsum("vi,tvij->tvj", remeshed.barycentric, corners)


def interpolated_weights(part: Part, remeshed: Remesh) -> Weights:
    """The artist's weights interpolated at each remeshed vertex's surface point."""
    corners = part.weights[part.triangles[remeshed.source_triangle]]  # (V,3,J)
    return sparse_weights(np.einsum("vi,vij->vj", remeshed.barycentric, corners))


def skinned(remeshes: list[Remesh], weights: list[Weights], mats: np.ndarray) -> np.ndarray:
    """(T,V,3) all parts' remeshed vertices skinned with the given per-part weights."""
    return np.concatenate([linear_blend_skinning(r.vertices, *w, mats)
                           for r, w in zip(remeshes, weights, strict=True)], axis=1)


# --------------------------------------------------------------------------- one character
def benchmark_character(path: Path, frames: int = 16, seed: int = 0, methods: tuple[str, ...] = METHODS,
                        decimate_ratio: float = DECIMATE_RATIO) -> dict:
    """Run the whole comparison for one character file in the CURRENT scene (reset it before)."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    arm, rig, character = load_character(path)
    remeshes = remesh_character(character, rng, decimate_ratio)
    remesh_seconds = time.perf_counter() - start
    # The importer leaves the first clip playing: Data Transfer would read the source mesh posed
    # (its Armature modifier) and bone heat could see posed bones. Re-skin at rest, then pose.
    arm.data.pose_position = "REST"
    skins = {m: reskin(m, character, remeshes, arm, rig) for m in methods}
    arm.data.pose_position = "POSE"
    poses, pose_source = character_poses(arm, rig, frames, rng)
    mats = skin_matrices(rig.rest, poses)
    truth = np.concatenate([ground_truth(p, r, mats) for p, r in zip(character.parts, remeshes, strict=True)],
                           axis=1)
    diagonal = character.diagonal
    results = {method: {**error_stats(skinned(remeshes, weights, mats), truth, diagonal), "seconds": seconds,
                        **info}
               for method, (weights, seconds, info) in skins.items()}
    # Even exact weights (the artist's, interpolated at each point) leave an error: LBS is not
    # linear across a triangle. That floor puts the four methods in scale.
    exact = [interpolated_weights(p, r) for p, r in zip(character.parts, remeshes, strict=True)]
    return {
        "character": character_name(path),
        "file": str(path),
        "parts": [p.name for p in character.parts],
        "joints": rig.joint_count,
        "vertices": int(sum(len(p.vertices) for p in character.parts)),
        "merged": int(sum(r.merged_count for r in remeshes)),
        "remeshed": int(sum(len(r.vertices) for r in remeshes)),
        "min_distance_pct": min(r.min_distance for r in remeshes) / diagonal * 100.0,
        "artist_max_influences": character.max_influences,
        "artist_unweighted": int(sum(np.count_nonzero(p.weights.sum(axis=1) <= 0) for p in character.parts)),
        "poses": pose_source,
        "frames": int(len(poses)),
        "remesh_seconds": remesh_seconds,
        "methods": results,
        "floor": {**error_stats(skinned(remeshes, exact, mats), truth, diagonal),
                  "mean_cut4": error_stats(skinned(remeshes, [cut(w) for w in exact], mats), truth,
                                           diagonal)["mean"]},
        "ratios": ratios(results),
    }


def ratios(results: dict) -> dict[str, float]:
    """robust mean error (cut to 4 like the artist's skinning, and uncut like Blender's tools) over
    Data Transfer's and over bone heat's."""
    out = {}
    for ours in ("robust", "robust-uncut"):
        for other in ("DataTransfer", "BoneHeat"):
            if ours in results and other in results and results[other]["mean"] > 0:
                out[f"{ours}/{other}"] = results[ours]["mean"] / results[other]["mean"]
    return out


# --------------------------------------------------------------------------- report
SHORT = {"robust": "robust", "robust-uncut": "robust uncut", "10-NN": "10-NN",
         "DataTransfer": "Data Transfer", "BoneHeat": "bone heat"}
RATIOS = ("robust/DataTransfer", "robust-uncut/DataTransfer", "robust/BoneHeat")


def format_row(row: dict) -> str:
    cells = [f"{row['character']:<27}", f"{row['vertices']:>6} → {row['remeshed']:<6}"]
    for method in METHODS:
        got = row["methods"].get(method)
        cells.append(f"{got['mean']:6.3f}/{got['p95']:5.2f}/{got['max']:6.2f}" if got else f"{'n/a':^19}")
    for key in RATIOS:
        cells.append(f"{row['ratios'][key]:5.2f}" if key in row["ratios"] else f"{'n/a':>5}")
    heat = row["methods"].get("BoneHeat")
    cells.append(f"{heat['unweighted']:>6}" if heat else f"{'n/a':>6}")
    cells.append(" ".join(f"{row['methods'][m]['seconds']:6.3f}" if m in row["methods"] else f"{'n/a':>6}"
                          for m in METHODS))
    return "  ".join(cells)


def header() -> str:
    cells = [f"{'character':<27}", f"{'verts → remesh':<15}"]
    cells += [f"{SHORT[m]:^19}" for m in METHODS]
    cells += [f"{'r/DT':>5}", f"{'u/DT':>5}", f"{'r/BH':>5}", f"{'BH 0-w':>6}",
              "seconds: robust uncut 10-NN DT BH"]
    note = (f"{'':<27}  {'':<15}  " + "  ".join(f"{'mean/p95/max %':^19}" for _ in METHODS)
            + "   (error in % of the rest bounding-box diagonal; r = robust mean / other mean, u: uncut;"
            " BH 0-w = vertices bone heat left unweighted)")
    return "  ".join(cells) + "\n" + note


def verdict(rows: list[dict], key: str, goal: float) -> str:
    values = [(r["ratios"][key], r["character"]) for r in rows if key in r["ratios"]]
    if not values:
        return "not measured"
    passed = sum(v <= goal for v, _ in values)
    worst, name = max(values)
    median = float(np.median([v for v, _ in values]))
    state = "PASS" if passed == len(values) else "FAIL"
    return (f"{state}: met on {passed}/{len(values)} characters "
            f"(median {median:.2f}×, worst {worst:.2f}× on {name})")


def floor_ratios(rows: list[dict], key: str) -> str:
    """Range over characters of a floor variant's mean error over the floor's."""
    values = [r["floor"][key] / r["floor"]["mean"] for r in rows if r["floor"]["mean"] > 0]
    return f"{min(values):.2f}–{max(values):.2f}×" if values else "n/a"


def summary(rows: list[dict]) -> dict:
    influences = max((r["artist_max_influences"] for r in rows), default=0)
    heat_fail = [f"{r['character']} ({r['methods']['BoneHeat']['unweighted']} of {r['remeshed']})"
                 for r in rows if r["methods"].get("BoneHeat", {}).get("unweighted")]
    transfer_on_floor = [r["methods"]["DataTransfer"]["mean"] / r["floor"]["mean"] for r in rows
                         if "DataTransfer" in r["methods"] and r["floor"]["mean"] > 0]
    return {
        "vs_data_transfer": verdict(rows, "robust/DataTransfer", GOAL_VS_DATA_TRANSFER),
        "uncut_vs_data_transfer": verdict(rows, "robust-uncut/DataTransfer", GOAL_VS_DATA_TRANSFER),
        "vs_bone_heat": verdict(rows, "robust/BoneHeat", GOAL_VS_BONE_HEAT),
        "artist_max_influences": influences,
        "bone_heat_unweighted": heat_fail,
        "data_transfer_over_floor": (f"{min(transfer_on_floor):.3f}–{max(transfer_on_floor):.3f}×"
                                     if transfer_on_floor else "n/a"),
        "floor_cut_to_4_over_floor": floor_ratios(rows, "mean_cut4"),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", type=Path, default=DEFAULT_ASSETS, help="the shared assets folder")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="characters to run (name or part of it)")
    parser.add_argument("--frames", type=int, default=16, help="poses per character")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--decimate", type=float, default=DECIMATE_RATIO, help="Decimate (collapse) ratio")
    parser.add_argument("--json", type=Path, help="write every number here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    files = find_characters(args.assets, args.only)
    if not files:
        print(f"No characters under {args.assets} (only={args.only}).", file=sys.stderr)
        return 1
    methods = METHODS if have_kirin_transfer() else tuple(m for m in METHODS if m not in KIRIN_METHODS)
    if methods != METHODS:
        print("kirin_addon.bind.weight_transfer is missing: measuring Blender's tools only.")
    print(header(), flush=True)
    rows = []
    for path in files:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        row = benchmark_character(path, args.frames, args.seed, methods, args.decimate)
        rows.append(row)
        print(format_row(row), flush=True)
    result = summary(rows)
    print(f"\nGoal robust ≤ {GOAL_VS_DATA_TRANSFER}× Data Transfer (mean), both uncut: "
          f"{result['uncut_vs_data_transfer']}")
    print(f"     ... robust cut to {MAX_INFLUENCES} (the artist's budget): {result['vs_data_transfer']}")
    print(f"Goal robust ≤ {GOAL_VS_BONE_HEAT}× bone heat (mean): {result['vs_bone_heat']}")
    print(f"Floor (the artist's weights interpolated exactly): Data Transfer is at "
          f"{result['data_transfer_over_floor']} of it; the same weights cut to {MAX_INFLUENCES} influences "
          f"at {result['floor_cut_to_4_over_floor']}.")
    print(f"Artist skinning: at most {result['artist_max_influences']} influences per vertex; Kirin cut to "
          f"{MAX_INFLUENCES}, Blender's tools uncut. Bone heat left vertices unweighted on: "
          f"{', '.join(result['bone_heat_unweighted']) or 'none'}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()},
                                         "characters": rows, "summary": result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
