"""The pose prior (Pose Space, ViPS) on real rigs and their authored clips, against plain IK.

Every rig that has authored clips (the Khronos Fox, CesiumMan, the Luanti spider, the Quaternius
animals, dinosaurs, fish, mechs, ... as ingested .npz clips) is brought to the prior
(`PosePipeline.prepare`) and its clip frames become its "data poses" (`pose_from_motion` on every
frame, heading frame); its joint limits are the widest angles those poses reach
(`JointLimits.from_poses`). A drag is a data pose with one end effector (a leaf with at least two
joints above it) moved 5–25 % of body size in a random direction. Sections (--sections):

1. latency — per rig (≤ 64 joints) --count projections of random drags (`prior.project`, the
   default backend: ONNX when it runs): median and p95 ms, against the plain IK that the
   projection starts from (`solve_handles`, same drags, same stiffness) timed in the same run, and
   the projection keeping to the rig's ranges (below) timed too.
   Goal: median ≤ 50 ms per projection (ARCHITECTURE.md). Rig files under --assets without clips (the
   Quaternius modular humanoids) are imported with Blender and dragged from their rest pose.
2. plausibility — the same drags three ways: (a) the unprojected edit (`Projection.edit`, damped
   least-squares IK over the whole tree), (b) Blender's own IK constraint (the rig as an armature,
   the start pose as an Action, an IK constraint with the chain up to the root on the bone whose
   tail is the dragged joint, targeting an empty, evaluated by the depsgraph, read back as a pose),
   (c) the projection by the prior alone, (d) the projection keeping to the rig's ranges, as Pose
   Space does on an armature with actions (`JointLimits.from_motion` of them): here the ranges of
   the rig's clips other than the dragged pose's own (a rig with one clip: its frames more than
   RANGE_WINDOW frames from the dragged one), so the clip being edited never tells its own range.
   Per pose: the share of joints outside the rig's data limits (all its clips), the distance to
   the nearest data pose (mean joint distance, body sizes) and the handle error (body sizes).
   Goal: the projection is more plausible than IK (fewer violations, nearer the data) at a
   comparable handle error; quadrupeds' projected poses stay close to what their clips visit.
   The verdict is on (d); (c) is reported beside it (the prior alone knows a rig's ranges only
   as well as its samples do: see models/weights/pose/MODEL_CARD.md).
3. fsd — rigs with ≥ 30 data poses: --samples poses sampled by the prior and as many random valid
   poses (uniform inside the data limits, and inside the default limits) against the data poses:
   Fréchet distance of normalised joint positions (ViPS' FSD). Goal: prior < random.
4. walk — --pairs pairs of data poses, 20 frames apart in a clip (within) or from two clips
   (across): `prior.walk` in-betweens, alone and keeping to the rig's ranges (as in 2, plus the
   keys), against per-joint slerp of the two keys' deltas: nearest-data distance and limit
   violations of the in-betweens, their distance to the clip's own in-between frames, and the
   largest frame-to-frame joint step (smoothness; the clip's own for reference). The verdict is on
   the walk keeping to the ranges (what Walk Between Keys does on an armature with actions).
5. size — issue 31's any-size row: the built biped of benchmarks/big_rig.py with its 25 bones, and
   grown to 256 (five three-bone fingers a hand, twist bones, a face), dragged from the same pose
   (fingers curled) by the same --count drags of its body's end effectors: median and p95 ms of a
   projection on each, and the 256-bone rig's median as a ratio of the 25-bone rig's measured in
   the same run; the 256-bone rig is posed on its bones that matter (core/rig_reduction.py), its
   fingers carried. Goal: median ≤ 50 ms on 256 bones. Needs neither clips nor Blender.

The "train" column says whether the prior saw the rig: "trained", "held-out" (a held-out source of
models/pose/data.py or the cache's test split, e.g. animals_pack/Husky), "broken" (clips that need
bone translations: never trained on) or "unseen" (not in the pose bank at all). Read from the pose
bank the prior was trained on (--bank, default runs/pose_bank.npz), else from the clips' metadata
and pose_data.HELDOUT_SOURCES. Rows marked * are rigs the prior was not trained on: what "works
without retraining" means. Clips come from --clips (default /tmp/real, `kirin data ingest`
output); when that folder has none, the matching files under --assets are ingested into a
temporary folder with Blender's importers (operators/headless/library.run_ingest).

Run: .venv/bin/python benchmarks/bench_pose_space.py [--rigs Fox CesiumMan ...] [--count 50]
     [--sections latency plausibility fsd walk size] [--samples 256] [--pairs 8] [--json out.json]
     [--model models/weights/pose] [--clips /tmp/real] [--no-blender]
The machine is shared (a training job may run): only ratios measured in the same run matter.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from kirin.benchmarks.big_rig import big_creature
from kirin.kirin_addon.core.creature import Creature
from kirin.kirin_addon.core.motion import Motion, joint_positions, motion_from_world_transforms
from kirin.kirin_addon.core.rig import Rig
from kirin.kirin_addon.core.rotations import (
    matrix_to_quat,
    quat_identity,
    quat_slerp,
    quat_to_matrix,
    rotation_between,
    yaw_matrix,
)
from kirin.kirin_addon.eval.distributions import frechet_distance
from kirin.kirin_addon.io.clip import Clip, load_clip
from kirin.kirin_addon.library.families.build import build_creature
from kirin.kirin_addon.pose.pipeline import ROOT_STIFFNESS, PosePipeline, ProjectOptions
from kirin.kirin_addon.pose.posed import Pose, PosedRig, pose_from_motion, pose_to_motion
from kirin.kirin_addon.pose.space import (
    Handle,
    JointLimits,
    Skeleton,
    nearest_pose_distance,
    normalised_positions,
    random_valid_poses,
    solve_handles,
)
from kirin.models.pose.data import HELDOUT_SOURCES
from kirin.models.pose.sampler import DEFAULT_POSE_MODEL, PosePrior

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CLIPS = Path("/tmp/real")
DEFAULT_ASSETS = ROOT.parent / "shared" / "assets"
DEFAULT_BANK = ROOT / "runs" / "pose_bank.npz"
SECTIONS = ("latency", "plausibility", "fsd", "walk")  # on the rigs of ../shared/assets
ALL_SECTIONS = (*SECTIONS, "size")  # size: on built rigs
MAX_JOINTS = 64
DRAG = (0.05, 0.25)  # body sizes: how far the dragged joint's target lies from where it was
MIN_CHAIN = 2  # a draggable end effector has at least this many joints above it
LATENCY_GOAL_MS = 50.0
FSD_MIN_POSES = 30
WALK_GAP = 20  # frames between the two keys of a walk
COMPARABLE_ERROR = 0.02  # body sizes: handle errors within this of IK's count as comparable
# Without a pose bank: rigs known to need bone translations (never trained on).
KNOWN_BROKEN = ("dinosaurs_pack/", "easy_enemies_pack/Rat", "easy_enemies_pack/Snake", "khronos_fox/")
NOT_TRAINED = ("held-out", "broken", "unseen")
# plain DLS IK (the unprojected edit), Blender's IK, projected by the prior alone, projected keeping to
# the ranges of the rig's other clips (what Pose Space does on an armature with actions)
METHODS = ("IK", "Blender", "prior", "ranges")
RANGE_WINDOW = 15  # frames: a one-clip rig's ranges leave out the frames this near the dragged pose


@dataclass
class RigData:
    """A rig with authored clips, ready for the prior, and its data poses."""

    name: str
    status: str
    family: str
    clips: list[Clip]
    posed: PosedRig
    poses: list[Pose]  # every frame of every clip, clips one after another
    spans: list[tuple[int, int]]  # [start, stop) of each clip in `poses`
    rest_only: bool = False  # a rig without clips: its rest pose is its only pose (latency only)
    deltas: np.ndarray = field(init=False)  # (N,J,3,3) heading frame
    limits: JointLimits = field(init=False)

    def __post_init__(self) -> None:
        self.deltas = np.stack([p.deltas for p in self.poses])
        self.limits = JointLimits.from_poses(self.skeleton, self.deltas)

    @property
    def skeleton(self) -> Skeleton:
        return self.posed.skeleton

    @property
    def rig(self) -> Rig:
        return self.posed.rig

    @property
    def joints(self) -> int:
        return self.rig.joint_count

    @property
    def label(self) -> str:
        return self.name + (" *" if self.status in NOT_TRAINED else "")


@dataclass
class Drag:
    start: int  # index of the data pose it starts from
    joint: int
    target: np.ndarray  # (3,) heading frame, relative to the main root

    def canonical_target(self, pose: Pose) -> np.ndarray:
        return pose.root + yaw_matrix(np.array(pose.yaw)) @ self.target


# --------------------------------------------------------------------------- clips and rigs
def matches(name: str, only: list[str] | None) -> bool:
    """`only` words: a rig matches when its name ('animals_pack/Fox') contains one, or its last part
    equals one (case-insensitive)."""
    if not only:
        return True
    low = name.lower()
    return any(w.lower() in low or w.lower() == low.rsplit("/", 1)[-1] for w in only)


def clip_files(folder: Path) -> dict[str, list[Path]]:
    """Clip files grouped by rig ('<source folder>/<file stem>', from the ingested file names)."""
    rigs: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*.npz")) if folder.is_dir() else ():
        parts = path.stem.split("__")
        if len(parts) >= 3:
            rigs.setdefault("/".join(parts[:2]), []).append(path)
    return rigs


def ingest_assets(assets: Path, only: list[str] | None) -> Path:
    """Ingest the matching rig files under `assets` with Blender's importers into a temporary folder."""
    from kirin.kirin_addon.io.scratch import private_blender_resources
    from kirin.kirin_addon.library.ingest import INGEST_EXTENSIONS
    private_blender_resources("kirin-bench-")
    from kirin.operators.headless.library import run_ingest

    files = [p for p in sorted(assets.rglob("*")) if p.suffix.lower() in INGEST_EXTENSIONS]
    chosen = [p for p in files if matches(f"{p.parent.name}/{p.stem}", only)]
    if not chosen:
        raise SystemExit(f"No rig files under {assets} match {only}")
    folder = Path(tempfile.mkdtemp(prefix="kirin-pose-assets-"))
    for k, path in enumerate(chosen):  # the clip name keeps the source folder: mirror it
        (folder / f"{k:03d}" / path.parent.name).mkdir(parents=True)
        (folder / f"{k:03d}" / path.parent.name / path.name).symlink_to(path.resolve())
    out = Path(tempfile.mkdtemp(prefix="kirin-pose-clips-"))
    report = run_ingest(str(folder), str(out))
    print(f"ingested {len(report['clips'])} clips from {len(chosen)} files into {out}", flush=True)
    return out


