"""Auto-Bind, the real test: re-rig artist-rigged characters from a template and compare the
deformation with the artist's own animation.

For every character (Quaternius animals → template "quadruped", modular men and women → "biped",
dinosaurs → family detection and both "quadruped" and "biped", one row each; and seeded
procedural creatures of both families, whose skeleton is known exactly):

1. import it (or build it); record the artist rig, all meshes in world space, the artist's
   weights (normalised like Blender's armature modifier) and the artist's deformed vertices at
   --frames poses: frames spread over its clips, or seeded random poses of up to 35° per bone
   when it has none (modular humanoids, procedural creatures). That is the ground truth;
2. strip rig and weights (`headless_bind.strip_rig`); fit the template on all meshes joined
   (`BindPipeline.fit`: the fit needs the whole body) and build the fitted armature in Blender
   (`scene_io.rig.create_armature`);
3. skin the meshes on that one fitted armature six ways: Kirin's robust transfer and Kirin's
   10-NN from the fitted template mesh (cut to 4 influences, on the joined mesh, as Auto-Bind
   does), Kirin's bone heat on the mesh itself ("heat", `kirin_addon/bind/heat_weights.py`) and the
   same with the robust transfer as a soft prior ("heat+prior" = Auto-Bind's "blend", λ =
   heat_weights.PRIOR_WEIGHT; --prior-sweep adds "heat+prior@λ" sets), Blender's Automatic Weights
   (bone heat; all parts selected, Ctrl+P) and Blender's Data Transfer (vertex groups, nearest
   face interpolated) from the fitted template mesh. Bone heat runs on the parts merged by distance
   (weights copied back to the seam duplicates): glTF imports are split at UV seams and the heat
   solve then fails on most or all of the mesh. Its attempt on the meshes as imported is measured
   too ("BoneHeat-unwelded", JSON and verdict only);
4. retarget the artist's poses onto the fitted rig with Kirin's retargeting (canonical frames
   detected, automatic joint mapping: the Apply Motion From File path) and deform each weight set
   with the retargeted pose (numpy FK and LBS, checked against Blender's own evaluation). Error per
   vertex and frame = |deformed − artist's deformed| / rest bounding-box diagonal, mean and p95 in
   %. Frame 0 is the artist's rest pose retargeted: its error must be ~0 (B_j then B_j⁻¹). Rest
   alignment is off (--align-rest turns it on): both rigs are bound to the same mesh in the same
   rest shape, so world deltas carry over as they are, while aligning the fitted bones onto the
   artist's bone directions (glTF bones are stubs pointing wherever the importer guessed) bends
   the character;
5. weights only ("best pose"): for each weight set, the rigid bone moves of the fitted skeleton
   that reproduce the artist's deformed mesh best under those weights (per-bone Kabsch started
   from the mesh around each bone, then SSDR's bone update, one bone at a time). No joint mapping
   and no retarget: what is left is the weights' error (and the layout of the fitted bones);
   "rigid" (every vertex on its nearest bone) is the no-blending reference;
6. references: the artist's own weights moved onto the fitted bones through the joint mapping (an
   unmapped artist bone's weight goes to its nearest mapped ancestor, else to the nearest fitted
   joint), under both kinds of poses;
7. joint-position error of the fitted skeleton: the mean distance between mapped joint pairs
   (fitted head ↔ artist head) in % of the artist rig's body size (`Rig.body_size`, world units);
   for procedural creatures also against the known skeleton by role
   (`templates.joint_position_error`, the goal's measure).

8. skeleton distances (`kirin_addon/eval/skeleton.py`): CD-J2J and CD-B2B between the fitted skeleton
   and the artist's joints that carry skin, in % of the mesh's bounding-box diagonal. `--skeleton`
   measures only these (import, fit, compare: seconds a character) on every character file of the
   assets, and summarises them on the held-out characters of data/bind_heldout.txt.

Goals: ours (robust; the heat sets get the same verdicts) ≤ 0.5× bone heat's mean error and below
Data Transfer's (artist characters; verdicts for both kinds of poses); joint error ≤ 5 % of body
size (procedural creatures); held-out CD-J2J median ≤ 2 %, worst ≤ 5 % of the diagonal.

Run: .venv/bin/python benchmarks/bench_autobind.py [--assets ../shared/assets] [--only Fox Casual ...]
     [--frames 16] [--procedural 3] [--family biped] [--align-rest] [--json out.json]
     [--methods robust heat ...] [--prior-sweep 10 100 1000]
     .venv/bin/python benchmarks/bench_autobind.py --skeleton [--only ...] [--json out.json]
Seconds: Kirin = transfer (+ heat solve) + cut to 4 influences; Blender = operator(s) + reading the
groups back.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kirin.kirin_addon.io.scratch import private_blender_resources

private_blender_resources("kirin-bench-")

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from scipy.spatial import cKDTree  # noqa: E402

from kirin.benchmarks import skinning_support as support  # noqa: E402
from kirin.benchmarks.skinning_support import Weights, error_stats  # noqa: E402
from kirin.kirin_addon.bind import best_pose  # noqa: E402
from kirin.kirin_addon.bind.templates import joint_position_error  # noqa: E402
from kirin.kirin_addon.core.canonical import detect_canonical_frame  # noqa: E402
from kirin.kirin_addon.core.creature import Creature  # noqa: E402
from kirin.kirin_addon.core.motion import forward_kinematics, motion_from_world_transforms  # noqa: E402
from kirin.kirin_addon.core.rig import Rig  # noqa: E402
from kirin.kirin_addon.core.skinning import SkinnedMesh, linear_blend_skinning, skin_matrices  # noqa: E402
from kirin.kirin_addon.eval.skeleton import Skeleton, skeleton_distances, skinning_joints  # noqa: E402
from kirin.kirin_addon.library.families.build import build_creature  # noqa: E402
from kirin.kirin_addon.retarget.retargeter import RetargetResult, retarget  # noqa: E402
from kirin.operators.headless import bind as headless_bind  # noqa: E402
from kirin.operators.headless import common as headless  # noqa: E402
from kirin.operators.scene_io.action import write_action  # noqa: E402
from kirin.operators.scene_io.arrays import object_matrix  # noqa: E402
from kirin.operators.scene_io.mesh import (  # noqa: E402
    create_skinned_mesh,
    evaluated_mesh_vertices,
    read_skinned_mesh,
    read_surface,
)
from kirin.operators.scene_io.rig import create_armature, evaluated_pose, read_rig  # noqa: E402

if TYPE_CHECKING:  # torch is imported only when fitting
    from kirin.kirin_addon.bind.pipeline import FitResult

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ASSETS = ROOT.parent / "shared" / "assets"
# (glob under --assets, template families to fit; None = detection)
CHARACTER_SETS: tuple[tuple[str, tuple[str | None, ...]], ...] = (
    ("quaternius/animals_pack/*.glb", ("quadruped",)),
    ("quaternius/modular_men/*.glb", ("biped",)),
    ("quaternius/modular_women/*.glb", ("biped",)),
    ("quaternius/dinosaurs_pack/*.glb", (None, "quadruped", "biped")),
)
# --skeleton: every character file of the assets once (the sets above with their first family, the
# rest by detection).
SKELETON_SETS = CHARACTER_SETS + tuple((pattern, (None,)) for pattern in (
    "quaternius/fish_pack/*.glb", "quaternius/cute_fish_pack/*.glb", "quaternius/easy_enemies_pack/*.glb",
    "quaternius/mech_pack/*.glb", "quaternius/platformer_game_pack/*.glb", "quaternius_monsters/*/*.glb",
    "quaternius_fbx/*/*.fbx", "khronos_*/*.glb", "luanti_spider/*.gltf", "threejs_robotexpressive/*.glb"))
# The held-out characters: no fit, training or calibration sees them.
HELD_OUT_FILE = Path(__file__).resolve().parents[1] / "data" / "bind_heldout.txt"
GOAL_CD_J2J_MEDIAN, GOAL_CD_J2J_WORST = 2.0, 5.0  # % of the mesh's bounding-box diagonal (held-out)
PROCEDURAL_FAMILIES = ("quadruped", "biped")
METHODS = ("robust", "10-NN", "heat", "heat+prior", "learned", "BoneHeat", "DataTransfer")
KIRIN_METHODS = ("robust", "10-NN")  # transfers from the fitted template
HEAT_METHODS = ("heat", "heat+prior")  # bone heat on the mesh itself (+ "heat+prior@λ" of --prior-sweep)
LEARNED = "learned"  # the three re-weighed by the network learned from artists (Auto-Bind's "learned")
UNWELDED = "BoneHeat-unwelded"  # bone heat on the meshes as imported: measured, not in the table
GOAL_VS_BONE_HEAT, GOAL_VS_DATA_TRANSFER, GOAL_JOINT_ERROR = 0.5, 1.0, 5.0  # ratios; % of body size
MERGE_DISTANCE = 1e-5  # × bbox diagonal (as bench_weight_transfer): seam duplicates coincide
BEST_POSE_SWEEPS = best_pose.SWEEPS  # passes over the bones when fitting each weight set's best pose
BAD_PAIR = 0.10  # body sizes: a mapped joint pair farther apart than this is listed as mapped badly
FPS = 30.0

Skin = tuple[Weights, float, dict]  # weights, seconds, counts


@dataclass
class Subject:
    """The character as the artist made it, in world space, with its ground-truth animation.

    Frame 0 of `poses` / `truth` is the rest pose; frames 1.. are the sampled poses."""

    name: str
    parts: list[str]
    part_triangles: list[np.ndarray]  # per part, indices into that part's own vertices
    part_sizes: list[int]
    vertices: np.ndarray  # (V,3) world space, all parts
    rig: Rig  # the artist's, armature space
    world: np.ndarray  # (4,4) armature → world
    weights: np.ndarray  # (V,J) dense artist weights, rows sum to 1 (or 0)
    poses: np.ndarray  # (T+1,J,4,4) armature space
    pose_source: str
    truth: np.ndarray  # (T+1,V,3) world space
    checks: dict = field(default_factory=dict)
    creature: Creature | None = None  # the known ground truth of a procedural creature

    @property
    def triangles(self) -> np.ndarray:
        offsets = np.cumsum([0, *self.part_sizes[:-1]])
        return np.concatenate([t + o for t, o in zip(self.part_triangles, offsets, strict=True)])

    @property
    def diagonal(self) -> float:
        return float(np.linalg.norm(np.ptp(self.vertices, axis=0)))

    def split(self, array: np.ndarray) -> list[np.ndarray]:
        return np.split(array, np.cumsum(self.part_sizes[:-1]))


@dataclass
class Fitted:
    """The fitted skeleton as a Blender armature, and the fitted template mesh in its joint order."""

    fit: FitResult
    arm: bpy.types.Object
    rig: Rig  # read back from Blender (its float32 rest); joint order of the armature
    template_weights: np.ndarray  # (Vt,J) in `rig` order
    seconds: float


# --------------------------------------------------------------------------- geometry helpers
def apply(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    return points @ matrix[:3, :3].T + matrix[:3, 3]


def deform(vertices: np.ndarray, weights: Weights, rest: np.ndarray, poses: np.ndarray) -> np.ndarray:
    """(T,V,3) LBS of vertices in the rig's space, as Blender's armature modifier computes it."""
    return linear_blend_skinning(vertices, *weights, skin_matrices(rest, poses))


# --------------------------------------------------------------------------- 1. the artist's character
def find_subjects(assets: Path, only: list[str] | None, family: str | None,
                  procedural: int) -> list[tuple[str, object, str | None]]:
    """(name, source, family) rows: source is a file path or a (family, seed) procedural spec."""
    rows: list[tuple[str, object, str | None]] = []
    for pattern, families in CHARACTER_SETS:
        for path in support.find_characters(assets, (pattern,), only):
            for fam in (family,) if family else families:
                rows.append((support.character_name(path), path, fam))
    for fam in PROCEDURAL_FAMILIES:
        for seed in range(procedural):
            name = f"procedural/{fam}-{seed}"
            if not only or support.matches(name, name, only):
                rows.append((name, (fam, seed), family or fam))
    return rows


def import_character(source) -> tuple[bpy.types.Object, list[bpy.types.Object], Creature | None]:
    """An artist file imported, or a procedural creature built as a rigged, skinned Blender object."""
    if isinstance(source, Path):
        arm, meshes = headless.import_rig_file(str(source))
        return arm, meshes, None
    family, seed = source
    creature = build_creature(family, seed)
    arm = create_armature(creature.rig, f"{creature.species} {seed}")
    body = create_skinned_mesh(creature.mesh, arm, creature.rig, f"{creature.species} {seed} Body")
    return arm, [body], creature


def record_subject(name: str, source, frames: int, rng: np.random.Generator) -> tuple[Subject, list]:
    """Import, read the artist's rig/meshes/weights and its deformed meshes, then strip the rig."""
    arm, meshes, creature = import_character(source)
    rig = read_rig(arm)
    skinned = [read_skinned_mesh(obj, arm, rig) for obj in meshes]
    vertices = np.concatenate([m.vertices for m in skinned])  # armature space
    weights = np.concatenate([support.dense_weights(m, rig.joint_count) for m in skinned])
    arm.data.pose_position = "POSE"
    poses, pose_source = support.character_poses(arm, rig, frames, rng)
    # Blender's own deformation of the last sampled pose checks the numpy ground truth.
    blender_last = np.concatenate([evaluated_mesh_vertices(obj, arm) for obj in meshes])
    poses = np.concatenate([rig.rest[None], poses])
    truth = deform(vertices, support.sparse_weights(weights), rig.rest, poses)
    world = object_matrix(arm)
    triangles, sizes = [m.triangles for m in skinned], [m.vertex_count for m in skinned]
    subject = Subject(name=name, parts=[o.name for o in meshes], part_triangles=triangles, part_sizes=sizes,
                      vertices=apply(world, vertices), rig=rig, world=world, weights=weights, poses=poses,
                      pose_source=pose_source, truth=apply(world, truth), creature=creature)
    size = subject.diagonal
    subject.checks["truth_vs_blender_pct"] = float(
        np.abs(apply(world, blender_last) - subject.truth[-1]).max() / size * 100.0)
    headless_bind.strip_rig(meshes)  # from here on the meshes are unrigged
    stripped = np.concatenate([read_surface(obj)[0] for obj in meshes])
    subject.checks["stripped_vs_rest_pct"] = float(np.abs(stripped - subject.vertices).max() / size * 100.0)
    return subject, meshes


