"""Generate Motion on artists' rigs through the panel's path (issue 17): a walk on the Husky (held out)
and on the Donkey meets the duty, frequency and left/right bounds of its own authored Walk, measured on
the deformed mesh; the Husky's paws hang under IK control bones beside the body, and they step on the
ground (planted at the floor, lifted in swing); a CMU take, whose rest pose lies folded, walks on its
own floor from the pose its animation stands in, and the user is told."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bench_support import HAS_BACKEND, NO_BACKEND, load_benchmark

from assets_support import asset_files
from blender_support import bpy

HUSKY = asset_files("quaternius/animals_pack/Husky.glb")
DONKEY = asset_files("quaternius/animals_pack/Donkey.glb")
CMU_WALK = asset_files("bvh_cmu_subjects_01_07/007_03.bvh")
pytestmark = [
    pytest.mark.skipif(not HUSKY or not DONKEY, reason="../shared/assets is not present"),
    pytest.mark.skipif(not HAS_BACKEND, reason=NO_BACKEND),
    pytest.mark.slow,
]


def _walk_row(bench, path: Path) -> dict:
    support = bench.support
    character, actions = support.load_character(path, bench.headless.import_rig_file)
    walk = next(c for c in support.read_clips(character, actions) if c.kind == "walk")
    return bench.run_case(character, walk, bench.Options(frames=96, seed=0, filmstrips=None)), character


@pytest.mark.parametrize("path", [HUSKY[0] if HUSKY else None, DONKEY[0] if DONKEY else None],
                         ids=["Husky", "Donkey"])
def test_a_generated_walk_meets_the_authored_walks_bounds(blender, path):
    bench = load_benchmark("bench_motion_real")
    prefs = bpy.context.preferences.addons[f"bl_ext.{bench.headless.REPO_NAME}.kirin"].preferences
    prefs.backend_device, prefs.backend_threads = "cpu", 1
    row, _ = _walk_row(bench, path)
    generated, authored = row["generated"], row["authored"]
    assert abs(generated["duty"] - authored["duty"]) <= 0.10
    assert abs(generated["frequency_hz"] / authored["frequency_hz"] - 1.0) <= 0.25
    assert generated["contralateral"] <= -0.5
    assert generated["penetration"] <= 0.01
    assert row["verdict"]["no_gliding"]


def test_paws_under_ik_control_bones_step_on_the_ground(blender):
    bench = load_benchmark("bench_motion_real")
    support = bench.support
    husky, _ = support.load_character(HUSKY[0], bench.headless.import_rig_file)
    # The Husky's paws (FF.L, FFB.L…) hang under IK bones that are roots of their own, not under the legs.
    paws = [husky.rig.names.index(n) for n in ("FF.L", "FFB.L", "FF.R", "FFB.R")]
    assert all(husky.rig.names[husky.rig.parents[p]].startswith("IK") for p in paws)
    options = bench.Options(frames=96, seed=0, filmstrips=None)
    made, _ = bench.generate(husky, "A husky walks forward.", options)
    _, tracks = bench.measure(husky, made, list(range(1, 97)))
    heights = tracks.soles[..., 2] - husky.floor  # (feet, frames): each foot's sole above the floor
    size = husky.body_size
    for foot in heights:
        assert foot.min() > -0.01 * size  # never through the floor
        assert foot.min() < 0.03 * size  # it reaches the floor…
        assert np.mean(foot < foot.min() + 0.01 * size) > 0.35  # … and stays down a good share of the cycle
        assert foot.max() > 0.03 * size  # and lifted in swing


@pytest.mark.skipif(not CMU_WALK, reason="the CMU subject-07 walks are not present")
def test_a_folded_bvh_rest_walks_from_the_pose_its_animation_stands_in(blender):
    bench = load_benchmark("bench_motion_real")
    support = bench.support
    person, _ = support.load_character(CMU_WALK[0], bench.headless.import_rig_file)
    scene = bpy.context.scene
    scene.frame_set(40)
    options = bench.Options(frames=90, seed=0, filmstrips=None)
    made, run = bench.generate(person, "A person walks forward.", options)
    assert scene.frame_current == 40  # the frames it tried are not left behind
    assert any("rest pose" in w and "frame" in w for w in run["warnings"])
    measured, tracks = bench.measure(person, made, list(range(1, 91)))
    # It stands and walks on the floor its take walks on: feet down, alternating, the body well above them.
    assert np.all(tracks.body[:, 2] - tracks.soles[:, :, 2].max(axis=0) > 0.3 * person.body_size)
    assert abs(float(tracks.soles[:, :, 2].min()) - person.floor) < 0.03 * person.body_size
    assert 0.4 <= measured.duty <= 0.65 and measured.contralateral <= -0.5
