"""Per-vertex, per-bone features for Auto-Bind's learned weights (numpy only).

The learned weights (models/bind/weight_net.py) re-weigh, for each vertex, a few candidate bones: the
ones the classical weight sets give it (bone heat on the mesh, the fitted template's transferred
weights, and their blend) and the nearest ones by distance. For each vertex and candidate the
features say how that bone relates to the vertex — the weight each classical set gives it, the
distance to the bone against the nearest bone's, where along the bone the vertex lies, whether the
surface faces the bone, the bone's length and place in the tree — so one small network, scoring
every pair alike, serves rigs of any size and naming.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.rig import Rig
from .heat_weights import segment_distances
from .mesh_geometry import vertex_normals

CANDIDATES = 8  # bones scored per vertex
BY_WEIGHT = 5  # of those, the ones the classical sets weigh most; the rest are the nearest others
WEIGHT_FLOOR = 1e-3  # log(w + floor): the classical weights as features
WEIGHT_SETS = ("heat", "blend", "transfer")  # the classical sets, in feature order
FEATURES = 19


@dataclass
class WeightFeatures:
    candidates: np.ndarray  # (V, K) int64 joint indices
    valid: np.ndarray  # (V, K) bool: a deform bone (a rig with fewer than K leaves some slots empty)
    features: np.ndarray  # (V, K, FEATURES) float32

    def dense(self, scores: np.ndarray, joints: int) -> np.ndarray:
        """(V, J) weights from the network's (V, K) softmax scores over the candidates."""
        out = np.zeros((len(scores), joints))
        rows = np.broadcast_to(np.arange(len(scores))[:, None], scores.shape)
        np.add.at(out, (rows, self.candidates), np.where(self.valid, scores, 0.0))
        return out


def _candidates(classical: np.ndarray, distance: np.ndarray, deform: np.ndarray) -> np.ndarray:
    """(V, K) the bones the classical sets weigh most (by weight, ties by distance), then the nearest
    others; bones that do not deform come last."""
    near = np.where(deform[None], distance, np.finfo(np.float64).max)
    weight = np.where(deform[None], classical, -1.0)
    count = min(BY_WEIGHT, classical.shape[1])
    first = np.lexsort((near, -weight), axis=-1)[:, :count]
    key = near.copy()
    order = np.arange(-count, 0, dtype=np.float64)[None]
    np.put_along_axis(key, first, order, axis=1)  # they stay first, in their order
    return np.argsort(key, axis=1, kind="stable")[:, :min(CANDIDATES, classical.shape[1])]


def weight_features(vertices: np.ndarray, triangles: np.ndarray, rig: Rig,
                    classical: dict[str, np.ndarray]) -> WeightFeatures:
    """The candidates and features of every vertex for the rig's deform bones (head → tail at rest);
    `classical` holds the (V, J) weight sets of WEIGHT_SETS, in the rig's joint order."""
    vertices = np.asarray(vertices, dtype=np.float64)
    heads, tails, parents, deform = rig.heads, rig.tails, rig.parents, rig.deform
    diagonal = max(float(np.linalg.norm(np.ptp(vertices, axis=0))), 1e-12)
    normals = vertex_normals(vertices, triangles)
    distance, cosine = segment_distances(vertices, heads, tails, normals)
    sets = [np.asarray(classical[name], dtype=np.float64) for name in WEIGHT_SETS]
    candidates = _candidates(sum(sets), distance, deform)
    rows = np.arange(len(vertices))[:, None]
    valid = deform[candidates] & (np.arange(candidates.shape[1]) < deform.sum())[None]

    axis = tails - heads
    length = np.linalg.norm(axis, axis=1)
    along = np.einsum("vkc,vkc->vk", vertices[:, None] - heads[candidates], axis[candidates])
    t = along / np.maximum(length[candidates] ** 2, 1e-300)
    nearest = np.where(deform[None], distance, np.inf).min(axis=1, keepdims=True)
    d = distance[rows, candidates]
    children, depth = np.array([len(c) for c in rig.children]), rig.depth
    near_bone = candidates[:, :1]  # the most weighted bone (first by weight)
    is_parent = (parents[near_bone] == candidates).astype(float)
    is_child = (parents[candidates] == near_bone).astype(float)
    rank = np.argsort(np.argsort(d, axis=1), axis=1) / max(candidates.shape[1] - 1, 1)

    columns = [np.log(s[rows, candidates] + WEIGHT_FLOOR) for s in sets]
    columns += [
        np.log(d / diagonal + 1e-4),
        np.log((d + 1e-4 * diagonal) / (nearest + 1e-4 * diagonal)),
        np.clip(t, -1.0, 2.0),
        np.clip(t, 0.0, 1.0) * (1.0 - np.clip(t, 0.0, 1.0)) * 4.0,  # 1 mid-bone, 0 at the ends
        cosine[rows, candidates],
        np.log(length[candidates] / diagonal + 1e-4),
        np.minimum(children[candidates], 3) / 3.0,
        (children[candidates] == 0).astype(float),
        np.minimum(depth[candidates], 12) / 12.0,
        is_parent,
        is_child,
        (candidates == near_bone).astype(float),
        rank,
        np.broadcast_to(np.log(nearest / diagonal + 1e-4), d.shape),
        np.broadcast_to((sets[0] > 0).sum(axis=1, keepdims=True) / 4.0, d.shape),
        np.log(np.abs(sets[0][rows, candidates] - sets[2][rows, candidates]) + WEIGHT_FLOOR),
    ]
    features = np.stack(columns, axis=-1).astype(np.float32)
    features[~valid] = 0.0
    return WeightFeatures(candidates.astype(np.int64), valid, features)
