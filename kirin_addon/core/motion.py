"""The motion model and its rig-independent world-delta form (docs/ARCHITECTURE.md, the data model).

`Motion.rotations[t, j]` is joint j's local rotation relative to its rest pose — exactly
Blender's `pose_bone.matrix_basis` rotation. `Motion.root_positions[t]` is the armature-space
head position of the rig's main root; other roots move by the same offset from rest.
`Motion.translations[t, j]` (optional) is Blender's `pose_bone.location` of the other joints, in
the bone's own rest frame: authored clips often move the hips below a ground root bone. The main
root's own entry is ignored (root_positions says where it is). Generated motions leave it None.

Forward kinematics: P_j = P_parent · restlocal_j · basis_j.
World deltas: D_j = R_world_j · R_rest_j⁻¹. The inverse-bind correction turns deltas back into
a basis for any rig: basis_j = restlocal_j⁻¹ · P_parent⁻¹ · P_j.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rig import Rig
from .rotations import (
    matrix_to_quat,
    quat_angle,
    quat_conjugate,
    quat_continuity,
    quat_identity,
    quat_multiply,
    quat_normalize,
    quat_positive_w,
    quat_slerp,
    quat_to_matrix,
)


class MotionError(ValueError):
    """A motion that does not fit its rig; the message is user-facing."""


@dataclass
class Motion:
    fps: float
    root_positions: np.ndarray  # (T,3) armature space
    rotations: np.ndarray  # (T,J,4) local basis quaternions (w,x,y,z)
    translations: np.ndarray | None = None  # (T,J,3) local basis locations, or None (all zero)

    def __post_init__(self) -> None:
        self.root_positions = np.asarray(self.root_positions, dtype=np.float64)
        self.rotations = quat_normalize(self.rotations)
        if self.rotations.ndim != 3 or self.rotations.shape[-1] != 4:
            raise MotionError(f"rotations must be (frames, joints, 4), got {self.rotations.shape}")
        if self.root_positions.shape != (self.rotations.shape[0], 3):
            raise MotionError("root_positions must be (frames, 3) with one row per frame")
        if self.translations is not None:
            self.translations = np.asarray(self.translations, dtype=np.float64)
            if self.translations.shape != self.rotations.shape[:2] + (3,):
                raise MotionError("translations must be (frames, joints, 3) like rotations")
        if not self.fps > 0:
            raise MotionError("fps must be positive")

    @property
    def has_translations(self) -> bool:
        return self.translations is not None and bool(np.any(self.translations != 0.0))

    @property
    def frame_count(self) -> int:
        return self.rotations.shape[0]

    @property
    def joint_count(self) -> int:
        return self.rotations.shape[1]

    @property
    def duration(self) -> float:
        return (self.frame_count - 1) / self.fps

    @classmethod
    def rest(cls, rig: Rig, frames: int = 1, fps: float = 30.0) -> Motion:
        root = np.repeat(rig.heads[rig.main_root][None], frames, axis=0)
        return cls(fps, root, quat_identity((frames, rig.joint_count)))

    def check_rig(self, rig: Rig) -> None:
        if self.joint_count != rig.joint_count:
            raise MotionError(f"The motion has {self.joint_count} joints but the rig has {rig.joint_count}.")

    def continuous(self) -> Motion:
        """Same motion with quaternion signs made continuous over time (clean F-curves)."""
        return Motion(self.fps, self.root_positions.copy(), quat_continuity(self.rotations, axis=0),
                      None if self.translations is None else self.translations.copy())

    def resampled(self, fps: float) -> Motion:
        """Resample to a new frame rate (slerp for rotations, linear for the root)."""
        if abs(fps - self.fps) < 1e-9 or self.frame_count < 2:
            return Motion(fps, self.root_positions.copy(), self.rotations.copy(),
                          None if self.translations is None else self.translations.copy())
        times = np.arange(0.0, self.duration + 1e-9, 1.0 / fps) * self.fps
        return self.at_frames(times, fps)

    def at_frames(self, positions: np.ndarray, fps: float) -> Motion:
        """The motion at fractional frames `positions` (within 0 … frame_count − 1; at least two
        frames), as a motion at `fps`: slerp for rotations, linear for the root and local moves."""
        lo = np.minimum(np.floor(positions).astype(np.int64), self.frame_count - 2)
        frac = positions - lo
        weights = np.repeat(frac[:, None], self.joint_count, 1)
        rot = quat_slerp(self.rotations[lo], self.rotations[lo + 1], weights)
        root = self.root_positions[lo] * (1 - frac[:, None]) + self.root_positions[lo + 1] * frac[:, None]
        moved = None
        if self.translations is not None:
            f = frac[:, None, None]
            moved = self.translations[lo] * (1 - f) + self.translations[lo + 1] * f
        return Motion(fps, root, rot, moved)

    def transformed(self, matrix: np.ndarray) -> Motion:
        """The motion of the rig moved by the similarity `matrix` (rotation × uniform scale +
        translation, as `Rig.transformed`): the root path moved, local moves scaled, local rotations
        unchanged."""
        scale = float(np.cbrt(np.linalg.det(matrix[:3, :3])))
        root = self.root_positions @ matrix[:3, :3].T + matrix[:3, 3]
        moved = None if self.translations is None else self.translations * scale
        return Motion(self.fps, root, self.rotations, moved)

    def sliced(self, start: int, stop: int) -> Motion:
        moved = None if self.translations is None else self.translations[start:stop].copy()
        root = self.root_positions[start:stop].copy()
        return Motion(self.fps, root, self.rotations[start:stop].copy(), moved)


def forward_kinematics(rig: Rig, motion: Motion) -> np.ndarray:
    """(T,J,4,4) armature-space pose matrices."""
    motion.check_rig(rig)
    frames = motion.frame_count
    basis = np.zeros((frames, rig.joint_count, 4, 4))
    basis[..., :3, :3] = quat_to_matrix(motion.rotations)
    basis[..., 3, 3] = 1.0
    if motion.translations is not None:
        basis[..., :3, 3] = motion.translations
        basis[:, rig.main_root, :3, 3] = 0.0
    pose = np.empty_like(basis)
    local = rig.rest_local
    for level in rig.levels:
        parents = rig.parents[level]
        is_root = parents < 0
        child = level[~is_root]
        if child.size:
            pose[:, child] = pose[:, parents[~is_root]] @ local[child] @ basis[:, child]
        roots = level[is_root]
        if roots.size:
            root_pose = rig.rest[roots] @ basis[:, roots]
            offset = motion.root_positions - rig.heads[rig.main_root]
            root_pose[..., :3, 3] += offset[:, None]
            pose[:, roots] = root_pose
    return pose


def joint_positions(rig: Rig, motion: Motion) -> np.ndarray:
    return forward_kinematics(rig, motion)[..., :3, 3]


def root_basis_location(rig: Rig, motion: Motion) -> np.ndarray:
    """(T,R,3) Blender pose-bone `location` of each root, in the bone's own rest frame."""
    roots = rig.roots
    offset = motion.root_positions - rig.heads[rig.main_root]
    rest_rot = rig.rest[roots, :3, :3]  # (R,3,3)
    location = np.einsum("rji,tj->tri", rest_rot, offset)
    if motion.translations is not None:
        own = motion.translations[:, roots].copy()
        own[:, roots == rig.main_root] = 0.0
        location += own
    return location


