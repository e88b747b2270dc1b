"""Generate Motion on artists' rigs through the panel's path (issue 17): a walk on the Husky (held out)
and on the Donkey meets the duty, frequency and left/right bounds of its own authored Walk, measured on
the deformed mesh; the Husky's paws hang under IK control bones beside the body, and they step on the
ground (planted at the floor, lifted in swing); a CMU take, whose rest pose lies folded, walks on its
own floor from the pose its animation stands in, and the user is told; so does a glTF whose bind pose
lies on its side, from the pose its import shows."""

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
T_POSED = asset_files("quaternius/modular_men/Adventurer.glb")  # arms straight out at rest, no clips
# Its bind pose (Blender's rest) lies on its side; the import's pose stands it up.
SIDEWAYS_REST = asset_files("quaternius/dinosaurs_pack/Triceratops.glb")
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


@pytest.mark.skipif(not SIDEWAYS_REST, reason="the Quaternius dinosaurs are not present")
def test_a_rest_lying_on_its_side_walks_from_the_pose_the_scene_shows(blender):
    bench = load_benchmark("bench_motion_real")
    support = bench.support
    trike, _ = support.load_character(SIDEWAYS_REST[0], bench.headless.import_rig_file)
    assert support.rest_frame(trike.arm, trike.rig).up_axis != "+Z"  # the rest lies another way up
    assert trike.arm.animation_data is None or trike.arm.animation_data.action is None
    options = bench.Options(frames=96, seed=0, filmstrips=None)
    made, run = bench.generate(trike, "A triceratops walks forward.", options)
    assert any("current pose" in w for w in run["warnings"])
    measured, tracks = bench.measure(trike, made, list(range(1, 97)))
    size = trike.body_size
    # Upright on the floor the scene showed: feet down on it, the body well above them, travelling level.
    assert abs(float(tracks.soles[:, :, 2].min()) - trike.floor) < 0.03 * size
    assert np.all(tracks.body[:, 2] - tracks.soles[:, :, 2].max(axis=0) > 0.1 * size)
    travel = tracks.body[-1] - tracks.body[0]
    assert np.linalg.norm(travel[:2]) > 0.5 * size and abs(travel[2]) < 0.05 * size
    assert 0.35 <= measured.duty <= 0.75 and measured.contralateral <= -0.5


def _abduction(heads: np.ndarray, arms: list[tuple[int, int]], up: np.ndarray) -> list[float]:
    """Degrees each arm (shoulder, hand) is raised out to the side, in the body's frontal plane (the
    shoulders' line and `up`), from hanging straight down: swinging fore and aft does not count."""
    across = heads[arms[0][0]] - heads[arms[1][0]]
    across = across - (across @ up) * up
    across /= np.linalg.norm(across)
    out = []
    for shoulder, hand in arms:
        arm = heads[hand] - heads[shoulder]
        out.append(float(np.degrees(np.arctan2(abs(arm @ across), -arm @ up))))
    return out


@pytest.mark.skipif(not T_POSED, reason="the Quaternius modular men are not present")
def test_a_t_posed_humanoid_walks_with_its_arms_down(blender):
    """Issue 31: the rest pose is not the standing pose. The Adventurer's arms are straight out at rest;
    the walk made for it, read back from the Action Blender plays, holds them down at its sides."""
    bench = load_benchmark("bench_motion_real")
    support = bench.support
    man, _ = support.load_character(T_POSED[0], bench.headless.import_rig_file)
    names = man.rig.names
    arms = [(names.index(f"UpperArm.{s}"), names.index(f"Hand.{s}")) for s in "LR"]
    up = np.array([0.0, 0.0, 1.0])
    assert min(_abduction(man.reference, arms, up)) > 80.0  # a T-pose
    made, _ = bench.generate(man, "A man walks forward.", bench.Options(frames=60, seed=0, filmstrips=None))
    angles = []
    for frame in range(1, 61, 4):
        bpy.context.scene.frame_set(frame)
        world = support.object_matrix(man.arm)
        heads = support.evaluated_pose(man.arm, man.rig)[:, :3, 3] @ world[:3, :3].T + world[:3, 3]
        angles += _abduction(heads, arms, up)
    assert made.name.startswith("Kirin:")
    assert np.median(angles) < 25.0 and max(angles) < 40.0  # down at its sides, never out
