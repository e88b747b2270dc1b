"""The pose-space benchmark end to end on two small rigs (the Khronos Fox and CesiumMan, ingested
from ../shared/assets with Blender's importers), tiny counts: every section prints its table and a
verdict, and every number it reports is finite."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from bench_support import load_benchmark, numbers

from assets_support import asset_files
from blender_support import bpy  # noqa: F401  (sets BLENDER_USER_RESOURCES before bpy loads)

FILES = asset_files("khronos_fox/Fox.glb", "khronos_cesiumman/CesiumMan.glb")
pytestmark = [pytest.mark.skipif(len(FILES) < 2, reason="../shared/assets is not present"), pytest.mark.slow]


def load_bench():
    return load_benchmark("bench_pose_space")



def test_pose_space_benchmark_on_two_small_rigs(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    bench = load_bench()
    if not (Path(bench.DEFAULT_POSE_MODEL) / "model.json").exists():
        pytest.skip("no pose prior weights")
    out = bench.main(["--rigs", "khronos_fox", "CesiumMan", "--count", "4", "--samples", "32", "--pairs", "2",
                      "--clips", str(tmp_path / "no-clips"), "--assets", str(FILES[0].parents[1]),
                      "--bank", "", "--json", str(tmp_path / "out.json")])
    printed = capsys.readouterr().out
    for title in ("== 1. Latency", "== 2. Plausibility", "== 3. FSD", "== 4. Walk"):
        assert title in printed
    assert printed.count("verdict") >= 5  # a verdict per section (per kind of walk), and the quadrupeds
    assert (tmp_path / "out.json").is_file()

    rigs = {"khronos_fox/Fox", "khronos_cesiumman/CesiumMan"}
    for section in bench.SECTIONS:
        rows = out["rows"][section]
        assert {r["rig"] for r in rows} == rigs, section
        # Both are rigs the prior was not trained on (a held-out source, a rig needing translations).
        assert all(r["status"] in bench.NOT_TRAINED for r in rows), section
        # Walks across two clips have no clip in between to compare with: those stay NaN.
        across = {k for k, r in enumerate(rows) if r.get("kind") == "across"}
        bad = [(p, v) for p, v in numbers(rows) if not math.isfinite(v)
               and not (int(p[1:p.index("]")]) in across and (".truth" in p or ".clip." in p))]
        assert not bad, (section, bad)

    for row in out["rows"]["latency"]:
        assert row["drags"] == 4 and 0 < row["median_ms"] <= row["p95_ms"] and row["ik_median_ms"] > 0
        assert 0 < row["ranges_median_ms"] <= row["ranges_p95_ms"]
    for row in out["rows"]["plausibility"]:
        assert row["blender_error"] is None
        for method in bench.METHODS:
            stats = row[method]
            assert 0.0 <= stats["violations"] <= 1.0 and stats["nearest"] >= 0.0, method
        # Plain IK and Blender's IK (through the re-aimed tip bone) both meet most small drags.
        assert row["IK"]["handle_median"] < bench.COMPARABLE_ERROR
        assert row["Blender"]["handle_median"] < bench.COMPARABLE_ERROR
    for row in out["rows"]["fsd"]:
        assert min(row["prior"], row["random_data_limits"], row["random_default_limits"]) >= 0.0
    for row in out["rows"]["walk"]:
        if row["kind"] == "within":
            assert row["clip"]["truth"] == 0.0  # the clip against itself
        assert row["slerp"]["max_step"] > 0.0
        # Kept to ranges from some of the rig's clips, in-betweens are inside the limits of all of them.
        assert row["ranges"]["violations"] == 0.0
    pairs: dict[str, int] = {}
    for row in out["rows"]["walk"]:
        pairs[row["rig"]] = pairs.get(row["rig"], 0) + row["pairs"]
    assert set(pairs.values()) == {2}  # within one clip, or across two where the rig has several