# --------------------------------------------------------------------------- 2. fit
def fit_skeleton(subject: Subject, family: str | None) -> Fitted:
    from kirin.kirin_addon.bind.pipeline import BindPipeline
    from kirin.models.bind.template_fit import TorchTemplateFitter  # torch: only when fitting

    start = time.perf_counter()
    fit = BindPipeline(TorchTemplateFitter()).fit(subject.vertices, subject.triangles, family)
    seconds = time.perf_counter() - start
    arm = create_armature(fit.rig, "Kirin Rig")
    rig = read_rig(arm)
    columns = [fit.rig.names.index(n) for n in rig.names]
    return Fitted(fit, arm, rig, fit.template_weights[:, columns], seconds)


# --------------------------------------------------------------------------- 3. weights, six ways
def prior_weight(method: str) -> float:
    """λ of a heat weight set: 0 for "heat", the default for "heat+prior", λ for "heat+prior@λ"."""
    from kirin.kirin_addon.bind.heat_weights import PRIOR_WEIGHT

    if method == "heat":
        return 0.0
    return float(method.split("@", 1)[1]) if "@" in method else PRIOR_WEIGHT


def is_heat(method: str) -> bool:
    return method in HEAT_METHODS or method.startswith("heat+prior@")


def heat_skin(subject: Subject, fitted: Fitted, method: str) -> Skin:
    """Kirin's bone heat on the joined mesh from the fitted bones (deform bones), cut to 4
    influences; with a prior, the robust transfer from the fitted template (as Auto-Bind's "blend")."""
    from kirin.kirin_addon.bind.heat_weights import HeatConfig, rig_heat_weights
    from kirin.kirin_addon.bind.skin_weights import to_sparse
    from kirin.kirin_addon.bind.weight_transfer import TransferConfig, transfer_weights

    fit = fitted.fit
    start = time.perf_counter()
    weight, prior = prior_weight(method), None
    if weight > 0:
        prior = transfer_weights(fit.template_vertices, fit.template_triangles, fitted.template_weights,
                                 subject.vertices, subject.triangles, TransferConfig(method="robust")).weights
    result = rig_heat_weights(subject.vertices, subject.triangles, fitted.rig, prior,
                              HeatConfig(prior_weight=weight, max_influences=support.MAX_INFLUENCES))
    indices, values = to_sparse(result.weights, support.MAX_INFLUENCES)
    seconds = time.perf_counter() - start
    info = {"heated": int(result.heated.sum()), "blind": int(result.blind.sum()),
            "pieces": result.stats["pieces"], "heat_seconds": result.stats["seconds"]["total"]}
    return (indices, values), seconds, info


