"""Bad input gets a clear message and changes nothing in the scene."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core.rig import rig_from_bones
from kirin.kirin_addon.io.clip import save_clip
from kirin.kirin_addon.library.procedural import BipedSpec, build_biped, capsule_mesh, default_retarget_pair
from kirin.operators.scene_io.mesh import create_skinned_mesh, read_skinned_mesh
from kirin.operators.scene_io.rig import create_armature

from blender_support import activate, bpy, scene_io, scene_state


@pytest.fixture
def walk_file(tmp_path):
    source, motion, _, _ = default_retarget_pair()
    path = tmp_path / "walk.npz"
    save_clip(path, source, motion)
    return str(path)


def run_and_expect_error(operator, match: str, **kwargs) -> None:
    before = scene_state()
    with pytest.raises(RuntimeError, match=match):
        operator(**kwargs)
    assert scene_state() == before


def test_no_armature_selected(blender, walk_file):
    mesh = bpy.data.meshes.new("m")
    obj = bpy.data.objects.new("m", mesh)
    bpy.context.scene.collection.objects.link(obj)
    activate(obj)
    assert not bpy.ops.kirin.apply_motion_file.poll()
    run_and_expect_error(bpy.ops.kirin.apply_motion_file, "armature", filepath=walk_file)
    run_and_expect_error(bpy.ops.kirin.bake_to_nla, "armature")


def test_mesh_without_weights(blender, walk_file):
    rig = build_biped()
    arm = create_armature(rig, "arm")
    body = create_skinned_mesh(capsule_mesh(rig), arm, rig, "body")
    for group in list(body.vertex_groups):
        body.vertex_groups.remove(group)
    activate(body)
    with pytest.raises(scene_io.SceneError, match="no vertex weights"):
        read_skinned_mesh(body, arm, rig)
    run_and_expect_error(bpy.ops.kirin.apply_motion_file, "weights", filepath=walk_file)


def test_unapplied_non_uniform_scale(blender, walk_file):
    rig = build_biped()
    arm = create_armature(rig, "arm")
    arm.scale = (1.0, 2.0, 1.0)
    bpy.context.view_layer.update()
    activate(arm)
    run_and_expect_error(bpy.ops.kirin.apply_motion_file, "Apply > Scale", filepath=walk_file)


def test_uniformly_scaled_armature_is_fine(blender, walk_file):
    rig = build_biped()
    arm = create_armature(rig, "arm")
    arm.scale = (100.0, 100.0, 100.0)
    bpy.context.view_layer.update()
    activate(arm)
    assert bpy.ops.kirin.apply_motion_file(filepath=walk_file) == {"FINISHED"}


def test_too_many_bones(blender, walk_file):
    count = 500
    heads = np.c_[np.zeros((count, 2)), np.arange(count) * 0.01]
    rig = rig_from_bones([f"b{i}" for i in range(count)], np.arange(count) - 1, heads, heads + [0, 0, 0.01])
    rig.validate = lambda *a, **k: None  # build it anyway: users can have such rigs
    arm = create_armature(rig, "big")
    activate(arm)
    run_and_expect_error(bpy.ops.kirin.apply_motion_file, "at most", filepath=walk_file)


def test_unreadable_and_missing_files(blender, tmp_path):
    rig = build_biped()
    arm = create_armature(rig, "arm")
    activate(arm)
    junk = tmp_path / "junk.bvh"
    junk.write_text("this is not a bvh file")
    run_and_expect_error(bpy.ops.kirin.apply_motion_file, "Could not read junk.bvh", filepath=str(junk))
    run_and_expect_error(bpy.ops.kirin.apply_motion_file, "not found", filepath=str(tmp_path / "missing.glb"))
    run_and_expect_error(bpy.ops.kirin.apply_motion_file, "Unsupported", filepath=str(tmp_path / "clip.xyz"))


def test_several_roots_work(blender, walk_file):
    rig = build_biped(BipedSpec(naming="rigify"))
    arm = create_armature(rig, "arm")
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    extra = arm.data.edit_bones.new("prop_root")
    extra.head, extra.tail = (0.4, 0.0, 0.0), (0.4, 0.0, 0.3)
    bpy.ops.object.mode_set(mode="OBJECT")
    activate(arm)
    assert bpy.ops.kirin.apply_motion_file(filepath=walk_file) == {"FINISHED"}


def test_no_button_is_a_placeholder(blender):
    """Every Kirin operator works (none is a 'not available yet' stand-in); without an armature the
    video one is disabled with a reason."""
    names = [name for name in dir(bpy.ops.kirin) if not name.startswith("_")]
    assert "motion_from_video" in names
    for name in names:
        assert "Not available yet" not in getattr(bpy.ops.kirin, name).get_rna_type().description
    assert not bpy.ops.kirin.motion_from_video.poll()


def test_motion_file_with_zero_length_bones(blender, tmp_path):
    source, motion, _, _ = default_retarget_pair()
    tails = source.tails.copy()
    tails[4] = source.heads[4]
    broken = type(source)(source.names, source.parents, source.rest, tails)
    path = tmp_path / "broken.npz"
    save_clip(path, broken, motion)
    arm = create_armature(build_biped(), "arm")
    activate(arm)
    run_and_expect_error(bpy.ops.kirin.apply_motion_file, "Zero-length bones", filepath=str(path))