def training_status(names: list[str], clips: dict[str, list[Clip]], bank: Path | None) -> dict[str, str]:
    """'trained' / 'held-out' / 'broken' / 'unseen' per rig name (see the module docstring)."""
    known: dict[str, str] = {}
    if bank is not None and bank.is_file():
        with np.load(bank) as data:
            for name, heldout, broken in zip(data["names"], data["heldout"], data["broken"], strict=True):
                known[str(name)] = "broken" if broken else "held-out" if heldout else "trained"
        return {n: known.get(n, "unseen") for n in names}
    out = {}
    for name in names:
        meta = [c.metadata for c in clips.get(name, [])]
        test_split = bool(meta) and all(m.get("split") == "test" for m in meta)
        if any(name.startswith(b) for b in KNOWN_BROKEN) or any(m.get("broken") for m in meta):
            out[name] = "broken"
        elif any(s in name for s in HELDOUT_SOURCES) or test_split:
            out[name] = "held-out"
        else:
            out[name] = "trained"
    return out


def load_rigs(prior: PosePipeline, folder: Path, only: list[str] | None, bank: Path | None) -> list[RigData]:
    groups = {n: p for n, p in clip_files(folder).items() if matches(n, only)}
    clips = {n: [load_clip(p) for p in paths] for n, paths in groups.items()}
    status = training_status(sorted(clips), clips, bank)
    rigs = []
    for name in sorted(clips):
        first = clips[name][0]
        if first.rig.joint_count > MAX_JOINTS:
            print(f"skip {name}: {first.rig.joint_count} joints > {MAX_JOINTS}")
            continue
        posed = prior.prepare(first.rig)
        poses, spans = [], []
        for clip in clips[name]:
            start = len(poses)
            poses += [pose_from_motion(posed, clip.motion, f) for f in range(clip.motion.frame_count)]
            spans.append((start, len(poses)))
        family = str(first.metadata.get("family", "unknown"))
        rigs.append(RigData(name, status[name], family, clips[name], posed, poses, spans))
    return rigs


