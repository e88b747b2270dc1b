"""Feet that lie flat where the source's feet are planted, whatever each rig calls its foot bone.

`rest_alignment` turns each target bone onto its source bone's rest direction, which suits limbs (a
T-pose clip on an A-pose rig lifts the arms) but not feet: rigs draw the foot bone from the ankle to
the toes, to the ball or straight down, at any pitch. Turned onto another rig's foot direction, a
flat rest foot stands on its heel or its toes, its sole through the floor (CesiumMan, whose foot bone
points steeply down, pitched 40° on a Character Creator walk: its heels 6 % of its height under the
floor). So for the target's feet — mapped joints low at rest, within FOOT_HEIGHT of the hip height
above the floor, whose source joints come down to the clip's floor — the alignment is taken where
the source foot is planted instead: there the target foot lies as it does at rest (its standing
pose), turned about the up axis to head where the source foot heads. Everywhere else it follows the
source foot's rotation from there.

Both rigs are canonical (+Z up, unit body size). numpy only.
"""

from __future__ import annotations

import numpy as np

from ..core.motion import forward_kinematics
from ..core.rest_pose_cues import body_joints
from ..core.rotations import matrix_to_quat, quat_about, quat_normalize, quat_to_matrix
from .retargeter import RetargetPair, hip_height, scale_joint

FOOT_HEIGHT = 0.25  # of the hip height: a joint this low at rest is part of a foot (ankles, toes, heels)
PLANTED_HEIGHT = 0.01  # body sizes above the joint's own lowest: low enough to be planted
PLANTED_FRAMES = 8  # of those, the slowest frames the foot's flat orientation is taken from
FLOOR_PERCENTILE = 5.0  # the clip's floor: the lowest body point in this percentile of frames


def _heading(vector: np.ndarray) -> float | None:
    """Angle about +Z of a vector's horizontal part (None when it is nearly vertical)."""
    if np.hypot(vector[0], vector[1]) < 0.2 * np.linalg.norm(vector):
        return None
    return float(np.arctan2(vector[1], vector[0]))


def _mean_rotation(matrices: np.ndarray) -> np.ndarray:
    """(4,) the normalised sign-aligned mean of rotations (…,3,3) as a quaternion."""
    q = matrix_to_quat(matrices)
    q = q * np.where(q @ q[0] < 0, -1.0, 1.0)[:, None]
    return quat_normalize(q.mean(0))


def _planted(height: np.ndarray, speed: np.ndarray) -> np.ndarray:
    """The slowest frames among those where a joint is within PLANTED_HEIGHT of its lowest."""
    low = np.flatnonzero(height <= height.min() + PLANTED_HEIGHT)
    return low[np.argsort(speed[low], kind="stable")[:PLANTED_FRAMES]]


def feet_to_ground(pair: RetargetPair, align: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """`align` ((J_target,4), from `rest_alignment`) with the target's feet aligned where the source's
    are planted (module docstring); and the target joints so aligned."""
    src, tgt, mapped = pair.source, pair.target, pair.mapped
    anchor = scale_joint(src, tgt, mapped)
    if anchor is None:
        return align, []
    source_hip, target_hip = hip_height(src, int(mapped[anchor])), hip_height(tgt, anchor)
    target_floor = float(tgt.heads[body_joints(tgt), 2].min())
    feet = [j for j in np.flatnonzero(mapped >= 0)
            if tgt.heads[j, 2] - target_floor <= FOOT_HEIGHT * target_hip and j != anchor]
    if not feet or pair.motion.frame_count < 2:
        return align, []
    pose = forward_kinematics(src, pair.motion)
    heads = pose[..., :3, 3]
    floor = float(np.percentile(heads[:, body_joints(src), 2].min(axis=1), FLOOR_PERCENTILE))
    speed = np.linalg.norm(np.gradient(heads[..., :2], axis=0), axis=-1)
    out, aligned = align.copy(), []
    for j in feet:
        s = int(mapped[j])
        if heads[:, s, 2].min() - floor > FOOT_HEIGHT * source_hip:
            continue  # the source joint never comes down: no planted pose to take
        frames = _planted(heads[:, s, 2], speed[:, s])
        rest = tgt.rest_rotations[j]
        # The heading of the bone's most horizontal axis (a foot bone may point straight down).
        axis = rest[:, int(np.argmax(np.hypot(rest[0], rest[1])))]
        ahead = quat_to_matrix(align[j]) @ axis  # that axis, turned onto the source bone's rest
        estimates = []
        for f in frames:
            turn = pose[f, s, :3, :3] @ src.rest_rotations[s].T  # the source's world delta at f
            want, have = _heading(turn @ ahead), _heading(axis)
            yaw = 0.0 if want is None or have is None else want - have
            lie = quat_to_matrix(quat_about(np.array([0.0, 0.0, 1.0]), yaw)) @ rest  # flat, heading there
            estimates.append(pose[f, s, :3, :3].T @ lie)  # B: source bone frame → target bone frame
        offset = quat_to_matrix(_mean_rotation(np.array(estimates)))
        out[j] = matrix_to_quat(src.rest_rotations[s] @ offset @ rest.T)
        aligned.append(int(j))
    return out, aligned
