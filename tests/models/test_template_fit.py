"""Template fit (Auto-Bind, first half): a family's template skeleton fitted to an unrigged mesh by
the engine's pipeline (kirin_addon/bind/pipeline.py) given the torch fitter (models/bind/template_fit.py).

Ground truth: procedural creatures of the family built from other seeds (other species and
proportions than the template), their mesh moved by a random similarity (any rotation, scale
0.01–100, a translation); the fitted joints are compared with the creature's own, matched by
role (`templates.corresponding_points`: limbs joint to joint aligned on the foot, spine / neck /
tail / extras by arc length where joint counts differ; a template joint the truth lacks, such
as an optional scapula, is left out). Measured on one thread (mean joint error, % of body size):
quadruped 11 (a dog, at 1/100 scale) 1.1, quadruped 12 (a bear: its stub tail is what the wolf
template's tail cannot shrink to) 3.5, biped 7 0.8, spider 5 (a jumping spider) 0.7; detection:
quadruped 3 (a cow) 2.4, biped 5 (a robot) 0.75, spider 8 0.55. The tests allow 5 %, the goal of
the issue. A fit takes 4–6 s here, a detection 11–13 s; the whole file ~80 s.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest
import torch
from bench_support import load_benchmark
from scipy.spatial.transform import Rotation

from kirin.kirin_addon.bind.fit_protocol import FitConfig, FitStart
from kirin.kirin_addon.bind.pipeline import BindPipeline
from kirin.kirin_addon.bind.templates import (
    TEMPLATE_SPECS,
    Similarity,
    candidate_rotations,
    chamfer_distance,
    check_mesh,
    joint_position_error,
    mirror_plane,
    role_chains,
    sample_surface,
    template,
)
from kirin.kirin_addon.core.creature import FAMILIES
from kirin.kirin_addon.core.rotations import rotation_angle
from kirin.kirin_addon.library.families.build import build_creature
from kirin.models.bind import template_fit as tf
from kirin.models.bind.template_fit import TorchTemplateFitter

GOAL = 0.05  # mean joint-position error, fraction of body size
fit_template = BindPipeline(TorchTemplateFitter()).fit


def _similarity(seed: int, scale: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = np.eye(4)
    matrix[:3, :3] = scale * Rotation.random(random_state=seed).as_matrix()
    matrix[:3, 3] = rng.normal(size=3) * scale
    return matrix


def _moved(family: str, seed: int, scale: float):
    creature = build_creature(family, seed)
    matrix = _similarity(seed, scale)
    return creature, matrix, creature.mesh.vertices @ matrix[:3, :3].T + matrix[:3, 3]


def _error(result, creature, matrix) -> float:
    return joint_position_error(result.creature, result.rig, creature, creature.rig.transformed(matrix))[
        "mean_fraction"]


# --------------------------------------------------------------------------- templates and helpers
def test_templates_are_fixed_readable_builds():
    for family in FAMILIES:
        tpl = template(family)
        assert tpl is template(family)  # cached
        spec = TEMPLATE_SPECS[family]
        again = build_creature(family, spec.seed, naming="unreal", species=spec.species, pose=spec.pose)
        assert again.rig.names == tpl.rig.names
        np.testing.assert_allclose(again.rig.rest, tpl.rig.rest)
        assert len(set(tpl.rig.names)) == tpl.rig.joint_count
        assert "trunk" in role_chains(tpl)
        if tpl.limbs:  # every paired limb is found as mirror pairs by name
            paired = {j for pair in tpl.rig.mirror_pairs for j in pair}
            assert all(set(limb.joints) <= paired for limb in tpl.limbs)


@pytest.mark.parametrize("vertices, triangles, message", [
    (np.zeros((10, 3)), np.zeros((0, 3), dtype=int), "no triangles"),
    (np.full((10, 3), np.nan), [[0, 1, 2]] * 3, "NaN"),
    (np.eye(3), [[0, 1, 2]], "at least"),
    (np.random.default_rng(0).random((10, 3)), [[0, 1, 12]], "indices"),
    (np.random.default_rng(0).random((10, 2)), [[0, 1, 2]], "shape"),
    (np.random.default_rng(0).random((10, 3)), [[0, 1, 2, 3]], "triangulate"),
])
def test_unusable_input_is_a_clear_value_error(vertices, triangles, message):
    with pytest.raises(ValueError, match=message):
        check_mesh(vertices, triangles)
    with pytest.raises(ValueError, match=message):
        fit_template(vertices, triangles, "biped")


def test_a_mesh_without_area_is_refused():
    vertices = np.zeros((12, 3))
    vertices[:, 0] = np.arange(12)  # all on a line
    with pytest.raises(ValueError, match="zero area"):
        fit_template(vertices, [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]], "quadruped")


def test_surface_samples_are_area_weighted_and_seeded():
    vertices = np.array([[0, 0, 0], [1, 0, 0], [0, 2, 0], [5, 0, 0], [8, 0, 0], [5, 2, 0]], dtype=float)
    triangles = np.array([[0, 1, 2], [3, 4, 5]])  # areas 1 and 3
    points, faces, bary = sample_surface(vertices, triangles, 20000, seed=3)
    assert abs(np.mean(faces == 1) - 0.75) < 0.015
    np.testing.assert_allclose(points, np.einsum("nk,nkd->nd", bary, vertices[triangles[faces]]))
    assert np.all(bary >= 0) and np.allclose(bary.sum(1), 1.0)
    again, _, _ = sample_surface(vertices, triangles, 20000, seed=3)
    np.testing.assert_array_equal(points, again)


def test_chamfer_distance_both_ways_in_units_and_fractions():
    a = np.stack([np.linspace(0, 1, 11), np.zeros(11), np.zeros(11)], axis=1)
    b = np.concatenate([a + [0, 0.01, 0], [[0.5, 0.3, 0]]])  # one stray point only b has
    out = chamfer_distance(a, b)
    assert out["target_to_template_abs"] == pytest.approx(0.01)
    assert out["template_to_target_abs"] == pytest.approx((11 * 0.01 + 0.3) / 12)
    assert out["mean"] == pytest.approx(out["mean_abs"] / 1.0)  # a's bbox diagonal is 1


def test_candidate_rotations_cover_every_proper_axis_ambiguity():
    rng = np.random.default_rng(1)
    cloud = rng.normal(size=(4000, 3)) * [3.0, 2.0, 1.0]
    truth = Rotation.random(random_state=4).as_matrix()
    candidates = candidate_rotations(cloud @ truth.T, cloud)
    assert len(candidates) == 24
    for rotation in candidates:
        np.testing.assert_allclose(rotation.T @ rotation, np.eye(3), atol=1e-9)
        assert np.linalg.det(rotation) == pytest.approx(1.0)
    assert min(rotation_angle(rotation, truth) for rotation in candidates) < np.radians(3.0)


def test_mirror_plane_of_a_turned_creature():
    creature = build_creature("quadruped", 5)
    turn = Rotation.random(random_state=2).as_matrix()
    points, _, _ = sample_surface(creature.mesh.vertices @ turn.T, creature.mesh.triangles, 6000, seed=0)
    truth = turn[:, 0]
    guess = Rotation.from_rotvec(np.radians(20.0) * turn[:, 2]).apply(truth)  # 20° off
    plane = mirror_plane(points[:500], points[500:], guess)
    assert np.degrees(np.arccos(abs(plane.normal @ truth))) < 3.0
    assert plane.symmetric


def test_mirrored_pose_parameters_keep_the_template_symmetric():
    config = FitConfig()
    for family in ("quadruped", "spider", "dragon"):
        tpl = tf._template_tensors(family, config)
        params = tf._Params(tpl, FitStart(np.eye(3), 1.0, np.zeros(3)), config)
        left, right = np.array(tpl.rig.mirror_pairs).T
        with torch.no_grad():
            params.pose_sym[left] = torch.as_tensor(np.random.default_rng(0).normal(0, 0.5, (len(left), 3)))
            params.u_len.normal_(0, 1)
            heads = tf._pose(tpl, params, with_pose=True).heads.numpy()
        np.testing.assert_allclose(heads[right] * [-1, 1, 1], heads[left], atol=1e-9)
        assert np.abs(heads[right] - tpl.rig.heads[right]).max() > 0.05 * tpl.rig.body_size  # it did move


# --------------------------------------------------------------------------- fits with known ground truth
@pytest.fixture(scope="module")
def dog_fit():
    torch.set_num_threads(1)
    creature, matrix, vertices = _moved("quadruped", 11, 0.01)  # a dog in centimetres... of a metre
    return creature, matrix, fit_template(vertices, creature.mesh.triangles, "quadruped")


def test_fit_recovers_the_skeleton_of_a_quadruped_in_any_frame(dog_fit):
    creature, matrix, result = dog_fit
    assert _error(result, creature, matrix) <= GOAL
    assert result.quality == "good"
    assert result.chamfer["mean"] <= FitConfig().good
    assert set(result.chamfer) >= {"target_to_template", "template_to_target", "mean", "mean_abs"}
    assert result.scores == {"quadruped": pytest.approx(result.scores["quadruped"])}


def test_fitted_rig_is_a_valid_bind_pose(dog_fit):
    creature, matrix, result = dog_fit
    rig, tpl = result.rig, template("quadruped")
    rig.validate()
    assert rig.names == tpl.rig.names and result.creature is tpl
    rot = rig.rest_rotations
    eye = np.broadcast_to(np.eye(3), rot.shape)
    np.testing.assert_allclose(rot @ np.swapaxes(rot, -1, -2), eye, atol=1e-9)
    np.testing.assert_allclose(np.linalg.det(rot), 1.0, atol=1e-9)
    np.testing.assert_allclose(rig.rest[:, 3], np.broadcast_to([0, 0, 0, 1.0], (rig.joint_count, 4)))
    assert np.all(rig.lengths > 0)
    # Blender convention: Y along the bone, head to tail.
    direction = (rig.tails - rig.heads) / rig.lengths[:, None]
    np.testing.assert_allclose(direction, rot[:, :, 1], atol=1e-9)
    # In the target's units: about as big as the (1 cm scaled) truth.
    assert rig.body_size == pytest.approx(creature.rig.transformed(matrix).body_size, rel=0.25)
    # Template mesh, weights and transform.
    weights = result.template_weights
    assert weights.shape == (len(result.template_vertices), rig.joint_count)
    np.testing.assert_allclose(weights.sum(1), 1.0)
    assert result.template_triangles.max() < len(result.template_vertices)
    linear = result.transform[:3, :3]
    scale = np.cbrt(np.linalg.det(linear))
    assert scale > 0
    np.testing.assert_allclose(linear.T @ linear, scale**2 * np.eye(3), atol=1e-9 * scale**2)
    lo, hi = FitConfig().scale_bounds
    assert np.all((result.bone_scales >= lo - 1e-9) & (result.bone_scales <= hi + 1e-9))
    assert result.seconds < 60


@pytest.mark.parametrize("family, seed, scale",
                         [("quadruped", 12, 100.0), ("biped", 7, 1.0), ("spider", 5, 3.0)])
def test_fit_recovers_the_skeleton(family, seed, scale):
    creature, matrix, vertices = _moved(family, seed, scale)
    result = fit_template(vertices, creature.mesh.triangles, family)
    assert _error(result, creature, matrix) <= GOAL
    assert result.quality == "good"


# --------------------------------------------------------------------------- detection and bad input
@pytest.mark.slow
@pytest.mark.parametrize("family, seed", [("quadruped", 3), ("biped", 5), ("spider", 8)])
def test_detection_picks_the_family(family, seed):
    creature, matrix, vertices = _moved(family, seed, 2.0)
    result = fit_template(vertices, creature.mesh.triangles)
    assert result.family == family, result.scores
    assert set(result.scores) == set(FAMILIES)
    assert _error(result, creature, matrix) <= GOAL


def test_disconnected_degenerate_non_manifold_mesh_still_fits():
    creature, matrix, vertices = _moved("biped", 3, 1.0)
    tris = creature.mesh.triangles
    count = len(vertices)
    junk = np.array([[0, 0, 1], [2, 2, 2], [3, 4, 3]])  # zero-area faces (repeated corners)
    line = np.array([[count, count + 1, count + 2]])  # collinear: zero area
    fin = np.array([[tris[0, 0], tris[0, 1], count + 3]])  # a third face on an edge: non-manifold
    vertices = np.concatenate([vertices, vertices[:1] + [[0, 0, 0], [1e-3, 0, 0], [2e-3, 0, 0]],
                               vertices[2:3] + 1e-3, np.full((5, 3), 1e6)])  # + unreferenced far vertices
    triangles = np.concatenate([tris, junk, line, fin, tris[:10]])  # + duplicated faces
    result = fit_template(vertices, triangles, "biped")
    assert result.quality == "good"
    assert _error(result, creature, matrix) <= GOAL


def _blob(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A lumpy closed potato: a UV sphere with low-frequency random radial bumps."""
    rng = np.random.default_rng(seed)
    theta, phi = np.meshgrid(np.linspace(0.05, np.pi - 0.05, 40),
                             np.linspace(0, 2 * np.pi, 80, endpoint=False), indexing="ij")
    direction = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], axis=-1)
    radius = 1.0
    for k, m in ((1, 1), (2, 1), (2, 3), (3, 2)):
        radius = radius + 0.15 * rng.normal() * np.sin(k * theta + rng.uniform(0, 6)) * np.cos(
            m * phi + rng.uniform(0, 6))
    vertices = (direction * radius[..., None] * [1.0, 0.8, 0.6]).reshape(-1, 3)
    rows, cols = theta.shape
    r, c = np.meshgrid(np.arange(rows - 1), np.arange(cols), indexing="ij")
    a, b = r * cols + c, r * cols + (c + 1) % cols
    triangles = np.concatenate([np.stack([a, b, b + cols], -1).reshape(-1, 3),
                                np.stack([a, b + cols, a + cols], -1).reshape(-1, 3)])
    return vertices, triangles


