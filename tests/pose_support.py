"""Random poses of a rig for skinning tests."""

from __future__ import annotations

import numpy as np

from kirin.kirin_addon.core.motion import Motion, forward_kinematics
from kirin.kirin_addon.core.rotations import quat_from_axis_angle
from kirin.kirin_addon.core.skinning import skin_matrices


def random_poses(rig, count: int, seed: int = 1, max_degrees: float = 35.0) -> np.ndarray:
    """Skin matrices (count, J, 4, 4) for random local rotations of at most `max_degrees` per joint."""
    rng = np.random.default_rng(seed)
    mats = []
    for _ in range(count):
        axis = rng.normal(size=(rig.joint_count, 3))
        angle = np.radians(rng.uniform(0.0, max_degrees, rig.joint_count))
        motion = Motion(30.0, rig.heads[rig.main_root][None], quat_from_axis_angle(axis, angle)[None])
        mats.append(skin_matrices(rig.rest, forward_kinematics(rig, motion)[0]))
    return np.stack(mats)
