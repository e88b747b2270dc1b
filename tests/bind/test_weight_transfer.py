"""Skin weight transfer: exact closest points, robust transfer with inpainting, nearest-vertex
transfer, bad meshes, influence limits, weight formats and input validation (no bpy)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from pose_support import random_poses

from kirin.benchmarks.big_rig import big_creature
from kirin.kirin_addon.bind.closest_surface import SurfaceIndex, closest_points
from kirin.kirin_addon.bind.mesh_geometry import cotangent_laplacian, vertex_normals
from kirin.kirin_addon.bind.skin_weights import limit_influences, to_dense, to_sparse
from kirin.kirin_addon.bind.weight_transfer import (
    METHODS,
    TransferConfig,
    nearest_vertex_weights,
    transfer_weights,
)
from kirin.kirin_addon.core.skinning import linear_blend_skinning
from kirin.kirin_addon.library.families.build import build_creature


# ----------------------------------------------------------------------------- fixtures
@cache
def creature():
    """The quadruped (seed 3) with its dense (V, J) weights."""
    beast = build_creature("quadruped", 3)
    weights = to_dense(beast.mesh.joint_indices, beast.mesh.joint_weights, beast.rig.joint_count)
    return beast, weights


def resampled(vertices, triangles, weights, seed=0):
    """Each vertex slid towards a random point of one of its triangles (so it stays on the source
    surface), with its exact barycentric weights: the ground truth of a same-surface transfer."""
    rng = np.random.default_rng(seed)
    owner = np.zeros(len(vertices), dtype=np.int64)
    for corner in range(3):
        owner[triangles[::-1, corner]] = np.arange(len(triangles))[::-1]
    corners = triangles[owner]
    share = rng.uniform(0.0, 0.4, len(vertices))[:, None]
    bary = share * rng.dirichlet([1.0, 1.0, 1.0], len(vertices))
    bary += (1.0 - share) * (corners == np.arange(len(vertices))[:, None])
    moved = np.einsum("vc,vcd->vd", bary, vertices[corners])
    return moved, np.einsum("vc,vcj->vj", bary, weights[corners])




def lbs_error(vertices, weights, truth, mats, size):
    """Mean and max vertex distance (in body sizes) between skinning with `weights` and with `truth`."""
    indices, values = to_sparse(weights, 0)
    true_indices, true_values = to_sparse(truth, 0)
    moved = linear_blend_skinning(vertices, indices, values, mats)
    expected = linear_blend_skinning(vertices, true_indices, true_values, mats)
    error = np.linalg.norm(moved - expected, axis=-1) / size
    return float(error.mean()), float(error.max())


def brute_force_distance(vertices, triangles, queries):
    """Independent reference: min over triangles of (plane projection when inside, else the three
    clamped edge projections), checked pair by pair."""
    a, b, c = (vertices[triangles[:, i]] for i in range(3))
    normal = np.cross(b - a, c - a)
    out = np.empty(len(queries))
    for i, p in enumerate(queries):
        squared = np.einsum("ij,ij->i", normal, normal)
        t = np.einsum("ij,ij->i", p - a, normal) / np.where(squared > 0, squared, 1.0)
        foot = p - t[:, None] * normal
        inside = squared > 0
        for s, e in ((a, b), (b, c), (c, a)):
            inside &= np.einsum("ij,ij->i", np.cross(e - s, foot - s), normal) >= 0
        best = np.where(inside, np.linalg.norm(p - foot, axis=1), np.inf)
        for s, e in ((a, b), (b, c), (c, a)):
            edge = e - s
            length = np.einsum("ij,ij->i", edge, edge)
            u = np.clip(np.einsum("ij,ij->i", p - s, edge) / np.where(length > 0, length, 1.0), 0.0, 1.0)
            best = np.minimum(best, np.linalg.norm(p - (s + u[:, None] * edge), axis=1))
        out[i] = best.min()
    return out


def rows_valid(weights, atol=1e-5):
    return bool(np.all(np.isfinite(weights)) and np.all(weights >= 0)
                and np.allclose(weights.sum(axis=1), 1.0, atol=atol))


# ----------------------------------------------------------------------------- closest points
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_closest_points_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    vertices = rng.normal(size=(80, 3))
    vertices[:12] *= 6.0  # some big triangles
    triangles = rng.integers(0, 80, size=(120, 3))
    triangles = triangles[(triangles[:, 0] != triangles[:, 1]) & (triangles[:, 1] != triangles[:, 2])
                          & (triangles[:, 0] != triangles[:, 2])]
    # Big thin slivers: two far corners and one close to the first.
    thin = np.arange(80, 92).reshape(4, 3)
    far = rng.normal(size=(4, 3)) * 8.0
    extra = np.stack([far, -far, far + rng.normal(size=(4, 3)) * 0.05], axis=1).reshape(12, 3)
    vertices = np.concatenate([vertices, extra])
    triangles = np.concatenate([triangles, thin])
    queries = np.concatenate([rng.normal(size=(300, 3)) * 4.0,
                              rng.normal(size=(100, 3)) * 0.3 + vertices[80]])
    tri, bary, dist = closest_points(vertices, triangles, queries)
    assert np.abs(dist - brute_force_distance(vertices, triangles, queries)).max() < 1e-9
    points = np.einsum("qc,qcd->qd", bary, vertices[triangles[tri]])
    assert np.abs(np.linalg.norm(queries - points, axis=1) - dist).max() < 1e-9
    assert bary.min() >= 0.0 and np.allclose(bary.sum(axis=1), 1.0)


def test_closest_points_on_a_creature():
    """Exact on a real mesh at all distances; the transfer's single pass is exact where it certifies."""
    beast, _ = creature()
    mesh = beast.mesh
    rng = np.random.default_rng(5)
    spread = np.repeat([0.001, 0.01, 0.1, 0.5], 60)[:, None]
    queries = mesh.vertices[rng.integers(0, mesh.vertex_count, 240)] + rng.normal(size=(240, 3)) * spread
    reference = brute_force_distance(mesh.vertices, mesh.triangles, queries)
    _, _, dist = closest_points(mesh.vertices, mesh.triangles, queries)
    assert np.abs(dist - reference).max() < 1e-9
    _, _, fast, certified = SurfaceIndex(mesh.vertices, mesh.triangles).query(queries, exact=False)
    assert certified.mean() > 0.2 and np.abs(fast - reference)[certified].max() < 1e-9
    assert np.all(fast >= reference - 1e-12) and np.abs(fast - reference).max() < 1e-3 * beast.rig.body_size


