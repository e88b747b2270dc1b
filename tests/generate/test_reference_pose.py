"""The pose a folded rest generates from: a posed rig, the frames tried, and which pose stands best."""

from __future__ import annotations

import numpy as np
from artist_rigs import biped_with_foot_controls

from kirin.kirin_addon.core.motion import Motion, forward_kinematics
from kirin.kirin_addon.core.rig import posed_rig
from kirin.kirin_addon.core.rotations import quat_about
from kirin.kirin_addon.core.standing import choose_standing_pose, sampled_frames
from kirin.kirin_addon.generate.reference_pose import standing_score


def _pose(rig, lift: float) -> np.ndarray:
    """The rig's armature-space pose with the left thigh swung forward by `lift` rad."""
    rotations = np.zeros((1, rig.joint_count, 4))
    rotations[..., 0] = 1.0
    rotations[0, rig.names.index("UpperLeg.L")] = quat_about(np.array([1.0, 0.0, 0.0]), lift)
    motion = Motion(30.0, rig.heads[rig.main_root][None], rotations)
    return forward_kinematics(rig, motion)[0]


def test_a_neutral_stance_stands_better_than_a_stride():
    rig = biped_with_foot_controls()
    neutral, striding = posed_rig(rig, _pose(rig, 0.0)), posed_rig(rig, _pose(rig, 0.6))
    assert np.allclose(neutral.heads, rig.heads) and np.allclose(neutral.tails, rig.tails)
    assert standing_score(neutral) < 1e-9 < standing_score(striding)


def test_a_rig_without_legs_does_not_stand():
    rig = biped_with_foot_controls()
    folded = rig.heads.copy()
    folded[:, 2] = 1.0 + folded[:, 1]  # everything lifted off the floor but one joint
    folded[0, 2] = 0.0
    pose = np.repeat(np.eye(4)[None], rig.joint_count, axis=0)
    pose[:, :3, :3] = rig.rest[:, :3, :3]
    pose[:, :3, 3] = folded
    assert standing_score(posed_rig(rig, pose)) is None


def test_the_frames_tried_start_with_the_first_few():
    frames = sampled_frames(1, 200)
    assert frames[:4] == [1, 2, 3, 4] and frames[-1] == 200 and len(frames) <= 28
    assert sampled_frames(5, 6) == [5, 6]


def _lying(rig):
    """The rig with its rest turned onto its back (up along +Y): a rest that does not stand."""
    turn = np.eye(4)
    turn[:3, :3] = [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]]
    return rig.transformed(turn)


def test_of_the_poses_that_stand_the_most_neutral_is_stood_on():
    rig = biped_with_foot_controls()
    lying = _lying(rig)
    poses = np.array([_pose(rig, 0.6), _pose(rig, 0.3), _pose(rig, 0.0), _pose(rig, -0.4)])
    choice = choose_standing_pose(lying, poses, stance=standing_score)
    assert choice.up == "+Z" and choice.votes == {"+Z": 4}
    assert choice.sample == 2  # the feet side by side, not a stride
    assert choose_standing_pose(lying, poses, up="+Z").sample is not None  # without a stance: by the cues
    assert choose_standing_pose(lying, poses, up="-X").up is None  # no pose stands along -X


def test_a_rest_that_stands_as_the_animation_does_is_kept():
    rig = biped_with_foot_controls()
    poses = np.array([_pose(rig, 0.6), _pose(rig, 0.0)])
    assert choose_standing_pose(rig, poses, stance=standing_score).sample is None
    # A quarter of the poses lying as the rest does (a moment on its back) keeps the rest too.
    lying = _lying(rig)
    on_its_back = np.array([_pose(rig, 0.0)] * 3 + [list(lying.rest)])
    assert choose_standing_pose(lying, on_its_back, stance=standing_score).sample is None
