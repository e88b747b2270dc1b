"""The video-extraction benchmark (benchmarks/bench_video.py) end to end on the Khronos Fox with tiny
settings: render → MP4 → read back → every evidence type → IDM, optimisation and both; the tables
and verdicts print and every number it reports is finite. No Blender needed."""

from __future__ import annotations

import json
import math

import pytest
import torch
from bench_support import load_benchmark, numbers

from assets_support import asset_files

FILES = asset_files("khronos_fox/Fox.glb")
pytestmark = [pytest.mark.skipif(not FILES, reason="../shared/assets is not present"), pytest.mark.slow]


def load_bench():
    return load_benchmark("bench_video")



def test_bench_video_smoke(tmp_path, capsys):
    bench = load_bench()
    threads = torch.get_num_threads()
    try:
        out = bench.main(["--rigs", "fox", "--frames", "12", "--epochs", "1", "--size", "192", "108",
                          "--idm-samples", "96", "--idm-epochs", "1", "--no-prior",
                          "--cache", str(tmp_path / "idm"), "--json", str(tmp_path / "bench.json")])
    finally:
        torch.set_num_threads(threads)
    printed = capsys.readouterr().out
    assert "Per clip" in printed and "Summary over clips" in printed
    assert "VERDICT PCK@0.1" in printed and "VERDICT time per frame" in printed
    assert "IDM training fox" in printed
    rows = out["rows"]
    # Two clips × (idm, opt, idm+opt for the two silhouette evidences + opt for sparse and full).
    assert len(rows) == 2 * (3 + 1 + 3 + 1)
    assert {r["evidence"] for r in rows} == {"sil", "sparse", "sil+sparse", "full"}
    assert {r["method"] for r in rows} == {"idm", "opt", "idm+opt"}
    for row in rows:
        assert 0.0 <= row["pck"] <= 1.0 and row["frames"] == 12
    for path, value in numbers({"rows": rows, "verdicts": out["verdicts"], "idm": out["idm"]}):
        assert math.isfinite(value), path
    for clip in out["clips"].values():
        assert clip["silhouette_iou"] > 0.5  # the decoded video's background subtraction found the fox
    written = json.loads((tmp_path / "bench.json").read_text())
    assert len(written["rows"]) == len(rows)
