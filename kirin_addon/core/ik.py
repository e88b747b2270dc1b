"""Inverse kinematics that only ever rotates bones (bone lengths stay exact).

Everything is batched over leading axes (frames, legs) and works on joint *positions* and
world rotation deltas D = R_world · R_rest⁻¹ (see motion.py), so results hold for any bone
roll convention. Two solvers:

* `two_bone` — analytic hip/knee/ankle style IK with a pole (bend-plane) hint; targets out of
  reach are clamped to the nearest reachable point on the same ray.
* `fabrik` — FABRIK for longer chains (3–6 segments: insect and spider legs), finished by an
  exact two-bone solve of its last two segments so reachable targets are met to rounding.

`aim` and `chain_deltas` turn solved positions into world deltas with the least twist from a
reference rotation (usually the rotation the bone would have if it moved rigidly with its parent).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rotations import quat_multiply, quat_rotate, rotation_between

_TINY = 1e-12


def _norm(v: np.ndarray) -> np.ndarray:
    return np.linalg.norm(v, axis=-1, keepdims=True)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(_norm(v), _TINY)


def aim(reference: np.ndarray, rest_vector: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """World delta that points `rest_vector` along `direction`, with the least change from `reference`.

    reference (...,4) is the delta the bone would otherwise have; the result is the shortest-arc
    rotation taking reference·rest_vector onto direction, applied after it.
    """
    current = quat_rotate(reference, np.broadcast_to(rest_vector, np.shape(direction)))
    return quat_multiply(rotation_between(current, direction), reference)


def _perpendicular_hint(axis: np.ndarray, pole: np.ndarray) -> np.ndarray:
    """Unit vector ⟂ axis in the plane of (axis, pole); falls back to any perpendicular."""
    w = pole - np.sum(pole * axis, axis=-1, keepdims=True) * axis
    small = _norm(w)[..., 0] < 1e-9
    if np.any(small):
        helper = np.where(np.abs(axis[..., :1]) < 0.9, [1.0, 0.0, 0.0], [0.0, 0.0, 1.0])
        alt = np.cross(axis, helper)
        w = np.where(small[..., None], alt, w)
    return _unit(w)


@dataclass
class TwoBoneResult:
    mid: np.ndarray  # (...,3) knee position
    end: np.ndarray  # (...,3) reached end position (== target where reachable)
    reached: np.ndarray  # (...,) bool: the target was within [|l1-l2|, l1+l2]


def two_bone(root: np.ndarray, target: np.ndarray, l1: float | np.ndarray, l2: float | np.ndarray,
             pole: np.ndarray) -> TwoBoneResult:
    """Analytic two-bone IK: knee in the plane of (root→target, pole), bending towards the pole."""
    root = np.asarray(root, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    l1 = np.asarray(l1, dtype=np.float64)
    l2 = np.asarray(l2, dtype=np.float64)
    offset = target - root
    dist = _norm(offset)[..., 0]
    lo, hi = np.abs(l1 - l2), l1 + l2
    reached = (dist <= hi * (1 + 1e-12)) & (dist >= lo * (1 - 1e-12))
    d = np.clip(dist, lo, hi)
    d = np.maximum(d, _TINY)
    axis = _unit(np.where(dist[..., None] > _TINY, offset, np.asarray(pole, dtype=np.float64)))
    bend = _perpendicular_hint(axis, np.asarray(pole, dtype=np.float64))
    cos_a = np.clip((l1**2 + d**2 - l2**2) / (2 * l1 * d), -1.0, 1.0)
    sin_a = np.sqrt(1.0 - cos_a**2)
    mid = root + (l1 * cos_a)[..., None] * axis + (l1 * sin_a)[..., None] * bend
    end = root + d[..., None] * axis
    end = np.where(reached[..., None], target, end)
    return TwoBoneResult(mid, end, reached)


def two_bone_deltas(root: np.ndarray, target: np.ndarray, v1: np.ndarray, v2: np.ndarray,
                    pole: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray, TwoBoneResult]:
    """World deltas of the two bones (rest head-to-head vectors v1, v2) reaching `target`.

    The second bone's delta is aimed from the first's, so a rigid child chain keeps its twist.
    """
    v1 = np.asarray(v1, dtype=np.float64)
    v2 = np.asarray(v2, dtype=np.float64)
    result = two_bone(root, target, np.linalg.norm(v1, axis=-1), np.linalg.norm(v2, axis=-1), pole)
    d1 = aim(reference, v1, result.mid - root)
    d2 = aim(d1, v2, result.end - result.mid)
    return d1, d2, result


def fabrik(points: np.ndarray, target: np.ndarray, pole: np.ndarray | None = None, iterations: int = 64,
           tolerance: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """FABRIK on chains (...,n+1,3) starting from `points`; returns (positions, reached).

    Segment lengths are those of `points`. The root stays fixed; the chain is first pushed
    towards `pole` so it bends the intended way; the last two segments are closed analytically,
    so reachable targets are met exactly (to rounding) even when FABRIK converges slowly.
    """
    pts = np.array(points, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    lengths = np.linalg.norm(np.diff(pts, axis=-2), axis=-1)  # (...,n)
    n = lengths.shape[-1]
    root = pts[..., 0, :].copy()
    total = lengths.sum(-1)
    reach = _norm(target - root)[..., 0]
    if pole is not None:
        # Bias the starting pose: inner joints nudged towards the pole (scaled to the chain).
        pole_u = _unit(np.asarray(pole, dtype=np.float64))
        bump = np.sin(np.pi * np.arange(n + 1) / n)[..., :, None] * 0.1 * total[..., None, None]
        pts = pts + bump * pole_u[..., None, :]
    for _ in range(iterations):
        pts[..., -1, :] = target
        for k in range(n - 1, -1, -1):
            back = _unit(pts[..., k, :] - pts[..., k + 1, :])
            pts[..., k, :] = pts[..., k + 1, :] + lengths[..., k, None] * back
        pts[..., 0, :] = root
        for k in range(n):
            ahead = _unit(pts[..., k + 1, :] - pts[..., k, :])
            pts[..., k + 1, :] = pts[..., k, :] + lengths[..., k, None] * ahead
        if np.max(_norm(pts[..., -1, :] - target)) <= tolerance * max(float(np.max(total)), 1.0):
            break
    if n >= 2:
        # Exact closing: re-solve the last two segments from the joint before them.
        hint = pts[..., -2, :] - 0.5 * (pts[..., -3, :] + pts[..., -1, :])
        closing = two_bone(pts[..., -3, :], target, lengths[..., -2], lengths[..., -1], hint)
        pts[..., -2, :] = closing.mid
        pts[..., -1, :] = closing.end
    reached = (reach <= total * (1 + 1e-12)) & (_norm(pts[..., -1, :] - target)[..., 0] <= 1e-9 * total)
    return pts, reached


def chain_deltas(positions: np.ndarray, rest_vectors: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """World deltas (...,n,4) that lay rest head-to-head vectors (n,3) along solved positions (...,n+1,3).

    Each bone is aimed from its parent's solved delta (the first from `reference`), so the
    chain twists as little as possible.
    """
    n = rest_vectors.shape[0]
    out = []
    ref = np.asarray(reference, dtype=np.float64)
    for k in range(n):
        ref = aim(ref, rest_vectors[k], positions[..., k + 1, :] - positions[..., k, :])
        out.append(ref)
    return np.stack(out, axis=-2)


def chain_positions(root: np.ndarray, rest_vectors: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """Forward pass: joint positions (...,n+1,3) of a chain from its root and segment deltas (...,n,4)."""
    steps = quat_rotate(deltas, rest_vectors)
    zero = np.zeros_like(steps[..., :1, :])
    return np.asarray(root)[..., None, :] + np.cumsum(np.concatenate([zero, steps], axis=-2), axis=-2)
