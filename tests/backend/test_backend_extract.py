"""Extract Motion From Video over real HTTP (the shared in-process backend, CPU, one thread): a tiny
synthetic video of a procedural creature walking, its keypoints, tracks and masks → a motion on the
rig at the scene's frame rate; bad input → a clear 4xx and no job."""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pytest
from mutation_support import json_paths, replaced
from video_support import FPS, SIZE, synthetic_files

from kirin.kirin_addon.backend.protocol import ProtocolError, motion_to_json
from kirin.kirin_addon.backend.protocol_video import extract_to_json
from kirin.kirin_addon.backend.results import BackendError, JobCancelledError, decode_extract
from kirin.kirin_addon.core.motion import Motion
from kirin.kirin_addon.video.mediapipe_pose import find_mediapipe_python
from kirin.kirin_addon.video.request import ExtractRequest
from kirin.kirin_addon.video.video_io import scene_frame_map
from kirin.models.server.video import resample_positions

from assets_support import asset_files

pytest.importorskip("av")
pytest.importorskip("scipy")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return synthetic_files(tmp_path_factory.mktemp("video"), frames=12)


@pytest.fixture
def fake_fit(monkeypatch):
    """The video pipeline's fit (kirin_addon/video/pipeline.py) replaced by a rest pose that records the
    evidence, settings and start it was given (the backend runs in this process)."""
    from kirin.kirin_addon.video.fit_config import VideoFitResult
    from kirin.kirin_addon.video.pipeline import VideoPipeline

    seen: dict = {}

    def fit(self, rig, evidence, mesh=None, config=None, init=None, camera=None, progress=None):
        seen.update(evidence=evidence, mesh=mesh, config=config, init=init)
        for k in range(5):
            progress(k / 4)
            time.sleep(seen.get("delay", 0.0))
        motion = Motion.rest(rig, evidence.frame_count, evidence.fps)
        error = np.zeros(evidence.frame_count)
        return VideoFitResult(motion, None, 1.0, error, 0.01, {"fake": True})

    monkeypatch.setattr(VideoPipeline, "fit", fit)
    return seen


def job_count(client) -> int:
    return len(client.jobs())


# ----------------------------------------------------------------------------- end to end
def test_extract_fits_the_rig_to_the_video_at_the_scene_rate(client, files):
    from kirin.kirin_addon.library.families.build import build_creature

    creature = build_creature("quadruped", 3)  # the one drawn in the video
    rig = creature.rig
    job = client.extract_motion(rig, ExtractRequest(files["video"], keypoints=files["keypoints"], fps=30.0,
                                                    epochs=1), creature.mesh)
    result = job.wait(timeout=600)
    # 12 frames at 24 fps span 11/24 s: 14 frames at 30 fps.
    assert result.motion.frame_count == len(scene_frame_map(FPS, 30.0, 12)) == 14
    assert result.motion.joint_count == rig.joint_count and result.motion.fps == 30.0
    assert np.isfinite(result.motion.rotations).all() and np.isfinite(result.motion.root_positions).all()
    report = result.report
    assert report["video_frames"] == 12 and report["clip_fps"] == FPS and report["image_size"] == list(SIZE)
    # The capsules' largest connected piece is the mask: where it holds too few keypoints it is dropped.
    assert 0 <= report["evidence"].pop("silhouettes_dropped") < 12
    assert report["evidence"] == {"keypoints": "walk.csv", "keypoint_bones": 4, "mediapipe": None,
                                  "tracks": [], "silhouettes": "background"}
    assert "idm" not in report
    assert result.reprojection_px.shape == (12,)
    assert report["seconds_per_frame"] > 0 and "losses" in report["fit"]


