"""The motion-file benchmark's core on one pair: a Character Creator CMU walk (a skeleton: its feet found by
name among a dozen toe joints) applied to CesiumMan through the operator, measured on the mesh (soles found
on the rest floor), passes every criterion; the row carries how the file was read."""

from __future__ import annotations

import pytest
from bench_support import load_benchmark

from assets_support import asset_files
from blender_support import bpy

WALK = asset_files("bvh_cmu_subjects_01_07/002_01.bvh")
CESIUM = asset_files("khronos_cesiumman/CesiumMan.glb")
pytestmark = pytest.mark.skipif(not WALK or not CESIUM, reason="../shared/assets is not present")


def test_one_pair_measured_end_to_end(blender):
    bench = load_benchmark("bench_motion_files")
    support = bench.support
    source = bench.Source(WALK[0], None, "002_01", gait=True)
    bench.measure_source(source)
    assert source.reason is None and not source.mesh and not source.loop
    assert source.measured.gait.frequency_hz == pytest.approx(0.9, abs=0.1)  # a walk's strides

    support.clear_scene()
    character, _ = support.load_character(CESIUM[0], bench.headless.import_rig_file)
    target = bench.rigged(character)
    assert [f.side for f in target.feet] == ["left", "right"]
    assert all(sum(len(v) for v in f.sole.values()) >= 20 for f in target.feet)
    row = bench.run_pair(target, source)
    assert row["read_as"].startswith("Y-up") and row["mapped"] >= 12
    assert row["trunk_ok"] and row["floor_ok"] and row["duty_ok"] and row["freq_ok"], row
    assert row["travel"] > 1.0 and row["vertical_drift"] < 0.05
    assert bench.summary([row])["gaits"]["all"] == {"pass": 1, "of": 1}
    assert bpy.context.scene.render.fps == bench.FPS


MIKE = asset_files("quaternius/mech_pack/Mike.glb")


@pytest.mark.skipif(not MIKE, reason="../shared/assets is not present")
def test_a_mech_is_measured_on_its_spikes_and_its_legs_tops(blender):
    """The Quaternius mech's legs end in spikes modelled on the shin (no foot bone): its gait is read on
    the spikes' soles, not at the knee; its Body root sits a third of its height in front of the torso,
    so its trunk runs from the legs' tops (standing within 10° of upright at rest, not 27°)."""
    bench = load_benchmark("bench_motion_files")
    support = bench.support
    support.clear_scene()
    character, _ = support.load_character(MIKE[0], bench.headless.import_rig_file)
    target = bench.rigged(character)
    names = character.rig.names
    assert sorted(names[j] for j in target.foot_joints) == ["LowerLeg.L", "LowerLeg.R"]
    assert [bench.ankle(target, j) for j in target.foot_joints] == [None, None]
    hips, top = target.trunk
    assert sorted(names[j] for j in hips) == ["UpperLeg.L", "UpperLeg.R"] and names[top] == "Head"
    assert target.rest_tilt < 10.0