def learned_skin(subject: Subject, fitted: Fitted) -> Skin:
    """Auto-Bind's "learned" weights: bone heat, the robust transfer and their blend re-weighed by the
    shipped network (models/bind/learned_weights.py), cut to 4 influences."""
    from kirin.kirin_addon.bind.pipeline import learned_weights
    from kirin.kirin_addon.bind.skin_weights import to_sparse
    from kirin.kirin_addon.bind.weight_transfer import TransferConfig, transfer_weights
    from kirin.models.bind.learned_weights import WeightNetwork

    fit = fitted.fit
    start = time.perf_counter()
    transferred = transfer_weights(fit.template_vertices, fit.template_triangles, fitted.template_weights,
                                   subject.vertices, subject.triangles,
                                   TransferConfig(method="robust")).weights
    result = learned_weights(subject.vertices, subject.triangles, fitted.rig, transferred, WeightNetwork(),
                             support.MAX_INFLUENCES)
    indices, values = to_sparse(result.weights, support.MAX_INFLUENCES)
    info = {"heat_seconds": result.heat.stats["seconds"]["total"]}
    return (indices, values), time.perf_counter() - start, info


def kirin_skin(subject: Subject, fitted: Fitted, method: str) -> Skin:
    fit = fitted.fit
    start = time.perf_counter()
    weights, counts = support.kirin_transfer(fit.template_vertices, fit.template_triangles,
                                             fitted.template_weights, subject.vertices, subject.triangles,
                                             method)
    return weights, time.perf_counter() - start, counts