def rest_pose_rigs(prior: PosePipeline, assets: Path, only: list[str] | None, known: set[str],
                   bank: Path | None) -> list[RigData]:
    """Rig files under `assets` that have no clips (e.g. Quaternius' modular humanoids), imported with
    Blender's importers: their rest pose is where drags start (latency only)."""
    from kirin.kirin_addon.io.scratch import private_blender_resources
    from kirin.kirin_addon.library.ingest import INGEST_EXTENSIONS
    private_blender_resources("kirin-bench-")
    import bpy

    from kirin.operators.headless import common as headless
    from kirin.operators.headless.library import armature_actions
    from kirin.operators.scene_io.arrays import object_matrix
    from kirin.operators.scene_io.rig import read_rig

    files = [p for p in sorted(assets.rglob("*")) if p.suffix.lower() in INGEST_EXTENSIONS]
    names = {p: f"{p.parent.name}/{p.stem}" for p in files}
    files = [p for p in files if names[p] not in known and matches(names[p], only)]
    status = training_status([names[p] for p in files], {}, bank)
    rigs = []
    for path in files:
        name = names[path]
        bpy.ops.wm.read_factory_settings(use_empty=True)
        try:
            arm, _ = headless.import_rig_file(str(path))
            # In world axes, as `kirin data ingest` stores clips.
            rig = read_rig(arm).transformed(object_matrix(arm))
            if armature_actions(arm) or rig.joint_count > MAX_JOINTS:
                continue  # clips that were not ingested are not measured from their rest pose
        except (ValueError, RuntimeError) as exc:
            print(f"skip {name}: {exc}")
            continue
        posed = prior.prepare(rig)
        rest = Motion(30.0, rig.heads[rig.main_root][None], quat_identity((1, rig.joint_count)))
        pose = pose_from_motion(posed, rest, 0)
        rigs.append(RigData(name, status[name], "unknown", [], posed, [pose], [(0, 1)], rest_only=True))
    return rigs


# --------------------------------------------------------------------------- drags
def draggable(skeleton: Skeleton) -> np.ndarray:
    """End effectors with at least MIN_CHAIN joints above them that move them (not IK controls and
    pole targets parented to the root)."""
    has_child = np.zeros(skeleton.joint_count, dtype=bool)
    has_child[skeleton.parents[skeleton.parents >= 0]] = True
    lever = np.linalg.norm(skeleton.offsets, axis=-1) > 1e-6
    return np.flatnonzero(~has_child & (skeleton.depth >= MIN_CHAIN) & lever)


def make_drags(rd: RigData, count: int, rng: np.random.Generator) -> list[Drag]:
    joints = draggable(rd.skeleton)
    drags = []
    for _ in range(count if len(joints) else 0):
        start = int(rng.integers(len(rd.poses)))
        joint = int(rng.choice(joints))
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        here = rd.skeleton.positions(rd.poses[start].deltas)[joint]
        drags.append(Drag(start, joint, here + direction * rng.uniform(*DRAG)))
    return drags


def known_ranges(rd: RigData, start: int, keys: tuple[int, ...] = ()) -> JointLimits:
    """The ranges Pose Space would read from the rig's actions while data pose `start` is dragged
    (or walked from), its own clip not among them: every other clip of the rig, or, for a rig with
    one clip, its frames more than RANGE_WINDOW frames away; the pose itself and the other `keys`
    of a walk are always in."""
    own = next(k for k, (a, b) in enumerate(rd.spans) if a <= start < b)
    if len(rd.spans) > 1:
        known = [np.arange(a, b) for k, (a, b) in enumerate(rd.spans) if k != own]
    else:
        a, b = rd.spans[0]
        frames = np.arange(a, b)
        known = [frames[np.abs(frames - start) > RANGE_WINDOW]]
    chosen = np.concatenate(known + [[start, *keys]]).astype(np.int64)
    return JointLimits.from_poses(rd.skeleton, rd.deltas[chosen])


def run_drags(prior: PosePipeline, rd: RigData, drags: list[Drag]) -> dict:
    """Each drag projected (timed) by the prior alone and keeping to the rig's known ranges, and
    the plain IK it starts from timed on its own."""
    skeleton = rd.skeleton
    stiffness = np.ones(rd.joints)
    stiffness[skeleton.parents < 0] = ROOT_STIFFNESS
    if drags:  # warm-up: first ONNX call, cached kinematics
        first = rd.poses[drags[0].start]
        prior.project(rd.posed, first, {drags[0].joint: drags[0].canonical_target(first)})
    project_s, ranges_s, ik_s, edits, projected, kept = [], [], [], [], [], []
    for k, drag in enumerate(drags):
        pose = rd.poses[drag.start]
        targets = {drag.joint: drag.canonical_target(pose)}
        started = time.perf_counter()
        result = prior.project(rd.posed, pose, targets, options=ProjectOptions(seed=k))
        project_s.append(time.perf_counter() - started)
        if not rd.rest_only:
            ranges = known_ranges(rd, drag.start)
            started = time.perf_counter()
            options = ProjectOptions(seed=k)
            kept.append(prior.project(rd.posed, pose, targets, ranges=ranges, options=options).pose.deltas)
            ranges_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        plain = solve_handles(skeleton, pose.deltas, [Handle(drag.joint, drag.target)], stiffness=stiffness)
        ik_s.append(time.perf_counter() - started)
        edits.append(plain)  # plain IK: every joint equally stiff (the prior's own edit is not the baseline)
        projected.append(result.pose.deltas)
    return {"project_s": np.array(project_s), "ranges_s": np.array(ranges_s), "ik_s": np.array(ik_s),
            "IK": np.array(edits), "prior": np.array(projected), "ranges": np.array(kept) if kept else None}


# --------------------------------------------------------------------------- Blender's IK
def aimed_rig(rig: Rig, tip: int, joint: int) -> Rig:
    """The rig with bone `tip` turned (and stretched) so its tail is `joint`'s head: Blender's IK
    moves a chain's last tail, and imported bones point wherever the importer guessed. World deltas
    do not depend on a bone's rest orientation, so poses carry over unchanged."""
    rest, tails = rig.rest.copy(), rig.tails.copy()
    turn = quat_to_matrix(rotation_between(rest[tip, :3, 1], rig.heads[joint] - rig.heads[tip]))
    rest[tip, :3, :3] = turn @ rest[tip, :3, :3]
    tails[tip] = rig.heads[joint]
    return Rig(list(rig.names), rig.parents.copy(), rest, tails, rig.deform.copy(), rig.connected.copy())


def tip_bone(rig: Rig, joint: int) -> int:
    """The nearest ancestor whose turn moves `joint` (its head is not on the joint's)."""
    tip = int(rig.parents[joint])
    while rig.parents[tip] >= 0 and np.linalg.norm(rig.heads[joint] - rig.heads[tip]) <= 1e-9:
        tip = int(rig.parents[tip])
    return tip