def test_frame_range_stride_tracks_and_masks_reach_the_fit(client, files, fake_fit, tmp_path):
    from kirin.kirin_addon.library.families.build import build_creature
    from kirin.kirin_addon.library.render import write_png

    rig = build_creature("quadruped", 3).rig
    bone = rig.names[rig.main_root]
    track = np.full((12, 2), np.nan)
    track[::2] = np.arange(12)[::2, None] * [5.0, 1.0] + [10.0, 30.0]  # markers on even frames only
    masks = tmp_path / "masks"
    masks.mkdir()
    for t in range(12):
        image = np.zeros((SIZE[1], SIZE[0], 3), np.uint8)
        image[20:40, 4 * t:4 * t + 30] = 255
        write_png(masks / f"mask_{t:04d}.png", image)
    # Video frames 2, 4, 6, 8 (stop 10 excluded... and 9 is odd): a 12 fps clip, then 24 fps.
    job = client.extract_motion(rig, ExtractRequest(files["video"], start=2, stop=10, stride=2,
                                                    tracks={bone: track}, silhouettes=str(masks), fps=24.0))
    result = job.wait(timeout=120)
    evidence = fake_fit["evidence"]
    assert evidence.frame_count == 4 and evidence.fps == FPS / 2 and evidence.image_size == SIZE
    joint = rig.main_root
    assert np.allclose(evidence.points[:, joint], track[[2, 4, 6, 8]])
    assert np.all(evidence.confidence[:, joint] == 1.0)
    others = np.delete(np.arange(rig.joint_count), joint)
    assert np.all(evidence.confidence[:, others] == 0.0)
    assert evidence.silhouettes.shape[0] == 4 and evidence.silhouettes[0].mean() > 0.05
    assert result.motion.frame_count == 7 and result.motion.fps == 24.0  # 3/12 s at 24 fps
    assert result.report["evidence"]["tracks"] == [bone]
    assert result.report["evidence"]["silhouettes"] == "masks"
    assert result.report["first_video_frame"] == 2 and result.report["last_video_frame"] == 8


def test_the_inverse_dynamics_start_is_used_or_said_to_be_unavailable(client, files, fake_fit, monkeypatch):
    from kirin.kirin_addon.library.families.build import build_creature
    from kirin.models.server.video import ExtractService

    creature = build_creature("quadruped", 3)
    rig = creature.rig
    calls = []

    class FakeIDM:
        card = {"key": "abc"}

        def predict(self, silhouettes, image_size=None, fps=30.0):
            calls.append((silhouettes.shape[0], tuple(image_size), fps))
            return Motion.rest(rig, silhouettes.shape[0], fps)

    def load(rig_, mesh, progress=None):
        progress(0.5, "training")
        assert rig_.names == rig.names and mesh is not None
        return FakeIDM()

    monkeypatch.setattr(ExtractService, "_idm_api", staticmethod(lambda: load))
    job = client.extract_motion(rig, ExtractRequest(files["video"], stride=3, idm=True), creature.mesh)
    result = job.wait(timeout=120)
    assert calls == [(4, SIZE, FPS / 3)] and fake_fit["init"].frame_count == 4
    assert result.report["idm"]["used"] is True and result.report["idm"]["model"] == "abc"
    # Keypoints only: the model reads silhouettes.
    request = ExtractRequest(files["video"], keypoints=files["keypoints"], silhouettes="none", idm=True)
    result = client.extract_motion(rig, request).wait(timeout=120)
    assert result.report["idm"].startswith("not available without silhouettes") and fake_fit["init"] is None
    # A backend without the model says so; the fit starts from the standing pose.
    monkeypatch.setattr(ExtractService, "_idm_api", staticmethod(lambda: None))
    result = client.extract_motion(rig, ExtractRequest(files["video"], idm=True)).wait(timeout=120)
    assert result.report["idm"].startswith("not available") and fake_fit["init"] is None


def test_the_gait_starts_the_fit_at_the_video_s_stride_or_says_why_not(client, files, fake_fit, monkeypatch):
    from kirin.kirin_addon.eval import footage
    from kirin.kirin_addon.library.families.build import build_creature
    from kirin.kirin_addon.video.fit_config import VideoFitConfig

    creature = build_creature("quadruped", 3)
    rig = creature.rig
    # Twelve frames show no stride: the fit starts from the standing pose, and the report says why.
    result = client.extract_motion(rig, ExtractRequest(files["video"]), creature.mesh).wait(timeout=120)
    assert result.report["gait"] == {"used": False, "why": "the silhouettes show no stride"}
    assert fake_fit["init"] is None and fake_fit["config"].prior == VideoFitConfig().prior
    # A stride the silhouettes show (2 Hz here): the rig's gait at 8 phases starts the fit and holds it.
    monkeypatch.setattr(footage, "silhouette_stride_hz", lambda masks, fps: 2.0)
    request = ExtractRequest(files["video"], gait="a dog trotting", facing="right")
    result = client.extract_motion(rig, request, creature.mesh).wait(timeout=120)
    gait = result.report["gait"]
    assert gait["used"] and gait["gait"] == "trot" and gait["chosen_by"] == "description"
    assert gait["frequency_hz"] == 2.0 and gait["phases"] == 8
    starts = fake_fit["init"]
    assert len(starts) == 8 and all(m.frame_count == 12 for m in starts)
    assert not np.allclose(starts[0].rotations, starts[4].rotations)  # half a stride apart
    config = fake_fit["config"]
    assert config.prior == config.gait_prior and config.facing == "right"
    # "none": no gait, whatever the silhouettes show.
    request = ExtractRequest(files["video"], gait="none")
    result = client.extract_motion(rig, request, creature.mesh).wait(timeout=120)
    assert "gait" not in result.report and fake_fit["init"] is None and fake_fit["config"].facing is None


