"""Extract Motion From Video end to end, headless: the add-on sends the rig (and its skin), a tiny
synthetic video of the same creature walking, its keypoints and Movie Clip tracks to a CPU backend (the
checkout's .venv Python, one thread) and writes a new Action; bad input changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from video_support import SIZE, synthetic_files

from kirin.kirin_addon.core.camera import PinholeCamera
from kirin.kirin_addon.core.motion import Motion
from kirin.operators.scene_io.action import action_channelbag, write_action
from kirin.operators.scene_io.mesh import create_skinned_mesh
from kirin.operators.scene_io.rig import create_armature, evaluated_pose, read_rig
from kirin.operators.scene_io.tracks import read_movie_clip_tracks

from blender_support import activate, bpy, headless, reported, scene_state

ROOT = Path(__file__).resolve().parents[2]
MODULE = f"bl_ext.{headless.REPO_NAME}.kirin"
COCKATOO = ROOT.parent / "shared" / "assets" / "video_cockatoo" / "cockatoo.mp4"

# The backend runs in the checkout's .venv (torch and PyAV live there, not in the bpy 5.0 environment).
pytestmark = pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "python").is_file()
    or not (ROOT / "models" / "weights" / "motion" / "model.json").is_file(),
    reason="needs the checkout's .venv (the backend's environment) and the shipped motion model",
)


def ext(name: str):
    """A module of the enabled extension (its own copy of the package, with its own backend)."""
    return sys.modules[f"{MODULE}.{name}"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return synthetic_files(tmp_path_factory.mktemp("video"), frames=12)


@pytest.fixture
def kirin(blender):
    prefs = bpy.context.preferences.addons[MODULE].preferences
    prefs.backend_device, prefs.backend_threads = "cpu", 1
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = 30, 1.0
    return ext("operators.video")


@pytest.fixture
def creature(kirin):
    """The quadruped the synthetic video shows, with its skinned mesh."""
    arm, _ = headless.builtin_creature(3)
    activate(arm)
    return arm


def keypoints_of(files, bone: str) -> np.ndarray:
    """(12,2) pixel positions of `bone` in the keypoints CSV."""
    rows = [line.split(",") for line in Path(files["keypoints"]).read_text().splitlines()[1:]]
    points = np.full((files["frames"], 2), np.nan)
    for frame, joint, x, y, _ in rows:
        if joint == bone:
            points[int(frame)] = float(x), float(y)
    return points


def movie_clip_with_track(files, bone: str):
    """The video as a Movie Clip with one track, named like `bone`, placed on its keypoints (the
    markers an animator would track), the marker of frame 4 disabled."""
    clip = bpy.data.movieclips.load(files["video"])
    points = keypoints_of(files, bone)
    track = clip.tracking.tracks.new(name=bone, frame=1)
    for t, (x, y) in enumerate(points):
        track.markers.insert_frame(t + 1, co=(x / SIZE[0], 1.0 - y / SIZE[1]))
    track.markers.find_frame(5).mute = True
    return clip, points


# ----------------------------------------------------------------------------- reading tracks (no backend)
def test_movie_clip_tracks_are_read_in_pixels_and_assigned_by_name(creature, files, kirin):
    rig = read_rig(creature)
    bone = rig.names[rig.main_root]
    clip, points = movie_clip_with_track(files, bone)
    clip.tracking.tracks.new(name="a speck of dust", frame=3).markers.find_frame(3).co = (0.5, 0.5)
    tracks, size = read_movie_clip_tracks(clip)
    assert size == SIZE and set(tracks) == {bone, "a speck of dust"}
    expected = points.copy()
    expected[4] = np.nan  # the disabled marker
    assert tracks[bone].shape == (12, 2)
    assert np.allclose(tracks[bone], expected, atol=1e-3, equal_nan=True)
    dust = tracks["a speck of dust"]
    assert np.allclose(dust[2], [SIZE[0] / 2, SIZE[1] / 2]) and np.isnan(dust[[0, 1, 3]]).all()

    settings = bpy.context.scene.kirin
    settings.video_clip = clip
    assert bpy.ops.kirin.list_video_tracks() == {"FINISHED"}
    assigned = {item.name: item.bone for item in settings.video_tracks}
    assert assigned == {bone: bone, "a speck of dust": ""}  # a track named like a bone follows it
    request = kirin.read_request(bpy.context, kirin.VideoSettings(
        video="", first=1, last=0, stride=1, keypoints="", silhouettes="NONE", masks="", clip=clip.name,
        epochs=1, idm=False))
    assert request.extraction.video == os.path.abspath(files["video"])  # the clip's own file
    assert list(request.extraction.tracks) == [bone]
    assert np.allclose(request.extraction.tracks[bone], expected, atol=1e-3, equal_nan=True)


# ----------------------------------------------------------------------------- end to end
def test_extract_writes_a_new_action_keeps_the_old_and_undoes(creature, files, kirin):
    arm = creature
    rig = read_rig(arm)
    old = write_action(arm, rig, Motion.rest(rig, 3), "My walk")
    bone = rig.names[rig.main_root]
    clip, _ = movie_clip_with_track(files, bone)
    settings = bpy.context.scene.kirin
    settings.video_clip = clip
    bpy.ops.kirin.list_video_tracks()
    settings.driving_video = ""  # the Movie Clip's file
    settings.video_keypoints = files["keypoints"]
    settings.video_stride = 2
    settings.video_epochs = 1
    activate(arm)
    bpy.ops.ed.undo_push(message="before Extract Motion From Video")
    before = scene_state()

    report = reported(bpy.ops.kirin.motion_from_video, "EXEC_DEFAULT", True)
    action = arm.animation_data.action
    assert action.name == "Kirin: walk.mp4" and action["kirin_video"] == os.path.abspath(files["video"])
    # Video frames 0, 2, ... 10: a 12 fps clip of 5/12 s, 13 frames at the scene's 30 fps.
    assert tuple(action.frame_range) == (1.0, 13.0)
    assert bpy.context.scene.frame_end == 250  # the user's range: grown to hold a clip, never shrunk
    assert old.name in bpy.data.actions and old.use_fake_user  # the previous action is kept
    bag = action_channelbag(action, arm)
    keyed = {fc.data_path.split('"')[1] for fc in bag.fcurves}
    assert keyed == set(rig.names)
    assert report["frames"] == 13 and report["bones"] == rig.joint_count and report["mesh"]
    assert report["tracks"] == [bone] and report["silhouettes"] == "background"
    assert report["backend_report"]["video_frames"] == 6
    assert report["backend_report"]["evidence"]["keypoint_bones"] == 4
    for frame in (1, 7, 13):
        bpy.context.scene.frame_set(frame)
        assert np.isfinite(evaluated_pose(arm, rig)).all()

    bpy.ops.ed.undo()
    assert scene_state() == before


def test_each_frame_alone_with_a_gait_and_a_facing_writes_the_take_and_its_camera(creature, files, kirin):
    """The panel's "Each frame alone", Gait and Facing reach the backend; the fitted camera is stored on
    the take, and sees the rig where the video shows the subject (OpenCV is the backend's, not Blender's)."""
    arm = creature
    rig = read_rig(arm)
    activate(arm)
    report = reported(bpy.ops.kirin.motion_from_video, video=files["video"], stride=2, silhouettes="STILLS",
                      gait="walk", facing="RIGHT", epochs=1)
    action = arm.animation_data.action
    assert report["silhouettes"] == "stills" and report["gait"] == "walk" and report["facing"] == "right"
    camera = action["kirin_video_camera"]
    assert len(camera["rotation"]) == 9 and list(camera["image_size"]) == list(SIZE)
    seen = PinholeCamera(camera["focal"], list(camera["center"]),
                         np.reshape(list(camera["rotation"]), (3, 3)), list(camera["translation"]))
    bpy.context.scene.frame_set(1)
    root = evaluated_pose(arm, rig)[rig.main_root][:3, 3]
    x, y = seen.project(root)
    assert 0 <= x <= SIZE[0] and 0 <= y <= SIZE[1] and seen.depth(root) > 0


def test_modal_task_shows_progress_and_esc_cancels_leaving_nothing(creature, files, kirin):
    """What modal() does on each timer tick, without timers: poll until the fit runs; Esc cancels it
    and nothing in the scene changed."""
    results_mod = ext("kirin_addon.backend.results")
    request = kirin.read_request(bpy.context, kirin.VideoSettings(
        video=files["video"], first=1, last=0, stride=1, keypoints=files["keypoints"],
        silhouettes="BACKGROUND", masks="", clip="", epochs=50, idm=False))
    state = scene_state()
    task = kirin.VideoTask(kirin.connect(bpy.context), request)
    deadline = time.monotonic() + 300
    while task.job.status.state != "running" or task.job.status.progress == 0.0:
        assert task.poll() is None and time.monotonic() < deadline  # one timer tick
        assert "Kirin: extracting motion from 'walk.mp4'" in task.progress_text
        time.sleep(0.05)
    task.cancel()  # Esc
    with pytest.raises(results_mod.JobCancelledError):
        while time.monotonic() < deadline:
            task.job.poll_once(wait=0.5)
            task.poll()
    assert scene_state() == state


# ----------------------------------------------------------------------------- bad input
def run_and_expect_error(match: str, **options) -> None:
    before = scene_state()
    with pytest.raises(RuntimeError, match=match):
        bpy.ops.kirin.motion_from_video(**options)
    assert scene_state() == before


def test_bad_input_gets_a_clear_message_and_changes_nothing(creature, files, kirin, tmp_path):
    rig = read_rig(creature)
    good = {"video": files["video"], "keypoints": files["keypoints"], "epochs": 1}
    run_and_expect_error("Choose a driving video", video="")
    run_and_expect_error("does not exist", **{**good, "video": str(tmp_path / "none.mp4")})
    run_and_expect_error("does not exist", **{**good, "keypoints": str(tmp_path / "none.csv")})
    run_and_expect_error("Nothing to fit to", video=files["video"], silhouettes="NONE")
    run_and_expect_error("comes before", **good, first=8, last=3)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    run_and_expect_error("empty", **{**good, "video": str(empty)})  # zero frames
    run_and_expect_error("not a video", **{**good, "video": files["broken"]})
    run_and_expect_error("past its end", **good, first=40)
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("frame,joint,x,y,confidence\n0,left_wing,10,10,1\n")
    run_and_expect_error("match no bone", **{**good, "keypoints": str(unknown)})
    run_and_expect_error("no moving subject", video=files["still"], epochs=1)  # fails in the job
    other = bpy.data.movieclips.load(files["still"])
    run_and_expect_error("not the driving video", **good, clip=other.name)
    clip, _ = movie_clip_with_track(files, rig.names[rig.main_root])
    bpy.context.scene.kirin.video_clip = clip
    item = bpy.context.scene.kirin.video_tracks.add()
    item.name, item.bone = rig.names[rig.main_root], "no such bone"
    run_and_expect_error("bones the armature does not have", **good)
    bpy.ops.object.select_all(action="DESELECT")
    bpy.context.view_layer.objects.active = None
    assert not bpy.ops.kirin.motion_from_video.poll()


# ----------------------------------------------------------------------------- the real video
@pytest.mark.skipif(not COCKATOO.is_file(), reason="../shared/assets/video_cockatoo is absent")
def test_cockatoo_video_on_a_procedural_bird(kirin):
    """The whole real clip end to end, from its silhouettes alone: 280 frames (20 fps, 1280×720) from a
    hand-held camera that drifts, a cockatoo on a perch that walks up to the lens (close-ups fill the
    frame, where nothing separates) and backs off. Every 4th frame, one epoch."""
    from kirin.kirin_addon.library.families.build import build_creature

    bird = build_creature("bird", 1)
    arm = create_armature(bird.rig, "Bird")
    create_skinned_mesh(bird.mesh, arm, bird.rig, "Bird Body")
    activate(arm)
    report = reported(bpy.ops.kirin.motion_from_video, video=str(COCKATOO), stride=4,
                      silhouettes="BACKGROUND", epochs=1)
    backend = report["backend_report"]
    assert backend["video_frames"] == 70 and report["bones"] == bird.rig.joint_count
    assert (backend["first_video_frame"], backend["last_video_frame"]) == (0, 276)
    assert backend["evidence"]["silhouettes"] == "background" and backend["fit"]["silhouettes"]
    action = arm.animation_data.action
    assert action.name == "Kirin: cockatoo.mp4"
    # 70 frames at 20 / 4 = 5 fps span 13.8 s: 415 frames at the scene's 30 fps.
    assert report["frames"] == 415 and tuple(action.frame_range) == (1.0, 415.0)
    for frame in (1, 200, 415):
        bpy.context.scene.frame_set(frame)
        assert np.isfinite(evaluated_pose(arm, bird.rig)).all()


# ----------------------------------------------------------------------------- the command line
def test_cli_extract_writes_the_blend_and_the_report(files, tmp_path):
    out, report = tmp_path / "walk.blend", tmp_path / "walk.json"
    kirin = Path(sys.executable).with_name("kirin")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([str(kirin), "extract", "--video", files["video"], "--keypoints", files["keypoints"],
                          "--creature", "quadruped", "--creature-seed", "3", "--start", "2", "--stride", "3",
                          "--epochs", "1", "--fps", "24", "--out", str(out), "--json", str(report),
                          "--threads", "1", "--device", "cpu"],
                         capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads(report.read_text())
    # Video frames 2, 5, 8, 11 at 8 fps: 3/8 s, 10 frames at 24 fps.
    assert summary["frames"] == 10 and summary["backend_report"]["video_frames"] == 4
    assert summary["backend_report"]["first_video_frame"] == 2
    assert summary["blend"] == str(out) and out.stat().st_size > 10_000
    bpy.ops.wm.open_mainfile(filepath=str(out))
    arm = bpy.data.objects[summary["armature"]]
    assert arm.animation_data.action.name == "Kirin: walk.mp4"
    assert tuple(arm.animation_data.action.frame_range) == (1.0, 10.0)
    bpy.ops.wm.read_factory_settings(use_empty=True)


def test_cli_extract_bad_video_is_a_clear_error(files, tmp_path):
    kirin = Path(sys.executable).with_name("kirin")
    run = subprocess.run([str(kirin), "extract", "--video", str(tmp_path / "none.mp4"),
                          "--out", str(tmp_path / "x.blend")], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "none.mp4" in run.stderr
    assert not (tmp_path / "x.blend").exists()
