"""The best pose of a skeleton for given skin weights: the rigid bone moves that reproduce a deformed
mesh best under those weights (numpy only).

This is the weights-alone measure of Auto-Bind (benchmarks/bench_autobind.py, issue 20): each weight
set of the fitted skeleton is posed to reproduce the artist's own deformation as well as it can, so
what is left is the weights' error (and the fitted bones' layout), with no joint mapping and no
retarget. The learned weights' training data (tools/bind_weight_data.py) starts from the same pose.

- `segment_moves`: each bone's rigid move fitted (Kabsch) to the mesh around it, its nearest vertices;
  a bone without a well-spread set moves with its parent.
- `best_moves`: from there, block coordinate descent, one bone at a time with the others fixed (the
  bone update of SSDR, Le & Deng 2012).
"""

from __future__ import annotations

import numpy as np

from ..core.rig import Rig
from .heat_weights import segment_distances

MIN_RIGID_VERTICES = 6  # distinct vertices near a bone below this: it starts from its parent's move
PRIOR_PULL = 1e-6  # × the points' spread: how faintly a bone's update is pulled to its last rotation
SWEEPS = 4  # passes over the bones


def nearest_bone(vertices: np.ndarray, rig: Rig) -> np.ndarray:
    """(V,) the bone whose rest segment (head → tail) is nearest to each vertex."""
    return np.argmin(segment_distances(vertices, rig.heads, rig.tails)[0], axis=1)


def rigid_fit(rest: np.ndarray, moved: np.ndarray, weights: np.ndarray | None = None,
              prior: np.ndarray | None = None) -> np.ndarray:
    """(T,4,4) weighted least-squares rigid transforms (Kabsch) taking rest (N,3) to `moved`.

    With `weights` w (N,), `moved` holds w·y rather than y (T,N,3) and the fit minimises
    Σ w²·|R x + t − y|² without ever dividing by a small w. `prior` (T,4,4): a faint pull towards
    these rotations, which only decides where the points leave the rotation open (a collinear set)."""
    w = np.ones(len(rest)) if weights is None else weights
    wy = moved if weights is not None else moved * w[None, :, None]
    a = w * w
    rest_c = (a[:, None] * rest).sum(0) / a.sum()
    moved_c = np.einsum("n,tnk->tk", w, wy) / a.sum()
    cov = np.einsum("ni,tnj->tij", w[:, None] * (rest - rest_c), wy - w[None, :, None] * moved_c[:, None])
    if prior is not None:  # maximise tr(R·cov) + λ·tr(R·R0ᵀ)
        spread = float((a[:, None] * (rest - rest_c) ** 2).sum())
        cov = cov + PRIOR_PULL * max(spread, 1e-300) * np.swapaxes(prior[:, :3, :3], -1, -2)
    u, _, vt = np.linalg.svd(cov)
    flip = np.sign(np.linalg.det(np.swapaxes(vt, -1, -2) @ np.swapaxes(u, -1, -2)))
    vt[:, 2] *= np.where(flip == 0, 1.0, flip)[:, None]  # a proper rotation, never a reflection
    rotation = np.swapaxes(vt, -1, -2) @ np.swapaxes(u, -1, -2)
    out = np.tile(np.eye(4), (len(wy), 1, 1))
    out[:, :3, :3] = rotation
    out[:, :3, 3] = moved_c - rest_c @ np.swapaxes(rotation, -1, -2)
    return out


def well_spread(points: np.ndarray) -> bool:
    """Enough distinct, non-collinear points to fix a rotation (seam duplicates count once)."""
    if len(np.unique(np.round(points, 9), axis=0)) < MIN_RIGID_VERTICES:
        return False
    spread = np.linalg.svd(points - points.mean(0), compute_uv=False)
    return bool(spread[1] > 1e-3 * spread[0])


def segment_moves(vertices: np.ndarray, deformed: np.ndarray, rig: Rig, owner: np.ndarray) -> np.ndarray:
    """(T,J,4,4) each bone's rigid move from `vertices` (V,3) to `deformed` (T,V,3), fitted to the
    vertices it owns (`owner`, e.g. `nearest_bone`); a bone without a well-spread set moves with its
    parent (a root: with the whole mesh)."""
    moves = np.empty((len(deformed), rig.joint_count, 4, 4))
    for j in rig.topological_order:  # parents first
        members = np.flatnonzero(owner == j)
        if well_spread(vertices[members]):
            moves[:, j] = rigid_fit(vertices[members], deformed[:, members])
        elif rig.parents[j] >= 0:
            moves[:, j] = moves[:, rig.parents[j]]
        else:
            moves[:, j] = rigid_fit(vertices, deformed)
    return moves


def best_moves(vertices: np.ndarray, deformed: np.ndarray, weights: np.ndarray, moves: np.ndarray,
               sweeps: int = SWEEPS) -> np.ndarray:
    """(T,J,4,4) rigid bone moves that fit `deformed` best under the dense (V,J) `weights`, starting
    from `moves`. Every weight set gets its own best pose of the skeleton."""
    homogeneous = np.concatenate([vertices, np.ones((len(vertices), 1))], axis=1)
    moves = moves.copy()
    bones = {int(j): np.flatnonzero(weights[:, j] > 0) for j in np.flatnonzero(weights.any(axis=0))}

    def moved(j: int) -> np.ndarray:  # (T,n,3) bone j's move of its own vertices
        return np.einsum("tab,vb->tva", moves[:, j, :3, :], homogeneous[bones[j]])

    blend = np.zeros(deformed.shape)
    for j, rows in bones.items():
        blend[:, rows] += weights[rows, j][None, :, None] * moved(j)
    for _ in range(sweeps):
        for j, rows in bones.items():
            w = weights[rows, j][None, :, None]
            others = blend[:, rows] - w * moved(j)
            target = deformed[:, rows] - others
            moves[:, j] = rigid_fit(vertices[rows], target, w[0, :, 0], prior=moves[:, j])
            blend[:, rows] = others + w * moved(j)
    return moves
