"""Skin weight formats: dense (V, J) weights and Blender's (V, K) joint indices / weights, and
limiting a vertex's influences (numpy only).

Weights are dense (V, J) arrays in rig joint order; `to_sparse` / `to_dense` convert to and from the
(V, K) joint_indices / joint_weights of `skinning.SkinnedMesh`.
"""

from __future__ import annotations

import numpy as np


def to_dense(joint_indices: np.ndarray, joint_weights: np.ndarray, joints: int) -> np.ndarray:
    """(V, K) joint indices and weights → (V, J) dense weights; repeated joints add up.

    Slots with zero weight may hold any index (Blender pads with 0); a weighted slot whose index is
    outside 0..joints-1 raises ValueError.
    """
    indices = np.asarray(joint_indices)
    weights = np.asarray(joint_weights, dtype=np.float64)
    if indices.shape != weights.shape or indices.ndim != 2:
        raise ValueError(f"joint_indices and joint_weights must both be (vertices, K), "
                         f"got {indices.shape} and {weights.shape}.")
    if not np.issubdtype(indices.dtype, np.integer) and indices.size:
        raise ValueError("joint_indices must be integers.")
    indices = indices.astype(np.int64)
    used = weights != 0.0
    if np.any(used & ((indices < 0) | (indices >= joints))):
        raise ValueError(f"A weighted joint index is outside 0..{joints - 1}.")
    dense = np.zeros((indices.shape[0], int(joints)))
    rows = np.broadcast_to(np.arange(indices.shape[0])[:, None], indices.shape)
    np.add.at(dense, (rows[used], indices[used]), weights[used])
    return dense


def limit_influences(weights: np.ndarray, max_influences: int) -> np.ndarray:
    """Clip negatives, keep the `max_influences` largest per row (0: all), renormalise rows to 1.

    Rows with nothing left stay zero. Floating inputs keep their dtype.
    """
    array = np.asarray(weights)
    dtype = array.dtype if np.issubdtype(array.dtype, np.floating) else np.float64
    out = np.clip(array.astype(np.float64, copy=True), 0.0, None)
    if out.ndim != 2:
        raise ValueError(f"weights must be (vertices, joints), got {out.shape}.")
    if max_influences < 0:
        raise ValueError(f"max_influences must be >= 0, got {max_influences}.")
    limit_rows_inplace(out, max_influences)
    return normalise_rows(out).astype(dtype, copy=False)


def to_sparse(weights: np.ndarray, max_influences: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """(V, J) dense → (V, K) int64 joint indices and float64 weights, largest first, rows sum to 1.

    K is `max_influences`, or the largest count of non-zero weights in a row when it is 0; empty
    slots hold joint 0 with weight 0 (as Blender pads).
    """
    limited = limit_influences(np.asarray(weights, dtype=np.float64), max_influences)
    count = int(max((limited > 0).sum(axis=1).max(initial=0), 1)) if max_influences == 0 else max_influences
    count = min(count, limited.shape[1]) if limited.shape[1] else 0
    order = np.argsort(-limited, axis=1, kind="stable")[:, :count]
    values = np.take_along_axis(limited, order, axis=1)
    indices = np.where(values > 0, order, 0).astype(np.int64)
    if count < max_influences:  # fewer joints than slots: pad to the K asked for
        pad = max_influences - count
        indices = np.pad(indices, ((0, 0), (0, pad)))
        values = np.pad(values, ((0, 0), (0, pad)))
    return indices, values


def finish_weights(dense: np.ndarray, max_influences: int) -> np.ndarray:
    """Clip, limit and renormalise in place on the (V, J) float32 array (no float64 copy of it)."""
    np.clip(dense, 0.0, None, out=dense)
    limit_rows_inplace(dense, max_influences)
    total = dense.sum(axis=1, dtype=np.float64, keepdims=True)
    np.divide(dense, total, out=dense, where=total > 0)
    return dense


def limit_rows_inplace(weights: np.ndarray, max_influences: int) -> None:
    """Zero all but the largest `max_influences` entries of each row that has more (argpartition)."""
    if max_influences <= 0 or weights.shape[1] <= max_influences:
        return
    rows = np.flatnonzero((weights > 0).sum(axis=1) > max_influences)
    if rows.size == 0:
        return
    block = weights[rows]
    drop = np.argpartition(-block, max_influences - 1, axis=1)[:, max_influences:]
    np.put_along_axis(block, drop, 0.0, axis=1)
    weights[rows] = block


def normalise_rows(weights: np.ndarray) -> np.ndarray:
    total = weights.sum(axis=1, keepdims=True)
    return np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)