def big_thin_source():
    """A coarse source: one long thin triangle (20 x 1) beside a finely triangulated strip near its
    short end, so points over its far interior are far from its vertices, its centroid, and from every
    small triangle's centroid. Joint 0 at the long triangle's tip, joint 1 elsewhere."""
    long_tri = np.array([[0.0, 0.0, 0.0], [20.0, 0.5, 0.0], [0.0, 1.0, 0.0]])
    xs, ys = np.meshgrid(np.linspace(-3.0, -0.05, 30), np.linspace(0.0, 1.0, 10), indexing="ij")
    grid = np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], axis=1)
    index = np.arange(xs.size).reshape(xs.shape) + 3
    quads = np.stack([index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]], axis=-1).reshape(-1, 4)
    small = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    vertices = np.concatenate([long_tri, grid])
    triangles = np.concatenate([[[0, 1, 2]], small])
    weights = np.zeros((len(vertices), 2))
    weights[:, 1] = 1.0
    weights[1] = [1.0, 0.0]
    return vertices, triangles, weights


def test_big_thin_triangle_interior_is_found():
    vertices, triangles, weights = big_thin_source()
    # Over the long triangle's interior near its tip (x = 12..17): its centroid is at x = 6.7.
    xs = np.linspace(12.0, 17.0, 6)
    queries = np.stack([xs, 0.5 + 0.02 * np.sin(xs), np.full(6, 0.01)], axis=1)  # inside: |y - 0.5| < 0.075
    tri, bary, dist = closest_points(vertices, triangles, queries)
    assert np.all(tri == 0)
    assert np.allclose(dist, 0.01, atol=1e-12)
    # The transfer (its fast candidate pass) finds the same triangle: the tip joint's share equals
    # the barycentric coordinate of the tip.
    target = np.concatenate([queries, queries + [0.0, 0.0, 0.01]])
    result = transfer_weights(vertices, triangles, weights, target, np.zeros((0, 3), np.int64),
                              TransferConfig(max_distance=0.5))
    assert result.matched.all()
    np.testing.assert_allclose(result.weights[:6, 0], bary[:, 1], atol=1e-6)


