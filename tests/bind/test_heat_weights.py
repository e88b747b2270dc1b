"""Bone-heat skin weights on the mesh itself (kirin_addon/bind/heat_weights.py; no bpy).

On the procedural quadruped (seed 3: 1,698 vertices in 10 overlapping tube pieces, 36 bones) with
its ground-truth weights. Thresholds are measured values with a margin: dominant bone agrees with the
ground truth on 68 % of the vertices (the nearest bone alone: 61 %; the ground truth paints by tube
part, e.g. the whole head tube on Head while the Jaw bone runs through it); LBS error under random
poses of up to 35° per joint 0.0055 body sizes mean (the nearest bone alone 0.0076); 107k vertices in
2.0-2.7 s on the shared 2-core machine.
"""

from __future__ import annotations

import time
from functools import cache

import numpy as np
import pytest
from pose_support import random_poses

from kirin.kirin_addon.bind.heat_weights import HeatConfig, heat_weights, rig_heat_weights, segment_distances
from kirin.kirin_addon.bind.skin_weights import to_dense, to_sparse
from kirin.kirin_addon.core.skinning import linear_blend_skinning
from kirin.kirin_addon.library.families.build import build_creature

pytest.importorskip("scipy")


@cache
def creature():
    beast = build_creature("quadruped", 3)
    return beast, to_dense(beast.mesh.joint_indices, beast.mesh.joint_weights, beast.rig.joint_count)


@cache
def default_weights() -> np.ndarray:
    beast, _ = creature()
    return rig_heat_weights(beast.mesh.vertices, beast.mesh.triangles, beast.rig).weights




def lbs_error(vertices, weights, truth, mats, size) -> float:
    """Mean vertex distance (body sizes) between skinning with `weights` and with `truth`."""
    moved = linear_blend_skinning(vertices, *to_sparse(weights, 0), mats)
    expected = linear_blend_skinning(vertices, *to_sparse(truth, 0), mats)
    return float((np.linalg.norm(moved - expected, axis=-1) / size).mean())


def assert_valid(weights: np.ndarray, count: int, joints: int, max_influences: int = 4) -> None:
    assert weights.shape == (count, joints) and weights.dtype == np.float32
    assert np.isfinite(weights).all() and (weights >= 0).all()
    assert np.allclose(weights.sum(axis=1), 1.0, atol=1e-5)  # every vertex weighted
    assert (weights > 0).sum(axis=1).max() <= max_influences


def unwelded(vertices, triangles):
    """Every triangle with its own three vertices (a mesh split at every edge, like a glTF import
    split at seams), and the original vertex of each new one."""
    corners = triangles.ravel()
    return vertices[corners], np.arange(corners.size).reshape(-1, 3), corners


def sphere(centre, radius, inside_out=False):
    """An octahedron (closed, 6 vertices) around `centre`."""
    v = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
    t = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])
    return centre + radius * v, t[:, ::-1] if inside_out else t


# ----------------------------------------------------------------------------- validity
def test_rows_sum_to_one_with_at_most_four_influences():
    beast, _ = creature()
    weights = default_weights()
    assert_valid(weights, beast.mesh.vertex_count, beast.rig.joint_count)
    # Every bone leads somewhere (the least: Spine2, 0.33, between the shoulders' and its neighbours').
    assert np.all(weights.max(axis=0) > 0.25)


def test_an_unwelded_copy_gets_the_same_weights():
    beast, _ = creature()
    vertices, triangles, original = unwelded(beast.mesh.vertices, beast.mesh.triangles)
    result = rig_heat_weights(vertices, triangles, beast.rig)
    assert_valid(result.weights, len(vertices), beast.rig.joint_count)
    assert result.stats["welded_vertices"] == len(vertices) - beast.mesh.vertex_count
    assert np.abs(result.weights - default_weights()[original]).max() < 1e-4