def blender_ik(rd: RigData, drags: list[Drag]) -> np.ndarray:
    """(D,J,3,3) Blender's IK constraint answer to every drag, in its start pose's heading frame."""
    from kirin.kirin_addon.io.scratch import private_blender_resources
    private_blender_resources("kirin-bench-")
    import bpy

    from kirin.operators.scene_io.action import write_action
    from kirin.operators.scene_io.rig import create_armature, evaluated_pose

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    empty = bpy.data.objects.new("IK target", None)
    scene.collection.objects.link(empty)
    out = np.empty((len(drags), rd.joints, 3, 3))
    by_joint: dict[int, list[int]] = {}
    for k, drag in enumerate(drags):
        by_joint.setdefault(drag.joint, []).append(k)
    for joint, members in by_joint.items():
        tip = tip_bone(rd.rig, joint)
        rig = aimed_rig(rd.rig, tip, joint)
        posed = replace(rd.posed, rig=rig)
        arm = create_armature(rig, f"IK {rig.names[joint]}")
        starts = [rd.poses[drags[k].start] for k in members]
        write_action(arm, rig, pose_to_motion(posed, starts), "starts", frame_start=1)
        constraint = arm.pose.bones[rig.names[tip]].constraints.new("IK")
        constraint.target = empty
        constraint.use_tail = True
        constraint.chain_count = int(rig.depth[tip]) + 1  # up to the root
        for frame, k in enumerate(members):
            start = starts[frame]
            empty.location = posed.frame.from_canonical_points(drags[k].canonical_target(start))
            scene.frame_set(1 + frame)
            world = evaluated_pose(arm, rig)
            got = pose_from_motion(posed, motion_from_world_transforms(rig, world[None], 30.0), 0)
            out[k] = yaw_matrix(np.array(got.yaw - start.yaw)) @ got.deltas
    return out


# --------------------------------------------------------------------------- measures
def pose_measures(rd: RigData, deltas: np.ndarray, drags: list[Drag] | None = None) -> dict[str, np.ndarray]:
    """Per pose: share of joints outside the data limits, nearest-data distance, handle error."""
    out = {
        "violations": rd.limits.violations(rd.skeleton, deltas).mean(axis=-1),
        "nearest": nearest_pose_distance(rd.skeleton, deltas, rd.deltas),
    }
    if drags is not None:
        reached = rd.skeleton.positions(deltas)[np.arange(len(drags)), [d.joint for d in drags]]
        out["handle"] = np.linalg.norm(reached - np.array([d.target for d in drags]), axis=-1)
    return out


def mean(values) -> float:
    values = [v for v in np.ravel(values) if v is not None and math.isfinite(v)]
    return float(np.mean(values)) if values else float("nan")


def share(flags) -> float:
    flags = list(flags)
    return float(np.mean(flags)) if flags else float("nan")


def fmt(value, spec: str = ".3f") -> str:
    return "n/a" if value is None or not math.isfinite(value) else format(value, spec)


def table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).rjust(w) if i else str(c).ljust(w)  # noqa: E731
                               for i, (c, w) in enumerate(zip(r, widths, strict=True)))
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def row_label(row: dict) -> str:
    return row["rig"] + (" *" if row["status"] in NOT_TRAINED else "")


def ratio(value: float, base: float) -> float:
    """value / base (NaN without a base): how a method compares with a baseline of the same run."""
    return value / base if base else float("nan")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def groups(rows: list[dict]) -> dict[str, list[dict]]:
    return {"all": rows, "trained": [r for r in rows if r["status"] == "trained"],
            "not trained": [r for r in rows if r["status"] in NOT_TRAINED]}


# --------------------------------------------------------------------------- 1. latency
def latency_row(rd: RigData, runs: dict) -> dict:
    ms, ik, kept = runs["project_s"] * 1e3, runs["ik_s"] * 1e3, runs["ranges_s"] * 1e3
    return {"rig": rd.name, "status": rd.status, "start": "rest" if rd.rest_only else "data",
            "joints": rd.joints, "drags": len(ms), "median_ms": float(np.median(ms)),
            "p95_ms": float(np.percentile(ms, 95)), "ik_median_ms": float(np.median(ik)),
            "ratio": float(np.median(ms) / max(np.median(ik), 1e-9)),
            "ranges_median_ms": float(np.median(kept)) if len(kept) else float("nan"),
            "ranges_p95_ms": float(np.percentile(kept, 95)) if len(kept) else float("nan")}


def report_latency(rows: list[dict]) -> dict:
    print("\n== 1. Latency: one projected single-handle drag (default backend) vs plain IK ==")
    table(["rig", "train", "start", "J", "drags", "median ms", "p95 ms", "IK ms", "ratio", "ranges median",
           "ranges p95"],
          [[r["rig"], r["status"], r["start"], r["joints"], r["drags"], fmt(r["median_ms"], ".1f"),
            fmt(r["p95_ms"], ".1f"), fmt(r["ik_median_ms"], ".2f"), fmt(r["ratio"], ".1f"),
            fmt(r["ranges_median_ms"], ".1f"), fmt(r["ranges_p95_ms"], ".1f")] for r in rows])
    medians = [r["median_ms"] for r in rows]
    kept = [r for r in rows if math.isfinite(r["ranges_median_ms"])]
    medians_kept = [r["ranges_median_ms"] for r in kept]
    worst = max(rows, key=lambda r: r["median_ms"]) if rows else {"median_ms": float("nan"), "rig": None}
    summary = {"rigs": len(rows), "median_of_medians_ms": float(np.median(medians)) if rows else float("nan"),
               "worst_median_ms": worst["median_ms"], "worst_rig": worst["rig"],
               "max_p95_ms": max((r["p95_ms"] for r in rows), default=float("nan")),
               "ratio_median": float(np.median([r["ratio"] for r in rows])) if rows else float("nan"),
               "ranges_median_of_medians_ms": float(np.median(medians_kept)) if kept else float("nan"),
               "ranges_worst_median_ms": max(medians_kept, default=float("nan")),
               "ranges_max_p95_ms": max((r["ranges_p95_ms"] for r in kept), default=float("nan")),
               "pass": bool(rows) and all(m <= LATENCY_GOAL_MS for m in medians + medians_kept)}
    within = sum(m <= LATENCY_GOAL_MS for m in medians)
    print(f"verdict: {verdict(summary['pass'])} — median per projection ≤ {LATENCY_GOAL_MS:.0f} ms on "
          f"{within}/{len(rows)} rigs (median of medians {fmt(summary['median_of_medians_ms'], '.1f')} ms, "
          f"worst {fmt(summary['worst_median_ms'], '.1f')} ms on {summary['worst_rig']}, worst p95 "
          f"{fmt(summary['max_p95_ms'], '.1f')} ms; {fmt(summary['ratio_median'], '.1f')}× plain IK); "
          f"keeping to the rig's ranges: median of medians "
          f"{fmt(summary['ranges_median_of_medians_ms'], '.1f')} ms, worst "
          f"{fmt(summary['ranges_worst_median_ms'], '.1f')} ms, worst p95 "
          f"{fmt(summary['ranges_max_p95_ms'], '.1f')} ms ({len(kept)} rigs with clips)")
    return summary


