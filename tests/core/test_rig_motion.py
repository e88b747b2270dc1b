import numpy as np
import pytest

from kirin.kirin_addon.core import rotations as rot
from kirin.kirin_addon.core.motion import (
    Motion,
    MotionError,
    forward_kinematics,
    joint_positions,
    motion_from_world_deltas,
    world_deltas,
)
from kirin.kirin_addon.core.rig import (
    EDGE_CHILD,
    EDGE_PARENT,
    EDGE_SELF,
    EDGE_SIBLING,
    Rig,
    RigError,
    rig_from_bones,
)
from kirin.kirin_addon.library.procedural import BipedSpec, build_biped


def random_motion(rig: Rig, frames: int = 12, seed: int = 0, amount: float = 0.8) -> Motion:
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=(frames, rig.joint_count, 3))
    angle = amount * rng.uniform(-1, 1, size=(frames, rig.joint_count))
    root = rig.heads[rig.main_root] + rng.normal(scale=0.2 * rig.body_size, size=(frames, 3))
    return Motion(30.0, root, rot.quat_from_axis_angle(axis, angle))


def similarity(seed: int, scale: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = np.eye(4)
    m[:3, :3] = scale * rot.quat_to_matrix(rot.quat_normalize(rng.normal(size=4)))
    m[:3, 3] = rng.normal(size=3)
    return m


def test_derived_structure_of_biped():
    rig = build_biped(BipedSpec(naming="mixamo"))
    hips = rig.index("mixamorig:Hips")
    left_thigh = rig.index("mixamorig:LeftUpLeg")
    right_thigh = rig.index("mixamorig:RightUpLeg")
    assert rig.main_root == hips
    assert rig.hop_distance[hips, rig.index("mixamorig:LeftFoot")] == 3
    assert rig.edge_types[left_thigh, hips] == EDGE_PARENT
    assert rig.edge_types[hips, left_thigh] == EDGE_CHILD
    assert rig.edge_types[left_thigh, right_thigh] == EDGE_SIBLING
    assert rig.edge_types[hips, hips] == EDGE_SELF
    assert (min(left_thigh, right_thigh), max(left_thigh, right_thigh)) in rig.mirror_pairs
    assert len(rig.mirror_pairs) == 8
    feet = {rig.names[j] for j in rig.foot_candidates()}
    assert feet == {"mixamorig:LeftToeBase", "mixamorig:RightToeBase"}
    assert set(rig.names[j] for j in rig.end_effectors) >= {"mixamorig:Head", "mixamorig:LeftHand"}


def test_geometric_mirror_pairs_without_side_names():
    rig = build_biped(BipedSpec(naming="rigify"))
    anonymous = Rig([f"Bone.{i:03d}" for i in range(rig.joint_count)], rig.parents, rig.rest, rig.tails)
    assert len(anonymous.mirror_pairs) == 8
    by_name = {tuple(sorted((rig.names[a], rig.names[b]))) for a, b in anonymous.mirror_pairs}
    assert ("DEF-thigh.L", "DEF-thigh.R") in by_name


def test_validation_messages():
    rig = build_biped()
    tails = rig.tails.copy()
    tails[3] = rig.heads[3]
    with pytest.raises(RigError, match="Zero-length"):
        Rig(rig.names, rig.parents, rig.rest, tails).validate()
    count = 500
    chain = rig_from_bones([f"b{i}" for i in range(count)], np.arange(count) - 1,
                           np.c_[np.zeros((count, 2)), np.arange(count)],
                           np.c_[np.zeros((count, 2)), np.arange(count) + 1])
    with pytest.raises(RigError, match="at most"):
        chain.validate()
    cyclic = Rig(["a", "b"], [1, 0], rig.rest[:2], rig.tails[:2])
    with pytest.raises(RigError, match="cycle"):
        cyclic.validate()


def test_several_roots_are_legal_and_move_together():
    rig = build_biped()
    parents = rig.parents.copy()
    prop = rig_from_bones(["prop"], [-1], [[0.5, 0, 0.1]], [[0.5, 0, 0.3]])
    two = Rig(rig.names + ["prop"], np.r_[parents, -1], np.concatenate([rig.rest, prop.rest]),
              np.concatenate([rig.tails, prop.tails]))
    two.validate()
    motion = random_motion(two)
    pos = joint_positions(two, motion)
    shift = motion.root_positions - two.heads[two.main_root]
    assert np.allclose(pos[:, -1], two.heads[-1] + shift)


@pytest.mark.parametrize("seed", range(3))
def test_world_delta_round_trip_is_exact(seed):
    rig = build_biped(BipedSpec(roll_seed=seed))
    motion = random_motion(rig, seed=seed)
    deltas = world_deltas(rig, motion)
    back = motion_from_world_deltas(rig, deltas, motion.root_positions, motion.fps)
    assert np.allclose(forward_kinematics(rig, back), forward_kinematics(rig, motion), atol=1e-12)


@pytest.mark.parametrize("seed,scale", [(0, 1.0), (1, 100.0), (2, 0.01)])
def test_inverse_bind_correction_on_any_rest_convention(seed, scale):
    """The same world deltas on a rig with other rolls, axes and scale give the same joint motion."""
    base = build_biped(BipedSpec(roll_seed=None))
    rolled = build_biped(BipedSpec(roll_seed=seed + 10))
    motion = random_motion(base, seed=seed)
    deltas = world_deltas(base, motion)
    sim = similarity(seed, scale)
    target = rolled.transformed(sim)
    rotation = sim[:3, :3] / scale
    moved = motion_from_world_deltas(
        target,
        rot.matrix_to_quat(rotation @ rot.quat_to_matrix(deltas) @ rotation.T),
        motion.root_positions @ sim[:3, :3].T + sim[:3, 3],
        motion.fps,
    )
    expected = joint_positions(base, motion) @ sim[:3, :3].T + sim[:3, 3]
    assert np.max(np.abs(joint_positions(target, moved) - expected)) < 1e-9 * scale * base.body_size
    # Deltas measured on the transformed rig are the conjugated ones, whatever the bone rolls.
    again = rot.quat_to_matrix(world_deltas(target, moved))
    assert np.allclose(again, rotation @ rot.quat_to_matrix(deltas) @ rotation.T, atol=1e-9)


def test_resample_keeps_endpoints_and_duration():
    rig = build_biped()
    motion = random_motion(rig, frames=121, amount=0.2)
    motion = Motion(120.0, motion.root_positions, motion.rotations)
    low = motion.resampled(30.0)
    assert low.frame_count == 31
    assert np.isclose(low.duration, motion.duration)
    assert np.allclose(low.rotations[-1] * np.sign(low.rotations[-1, :, :1]),
                       motion.rotations[-1] * np.sign(motion.rotations[-1, :, :1]))
    assert np.allclose(low.root_positions[10], motion.root_positions[40])


def test_motion_shape_errors():
    with pytest.raises(MotionError):
        Motion(30.0, np.zeros((3, 3)), np.zeros((4, 2, 4)) + [1, 0, 0, 0])
    with pytest.raises(MotionError):
        Motion(0.0, np.zeros((1, 3)), np.zeros((1, 2, 4)) + [1, 0, 0, 0])
    rig = build_biped()
    with pytest.raises(MotionError):
        forward_kinematics(rig, Motion(30.0, np.zeros((1, 3)), np.zeros((1, 2, 4)) + [1, 0, 0, 0]))


def test_translations_move_joints_and_are_recovered_from_world_transforms():
    from kirin.kirin_addon.core.motion import motion_from_world_transforms

    rig = build_biped(BipedSpec(roll_seed=3))
    prop = rig_from_bones(["prop"], [-1], [[0.5, 0, 0.1]], [[0.5, 0, 0.3]])
    rig = Rig(rig.names + ["prop"], np.r_[rig.parents, -1], np.concatenate([rig.rest, prop.rest]),
              np.concatenate([rig.tails, prop.tails]))
    base = random_motion(rig, frames=8, seed=5)
    rng = np.random.default_rng(0)
    moved = rng.normal(scale=0.05, size=(8, rig.joint_count, 3))
    motion = Motion(30.0, base.root_positions, base.rotations, moved)
    pose = forward_kinematics(rig, motion)
    spine = rig.index("mixamorig:Spine1")
    without = forward_kinematics(rig, base)
    assert not np.allclose(pose[:, spine, :3, 3], without[:, spine, :3, 3])
    back = motion_from_world_transforms(rig, pose, 30.0)
    assert back.has_translations
    assert np.allclose(forward_kinematics(rig, back), pose, atol=1e-12)
    plain = motion_from_world_transforms(rig, without, 30.0)
    assert plain.translations is None
    assert np.allclose(motion.resampled(15.0).translations[1], moved[2])
    assert np.allclose(motion.sliced(2, 5).translations, moved[2:5])
