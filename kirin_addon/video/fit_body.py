"""The body the video fit moves (kirin_addon/video/pipeline.py): the rig in its canonical frame with the
branches outside the body hung from the joints they follow, the capsule proxy the silhouettes are
compared with, the joints that stand on the ground and the joint whose turn is the body's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.canonical import CanonicalFrame, CanonicalRig
from ..core.rig import Rig
from ..core.skinning import SkinnedMesh
from ..generate.rig_roles import RoleError, detect_roles, followers_attached, planting_joints


@dataclass(frozen=True)
class FitBody:
    """The canonical rig the fit moves and what the fit needs to know of it (`fit_body`)."""

    rig: Rig  # canonical (+Z up, −Y forward, body size 1), follower branches carried by their joints
    radii: np.ndarray  # (J,) capsule radius per bone in canonical units (0: not drawn)
    feet: np.ndarray  # (F,) int64: the joints that stand on the ground
    tops: tuple[int, ...]  # the tops of the follower branches (foot controls, pole targets)
    trunk: int  # the joint whose turn is the body's

    @property
    def main(self) -> int:
        return self.rig.main_root

    @property
    def rest_heads(self) -> np.ndarray:
        return self.rig.heads

    @property
    def drawn(self) -> np.ndarray:
        """The bones the capsule proxy draws (the deforming ones)."""
        return np.flatnonzero(self.radii > 0)


def fit_body(canon: CanonicalRig, mesh: SkinnedMesh | None, radius_share: float) -> FitBody:
    """The body the fit moves for a rig in its canonical frame (its skinned `mesh` gives the capsules'
    radii; without one they are `radius_share` × the bones' lengths)."""
    carried, tops, feet = _rig_to_move(canon.rig, canon.feet)
    radii = capsule_radii(carried, canon.frame, mesh, radius_share)
    return FitBody(carried, radii, feet, tuple(tops), trunk_joint(carried))


def _rig_to_move(canon_rig: Rig, lowest: np.ndarray) -> tuple[Rig, list[int], np.ndarray]:
    """The canonical rig the fit moves, with each branch outside the body (a foot control on the floor,
    a pole target) hung from the joint it follows (generate/rig_roles.py); those branches' tops; and the
    joints that stand on the ground: each leg's planted joint where the legs are found, else the rig's
    lowest joints (`lowest`). A separate root would otherwise stay at its rest offset from the body (the
    Quaternius animals' hooves hang from such foot controls, and would float beside the legs), and a pole
    target on the floor would stand in for the feet the ground term keeps there."""
    try:
        roles = detect_roles(canon_rig)
    except RoleError:
        return canon_rig, [], lowest
    feet = np.asarray(planting_joints(roles), dtype=np.int64)
    tops = sorted(top for top in roles.followers if top < roles.joint_count)
    return (followers_attached(roles, tips=False) if tops else canon_rig), tops, feet


def trunk_joint(rig: Rig) -> int:
    """The joint whose turn is the body's: the pelvis the gait controllers find, else the main root."""
    try:
        pelvis = detect_roles(rig).pelvis
    except RoleError:
        return rig.main_root
    return pelvis if pelvis < rig.joint_count else rig.main_root


def capsule_radii(rig_c: Rig, frame: CanonicalFrame, mesh: SkinnedMesh | None, share: float) -> np.ndarray:
    """(J,) capsule radius per bone in canonical units (0: not drawn): the median distance to the bone of
    the mesh vertices it dominates, else `share` × its length."""
    lengths = rig_c.lengths
    radii = share * lengths
    if mesh is not None and mesh.vertex_count:
        vertices = frame.to_canonical_points(mesh.vertices)
        weights = np.asarray(mesh.joint_weights, dtype=np.float64)
        owner = np.take_along_axis(mesh.joint_indices, np.argmax(weights, axis=1)[:, None], 1)[:, 0]
        weighted = weights.max(axis=1) > 0
        a, b = rig_c.heads[owner], rig_c.tails[owner]
        ab = b - a
        s = np.clip(np.sum((vertices - a) * ab, -1) / np.maximum(np.sum(ab * ab, -1), 1e-12), 0.0, 1.0)
        distance = np.linalg.norm(vertices - (a + s[:, None] * ab), axis=-1)
        for j in range(rig_c.joint_count):
            mine = distance[(owner == j) & weighted]
            if mine.size >= 4:
                radii[j] = float(np.median(mine))
    radii = np.where(rig_c.deform, radii, 0.0)
    return radii