def part_targets(subject: Subject, fitted: Fitted, method: str) -> list[bpy.types.Object]:
    """Fresh weight-less objects, one per part, placed like the fitted armature (world = local)."""
    return [support.mesh_object(v, t, f"{method} {name}", fitted.arm.matrix_world)
            for v, t, name in zip(subject.split(subject.vertices), subject.part_triangles, subject.parts,
                                  strict=True)]


def template_object(fitted: Fitted) -> bpy.types.Object:
    """The fitted template mesh with vertex groups named after the fitted bones (Data Transfer's source)."""
    fit = fitted.fit
    mesh = SkinnedMesh(fit.template_vertices, fit.template_triangles,
                       *support.sparse_weights(fitted.template_weights))
    return create_skinned_mesh(mesh, fitted.arm, fitted.rig, "Fitted template")


def welded_targets(subject: Subject, fitted: Fitted, method: str) -> tuple[list[bpy.types.Object], list]:
    """Part objects merged by distance, and for each original vertex its welded vertex's index."""
    targets = part_targets(subject, fitted, method)
    maps = []
    for obj, vertices in zip(targets, subject.split(subject.vertices), strict=True):
        support.merge_by_distance(obj.data, MERGE_DISTANCE * subject.diagonal)
        maps.append(rest_index(obj, vertices))
    return targets, maps


def rest_index(obj: bpy.types.Object, vertices: np.ndarray) -> np.ndarray:
    """For each of `vertices` (world), the index of the object's (welded) vertex at that place."""
    rest = support.read_array(obj.data.vertices, "co", 3, np.float32).astype(np.float64)
    return cKDTree(apply(object_matrix(obj), rest)).query(vertices)[1]


def bone_heat_skins(subject: Subject, fitted: Fitted) -> tuple[Skin, Skin]:
    """Automatic Weights on the parts as imported, then on the parts merged by distance (the fair
    baseline, what a user does once Blender reports "Bone Heat Weighting: failed to find solution":
    glTF imports are split at UV seams and the heat solve then fails on most of the mesh)."""
    start = time.perf_counter()
    raw = support.bone_heat(part_targets(subject, fitted, UNWELDED), fitted.arm, fitted.rig)
    raw_seconds = time.perf_counter() - start
    targets, maps = welded_targets(subject, fitted, "BoneHeat")
    start = time.perf_counter()
    welded = support.bone_heat(targets, fitted.arm, fitted.rig)
    seconds = time.perf_counter() - start
    weights = [(w[0][m], w[1][m]) for w, m in zip(welded, maps, strict=True)]
    info = {"objects": [t.name for t in targets], "welded_vertices": int(sum(len(w[0]) for w in welded))}
    return (support.concatenate(weights), seconds, info), (support.concatenate(raw), raw_seconds, {})


def data_transfer_skin(subject: Subject, fitted: Fitted) -> Skin:
    targets = part_targets(subject, fitted, "DataTransfer")
    source = template_object(fitted)
    start = time.perf_counter()
    weights = [support.data_transfer(t, source, fitted.arm, fitted.rig) for t in targets]
    seconds = time.perf_counter() - start
    return support.concatenate(weights), seconds, {"objects": [t.name for t in targets]}


def skin_all(subject: Subject, fitted: Fitted, methods: tuple[str, ...]) -> dict[str, Skin]:
    """Every method's weights on the one fitted armature (bone heat also as imported, unwelded)."""
    fitted.arm.data.pose_position = "REST"  # as bench_weight_transfer: re-skin at rest
    skins: dict[str, Skin] = {}
    for method in methods:
        if method in KIRIN_METHODS:
            skins[method] = kirin_skin(subject, fitted, method)
        elif is_heat(method):
            skins[method] = heat_skin(subject, fitted, method)
        elif method == LEARNED:
            skins[method] = learned_skin(subject, fitted)
        elif method == "BoneHeat":
            skins[method], skins[UNWELDED] = bone_heat_skins(subject, fitted)
        else:
            skins[method] = data_transfer_skin(subject, fitted)
    fitted.arm.data.pose_position = "POSE"
    for weights, _, info in skins.values():
        info.update(unweighted=support.unweighted(weights), max_influences=support.influences(weights))
    return skins


# --------------------------------------------------------------------------- 4. retarget
def retarget_poses(subject: Subject, fitted: Fitted, align_rest: bool) -> RetargetResult:
    """The artist's poses (rest first) onto the fitted rig, as Apply Motion From File does it."""
    motion = motion_from_world_transforms(subject.rig, subject.poses, FPS)
    source_frame = detect_canonical_frame(subject.rig, world_matrix=subject.world)
    target_frame = detect_canonical_frame(fitted.rig, world_matrix=object_matrix(fitted.arm))
    return retarget(subject.rig, motion, fitted.rig, mapping=None, source_frame=source_frame,
                    target_frame=target_frame, align_rest=align_rest)


def blender_poses(fitted: Fitted, result: RetargetResult) -> np.ndarray:
    """(T,J,4,4) the retargeted motion written as an Action and evaluated by Blender."""
    write_action(fitted.arm, fitted.rig, result.motion.continuous(), "retargeted", frame_start=1)
    poses = []
    for frame in range(result.motion.frame_count):
        bpy.context.scene.frame_set(1 + frame)
        poses.append(evaluated_pose(fitted.arm, fitted.rig))
    return np.stack(poses)