def world_deltas(rig: Rig, motion: Motion) -> np.ndarray:
    """(T,J,4) D_j = R_world_j · R_rest_j⁻¹, independent of bone roll and axis conventions."""
    pose = forward_kinematics(rig, motion)
    deltas = pose[..., :3, :3] @ np.swapaxes(rig.rest_rotations, -1, -2)[None]
    return quat_continuity(matrix_to_quat(deltas), axis=0)


def motion_from_world_transforms(rig: Rig, world: np.ndarray, fps: float, tolerance: float = 1e-9) -> Motion:
    """Motion that reproduces armature-space joint transforms (T,J,4,4) exactly: rotations by the
    inverse-bind correction, and `translations` wherever a joint's head is not where its parent
    puts it (kept None when every offset is below `tolerance` × body size)."""
    world = np.asarray(world, dtype=np.float64)
    rotation = world[..., :3, :3]
    positions = world[..., :3, 3]
    deltas = matrix_to_quat(rotation @ np.swapaxes(rig.rest_rotations, -1, -2)[None])
    motion = motion_from_world_deltas(rig, deltas, positions[:, rig.main_root], fps)
    moved = np.zeros(positions.shape)
    has_parent = rig.parents >= 0
    child, parent = np.flatnonzero(has_parent), rig.parents[has_parent]
    local = rig.rest_local[child]
    frame = rotation[:, parent] @ local[:, :3, :3]  # the child's rest frame under the posed parent
    expected = positions[:, parent] + np.einsum("tjab,jb->tja", rotation[:, parent], local[:, :3, 3])
    moved[:, child] = np.einsum("tjba,tjb->tja", frame, positions[:, child] - expected)
    roots = rig.roots
    offset = positions[:, rig.main_root] - rig.heads[rig.main_root]
    expected_roots = rig.heads[roots][None] + offset[:, None]
    moved[:, roots] = np.einsum("jba,tjb->tja", rig.rest[roots, :3, :3], positions[:, roots] - expected_roots)
    moved[:, rig.main_root] = 0.0
    if np.max(np.abs(moved), initial=0.0) <= tolerance * max(rig.body_size, 1e-12):
        return motion
    return Motion(fps, motion.root_positions, motion.rotations, moved)