def test_each_frame_on_its_own_reaches_the_fit(client, files, fake_fit):
    from kirin.kirin_addon.library.families.build import build_creature

    pytest.importorskip("cv2")
    rig = build_creature("quadruped", 3).rig
    request = ExtractRequest(files["video"], silhouettes="stills")
    result = client.extract_motion(rig, request).wait(timeout=120)
    evidence = fake_fit["evidence"]
    assert evidence.silhouettes is not None and evidence.silhouettes.shape[0] == 12
    assert 0.01 < evidence.silhouettes.mean() < 0.5
    assert result.report["evidence"]["silhouettes"] == "stills"


def test_a_running_extraction_cancels(client, files, fake_fit):
    from kirin.kirin_addon.library.families.build import build_creature

    fake_fit["delay"] = 1.0
    rig = build_creature("quadruped", 3).rig
    job = client.extract_motion(rig, ExtractRequest(files["video"], keypoints=files["keypoints"],
                                                    silhouettes="none"))
    deadline = time.monotonic() + 60
    while job.poll_once(wait=0.2).state != "running" or job.status.progress < 0.2:
        assert not job.finished and time.monotonic() < deadline
    job.cancel()  # Esc: cancelled, and deleted on the backend
    with pytest.raises(JobCancelledError):
        job.wait(timeout=60)
    with pytest.raises(BackendError) as info:
        client.status(job.id)
    assert info.value.status == 404


def test_a_video_with_no_moving_subject_fails_the_job_clearly(client, files):
    from kirin.kirin_addon.library.families.build import build_creature

    rig = build_creature("quadruped", 3).rig
    job = client.extract_motion(rig, ExtractRequest(files["still"]))
    with pytest.raises(BackendError) as info:
        job.wait(timeout=120)
    assert info.value.status == 422 and "no moving subject" in info.value.message


# ----------------------------------------------------------------------------- MediaPipe Pose
@pytest.mark.skipif(not (find_mediapipe_python() and asset_files("khronos_cesiumman/CesiumMan.glb")),
                    reason="needs .venv-mediapipe (tools/setup_env.sh) and ../shared/assets")
def test_mediapipe_keypoints_reach_the_fit(client, fake_fit, tmp_path):
    from video_support import cesiumman_from_behind

    from kirin.kirin_addon.video.video_io import write_video

    rig, video = cesiumman_from_behind(16)
    path = write_video(tmp_path / "cesium.mp4", video.frames, 30.0)
    request = ExtractRequest(path, silhouettes="none", mediapipe=True)
    result = client.extract_motion(rig, request).wait(timeout=300)
    evidence = fake_fit["evidence"]
    found = evidence.confidence > 0
    bones = result.report["evidence"]["mediapipe"]["bones"]
    assert set(np.flatnonzero(found.any(0))) == {rig.index(name) for name in bones.values()}
    assert result.report["evidence"]["mediapipe"]["frames_detected"] >= 12
    error = np.linalg.norm(evidence.points - video.keypoints, axis=-1)[found]
    diagonal = np.linalg.norm(video.keypoints.max(1) - video.keypoints.min(1), axis=-1)
    assert np.median(error) < 0.1 * diagonal.mean()  # in the video's pixels, on the true joints
    # A keypoints file wins where it has a point.
    bone = bones["hand.L"]
    table = tmp_path / "hand.csv"
    table.write_text("frame,joint,x,y,confidence\n" + "".join(f"{t},{bone},1,2,0.9\n" for t in range(16)))
    request = ExtractRequest(path, keypoints=table, silhouettes="none", mediapipe=True)
    client.extract_motion(rig, request).wait(timeout=300)
    merged = fake_fit["evidence"]
    assert np.allclose(merged.points[:, rig.index(bone)], [1, 2]) and np.allclose(
        merged.confidence[:, rig.index(bone)], 0.9)


