"""Pose Space's pipeline in the engine (kirin_addon/pose/pipeline.py), given a stand-in network in
numpy: what it plans and composes around the prior, without torch."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from kirin.kirin_addon.core.motion import Motion
from kirin.kirin_addon.core.rotations import matrix_to_6d, rotvec_to_matrix, sixd_to_matrix
from kirin.kirin_addon.library.families.build import build_creature
from kirin.kirin_addon.pose.pipeline import PosePipeline, ProjectOptions, frame_shares
from kirin.kirin_addon.pose.posed import PoseSpaceError, pose_from_motion, pose_to_motion


class AgreeableNetwork:
    """A prior that finds every pose plausible: denoising gives back what it was given (after the
    guide), inversion and reconstruction are the identity, latents are interpolated linearly."""

    def __init__(self) -> None:
        self.guided: list[int] = []  # per denoise call, how many predictions the guide saw

    def rig_inputs(self, features, names):
        if names is not None and np.shape(names) != (len(features.geometry), 4):
            raise PoseSpaceError("bad names")
        return {"joints": len(features.geometry)}

    def encode(self, deltas):
        return matrix_to_6d(deltas).astype(np.float32)

    def decode(self, x):
        return sixd_to_matrix(np.asarray(x, np.float64))

    def sample(self, rig, count, steps, seed):
        rng = np.random.default_rng(seed)
        return self.encode(rotvec_to_matrix(rng.normal(0.0, 0.2, (count, rig["joints"], 3))))

    def denoise(self, rig, init, strength, steps, seed, guide=None):
        assert isinstance(init, np.ndarray) and init.dtype == np.float32
        x0 = init.copy()
        predictions = max(2, math.ceil(steps * strength))
        for _ in range(predictions - 1 if guide is not None else 0):
            x0 = guide(x0)
        self.guided.append(predictions - 1 if guide is not None else 0)
        return x0

    def invert(self, rig, x, steps, strength):
        return x.copy()

    def reconstruct(self, rig, noise, steps, strength):
        return noise.copy()

    def interpolate(self, a, b, shares):
        return ((1 - shares)[:, None, None] * a + shares[:, None, None] * b).astype(np.float32)


@pytest.fixture()
def pose_space():
    rig = build_creature("quadruped", 3).rig
    network = AgreeableNetwork()
    pipeline = PosePipeline(network)
    posed = pipeline.prepare(rig)
    return rig, network, pipeline, posed, pose_from_motion(posed, Motion.rest(rig))


def test_projection_meets_the_handles_through_the_given_network(pose_space):
    rig, network, pipeline, posed, pose = pose_space
    feet = rig.foot_candidates()
    foot, pinned = int(feet[0]), int(feet[-1])
    positions = posed.skeleton.positions(pose.deltas) + pose.root
    target = positions[foot] + np.array([0.0, -0.05, 0.05])
    result = pipeline.project(posed, pose, {foot: target}, pins=[pinned])
    assert result.reached, result.message
    moved = posed.skeleton.positions(result.pose.deltas) + result.pose.root
    assert np.linalg.norm(moved[foot] - target) < 0.02
    assert np.linalg.norm(moved[pinned] - positions[pinned]) < 0.02
    # The rig was learnt from the network's samples, the guide saw every prediction but the last.
    assert posed.stiffness.shape == (rig.joint_count,)
    assert posed.stiffness[rig.main_root] > np.median(posed.stiffness)
    assert network.guided == [max(2, math.ceil(ProjectOptions().steps * 0.1)) - 1]
    absolute = pipeline.project(posed, pose, {foot: target}, options=ProjectOptions(relative=False))
    assert absolute.reached and network.guided[-1] == math.ceil(ProjectOptions().steps * 0.4) - 1


def test_refusals_are_pose_space_errors(pose_space):
    rig, _, pipeline, posed, pose = pose_space
    with pytest.raises(PoseSpaceError, match="at least one"):
        pipeline.project(posed, pose, {})
    with pytest.raises(PoseSpaceError, match="not in the rig"):
        pipeline.project(posed, pose, {rig.joint_count: np.zeros(3)})
    with pytest.raises(PoseSpaceError, match="two or more"):
        pipeline.walk(posed, [pose], [])
    with pytest.raises(PoseSpaceError, match="Unknown walk method"):
        pipeline.walk(posed, [pose, pose], [3], method="linear")
    with pytest.raises(PoseSpaceError, match="between 1 and"):
        pipeline.sample(posed, 0)
    with pytest.raises(PoseSpaceError, match="bad names"):
        pipeline.prepare(rig, names=np.zeros((rig.joint_count, 3)))


@pytest.mark.parametrize("method", ["guided", "latent"])
def test_walks_pass_through_the_keys_and_blend_root_and_heading(pose_space, method):
    rig, _, pipeline, posed, pose = pose_space
    foot = int(rig.foot_candidates()[0])
    positions = posed.skeleton.positions(pose.deltas) + pose.root
    other = pipeline.project(posed, pose, {foot: positions[foot] + np.array([0.0, -0.1, 0.08])}).pose
    other.root = pose.root + np.array([0.3, 0.0, 0.0])
    other.yaw = 0.4
    frames = pipeline.walk(posed, [pose, other, pose], [4, 2], method=method)
    assert len(frames) == 7
    for index, key in ((0, pose), (4, other), (6, pose)):
        assert np.abs(frames[index].deltas - key.deltas).max() < 1e-5
    assert frames[2].yaw == pytest.approx(0.2) and np.allclose(frames[2].root, pose.root + [0.15, 0.0, 0.0])
    motion = pose_to_motion(posed, frames)
    assert motion.frame_count == 7 and np.isfinite(motion.rotations).all()


def test_frame_shares_include_one_on_the_last_gap_only():
    assert frame_shares(4, last=False).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert frame_shares(4, last=True).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert frame_shares(1, last=True).tolist() == [0.0, 1.0]
    assert frame_shares(7, last=True).dtype == np.float32


def test_the_pipeline_imports_without_torch():
    code = ("import sys; import kirin.kirin_addon.pose.pipeline, kirin.kirin_addon.bind.pipeline; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
