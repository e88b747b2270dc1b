"""The weight-transfer benchmark's core on one small character (the Khronos Fox, 2 poses)."""

from __future__ import annotations

import math

import pytest
from bench_support import load_benchmark

from assets_support import asset_files
from blender_support import bpy  # noqa: F401  (sets BLENDER_USER_RESOURCES before bpy loads)

FOX = asset_files("khronos_fox/Fox.glb")
pytestmark = pytest.mark.skipif(not FOX, reason="../shared/assets is not present")


def load_bench():
    return load_benchmark("bench_weight_transfer")


def assert_sane(row: dict, methods: tuple[str, ...]) -> None:
    for method in methods:
        got = row["methods"][method]
        assert all(math.isfinite(got[k]) for k in ("mean", "p95", "max", "seconds")), method
        assert 0.0 <= got["mean"] <= got["p95"] <= got["max"] < 100.0, method


def test_blender_tools_on_the_fox(blender):
    bench = load_bench()
    row = bench.benchmark_character(FOX[0], frames=2, seed=0, methods=("DataTransfer", "BoneHeat"))
    assert row["frames"] == 2 and row["poses"].endswith("clips")
    assert row["remeshed"] < row["merged"] < row["vertices"]
    assert row["min_distance_pct"] > 0.0  # no remeshed vertex sits on an original one
    assert_sane(row, ("DataTransfer", "BoneHeat"))
    transfer, heat = row["methods"]["DataTransfer"], row["methods"]["BoneHeat"]
    assert transfer["mean"] < heat["mean"]
    # On the same surface Data Transfer interpolates the artist's weights exactly: it sits on the floor.
    assert transfer["mean"] == pytest.approx(row["floor"]["mean"], rel=1e-3)


def test_kirin_transfer_on_the_fox(blender):
    pytest.importorskip("kirin.kirin_addon.bind.weight_transfer")
    bench = load_bench()
    row = bench.benchmark_character(FOX[0], frames=2, seed=0)
    assert_sane(row, bench.METHODS)
    for method in ("robust", "10-NN"):
        assert row["methods"][method]["max_influences"] <= bench.MAX_INFLUENCES
        assert row["methods"][method]["unweighted"] == 0
    assert all(math.isfinite(v) and v > 0 for v in row["ratios"].values())
    assert row["methods"]["robust"]["mean"] < row["methods"]["BoneHeat"]["mean"]