def test_disconnected_far_and_inside_out_pieces_are_weighted():
    beast, _ = creature()
    rig, mesh = beast.rig, beast.mesh
    size = rig.body_size
    far, far_t = sphere(rig.heads[0] + np.array([10.0 * size, 0.0, 0.0]), 0.05 * size)
    near, near_t = sphere(rig.heads[6] + np.array([0.0, 0.0, 0.02 * size]), 0.03 * size, inside_out=True)
    # A lone triangle far below, facing up at the body: every bone is behind its surface.
    flat = rig.heads[0] + np.array([[0.0, 0.0, -5.0], [0.1, 0.0, -5.0], [0.0, 0.1, -5.0]]) * size
    vertices = np.concatenate([mesh.vertices, far, near, flat])
    count = mesh.vertex_count
    triangles = np.concatenate([mesh.triangles, far_t + count, near_t + count + len(far),
                                [np.arange(3) + count + len(far) + len(near)]])
    split_v, split_t, original = unwelded(vertices, triangles)
    for v, t in ((vertices, triangles), (split_v, split_t)):
        result = rig_heat_weights(v, t, rig)
        assert_valid(result.weights, len(v), rig.joint_count)
    result = rig_heat_weights(vertices, triangles, rig)
    # The far piece: its heat is tiny against its own Laplacian, so it moves as one (same rows),
    # with bones on the body's side facing it (the right and left limbs are mirror images: x > 0).
    rows = result.weights[count:count + len(far)]
    assert np.abs(rows - rows[0]).max() < 1e-3
    assert np.all(rig.tails[rows[0] > 0, 0] > 0.05)
    # The inside-out shell around the head has its normals flipped back: the head's bones weight it.
    shell = result.weights[count + len(far):].argmax(axis=1)
    assert set(shell.tolist()) <= {5, 6, 7, 34, 35}  # Neck1, Head, Jaw, ears
    # Only the lone triangle is blind (visibility dropped there); the far sphere's side facing the
    # body sees no bone and is diffused, its other side is heated.
    assert result.blind.tolist() == [False] * (len(vertices) - 3) + [True] * 3
    assert result.heated[count:count + len(far)].sum() in range(1, 6) and result.heated[-3:].all()


def test_only_deforming_bones_get_weight_and_bad_input_is_refused():
    beast, _ = creature()
    rig, mesh = beast.rig, beast.mesh
    bones = np.ones(rig.joint_count, dtype=bool)
    bones[[7, 34, 35]] = False  # Jaw and ears do not deform: the head takes their vertices
    weights = heat_weights(mesh.vertices, mesh.triangles, rig.heads, rig.tails, bones).weights
    assert_valid(weights, mesh.vertex_count, rig.joint_count)
    assert not weights[:, ~bones].any()
    v, t = mesh.vertices, mesh.triangles
    bad = v.copy()
    bad[3, 1] = np.nan
    for call in (lambda: heat_weights(bad, t, rig.heads, rig.tails),
                 lambda: heat_weights(v, t + len(v), rig.heads, rig.tails),
                 lambda: heat_weights(v, t, rig.heads, rig.tails, np.zeros(rig.joint_count, bool)),
                 lambda: heat_weights(v, t, rig.heads, rig.tails[:3]),
                 lambda: heat_weights(v[:0], t[:0], rig.heads, rig.tails),
                 lambda: rig_heat_weights(v, t, rig, np.ones((3, 3)), HeatConfig(prior_weight=1.0)),
                 lambda: rig_heat_weights(v, t, rig, config=HeatConfig(heat=0.0)),
                 lambda: rig_heat_weights(v, t, rig, config=HeatConfig(max_influences=-1))):
        with pytest.raises(ValueError):
            call()


# ----------------------------------------------------------------------------- quality
def test_weights_follow_the_nearest_bones_like_the_ground_truth():
    beast, truth = creature()
    weights = default_weights()
    distance, _ = segment_distances(beast.mesh.vertices, beast.rig.heads, beast.rig.tails)
    agree = float((weights.argmax(axis=1) == truth.argmax(axis=1)).mean())
    nearest = float((distance.argmin(axis=1) == truth.argmax(axis=1)).mean())
    assert agree >= 0.65 and agree > nearest + 0.04  # measured 0.679 and 0.608
    # The dominant bone is one of the two nearest bones of nearly every vertex.
    second = np.argsort(distance, axis=1)[:, :2]
    assert (second == weights.argmax(axis=1)[:, None]).any(axis=1).mean() >= 0.93  # measured 0.95


def test_lbs_matches_the_ground_truth_skinning_under_random_poses():
    beast, truth = creature()
    rig, mesh = beast.rig, beast.mesh
    mats = random_poses(rig, 8)
    size = rig.body_size
    ours = lbs_error(mesh.vertices, default_weights(), truth, mats, size)
    distance, _ = segment_distances(mesh.vertices, rig.heads, rig.tails)
    rigid = lbs_error(mesh.vertices, np.eye(rig.joint_count)[distance.argmin(axis=1)], truth, mats, size)
    assert ours <= 0.0062 and ours < 0.8 * rigid  # measured 0.0055 and 0.0076 body sizes