# --------------------------------------------------------------------------- 2. plausibility
def plausibility_row(rd: RigData, drags: list[Drag], runs: dict, blender: np.ndarray | None,
                     blender_error: str | None) -> dict:
    row = {"rig": rd.name, "status": rd.status, "family": rd.family, "joints": rd.joints,
           "data_poses": len(rd.poses), "drags": len(drags), "blender_error": blender_error}
    for method in METHODS:
        deltas = blender if method == "Blender" else runs[method]
        if deltas is None:
            row[method] = dict.fromkeys(("violations", "nearest", "handle", "handle_median", "reached"),
                                        float("nan"))
            continue
        m = pose_measures(rd, deltas, drags)
        row[method] = {"violations": mean(m["violations"]), "nearest": mean(m["nearest"]),
                       "handle": mean(m["handle"]), "handle_median": float(np.median(m["handle"])),
                       "reached": share(m["handle"] <= COMPARABLE_ERROR)}
    return row


def more_plausible(prior: dict, base: dict) -> bool:
    """Fewer violations, nearer the data, handle error comparable (one rig's or the mean block)."""
    return (prior["violations"] <= base["violations"] and prior["nearest"] < base["nearest"]
            and prior["handle"] <= base["handle"] + COMPARABLE_ERROR)


def report_plausibility(rows: list[dict]) -> dict:
    print("\n== 2. Plausibility of dragged poses: plain IK (unprojected edit) / Blender IK / projected ==")
    print("viol = share of joints outside the rig's data limits; near = mean joint distance to the nearest "
          "data pose; handle = distance of the dragged joint to its target (body sizes)")

    def cells(r: dict, key: str, scale: float, spec: str) -> list[str]:
        return [fmt(r[m][key] * scale, spec) for m in METHODS]

    table(["rig", "train", "J", "drags", "viol% IK", "Bl", "prior", "ranges", "near IK", "Bl", "prior",
           "ranges", "handle IK", "Bl", "prior", "ranges", "reached% ranges"],
          [[r["rig"], r["status"], r["joints"], r["drags"], *cells(r, "violations", 100, ".1f"),
            *cells(r, "nearest", 1, ".3f"), *cells(r, "handle", 1, ".3f"),
            fmt(r["ranges"]["reached"] * 100, ".0f")] for r in rows])
    for r in rows:
        if r["blender_error"]:
            print(f"  {r['rig']}: Blender IK not measured ({r['blender_error']})")
    summary: dict = {}
    projected = ("prior", "ranges")
    for name, members in groups(rows).items():
        if not members:
            continue
        block = {m: {k: mean([r[m][k] for r in members]) for k in ("violations", "nearest", "handle")}
                 for m in METHODS}
        measured = [r for r in members if math.isfinite(r["Blender"]["nearest"])]
        for m in projected:
            block[m]["beats_IK"] = share(more_plausible(r[m], r["IK"]) for r in members)
            block[m]["beats_Blender"] = share(more_plausible(r[m], r["Blender"]) for r in measured)
        summary[name] = block
        viol = " / ".join(fmt(block[m]["violations"] * 100, ".1f") for m in METHODS)
        near = " / ".join(fmt(block[m]["nearest"]) for m in METHODS)
        handle = " / ".join(fmt(block[m]["handle"]) for m in METHODS)
        beats = "; ".join(f"{m} more plausible than IK on {fmt(block[m]['beats_IK'] * 100, '.0f')} % of "
                          f"rigs, than Blender on {fmt(block[m]['beats_Blender'] * 100, '.0f')} %"
                          for m in projected)
        print(f"{name:>12} ({len(members)} rigs), IK / Blender / prior / ranges: viol% {viol}; near {near}; "
              f"handle {handle}; {beats}")
        for m in projected:  # against the baselines of the same run
            block[m]["ratios"] = {base: {k: ratio(block[m][k], block[base][k])
                                         for k in ("violations", "nearest")} for base in ("IK", "Blender")}
            print(f"{'':>12} " + "; ".join(f"{m} / {base}: violations {r['violations']:.2f}×, nearest "
                                          f"{r['nearest']:.2f}×" for base, r in block[m]["ratios"].items()))
    overall = summary.get("all")

    def beats_both(method: str) -> bool:
        return bool(overall) and all(more_plausible(overall[method], overall[b]) for b in ("IK", "Blender")
                                     if math.isfinite(overall[b]["nearest"]))

    ok = beats_both("ranges")
    summary["pass"] = ok
    summary["prior_alone_pass"] = beats_both("prior")
    print(f"verdict: {verdict(ok)} — poses projected keeping to the rig's ranges (from its other clips) "
          f"{'beat' if ok else 'do not beat'} plain and Blender IK on plausibility (fewer violations, nearer "
          f"the data; mean over rigs) at a handle error within {COMPARABLE_ERROR} body sizes of theirs; by "
          f"the prior alone they {'do' if summary['prior_alone_pass'] else 'do not'}")
    quads = [r for r in rows if r["family"] == "quadruped"]
    if quads:
        near = {m: mean([r[m]["nearest"] for r in quads]) for m in METHODS}
        closer = {m: share(r[m]["nearest"] < r["IK"]["nearest"] for r in quads) for m in projected}
        untrained = {m: mean([r[m]["nearest"] for r in quads if r["status"] in NOT_TRAINED])
                     for m in projected}
        passed = all(near[m] < near["IK"] for m in projected)
        summary["quadrupeds"] = {"rigs": len(quads), "nearest": near, "closer_than_IK": closer,
                                 "nearest_not_trained": untrained, "pass": passed}
        listed = [f"{row_label(r)} {fmt(r['prior']['nearest'])} / {fmt(r['ranges']['nearest'])}"
                  for r in quads]
        print("quadrupeds, projected nearest-data distance (prior / ranges): " + ", ".join(listed))
        print(f"verdict: {verdict(passed)} — quadruped projected poses are "
              f"{'closer to' if passed else 'not closer to'} the poses their clips visit than IK's: prior "
              f"{fmt(near['prior'])}, ranges {fmt(near['ranges'])} vs IK {fmt(near['IK'])} / Blender "
              f"{fmt(near['Blender'])} body sizes ({len(quads)} rigs, closer on "
              f"{fmt(closer['prior'] * 100, '.0f')} / {fmt(closer['ranges'] * 100, '.0f')} %; not trained "
              f"on: {fmt(untrained['prior'])} / {fmt(untrained['ranges'])})")
    return summary


