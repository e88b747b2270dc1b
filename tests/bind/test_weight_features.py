"""The learned weights' per-vertex features (kirin_addon/bind/weight_features.py; numpy only)."""

from __future__ import annotations

import numpy as np

from kirin.kirin_addon.bind.weight_features import CANDIDATES, FEATURES, WEIGHT_SETS, weight_features
from kirin.kirin_addon.core.rig import Rig


def rig_of(heads, tails, parents, deform) -> Rig:
    rest = np.tile(np.eye(4), (len(heads), 1, 1))
    rest[:, :3, 3] = heads
    return Rig([f"b{j}" for j in range(len(heads))], parents, rest, tails, deform)


def chain(bones: int = 12):
    """A tube along x around a chain of `bones` unit bones, and one-hot weights on the nearest bone."""
    ring = np.linspace(0.0, 2.0 * np.pi, 8, endpoint=False)
    xs = np.linspace(0.05, bones - 0.05, 4 * bones)  # no vertex equally far from two bones
    vertices = np.array([(x, 0.3 * np.cos(a), 0.3 * np.sin(a)) for x in xs for a in ring])
    triangles = []
    for i in range(len(xs) - 1):
        for k in range(8):
            a, b = i * 8 + k, i * 8 + (k + 1) % 8
            triangles += [(a, b, b + 8), (a, b + 8, a + 8)]
    heads = np.array([(j, 0.0, 0.0) for j in range(bones)], dtype=float)
    tails = heads + (1.0, 0.0, 0.0)
    parents = np.arange(bones) - 1
    nearest = np.minimum(vertices[:, 0].astype(int), bones - 1)
    one_hot = np.eye(bones)[nearest]
    return vertices, np.array(triangles), heads, tails, parents, one_hot


def test_the_weighted_bone_is_the_first_candidate_and_hidden_bones_are_never_candidates():
    vertices, triangles, heads, tails, parents, one_hot = chain()
    deform = np.ones(len(heads), bool)
    deform[5] = False
    sets = dict.fromkeys(WEIGHT_SETS, one_hot)
    found = weight_features(vertices, triangles, rig_of(heads, tails, parents, deform), sets)
    assert found.candidates.shape == (len(vertices), CANDIDATES)
    assert found.features.shape == (len(vertices), CANDIDATES, FEATURES)
    assert np.isfinite(found.features).all()
    weighted = one_hot.argmax(axis=1)
    on_deform = deform[weighted]
    assert (found.candidates[on_deform, 0] == weighted[on_deform]).all()
    assert not (found.candidates[found.valid] == 5).any()
    # Candidates are distinct bones of each vertex.
    assert all(len(set(row)) == CANDIDATES for row in found.candidates)


def test_a_rig_with_fewer_bones_than_candidates_leaves_slots_empty_and_dense_puts_scores_back():
    vertices, triangles, heads, tails, parents, one_hot = chain(bones=3)
    found = weight_features(vertices, triangles, rig_of(heads, tails, parents, np.ones(3, bool)),
                            dict.fromkeys(WEIGHT_SETS, one_hot))
    assert found.candidates.shape[1] == 3 and found.valid.all()
    scores = np.zeros(found.candidates.shape)
    scores[:, 0] = 1.0
    dense = found.dense(scores, 3)
    assert np.allclose(dense, one_hot)  # all the score on the first candidate: the weighted bone
    assert (found.features[..., 0][:, 0] > found.features[..., 0][:, 1]).all()  # log heat weight


def test_features_do_not_depend_on_the_meshs_scale_or_place():
    vertices, triangles, heads, tails, parents, one_hot = chain()
    sets = dict.fromkeys(WEIGHT_SETS, one_hot)
    deform = np.ones(len(heads), bool)
    base = weight_features(vertices, triangles, rig_of(heads, tails, parents, deform), sets)
    moved_rig = rig_of(heads * 7.0 + 3.0, tails * 7.0 + 3.0, parents, deform)
    moved = weight_features(vertices * 7.0 + 3.0, triangles, moved_rig, sets)
    assert (base.candidates == moved.candidates).all()
    assert np.allclose(base.features, moved.features, atol=1e-4)
