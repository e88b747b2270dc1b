"""The real-rig motion benchmark's core: feet and soles found on held-out rigs, an authored walk measured
as a gait, one case generated end to end (row and filmstrip), a rig that cannot be measured, and a CMU
walk (joints only) that stands, travels once and reads as a walk."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from bench_support import HAS_BACKEND, NO_BACKEND, load_benchmark

from assets_support import asset_files
from blender_support import bpy

HUSKY = asset_files("quaternius/animals_pack/Husky.glb")
ZEBRA = asset_files("quaternius_fbx/farm_animals_animated_/Zebra.fbx")
CMU_WALK = asset_files("bvh_cmu_subjects_01_07/007_03.bvh")
pytestmark = [
    pytest.mark.skipif(not HUSKY or not ZEBRA, reason="../shared/assets is not present"),
    pytest.mark.skipif(not HAS_BACKEND, reason=NO_BACKEND),
    pytest.mark.slow,
]


def test_motion_real_on_held_out_rigs(blender, tmp_path):
    bench = load_benchmark("bench_motion_real")
    support = bench.support
    headless = bench.headless
    prefs = bpy.context.preferences.addons[f"bl_ext.{headless.REPO_NAME}.kirin"].preferences
    prefs.backend_device, prefs.backend_threads = "cpu", 1
    husky, _ = support.load_character(HUSKY[0], headless.import_rig_file)
    assert len(husky.feet) == 4 and husky.family == "quadruped"
    sides = {(s, e) for s in ("left", "right") for e in ("front", "hind")}
    assert {(f.side, f.end) for f in husky.feet} == sides
    assert all(sum(len(v) for v in f.sole.values()) >= support.MIN_SOLE for f in husky.feet)

    # The Husky's authored Walk is in place: read on per-foot belts it is a walk.
    walk = next(a for a in bpy.data.actions if support.clip_label(a.name) == "Walk")
    authored, _ = bench.measure(husky, walk, support.clip_frames(walk, 96, True))
    assert authored.in_place and 0.45 <= authored.duty <= 0.8 and authored.frequency_hz is not None
    assert authored.contralateral is not None and authored.contralateral <= -0.5

    zebra, actions = support.load_character(ZEBRA[0], headless.import_rig_file)
    clips = {c.kind: c for c in support.read_clips(zebra, actions)}
    assert {"walk", "run", "idle"} <= set(clips)
    options = bench.Options(frames=48, seed=0, filmstrips=tmp_path)
    row = bench.run_case(zebra, clips["walk"], options)
    authored = row["authored"]
    assert 0.3 <= authored["duty"] <= 0.8 and authored["frequency_hz"] is not None
    assert authored["contralateral"] is not None and authored["contralateral"] < 0
    assert row["generated"]["duty"] is not None and math.isfinite(row["generated"]["jerk"])
    assert row["frames"]["generated"] == 48 and "gait_like" in (row["verdict"] or {})
    assert Path(row["filmstrip"]).is_file() and Path(row["filmstrip"]).stat().st_size > 1000
    assert bench.table([row]).count("\n") == 2
    # --actions-at-authored-length: an in-place action is generated as long as the rig's own clip
    at_length = bench.Options(frames=48, filmstrips=None, authored_length=True)
    idle = bench.run_case(zebra, clips["idle"], at_length)
    assert idle["frames"]["generated"] == idle["frames"]["authored_clip"] != 48

    missing = bench.run_file(tmp_path / "Nothing.glb", options, {})
    assert len(missing) == 1 and missing[0]["reason"] and missing[0]["clip"] is None
    assert "not measured" in bench.table(missing)


@pytest.mark.skipif(not CMU_WALK, reason="the CMU subject-07 walks are not present")
def test_a_cmu_walk_stands_and_reads_as_a_walk(blender):
    bench = load_benchmark("bench_motion_real")
    support = bench.support
    person, actions = support.load_character(CMU_WALK[0], bench.headless.import_rig_file)
    assert len(person.feet) == 2 and not person.parts
    action = actions[0]
    played, authored, tracks = bench.measure_authored(person, action, 96, loop=True)
    # Played once (a travelling take is not cycled), its opening T-pose frame left out.
    assert played == support.clip_frames(action, 0, True)[1:]
    # It stands: the body centre is well above both soles on every measured frame.
    assert np.all(tracks.body[:, 2] - tracks.soles[:, :, 2].max(axis=0) > 0.3 * person.body_size)
    assert not authored.in_place and authored.travel_speed > 0.5
    assert 0.4 <= authored.duty <= 0.7 and authored.frequency_hz is not None
    assert authored.contralateral is not None and authored.contralateral <= -0.5
    heading = support.posed_forward(person, tracks)
    net = tracks.body[-1, :2] - tracks.body[0, :2]
    assert float(heading[:2] @ net) > 0.95 * float(np.linalg.norm(net))
