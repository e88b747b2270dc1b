"""Blender's evaluated skinned mesh equals the engine's linear blend skinning of the same pose."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core.motion import forward_kinematics
from kirin.kirin_addon.core.skinning import linear_blend_skinning, skin_matrices
from kirin.kirin_addon.library.procedural import build_biped, capsule_mesh
from kirin.operators.headless import common as headless

from assets_support import asset_files
from blender_support import bpy, random_world_motion, scene_io

MESH_FILES = asset_files("khronos_fox/*.glb", "khronos_cesiumman/*.glb", "threejs_robotexpressive/*.glb",
                         "quaternius/animals_pack/Husky.glb", "quaternius/dinosaurs_pack/Triceratops.glb")


def compare_lbs(arm, meshes, frames: int = 3) -> float:
    rig = scene_io.read_rig(arm)
    skinned = [(m, scene_io.read_skinned_mesh(m, arm, rig)) for m in meshes]
    motion = random_world_motion(rig, frames, seed=4)
    scene_io.write_action(arm, rig, motion, "lbs")
    pose = forward_kinematics(rig, motion)
    worst = 0.0
    for t in range(frames):
        bpy.context.scene.frame_set(1 + t)
        for obj, mesh in skinned:
            expected = linear_blend_skinning(mesh.vertices, mesh.joint_indices, mesh.joint_weights,
                                             skin_matrices(rig.rest, pose[t]))
            got = scene_io.evaluated_mesh_vertices(obj, arm)
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
    arm = scene_io.create_armature(rig, "arm")
    arm.location = (1.0, 2.0, 0.5)
    arm.rotation_euler = (0.0, 0.0, 0.7)
    bpy.context.view_layer.update()
    body = scene_io.create_skinned_mesh(capsule_mesh(rig), arm, rig, "body")
    assert compare_lbs(arm, [body]) < 1e-5
