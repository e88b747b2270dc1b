"""Static poses of a canonical rig as world deltas: kinematics, IK with handles, joint limits and
the plausibility measures of the pose prior (ViPS).

A pose is one world delta per joint, D_j = R_world_j · R_rest_j⁻¹ (J,3,3), in the canonical frame
of core/canonical.py and seen from the creature's heading. Joint positions are then a sum over bones,
p_j = p_root + Σ_k A[j,k] · D_parent(k) · o_k (o_k the rest offset of k from its parent), so
forward kinematics is one product and its Jacobian is explicit. This module is numpy only: the
network that knows which poses are plausible lives in models/, and calls in here to meet handles.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..core.motion import Motion, world_deltas
from ..core.rig import Rig
from ..core.rotations import (
    matrix_to_6d,
    matrix_to_quat,
    quat_from_axis_angle,
    quat_to_axis_angle,
    quat_to_matrix,
    rotvec_to_matrix,
    sixd_to_matrix,
    swing_twist_angles,
    twist_angle,
)

DEFAULT_SWING = np.radians(60.0)  # joint limits of a rig with no data: a cone about the bone...
DEFAULT_TWIST = np.radians(30.0)  # ...and a twist about it
LIMIT_MARGIN = np.radians(5.0)  # data-derived limits: the widest angle seen plus this
MAX_STEP = 0.5  # radians: the largest rotation one IK iteration may give a joint
LIMIT_GIVE = 7.0  # a joint an IK solve took past its limit turns this many times less in the next
LIMIT_ROUNDS = 3  # solves at most, each with the joints past their limits stiffer


@dataclass
class Handle:
    """Joint `joint`'s head should be at `target` (canonical, same frame as the pose); `weight`
    ranks handles against each other (pins of joints that must stay put weigh more)."""

    joint: int
    target: np.ndarray
    weight: float = 1.0


class Skeleton:
    """What pose maths needs of a canonical rig: parents, rest heads and the bones' rest directions
    (twist axes). Built from a `Rig` in the canonical frame, or from arrays (feature caches)."""

    def __init__(self, parents: np.ndarray, heads: np.ndarray, axes: np.ndarray, main_root: int):
        self.parents = np.asarray(parents, dtype=np.int64)
        self.heads = np.asarray(heads, dtype=np.float64)
        self.main_root = int(main_root)
        has_parent = self.parents >= 0
        self.offsets = np.where(
            has_parent[:, None], self.heads - self.heads[np.maximum(self.parents, 0)], 0.0
        )
        axes = np.asarray(axes, dtype=np.float64)
        length = np.linalg.norm(axes, axis=-1, keepdims=True)
        offset_length = np.linalg.norm(self.offsets, axis=-1, keepdims=True)
        axes = np.where(
            length > 1e-9, axes / np.maximum(length, 1e-12), self.offsets / np.maximum(offset_length, 1e-12)
        )
        axes[(length[:, 0] <= 1e-9) & (offset_length[:, 0] <= 1e-9)] = (0.0, 0.0, 1.0)
        self.axes = axes

    @classmethod
    def from_rig(cls, rig: Rig) -> Skeleton:
        return cls(rig.parents, rig.heads, rig.tails - rig.heads, rig.main_root)

    @cached_property
    def depth(self) -> np.ndarray:
        depth = np.zeros(self.joint_count, dtype=np.int64)
        for _ in range(self.joint_count):
            parent_depth = np.where(self.parents >= 0, depth[np.maximum(self.parents, 0)] + 1, 0)
            if np.array_equal(parent_depth, depth):
                break
            depth = parent_depth
        return depth

    @cached_property
    def order(self) -> np.ndarray:
        """Joints, parents before children."""
        return np.argsort(self.depth, kind="stable")

    @cached_property
    def levels(self) -> list[np.ndarray]:
        """Joints grouped by depth, for vectorised kinematics."""
        return [self.order[self.depth[self.order] == d] for d in range(int(self.depth.max()) + 1)]

    @property
    def joint_count(self) -> int:
        return len(self.parents)

    @cached_property
    def paths(self) -> np.ndarray:
        """(J,J) A[j,k] = 1 when bone k (parent(k) → k) lies on the path from a root to j."""
        count = self.joint_count
        paths = np.zeros((count, count))
        for j in range(count):
            k = j
            while self.parents[k] >= 0:
                paths[j, k] = 1.0
                k = self.parents[k]
        return paths

    @cached_property
    def ancestors(self) -> np.ndarray:
        """(J,J) bool: m is a strict ancestor of j (turning m moves j)."""
        out = np.zeros((self.joint_count,) * 2, dtype=bool)
        has_parent = self.parents >= 0
        for j in range(self.joint_count):
            bones = np.flatnonzero(self.paths[j] > 0)
            out[j, self.parents[bones[has_parent[bones]]]] = True
        return out

    @cached_property
    def root_heads(self) -> np.ndarray:
        """(J,3) where each joint's chain starts relative to the main root (roots keep their rest
        offset from it; every other joint inherits its root's)."""
        heads = self.heads
        main = self.main_root
        start = np.zeros((self.joint_count, 3))
        for j in self.order:
            p = self.parents[j]
            start[j] = heads[j] - heads[main] if p < 0 else start[p]
        return start

    def positions(self, deltas: np.ndarray, root: np.ndarray | None = None) -> np.ndarray:
        """(…,J,3) joint heads of poses (…,J,3,3) with the main root at `root` (…,3; default the
        origin)."""
        deltas = np.asarray(deltas, dtype=np.float64)
        parent_deltas = deltas[..., np.maximum(self.parents, 0), :, :]
        bones = np.einsum("...jab,jb->...ja", parent_deltas, self.offsets)
        out = self.root_heads + np.einsum("jk,...kc->...jc", self.paths, bones)
        if root is not None:
            out = out + np.asarray(root, dtype=np.float64)[..., None, :]
        return out

    def local_rotations(self, deltas: np.ndarray) -> np.ndarray:
        """(…,J,3,3) L_j = D_parent⁻¹ · D_j (the root's own delta for roots), in canonical axes."""
        deltas = np.asarray(deltas, dtype=np.float64)
        parent = np.where(
            (self.parents >= 0)[:, None, None],
            deltas[..., np.maximum(self.parents, 0), :, :],
            np.eye(3),
        )
        return np.swapaxes(parent, -1, -2) @ deltas

    def from_local(self, local: np.ndarray) -> np.ndarray:
        """World deltas from local rotations (the inverse of `local_rotations`)."""
        local = np.asarray(local, dtype=np.float64)
        out = np.empty_like(local)
        for level in self.levels:
            parents = self.parents[level]
            rooted = parents < 0
            if rooted.all():
                out[..., level, :, :] = local[..., level, :, :]
                continue
            parent = np.where(rooted[:, None, None], np.eye(3), out[..., np.maximum(parents, 0), :, :])
            out[..., level, :, :] = parent @ local[..., level, :, :]
        return out


