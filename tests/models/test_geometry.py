"""models/geometry.py against the engine's numpy originals (core/rotations.py, core/motion.py)."""

from __future__ import annotations

import numpy as np
import torch

from kirin.kirin_addon.core.motion import Motion, joint_positions, world_deltas
from kirin.kirin_addon.core.rotations import (
    quat_from_axis_angle,
    quat_to_matrix,
    rotvec_to_matrix,
    sixd_to_matrix,
)
from kirin.kirin_addon.library.families.build import build_creature
from kirin.models import geometry


def test_sixd_to_matrix_matches_numpy():
    d6 = np.random.default_rng(0).normal(size=(64, 6))
    for eps in (1e-8, 1e-6):
        out = geometry.sixd_to_matrix(torch.as_tensor(d6), eps=eps).numpy()
        assert np.allclose(out, sixd_to_matrix(d6), atol=1e-12)
    rotations = geometry.sixd_to_matrix(torch.as_tensor(d6, dtype=torch.float32))
    assert torch.allclose(rotations @ rotations.transpose(-1, -2), torch.eye(3).expand(64, 3, 3), atol=1e-5)
    assert torch.allclose(torch.linalg.det(rotations), torch.ones(64), atol=1e-5)


def test_rotvec_to_matrix_matches_numpy_and_is_smooth_at_zero():
    rng = np.random.default_rng(1)
    w = np.concatenate([rng.normal(size=(32, 3)), rng.normal(size=(4, 3)) * 1e-6, np.zeros((1, 3))])
    assert np.allclose(geometry.rotvec_to_matrix(torch.as_tensor(w)).numpy(), rotvec_to_matrix(w), atol=1e-10)
    zero = torch.zeros(1, 3, dtype=torch.float64, requires_grad=True)
    geometry.rotvec_to_matrix(zero).sum().backward()
    assert torch.isfinite(zero.grad).all()


def test_ancestor_paths_follow_the_parents():
    parents = np.array([-1, 0, 1, 1, -1, 4])
    paths = geometry.ancestor_paths(parents)
    assert paths.dtype == np.float32
    assert paths[3].tolist() == [0, 1, 0, 1, 0, 0]  # bones 0→1 and 1→3
    assert paths[0].sum() == 0 and paths[4].sum() == 0 and paths[5].tolist() == [0, 0, 0, 0, 0, 1]


def _world_delta_arrays(rig):
    parents = rig.parents
    offsets = np.zeros((rig.joint_count, 3))
    has_parent = parents >= 0
    offsets[has_parent] = rig.heads[has_parent] - rig.heads[parents[has_parent]]
    root_of = np.arange(rig.joint_count)
    for j in rig.topological_order:
        if parents[j] >= 0:
            root_of[j] = root_of[parents[j]]
    starts = rig.heads[root_of] - rig.heads[rig.main_root]
    return np.maximum(parents, 0), offsets, geometry.ancestor_paths(parents), starts


def test_forward_kinematics_matches_core_motion():
    rig = build_creature("quadruped", 3).rig
    rng = np.random.default_rng(2)
    frames = 5
    axes = rng.normal(size=(frames, rig.joint_count, 3))
    rotations = quat_from_axis_angle(axes, rng.uniform(0, 1, axes.shape[:2]))
    motion = Motion(30.0, rng.normal(size=(frames, 3)), rotations)
    expected = joint_positions(rig, motion)
    deltas = torch.as_tensor(quat_to_matrix(world_deltas(rig, motion)))
    parents, offsets, paths, starts = _world_delta_arrays(rig)
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    along = geometry.forward_kinematics(deltas, torch.as_tensor(parents), t(offsets), t(paths))
    heads = t(motion.root_positions)[:, None] + t(starts) + along
    assert np.allclose(heads.numpy(), expected, atol=1e-9)
    # A batch of rigs (here the same one twice, frames between the batch and the joints) agrees.
    batch = geometry.forward_kinematics(
        deltas.expand(2, *deltas.shape), torch.as_tensor(np.stack([parents] * 2)),
        t(np.stack([offsets] * 2)), t(np.stack([paths] * 2)),
    )
    assert torch.equal(batch[0], along) and torch.equal(batch[1], along)
