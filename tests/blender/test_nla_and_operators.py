"""Operators as a user runs them: Apply Motion From File, Bake to NLA, takes, joint maps."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.io.clip import save_clip
from kirin.kirin_addon.library.procedural import BipedSpec, biped_walk, default_retarget_pair
from kirin.operators.headless import common as headless
from kirin.operators.scene_io.action import write_action
from kirin.operators.scene_io.mesh import create_skinned_mesh
from kirin.operators.scene_io.rig import create_armature, evaluated_pose, read_rig

from assets_support import ASSETS
from blender_support import activate, bpy


@pytest.fixture
def walk_file(tmp_path):
    source, motion, _, _ = default_retarget_pair()
    path = tmp_path / "walk.npz"
    save_clip(path, source, motion, captions=["walking"], metadata={"name": "walk"})
    return str(path)


@pytest.fixture
def character(blender):
    _, _, target, mesh = default_retarget_pair()
    bpy.context.scene.render.fps = 30  # the clip's rate: no resampling
    arm = create_armature(target, "Character")
    body = create_skinned_mesh(mesh, arm, target, "Body")
    activate(arm)
    return arm, body


def poses_over(arm, rig, frames) -> np.ndarray:
    out = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        out.append(evaluated_pose(arm, rig))
    return np.array(out)


def test_apply_motion_file_makes_a_new_action(character, walk_file):
    arm, _ = character
    rig = read_rig(arm)
    previous = write_action(arm, rig, biped_walk(rig, BipedSpec(naming="rigify"), frames=5), "mine")
    assert bpy.ops.kirin.apply_motion_file(filepath=walk_file) == {"FINISHED"}
    action = arm.animation_data.action
    assert action != previous and "walk" in action.name
    assert previous.use_fake_user
    assert bpy.context.scene.frame_end - bpy.context.scene.frame_start + 1 == 72
    poses = poses_over(arm, rig, range(1, 73, 10))
    assert np.ptp(poses[:, rig.main_root, 1, 3]) > 0.5  # walked along −Y


def test_bake_to_nla_plays_back_the_same_poses(character, walk_file):
    arm, _ = character
    rig = read_rig(arm)
    bpy.ops.kirin.apply_motion_file(filepath=walk_file)
    frames = range(1, 73, 7)
    from_action = poses_over(arm, rig, frames)
    assert bpy.ops.kirin.bake_to_nla(track_name="Walk") == {"FINISHED"}
    anim = arm.animation_data
    assert anim.action is None and anim.nla_tracks[-1].name == "Walk"
    from_nla = poses_over(arm, rig, frames)
    assert np.max(np.abs(from_nla - from_action)) < 1e-5 * rig.body_size

    # A second take: the first becomes a muted track; soloing brings it back.
    bpy.ops.kirin.apply_motion_file(filepath=walk_file, align_rest=False)
    bpy.ops.kirin.bake_to_nla(track_name="Walk")
    names = [t.name for t in anim.nla_tracks]
    assert names == ["Walk", "Walk.001"]
    assert anim.nla_tracks["Walk"].mute and not anim.nla_tracks["Walk.001"].mute
    assert bpy.ops.kirin.solo_take(track_name="Walk") == {"FINISHED"}
    assert not anim.nla_tracks["Walk"].mute and anim.nla_tracks["Walk.001"].mute
    assert np.max(np.abs(poses_over(arm, rig, frames) - from_action)) < 1e-5 * rig.body_size


def test_joint_map_is_editable(character, walk_file):
    arm, _ = character
    assert bpy.ops.kirin.map_joints(filepath=walk_file) == {"FINISHED"}
    items = {item.name: item.source for item in arm.kirin.joint_map}
    assert items["DEF-thigh.L"] == "mixamorig:LeftUpLeg"
    assert items["DEF-upper_arm.R"] == "mixamorig:RightArm"
    # The user unmaps the left forearm: it must then keep its rest pose relative to the upper arm.
    arm.kirin.joint_map["DEF-forearm.L"].source = ""
    bpy.context.scene.kirin.motion_file = walk_file
    assert bpy.ops.kirin.apply_motion_file(filepath=walk_file) == {"FINISHED"}
    rig = read_rig(arm)
    fore = rig.index("DEF-forearm.L")
    for f in (10, 30):
        bpy.context.scene.frame_set(f)
        basis = np.array(arm.pose.bones["DEF-forearm.L"].matrix_basis)
        assert np.allclose(basis, np.eye(4), atol=1e-5), fore


@pytest.mark.skipif(not (ASSETS / "bvh_cmu_01_01").is_dir(), reason="needs ../shared/assets")
def test_cmu_bvh_onto_cesium_man(blender):
    arm, _ = headless.import_rig_file(str(ASSETS / "khronos_cesiumman" / "CesiumMan.glb"))
    activate(arm)
    result = bpy.ops.kirin.apply_motion_file(filepath=str(ASSETS / "bvh_cmu_01_01" / "01_01.bvh"))
    assert result == {"FINISHED"}
    mapped = {item.name for item in arm.kirin.joint_map if item.source}
    assert len(mapped) == 0 or len(mapped) >= 10
    assert arm.animation_data.action.name.startswith("01_01")