# ----------------------------------------------------------------------------- robust transfer
def test_same_surface_transfer_reproduces_weights():
    beast, weights = creature()
    mesh = beast.mesh
    target, truth = resampled(mesh.vertices, mesh.triangles, weights)
    mats = random_poses(beast.rig, 6)
    size = beast.rig.body_size
    robust = transfer_weights(mesh.vertices, mesh.triangles, weights, target, mesh.triangles)
    nearest = transfer_weights(mesh.vertices, mesh.triangles, weights, target, mesh.triangles,
                               TransferConfig(method="nearest"))
    assert rows_valid(robust.weights) and rows_valid(nearest.weights)
    assert ((robust.weights > 0).sum(axis=1) <= 4).all() and ((nearest.weights > 0).sum(axis=1) <= 4).all()
    assert robust.matched.mean() > 0.97  # measured 1695/1698; the rest sit where the resampling folds
    assert np.array_equal(robust.inpainted, ~robust.matched & ~robust.fallback) and not robust.fallback.any()
    assert np.abs(robust.weights - truth).max(axis=1).mean() < 2e-3  # measured 3.4e-4
    # Matched rows are the truth up to the 4-influence limit (an interpolated row can mix 6 joints) and
    # the transfer's uncertified closest points (2 vertices found 2.6e-5 off the surface: 1e-4 here).
    limited = limit_influences(truth, 4)
    assert np.abs(robust.weights[robust.matched] - limited[robust.matched]).max() < 1e-3
    robust_mean, robust_max = lbs_error(target, robust.weights, truth, mats, size)
    nearest_mean, nearest_max = lbs_error(target, nearest.weights, truth, mats, size)
    # Measured: robust 5e-6 / 0.008 body sizes, nearest 1.3e-3 / 0.08.
    assert robust_mean < 5e-5 and robust_max < 0.03
    assert robust_mean <= 0.1 * nearest_mean and robust_max <= nearest_max


def test_identity_transfer_is_exact():
    beast, weights = creature()
    mesh = beast.mesh
    result = transfer_weights(mesh.vertices, mesh.triangles, weights, mesh.vertices, mesh.triangles)
    assert result.matched.all() and result.weights.dtype == np.float32
    np.testing.assert_allclose(result.weights, weights, atol=1e-6)
    assert result.stats["matched"] == mesh.vertex_count and result.stats["method"] == "robust"
    assert result.stats["max_distance_abs"] == pytest.approx(0.05 * result.stats["target_diagonal"])


