"""Pose maths of the pose prior (kirin_addon/pose/space.py): kinematics, whole-tree IK with handles
and pins, joint limits, random valid poses and the plausibility measures."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core.canonical import canonical_rig
from kirin.kirin_addon.core.motion import Motion, forward_kinematics, world_deltas
from kirin.kirin_addon.core.rotations import (
    quat_from_axis_angle,
    quat_to_matrix,
    rotvec_to_matrix,
    swing_twist_angles,
)
from kirin.kirin_addon.eval.distributions import frechet_distance
from kirin.kirin_addon.library.families.build import build_creature
from kirin.kirin_addon.pose.space import (
    Handle,
    JointLimits,
    Skeleton,
    SolveOptions,
    nearest_pose_distance,
    normalised_positions,
    pose_angles,
    random_valid_poses,
    shrink_turns,
    solve_handles,
    solve_within_limits,
)


@pytest.fixture(scope="module")
def quadruped():
    rig = canonical_rig(build_creature("quadruped", 3).rig).rig
    return rig, Skeleton.from_rig(rig)


def random_motion(rig, seed: int, max_angle: float = 0.6) -> Motion:
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=(rig.joint_count, 3))
    angle = rng.uniform(0.0, max_angle, rig.joint_count)
    return Motion(30.0, rig.heads[rig.main_root][None], quat_from_axis_angle(axis, angle)[None])


def bone_lengths(skeleton: Skeleton, positions: np.ndarray) -> np.ndarray:
    child = np.flatnonzero(skeleton.parents >= 0)
    return np.linalg.norm(positions[child] - positions[skeleton.parents[child]], axis=-1)


def test_rotvec_matches_axis_angle_quaternions():
    rng = np.random.default_rng(0)
    axis = rng.normal(size=(20, 3))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    angle = rng.uniform(0.0, np.pi, 20)
    expected = quat_to_matrix(quat_from_axis_angle(axis, angle))
    assert np.allclose(rotvec_to_matrix(axis * angle[:, None]), expected, atol=1e-12)
    assert np.allclose(rotvec_to_matrix(np.zeros(3)), np.eye(3))


def test_swing_twist_separates_the_two():
    axis = np.array([0.0, 0.0, 1.0])
    twist = rotvec_to_matrix(axis * 0.7)
    swing = rotvec_to_matrix(np.array([0.4, 0.0, 0.0]))
    s, t = swing_twist_angles(twist, axis)
    assert s == pytest.approx(0.0, abs=1e-9) and t == pytest.approx(0.7)
    s, t = swing_twist_angles(swing @ twist, axis)
    assert s == pytest.approx(0.4) and t == pytest.approx(0.7)


def test_positions_are_forward_kinematics(quadruped):
    rig, skeleton = quadruped
    motion = random_motion(rig, 1)
    deltas = quat_to_matrix(world_deltas(rig, motion))[0]
    expected = forward_kinematics(rig, motion)[0, :, :3, 3]
    assert np.allclose(skeleton.positions(deltas, rig.heads[rig.main_root]), expected, atol=1e-10)
    assert np.allclose(skeleton.from_local(skeleton.local_rotations(deltas)), deltas, atol=1e-12)


def test_ik_reaches_a_target_and_keeps_bones(quadruped):
    rig, skeleton = quadruped
    deltas = np.broadcast_to(np.eye(3), (rig.joint_count, 3, 3)).copy()
    rest = skeleton.positions(deltas)
    foot = int(rig.foot_candidates()[0])
    other = int(rig.foot_candidates()[2])
    target = rest[foot] + np.array([0.0, -0.15, 0.1])
    solved = solve_handles(skeleton, deltas, [Handle(foot, target), Handle(other, rest[other], 4.0)])
    posed = skeleton.positions(solved)
    assert np.linalg.norm(posed[foot] - target) < 1e-4
    assert np.linalg.norm(posed[other] - rest[other]) < 1e-4
    assert np.allclose(bone_lengths(skeleton, posed), bone_lengths(skeleton, rest), atol=1e-9)
    # The root is where it was (IK only turns joints).
    assert np.allclose(posed[rig.main_root], rest[rig.main_root])


def test_ik_leaves_frozen_joints_and_stops_short_of_unreachable_targets(quadruped):
    rig, skeleton = quadruped
    deltas = np.broadcast_to(np.eye(3), (rig.joint_count, 3, 3)).copy()
    foot = int(rig.foot_candidates()[0])
    frozen = np.zeros(rig.joint_count, bool)
    frozen[skeleton.ancestors[foot]] = True
    same = solve_handles(skeleton, deltas, [Handle(foot, np.array([5.0, 0.0, 0.0]))], frozen=frozen)
    assert np.allclose(same, deltas)
    far = solve_handles(skeleton, deltas, [Handle(foot, np.array([50.0, 0.0, 0.0]))],
                        options=SolveOptions(iterations=30))
    assert np.isfinite(far).all()
    assert np.allclose(far @ np.swapaxes(far, -1, -2), np.eye(3), atol=1e-9)


def test_random_valid_poses_respect_their_limits(quadruped):
    rig, skeleton = quadruped
    rng = np.random.default_rng(3)
    limits = JointLimits.default(skeleton)
    poses = random_valid_poses(skeleton, limits, 64, rng)
    assert not limits.violations(skeleton, poses).any()
    swing, twist = pose_angles(skeleton, poses)
    assert swing.max() > 0.8 * limits.swing.max()  # they use the range, not just its middle
    tight = JointLimits(limits.swing * 0.25, limits.twist * 0.25)
    assert tight.violations(skeleton, poses).mean() > 0.3
    assert (tight.excess(skeleton, poses) >= 0).all()


def test_limits_from_poses_contain_the_data(quadruped):
    rig, skeleton = quadruped
    data = np.stack([quat_to_matrix(world_deltas(rig, random_motion(rig, s, 0.4)))[0] for s in range(20)])
    limits = JointLimits.from_poses(skeleton, data)
    assert not limits.violations(skeleton, data).any()
    wild = np.stack(
        [quat_to_matrix(world_deltas(rig, random_motion(rig, 100 + s, 2.5)))[0] for s in range(5)]
    )
    assert limits.violations(skeleton, wild).any()


def test_plausibility_measures(quadruped):
    rig, skeleton = quadruped
    rng = np.random.default_rng(5)
    limits = JointLimits.default(skeleton)
    data = random_valid_poses(skeleton, limits, 300, rng)
    same = random_valid_poses(skeleton, limits, 300, rng)
    wide = random_valid_poses(skeleton, JointLimits(limits.swing * 2.5, limits.twist * 2.5), 300, rng)
    close = frechet_distance(normalised_positions(skeleton, same), normalised_positions(skeleton, data))
    far = frechet_distance(normalised_positions(skeleton, wide), normalised_positions(skeleton, data))
    assert 0.0 <= close < far
    assert frechet_distance(normalised_positions(skeleton, data), normalised_positions(skeleton, data)) < 1e-6
    assert nearest_pose_distance(skeleton, data[:5], data) == pytest.approx(np.zeros(5), abs=1e-9)
    assert (nearest_pose_distance(skeleton, wide[:20], data) > 0).all()


def test_clamp_brings_poses_inside_their_limits(quadruped):
    rig, skeleton = quadruped
    rng = np.random.default_rng(9)
    limits = JointLimits.default(skeleton)
    wild = random_valid_poses(skeleton, JointLimits(limits.swing * 2.0, limits.twist * 2.0), 40, rng)
    assert limits.violations(skeleton, wild).any()
    clamped = limits.clamp(skeleton, wild)
    assert not limits.violations(skeleton, clamped, tolerance=1e-6).any()
    inside = random_valid_poses(skeleton, limits, 10, rng)
    assert np.allclose(limits.clamp(skeleton, inside), inside, atol=1e-9)
    # Clamping keeps the direction a bone swung in.
    swing, _ = pose_angles(skeleton, clamped)
    assert swing.max() == pytest.approx(limits.swing.max(), abs=1e-6)


def test_stiff_joints_turn_less(quadruped):
    rig, skeleton = quadruped
    deltas = np.broadcast_to(np.eye(3), (rig.joint_count, 3, 3)).copy()
    foot = int(rig.foot_candidates()[0])
    target = skeleton.positions(deltas)[foot] + np.array([0.0, -0.2, 0.15])
    chain = np.flatnonzero(skeleton.ancestors[foot])
    stiffness = np.ones(rig.joint_count)
    stiffness[chain[:2]] = 1000.0  # the body end of the chain (root, spine) barely gives
    soft = solve_handles(skeleton, deltas, [Handle(foot, target)])
    stiff = solve_handles(skeleton, deltas, [Handle(foot, target)], stiffness=stiffness)
    angle = lambda d: pose_angles(skeleton, d)[0]  # noqa: E731
    assert angle(stiff)[chain[:2]].sum() < 0.2 * angle(soft)[chain[:2]].sum()
    assert np.linalg.norm(skeleton.positions(stiff)[foot] - target) < 1e-3


def test_limits_from_a_motion_do_not_depend_on_the_frame_the_rig_is_seen_in(quadruped):
    rig, skeleton = quadruped
    motions = [random_motion(rig, s, 0.5) for s in range(12)]
    motion = Motion(30.0, np.concatenate([m.root_positions for m in motions]),
                    np.concatenate([m.rotations for m in motions]))
    limits = JointLimits.from_motion(rig, motion)
    data = quat_to_matrix(world_deltas(rig, motion))
    expected = JointLimits.from_poses(skeleton, data)
    assert np.allclose(limits.swing, expected.swing) and np.allclose(limits.twist, expected.twist)
    # The same rig turned, moved and scaled (an armature before its canonical frame) gives the same.
    turn = np.eye(4)
    turn[:3, :3] = 2.5 * rotvec_to_matrix(np.array([0.3, -1.1, 0.4]))
    turn[:3, 3] = [1.0, -2.0, 0.5]
    moved = JointLimits.from_motion(rig.transformed(turn), motion)
    assert np.allclose(moved.swing, limits.swing, atol=1e-9)
    assert np.allclose(moved.twist, limits.twist, atol=1e-9)
    assert not limits.violations(skeleton, data).any()


def test_ik_within_limits_moves_the_turn_to_joints_with_room(quadruped):
    rig, skeleton = quadruped
    deltas = np.broadcast_to(np.eye(3), (rig.joint_count, 3, 3)).copy()
    foot = int(rig.foot_candidates()[0])
    chain = np.flatnonzero(skeleton.ancestors[foot] & (skeleton.parents >= 0))
    target = [Handle(foot, skeleton.positions(deltas)[foot] + np.array([0.0, -0.15, 0.2]))]
    free = solve_handles(skeleton, deltas, target)
    swing = pose_angles(skeleton, free)[0]
    tight_joint = chain[np.argmax(swing[chain])]  # the joint plain IK turns most
    limits = JointLimits(np.full(rig.joint_count, np.pi), np.full(rig.joint_count, np.pi))
    limits.swing[tight_joint] = 0.3 * swing[tight_joint]
    assert limits.violations(skeleton, free)[tight_joint]
    kept, stiffness = solve_within_limits(skeleton, deltas, target, limits)
    assert stiffness[tight_joint] > 1.0 and stiffness[chain].min() == 1.0
    kept_swing = pose_angles(skeleton, kept)[0]
    assert kept_swing[tight_joint] < 0.6 * swing[tight_joint]  # it gave way to the others...
    assert np.linalg.norm(skeleton.positions(kept)[foot] - target[0].target) < 1e-3  # ...which reached
    # Stiffness is relative: with no room anywhere on the chain the joints share the turn as before.
    shut = JointLimits(np.full(rig.joint_count, 0.02), np.full(rig.joint_count, 0.02))
    stuck, _ = solve_within_limits(skeleton, deltas, target, shut)
    assert np.linalg.norm(skeleton.positions(stuck)[foot] - target[0].target) < 1e-3


def test_shrink_turns_drops_small_turns_and_shortens_large_ones(quadruped):
    rig, skeleton = quadruped
    base = quat_to_matrix(world_deltas(rig, random_motion(rig, 4, 0.5)))[0]
    local = skeleton.local_rotations(base)
    rng = np.random.default_rng(8)
    axes = rng.normal(size=(rig.joint_count, 3))
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    angles = np.where(np.arange(rig.joint_count) % 2 == 0, 0.03, 0.5)  # small and large turns
    turned = skeleton.from_local(rotvec_to_matrix(axes * angles[:, None]) @ local)
    shrunk = shrink_turns(skeleton, base, turned, 0.05)
    change = skeleton.local_rotations(shrunk) @ np.swapaxes(local, -1, -2)
    left = np.arccos(np.clip((np.trace(change, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0))
    assert np.allclose(left, np.maximum(angles - 0.05, 0.0), atol=1e-6)
    assert np.allclose(shrink_turns(skeleton, base, base, 0.05), base, atol=1e-9)
