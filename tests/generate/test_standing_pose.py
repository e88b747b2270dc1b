"""The rest pose is not the standing pose: a T-posed humanoid walks with its arms down at its sides, and a
bird whose rest spreads its wings walks with them folded to its body (issue 31, item 2)."""

from __future__ import annotations

import numpy as np
import pytest
from artist_rigs import biped_with_foot_controls

from kirin.kirin_addon.core.canonical import CanonicalFrame
from kirin.kirin_addon.core.motion import joint_positions
from kirin.kirin_addon.generate.pipeline import GeneratePipeline
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.generate.rig_roles import detect_roles
from kirin.kirin_addon.io.gltf import load_gltf

from assets_support import ASSETS


def _walk(rig, mesh=None, frame=None, prompt="a person walking forward"):
    pipeline = GeneratePipeline(None)
    prepared = pipeline.prepare(rig, mesh, frame)
    made = pipeline.run(prepared, GenerateRequest(prompt, frames=90, seed=0).check())[0]
    assert made.report["path"] == "constructed"
    positions = prepared.canon.frame.to_canonical_points(joint_positions(rig, made.motion).reshape(-1, 3))
    return prepared, positions.reshape(made.motion.frame_count, rig.joint_count, 3)


def _abduction(positions: np.ndarray, shoulder: int, hand: int) -> np.ndarray:
    """(T,) degrees an arm is raised out to the side: the shoulder→hand line in the body's frontal plane
    (x, z), from straight down (fore–aft swing does not count)."""
    arm = positions[:, hand] - positions[:, shoulder]
    return np.degrees(np.arctan2(np.abs(arm[:, 0]), -arm[:, 2]))


def test_a_t_posed_biped_walks_with_its_arms_down():
    rig = biped_with_foot_controls()  # arms straight out at rest
    prepared, positions = _walk(rig, frame=CanonicalFrame(np.eye(3), 1.0, np.zeros(3)))
    arms = detect_roles(prepared.canon.rig).arms
    assert len(arms) == 2
    for arm in arms:
        rest = _abduction(prepared.canon.rig.heads[None], arm[1], arm[-1])[0]
        walking = _abduction(positions, arm[1], arm[-1])
        assert rest > 80.0
        assert np.median(walking) < 25.0 and walking.max() < 40.0


@pytest.mark.skipif(not (ASSETS / "mesh2motion").is_dir(), reason="needs ../shared/assets/mesh2motion")
def test_a_bird_with_spread_wings_at_rest_walks_with_them_folded():
    asset = load_gltf(ASSETS / "mesh2motion" / "bird-animations.glb")
    prepared, positions = _walk(asset.rig, asset.mesh, prompt="a bird walking forward")
    rig = prepared.canon.rig
    tips = [rig.names.index(f"wing_tip_{side}") for side in "LR"]
    body = [rig.names.index(name) for name in ("hips", "head", "tail_3")]
    half_width = np.abs(rig.heads[tips, 0]).min()
    assert half_width > 0.4  # spread at rest: the tips half a body size out
    spread = np.abs(positions[:, tips, 0] - positions[:, [body[0]], 0])
    assert spread.max() < 0.25 * half_width  # folded: the tips close to the body's midline
    length = positions[:, body, 1]
    tip_y = positions[:, tips, 1]
    assert np.all(tip_y <= length.max(axis=1, keepdims=True) + 0.05)  # not trailing far behind the tail
    floor = positions[:, :, 2].min()
    assert positions[:, tips, 2].min() > floor  # nor dragged on the ground