def test_inpainting_fills_a_removed_limb():
    beast, weights = creature()
    mesh = beast.mesh
    foot = beast.legs()[0].joints[-2:]  # hand and toe of the front left leg
    region = np.isin(weights.argmax(axis=1), foot)
    source_triangles = mesh.triangles[~region[mesh.triangles].any(axis=1)]
    result = transfer_weights(mesh.vertices, source_triangles, weights, mesh.vertices, mesh.triangles)
    inpainted = result.inpainted
    assert rows_valid(result.weights)
    assert np.array_equal(inpainted, ~result.matched & ~result.fallback) and not result.fallback.any()
    assert inpainted.sum() >= 30 and not np.any(inpainted & ~region)  # measured 41 of the 49
    # Every vertex whose exact closest point is beyond max_distance is inpainted.
    _, _, dist = closest_points(mesh.vertices, source_triangles, mesh.vertices)
    far = dist > result.stats["max_distance_abs"]
    assert far.sum() > 10 and np.all(inpainted[far])
    # Smooth: no inpainted weight leaves the range of its one-ring (the biharmonic solution is
    # smooth here), and none exceeds what the matched vertices carry.
    w = result.weights
    edges = np.concatenate([mesh.triangles[:, [0, 1]], mesh.triangles[:, [1, 2]], mesh.triangles[:, [2, 0]]])
    edges = np.concatenate([edges, edges[:, ::-1]])
    hi = np.full_like(w, -np.inf)
    lo = np.full_like(w, np.inf)
    np.maximum.at(hi, edges[:, 0], w[edges[:, 1]])
    np.minimum.at(lo, edges[:, 0], w[edges[:, 1]])
    assert np.all(w[inpainted] <= hi[inpainted] + 1e-4) and np.all(w[inpainted] >= lo[inpainted] - 1e-4)
    assert np.all(w[inpainted] <= w[result.matched].max(axis=0) + 1e-4)
    # The dropped joints only survive on the border ring: the hole takes what the border carries.
    assert 0.3 < w[inpainted][:, foot].sum(axis=1).mean() < 0.7


def test_smoothing_only_touches_the_inpainted_neighbourhood():
    beast, weights = creature()
    mesh = beast.mesh
    region = np.isin(weights.argmax(axis=1), beast.legs()[1].joints[-2:])
    source_triangles = mesh.triangles[~region[mesh.triangles].any(axis=1)]
    plain = transfer_weights(mesh.vertices, source_triangles, weights, mesh.vertices, mesh.triangles)
    smoothed = transfer_weights(mesh.vertices, source_triangles, weights, mesh.vertices, mesh.triangles,
                                TransferConfig(smooth_iterations=5))
    assert rows_valid(smoothed.weights)
    grown = plain.inpainted.copy()
    grown[mesh.triangles[plain.inpainted[mesh.triangles].any(axis=1)].ravel()] = True
    np.testing.assert_array_equal(smoothed.weights[~grown], plain.weights[~grown])


