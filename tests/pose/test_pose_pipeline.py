"""Pose Space's pipeline in the engine (kirin_addon/pose/pipeline.py), given a stand-in network in
numpy: what it plans and composes around the prior, without torch."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from kirin.benchmarks.big_rig import big_creature
from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.core.rotations import (
    matrix_to_6d,
    quat_angle,
    quat_from_axis_angle,
    rotvec_to_matrix,
    sixd_to_matrix,
)
from kirin.kirin_addon.library.families.build import build_creature
from kirin.kirin_addon.pose.pipeline import PosePipeline, ProjectOptions, frame_shares
from kirin.kirin_addon.pose.posed import PoseSpaceError, pose_from_motion, pose_to_motion


class AgreeableNetwork:
    """A prior that finds every pose plausible: denoising gives back what it was given (after the
    guide), inversion and reconstruction are the identity, latents are interpolated linearly."""

    def __init__(self) -> None:
        self.guided: list[int] = []  # per denoise call, how many predictions the guide saw
        self.seen: list[int] = []  # joints of each rig it was given

    def rig_inputs(self, features, names):
        if names is not None and np.shape(names) != (len(features.geometry), 4):
            raise PoseSpaceError("bad names")
        self.seen.append(len(features.geometry))
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


# ----------------------------------------------------------------------------- any size (issue 31)
@pytest.fixture(scope="module")
def big_pose_space():
    """A 256-bone biped (fingers, twist bones, a face) in an animator's pose: fingers curled, the face
    bones turned."""
    creature = big_creature("biped", 1)
    rig = creature.rig
    network = AgreeableNetwork()
    pipeline = PosePipeline(network)
    posed = pipeline.prepare(rig, creature.mesh)
    rotations = Motion.rest(rig).rotations.copy()
    fingers = creature.extras["fingers"]
    rotations[0, fingers] = quat_from_axis_angle(np.array([1.0, 0.0, 0.0]), np.radians(35.0))
    rotations[0, creature.extras["face"]] = quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), np.radians(20.0))
    curled = Motion(30.0, rig.heads[rig.main_root][None], rotations)
    return creature, network, pipeline, posed, curled


def test_a_256_bone_rig_is_posed_on_its_bones_that_matter(big_pose_space):
    creature, network, pipeline, posed, curled = big_pose_space
    rig = creature.rig
    assert rig.joint_count == 256 and posed.skeleton.joint_count <= 64
    assert network.seen == [posed.skeleton.joint_count]  # the network never saw 256 tokens
    pose = pose_from_motion(posed, curled)
    assert pose.deltas.shape[0] == posed.skeleton.joint_count and pose.carried.shape[0] == 256
    hand = creature.limbs_of("arm")[0].joints[-1]
    foot = int(posed.reduction.keep[posed.skeleton.main_root])  # any kept joint will do as a pin
    start = joint_positions(rig, curled)[0]
    target = start[hand] + np.array([0.0, -0.15, -0.2])
    result = pipeline.project(posed, pose, {hand: posed.frame.to_canonical_points(target)}, pins=[foot])
    assert result.reached, result.message
    motion = pose_to_motion(posed, [result.pose])
    assert motion.joint_count == 256
    moved = joint_positions(rig, motion)[0]
    assert np.linalg.norm(moved[hand] - target) < 0.02 * rig.body_size
    # The fingers came along with the hand, curled as the animator had them (same local turns), and
    # the face bones the prior never saw are turned as they were.
    dropped = np.setdiff1d(creature.extras["face"], posed.reduction.keep)
    assert dropped.size > 150
    same = np.abs(np.sum(motion.rotations[0, dropped] * curled.rotations[0, dropped], -1))
    assert np.abs(same - 1).max() < 1e-9
    fingers = creature.extras["fingers"]
    on_this_hand = [j for j in fingers if rig.names[j].startswith(rig.names[hand])]
    assert len(on_this_hand) == 15
    same = np.abs(np.sum(motion.rotations[0, fingers] * curled.rotations[0, fingers], -1))
    assert np.abs(same - 1).max() < 1e-9
    spread = np.linalg.norm(moved[on_this_hand] - moved[hand], axis=-1)
    assert np.allclose(spread, np.linalg.norm(start[on_this_hand] - start[hand], axis=-1))
    assert np.linalg.norm(moved[on_this_hand] - start[on_this_hand], axis=-1).min() > 0.1


def test_a_joint_left_out_of_the_skeleton_can_still_be_dragged(big_pose_space):
    """A face bone the prior does not see is dragged by the bone it rides on (the skull)."""
    creature, _, pipeline, posed, curled = big_pose_space
    rig = creature.rig
    dropped = [j for j in creature.extras["face"] if j not in set(posed.reduction.keep.tolist())]
    tip = dropped[-1]
    start = joint_positions(rig, curled)[0]
    target = start[tip] + np.array([0.03, -0.05, -0.03])  # the head nods and turns a little
    pose = pose_from_motion(posed, curled)
    result = pipeline.project(posed, pose, {tip: posed.frame.to_canonical_points(target)}, pins=[tip])
    assert result.reached, result.message
    moved = joint_positions(rig, pose_to_motion(posed, [result.pose]))[0]
    assert np.linalg.norm(moved[tip] - target) < 0.02 * rig.body_size


def test_a_256_bone_rig_samples_and_walks_with_its_fingers(big_pose_space):
    creature, _, pipeline, posed, curled = big_pose_space
    rig = creature.rig
    pose = pose_from_motion(posed, curled)
    samples = pipeline.sample(posed, 3, seed=1)
    assert samples.shape == (3, posed.skeleton.joint_count, 3, 3)
    rest = pose_from_motion(posed, Motion.rest(rig))
    frames = pipeline.walk(posed, [pose, rest], [4])
    motion = pose_to_motion(posed, frames)
    assert motion.joint_count == 256 and motion.frame_count == 5
    fingers = creature.extras["fingers"]
    angle = np.degrees(quat_angle(motion.rotations[:, fingers]))  # the curl opens from 35° to 0°
    assert np.allclose(angle[0], 35.0) and np.allclose(angle[-1], 0.0, atol=1e-6)
    assert np.allclose(angle[2], 17.5, atol=0.5)
