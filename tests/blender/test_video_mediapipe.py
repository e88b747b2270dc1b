"""Extract Motion From Video with MediaPipe Pose, headless: CesiumMan imported from its glTF, a video of
him walking (rendered from behind) → the backend runs MediaPipe in .venv-mediapipe → a new Action; a
quadruped with MediaPipe gets a clear message and the scene is unchanged."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from video_support import cesiumman_video

from kirin.operators.scene_io.rig import read_rig

from assets_support import asset_files
from blender_support import activate, bpy, headless, reported, scene_state

ROOT = Path(__file__).resolve().parents[2]
MODULE = f"bl_ext.{headless.REPO_NAME}.kirin"
CESIUM = asset_files("khronos_cesiumman/CesiumMan.glb")

pytestmark = pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "python").is_file()
    or not (ROOT / ".venv-mediapipe" / "bin" / "python").is_file() or not CESIUM,
    reason="needs the checkout's .venv and .venv-mediapipe (tools/setup_env.sh) and ../shared/assets",
)


@pytest.fixture
def kirin(blender):
    prefs = bpy.context.preferences.addons[MODULE].preferences
    prefs.backend_device, prefs.backend_threads = "cpu", 1
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = 30, 1.0
    return sys.modules[f"{MODULE}.operators.video"]


def test_cesiumman_follows_mediapipe(kirin, tmp_path):
    video = cesiumman_video(tmp_path / "cesium.mp4", 16)
    arm, _ = headless.import_rig_file(str(CESIUM[0]))
    activate(arm)
    report = reported(bpy.ops.kirin.motion_from_video, video=str(video), silhouettes="NONE", mediapipe=True,
                      epochs=1)
    found = report["backend_report"]["evidence"]["mediapipe"]
    assert report["mediapipe"] is True and found["frames_detected"] >= 12 and len(found["bones"]) == 14
    assert set(found["bones"].values()) <= set(read_rig(arm).names)
    assert arm.animation_data.action.name == "Kirin: cesium.mp4" and report["frames"] == 16


def test_a_quadruped_with_mediapipe_changes_nothing(kirin, tmp_path):
    video = cesiumman_video(tmp_path / "cesium.mp4", 4)
    arm, _ = headless.builtin_creature(3)
    activate(arm)
    before = scene_state()
    with pytest.raises(RuntimeError, match="humanoid"):
        bpy.ops.kirin.motion_from_video(video=str(video), silhouettes="NONE", mediapipe=True, epochs=1)
    assert scene_state() == before