def test_disconnected_far_piece_falls_back():
    beast, weights = creature()
    mesh = beast.mesh
    size = beast.rig.body_size
    cube = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float) * 0.1 * size
    cube += [3.0 * size, 0.0, 0.0]
    cube_faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                           [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    target = np.concatenate([mesh.vertices, cube])
    faces = np.concatenate([mesh.triangles, cube_faces + mesh.vertex_count])
    result = transfer_weights(mesh.vertices, mesh.triangles, weights, target, faces)
    piece = np.arange(len(target)) >= mesh.vertex_count
    assert np.array_equal(result.fallback, piece)
    assert not result.matched[piece].any() and not result.inpainted[piece].any()
    assert rows_valid(result.weights)
    # Fallback weights are the closest-surface weights, thresholds ignored.
    tri, bary, _ = closest_points(mesh.vertices, mesh.triangles, cube)
    expected = limit_influences(np.einsum("qc,qcj->qj", bary, weights[mesh.triangles[tri]]), 4)
    np.testing.assert_allclose(result.weights[piece], expected, atol=1e-5)
    assert result.stats["pieces_without_match"] == 1


def test_point_cloud_target():
    beast, weights = creature()
    mesh = beast.mesh
    size = beast.rig.body_size
    points = np.concatenate([mesh.vertices[::7], [[5.0 * size, 0.0, 0.0]]])
    result = transfer_weights(mesh.vertices, mesh.triangles, weights, points, np.zeros((0, 3), np.int64))
    assert rows_valid(result.weights) and not result.inpainted.any()
    assert result.matched[:-1].all() and result.fallback[-1] and not result.matched[-1]
    np.testing.assert_allclose(result.weights[:-1], weights[::7], atol=1e-6)


def test_flipped_normals():
    beast, weights = creature()
    mesh = beast.mesh
    inside_out = mesh.triangles[:, ::-1]
    # On the source surface a vertex matches whatever its normal (default surface_tolerance) ...
    on_surface = transfer_weights(mesh.vertices, mesh.triangles, weights, mesh.vertices, inside_out)
    assert on_surface.matched.all()
    np.testing.assert_allclose(on_surface.weights, weights, atol=1e-6)
    # ... a little off it, the normals decide (the paper's rule; also surface_tolerance=0 at any distance).
    strict = transfer_weights(mesh.vertices, mesh.triangles, weights, mesh.vertices, inside_out,
                              TransferConfig(surface_tolerance=0.0))
    # Inside out, nothing matches but a few vertices on folds (measured 3 of 1698: a fold's face faces
    # back); pieces without any match fall back.
    assert strict.matched.sum() <= 5 and strict.fallback.sum() > 1000 and rows_valid(strict.weights)
    lenient = transfer_weights(mesh.vertices, mesh.triangles, weights, mesh.vertices, inside_out,
                               TransferConfig(allow_flipped_normals=True, surface_tolerance=0.0))
    assert lenient.matched.all()
    np.testing.assert_allclose(lenient.weights, weights, atol=1e-6)


def emptiest_point(vertices, triangles):
    """The point of a 9³ grid over the bounding box farthest from the surface (an isolated vertex
    that is far from everything without stretching the target's bounding box)."""
    axes = [np.linspace(lo, hi, 9) for lo, hi in zip(vertices.min(axis=0), vertices.max(axis=0), strict=True)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    return grid[np.argmax(closest_points(vertices, triangles, grid)[2])]


def bad_copy(vertices, triangles, region):
    """The mesh with, inside `region`: duplicated vertices (the triangles there use the copies), a
    collapsed and a flat (collinear) zero-area face, a fin making a non-manifold edge, plus two
    isolated vertices (one on the surface, one far from it). Returns (vertices, triangles, origin) with
    origin[i] the original vertex whose weights vertex i should carry."""
    count = len(vertices)
    far = emptiest_point(vertices, triangles)
    picked = np.flatnonzero(region)[:40]
    copies = np.full(count, -1)
    copies[picked] = count + np.arange(picked.size)
    triangles = np.where(copies[triangles] >= 0, copies[triangles], triangles)
    origin = np.r_[np.arange(count), picked]
    vertices = np.concatenate([vertices, vertices[picked]])
    inside = triangles[region[origin[triangles]].all(axis=1)]
    a, b = inside[0, 0], inside[0, 1]
    mid, fin = len(vertices), len(vertices) + 1
    vertices = np.concatenate([vertices, [(vertices[a] + vertices[b]) / 2, vertices[a] + [0.0, 0.0, 0.02]],
                               [vertices[100], far]])
    origin = np.r_[origin, origin[a], origin[a], 100, 0]
    triangles = np.concatenate([triangles, [[a, a, b], [a, mid, b], [a, b, fin]]])
    return vertices, triangles, origin


def test_bad_meshes_give_valid_weights():
    """Zero-area faces, duplicate vertices, isolated vertices and a non-manifold edge, as the target
    (inside a hole of the source, so the inpainting runs through them) and as the source."""
    beast, weights = creature()
    mesh = beast.mesh
    region = np.isin(weights.argmax(axis=1), beast.legs()[0].joints[-2:])
    source_triangles = mesh.triangles[~region[mesh.triangles].any(axis=1)]
    hole = transfer_weights(mesh.vertices, source_triangles, weights, mesh.vertices, mesh.triangles).inpainted
    vertices, triangles, origin = bad_copy(mesh.vertices, mesh.triangles, hole)
    for config in (TransferConfig(), TransferConfig(smooth_iterations=3)):
        result = transfer_weights(mesh.vertices, source_triangles, weights, vertices, triangles, config)
        assert rows_valid(result.weights)
        assert np.array_equal(result.inpainted, ~result.matched & ~result.fallback)
        # The bad faces sit inside the hole and are inpainted; the duplicated originals (no face
        # uses them any more) are welded to their copies and take the same weights; the far isolated
        # vertex falls back.
        assert result.inpainted[triangles[-3:]].all()
        picked = np.flatnonzero(hole)[:40]
        copies = len(mesh.vertices) + np.arange(picked.size)
        assert result.inpainted[picked].all()
        assert np.array_equal(result.weights[picked], result.weights[copies])
        # + the 40 duplicates, the flat face's middle vertex and the fin's tip
        assert result.inpainted.sum() == hole.sum() + picked.size + 2
        assert result.fallback[-1] and result.matched[-2]
    # As the source: the bad parts carry their originals' weights; a resampled clean target matches.
    moved, truth = resampled(mesh.vertices, mesh.triangles, weights)
    source_weights = weights[origin]
    source_weights[-1] = 0.0  # the far isolated vertex is unweighted
    result = transfer_weights(vertices, triangles, source_weights, moved, mesh.triangles)
    assert rows_valid(result.weights) and result.matched.mean() > 0.97
    assert np.abs(result.weights - truth).max(axis=1).mean() < 2e-3


def test_unweighted_source_vertices_do_not_poison():
    beast, weights = creature()
    mesh = beast.mesh
    holes = weights.copy()
    unweighted = np.isin(weights.argmax(axis=1), beast.legs()[2].joints[-2:])
    holes[unweighted] = 0.0
    for method in METHODS:
        result = transfer_weights(mesh.vertices, mesh.triangles, holes, mesh.vertices, mesh.triangles,
                                  TransferConfig(method=method))
        assert rows_valid(result.weights)
    robust = transfer_weights(mesh.vertices, mesh.triangles, holes, mesh.vertices, mesh.triangles)
    # Vertices over the unweighted part carry no information: they are inpainted, not matched.
    assert robust.inpainted[unweighted].all()
    near = nearest_vertex_weights(mesh.vertices, holes, mesh.vertices[unweighted], k=3)
    assert rows_valid(near)


# ----------------------------------------------------------------------------- nearest
def test_nearest_vertex_weights():
    source = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [5.0, 5.0, 5.0]])
    weights = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    target = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 1.0, 0.0]])
    out = nearest_vertex_weights(source, weights, target, k=10)  # k larger than the source: all 3
    np.testing.assert_allclose(out[0], [1.0, 0.0, 0.0])  # coincides: exact, no division by zero
    inverse = 1.0 / np.array([0.25, 0.25, 0.25 + 4.0])
    np.testing.assert_allclose(out[1], inverse / inverse.sum())
    inverse = 1.0 / np.array([1.0, 2.0, 1.0])
    np.testing.assert_allclose(out[2], inverse / inverse.sum())
    two = nearest_vertex_weights(source, weights, target, k=2)
    assert np.count_nonzero(two[1]) == 2 and np.allclose(two.sum(axis=1), 1.0)


