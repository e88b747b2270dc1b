"""The video fit's rig in torch (models/video/fit.py): forward kinematics of canonical world deltas
and the capsule proxy the silhouette terms draw."""

from __future__ import annotations

import numpy as np
import torch

from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.skinning import SkinnedMesh
from .. import geometry


class Body:
    """The canonical rig as tensors: FK of world deltas, capsule proxy."""

    def __init__(self, canon_rig: Rig, radii: np.ndarray, feet: np.ndarray):
        rig = canon_rig
        parents = rig.parents
        self.count = rig.joint_count
        self.main = rig.main_root
        heads, tails = rig.heads, rig.tails
        offsets = np.zeros((self.count, 3))
        has_parent = parents >= 0
        offsets[has_parent] = heads[has_parent] - heads[parents[has_parent]]
        root_of = np.arange(self.count)
        for j in rig.topological_order:
            if parents[j] >= 0:
                root_of[j] = root_of[parents[j]]
        t = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float32)  # noqa: E731
        self.parents = torch.as_tensor(np.where(has_parent, parents, np.arange(self.count)), dtype=torch.long)
        self.offsets = t(offsets)
        self.paths = t(geometry.ancestor_paths(parents))
        self.starts = t(heads[root_of] - heads[self.main])
        self.bones = t(tails - heads)
        self.radii = t(radii)
        self.drawn = torch.as_tensor(np.flatnonzero(radii > 0), dtype=torch.long)
        self.feet = torch.as_tensor(np.asarray(feet, dtype=np.int64), dtype=torch.long)
        self.foot_heights = t(heads[np.asarray(feet, dtype=np.int64), 2])
        self.rest_heads = heads
        self.rest_rotations = rig.rest_rotations
        self.trunk = trunk_joint(rig)

    def positions(self, deltas: torch.Tensor, root: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Heads and tails (…,J,3) of world deltas (…,J,3,3) with the main root at root (…,3)."""
        along = geometry.forward_kinematics(deltas, self.parents, self.offsets, self.paths)
        heads = root[..., None, :] + self.starts + along
        tails = heads + (deltas @ self.bones[..., None])[..., 0]
        return heads, tails


def trunk_joint(rig: Rig) -> int:
    """The joint whose turn is the body's: the pelvis the gait controllers find, else the main root."""
    from ...kirin_addon.generate.rig_roles import RoleError, detect_roles

    try:
        pelvis = detect_roles(rig).pelvis
    except RoleError:
        return rig.main_root
    return pelvis if pelvis < rig.joint_count else rig.main_root


def upright_penalty(rotations: torch.Tensor, free_deg: float) -> torch.Tensor:
    """(…) how far world turns (…,3,3) tip the up axis (+Z) past `free_deg` from the vertical: the
    cosine it lacks, 0 within the free tilt."""
    return torch.relu(float(np.cos(np.radians(free_deg))) - rotations[..., 2, 2])


def capsule_radii(rig_c: Rig, frame, mesh: SkinnedMesh | None, share: float) -> np.ndarray:
    """(J,) capsule radius per bone in canonical units (0: not drawn)."""
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
