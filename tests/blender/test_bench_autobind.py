"""The Auto-Bind benchmark's core on one small character (the Quaternius Shiba Inu, 2 poses)."""

from __future__ import annotations

import math

import pytest
from bench_support import load_benchmark

from assets_support import asset_files
from blender_support import bpy  # noqa: F401  (sets BLENDER_USER_RESOURCES before bpy loads)

SHIBA = asset_files("quaternius/animals_pack/ShibaInu.glb")
pytestmark = [pytest.mark.skipif(not SHIBA, reason="../shared/assets is not present"), pytest.mark.slow]


def load_bench():
    return load_benchmark("bench_autobind")


def finite_stats(stats: dict) -> bool:
    return all(math.isfinite(stats[k]) for k in ("mean", "p95", "max", "rest_max"))


def test_autobind_core_on_the_shiba(blender):
    pytest.importorskip("torch")
    bench = load_bench()
    row = bench.benchmark_character("animals_pack/ShibaInu", SHIBA[0], "quadruped", frames=2)
    assert row["frames"] == 2 and row["poses"].endswith("clips")
    assert row["family"] == "quadruped" and math.isfinite(row["chamfer_pct"])
    methods = (*bench.METHODS, bench.UNWELDED)
    for block in (row["methods"], row["best_pose"]["methods"]):
        assert set(block) == set(methods)
        for method in methods:
            stats = block[method]
            assert finite_stats(stats), method
            assert 0.0 <= stats["mean"] <= stats["p95"] <= stats["max"] < 100.0, method
            # Frame 0 is the artist's rest pose: B_j then B_j⁻¹ must give the rest mesh back.
            assert stats["rest_max"] < 1e-3, method
    for method in ("robust", "10-NN", "BoneHeat", "DataTransfer"):
        assert row["methods"][method]["unweighted"] == 0, method
    assert row["methods"]["robust"]["max_influences"] <= 4
    assert finite_stats(row["floor"])
    assert all(math.isfinite(v) and v > 0 for v in row["ratios"].values())
    # Our numpy ground truth, FK and LBS agree with Blender's own evaluation.
    assert all(v < 1e-3 for v in row["checks"].values()), row["checks"]
    joints = row["joint_error"]
    assert joints["mapped"] > 0 and 0.0 < joints["mapped_mean_pct"] < 50.0
    # A weight set under its own best pose cannot do worse than under the retargeted one.
    for method in bench.METHODS:
        assert row["best_pose"]["methods"][method]["mean"] <= row["methods"][method]["mean"] + 1e-9, method
    # The skeleton against the artist's: both directions finite, CD-J2J their mean.
    assert 0.0 < joints["cd_j2j_pct"] < 20.0 and 0.0 < joints["cd_b2b_pct"] < 20.0
    assert joints["cd_j2j_pct"] == pytest.approx(
        0.5 * (joints["fitted_to_artist_pct"] + joints["artist_to_fitted_pct"]))


def test_the_held_out_characters_exist_and_the_skeleton_row_marks_them(blender):
    pytest.importorskip("torch")
    bench = load_bench()
    assets = SHIBA[0].parents[2]
    held = bench.held_out(assets)
    assert len(held) >= 15 and all(path.is_file() for path in held)
    rows = bench.skeleton_rows(assets, None)
    assert len(rows) >= 100 and held <= {path for _, path, _ in rows}
    row = bench.skeleton_row("animals_pack/ShibaInu", SHIBA[0], "quadruped", SHIBA[0] in held)
    assert row["held_out"] and row["family"] == "quadruped" and 0.0 < row["cd_j2j_pct"] < 20.0
    summary = bench.skeleton_summary([row])
    assert summary["held_out_cd_j2j_pct"].startswith("median")
    assert summary["goal"].split(":")[0] in ("PASS", "FAIL")
