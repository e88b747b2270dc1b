"""A user's rig as the pose prior sees it, and its poses: the `PosedRig` (canonical frame, pose
skeleton, the network's own encoding of the rig) and a `Pose` (heading-frame world deltas, the root,
the heading), with the conversions from and to the user's rig (a one-frame `Motion`, local rotations
as Blender keys them).

A rig of more than 64 bones is posed on its bones that matter (core/rig_reduction.py): the skeleton,
the network's inputs and a pose's deltas are the reduced rig's; a pose keeps the whole rig's deltas it
came from (`Pose.carried`), and the bones left out (fingers, face, twist bones) ride on their anchors
as the animator had posed them. Joint indices in and out (handles, pins, ranges) are the user's rig's.

numpy only: the pipeline that plans projections and walks (pipeline.py) and the network behind it
(models/pose/) both work on these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.canonical import CanonicalFrame
from ..core.motion import Motion, forward_kinematics, motion_from_world_deltas
from ..core.rig import Rig
from ..core.rig_reduction import RigReduction, identity_reduction
from ..core.rotations import heading, matrix_to_quat, quat_slerp, quat_to_matrix, yaw_matrix
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
    # The bones the prior sees (`skeleton` is the reduced rig's, canonical); the identity for ≤ 64 bones.
    reduction: RigReduction | None = None
    whole: Skeleton | None = None  # the user's whole rig, canonical, where it was reduced

    def __post_init__(self) -> None:
        if self.reduction is None:
            self.reduction = identity_reduction(self.rig)

    @property
    def joint_count(self) -> int:
        """Joints of the user's rig (what handles, pins and ranges index)."""
        return self.rig.joint_count

    def reduced_limits(self, limits: JointLimits | None) -> JointLimits | None:
        """Joint ranges of the user's rig (J,) as the skeleton's (K,)."""
        if limits is None or not self.reduction.reduced:
            return limits
        keep = self.reduction.keep
        return JointLimits(np.asarray(limits.swing)[keep], np.asarray(limits.twist)[keep])


@dataclass
class Pose:
    """A pose of a `PosedRig`: heading-frame world deltas, the root in canonical space, the heading."""

    deltas: np.ndarray  # (J,3,3) of the skeleton (the bones that matter of a big rig)
    root: np.ndarray  # (3,) canonical position of the main root
    yaw: float = 0.0
    carried: np.ndarray | None = None  # (J_rig,3,3) the whole rig's deltas the bones left out ride on


def carried_between(a: Pose, b: Pose, share: float) -> np.ndarray | None:
    """The bones left out of a reduced rig between two poses: their deltas slerped (None: at rest)."""
    if a.carried is None or b.carried is None:
        return a.carried if a.carried is not None else b.carried
    qa, qb = matrix_to_quat(a.carried), matrix_to_quat(b.carried)
    return quat_to_matrix(quat_slerp(qa, qb, np.full(qa.shape[:-1], float(share))))


def pose_from_motion(posed: PosedRig, motion: Motion, frame: int = 0) -> Pose:
    """One frame of a motion on the user's rig as a heading-frame pose."""
    motion.check_rig(posed.rig)
    world = forward_kinematics(posed.rig, motion.sliced(frame, frame + 1))[0]
    deltas = posed.frame.to_canonical_rotations(
        world[:, :3, :3] @ np.swapaxes(posed.rig.rest_rotations, -1, -2)
    )
    root = posed.frame.to_canonical_points(world[posed.rig.main_root, :3, 3])
    yaw = float(heading(deltas[posed.rig.main_root][None])[0])
    deltas = yaw_matrix(np.array(-yaw)) @ deltas
    if not posed.reduction.reduced:
        return Pose(deltas, root, yaw)
    return Pose(posed.reduction.reduce_deltas(deltas), root, yaw, deltas)


def pose_to_motion(posed: PosedRig, poses: list[Pose], fps: float = 30.0) -> Motion:
    """Poses back on the user's rig (local rotations as Blender keys them, the root where it was); a
    reduced rig's left-out bones ride on their anchors as in each pose's `carried` deltas."""
    reduction = posed.reduction
    deltas = np.stack([yaw_matrix(np.array(p.yaw)) @ reduction.expand_deltas(p.deltas, p.carried)
                       for p in poses])
    arm = posed.frame.from_canonical_rotations(deltas)
    roots = posed.frame.from_canonical_points(np.stack([p.root for p in poses]))
    return motion_from_world_deltas(posed.rig, matrix_to_quat(arm), roots, fps)


def whole_positions(posed: PosedRig, pose: Pose) -> np.ndarray:
    """(J_rig,3) heading-frame positions of every joint of the user's rig in a pose."""
    if not posed.reduction.reduced:
        return posed.skeleton.positions(pose.deltas)
    return posed.whole.positions(posed.reduction.expand_deltas(pose.deltas, pose.carried))


def target_to_canonical(posed: PosedRig, point: np.ndarray) -> np.ndarray:
    """An armature-space point (a drag target) in the canonical frame."""
    return posed.frame.to_canonical_points(np.asarray(point, np.float64))
