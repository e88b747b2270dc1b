"""Ingesting authored animation through Blender's importers: the clips replay what Blender plays."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kirin.kirin_addon.core.motion import forward_kinematics
from kirin.kirin_addon.io.clip import load_clip
from kirin.operators.headless.library import run_ingest
from kirin.operators.scene_io.arrays import object_matrix
from kirin.operators.scene_io.rig import evaluated_pose, read_rig

from assets_support import ASSETS
from blender_support import bpy, headless

pytestmark = pytest.mark.skipif(not (ASSETS / "khronos_fox").is_dir(), reason="needs ../shared/assets")


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    folder = tmp_path_factory.mktemp("library")
    (folder / "Fox.glb").symlink_to(ASSETS / "khronos_fox" / "Fox.glb")
    (folder / "01_01.bvh").symlink_to(ASSETS / "bvh_cmu_01_01" / "01_01.bvh")
    out = tmp_path_factory.mktemp("clips")
    csv = folder / "captions.csv"
    csv.write_text("file,clip,caption,species,family\n01_01.bvh,,a man walks and jumps around,man,biped\n")
    report = run_ingest(str(folder), str(out), captions_csv=str(csv), fps=None, test_rigs=("Fox",))
    return out, report


def replay_error(path, clip, action_name: str, frame_start: int, samples: int = 6) -> float:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    arm, _ = headless.import_rig_file(str(path))
    rig = read_rig(arm)
    assert rig.names == clip.rig.names
    action = bpy.data.actions[action_name]
    anim = arm.animation_data or arm.animation_data_create()
    anim.action = action
    anim.action_slot = action.slots[0] if anim.action_slot is None else anim.action_slot
    expected = forward_kinematics(clip.rig, clip.motion)
    worst = 0.0
    for k in np.linspace(0, clip.motion.frame_count - 1, samples).astype(int):
        bpy.context.scene.frame_set(frame_start + int(k))
        world = object_matrix(arm)  # clips are stored in world axes
        got = evaluated_pose(arm, rig)[:, :3, 3] @ world[:3, :3].T + world[:3, 3]
        worst = max(worst, float(np.max(np.abs(got - expected[k, :, :3, 3]))) / clip.rig.body_size)
    return worst


def test_fox_clips_replay_blender_playback(ingested):
    out, report = ingested
    fox = [c for c in report["clips"] if c["file"] == "Fox.glb"]
    assert {c["action"] for c in fox} >= {"Walk", "Run", "Survey"}
    assert all(c["split"] == "test" for c in fox)
    for entry in fox:
        clip = load_clip(out / entry["clip"])
        assert len(clip.captions) >= 6 and len(set(clip.captions)) == len(clip.captions)
        assert clip.metadata["species"] == "fox" and clip.metadata["family"] == "quadruped"
        error = replay_error(ASSETS / "khronos_fox" / "Fox.glb", clip, entry["action"], entry["frame_start"])
        assert error <= 1e-4, (entry["action"], error)


def test_cmu_clip_replays_blender_playback_with_user_captions(ingested):
    out, report = ingested
    (entry,) = [c for c in report["clips"] if c["file"] == "01_01.bvh"]
    clip = load_clip(out / entry["clip"])
    assert clip.captions[0] == "a man walks and jumps around" and len(clip.captions) >= 6
    assert clip.metadata["split"] == "train" and clip.metadata["family"] == "biped"
    assert clip.motion.fps == 120.0 and clip.motion.frame_count == 2752
    error = replay_error(ASSETS / "bvh_cmu_01_01" / "01_01.bvh", clip, entry["action"], entry["frame_start"])
    assert error <= 1e-4


def test_ingest_cli_resamples_and_reports(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "Fox.glb").symlink_to(ASSETS / "khronos_fox" / "Fox.glb")
    (folder / "broken.glb").write_bytes(b"not a gltf")
    kirin = Path(sys.executable).with_name("kirin")
    run = subprocess.run([str(kirin), "data", "ingest", str(folder), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads((tmp_path / "out" / "ingest_report.json").read_text())
    assert len(report["clips"]) == 3 and report["skipped"][0]["file"] == "broken.glb"
    clip = load_clip(tmp_path / "out" / report["clips"][0]["clip"])
    assert clip.motion.fps == 30.0


def _kirin(*args: str):
    import subprocess
    import sys
    from pathlib import Path

    kirin = Path(sys.executable).with_name("kirin")
    return subprocess.run([str(kirin), *args], capture_output=True, text=True, timeout=300)


def test_ingest_cli_takes_a_single_file(tmp_path):
    run = _kirin("data", "ingest", str(ASSETS / "khronos_fox" / "Fox.glb"), "--out", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads((tmp_path / "out" / "ingest_report.json").read_text())
    assert {c["file"] for c in report["clips"]} == {"Fox.glb"} and len(report["clips"]) == 3
    assert len(list((tmp_path / "out").glob("*.npz"))) == 3


def test_ingest_cli_refuses_what_it_cannot_read(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a motion file")
    for source, words in ((text, "notes.txt is not a BVH, glTF or FBX file"),
                          (tmp_path / "missing", "No file or folder"),
                          (tmp_path, "No BVH, glTF or FBX files under")):
        run = _kirin("data", "ingest", str(source), "--out", str(tmp_path / "out"))
        assert run.returncode == 2 and words in run.stderr, run.stderr[-2000:]
        assert not (tmp_path / "out").exists()