# --------------------------------------------------------------------------- 6. the artist's weights
def mapped_artist_weights(subject: Subject, fitted: Fitted, mapping: dict[str, str | None]) -> Weights:
    """The artist's weights on the fitted bones: each artist bone's weight goes to the fitted bone
    mapped to it, else to the one mapped to its nearest mapped ancestor, else (a separate root such
    as an IK foot control that deforms) to the fitted joint nearest to it at rest."""
    owner = {src: fitted.rig.names.index(tgt) for tgt, src in mapping.items() if src}
    rig = subject.rig
    heads = apply(subject.world, rig.heads)
    out = np.zeros((len(subject.weights), fitted.rig.joint_count))
    for s in np.flatnonzero(subject.weights.any(axis=0)):
        j = int(s)
        while j >= 0 and rig.names[j] not in owner:
            j = int(rig.parents[j])
        nearest = int(np.argmin(np.linalg.norm(fitted.rig.heads - heads[s], axis=1)))
        out[:, owner[rig.names[j]] if j >= 0 else nearest] += subject.weights[:, s]
    return support.sparse_weights(out)


# --------------------------------------------------------------------------- 5. best poses (weights only)
def best_moves(subject: Subject, weights: Weights, moves: np.ndarray, sweeps: int) -> np.ndarray:
    """The weight set's best pose of the skeleton (kirin_addon/bind/best_pose.py) from `moves`."""
    dense = support.dense_weights(SkinnedMesh(subject.vertices, np.zeros((0, 3)), *weights), moves.shape[1])
    return best_pose.best_moves(subject.vertices, subject.truth, dense, moves, sweeps)


def best_pose_errors(subject: Subject, fitted: Fitted, skins: dict[str, Skin], artist: Weights) -> dict:
    """Every weight set under its own best pose of the fitted skeleton (no joint mapping, no
    retarget: what is left is the weights' error), with two references: rigid (each vertex on its
    nearest bone only) and the artist's own weights moved onto the fitted bones."""
    rig = fitted.rig
    owner = best_pose.nearest_bone(subject.vertices, rig)
    start = best_pose.segment_moves(subject.vertices, subject.truth, rig, owner)
    sets = {m: w for m, (w, _, _) in skins.items()}
    sets |= {"rigid": (owner[:, None], np.ones((len(owner), 1))), "artist": artist}
    errors = {}
    for name, weights in sets.items():
        poses = best_moves(subject, weights, start, BEST_POSE_SWEEPS) @ rig.rest[None]
        errors[name] = measure(subject, fitted, weights, poses)
    methods = {m: errors[m] for m in skins}
    return {"methods": methods, "references": {k: errors[k] for k in ("rigid", "artist")},
            "ratios": ratios(methods)}


# --------------------------------------------------------------------------- 7. joint error
def joint_errors(subject: Subject, fitted: Fitted, mapping: dict[str, str | None]) -> dict:
    """Mapped pairs' rest distance in % of the artist's body size, the worst pairs, and for a
    procedural creature the error against its known skeleton by role."""
    artist = subject.rig.transformed(subject.world)
    size = artist.body_size
    pairs = [(t, s) for t, s in mapping.items() if s]
    fitted_heads = fitted.rig.heads[[fitted.rig.names.index(t) for t, _ in pairs]]
    artist_heads = artist.heads[[artist.names.index(s) for _, s in pairs]]
    dist = np.linalg.norm(fitted_heads - artist_heads, axis=1).reshape(-1) / size * 100.0
    order = np.argsort(-dist)
    out = {"mapped_mean_pct": float(dist.mean()) if len(dist) else float("nan"),
           "mapped_max_pct": float(dist.max()) if len(dist) else float("nan"),
           "mapped": len(pairs), "fitted_joints": fitted.rig.joint_count,
           "bad_pairs": [f"{pairs[i][0]}←{pairs[i][1]} {dist[i]:.1f}%" for i in order
                         if dist[i] > BAD_PAIR * 100],
           "body_size": size, **skeleton_chamfer(subject, fitted)}
    if subject.creature is not None:
        truth = joint_position_error(fitted.fit.creature, fitted.fit.rig, subject.creature)
        out["truth_mean_pct"] = truth["mean_fraction"] * 100.0
        out["truth_max_pct"] = truth["max_fraction"] * 100.0
        out["truth_matched"] = truth["matched"]
    return out


def skeleton_chamfer(subject: Subject, fitted: Fitted) -> dict[str, float]:
    """CD-J2J and CD-B2B between the fitted skeleton and the artist's (its joints that carry skin), in %
    of the mesh's bounding-box diagonal (`kirin_addon/eval/skeleton.py`)."""
    artist = Skeleton.of_rig(subject.rig.transformed(subject.world), skinning_joints(subject.weights))
    return skeleton_distances(Skeleton.of_rig(fitted.fit.rig), artist, subject.diagonal)


def held_out(assets: Path) -> set[Path]:
    """The held-out character files (data/bind_heldout.txt)."""
    lines = HELD_OUT_FILE.read_text().splitlines()
    return {assets / line.strip() for line in lines if line.strip() and not line.startswith("#")}


def skeleton_rows(assets: Path, only: list[str] | None) -> list[tuple[str, Path, str | None]]:
    """Every character file once, with the family its set fits (None: detected)."""
    rows, seen = [], set()
    for pattern, families in SKELETON_SETS:
        for path in support.find_characters(assets, (pattern,), only):
            if path not in seen:
                seen.add(path)
                rows.append((f"{path.relative_to(assets).parent}/{path.stem}", path, families[0]))
    return rows


def skeleton_row(name: str, source: Path, family: str | None, held: bool) -> dict:
    """Import, fit the template on the stripped meshes, and measure the skeleton against the artist's."""
    start = time.perf_counter()
    subject, _ = record_subject(name, source, 1, np.random.default_rng(0))
    fitted = fit_skeleton(subject, family)
    return {"character": name, "source": str(source), "held_out": held, "family_asked": family or "detect",
            "family": fitted.fit.family, "fit_quality": fitted.fit.quality,
            "chamfer_pct": fitted.fit.chamfer["mean"] * 100.0, "vertices": int(len(subject.vertices)),
            "artist_joints": int(skinning_joints(subject.weights).sum()),
            "fitted_joints": fitted.rig.joint_count,
            **skeleton_chamfer(subject, fitted), "seconds": time.perf_counter() - start}


