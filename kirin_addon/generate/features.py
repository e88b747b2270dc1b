"""The motion model's per-(frame, joint) features and their exact inverse.

Everything is in the canonical frame (core/canonical.py: +Z up, −Y forward, one body size = 1) and,
per frame, relative to the creature's heading, so a motion's features do not depend on where it
starts, which way it faces, how the rig was authored (roll, rest conventions) or its scale.

Channels of one joint at one frame (`CHANNELS`):
  rot6   world delta D = R_world · R_rest⁻¹ seen from the heading frame (Hᵀ·D), 6D form
  pos    position relative to the root's ground point, in the heading frame
  vel    velocity (body sizes per second) in the heading frame
  contact  1 where a foot joint is planted (foot candidates only)
  yaw    heading rate (rad/s), on the main root only

The root's own `pos` and `vel` carry its height and ground velocity; integrating `vel` and `yaw`
rebuilds the trajectory, so `features → motion` needs no extra root channels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.canonical import CanonicalRig
from ..core.motion import Motion, forward_kinematics, motion_from_world_deltas
from ..core.rig import Rig
from ..core.rotations import heading, matrix_to_6d, matrix_to_quat, sixd_to_matrix, yaw_matrix
from ..eval.metrics import Ground, foot_contacts

ROT = slice(0, 6)
POS = slice(6, 9)
VEL = slice(9, 12)
CONTACT = 12
YAW = 13
CHANNELS = 14


@dataclass
class ClipFeatures:
    features: np.ndarray  # (T,J,CHANNELS) float32
    positions: np.ndarray  # (T,J,3) canonical joint positions (for losses and tests)
    start_yaw: float
    start_ground: np.ndarray  # (2,) the root's ground point at frame 0


def motion_features(canon: CanonicalRig, rig: Rig, motion: Motion) -> ClipFeatures:
    """Features of a motion on `rig` (its own armature space); `canon` is `canonical_rig(rig)`."""
    frame = canon.frame
    pose = forward_kinematics(rig, motion)
    positions = frame.to_canonical_points(pose[..., :3, 3])
    world = frame.rotation @ pose[..., :3, :3]
    deltas = world @ np.swapaxes(canon.rig.rest_rotations, -1, -2)[None]
    root = canon.rig.main_root
    yaw = heading(deltas[:, root])
    turn = yaw_matrix(yaw)  # (T,3,3)
    turn_t = np.swapaxes(turn, -1, -2)
    ground = positions[:, root].copy()
    ground[:, 2] = 0.0
    count, joints = positions.shape[:2]
    out = np.zeros((count, joints, CHANNELS))
    out[..., ROT] = matrix_to_6d(turn_t[:, None] @ deltas)
    out[..., POS] = np.einsum("tab,tjb->tja", turn_t, positions - ground[:, None])
    step = np.diff(
        positions,
        axis=0,
        append=positions[-1:] + (positions[-1:] - positions[-2:-1]) if count > 1 else positions[-1:],
    )
    out[..., VEL] = np.einsum("tab,tjb->tja", turn_t, step) * motion.fps
    if canon.feet.size:
        floor = canon.rig.heads[canon.feet, 2]
        out[:, canon.feet, CONTACT] = foot_contacts(
            positions, canon.feet, motion.fps, ground=Ground(floor=floor, body_size=1.0)
        )
    yaw_rate = np.diff(yaw, append=2 * yaw[-1] - yaw[-2] if count > 1 else yaw[-1]) * motion.fps
    out[:, root, YAW] = yaw_rate
    return ClipFeatures(out.astype(np.float32), positions, float(yaw[0]), ground[0, :2].copy())


def integrate_root(
    features: np.ndarray,
    root: int,
    fps: float,
    start_yaw: float = 0.0,
    start_ground: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame heading (T,) and root ground point (T,3) from the root's yaw rate and velocity."""
    yaw_rate = features[:, root, YAW].astype(np.float64)
    yaw = start_yaw + np.concatenate([[0.0], np.cumsum(yaw_rate[:-1]) / fps])
    velocity = np.einsum("tab,tb->ta", yaw_matrix(yaw), features[:, root, VEL].astype(np.float64))
    ground = np.zeros((len(yaw), 3))
    ground[0, :2] = np.zeros(2) if start_ground is None else start_ground
    ground[1:, :2] = ground[0, :2] + np.cumsum(velocity[:-1, :2], axis=0) / fps
    return yaw, ground


def features_to_motion(
    canon: CanonicalRig,
    rig: Rig,
    features: np.ndarray,
    fps: float,
    start_yaw: float = 0.0,
    start_ground: np.ndarray | None = None,
) -> Motion:
    """Motion on `rig` (its own armature space) from features: rotations from `rot6`, the root path
    integrated from the root's velocity and yaw rate, its height from its `pos`."""
    root = canon.rig.main_root
    yaw, ground = integrate_root(features, root, fps, start_yaw, start_ground)
    turn = yaw_matrix(yaw)
    local = sixd_to_matrix(features[..., ROT].astype(np.float64))
    deltas = turn[:, None] @ local
    root_position = ground + np.einsum("tab,tb->ta", turn, features[:, root, POS].astype(np.float64))
    frame = canon.frame
    # Back to armature axes: D_arm = Rcᵀ · D_c · Rc; the root through the inverse similarity.
    arm_deltas = frame.from_canonical_rotations(deltas)
    arm_root = frame.from_canonical_points(root_position)
    return motion_from_world_deltas(rig, matrix_to_quat(arm_deltas), arm_root, fps)


def positions_from_features(features: np.ndarray, root: int, fps: float) -> np.ndarray:
    """(T,J,3) canonical joint positions straight from the `pos` channels and the integrated root."""
    yaw, ground = integrate_root(features, root, fps)
    return ground[:, None] + np.einsum("tab,tjb->tja", yaw_matrix(yaw), features[..., POS].astype(np.float64))


def deltas_of(features: np.ndarray) -> np.ndarray:
    """(T,J,4) quaternion world deltas in the heading frame (for tests and metrics)."""
    return matrix_to_quat(sixd_to_matrix(features[..., ROT].astype(np.float64)))
