"""`kirin train` under torchrun: two CPU processes (gloo) train one model and rank 0 checkpoints it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cache_support import small_cache

from kirin.kirin_addon.library.build import BuildConfig


def test_two_processes_train_together(tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    kirin = Path(sys.executable).with_name("kirin")
    if not torchrun.exists() or not kirin.exists():
        pytest.skip("torchrun / kirin not installed in this environment")
    small_cache(
        tmp_path, BuildConfig(clips=12, seed=4, clips_per_creature=3, min_frames=30, max_frames=40, workers=1)
    )
    command = [
        str(torchrun),
        "--standalone",
        "--nproc_per_node",
        "2",
        str(kirin),
        "train",
        "--data",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path / "run"),
        "--steps",
        "2",
        "--threads",
        "1",
        "--quiet",
        "--set",
        "batch=2",
        "--set",
        "window=16",
        "--set",
        "bf16=false",
        "--set",
        'model={"width": 32, "heads": 2, "layers": 1, "ffn": 32, "window": 2}',
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    card = json.loads((tmp_path / "run" / "model.json").read_text())
    assert card["world_size"] == 2 and card["step"] == 2
    assert (tmp_path / "run" / "denoiser.safetensors").exists()