def test_mediapipe_is_refused_for_a_quadruped_or_without_its_environment(client, files, monkeypatch):
    from kirin.kirin_addon.library.families.build import build_creature

    rig = build_creature("quadruped", 3).rig
    before = job_count(client)
    monkeypatch.setenv("KIRIN_MEDIAPIPE_PYTHON", sys.executable)  # any Python: the rig is checked next
    with pytest.raises(BackendError) as info:
        client.extract_motion(rig, ExtractRequest(files["video"], silhouettes="none", mediapipe=True))
    assert info.value.status == 422 and "humanoid" in info.value.message
    monkeypatch.setenv("KIRIN_MEDIAPIPE_PYTHON", "/nowhere/python")
    with pytest.raises(BackendError) as info:
        client.extract_motion(rig, ExtractRequest(files["video"], mediapipe=True))
    assert info.value.status == 422 and "setup_env.sh" in info.value.message
    assert job_count(client) == before


# ----------------------------------------------------------------------------- bad input: 4xx, no job
@pytest.mark.parametrize("change, message", [
    ({"video_path": "/nowhere/clip.mp4"}, "video_path: the backend reads files only from the folders"),
    ({"video_path": "MISSING"}, "does not exist"),
    ({"video_path": "BROKEN"}, "not a video"),
    ({"video_path": "EMPTY"}, "empty"),
    ({"start": 50}, "past its end"),
    ({"start": 5, "stop": 5}, "must be after"),
    ({"keypoints_path": "UNKNOWN"}, "match no bone"),
    ({"keypoints_path": "/nowhere/k.csv"}, "keypoints_path: the backend reads files only from the folders"),
    ({"tracks": "UNKNOWN"}, "no bone named 'wing'"),
    ({"silhouettes": "none", "keypoints_path": None}, "No evidence"),
    ({"silhouettes": "/nowhere/masks"}, "the backend reads files only from the folders"),
    ({"silhouettes": "EMPTY_FOLDER"}, "holds no PNG mask images"),
    ({"epochs": 0}, "epochs"),
    ({"stride": 0}, "stride"),
    ({"facing": "up"}, "facing"),
    ({"gait": ""}, "gait"),
])
def test_bad_requests_get_a_clear_4xx_and_no_job(client, files, tmp_path, change, message):
    from kirin.kirin_addon.library.families.build import build_creature

    rig = build_creature("quadruped", 3).rig
    body = extract_to_json(rig, ExtractRequest(files["video"], keypoints=files["keypoints"]))
    if change.get("video_path") == "BROKEN":
        change = {"video_path": files["broken"]}
    if change.get("video_path") == "EMPTY":
        (tmp_path / "empty.mp4").write_bytes(b"")
        change = {"video_path": str(tmp_path / "empty.mp4")}
    if change.get("video_path") == "MISSING":
        change = {"video_path": str(tmp_path / "none.mp4")}  # in an allowed folder: it may say so
    if change.get("silhouettes") == "EMPTY_FOLDER":
        (tmp_path / "no_masks").mkdir()
        change = {"silhouettes": str(tmp_path / "no_masks")}
    if change.get("keypoints_path") == "UNKNOWN":
        bad = tmp_path / "bad.csv"
        bad.write_text("frame,joint,x,y,confidence\n0,wing,1,2,1\n")
        change = {"keypoints_path": str(bad)}
    if change.get("tracks") == "UNKNOWN":
        change = extract_to_json(rig, ExtractRequest(files["video"], tracks={"wing": np.zeros((12, 2))}))
    body.update(change)
    body = {k: v for k, v in body.items() if v is not None}
    before = job_count(client)
    with pytest.raises(BackendError) as info:
        client.request("POST", "/jobs/extract", body)
    assert info.value.status == 422 and message in info.value.message, info.value.message
    assert job_count(client) == before