def motion_from_world_deltas(rig: Rig, deltas: np.ndarray, root_positions: np.ndarray, fps: float) -> Motion:
    """Inverse-bind correction: local basis rotations that reproduce the given world deltas."""
    deltas = np.asarray(deltas, dtype=np.float64)
    if deltas.shape[1] != rig.joint_count:
        raise MotionError(f"World deltas have {deltas.shape[1]} joints but the rig has {rig.joint_count}.")
    world = quat_to_matrix(deltas) @ rig.rest_rotations[None]
    parent_world = np.empty_like(world)
    has_parent = rig.parents >= 0
    parent_world[:, has_parent] = world[:, rig.parents[has_parent]]
    parent_world[:, ~has_parent] = np.eye(3)
    local_rest_t = np.swapaxes(rig.rest_local[:, :3, :3], -1, -2)
    basis = local_rest_t[None] @ np.swapaxes(parent_world, -1, -2) @ world
    rotations = quat_continuity(matrix_to_quat(basis), axis=0)
    return Motion(fps, np.asarray(root_positions, dtype=np.float64), rotations)


def transform_world_deltas(deltas: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Express world deltas in a rotated frame: D' = R · D · Rᵀ."""
    q = matrix_to_quat(rotation)
    return quat_multiply(quat_multiply(q, deltas), quat_conjugate(q))


def pin_frames(
    motion: Motion, keep: Motion, kept: np.ndarray, joints: np.ndarray | None = None
) -> tuple[Motion, dict]:
    """The motion (same rig and length as `keep`) with the `kept` frames exactly as in `keep`, and
    how far they had to move ({"root", "degrees"}). In-betweening blends keys in but brings them
    back only approximately (the root path is integrated, the clean-up moves legs); the difference
    at each kept frame is spread linearly (slerp for rotations) to the neighbouring kept frames, so
    nothing jumps. With `joints`, only those joints' rotations are pinned (the root path is not)."""
    frames = np.unique(np.asarray(kept, dtype=np.int64))
    count = motion.frame_count
    t = np.arange(count)
    right = np.clip(np.searchsorted(frames, t), 0, len(frames) - 1)
    left = np.clip(np.searchsorted(frames, t, side="right") - 1, 0, len(frames) - 1)
    span = (frames[right] - frames[left]).astype(np.float64)
    w = np.where(span > 0, (t - frames[left]) / np.where(span > 0, span, 1.0), 0.0)

    def spread(at_keys: np.ndarray) -> np.ndarray:  # (K,...) → (T,...) linearly between keys
        shape = (-1,) + (1,) * (at_keys.ndim - 1)
        return at_keys[left] * (1 - w).reshape(shape) + at_keys[right] * w.reshape(shape)

    offsets = keep.root_positions[frames] - motion.root_positions[frames]
    if joints is not None:
        offsets = np.zeros_like(offsets)
    root = motion.root_positions + spread(offsets)
    deltas = quat_multiply(keep.rotations[frames], quat_conjugate(motion.rotations[frames]))
    deltas = quat_positive_w(deltas)
    if joints is not None:
        others = np.setdiff1d(np.arange(motion.joint_count), np.asarray(joints, dtype=np.int64))
        deltas[:, others] = quat_identity()
    weights = np.broadcast_to(w[:, None], deltas[left].shape[:-1])
    between = quat_slerp(deltas[left], deltas[right], weights)
    rotations = quat_multiply(between, motion.rotations)
    moved = motion.translations
    if motion.translations is not None or keep.translations is not None:
        ours = np.zeros(motion.rotations.shape[:2] + (3,)) if moved is None else moved
        theirs = np.zeros_like(ours) if keep.translations is None else keep.translations
        moved = ours + spread(theirs[frames] - ours[frames])
    change = {"root": float(np.linalg.norm(offsets, axis=-1).max()),
              "degrees": float(np.degrees(quat_angle(deltas)).max())}
    return Motion(motion.fps, root, rotations, moved), change