# ----------------------------------------------------------------------------- formats and geometry
def test_limits_and_sparse_round_trip():
    rng = np.random.default_rng(3)
    dense = rng.random((50, 12)) ** 4
    dense[0] = 0.0
    dense[1, 3] = -0.2
    limited = limit_influences(dense, 4)
    assert ((limited > 0).sum(axis=1) <= 4).all() and np.allclose(limited[1:].sum(axis=1), 1.0)
    assert not limited[0].any() and limited[1, 3] == 0.0
    # The kept ones are the largest: each kept weight is at least every dropped one (before renormalising).
    kept = limited > 0
    assert np.all(np.where(kept, dense, np.inf).min(axis=1) >= np.where(kept, -np.inf, dense).max(axis=1))
    indices, values = to_sparse(dense, 4)
    assert indices.shape == (50, 4) and indices.dtype == np.int64 and values.dtype == np.float64
    np.testing.assert_allclose(to_dense(indices, values, 12), limited, atol=1e-12)
    all_indices, all_values = to_sparse(dense, 0)
    np.testing.assert_allclose(to_dense(all_indices, all_values, 12), limit_influences(dense, 0), atol=1e-12)
    result = transfer_weights(*_cube(), dense[2:10], *_cube(), TransferConfig(max_influences=4))
    assert ((result.weights > 0).sum(axis=1) <= 4).all()
    np.testing.assert_allclose(result.weights, limit_influences(dense[2:10], 4), atol=1e-6)
    result = transfer_weights(*_cube(), dense[2:10], *_cube(), TransferConfig(max_influences=0))
    np.testing.assert_allclose(result.weights, limit_influences(dense[2:10], 0), atol=1e-6)
    with pytest.raises(ValueError, match="joint index"):
        to_dense(np.array([[12]]), np.array([[1.0]]), 12)