@dataclass(frozen=True)
class SolveOptions:
    """The damped least-squares solve of `solve_handles`: at most `iterations` steps, `damping` on
    the normal equations, no joint turning more than `max_step` radians per step."""

    iterations: int = 8
    damping: float = 1e-3
    max_step: float = MAX_STEP


def solve_handles(
    skeleton: Skeleton,
    deltas: np.ndarray,
    handles: list[Handle],
    root: np.ndarray | None = None,
    stiffness: np.ndarray | None = None,
    frozen: np.ndarray | None = None,
    options: SolveOptions | None = None,
) -> np.ndarray:
    """Damped least-squares IK over the whole tree: turn joints (a turn carries the joint's subtree,
    as a rig's own IK does) until each handle's joint reaches its target. `stiffness` (J,) makes
    some joints turn less (1 = normal); `frozen` (J,) bool joints do not turn at all; `options`: the
    solve's steps (`SolveOptions`). Returns the new world deltas (J,3,3); bone lengths are kept by
    construction."""
    options = options or SolveOptions()
    iterations, damping, max_step = options.iterations, options.damping, options.max_step
    deltas = np.array(deltas, dtype=np.float64)
    if not handles:
        return deltas
    count = skeleton.joint_count
    joints = np.array([h.joint for h in handles], dtype=np.int64)
    targets = np.array([np.asarray(h.target, dtype=np.float64) for h in handles])
    weights = np.repeat(np.sqrt(np.array([h.weight for h in handles], dtype=np.float64)), 3)
    inverse_stiffness = np.ones(count) if stiffness is None else 1.0 / np.maximum(np.asarray(stiffness), 1e-6)
    if frozen is not None:
        inverse_stiffness = np.where(frozen, 0.0, inverse_stiffness)
    movable = skeleton.ancestors[joints] & (inverse_stiffness > 0)[None]  # (H,J)
    scale = np.repeat(inverse_stiffness, 3)
    for _ in range(iterations):
        positions = skeleton.positions(deltas, root)
        residual = ((targets - positions[joints]).reshape(-1)) * weights
        if np.abs(residual).max() < 1e-7:
            break
        lever = positions[joints][:, None, :] - positions[None, :, :]  # (H,J,3): p_handle − p_m
        lever = np.where(movable[..., None], lever, 0.0)
        # d p_h / d ω_m = ω × (p_h − p_m) = −[p_h − p_m]× ω
        jac = np.zeros((len(handles), 3, count, 3))
        x, y, z = lever[..., 0], lever[..., 1], lever[..., 2]
        jac[:, 0, :, 1], jac[:, 0, :, 2] = z, -y
        jac[:, 1, :, 0], jac[:, 1, :, 2] = -z, x
        jac[:, 2, :, 0], jac[:, 2, :, 1] = y, -x
        jac = jac.reshape(3 * len(handles), 3 * count) * weights[:, None]
        scaled = jac * scale[None]
        system = scaled @ jac.T + damping * np.eye(len(residual))
        omega = (scaled.T @ np.linalg.solve(system, residual)).reshape(count, 3)
        norm = np.linalg.norm(omega, axis=-1, keepdims=True)
        omega *= np.minimum(1.0, max_step / np.maximum(norm, 1e-12))
        deltas = turn_joints(skeleton, deltas, omega)
    # Gram-Schmidt back onto rotations: products of products drift, and IK is iterated on its output.
    return sixd_to_matrix(matrix_to_6d(deltas))