# --------------------------------------------------------------------------- 3. FSD
def fsd_row(prior: PosePipeline, rd: RigData, samples: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    skeleton = rd.skeleton
    data = normalised_positions(skeleton, rd.deltas)
    sampled = prior.sample(rd.posed, samples, seed=seed)
    sets = {"prior": sampled,
            "random_data_limits": random_valid_poses(skeleton, rd.limits, samples, rng),
            "random_default_limits": random_valid_poses(skeleton, JointLimits.default(skeleton), samples,
                                                        rng)}
    row = {"rig": rd.name, "status": rd.status, "joints": rd.joints, "data_poses": len(rd.poses)}
    for key, deltas in sets.items():
        row[key] = frechet_distance(normalised_positions(skeleton, deltas), data)
    row["prior_violations"] = mean(rd.limits.violations(skeleton, sampled).mean(axis=-1))
    return row


def report_fsd(rows: list[dict]) -> dict:
    print("\n== 3. FSD against the rig's data poses: prior samples vs random valid poses ==")
    table(["rig", "train", "J", "data", "FSD prior", "random (data lim.)", "random (default lim.)",
           "prior viol%"],
          [[r["rig"], r["status"], r["joints"], r["data_poses"], fmt(r["prior"], ".4f"),
            fmt(r["random_data_limits"], ".4f"), fmt(r["random_default_limits"], ".4f"),
            fmt(r["prior_violations"] * 100, ".1f")] for r in rows])
    summary: dict = {}
    for name, members in groups(rows).items():
        if members:
            block = {"rigs": len(members)}
            for limits in ("data_limits", "default_limits"):
                block[f"lower_than_{limits}"] = share(r["prior"] < r[f"random_{limits}"] for r in members)
                block[f"median_ratio_{limits}"] = float(np.median([ratio(r["prior"], r[f"random_{limits}"])
                                                                   for r in members]))
            summary[name] = block
            print(f"{name:>12} ({len(members)} rigs): prior below random-in-data-limits on "
                  f"{fmt(block['lower_than_data_limits'] * 100, '.0f')} % of rigs, below "
                  f"random-in-default-limits on {fmt(block['lower_than_default_limits'] * 100, '.0f')} %; "
                  f"FSD prior / random, median over rigs: {fmt(block['median_ratio_data_limits'], '.2f')}× / "
                  f"{fmt(block['median_ratio_default_limits'], '.2f')}×")
    overall = summary.get("all", {})
    ok = min(overall.get("lower_than_data_limits", 0.0), overall.get("lower_than_default_limits", 0.0)) > 0.5
    summary["pass"] = ok
    print(f"verdict: {verdict(ok)} — sampled poses {'are' if ok else 'are not'} nearer the data than random "
          f"valid poses (both kinds) on most rigs (goal: lower FSD)")
    return summary


# --------------------------------------------------------------------------- 4. walk
WALK_MEASURES = ("nearest", "violations", "truth", "max_step")


def walk_pairs(rd: RigData, count: int, rng: np.random.Generator) -> list[tuple[int, int, str]]:
    """Key pairs: half "within" a clip (WALK_GAP frames apart: the clip's own frames are the truth),
    half "across" two clips (other actions: what slerp blends blindly)."""
    spans = [(a, b) for a, b in rd.spans if b - a > WALK_GAP]
    pairs = []
    for k in range(count if spans else 0):
        a, b = spans[int(rng.integers(len(spans)))]
        start = a + int(rng.integers(b - a - WALK_GAP))
        if k % 2 == 1 and len(rd.spans) > 1:
            other = [span for span in rd.spans if span != (a, b)]
            c, d = other[int(rng.integers(len(other)))]
            pairs.append((start, c + int(rng.integers(d - c)), "across"))
        else:
            pairs.append((start, start + WALK_GAP, "within"))
    return pairs


def slerp_poses(a: Pose, b: Pose, frames: int) -> list[Pose]:
    """Per-joint slerp of the keys' heading-frame deltas; root and heading linear (as prior.walk)."""
    s = np.linspace(0.0, 1.0, frames + 1)
    qa, qb = matrix_to_quat(a.deltas), matrix_to_quat(b.deltas)
    deltas = quat_to_matrix(quat_slerp(qa[None], qb[None], np.repeat(s[:, None], len(qa), axis=1)))
    return [Pose(deltas[k], (1 - t) * a.root + t * b.root, float((1 - t) * a.yaw + t * b.yaw))
            for k, t in enumerate(s)]


def turned_positions(skeleton: Skeleton, poses: list[Pose]) -> np.ndarray:
    """(T,J,3) root-relative joint positions turned to each pose's heading (canonical axes)."""
    return np.stack([skeleton.positions(p.deltas) @ yaw_matrix(np.array(p.yaw)).T for p in poses])


def path_measures(rd: RigData, path: list[Pose], truth: list[Pose] | None) -> dict[str, float]:
    """In-betweens (keys excluded) against the data and the clip (when known); the whole path's
    largest joint step."""
    positions = turned_positions(rd.skeleton, path)
    m = pose_measures(rd, np.stack([p.deltas for p in path[1:-1]]))
    step = np.linalg.norm(np.diff(positions, axis=0), axis=-1)
    off = float("nan")
    if truth is not None:
        gap = positions[1:-1] - turned_positions(rd.skeleton, truth)[1:-1]
        off = mean(np.linalg.norm(gap, axis=-1).mean(-1))
    return {"nearest": mean(m["nearest"]), "violations": mean(m["violations"]), "truth": off,
            "max_step": float(step.max())}


def walk_row(prior: PosePipeline, rd: RigData, pairs: list[tuple[int, int, str]]) -> list[dict]:
    """One row per kind of pair ("within" a clip, "across" clips)."""
    rows = []
    for kind in ("within", "across"):
        chosen = [(a, b) for a, b, k in pairs if k == kind]
        per: dict[str, list[dict]] = {"walk": [], "ranges": [], "slerp": [], "clip": []}
        seconds = []
        for a, b in chosen:
            keys = [rd.poses[a], rd.poses[b]]
            truth = rd.poses[a : b + 1] if kind == "within" else None
            started = time.perf_counter()
            walked = prior.walk(rd.posed, keys, [WALK_GAP])
            seconds.append(time.perf_counter() - started)
            per["walk"].append(path_measures(rd, walked, truth))
            kept = prior.walk(rd.posed, keys, [WALK_GAP], ranges=known_ranges(rd, a, (b,)))
            per["ranges"].append(path_measures(rd, kept, truth))
            per["slerp"].append(path_measures(rd, slerp_poses(*keys, WALK_GAP), truth))
            if truth is not None:
                per["clip"].append(path_measures(rd, truth, truth))
        if not chosen:
            continue
        row = {"rig": rd.name, "kind": kind, "status": rd.status, "joints": rd.joints, "pairs": len(chosen),
               "walk_seconds": float(np.median(seconds))}
        for method, items in per.items():
            row[method] = {k: mean([i[k] for i in items]) if items else float("nan") for k in WALK_MEASURES}
        rows.append(row)
    return rows


def report_walk(rows: list[dict]) -> dict:
    print(f"\n== 4. Walk: prior.walk in-betweens (alone / keeping to the rig's ranges) vs per-joint slerp, "
          f"{WALK_GAP} frames between keys from one clip (within) or two clips (across) ==")
    print("near = nearest-data distance, truth = distance to the clip's own in-between frames (body sizes), "
          "step = largest frame-to-frame joint move; ranges: those of the rig's other clips and the keys")
    walks = ("walk", "ranges", "slerp")

    def cells(r: dict, key: str, scale: float = 1.0, spec: str = ".3f") -> list[str]:
        return [fmt(r[m][key] * scale, spec) for m in walks]

    table(["rig", "keys", "train", "J", "pairs", "near walk", "ranges", "slerp", "viol% walk", "ranges",
           "slerp", "truth walk", "ranges", "slerp", "step walk", "ranges", "slerp", "clip", "s/walk"],
          [[r["rig"], r["kind"], r["status"], r["joints"], r["pairs"], *cells(r, "nearest"),
            *cells(r, "violations", 100, ".1f"), *cells(r, "truth"), *cells(r, "max_step"),
            fmt(r["clip"]["max_step"]), fmt(r["walk_seconds"], ".2f")] for r in rows])
    summary: dict = {}
    for kind in ("within", "across"):
        for name, members in groups([r for r in rows if r["kind"] == kind]).items():
            if not members:
                continue
            block = {m: {k: mean([r[m][k] for r in members]) for k in WALK_MEASURES}
                     for m in (*walks, "clip")}
            block["nearer_than_slerp"] = share(r["walk"]["nearest"] < r["slerp"]["nearest"] for r in members)
            summary[f"{kind} {name}"] = block
            listed = "; ".join(f"{label} " + " / ".join(fmt(block[m][key] * scale, spec) for m in walks)
                               for label, key, scale, spec in (("near", "nearest", 1, ".4f"),
                                                               ("viol%", "violations", 100, ".1f"),
                                                               ("truth", "truth", 1, ".4f"),
                                                               ("max step", "max_step", 1, ".3f")))
            print(f"{kind:>6} {name:>12} ({len(members)} rigs), walk / ranges / slerp: {listed} "
                  f"(clip step {fmt(block['clip']['max_step'])})")
            block["ranges"]["ratios"] = {k: ratio(block["ranges"][k], block["slerp"][k])
                                         for k in ("nearest", "max_step")}
            print(f"{'':>19} ranges / slerp: nearest {block['ranges']['ratios']['nearest']:.2f}×, max step "
                  f"{block['ranges']['ratios']['max_step']:.2f}×")
    verdicts: dict[str, bool] = {}
    for kind in ("within", "across"):
        overall = summary.get(f"{kind} all")
        if not overall:
            continue
        s = overall["slerp"]
        # Within a clip slerp is already an in-between of the clip; the walk must not spoil it there
        # (within 10 %) and should do better where slerp blends two actions blindly.
        slack = 1.1 if kind == "within" else 1.0
        for method in ("ranges", "walk"):
            w = overall[method]
            ok = w["nearest"] <= slack * s["nearest"] and w["violations"] <= slack * s["violations"] + 0.005
            smooth = w["max_step"] <= 2.0 * max(s["max_step"], 1e-9)
            verdicts[f"{kind} {method}"] = ok and smooth
        kept = verdicts[f"{kind} ranges"]
        print(f"verdict ({kind}): {verdict(kept)} — in-betweens keeping to the rig's ranges are "
              f"{'at least as plausible as' if kept else 'less plausible than'} "
              f"slerp's (nearest-data distance and violations{', within 10 %' if kind == 'within' else ''}; "
              f"max step within 2× slerp's); by the prior alone: "
              f"{'also' if verdicts[f'{kind} walk'] else 'not'}")
    summary["pass"] = bool(verdicts) and all(v for k, v in verdicts.items() if k.endswith("ranges"))
    summary["prior_alone_pass"] = bool(verdicts) and all(v for k, v in verdicts.items() if k.endswith("walk"))
    return summary


# --------------------------------------------------------------------------- 5. size
def size_drags(creature: Creature, count: int, rng: np.random.Generator) -> list[tuple[int, np.ndarray]]:
    """`count` drags (joint, armature-space offset) of the body's end effectors (its own bones, which the
    grown rig keeps at the same indices), 5–25 % of the body's size in random directions."""
    skeleton = Skeleton.from_rig(creature.rig)
    joints = draggable(skeleton)
    drags = []
    for _ in range(count):
        direction = rng.normal(size=3)
        offset = direction / np.linalg.norm(direction) * rng.uniform(*DRAG) * creature.rig.body_size
        drags.append((int(rng.choice(joints)), offset))
    return drags


def size_row(prior: PosePipeline, creature: Creature, drags: list[tuple[int, np.ndarray]]) -> dict:
    """One rig's projections of `drags` from its pose with the fingers curled (timed; the first, a
    warm-up, not)."""
    rig = creature.rig
    started = time.perf_counter()
    posed = prior.learn_rig(prior.prepare(rig, creature.mesh))
    prepare_s = time.perf_counter() - started
    rotations = quat_identity((1, rig.joint_count))
    fingers = creature.extras.get("fingers", [])
    rotations[0, fingers] = [np.cos(0.3), np.sin(0.3), 0.0, 0.0]
    motion = Motion(30.0, rig.heads[rig.main_root][None], rotations)
    pose = pose_from_motion(posed, motion)
    heads = joint_positions(rig, motion)[0]
    ms, errors = [], []
    for k, (joint, offset) in enumerate([drags[0], *drags]):
        target = posed.frame.to_canonical_points(heads[joint] + offset)
        t0 = time.perf_counter()
        result = prior.project(posed, pose, {joint: target}, options=ProjectOptions(seed=k))
        if k:
            ms.append((time.perf_counter() - t0) * 1e3)
            moved = joint_positions(rig, pose_to_motion(posed, [result.pose]))[0]
            errors.append(np.linalg.norm(moved[joint] - heads[joint] - offset) / rig.body_size)
    return {"rig": f"{creature.species} {rig.joint_count}", "joints": rig.joint_count,
            "skeleton": posed.skeleton.joint_count, "drags": len(ms), "prepare_s": prepare_s,
            "median_ms": float(np.median(ms)), "p95_ms": float(np.percentile(ms, 95)),
            "handle_error": float(np.median(errors))}


def size_rows(prior: PosePipeline, count: int, seed: int) -> list[dict]:
    small = build_creature("biped", 1, naming="mixamo")
    drags = size_drags(small, count, np.random.default_rng(seed))
    return [size_row(prior, small, drags), size_row(prior, big_creature("biped", 1), drags)]


def report_size(rows: list[dict]) -> dict:
    print("\n== 5. Size: one projected drag on a 256-bone rig vs its 25-bone body (same drags, same run) ==")
    table(["rig", "J", "skeleton", "drags", "prepare s", "median ms", "p95 ms", "handle error"],
          [[r["rig"], r["joints"], r["skeleton"], r["drags"], fmt(r["prepare_s"], ".2f"),
            fmt(r["median_ms"], ".1f"), fmt(r["p95_ms"], ".1f"), fmt(r["handle_error"], ".4f")]
           for r in rows])
    if len(rows) < 2:
        return {"pass": False}
    small, big = rows[0], rows[-1]
    summary = {"small_median_ms": small["median_ms"], "big_median_ms": big["median_ms"],
               "ratio": ratio(big["median_ms"], small["median_ms"]), "big_joints": big["joints"],
               "pass": big["median_ms"] <= LATENCY_GOAL_MS}
    print(f"verdict: {verdict(summary['pass'])} — {big['joints']} bones (posed on {big['skeleton']}): median "
          f"{big['median_ms']:.1f} ms per projection (goal ≤ {LATENCY_GOAL_MS:.0f} ms), "
          f"{summary['ratio']:.2f}× the {small['joints']}-bone rig's {small['median_ms']:.1f} ms")
    return summary


# --------------------------------------------------------------------------- main
def seed_of(name: str, seed: int) -> int:
    return zlib.crc32(name.encode()) + seed


def measure_rig(prior: PosePipeline, rd: RigData, args: argparse.Namespace, wanted: set[str],
                rows: dict[str, list[dict]]) -> None:
    """Every wanted section's row for one rig (a rest-pose rig gets latency only)."""
    seed = seed_of(rd.name, args.seed)
    if wanted & {"latency", "plausibility"}:
        drags = make_drags(rd, args.count, np.random.default_rng(seed))
        if not drags:
            print(f"  {rd.name}: no end effector with {MIN_CHAIN} joints above it to drag")
            return
        runs = run_drags(prior, rd, drags)
        if "latency" in wanted:
            rows["latency"].append(latency_row(rd, runs))
        if "plausibility" in wanted and not rd.rest_only:
            blender, error = None, "--no-blender" if args.no_blender else None
            if not args.no_blender:
                try:
                    blender = blender_ik(rd, drags)
                except (ImportError, ValueError, RuntimeError) as exc:
                    error = f"{type(exc).__name__}: {exc}"
            rows["plausibility"].append(plausibility_row(rd, drags, runs, blender, error))
    if rd.rest_only:
        return
    if "fsd" in wanted and len(rd.poses) >= FSD_MIN_POSES:
        rows["fsd"].append(fsd_row(prior, rd, args.samples, seed))
    if "walk" in wanted:
        pairs = walk_pairs(rd, args.pairs, np.random.default_rng(seed + 1))
        if pairs:
            rows["walk"].extend(walk_row(prior, rd, pairs))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rigs", nargs="*", help="rig names or parts of them (default: all)")
    parser.add_argument("--count", type=int, default=50, help="drags per rig (latency, plausibility)")
    parser.add_argument("--samples", type=int, default=256, help="poses per set (fsd)")
    parser.add_argument("--pairs", type=int, default=8, help="key pairs per rig (walk)")
    parser.add_argument("--sections", nargs="+", choices=ALL_SECTIONS, default=list(ALL_SECTIONS))
    parser.add_argument("--model", default=str(DEFAULT_POSE_MODEL))
    parser.add_argument("--backend", default="auto", choices=("auto", "onnx", "torch"))
    parser.add_argument("--clips", default=str(DEFAULT_CLIPS), help="folder of ingested .npz clips")
    parser.add_argument("--assets", default=str(DEFAULT_ASSETS), help="ingested when --clips has none")
    parser.add_argument("--bank", default=str(DEFAULT_BANK), help="pose bank the prior was trained on")
    parser.add_argument("--no-blender", action="store_true", help="skip Blender's IK (no bpy needed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write every row and verdict here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    started = time.perf_counter()
    torch.set_num_threads(1)  # as the backend runs it; two threads on two busy cores only thrash
    network = PosePrior.load(args.model, backend=args.backend)
    prior = PosePipeline(network)
    backend = type(network.net).__name__
    clips = Path(args.clips)
    wanted = set(args.sections)
    with_clips = bool(wanted - {"size"})  # the size section builds its own rigs
    if with_clips and (not clip_files(clips) or not any(matches(n, args.rigs) for n in clip_files(clips))):
        clips = ingest_assets(Path(args.assets), args.rigs)
    bank = Path(args.bank) if args.bank else None
    rigs = load_rigs(prior, clips, args.rigs, bank) if with_clips else []
    if "latency" in args.sections and not args.no_blender and Path(args.assets).is_dir():
        rigs += rest_pose_rigs(prior, Path(args.assets), args.rigs, {r.name for r in rigs}, bank)
    print(f"pose prior {args.model} ({backend}, card step {network.card.get('step')}); {len(rigs)} rigs from "
          f"{clips}; training status from {bank if bank and bank.is_file() else 'clip metadata'}; "
          f"* = not trained on", flush=True)
    out: dict = {"model": args.model, "backend": backend, "card_step": network.card.get("step"),
                 "clips": str(clips), "rows": {}, "summary": {}}
    rows: dict[str, list[dict]] = {s: [] for s in ALL_SECTIONS}
    for rd in rigs:
        t0 = time.perf_counter()
        measure_rig(prior, rd, args, wanted, rows)
        print(f"  {rd.label}: {rd.joints} joints, {len(rd.poses)} {'rest' if rd.rest_only else 'data'} "
              f"pose(s), {time.perf_counter() - t0:.1f} s", flush=True)
    if "size" in wanted:
        rows["size"] = size_rows(prior, args.count, args.seed)
    reports = {"latency": report_latency, "plausibility": report_plausibility, "fsd": report_fsd,
               "walk": report_walk, "size": report_size}
    for section in ALL_SECTIONS:
        if section in wanted:
            out["rows"][section] = rows[section]
            out["summary"][section] = reports[section](rows[section])
    out["seconds"] = time.perf_counter() - started
    print(f"\ntotal {out['seconds']:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=float))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