def test_visibility_keeps_a_leg_off_the_other_legs_bone():
    """Two touching tubes; the right one's bone runs close to the gap, nearer to the left tube's inner
    side than the left tube's own bone: only a visibility rule keeps those vertices on the left bone."""
    angle = np.linspace(0.0, 2.0 * np.pi, 24, endpoint=False)
    rings = np.linspace(0.0, 4.0, 17)
    ring = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    pieces, triangles = [], []
    for centre in (-1.1, 1.1):
        v = np.array([[centre + x, y, z] for z in rings for x, y in ring])
        k, r = np.meshgrid(np.arange(24), np.arange(len(rings) - 1))
        a, b = (r * 24 + k).ravel(), (r * 24 + (k + 1) % 24).ravel()
        triangles.append(np.concatenate([np.stack([a, b, b + 24], 1), np.stack([a, b + 24, a + 24], 1)])
                         + sum(len(p) for p in pieces))
        pieces.append(v)
    vertices, triangles = np.concatenate(pieces), np.concatenate(triangles)
    heads, tails = np.array([[-1.1, 0, 0], [0.55, 0, 0]]), np.array([[-1.1, 0, 4], [0.55, 0, 4]])
    left = vertices[:, 0] < 0
    blind = heat_weights(vertices, triangles, heads, tails,
                         config=HeatConfig(visibility=False, normal_falloff=False)).weights
    assert (blind[left].argmax(axis=1) == 1).mean() > 0.1  # the left tube's inner side on the right bone
    for config in (HeatConfig(), HeatConfig(normal_falloff=False), HeatConfig(visibility=False)):
        weights = heat_weights(vertices, triangles, heads, tails, config=config).weights
        assert (weights[left].argmax(axis=1) == 0).all() and (weights[~left].argmax(axis=1) == 1).all()


def test_the_prior_pulls_the_weights_towards_it():
    beast, _ = creature()
    rig, mesh = beast.rig, beast.mesh
    rng = np.random.default_rng(0)
    prior = np.zeros((mesh.vertex_count, rig.joint_count))
    prior[np.arange(mesh.vertex_count), rng.integers(0, rig.joint_count, mesh.vertex_count)] = 1.0
    ignored = rig_heat_weights(mesh.vertices, mesh.triangles, rig, prior).weights  # prior_weight 0
    assert np.array_equal(ignored, default_weights())
    agreement = []
    for weight in (10.0, 1e3, 1e7):
        weights = rig_heat_weights(mesh.vertices, mesh.triangles, rig, prior,
                                   HeatConfig(prior_weight=weight, max_influences=0)).weights
        agreement.append(float((weights.argmax(axis=1) == prior.argmax(axis=1)).mean()))
    assert agreement[0] < agreement[1] < agreement[2] and agreement[2] > 0.99


# ----------------------------------------------------------------------------- speed
def subdivide(vertices, triangles):
    """Each triangle split in four at its edge midpoints."""
    edges = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), 1)
    unique, inverse = np.unique(edges, axis=0, return_inverse=True)
    mid = len(vertices) + inverse.reshape(3, -1).T
    a, b, c = triangles.T
    ab, bc, ca = mid.T
    faces = [np.stack(f, axis=1) for f in ([a, ab, ca], [ab, b, bc], [ca, bc, c], [ab, bc, ca])]
    return np.concatenate([vertices, vertices[unique].mean(axis=1)]), np.concatenate(faces)


def test_a_hundred_thousand_vertices_in_a_few_seconds():
    beast, _ = creature()
    vertices, triangles = beast.mesh.vertices, beast.mesh.triangles
    while len(vertices) < 100_000:
        vertices, triangles = subdivide(vertices, triangles)
    start = time.perf_counter()
    result = rig_heat_weights(vertices, triangles, beast.rig)
    seconds = time.perf_counter() - start
    assert_valid(result.weights, len(vertices), beast.rig.joint_count)
    # Measured 2.0-2.7 s (target 3 s); the bound leaves room for a loaded shared machine.
    assert len(vertices) > 100_000 and seconds < 6.0, seconds
