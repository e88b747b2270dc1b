"""Rest-pose augmentation: the same motion on a rig whose rest pose differs (T-pose vs A-pose arms,
legs bent or straight at rest, a tail held up), so the model works on any rig's rest.

World deltas make this exact and cheap. If joint j's rest orientation changes by a world rotation
A_j (R'_rest = A_j · R_rest) while the motion's world orientations stay, then D'_j = D_j · A_jᵀ;
positions, velocities and contacts do not change, and the rest bones rotate: a child's head moves
with its parent's change, h'_k = h'_p + A_p (h_k − h_p). Bone roll needs no augmentation: world
deltas do not see it.
"""

from __future__ import annotations

import numpy as np

from ...kirin_addon.core.rotations import matrix_to_6d, quat_from_axis_angle, quat_to_matrix, sixd_to_matrix
from ...kirin_addon.generate.features import ROT

# Columns of rig_features.joint_geometry recomputed here (the rest are topology and flags).
HEAD, OFFSET, DIRECTION, DEPTH, HEIGHT, OFFSET_NORM = slice(0, 3), slice(3, 6), slice(6, 9), 10, 16, 17


def random_rest_change(
    parents: np.ndarray,
    depth: np.ndarray,
    rng: np.random.Generator,
    probability: float = 0.15,
    max_angle: float = 0.6,
) -> np.ndarray:
    """(J,3,3) world rest changes A_j: a few joints turn by a random angle about a random axis and
    carry their descendants with them (composed parent first)."""
    count = len(parents)
    local = np.tile(np.eye(3), (count, 1, 1))
    chosen = np.flatnonzero((rng.random(count) < probability) & (parents != np.arange(count)))
    if chosen.size:
        axis = rng.normal(size=(chosen.size, 3))
        angle = rng.uniform(-max_angle, max_angle, size=chosen.size)
        local[chosen] = quat_to_matrix(
            quat_from_axis_angle(axis / np.linalg.norm(axis, axis=-1, keepdims=True), angle)
        )
    world = np.empty_like(local)
    for j in np.argsort(depth, kind="stable"):
        p = parents[j]
        world[j] = local[j] if p == j else local[j] @ world[p]
    return world


def apply_rest_change(
    features: np.ndarray, geometry: np.ndarray, parents: np.ndarray, change: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Denormalised features (T,J,C), joint geometry (J,G) and `parents` (own index for roots) under
    rest changes (J,3,3). Returns the new features, geometry and rest offsets from the parents."""
    count = len(parents)
    heads = geometry[:, HEAD].astype(np.float64)
    direction = geometry[:, DIRECTION].astype(np.float64)
    order = np.argsort(geometry[:, DEPTH], kind="stable")
    new_heads = heads.copy()
    for j in order:
        p = parents[j]
        if p != j:
            new_heads[j] = new_heads[p] + change[p] @ (heads[j] - heads[p])
    new_direction = np.einsum("jab,jb->ja", change, direction)
    offsets = np.where((parents != np.arange(count))[:, None], new_heads - new_heads[parents], 0.0)
    out_geometry = geometry.copy()
    out_geometry[:, HEAD] = new_heads
    out_geometry[:, OFFSET] = offsets
    out_geometry[:, DIRECTION] = new_direction
    out_geometry[:, HEIGHT] = new_heads[:, 2] - new_heads[:, 2].min()
    out_geometry[:, OFFSET_NORM] = np.linalg.norm(offsets, axis=-1)
    out = features.copy()
    matrix = sixd_to_matrix(out[..., ROT])
    out[..., ROT] = matrix_to_6d(matrix @ np.swapaxes(change, -1, -2)[None])  # D' = D · Aᵀ
    return out, out_geometry.astype(np.float32), offsets.astype(np.float32)