def solve_within_limits(
    skeleton: Skeleton,
    deltas: np.ndarray,
    handles: list[Handle],
    limits: JointLimits,
    stiffness: np.ndarray | None = None,
    rounds: int = LIMIT_ROUNDS,
    give: float = LIMIT_GIVE,
    **solve,
) -> tuple[np.ndarray, np.ndarray]:
    """`solve_handles` that keeps to joint limits where it can: a joint the solve takes past its
    limit becomes `give`× stiffer and the solve runs again from `deltas` (at most `rounds` solves),
    so the turn moves to joints with room left (stiffness is relative: where every joint that could
    move the handle is past its limit, they share the turn as before). Of the solves, the one least
    past the limits is kept (a stiffer joint can push the turn onto one that then passes its own).
    Returns it and the stiffness the rounds arrived at, for a later solve of the same drag to start
    from. `solve`: the rest of solve_handles' arguments (root, frozen, options)."""
    stiff = np.ones(skeleton.joint_count) if stiffness is None else np.array(stiffness, dtype=np.float64)
    best, best_excess = deltas, np.inf
    for round_ in range(rounds):
        solved = solve_handles(skeleton, deltas, handles, stiffness=stiff, **solve)
        excess = limits.excess(skeleton, solved)
        if excess.sum() < best_excess:
            best, best_excess = solved, excess.sum()
        if not excess.any() or round_ == rounds - 1:
            break
        stiff = np.where(excess > 0.0, stiff * give, stiff)
    return best, stiff


