"""Generate Motion on artists' rigs through the panel's path (issue 17): a walk on the Husky (held out)
and on the Donkey meets the duty, frequency and left/right bounds of its own authored Walk, measured on
the deformed mesh; the Husky's paws hang under IK control bones beside the body, and they step on the
ground (planted at the floor, lifted in swing)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bench_support import load_benchmark

from assets_support import asset_files
from blender_support import bpy

ROOT = Path(__file__).resolve().parents[2]
HUSKY = asset_files("quaternius/animals_pack/Husky.glb")
DONKEY = asset_files("quaternius/animals_pack/Donkey.glb")
pytestmark = [
    pytest.mark.skipif(not HUSKY or not DONKEY, reason="../shared/assets is not present"),
    pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").is_file()
                       or not (ROOT / "models" / "weights" / "motion" / "model.json").is_file(),
                       reason="needs the checkout's .venv (the backend's environment) and the motion model"),
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
    made = bench.generate(husky, "A husky walks forward.", bench.Options(frames=96, seed=0, filmstrips=None))
    _, tracks = bench.measure(husky, made, list(range(1, 97)))
    heights = tracks.soles[..., 2] - husky.floor  # (feet, frames): each foot's sole above the floor
    size = husky.body_size
    for foot in heights:
        assert foot.min() > -0.01 * size  # never through the floor
        assert foot.min() < 0.03 * size  # it reaches the floor…
        assert np.mean(foot < foot.min() + 0.01 * size) > 0.35  # … and stays down a good share of the cycle
        assert foot.max() > 0.03 * size  # and lifted in swing
