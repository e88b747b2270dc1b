"""Sampled features back onto the user's rig: decoded into a motion of the canonical rig, cleaned up
there (+Z up, feet on the floor: kirin_addon/generate/cleanup.py), brought into the rig's own
armature space through the canonical frame and the inverse-bind correction, and the kept frames
pinned exactly as keyed.

numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.canonical import CanonicalFrame, CanonicalRig
from ..core.motion import Motion, motion_from_world_deltas, pin_frames, world_deltas
from ..core.rig import Rig
from ..core.rotations import matrix_to_quat, quat_to_matrix
from .cleanup import CleanupOptions, clean_motion
from .features import CONTACT, features_to_motion

# The clean-up locks a sampled contact only if that moves the foot at most this share of its leg's
# length: farther, the contact label is wrong, and locking it drags the leg straight (the model card
# has the R-Precision this costs and saves).
LOCK_LIMIT = 0.3


@dataclass(frozen=True)
class Start:
    """Where a sampled motion starts: the root's heading and ground point (the rig's rest, or the
    first kept frame)."""

    yaw: float
    ground: np.ndarray  # (2,)


def identity_frame() -> CanonicalFrame:
    return CanonicalFrame(np.eye(3), 1.0, np.zeros(3), notes=("already canonical",))


def from_canonical(canon: CanonicalRig, rig: Rig, motion: Motion) -> Motion:
    """A motion of `canon.rig` as the same motion of `rig` (its own armature space)."""
    deltas = quat_to_matrix(world_deltas(canon.rig, motion))
    root = motion.root_positions
    return motion_from_world_deltas(
        rig,
        matrix_to_quat(canon.frame.from_canonical_rotations(deltas)),
        canon.frame.from_canonical_points(root),
        motion.fps,
    )


def on_rig(
    canon: CanonicalRig, rig: Rig, features: np.ndarray, fps: float, start: Start, clean: bool, trusted: bool
) -> tuple[Motion, np.ndarray, dict]:
    """Features (T,J,C, not normalised) as a motion on the user's rig, and the planted feet (T,F) of
    `canon.feet`; with `clean`, the clip is cleaned up (`trusted`: its contacts are a library clip's,
    not doubted), and the returned report holds the clean-up's summary."""
    # Clean-up works on the canonical rig (+Z up, feet on the floor); the motion goes onto the
    # user's rig after it, through the canonical frame and the inverse-bind correction.
    in_canonical = CanonicalRig(canon.rig, identity_frame(), canon.feet)
    motion = features_to_motion(in_canonical, canon.rig, features, fps, start.yaw, start.ground)
    contacts = features[:, canon.feet, CONTACT] > 0.5
    report: dict = {}
    if clean and canon.feet.size:
        options = CleanupOptions(max_lock=LOCK_LIMIT, confirm=not trusted)
        result = clean_motion(canon.rig, motion, contacts, canon.feet, options)
        motion, report["cleanup"] = result.motion, result.summary()
    return from_canonical(canon, rig, motion), contacts, report


def pin_kept(
    motion: Motion, keep: Motion, kept: np.ndarray, joints: np.ndarray | None, report: dict
) -> Motion:
    """The kept frames (those of the motion's length) exactly as given, whatever the root path and
    clean-up did; `report` says how far they had to move."""
    kept = kept[kept < motion.frame_count]
    if not kept.size:
        return motion
    motion, report["key_corrections"] = pin_frames(motion, keep, kept, joints)
    return motion


def nearest_legs(canon: CanonicalRig, planting: list[int]) -> np.ndarray:
    """For each of the rig's feet (canon.feet), the constructed leg whose planted joint is nearest
    at rest."""
    heads = canon.rig.heads
    if not planting:
        return np.zeros(0, dtype=np.int64)
    distance = np.linalg.norm(heads[canon.feet][:, None] - heads[planting][None], axis=-1)
    return np.argmin(distance, axis=1) if distance.size else np.zeros(0, dtype=np.int64)