def shrink_turns(skeleton: Skeleton, base: np.ndarray, turned: np.ndarray, angle: float) -> np.ndarray:
    """`turned` (J,3,3) with every joint's local turn away from `base` made `angle` radians smaller
    (a turn smaller than that is dropped): soft-thresholding, which keeps large changes and removes
    small ones that are noise."""
    local = skeleton.local_rotations(base)
    change = skeleton.local_rotations(turned) @ np.swapaxes(local, -1, -2)
    axis, turn = quat_to_axis_angle(matrix_to_quat(change))
    kept = quat_to_matrix(quat_from_axis_angle(axis, np.maximum(turn - angle, 0.0)))
    return skeleton.from_local(kept @ local)


def turn_joints(skeleton: Skeleton, deltas: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """Turn each joint m by the world rotation vector ω_m, carrying its subtree along: a joint's
    whole world turn is its own after its parent's, C_j = T_j · C_parent(j), and D'_j = C_j · D_j."""
    turns = rotvec_to_matrix(omega)
    carried = np.empty_like(turns)
    parents = skeleton.parents
    for level in skeleton.levels:
        p = parents[level]
        rooted = (p < 0)[:, None, None]
        carried[level] = np.where(rooted, turns[level], turns[level] @ carried[np.maximum(p, 0)])
    return carried @ deltas


# ----------------------------------------------------------------------------- joint limits
@dataclass
class JointLimits:
    """Per joint: the widest swing of the bone away from its rest direction relative to its parent,
    and the widest twist about it (radians)."""

    swing: np.ndarray  # (J,)
    twist: np.ndarray  # (J,)

    @classmethod
    def default(cls, skeleton: Skeleton) -> JointLimits:
        count = skeleton.joint_count
        return cls(np.full(count, DEFAULT_SWING), np.full(count, DEFAULT_TWIST))

    @classmethod
    def from_poses(cls, skeleton: Skeleton, deltas: np.ndarray, margin: float = LIMIT_MARGIN) -> JointLimits:
        """The widest angles seen in data poses (N,J,3,3) plus `margin`."""
        swing, twist = pose_angles(skeleton, deltas)
        return cls(
            np.minimum(swing.max(axis=0) + margin, np.pi),
            np.minimum(np.abs(twist).max(axis=0) + margin, np.pi),
        )

    @classmethod
    def from_motion(cls, rig: Rig, motion: Motion, margin: float = LIMIT_MARGIN) -> JointLimits:
        """The ranges a rig's own motion shows (every frame; `from_poses`). Swing and twist do not
        depend on the frame the rig is seen in, so an armature-space rig gives the ranges of its
        canonical form too."""
        return cls.from_poses(Skeleton.from_rig(rig), quat_to_matrix(world_deltas(rig, motion)), margin)

    def violations(self, skeleton: Skeleton, deltas: np.ndarray, tolerance: float = 1e-6) -> np.ndarray:
        """(…,J) bool: the joint swings or twists past its limit."""
        swing, twist = pose_angles(skeleton, deltas)
        return (swing > self.swing + tolerance) | (np.abs(twist) > self.twist + tolerance)

    def clamp(self, skeleton: Skeleton, deltas: np.ndarray) -> np.ndarray:
        """Poses (…,J,3,3) with every joint's swing and twist cut back to its limits (the bone keeps
        its swing direction and its twist sign)."""
        local = skeleton.local_rotations(deltas)
        axes = np.broadcast_to(skeleton.axes, local.shape[:-1])
        twisted = twist_angle(matrix_to_quat(local), axes)
        twist = rotvec_to_matrix(axes * twisted[..., None])
        swing = local @ np.swapaxes(twist, -1, -2)
        turned = np.einsum("...ab,...b->...a", swing, axes)
        swing_axis = np.cross(axes, turned)
        sine = np.linalg.norm(swing_axis, axis=-1, keepdims=True)
        swing_angle = np.arctan2(sine[..., 0], np.sum(axes * turned, axis=-1))
        unit = swing_axis / np.maximum(sine, 1e-12)
        new_swing = rotvec_to_matrix(unit * np.minimum(swing_angle, self.swing)[..., None])
        new_twist = rotvec_to_matrix(axes * np.clip(twisted, -self.twist, self.twist)[..., None])
        inside = (swing_angle <= self.swing) & (np.abs(twisted) <= self.twist)
        clamped = np.where(inside[..., None, None], local, new_swing @ new_twist)
        return skeleton.from_local(clamped)

    def excess(self, skeleton: Skeleton, deltas: np.ndarray) -> np.ndarray:
        """(…,J) radians past the limits (0 inside), swing and twist added."""
        swing, twist = pose_angles(skeleton, deltas)
        return np.maximum(swing - self.swing, 0.0) + np.maximum(np.abs(twist) - self.twist, 0.0)


def pose_angles(skeleton: Skeleton, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Swing and twist (…,J) of every joint relative to its parent."""
    local = skeleton.local_rotations(deltas)
    return swing_twist_angles(local, np.broadcast_to(skeleton.axes, local.shape[:-1]))


def random_valid_poses(
    skeleton: Skeleton, limits: JointLimits, count: int, rng: np.random.Generator, root_tilt: bool = False
) -> np.ndarray:
    """(count,J,3,3) poses with every joint's swing and twist drawn uniformly inside its limits
    (the baseline a prior must beat, and the prior's broad-coverage training poses). Roots keep
    their rest orientation unless `root_tilt`."""
    joints = skeleton.joint_count
    axes = np.broadcast_to(skeleton.axes, (count, joints, 3))
    helper = np.where(np.abs(axes[..., 2:3]) < 0.9, [0.0, 0.0, 1.0], [1.0, 0.0, 0.0])
    u = np.cross(axes, helper)
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    v = np.cross(axes, u)
    phi = rng.uniform(0.0, 2.0 * np.pi, (count, joints, 1))
    swing_axis = np.cos(phi) * u + np.sin(phi) * v
    swing = rng.uniform(0.0, 1.0, (count, joints, 1)) * limits.swing[None, :, None]
    twist = rng.uniform(-1.0, 1.0, (count, joints, 1)) * limits.twist[None, :, None]
    local = rotvec_to_matrix(swing_axis * swing) @ rotvec_to_matrix(axes * twist)
    if not root_tilt:
        local[:, skeleton.parents < 0] = np.eye(3)
    return skeleton.from_local(local)


# ----------------------------------------------------------------------------- plausibility
def normalised_positions(skeleton: Skeleton, deltas: np.ndarray) -> np.ndarray:
    """(…,J·3) joint positions relative to the main root, in body sizes (the canonical rig's
    units): what FSD and the nearest-pose distance compare."""
    positions = skeleton.positions(deltas)
    return positions.reshape(positions.shape[:-2] + (-1,))


def nearest_pose_distance(skeleton: Skeleton, deltas: np.ndarray, data: np.ndarray) -> np.ndarray:
    """(N,) mean joint distance (body sizes) from each pose to its nearest data pose (M,J,3,3)."""
    from scipy.spatial import cKDTree

    joints = skeleton.joint_count
    query = normalised_positions(skeleton, np.asarray(deltas).reshape(-1, joints, 3, 3))
    points = normalised_positions(skeleton, np.asarray(data).reshape(-1, joints, 3, 3))
    _, index = cKDTree(points).query(query)
    ref = points[index]
    return np.linalg.norm((query - ref).reshape(len(query), joints, 3), axis=-1).mean(axis=-1)
