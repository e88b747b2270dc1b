"""A user's rig as the pose prior sees it, and its poses: the `PosedRig` (canonical frame, pose
skeleton, the network's own encoding of the rig) and a `Pose` (heading-frame world deltas, the root,
the heading), with the conversions from and to the user's rig (a one-frame `Motion`, local rotations
as Blender keys them).

numpy only: the pipeline that plans projections and walks (pipeline.py) and the network behind it
(models/pose/) both work on these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.canonical import CanonicalFrame
from ..core.motion import Motion, forward_kinematics, motion_from_world_deltas
from ..core.rig import Rig
from ..core.rotations import heading, matrix_to_quat, yaw_matrix
from .space import JointLimits, Skeleton


class PoseSpaceError(ValueError):
    """Bad input to a pose-space operation; the message is user-facing."""


@dataclass
class PosedRig:
    """A rig ready for the prior: its canonical form, pose skeleton and network inputs (batch 1)."""

    rig: Rig
    frame: CanonicalFrame
    skeleton: Skeleton
    inputs: object  # the network's own encoding of the rig (`PoseNetwork.rig_inputs`), opaque here
    stiffness: np.ndarray | None = None  # (J,) from the prior's own samples (`PosePipeline.learn_rig`)
    limits: JointLimits | None = None  # the joint limits the prior's samples keep to
    mobility: np.ndarray | None = None  # (J,) in [0,1): how freely each joint turns in the samples

    @property
    def joint_count(self) -> int:
        return self.rig.joint_count


@dataclass
class Pose:
    """A pose of a `PosedRig`: heading-frame world deltas, the root in canonical space, the heading."""

    deltas: np.ndarray  # (J,3,3)
    root: np.ndarray  # (3,) canonical position of the main root
    yaw: float = 0.0


def pose_from_motion(posed: PosedRig, motion: Motion, frame: int = 0) -> Pose:
    """One frame of a motion on the user's rig as a heading-frame pose."""
    motion.check_rig(posed.rig)
    world = forward_kinematics(posed.rig, motion.sliced(frame, frame + 1))[0]
    deltas = posed.frame.to_canonical_rotations(
        world[:, :3, :3] @ np.swapaxes(posed.rig.rest_rotations, -1, -2)
    )
    root = posed.frame.to_canonical_points(world[posed.rig.main_root, :3, 3])
    yaw = float(heading(deltas[posed.rig.main_root][None])[0])
    return Pose(yaw_matrix(np.array(-yaw)) @ deltas, root, yaw)


def pose_to_motion(posed: PosedRig, poses: list[Pose], fps: float = 30.0) -> Motion:
    """Poses back on the user's rig (local rotations as Blender keys them, the root where it was)."""
    deltas = np.stack([yaw_matrix(np.array(p.yaw)) @ p.deltas for p in poses])
    arm = posed.frame.from_canonical_rotations(deltas)
    roots = posed.frame.from_canonical_points(np.stack([p.root for p in poses]))
    return motion_from_world_deltas(posed.rig, matrix_to_quat(arm), roots, fps)


def target_to_canonical(posed: PosedRig, point: np.ndarray) -> np.ndarray:
    """An armature-space point (a drag target) in the canonical frame."""
    return posed.frame.to_canonical_points(np.asarray(point, np.float64))
