"""Rotations and forward kinematics on tensors: the one torch home of what the networks' losses and the
fits need — 6D rotations and rotation vectors as matrices, and the joint positions of world deltas.

The numpy originals are kirin_addon/core/rotations.py (`sixd_to_matrix`, `rotvec_to_matrix`) and
kirin_addon/core/motion.py (`forward_kinematics`); tests/models/test_geometry.py checks these against
them. Callers import the module (`geometry.sixd_to_matrix`) so the torch and numpy names never clash.
"""

from __future__ import annotations

import numpy as np
import torch


def sixd_to_matrix(d6: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """(…,6) → (…,3,3): Gram–Schmidt on the two stored columns, b1, b2 and b3 = b1 × b2 (as
    kirin_addon.core.rotations.sixd_to_matrix). A column's norm is clamped at `eps` (the motion
    losses use 1e-6, everything else 1e-8): any 6-vector gives a proper rotation."""
    a1, a2 = d6[..., :3], d6[..., 3:6]
    b1 = a1 / a1.norm(dim=-1, keepdim=True).clamp(min=eps)
    a2 = a2 - (b1 * a2).sum(-1, keepdim=True) * b1
    b2 = a2 / a2.norm(dim=-1, keepdim=True).clamp(min=eps)
    return torch.stack([b1, b2, torch.cross(b1, b2, dim=-1)], dim=-1)


def rotvec_to_matrix(w: torch.Tensor) -> torch.Tensor:
    """Rodrigues, (…,3) axis × angle → (…,3,3), smooth through zero (a series where the angle is
    tiny, so gradients stay finite at the identity)."""
    theta2 = (w * w).sum(-1)
    small = theta2 < 1e-8
    safe2 = torch.where(small, torch.ones_like(theta2), theta2)
    theta = torch.sqrt(safe2)
    a = torch.where(small, 1.0 - theta2 / 6.0, torch.sin(theta) / theta)
    b = torch.where(small, 0.5 - theta2 / 24.0, (1.0 - torch.cos(theta)) / safe2)
    zero = torch.zeros_like(w[..., 0])
    k = torch.stack([zero, -w[..., 2], w[..., 1], w[..., 2], zero, -w[..., 0],
                     -w[..., 1], w[..., 0], zero], dim=-1).reshape(*w.shape[:-1], 3, 3)
    eye = torch.eye(3, dtype=w.dtype).expand_as(k)
    return eye + a[..., None, None] * k + b[..., None, None] * (k @ k)


def ancestor_paths(parents: np.ndarray) -> np.ndarray:
    """(J,J) A[j,k] = 1 when bone k (parent(k) → k) lies on the path from the root to j.

    With world deltas, forward kinematics is a sum: p_j = p_root + Σ_k A[j,k] · D_parent(k) · o_k,
    o_k the rest offset of k from its parent — one matrix product, so FK losses batch and export.
    """
    count = len(parents)
    paths = np.zeros((count, count), dtype=np.float32)
    for j in range(count):
        k = j
        while parents[k] >= 0:
            paths[j, k] = 1.0
            k = parents[k]
    return paths


def forward_kinematics(deltas: torch.Tensor, parents: torch.Tensor, offsets: torch.Tensor,
                       paths: torch.Tensor) -> torch.Tensor:
    """Σ_k A[j,k] · D_parent(k) · o_k (…,J,3): each joint's head relative to its root's head, for world
    deltas D (…,J,3,3) — add the root's position to get the joint's.

    One rig for every pose: `parents` (J,) (a root its own or any index: its offset is zero),
    `offsets` (J,3) and `paths` (J,J) (`ancestor_paths`). A batch of rigs padded to J joints:
    `parents` (B,J), `offsets` (B,J,3), `paths` (B,J,J), and `deltas` (B,…,J,3,3).
    """
    if parents.dim() == 1:
        parent = deltas[..., parents, :, :]
    else:
        rig_axes = [1] * (deltas.dim() - 4)  # the axes between the batch and the joints (frames)
        index = parents.reshape(parents.shape[0], *rig_axes, parents.shape[1], 1, 1)
        parent = torch.gather(deltas, deltas.dim() - 3, index.expand(deltas.shape))
        for _ in rig_axes:
            offsets, paths = offsets.unsqueeze(1), paths.unsqueeze(1)
    bones = (parent @ offsets[..., None])[..., 0]
    return paths @ bones
