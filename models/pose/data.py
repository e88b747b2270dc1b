"""Training data of the pose prior: the static poses a feature cache's clips visit, per rig.

Every frame of the motion cache (models/data/cache.py) already holds each joint's world delta in the
heading frame; a pose is one frame of that channel. ViPS' filters decide what is kept:
  - static clips and held frames: a frame joins the bank only when its normalised joint positions
    moved ≥ `min_change` body sizes (mean over joints) from the last kept frame of its clip, so an
    idle loop gives a handful of poses, not hundreds of copies of one;
  - broken rigs: a rig whose clips are not reproduced by rotations alone (forward kinematics of
    the stored deltas ≠ the stored joint positions: bones moved by translation, inconsistent
    rests) teaches the prior nothing it can represent: it is never trained on (its rotations are
    kept for measuring the prior on rigs it has not seen).
Each rig also gets joint limits (`JointLimits.from_poses` on its own poses) for the random valid
poses a share of every batch is drawn from, and for the plausibility measures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...kirin_addon.core.rotations import sixd_to_matrix
from ...kirin_addon.generate.features import POS, ROT
from ...kirin_addon.pose.space import JointLimits, Skeleton, normalised_positions
from ..data.cache import FeatureCache, RigArrays

BROKEN_TOLERANCE = 0.02  # body sizes: median FK error above which a rig's clips need translations
# Whole rigs the prior never sees in training, to measure it on rigs it has not learnt ("without
# retraining"): the glTF samples and the authored rigs of the cache's test split.
HELDOUT_SOURCES = ("khronos_fox", "khronos_cesiumman", "luanti_spider")


@dataclass
class RigPoses:
    rig: int  # index in the cache's rigs
    name: str
    authored: bool
    heldout: bool  # never trained on: a held-out source, or a broken rig (kept for measuring)
    broken: bool
    poses: np.ndarray  # (N,J,6) float32 world deltas, heading frame, 6D
    limits: JointLimits


def skeleton_of(arrays: RigArrays) -> Skeleton:
    """A pose skeleton from a cache's rig arrays (canonical rest heads, bone directions)."""
    count = len(arrays.parents)
    parents = np.where(arrays.parents == np.arange(count), -1, arrays.parents)
    geometry = arrays.geometry.astype(np.float64)
    return Skeleton(parents, geometry[:, 0:3], geometry[:, 6:9], arrays.main_root)


def keep_moving_frames(positions: np.ndarray, min_change: float) -> np.ndarray:
    """Indices of frames (T,J,3) that moved ≥ `min_change` (mean joint distance) since the last kept."""
    kept = [0]
    for t in range(1, len(positions)):
        if np.linalg.norm(positions[t] - positions[kept[-1]], axis=-1).mean() >= min_change:
            kept.append(t)
    return np.asarray(kept)


def rig_name(record: dict) -> str:
    stem = Path(record["path"]).stem
    parts = stem.split("__")
    return (
        "/".join(parts[:2])
        if record["authored"] and len(parts) >= 2
        else f"{record['family']}/{record['species']}/{record['rig']}"
    )


def build_pose_bank(cache: FeatureCache, min_change: float = 0.02, progress: bool = False) -> list[RigPoses]:
    """One `RigPoses` per usable rig of the cache (see the module docstring)."""
    by_rig: dict[int, list[int]] = {}
    for index, record in enumerate(cache.records):
        by_rig.setdefault(record["rig"], []).append(index)
    bank = []
    for count, (rig, indices) in enumerate(sorted(by_rig.items())):
        arrays = cache.rig(rig)
        skeleton = skeleton_of(arrays)
        records = [cache.records[i] for i in indices]
        authored = any(r["authored"] for r in records)
        heldout = authored and (
            all(r["split"] != "train" for r in records)
            or any(s in records[0]["path"] for s in HELDOUT_SOURCES)
        )
        poses, errors = [], []
        for index in indices:
            features = cache.features(index)
            if not np.isfinite(features).all():
                continue
            deltas = sixd_to_matrix(features[..., ROT].astype(np.float64))
            positions = normalised_positions(skeleton, deltas).reshape(deltas.shape[:2] + (3,))
            stored = features[..., POS].astype(np.float64)
            stored = stored - stored[:, skeleton.main_root : skeleton.main_root + 1]
            errors.append(np.linalg.norm(positions - stored, axis=-1).mean(axis=-1))
            poses.append(features[keep_moving_frames(positions, min_change), :, ROT])
        if not poses:
            continue
        broken = bool(np.median(np.concatenate(errors)) > BROKEN_TOLERANCE)
        stacked = np.concatenate(poses).astype(np.float32)
        limits = JointLimits.from_poses(skeleton, sixd_to_matrix(stacked.astype(np.float64)))
        bank.append(RigPoses(rig, rig_name(records[0]), authored, heldout or broken, broken, stacked, limits))
        if progress and count % 100 == 0:
            print(f"pose bank: rig {count}/{len(by_rig)}", flush=True)
    return bank


def save_pose_bank(bank: list[RigPoses], path: str | Path) -> None:
    np.savez(
        path,
        rigs=np.array([b.rig for b in bank]),
        names=np.array([b.name for b in bank]),
        authored=np.array([b.authored for b in bank]),
        heldout=np.array([b.heldout for b in bank]),
        broken=np.array([b.broken for b in bank]),
        counts=np.array([len(b.poses) for b in bank]),
        poses=np.concatenate([b.poses.reshape(-1, 6) for b in bank]),
        joints=np.array([b.poses.shape[1] for b in bank]),
        swing=np.concatenate([b.limits.swing for b in bank]),
        twist=np.concatenate([b.limits.twist for b in bank]),
    )


def load_pose_bank(path: str | Path) -> list[RigPoses]:
    with np.load(path) as data:
        d = {k: data[k] for k in data.files}
    bank, pose_at, joint_at = [], 0, 0
    for i, rig in enumerate(d["rigs"]):
        count, joints = int(d["counts"][i]), int(d["joints"][i])
        poses = d["poses"][pose_at : pose_at + count * joints].reshape(count, joints, 6)
        limits = JointLimits(
            d["swing"][joint_at : joint_at + joints], d["twist"][joint_at : joint_at + joints]
        )
        bank.append(
            RigPoses(
                int(rig),
                str(d["names"][i]),
                bool(d["authored"][i]),
                bool(d["heldout"][i]),
                bool(d["broken"][i]),
                poses,
                limits,
            )
        )
        pose_at += count * joints
        joint_at += joints
    return bank