def skeleton_summary(rows: list[dict]) -> dict[str, str]:
    """CD-J2J / CD-B2B medians and worst, on the held-out characters (the goal) and on all."""
    out = {}
    for label, subset in (("held_out", [r for r in rows if r.get("held_out")]), ("all", rows)):
        for key in ("cd_j2j_pct", "cd_b2b_pct"):
            values = [(r[key], r["character"]) for r in subset if key in r]
            if not values:
                out[f"{label}_{key}"] = "not measured"
                continue
            worst, name = max(values)
            out[f"{label}_{key}"] = (f"median {np.median([v for v, _ in values]):.2f} %, worst {worst:.2f} % "
                                     f"({name}), n={len(values)}")
    held = [r["cd_j2j_pct"] for r in rows if r.get("held_out") and "cd_j2j_pct" in r]
    ok = bool(held) and np.median(held) <= GOAL_CD_J2J_MEDIAN and max(held) <= GOAL_CD_J2J_WORST
    out["goal"] = (f"{'PASS' if ok else 'FAIL'}: held-out CD-J2J median ≤ {GOAL_CD_J2J_MEDIAN} %, "
                   f"worst ≤ {GOAL_CD_J2J_WORST} % of the diagonal")
    return out


def run_skeletons(args: argparse.Namespace) -> int:
    """--skeleton: the fitted skeleton against the artist's on every character file."""
    held = held_out(args.assets)
    subjects = skeleton_rows(args.assets, args.only)
    print(f"{'character':<44} {'held':>4} {'template':<10} {'fit':<4} {'CD-J2J%':>7} {'CD-B2B%':>7} "
          f"{'fit→art%':>8} {'art→fit%':>8} {'s':>5}   (held-out list: {HELD_OUT_FILE.name})", flush=True)
    rows = []
    for name, source, family in subjects:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        try:
            row = skeleton_row(name, source, family, source in held)
        except Exception as exc:  # noqa: BLE001 — a file that cannot be measured is a reported row
            row = {"character": name, "source": str(source), "held_out": source in held,
                   "reason": f"{type(exc).__name__}: {exc}"}
            print(f"{name:<44} not measured: {row['reason']}", flush=True)
        else:
            mark = "yes" if row["held_out"] else ""
            print(f"{name:<44} {mark:>4} {row['family']:<10} {row['fit_quality']:<4} "
                  f"{row['cd_j2j_pct']:7.2f} {row['cd_b2b_pct']:7.2f} {row['fitted_to_artist_pct']:8.2f} "
                  f"{row['artist_to_fitted_pct']:8.2f} {row['seconds']:5.1f}", flush=True)
        rows.append(row)
        if args.json:
            write_json(args, rows, None)
    result = skeleton_summary(rows)
    for key, value in result.items():
        print(f"{key}: {value}")
    if args.json:
        write_json(args, rows, result)
    return 0


def unmapped_weight(subject: Subject, mapping: dict[str, str | None]) -> dict[str, float]:
    """Artist bones that carry weight but drive no fitted bone: their share of all weight, in %."""
    used = {s for s in mapping.values() if s}
    share = subject.weights.sum(axis=0) / max(subject.weights.sum(), 1e-300) * 100.0
    return {n: round(float(share[j]), 2) for j, n in enumerate(subject.rig.names)
            if share[j] > 0 and n not in used}


# --------------------------------------------------------------------------- one row
def benchmark_character(name: str, source, family: str | None, frames: int = 16, seed: int = 0,
                        methods: tuple[str, ...] = METHODS, align_rest: bool = False) -> dict:
    """The whole comparison for one character in the CURRENT scene (reset it before)."""
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    subject, _ = record_subject(name, source, frames, rng)
    fitted = fit_skeleton(subject, family)
    skins = skin_all(subject, fitted, methods)
    result = retarget_poses(subject, fitted, align_rest)
    poses = forward_kinematics(fitted.rig, result.motion)  # world = the fitted armature's space
    checks = dict(subject.checks)
    drift = np.abs(blender_poses(fitted, result)[..., :3, 3] - poses[..., :3, 3]).max()
    checks["fk_vs_blender_pct"] = float(drift / subject.diagonal * 100.0)
    errors = {m: measure(subject, fitted, w, poses) | {"seconds": s, **info}
              for m, (w, s, info) in skins.items()}
    if "BoneHeat" in skins:  # Blender's armature modifier on the bone-heat objects vs our numpy LBS
        checks["lbs_vs_blender_pct"] = lbs_check(subject, fitted, skins["BoneHeat"], poses[-1])
    artist = mapped_artist_weights(subject, fitted, result.mapping)
    floor = measure(subject, fitted, artist, poses)
    fit = fitted.fit
    return {
        "character": name, "source": str(source), "family_asked": family or "detect", "family": fit.family,
        "fit_quality": fit.quality, "chamfer_pct": fit.chamfer["mean"] * 100.0,
        "family_scores_pct": {k: v * 100.0 for k, v in fit.scores.items()},
        "parts": subject.parts, "vertices": int(len(subject.vertices)),
        "artist_joints": subject.rig.joint_count, "poses": subject.pose_source, "frames": int(len(poses) - 1),
        "joint_error": joint_errors(subject, fitted, result.mapping),
        "mapping": dict(result.mapping), "root_scale": result.root_scale,
        "retarget_warnings": result.warnings,
        "unmapped_artist_weight_pct": unmapped_weight(subject, result.mapping),
        "canonical": {"artist": canonical_note(result.source_frame),
                      "fitted": canonical_note(result.target_frame)},
        "methods": errors, "floor": floor, "ratios": ratios(errors), "checks": checks,
        "best_pose": best_pose_errors(subject, fitted, skins, artist),
        "seconds": {"fit": fitted.seconds, "total": time.perf_counter() - start},
    }


def measure(subject: Subject, fitted: Fitted, weights: Weights, poses: np.ndarray) -> dict:
    """Error over the sampled frames, and the largest error of the rest frame (frame 0), in %."""
    deformed = deform(subject.vertices, weights, fitted.rig.rest, poses)
    stats = error_stats(deformed[1:], subject.truth[1:], subject.diagonal)
    rest = np.linalg.norm(deformed[0] - subject.truth[0], axis=-1).max() / subject.diagonal * 100.0
    return {**stats, "rest_max": float(rest)}