def _cube():
    vertices = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return vertices, faces


def test_cotangent_laplacian_and_normals():
    n = 6
    xs, ys = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 2, n), indexing="ij")
    vertices = np.stack([xs.ravel(), ys.ravel(), 0.3 * xs.ravel()], axis=1)
    index = np.arange(n * n).reshape(n, n)
    quads = np.stack([index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]], axis=-1).reshape(-1, 4)
    faces = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    lap, mass = cotangent_laplacian(vertices, faces)
    assert abs(lap - lap.T).max() < 1e-12 and np.abs(lap.sum(axis=1)).max() < 1e-12
    interior = ((xs > 0) & (xs < 1) & (ys > 0) & (ys < 2)).ravel()
    linear = vertices @ np.array([0.7, -1.3, 2.0])
    assert np.abs((lap @ linear)[interior]).max() < 1e-12  # linear precision on a flat mesh
    assert mass.diagonal().sum() == pytest.approx(2.0 * np.hypot(1.0, 0.3))
    normals = vertex_normals(vertices, faces)
    np.testing.assert_allclose(normals, np.tile(np.array([-0.3, 0.0, 1.0]) / np.hypot(1.0, 0.3), (n * n, 1)))
    # Degenerate input: finite, and an isolated vertex has a zero normal and a positive mass.
    bad = np.concatenate([faces, [[0, 0, 1], [0, 1, 2 * n]]])
    lap, mass = cotangent_laplacian(np.concatenate([vertices, [[5.0, 5.0, 5.0]]]), bad)
    assert np.isfinite(lap.data).all() and (mass.diagonal() > 0).all()
    assert not vertex_normals(np.concatenate([vertices, [[5.0, 5.0, 5.0]]]), bad)[-1].any()


