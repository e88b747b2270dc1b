"""The procedural library: deterministic, split by skeleton, every family and action, clean clips."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kirin.kirin_addon.core.creature import FAMILIES
from kirin.kirin_addon.core.motion import joint_positions
from kirin.kirin_addon.eval.metrics import bone_length_error, is_broken_clip, is_static_clip
from kirin.kirin_addon.io.clip import load_clip
from kirin.kirin_addon.library.build import BuildConfig, build_library
from kirin.kirin_addon.library.controllers.dispatch import ACTIONS_BY_FAMILY

CONFIG = BuildConfig(clips=184, seed=11, clips_per_creature=10, min_frames=30, max_frames=45, workers=1,
                     transition_fraction=0.0)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    out = tmp_path_factory.mktemp("library")
    stats = build_library(out, CONFIG, progress=False)
    return out, stats


def test_every_family_and_action_present_and_counted(library):
    out, stats = library
    rows = json.loads((out / "index.json").read_text())
    assert stats["clips"] == len(rows) == CONFIG.clips
    assert set(stats["clips_per_family"]) == set(FAMILIES)
    for family, actions in ACTIONS_BY_FAMILY.items():
        assert set(actions) <= set(stats["clips_per_family_action"][family]), family
    assert (out / "stats.md").read_text().startswith("# Kirin procedural library")
    static = [r for r in rows if r["static"]]
    assert stats["static_clips_per_action"] == {a: sum(r["action"] == a for r in static)
                                                for a in {r["action"] for r in static}}


def test_splits_are_by_skeleton_and_one_family_is_held_out(library):
    out, _ = library
    split_of_creature: dict[int, set[str]] = {}
    for path in sorted(out.rglob("clip_*.npz")):
        meta = load_clip(path).metadata
        split_of_creature.setdefault(meta["creature"], set()).add(meta["split"])
        assert (meta["split"] == "zero_shot") == (meta["family"] == CONFIG.zero_shot_family)
    assert all(len(s) == 1 for s in split_of_creature.values())
    assert {"train", "zero_shot"} <= set().union(*split_of_creature.values())


def test_clips_are_clean_captioned_and_have_reference_images(library):
    from PIL import Image

    out, _ = library
    for path in sorted(out.rglob("clip_*.npz")):
        clip = load_clip(path)
        assert len(set(clip.captions)) >= 6 and clip.metadata["heldout_caption"] not in clip.captions
        report = bone_length_error(clip.rig, clip.motion)
        assert report.max_error < 1e-9, path.name
        assert not is_broken_clip(clip.rig, clip.motion), path.name
        positions = joint_positions(clip.rig, clip.motion)
        if clip.metadata["family"] not in ("fish", "bird", "dragon"):  # fliers and swimmers may leave z=0
            assert positions[..., 2].min() > -1e-6 * clip.rig.body_size, path.name
        assert clip.metadata["static"] == is_static_clip(positions)
        if clip.metadata["action"] in ("walk", "trot", "slither", "swim"):
            assert not clip.metadata["static"]
        image = np.asarray(Image.open(out / clip.metadata["image"]).convert("RGB"))
        assert image.shape == (224, 224, 3) and image.std() > 5


def test_build_is_deterministic_whatever_the_worker_count(library, tmp_path):
    out, _ = library
    small = BuildConfig(clips=16, seed=11, clips_per_creature=10, min_frames=30, max_frames=45, workers=2,
                        transition_fraction=0.0)
    build_library(tmp_path, small, progress=False)
    for path in sorted(tmp_path.rglob("clip_*.npz")):
        a, b = load_clip(path), load_clip(out / path.relative_to(tmp_path))
        assert np.array_equal(a.motion.rotations, b.motion.rotations)
        assert a.captions == b.captions and a.metadata == b.metadata
    assert (tmp_path / "images" / "creature_00000.png").read_bytes() == (
        out / "images" / "creature_00000.png").read_bytes()


def test_transitions_within_a_clip(tmp_path):
    config = BuildConfig(clips=20, seed=2, clips_per_creature=10, min_frames=60, max_frames=60, workers=1,
                         transition_fraction=1.0)
    build_library(tmp_path, config, progress=False)
    seen = 0
    for path in sorted(tmp_path.rglob("clip_*.npz")):
        clip = load_clip(path)
        if clip.metadata["family"] in ("quadruped", "biped"):
            assert len(clip.metadata["segments"]) >= 2
            assert any("then" in caption for caption in clip.captions)
            seen += 1
    assert seen == 20