def lbs_check(subject: Subject, fitted: Fitted, skin: Skin, pose: np.ndarray) -> float:
    """Max |Blender's evaluated bone-heat mesh − numpy LBS| at the last frame (the action is there)."""
    objects = [bpy.data.objects[n] for n in skin[2]["objects"]]
    blender = np.concatenate([evaluated_mesh_vertices(o, fitted.arm)[rest_index(o, v)]
                              for o, v in zip(objects, subject.split(subject.vertices), strict=True)])
    ours = deform(subject.vertices, skin[0], fitted.rig.rest, pose[None])[0]
    return float(np.abs(blender - ours).max() / subject.diagonal * 100.0)


def canonical_note(frame) -> str:
    return f"up {frame.up_axis} forward {frame.forward_axis} (confidence {frame.confidence:.2f})"


def ours(methods) -> list[str]:
    """Kirin's weight sets among `methods`, in order."""
    return [m for m in methods if m in KIRIN_METHODS or is_heat(m) or m == LEARNED]


def ratios(results: dict) -> dict[str, float]:
    """Each Kirin weight set's mean error over bone heat's (welded and not) and over Data Transfer's."""
    out = {}
    for method in ours(results):
        for other in ("BoneHeat", "DataTransfer", UNWELDED):
            if other in results and results[other]["mean"] > 0:
                out[f"{method}/{other}"] = results[method]["mean"] / results[other]["mean"]
    return out


# --------------------------------------------------------------------------- report
SHORT = {"robust": "robust", "10-NN": "10-NN", "heat": "heat", "heat+prior": "heat+prior",
         "learned": "learned",
         "BoneHeat": "bone heat", "DataTransfer": "Data Transfer"}


def cell(stats: dict | None) -> str:
    return f"{stats['mean']:5.2f}/{stats['p95']:5.2f}" if stats else f"{'n/a':^11}"


def ratio_cells(ratio: dict, methods) -> list[str]:
    """robust / bone heat, robust / Data Transfer, then every other Kirin set / bone heat."""
    keys = ["robust/BoneHeat", "robust/DataTransfer"]
    keys += [f"{m}/BoneHeat" for m in ours(methods) if m != "robust"]
    return [f"{ratio[k]:5.2f}" if k in ratio else f"{'n/a':>5}" for k in keys]


def shown(methods) -> list[str]:
    """The weight sets of the table, in order (--prior-sweep's after heat+prior; unwelded bone heat
    is in the JSON only)."""
    order = list(METHODS)
    extra = [m for m in methods if m not in order and m != UNWELDED]
    order[order.index("heat+prior") + 1:order.index("heat+prior") + 1] = extra
    return [m for m in order if m in methods]


def format_row(row: dict) -> str:
    """Two lines: the retargeted clips (end to end), then each weight set's best pose (weights only)."""
    joints = row["joint_error"]
    truth = f"/{joints['truth_mean_pct']:4.1f}" if "truth_mean_pct" in joints else "     "
    family = row["family"] if row["family_asked"] != "detect" else f"?{row['family']}"
    rest = max(m["rest_max"] for m in (*row["methods"].values(), *row["best_pose"]["methods"].values()))
    head = [f"{row['character']:<31}", f"{family:<10}", f"{row['fit_quality']:<4} {row['chamfer_pct']:4.2f}",
            f"{joints['mapped_mean_pct']:5.1f}{truth}", f"{rest:7.1e}"]
    seconds = row["seconds"]
    methods = shown(row["methods"])
    timing = (f"{seconds['fit']:5.1f} {seconds['total']:5.1f}  "
              + " ".join(f"{row['methods'][m]['seconds']:5.2f}" for m in methods))
    first = head + ["retarget "] + [cell(row["methods"].get(m)) for m in methods]
    first += [cell(row["floor"]), *ratio_cells(row["ratios"], methods), timing]
    best = row["best_pose"]
    second = [" " * len(c) for c in head] + ["best pose"] + [cell(best["methods"].get(m)) for m in methods]
    second += [cell(best["references"]["artist"]), *ratio_cells(best["ratios"], methods),
               f"rigid {cell(best['references']['rigid'])}"]
    return "  ".join(first) + "\n" + "  ".join(second)


def header(methods=METHODS) -> str:
    methods = shown(methods)
    cells = [f"{'character':<31}", f"{'template':<10}", f"{'fit chamf%':<9}", f"{'joint%':<10}",
             f"{'rest':>7}", "poses    "]
    cells += [f"{SHORT.get(m, m[len('heat+prior'):]):^11}" for m in methods]
    cells += [f"{'artist w.':^11}", f"{'r/BH':>5}", f"{'r/DT':>5}"]
    cells += [f"{SHORT.get(m, m[len('heat+prior'):])[:5] + '/BH':>5}" for m in ours(methods) if m != "robust"]
    cells += ["fit_s total_s  " + " ".join(SHORT.get(m, m) for m in methods) + " (s)"]
    note = ("errors: mean/p95 in % of the rest bbox diagonal over the sampled frames. poses: 'retarget' ="
            " the artist's poses retargeted (end to end); 'best pose' = for each weight set, the rigid bone"
            " moves of the fitted skeleton that reproduce the artist's mesh best (weights only; rigid = each"
            " vertex on its nearest bone). rest = largest rest-pose error; joint% = mapped pairs' mean"
            " distance (/ by role vs the known skeleton) in % of body size; artist w. = the artist's weights"
            " moved onto the fitted bones; r = robust mean / other mean (X/BH: set X over bone heat);"
            " ?family = detected")
    return "  ".join(cells) + "\n" + note


def verdict(ratios_of: list[tuple[dict, str]], key: str, goal: float, strict: bool = False) -> str:
    values = [(r[key], name) for r, name in ratios_of if key in r]
    if not values:
        return "not measured"
    passed = sum(v < goal if strict else v <= goal for v, _ in values)
    worst, name = max(values)
    median = float(np.median([v for v, _ in values]))
    state = "PASS" if passed == len(values) else "FAIL"
    return f"{state} on {passed}/{len(values)} (median {median:.2f}×, worst {worst:.2f}× on {name})"


