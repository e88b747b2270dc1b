"""The video fit's body in torch (models/video/fitter.py): forward kinematics of canonical world deltas
and the capsule proxy the silhouette terms draw, of the body the pipeline plans
(kirin_addon/video/fit_body.py)."""

from __future__ import annotations

import numpy as np
import torch

from ...kirin_addon.video.fit_body import FitBody
from .. import geometry


class Body:
    """The canonical rig as tensors: FK of world deltas, capsule proxy."""

    def __init__(self, body: FitBody):
        rig, radii, feet = body.rig, body.radii, body.feet
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
        self.trunk = body.trunk

    def positions(self, deltas: torch.Tensor, root: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Heads and tails (…,J,3) of world deltas (…,J,3,3) with the main root at root (…,3)."""
        along = geometry.forward_kinematics(deltas, self.parents, self.offsets, self.paths)
        heads = root[..., None, :] + self.starts + along
        tails = heads + (deltas @ self.bones[..., None])[..., 0]
        return heads, tails


def upright_penalty(rotations: torch.Tensor, free_deg: float) -> torch.Tensor:
    """(…) how far world turns (…,3,3) tip the up axis (+Z) past `free_deg` from the vertical: the
    cosine it lacks, 0 within the free tilt."""
    return torch.relu(float(np.cos(np.radians(free_deg))) - rotations[..., 2, 2])