def test_request_and_result_are_checked_on_the_client(files):
    from kirin.kirin_addon.library.families.build import build_creature

    rig = build_creature("quadruped", 3).rig
    with pytest.raises(ProtocolError, match="pixel positions"):
        extract_to_json(rig, ExtractRequest(files["video"], tracks={rig.names[0]: np.zeros((12, 3))}))
    motion = Motion.rest(rig, 5, 30.0)
    payload = {"motion": motion_to_json(motion), "frames": 5, "report": {}}
    assert decode_extract(payload, rig.joint_count, 30.0).motion.frame_count == 5
    with pytest.raises(BackendError, match="cannot read"):
        decode_extract(payload, rig.joint_count + 1, 30.0)  # another rig
    with pytest.raises(BackendError, match="cannot read"):
        decode_extract(payload, rig.joint_count, 24.0)  # another frame rate
    with pytest.raises(BackendError, match="cannot read"):
        decode_extract({**payload, "frames": 6}, rig.joint_count, 30.0)


def test_resampling_at_scene_frame_positions_matches_motion_resampled():
    from kirin.kirin_addon.core.rotations import quat_from_axis_angle
    from kirin.kirin_addon.library.families.build import build_creature

    rig = build_creature("quadruped", 3).rig
    rng = np.random.default_rng(0)
    rotations = quat_from_axis_angle(rng.normal(size=(10, rig.joint_count, 3)),
                                     rng.uniform(-1, 1, (10, rig.joint_count)))
    motion = Motion(24.0, rng.normal(size=(10, 3)), rotations)
    ours = resample_positions(motion, scene_frame_map(24.0, 30.0, 10), 30.0)
    theirs = motion.resampled(30.0)
    assert ours.frame_count == theirs.frame_count
    assert np.allclose(ours.root_positions, theirs.root_positions)
    dots = np.abs(np.sum(ours.rotations * theirs.rotations, axis=-1))
    assert np.allclose(dots, 1.0, atol=1e-6)


@pytest.mark.slow
def test_mutated_extract_requests_are_refused_or_accepted_never_crash(files):
    """A valid request mutated at one place (any field, inside arrays too) with any JSON value: the
    schema and the check accept it or raise a user-facing ValueError (a 4xx), nothing else. No job."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from kirin.kirin_addon.library.families.build import build_creature
    from kirin.models.server.files import AllowedFiles
    from kirin.models.server.routes_video import ExtractIn
    from kirin.models.server.video import ExtractService

    rig = build_creature("quadruped", 3).rig
    valid = extract_to_json(rig, ExtractRequest(files["video"], keypoints=files["keypoints"],
                                                tracks={rig.names[0]: np.zeros((12, 2))}, fps=30.0, epochs=2))

    scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
               | st.text(max_size=12) | st.sampled_from([files["still"], files["broken"], "/", "~", "none"]))
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
    service = ExtractService(AllowedFiles([os.path.dirname(files["video"])]))

    @settings(max_examples=200, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(where=st.sampled_from([p for p in json_paths(valid) if p]), value=values)
    def check(where, value):
        try:  # as the route does: the schema first (pydantic's errors are ValueErrors: 422), then the check
            body = ExtractIn.model_validate(replaced(valid, where, value)).model_dump(exclude_none=True)
            service.check(body)
        except ValueError:
            pass

    check()


def test_mediapipe_s_messages_never_stall_it_and_its_last_one_is_told(tmp_path):
    """The child's stderr went to a pipe nobody read while it ran: past the pipe's 64 KiB the child
    blocked on its next message, and the job waited for the time-out."""
    from kirin.kirin_addon.video.mediapipe_pose import MediaPipeError, detect_landmarks

    chatty = tmp_path / "python"
    chatty.write_text("#!/bin/sh\nhead -c 1000000 /dev/zero | tr '\\\\0' 'w' >&2\n"
                      "echo >&2\necho 'RuntimeError: no GPU context' >&2\nexit 3\n")
    chatty.chmod(0o755)
    started = time.monotonic()
    with pytest.raises(MediaPipeError) as info:
        detect_landmarks(np.zeros((2, 8, 8, 3), np.uint8), python=str(chatty), timeout=60)
    assert "exit 3" in str(info.value) and "no GPU context" in str(info.value)
    assert time.monotonic() - started < 30  # it ended by itself, not by the time-out