def joint_verdict(rows: list[dict]) -> str:
    values = [(r["joint_error"]["truth_mean_pct"], r["character"]) for r in rows
              if "truth_mean_pct" in r["joint_error"]]
    if not values:
        return "not measured (no procedural creature)"
    passed = sum(v <= GOAL_JOINT_ERROR for v, _ in values)
    worst, name = max(values)
    state = "PASS" if passed == len(values) else "FAIL"
    return f"{state} on {passed}/{len(values)} (worst {worst:.1f} % on {name})"


def summary(rows: list[dict]) -> dict:
    artist = [r for r in rows if not r["character"].startswith("procedural/")]
    retargeted = [(r["ratios"], r["character"]) for r in artist]
    best = [(r["best_pose"]["ratios"], r["character"]) for r in artist]
    floors = [r["floor"]["mean"] / r["methods"]["robust"]["mean"] for r in artist
              if "robust" in r["methods"] and r["methods"]["robust"]["mean"] > 0]
    return {
        "vs_bone_heat": verdict(retargeted, "robust/BoneHeat", GOAL_VS_BONE_HEAT),
        "vs_data_transfer": verdict(retargeted, "robust/DataTransfer", GOAL_VS_DATA_TRANSFER, strict=True),
        "vs_bone_heat_unwelded": verdict(retargeted, f"robust/{UNWELDED}", GOAL_VS_BONE_HEAT),
        "best_pose_vs_bone_heat": verdict(best, "robust/BoneHeat", GOAL_VS_BONE_HEAT),
        "best_pose_vs_data_transfer": verdict(best, "robust/DataTransfer", GOAL_VS_DATA_TRANSFER,
                                              strict=True),
        "joint_error_procedural": joint_verdict(rows),
        "artist_weights_over_robust": f"{min(floors):.2f}–{max(floors):.2f}" if floors else "n/a",
        "rest_max_pct": max((m["rest_max"] for r in rows
                             for m in (*r["methods"].values(), *r["best_pose"]["methods"].values())),
                            default=float("nan")),
        "detected": {r["character"]: r["family"] for r in rows if r["family_asked"] == "detect"},
        "heat": heat_verdicts(retargeted, best),
    }


def heat_verdicts(retargeted: list[tuple[dict, str]], best: list[tuple[dict, str]]) -> dict[str, dict]:
    """The bone-heat goal for each of Kirin's other weight sets (10-NN, heat, heat+prior...)."""
    keys = {k.split("/")[0] for r, _ in best for k in r} - {"robust"}
    return {m: {"vs_bone_heat": verdict(retargeted, f"{m}/BoneHeat", GOAL_VS_BONE_HEAT),
                "best_pose_vs_bone_heat": verdict(best, f"{m}/BoneHeat", GOAL_VS_BONE_HEAT)}
            for m in ours(shown([*METHODS, *keys])) if m in keys}


def print_summary(result: dict) -> None:
    print(f"\nGoal robust ≤ {GOAL_VS_BONE_HEAT}× bone heat (mean, artist characters), retargeted clips: "
          f"{result['vs_bone_heat']}; best poses: {result['best_pose_vs_bone_heat']}")
    print(f"  … against bone heat on the meshes as imported (not merged by distance), retargeted clips: "
          f"{result['vs_bone_heat_unwelded']}")
    print(f"Goal robust < Data Transfer from the template (mean), retargeted clips: "
          f"{result['vs_data_transfer']}; best poses: {result['best_pose_vs_data_transfer']}")
    print(f"Goal joint error ≤ {GOAL_JOINT_ERROR:.0f} % of body size (procedural, by role): "
          f"{result['joint_error_procedural']}")
    print(f"Retargeted clips: the artist's own weights on the fitted bones score "
          f"{result['artist_weights_over_robust']}× robust's error; largest rest-pose error "
          f"{result['rest_max_pct']:.1e} %; detection picked {result['detected'] or 'n/a'}")
    for method, verdicts in result["heat"].items():
        print(f"  {method} ≤ {GOAL_VS_BONE_HEAT}× bone heat, retargeted clips: {verdicts['vs_bone_heat']}; "
              f"best poses: {verdicts['best_pose_vs_bone_heat']}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", type=Path, default=DEFAULT_ASSETS, help="the shared assets folder")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="characters to run (name or part of it)")
    parser.add_argument("--frames", type=int, default=16, help="poses per character")
    parser.add_argument("--procedural", type=int, default=3, help="procedural creatures per family (0: none)")
    parser.add_argument("--family", help="fit this template on every character (default: per set)")
    parser.add_argument("--align-rest", action="store_true", help="retarget with rest alignment")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write every number here")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS),
                        help="weight sets to compute (default: all)")
    parser.add_argument("--skeleton", action="store_true",
                        help="only the fitted skeleton against the artist's (CD-J2J, CD-B2B), on every "
                             "character file of the assets")
    parser.add_argument("--prior-sweep", nargs="+", type=float, default=[], metavar="LAMBDA",
                        help="extra heat+prior weight sets with these prior weights (1/diagonal²)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.skeleton:
        return run_skeletons(args)
    subjects = find_subjects(args.assets, args.only, args.family, args.procedural)
    if not subjects:
        print(f"No characters under {args.assets} (only={args.only}).", file=sys.stderr)
        return 1
    methods = tuple(args.methods) + tuple(f"heat+prior@{w:g}" for w in args.prior_sweep)
    if not support.have_kirin_transfer():
        methods = tuple(m for m in methods if m not in ours(methods))
    print(header(methods), flush=True)
    rows = []
    for name, source, family in subjects:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        row = benchmark_character(name, source, family, args.frames, args.seed, methods, args.align_rest)
        rows.append(row)
        print(format_row(row), flush=True)
        if args.json:  # keep what is done if a later character fails
            write_json(args, rows, None)
    result = summary(rows)
    print_summary(result)
    if args.json:
        write_json(args, rows, result)
    return 0


def write_json(args: argparse.Namespace, rows: list[dict], result: dict | None) -> None:
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()},
                                     "characters": rows, "summary": result}, indent=2))


if __name__ == "__main__":
    sys.exit(main())
