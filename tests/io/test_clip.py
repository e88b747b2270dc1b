"""Clip files (.npz) round trip, and the motion-file dispatcher."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.core.rig import Rig
from kirin.kirin_addon.core.rotations import compose, quat_normalize
from kirin.kirin_addon.io.clip import FORMAT_VERSION, Clip, ClipError, load_clip, save_clip
from kirin.kirin_addon.io.files import load_motion_file

from assets_support import ASSETS

CMU = ASSETS / "bvh_cmu_01_01" / "01_01.bvh"
FOX = ASSETS / "khronos_fox" / "Fox.glb"


def _small_clip() -> tuple[Rig, Motion]:
    heads = np.array([[0.0, 0, 1], [0, 0, 1.5], [0, 0, 2.0]])
    rest = compose(np.repeat(np.eye(3)[None], 3, 0), heads)
    rig = Rig(["hips", "spine", "héad"], [-1, 0, 1], rest, heads + [0, 0.5, 0],
              deform=[False, True, True], connected=[False, False, True])
    rng = np.random.default_rng(0)
    motion = Motion(24.0, rng.normal(size=(7, 3)), quat_normalize(rng.normal(size=(7, 3, 4))))
    return rig, motion


def test_round_trip(tmp_path: Path) -> None:
    rig, motion = _small_clip()
    path = tmp_path / "walk"  # no extension: must be written exactly there
    meta = {"source": "test", "tags": ["a", "ü"], "score": 0.5}
    save_clip(path, rig, motion, captions=["a person walks", "slowly"], metadata=meta)
    assert path.is_file() and not (tmp_path / "walk.npz").exists()
    clip = load_clip(path)
    assert isinstance(clip, Clip)
    assert clip.rig.names == rig.names
    for attr in ("parents", "rest", "tails", "deform", "connected"):
        assert np.array_equal(getattr(clip.rig, attr), getattr(rig, attr))
    assert clip.motion.fps == 24.0
    assert np.allclose(clip.motion.rotations, motion.rotations, rtol=0, atol=1e-15)  # re-normalised
    assert np.array_equal(clip.motion.root_positions, motion.root_positions)
    assert clip.captions == ["a person walks", "slowly"]
    assert clip.metadata == meta
    with np.load(path, allow_pickle=False) as data:
        assert int(data["kirin_clip_version"]) == FORMAT_VERSION


def test_empty_captions_and_metadata(tmp_path: Path) -> None:
    rig, motion = _small_clip()
    save_clip(tmp_path / "c.npz", rig, motion)
    clip = load_clip(tmp_path / "c.npz")
    assert clip.captions == [] and clip.metadata == {}


def test_bad_clip_files(tmp_path: Path) -> None:
    rig, motion = _small_clip()
    with pytest.raises(ClipError, match="JSON"):
        save_clip(tmp_path / "x.npz", rig, motion, metadata={"bad": object()})
    other = tmp_path / "other.npz"
    np.savez(other, a=np.zeros(3))
    with pytest.raises(ClipError, match="Not a Kirin clip"):
        load_clip(other)
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ClipError):
        load_clip(garbage)
    newer = tmp_path / "newer.npz"
    save_clip(newer, rig, motion)
    with np.load(newer) as data:
        arrays = dict(data)
    arrays["kirin_clip_version"] = np.array(FORMAT_VERSION + 1)
    np.savez(newer, **arrays)
    with pytest.raises(ClipError, match="newer"):
        load_clip(newer)


# --------------------------------------------------------------------------- load_motion_file
def test_dispatch_npz_and_errors(tmp_path: Path) -> None:
    rig, motion = _small_clip()
    save_clip(tmp_path / "a.npz", rig, motion, metadata={"name": "Jog"})
    loaded_rig, loaded, name = load_motion_file(tmp_path / "a.npz")
    assert name == "Jog" and loaded_rig.names == rig.names
    assert np.allclose(joint_positions(loaded_rig, loaded), joint_positions(rig, motion))
    _, resampled, _ = load_motion_file(tmp_path / "a.npz", fps=48)
    assert resampled.fps == 48 and resampled.frame_count == 13

    with pytest.raises(ValueError, match="Unsupported"):
        load_motion_file(tmp_path / "a.fbx")
    with pytest.raises(ValueError, match="not found"):
        load_motion_file(tmp_path / "missing.bvh")
    for name, data in (("broken.bvh", b"HIERARCHY\nROOT x\n{\n"), ("broken.glb", b"glTF\x02\0\0\0"),
                       ("broken.gltf", b"{\"asset\": {\"version\": \"2.0\"}}"), ("broken.npz", b"junk")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=f"Could not read {name}"):
            load_motion_file(tmp_path / name)
    zipped = tmp_path / "zipped.npz"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("metadata.npy", json.dumps({}))
    with pytest.raises(ValueError, match="Could not read"):
        load_motion_file(zipped)


def test_dispatch_assets() -> None:
    if not ASSETS.is_dir():
        pytest.skip("../shared/assets is missing")
    rig, motion, name = load_motion_file(CMU)
    assert name == "01_01" and motion.fps == 120 and rig.joint_count == 31
    rig, motion, name = load_motion_file(FOX)
    assert name == "Survey" and motion.fps == 30
    _, run, name = load_motion_file(FOX, clip="Run", fps=24)
    assert name == "Run" and run.fps == 24
    with pytest.raises(ValueError, match="'Survey', 'Walk', 'Run'"):
        load_motion_file(FOX, clip="Fly")
    no_animation = ASSETS / "quaternius" / "modular_men" / "Casual.glb"
    with pytest.raises(ValueError, match="no animation"):
        load_motion_file(no_animation)
