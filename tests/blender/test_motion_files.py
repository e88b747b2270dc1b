"""Apply Motion From File with the mocap files of ../shared/assets, as a user runs it: the clip stands
upright on the target's floor and travels horizontally, whatever the file's axes and units.

Measured on the deformed mesh of CesiumMan (the README's retarget target): its lowest vertex per frame
(the soles), the height of its neck over its hips (upright), the hips' path."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.operators.scene_io.arrays import object_matrix
from kirin.operators.scene_io.mesh import evaluated_mesh_vertices

from assets_support import ASSETS
from blender_support import activate, bpy, headless, reported

CESIUM = ASSETS / "khronos_cesiumman" / "CesiumMan.glb"
pytestmark = pytest.mark.skipif(not CESIUM.is_file(), reason="needs ../shared/assets")


def _world(arm, points: np.ndarray) -> np.ndarray:
    matrix = object_matrix(arm)
    return points @ matrix[:3, :3].T + matrix[:3, 3]


def _track(arm, meshes, frames) -> dict:
    """Per frame: the lowest world vertex height, the hips' and neck's world positions."""
    lowest, hips, neck = [], [], []
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        vertices = np.concatenate([_world(arm, evaluated_mesh_vertices(m, arm)) for m in meshes])
        lowest.append(vertices[:, 2].min())
        bones = arm.pose.bones
        hips.append(_world(arm, np.array(bones["Skeleton_torso_joint_1"].head)[None])[0])
        neck.append(_world(arm, np.array(bones["Skeleton_neck_joint_1"].head)[None])[0])
    return {"lowest": np.array(lowest), "hips": np.array(hips), "neck": np.array(neck)}


def _rest(arm, meshes) -> tuple[float, float]:
    """The rest mesh's floor and height (world)."""
    arm.data.pose_position = "REST"
    bpy.context.view_layer.update()
    vertices = np.concatenate([_world(arm, evaluated_mesh_vertices(m, arm)) for m in meshes])
    arm.data.pose_position = "POSE"
    bpy.context.view_layer.update()
    return float(vertices[:, 2].min()), float(np.ptp(vertices[:, 2]))


def _apply(path) -> tuple[dict, object, list, tuple[float, float]]:
    arm, meshes = headless.import_rig_file(str(CESIUM))
    activate(arm)
    bpy.context.scene.render.fps = 30
    report = reported(bpy.ops.kirin.apply_motion_file, filepath=str(path))
    scene = bpy.context.scene
    frames = range(scene.frame_start, scene.frame_end + 1)
    return report, _track(arm, meshes, frames), meshes, _rest(arm, meshes)


def _tilt(track: dict) -> np.ndarray:
    trunk = track["neck"] - track["hips"]
    return np.degrees(np.arccos(np.clip(trunk[:, 2] / np.linalg.norm(trunk, axis=1), -1.0, 1.0)))


@pytest.mark.skipif(not (ASSETS / "bvh_cmu_subjects_01_07" / "002_01.bvh").is_file(),
                    reason="needs the CMU take")
def test_a_folded_z_up_centimetre_bvh_walks_upright_on_the_floor(blender):
    """002_01: a Character Creator skeleton whose zero pose is folded (hips along +Z, thighs along +Y) and
    whose takes stand along Y, in centimetres. On main it laid CesiumMan on its side and sank it through
    the floor (its body from z = +8.0 to −15.7)."""
    report, track, _, (floor, height) = _apply(ASSETS / "bvh_cmu_subjects_01_07" / "002_01.bvh")
    assert report["up_axis"] == "+Y" and report["unit"] == "cm"
    assert report["reference_frame"] is not None  # the folded zero pose was not taken as the rest
    assert report["mapped"] >= 15
    tilt = _tilt(track)
    assert np.percentile(tilt, 95) < 25.0, tilt  # upright: a walk leans a few degrees
    gap = (track["lowest"] - floor) / height
    assert abs(np.percentile(gap, 5)) < 0.02, gap  # the soles on the floor…
    assert gap.min() > -0.03 and np.median(gap) < 0.03, gap  # …neither sinking nor floating
    hips = track["hips"]
    travel = hips[-1, :2] - hips[0, :2]
    assert np.linalg.norm(travel) > 0.5 * height  # it walks…
    assert np.ptp(hips[:, 2]) < 0.1 * height  # …horizontally


@pytest.mark.skipif(not (ASSETS / "bvh_cmu_01_01" / "01_01.bvh").is_file(), reason="needs the CMU take")
def test_a_y_up_bvh_stands_on_the_floor_not_above_it(blender):
    """01_01: a Y-up CMU take whose rest stands at the origin and whose floor lies ~16 units below it; on
    main CesiumMan floated about half its height above the floor."""
    report, track, _, (floor, height) = _apply(ASSETS / "bvh_cmu_01_01" / "01_01.bvh")
    assert report["up_axis"] == "+Y" and report["reference_frame"] is None
    gap = (track["lowest"] - floor) / height
    assert abs(np.percentile(gap, 5)) < 0.02, np.percentile(gap, [0, 5, 50])
    assert np.median(gap) < 0.1  # mostly standing, walking or crouching: near the floor
    assert np.percentile(_tilt(track), 50) < 25.0


CC_TAKE, CC_WALK = (ASSETS / "bvh_cmu_subjects_01_07" / name for name in ("002_01.bvh", "007_03.bvh"))


@pytest.mark.skipif(not (CC_TAKE.is_file() and CC_WALK.is_file()), reason="needs the CMU takes")
def test_a_walk_onto_a_skeleton_whose_rest_lies_folded_stands_where_its_own_take_does(blender):
    """The target is a Character Creator skeleton as Blender imports its BVH: the zero pose folded (lying
    along +Y), its own take standing up +Z. The clip is made for the pose its take stands in and written
    onto the rest, and the user is told. On main the walk lay 122° over, 40 % of its height above the
    take's floor."""
    bpy.ops.import_anim.bvh(filepath=str(CC_TAKE), axis_up="Y", axis_forward="-Z", use_fps_scale=True)
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    activate(arm)
    scene = bpy.context.scene
    names = [bone.name for bone in arm.pose.bones]
    hip, head = names.index("CC_Base_Hip"), names.index("CC_Base_Head")

    def heads() -> np.ndarray:
        return _world(arm, np.array([bone.head for bone in arm.pose.bones]))

    scene.frame_set(1)
    floor, height = float(heads()[:, 2].min()), float(np.ptp(heads()[:, 2]))  # its take's T-pose
    report = reported(bpy.ops.kirin.apply_motion_file, filepath=str(CC_WALK))
    assert any("rest pose" in w and "frame" in w for w in report["warnings"])
    tilt, lowest, hips = [], [], []
    for frame in range(scene.frame_start, scene.frame_end + 1, 3):
        scene.frame_set(frame)
        points = heads()
        trunk = points[head] - points[hip]
        tilt.append(np.degrees(np.arccos(trunk[2] / np.linalg.norm(trunk))))
        lowest.append((points[:, 2].min() - floor) / height)
        hips.append(points[hip])
    hips = np.array(hips)
    assert np.percentile(tilt, 95) < 25.0, tilt  # upright
    assert abs(np.percentile(lowest, 5)) < 0.03 and np.median(lowest) < 0.05, lowest  # on its take's floor
    assert np.linalg.norm(hips[-1, :2] - hips[0, :2]) > 0.5 * height  # it walks…
    assert np.ptp(hips[:, 2]) < 0.1 * height  # …horizontally
