"""Motion → Action → Blender-evaluated pose reproduces the engine's joint transforms on every asset
rig, after randomising rest rolls, axes and scale, with bones in every rotation mode."""

from __future__ import annotations

import numpy as np
import pytest
from mathutils import Matrix

from kirin.kirin_addon.core.motion import Motion, forward_kinematics
from kirin.kirin_addon.core.rotations import axis_rotations
from kirin.kirin_addon.library.procedural import BipedSpec, build_biped
from kirin.operators.headless import common as headless
from kirin.operators.scene_io.action import read_action, write_action
from kirin.operators.scene_io.rig import create_armature, evaluated_pose, read_rig

from assets_support import asset_files
from blender_support import bpy, random_world_motion

RIG_FILES = asset_files("*/*.glb", "*/*.gltf", "quaternius/*/*.glb", "*/*.bvh")
ROTATION_MODES = ["QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE"]


def randomise_rest(arm, seed: int, scale: float) -> None:
    """Rotate the whole rest pose onto other axes, scale it and give every bone a new roll."""
    rng = np.random.default_rng(seed)
    rotations = axis_rotations()
    perm = rotations[int(rng.integers(len(rotations)))]
    transform = Matrix.Diagonal((scale, scale, scale, 1.0)) @ Matrix(perm.tolist()).to_4x4()
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    for bone in arm.data.edit_bones:
        bone.transform(transform, scale=True, roll=True)
    for bone in arm.data.edit_bones:
        bone.roll = bone.roll + float(rng.uniform(-np.pi, np.pi))
    bpy.ops.object.mode_set(mode="OBJECT")
    for pose_bone in arm.pose.bones:
        pose_bone.rotation_mode = ROTATION_MODES[int(rng.integers(len(ROTATION_MODES)))]


def check_round_trip(arm, frames: int = 6, seed: int = 0) -> float:
    rig = read_rig(arm)
    for bone in arm.pose.bones:  # the rest pose (an importer leaves scales of 1 ± 1e-5 in the pose)
        bone.location, bone.scale = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    motion = random_world_motion(rig, frames, seed)
    # Authored clips also move joints (hips under a ground root): key locations on loose bones.
    rng = np.random.default_rng(seed)
    moved = rng.normal(scale=0.05 * rig.body_size, size=(frames, rig.joint_count, 3))
    moved[:, rig.connected] = 0.0
    motion = Motion(motion.fps, motion.root_positions, motion.rotations, moved)
    write_action(arm, rig, motion, "roundtrip", frame_start=1)
    expected = forward_kinematics(rig, motion)
    worst = 0.0
    for t in range(frames):
        bpy.context.scene.frame_set(1 + t)
        got = evaluated_pose(arm, rig)
        err = np.max(np.abs(got[:, :3, 3] - expected[t, :, :3, 3])) / rig.body_size
        err_rot = np.max(np.abs(got[:, :3, :3] - expected[t, :, :3, :3]))
        worst = max(worst, err, err_rot)
    return worst


@pytest.mark.parametrize("path", RIG_FILES, ids=[p.stem for p in RIG_FILES])
def test_round_trip_on_asset_rigs(blender, path):
    arm, _ = headless.import_rig_file(str(path))
    scale = [1.0, 100.0, 0.01][len(path.stem) % 3]
    if scale * read_rig(arm).body_size < 0.05:
        scale = 100.0  # Blender deletes bones shorter than ~1e-5 on leaving edit mode
    randomise_rest(arm, seed=len(path.stem), scale=scale)
    assert check_round_trip(arm) < 1e-5


@pytest.mark.parametrize("roll_seed", [None, 3])
def test_round_trip_on_built_rig_keeps_rest_exact(blender, roll_seed):
    rig = build_biped(BipedSpec(roll_seed=roll_seed))
    arm = create_armature(rig, "built")
    back = read_rig(arm)
    order = [back.index(n) for n in rig.names]  # Blender stores bones in its own order
    assert sorted(back.names) == sorted(rig.names)
    assert np.allclose(back.rest[order], rig.rest, atol=1e-6)
    assert [back.names[p] if p >= 0 else None for p in back.parents[order]] == [
        rig.names[p] if p >= 0 else None for p in rig.parents]
    assert check_round_trip(arm) < 1e-5


def test_new_action_keeps_the_previous_one(blender):
    rig = build_biped()
    arm = create_armature(rig, "built")
    first = write_action(arm, rig, Motion.rest(rig, 3), "first")
    second = write_action(arm, rig, Motion.rest(rig, 3), "second")
    assert arm.animation_data.action == second
    assert first.use_fake_user and first.name in bpy.data.actions
    again = read_action(arm, rig, second)
    assert again.frame_count == 3


def test_read_action_recovers_written_motion(blender):
    rig = build_biped(BipedSpec(roll_seed=5))
    arm = create_armature(rig, "built")
    for k, pose_bone in enumerate(arm.pose.bones):
        mode = ROTATION_MODES[k % len(ROTATION_MODES)]
        pose_bone.rotation_mode = mode
    motion = random_world_motion(rig, 5, seed=2)
    moved = np.random.default_rng(1).normal(scale=0.1, size=(5, rig.joint_count, 3))
    moved[:, rig.connected] = 0.0
    motion = Motion(motion.fps, motion.root_positions, motion.rotations, moved)
    action = write_action(arm, rig, motion, "written")
    back = read_action(arm, rig, action, fps=30.0)
    assert np.allclose(forward_kinematics(rig, back), forward_kinematics(rig, motion), atol=1e-5)