@pytest.mark.slow
def test_a_blob_far_from_every_template_is_poor_not_an_error():
    vertices, triangles = _blob()
    result = fit_template(vertices, triangles)
    assert result.quality == "poor", result.chamfer
    assert min(result.scores.values()) > FitConfig().fair
    assert "does not look like" in result.message


@pytest.mark.slow
def test_two_million_vertices_are_subsampled_not_refused():
    creature, matrix, vertices = _moved("quadruped", 3, 10.0)
    # Each triangle cut into 34² with its own (unshared) vertices, as an STL export would.
    triangle_soup = load_benchmark("bench_template_fit").triangle_soup
    big_vertices, big_triangles = triangle_soup(vertices, creature.mesh.triangles, 34)
    assert len(big_vertices) >= 2_000_000
    tracemalloc.start()
    start = time.perf_counter()
    result = fit_template(big_vertices, big_triangles, "quadruped")
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert seconds < 90  # ~3 s of input checks and sampling on top of the usual fit
    assert peak < 600e6  # numpy temporaries stay bounded (chunked areas; the mesh itself is ~140 MB)
    assert result.quality == "good"
    assert _error(result, creature, matrix) <= GOAL


def test_progress_is_reported_and_reaches_one():
    vertices, triangles = _blob(1)
    seen: list[float] = []
    config = FitConfig(coarse_steps=10, fine_steps=10, orientations=1, finalists=1)
    result = fit_template(vertices, triangles, "fish", config, progress=lambda f, message: seen.append(f))
    assert seen[0] == 0.0 and seen[-1] == 1.0
    assert all(b >= a for a, b in zip(seen, seen[1:], strict=False))
    assert isinstance(result.transform, np.ndarray) and result.family == "fish"


def test_unknown_family_is_refused():
    with pytest.raises(ValueError, match="Unknown family"):
        fit_template(*_blob(), family="unicorn")


def test_similarity_init_round_trip():
    # Guards the helper every fit starts from: apply() and matrix agree.
    sim = Similarity(Rotation.random(random_state=0).as_matrix(), 2.5, np.array([1.0, -2.0, 3.0]))
    points = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_allclose(sim.apply(points), points @ sim.matrix[:3, :3].T + sim.matrix[:3, 3])