# ----------------------------------------------------------------------------- validation
def test_bad_input_raises():
    vertices, faces = _cube()
    weights = np.random.default_rng(0).random((8, 3))
    cases = [
        ((vertices[:, :2], faces, weights, vertices, faces), "(N, 3)"),
        ((vertices, faces, weights[:5], vertices, faces), "source_weights must be"),
        ((vertices, faces, np.zeros((8, 3)), vertices, faces), "no skin weights"),
        ((vertices, faces, np.full((8, 3), np.nan), vertices, faces), "NaN"),
        ((np.where(vertices == 1, np.inf, vertices), faces, weights, vertices, faces), "NaN or infinite"),
        ((vertices, faces, weights, np.full((2, 3), np.nan), faces[:0]), "NaN or infinite"),
        ((vertices, faces + 1, weights, vertices, faces), "only 8 vertices"),
        ((vertices, faces, weights, vertices[:4], faces), "only 4 vertices"),
        ((vertices, faces.astype(float) + 0.5, weights, vertices, faces), "integer"),
        ((vertices[:0], faces[:0], weights[:0], vertices, faces), "empty"),
        ((vertices, faces[:0], weights, vertices, faces), "no faces"),
        ((vertices, faces[:, :2], weights, vertices, faces), "(F, 3)"),
    ]
    for args, message in cases:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            transfer_weights(*args)
    for bad in (TransferConfig(method="magic"), TransferConfig(max_distance=-1.0),
                TransferConfig(max_distance=float("nan")), TransferConfig(max_angle=200.0),
                TransferConfig(k=0), TransferConfig(smooth_iterations=-1), TransferConfig(max_influences=1.5),
                TransferConfig(allow_flipped_normals="yes"), TransferConfig(surface_tolerance=-0.1)):
        with pytest.raises(ValueError):
            transfer_weights(vertices, faces, weights, vertices, faces, bad)
    # Nearest works from a point cloud source; an empty target gives an empty result.
    out = transfer_weights(vertices, faces[:0], weights, vertices, faces, TransferConfig(method="nearest"))
    np.testing.assert_allclose(out.weights, weights / weights.sum(axis=1, keepdims=True), atol=1e-6)
    empty = transfer_weights(vertices, faces, weights, vertices[:0], faces[:0])
    assert empty.weights.shape == (0, 3) and empty.matched.shape == (0,)


def test_seams_are_welded_so_inpainting_crosses_them():
    """A target split at every edge (each triangle its own three vertices, as flat-shaded imports
    are): welded, it is one piece again, so a hole of the source is inpainted, not a fallback."""
    beast, weights = creature()
    mesh = beast.mesh
    region = np.isin(weights.argmax(axis=1), beast.legs()[0].joints[-2:])
    source_triangles = mesh.triangles[~region[mesh.triangles].any(axis=1)]
    split_vertices = mesh.vertices[mesh.triangles.ravel()]
    split_triangles = np.arange(split_vertices.shape[0]).reshape(-1, 3)
    whole = transfer_weights(mesh.vertices, source_triangles, weights, mesh.vertices, mesh.triangles)
    split = transfer_weights(mesh.vertices, source_triangles, weights, split_vertices, split_triangles)
    assert split.stats["welded_vertices"] == len(split_vertices) - len(mesh.vertices)
    assert not split.fallback.any() and split.inpainted.sum() == whole.inpainted[mesh.triangles.ravel()].sum()
    np.testing.assert_allclose(split.weights, whole.weights[mesh.triangles.ravel()], atol=1e-6)


def test_a_256_bone_rig_transfers_every_bone():
    """Issue 31's any size: a 256-bone biped (fingers, twist and face bones: benchmarks/big_rig.py) onto
    a resampled copy of its skin: every bone that had skin has it, and the transferred weights pose the
    copy as the exact ones do (the fingers too)."""
    beast = big_creature("biped", 1)
    mesh, rig = beast.mesh, beast.rig
    weights = to_dense(mesh.joint_indices, mesh.joint_weights, rig.joint_count)
    assert weights.shape[1] == 256
    target, truth = resampled(mesh.vertices, mesh.triangles, weights)
    result = transfer_weights(mesh.vertices, mesh.triangles, weights, target, mesh.triangles)
    assert result.weights.shape == (len(target), 256) and rows_valid(result.weights)
    assert result.stats["joints"] == 256 and not result.fallback.any()
    skinned = weights.max(axis=0) > 0
    assert np.array_equal(result.weights.max(axis=0) > 0, skinned)
    assert skinned[beast.extras["fingers"]].all()
    mean, worst = lbs_error(target, result.weights, limit_influences(truth, 4), random_poses(rig, 4),
                            rig.body_size)
    assert mean < 1e-4 and worst < 0.03
