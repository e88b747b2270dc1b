"""The committed motion model: it loads, its ONNX export agrees with torch, and it has learned
something — the shipped evaluator ranks its motions' captions far better than an untrained twin's."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from cache_support import small_cache

from kirin.kirin_addon.library.build import BuildConfig
from kirin.models.config import DiffusionConfig
from kirin.models.eval.evaluate import EvalConfig, evaluate
from kirin.models.motion.config import DenoiserConfig, TrainConfig
from kirin.models.motion.denoiser import Denoiser
from kirin.models.motion.export import example_inputs
from kirin.models.motion.generator import DEFAULT_MODEL, MotionModel
from kirin.models.motion.train import save_weights
from kirin.models.onnx import OnnxDenoiser

pytestmark = pytest.mark.skipif(not (DEFAULT_MODEL / "model.json").exists(), reason="no shipped motion model")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("shipped")
    # Creatures the model never saw (another seed than its training library), every family.
    config = BuildConfig(
        clips=48,
        seed=123,
        clips_per_creature=3,
        min_frames=64,
        max_frames=64,
        workers=1,
        transition_fraction=0.0,
    )
    small_cache(root, config)
    return root


def test_shipped_onnx_agrees_with_torch():
    model = MotionModel.load(DEFAULT_MODEL)
    assert MotionModel.load(DEFAULT_MODEL, "auto").backend == "onnxruntime"
    runner = OnnxDenoiser(DEFAULT_MODEL / "denoiser.onnx")
    inputs = example_inputs(model.net, 2, 8, 30, 12)
    with torch.no_grad():
        expected = model.net(**inputs)
    assert (runner(**inputs) - expected).abs().max() < 1e-4


def test_trained_model_beats_its_untrained_twin_on_r_precision(library):
    card = json.loads((DEFAULT_MODEL / "model.json").read_text())
    untrained = library / "untrained"
    torch.manual_seed(0)
    net = Denoiser(DenoiserConfig(**card["model"]))
    config = TrainConfig(
        model=DenoiserConfig(**card["model"]), diffusion=DiffusionConfig(**card["diffusion"])
    )
    save_weights(net, untrained, config, np.array(card["mean"]), np.array(card["std"]), 0)
    scores = {}
    for name, folder in (("trained", DEFAULT_MODEL), ("untrained", untrained)):
        report = evaluate(
            EvalConfig(
                model=str(folder),
                cache=str(library / "cache"),
                split="train",
                samples=40,
                rows=("text",),
                steps=6,
                mm_prompts=0,
                rounds=20,
            ),
            progress=False,
        )
        scores[name] = report["rows"]["text"]["r_precision_top3"]
    assert scores["trained"] > scores["untrained"] + 0.15, scores
