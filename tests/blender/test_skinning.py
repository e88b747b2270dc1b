"""Blender's evaluated skinned mesh equals the engine's linear blend skinning of the same pose."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core.motion import forward_kinematics
from kirin.kirin_addon.core.skinning import linear_blend_skinning, skin_matrices
from kirin.kirin_addon.library.procedural import build_biped, capsule_mesh
from kirin.operators.headless import common as headless
from kirin.operators.scene_io.action import write_action
from kirin.operators.scene_io.mesh import (
    create_skinned_mesh,
    evaluated_mesh_vertices,
    read_armature_skin,
    read_skinned_mesh,
)
from kirin.operators.scene_io.rig import create_armature, read_rig

from assets_support import asset_files
from blender_support import bpy, random_world_motion

MESH_FILES = asset_files("khronos_fox/*.glb", "khronos_cesiumman/*.glb", "threejs_robotexpressive/*.glb",
                         "quaternius/animals_pack/Husky.glb", "quaternius/dinosaurs_pack/Triceratops.glb")


def compare_lbs(arm, meshes, frames: int = 3) -> float:
    rig = read_rig(arm)
    skinned = [(m, read_skinned_mesh(m, arm, rig)) for m in meshes]
    motion = random_world_motion(rig, frames, seed=4)
    write_action(arm, rig, motion, "lbs")
    pose = forward_kinematics(rig, motion)
    worst = 0.0
    for t in range(frames):
        bpy.context.scene.frame_set(1 + t)
        for obj, mesh in skinned:
            expected = linear_blend_skinning(mesh.vertices, mesh.joint_indices, mesh.joint_weights,
                                             skin_matrices(rig.rest, pose[t]))
            got = evaluated_mesh_vertices(obj, arm)
            worst = max(worst, float(np.max(np.abs(got - expected))) / rig.body_size)
    return worst


@pytest.mark.parametrize("path", MESH_FILES, ids=[p.stem for p in MESH_FILES])
def test_blender_skinning_matches_engine_lbs_on_assets(blender, path):
    arm, meshes = headless.import_rig_file(str(path))
    meshes = [m for m in meshes if not m.data.shape_keys]
    assert meshes, "the asset has a skinned mesh"
    assert compare_lbs(arm, meshes) < 1e-5


def test_built_character_skinning(blender):
    rig = build_biped()
    arm = create_armature(rig, "arm")
    arm.location = (1.0, 2.0, 0.5)
    arm.rotation_euler = (0.0, 0.0, 0.7)
    bpy.context.view_layer.update()
    body = create_skinned_mesh(capsule_mesh(rig), arm, rig, "body")
    assert compare_lbs(arm, [body]) < 1e-5


def test_armature_skin_is_every_mesh_it_moves(blender):
    """The skin sent with a request is every weighted mesh of the armature and every mesh parented to
    one of its bones (weight 1 on that bone, read back to rest whatever the pose is when it is read):
    Blender moves each vertex as the engine's skinning of that skin does."""
    rig = build_biped()
    arm = create_armature(rig, "arm")
    arm.location = (1.0, 2.0, 0.5)
    bpy.context.view_layer.update()
    body = create_skinned_mesh(capsule_mesh(rig), arm, rig, "body")
    mitt = create_skinned_mesh(capsule_mesh(rig), arm, rig, "mitt")
    data = bpy.data.meshes.new("plate")
    data.from_pydata([(x, y, z) for x in (0, .05) for y in (0, .05) for z in (0, .05)], [],
                     [(0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5)])
    plate = bpy.data.objects.new("plate", data)
    bpy.context.scene.collection.objects.link(plate)
    bone = rig.names[rig.joint_count // 2]
    plate.parent, plate.parent_type, plate.parent_bone = arm, "BONE", bone
    motion = random_world_motion(rig, 3, seed=2)
    write_action(arm, rig, motion, "posed")
    bpy.context.scene.frame_set(2)  # read while posed: the plate must come back to rest
    skin = read_armature_skin(bpy.context, arm, rig)
    counts = [len(o.data.vertices) for o in (body, mitt, plate)]
    assert skin.vertex_count == sum(counts)
    carried = skin.joint_indices[-counts[2]:, 0]
    assert np.all(skin.joint_weights[-counts[2]:, 0] == 1.0) and np.all(carried == rig.names.index(bone))
    pose = forward_kinematics(rig, motion)
    for t in (0, 2):
        bpy.context.scene.frame_set(1 + t)
        expected = linear_blend_skinning(skin.vertices, skin.joint_indices, skin.joint_weights,
                                         skin_matrices(rig.rest, pose[t]))
        got = np.concatenate([evaluated_mesh_vertices(o, arm) for o in (body, mitt, plate)])
        assert np.max(np.abs(got - expected)) / rig.body_size < 1e-5
