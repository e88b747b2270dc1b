"""MediaPipe Pose as keypoint evidence (kirin_addon/video/mediapipe_pose.py): which rigs are humanoid and
which bone takes which landmark, the landmarks → keypoints conversion, dropping upside-down frames,
the child process (its errors, cancel) and, where .venv-mediapipe exists, real detection on CesiumMan
rendered from behind against the rig's true joints."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.library.families.build import build_creature
from kirin.kirin_addon.library.procedural import BipedSpec, biped_roles, build_biped
from kirin.kirin_addon.video import mediapipe_pose as mp

from assets_support import asset_files

CESIUM = asset_files("khronos_cesiumman/CesiumMan.glb")
HAS_MEDIAPIPE = mp.find_mediapipe_python() is not None


# ----------------------------------------------------------------------------- which bones
@pytest.mark.parametrize("naming, arms", [("mixamo", "T"), ("rigify", "A")])
def test_a_biped_maps_every_role_to_its_own_bone(naming, arms):
    spec = BipedSpec(naming=naming, arm_pose=arms, height=1.7, roll_seed=3)
    rig = build_biped(spec)
    truth = biped_roles(rig, spec)
    joints = mp.humanoid_joints(rig)
    assert set(joints) == set(mp.ROLE_LANDMARKS)
    assert joints == {role: truth[role] for role in mp.ROLE_LANDMARKS}


@pytest.mark.skipif(not CESIUM, reason="../shared/assets is not present")
def test_cesiumman_numbered_bones_map_by_their_geometry():
    from kirin.kirin_addon.io.gltf import load_gltf

    rig = load_gltf(CESIUM[0]).rig
    names = {role: rig.names[j] for role, j in mp.humanoid_joints(rig).items()}
    assert names["thigh.L"] == "leg_joint_L_1" and names["shin.R"] == "leg_joint_R_2"
    assert names["foot.L"] == "leg_joint_L_3" and names["hand.R"] == "Skeleton_arm_joint_R__3_"
    assert names["hips"] == "Skeleton_torso_joint_1"


@pytest.mark.parametrize("family", ["quadruped", "spider", "bird"])
def test_rigs_that_are_not_humanoid_are_refused(family):
    rig = build_creature(family, 2).rig
    with pytest.raises(mp.MediaPipeError, match="humanoid"):
        mp.humanoid_joints(rig)


# ----------------------------------------------------------------------------- landmarks → keypoints
def test_landmarks_become_pixels_of_the_right_bones_with_their_visibility():
    joints = {"hips": 0, "thigh.L": 1, "thigh.R": 2, "hand.L": 3}
    points = np.full((3, 33, 2), np.nan)
    visibility = np.zeros((3, 33))
    points[0, 23], points[0, 24], points[0, 15] = (0.4, 0.5), (0.6, 0.5), (0.25, 0.75)
    visibility[0, 23], visibility[0, 24], visibility[0, 15] = 0.9, 0.5, 0.3
    points[1] = 0.5  # frame 1: everything at the centre, visibility 0 (not seen)
    keypoints, confidence = mp.landmarks_to_keypoints(points, visibility, joints, 5, (200, 100))
    assert keypoints.shape == (3, 5, 2) and confidence.shape == (3, 5)
    np.testing.assert_allclose(keypoints[0, 0], [100, 50])  # the hips: the hip landmarks' midpoint
    np.testing.assert_allclose(keypoints[0, 1], [80, 50])
    np.testing.assert_allclose(keypoints[0, 3], [50, 75])
    assert confidence[0, 0] == pytest.approx(0.8 * 0.5)  # the weaker landmark, times the role's factor
    assert confidence[0, 2] == pytest.approx(0.5) and confidence[0, 3] == pytest.approx(0.3)
    assert np.all(np.isnan(keypoints[0, 4])) and confidence[0, 4] == 0  # a bone with no role
    assert np.all(confidence[1] == 0)
    assert np.all(np.isnan(keypoints[2])) and np.all(confidence[2] == 0)  # no person found


def test_upside_down_frames_are_dropped():
    points = np.full((4, 33, 2), 0.5)
    points[:, [11, 12], 1] = 0.3  # shoulders high in the picture (y grows downwards)
    points[:, [23, 24], 1] = 0.6
    points[2, [23, 24], 1] = 0.1  # frame 2: the hips above the shoulders
    points[3] = np.nan  # frame 3: nobody
    kept, dropped = mp.drop_flipped(points)
    assert dropped == 1 and np.all(np.isnan(kept[2])) and np.all(np.isnan(kept[3]))
    np.testing.assert_array_equal(kept[[0, 1]], points[[0, 1]])


# ----------------------------------------------------------------------------- the child process
def test_without_mediapipe_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setenv("KIRIN_MEDIAPIPE_PYTHON", "/nowhere/python")
    assert mp.find_mediapipe_python() is None
    with pytest.raises(mp.MediaPipeError, match="setup_env.sh"):
        mp.detect_landmarks(np.zeros((2, 16, 16, 3), np.uint8))


def test_a_python_without_mediapipe_fails_with_its_message():
    import sys

    with pytest.raises(mp.MediaPipeError, match="MediaPipe failed.*mediapipe"):
        mp.detect_landmarks(np.zeros((2, 16, 16, 3), np.uint8), python=sys.executable)


def test_bad_frames_are_refused():
    with pytest.raises(mp.MediaPipeError, match="shape"):
        mp.detect_landmarks(np.zeros((2, 16, 16), np.uint8), python="unused")


@pytest.mark.skipif(not HAS_MEDIAPIPE, reason="no .venv-mediapipe (tools/setup_env.sh makes it)")
def test_a_cancel_stops_the_process():
    class Cancelled(Exception):
        pass

    calls = []

    def progress(fraction):
        calls.append(fraction)
        if len(calls) >= 2:
            raise Cancelled

    frames = np.random.default_rng(0).integers(0, 255, (400, 96, 96, 3), dtype=np.uint8)
    with pytest.raises(Cancelled):
        mp.detect_landmarks(frames, progress=progress)
    assert len(calls) == 2


@pytest.mark.skipif(not HAS_MEDIAPIPE, reason="no .venv-mediapipe (tools/setup_env.sh makes it)")
def test_no_person_in_noise():
    frames = np.random.default_rng(1).integers(0, 255, (6, 128, 128, 3), dtype=np.uint8)
    rig = build_biped(BipedSpec())
    with pytest.raises(mp.MediaPipeError, match="no person"):
        mp.mediapipe_keypoints(frames, rig, (128, 128))


@pytest.mark.skipif(not (HAS_MEDIAPIPE and CESIUM), reason="needs .venv-mediapipe and ../shared/assets")
def test_cesiumman_walking_seen_from_behind_gives_its_joints():
    """CesiumMan's clip rendered (kirin_addon/video_synth) from behind: MediaPipe finds him in most
    frames and the mapped keypoints land on his true joints (PCK@0.1 of the 2D bounding box)."""
    from video_support import cesiumman_from_behind

    rig, video = cesiumman_from_behind(16)
    calls = []
    keypoints, confidence, report = mp.mediapipe_keypoints(video.frames, rig, (320, 240),
                                                           progress=calls.append)
    assert calls and report["frames"] == 16 and report["frames_detected"] >= 12
    assert set(report["bones"].values()) <= set(rig.names)
    joints = [rig.index(name) for name in report["bones"].values()]
    found = confidence[:, joints] > 0
    assert found.mean() > 0.5
    truth = video.keypoints[:, joints]
    diagonal = np.linalg.norm(video.keypoints.max(1) - video.keypoints.min(1), axis=-1)[:, None]
    within = np.linalg.norm(keypoints[:, joints] - truth, axis=-1) <= 0.1 * diagonal
    assert within[found].mean() >= 0.8
