"""Rotation-only IK (kirin_addon.core.ik): exact reach, clamping, bend direction, exact bone lengths."""

from __future__ import annotations

import numpy as np

from kirin.kirin_addon.core import ik
from kirin.kirin_addon.core.rotations import quat_rotate


def _random_targets(rng: np.random.Generator, count: int, radius: float) -> np.ndarray:
    d = rng.normal(size=(count, 3))
    return d / np.linalg.norm(d, axis=-1, keepdims=True) * rng.uniform(0.2, 0.95, (count, 1)) * radius


def test_two_bone_reaches_reachable_targets_exactly() -> None:
    rng = np.random.default_rng(0)
    root = rng.normal(size=(200, 3))
    l1, l2 = 0.5, 0.4
    target = root + _random_targets(rng, 200, l1 + l2)
    pole = rng.normal(size=(200, 3))
    res = ik.two_bone(root, target, l1, l2, pole)
    assert res.reached.all()
    assert np.abs(res.end - target).max() <= 1e-9
    assert np.abs(np.linalg.norm(res.mid - root, axis=-1) - l1).max() <= 1e-12
    assert np.abs(np.linalg.norm(res.end - res.mid, axis=-1) - l2).max() <= 1e-12


def test_two_bone_clamps_unreachable_targets() -> None:
    root = np.zeros((2, 3))
    target = np.array([[0.0, 0.0, -3.0], [0.0, 0.0, -0.01]])
    res = ik.two_bone(root, target, 1.0, 0.5, np.array([0.0, -1.0, 0.0]))
    assert not res.reached.any()
    assert np.allclose(res.end[0], [0, 0, -1.5])  # straightened along the ray
    assert np.allclose(res.end[1], [0, 0, -0.5])  # folded to the shortest reach
    assert np.allclose(np.linalg.norm(res.mid - root, axis=-1), 1.0)


def test_bend_direction_follows_pole() -> None:
    root = np.zeros(3)
    target = np.array([0.0, 0.0, -0.8])
    for pole in ([0.0, -1.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]):
        res = ik.two_bone(root, target, 0.5, 0.5, np.array(pole))
        assert np.dot(res.mid, pole) > 0.2


def test_two_bone_deltas_are_rotations_that_hit_the_target() -> None:
    rng = np.random.default_rng(1)
    v1, v2 = np.array([0.0, 0.05, -0.45]), np.array([0.0, -0.05, -0.4])
    root = rng.normal(size=(50, 3))
    target = root + _random_targets(rng, 50, 0.84)
    ref = np.tile([1.0, 0.0, 0.0, 0.0], (50, 1))
    d1, d2, res = ik.two_bone_deltas(root, target, v1, v2, np.array([0.0, -1.0, 0.0]), ref)
    end = root + quat_rotate(d1, v1) + quat_rotate(d2, v2)
    assert np.abs(end - target).max() <= 1e-9
    assert np.allclose(np.linalg.norm(d1, axis=-1), 1.0)


def test_fabrik_long_chain_exact_reach_and_lengths() -> None:
    rng = np.random.default_rng(2)
    rest = np.array([[0, 0, 0], [0.05, 0, 0.02], [0.12, 0, 0.08], [0.2, 0, 0.05], [0.26, 0, -0.05]], float)
    lengths = np.linalg.norm(np.diff(rest, axis=0), axis=-1)
    chains = np.repeat(rest[None], 40, axis=0)
    # Reachable by construction: the tip of the chain under random (moderate) bends.
    angles = rng.uniform(-0.8, 0.8, (40, 4))
    bent = np.zeros((40, 5, 3))
    heading = np.cumsum(angles, axis=1)
    steps = lengths[None, :, None] * np.stack([np.cos(heading), np.zeros_like(heading), np.sin(heading)], -1)
    bent[:, 1:] = np.cumsum(steps, axis=1)
    target = bent[:, -1]
    pts, reached = ik.fabrik(chains, target, pole=np.array([0.0, 0.0, 1.0]), iterations=200)
    assert reached.all()
    assert np.abs(pts[:, -1] - target).max() <= 1e-9
    assert np.abs(np.linalg.norm(np.diff(pts, axis=1), axis=-1) - lengths).max() <= 1e-9
    deltas = ik.chain_deltas(pts, np.diff(rest, axis=0), np.tile([1.0, 0, 0, 0], (40, 1)))
    again = ik.chain_positions(pts[:, 0], np.diff(rest, axis=0), deltas)
    assert np.abs(again - pts).max() <= 1e-9


def test_fabrik_clamps_out_of_reach() -> None:
    rest = np.array([[0, 0, 0], [0.1, 0, 0], [0.2, 0, 0], [0.3, 0, 0]], float)
    pts, reached = ik.fabrik(rest[None], np.array([[2.0, 0.0, 0.0]]))
    assert not reached[0]
    assert np.allclose(pts[0, -1], [0.3, 0, 0], atol=1e-6)


def test_aim_points_a_bone() -> None:
    ref = np.array([1.0, 0.0, 0.0, 0.0])
    q = ik.aim(ref, np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 2.0]))
    assert np.allclose(quat_rotate(q, [0.0, 1.0, 0.0]), [0.0, 0.0, 1.0])
