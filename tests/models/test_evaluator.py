"""The text–motion evaluator and `kirin eval`: metrics on known cases, training, the report layout,
and the shipped evaluator telling motions apart on creatures it never saw."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from cache_support import small_cache

from kirin.kirin_addon.eval.distributions import gaussian_frechet_distance, r_precision, r_precision_pool
from kirin.kirin_addon.library.build import BuildConfig
from kirin.models.data.cache import FeatureCache
from kirin.models.eval.evaluate import (
    KEYS,
    ROWS,
    diversity,
    fid,
    mm_dist,
    multimodality,
)
from kirin.models.eval.evaluator import (
    DEFAULT_EVALUATOR,
    EvaluatorConfig,
    EvaluatorTrainConfig,
    TextMotionEvaluator,
    ground_truth_r_precision,
    train_evaluator,
)
from kirin.models.motion.config import DenoiserConfig, TrainConfig
from kirin.models.motion.train import train

TINY_EVALUATOR = EvaluatorConfig(joint_width=16, width=32, text_hidden=64, embedding=32, dilations=(1, 2))


# ----------------------------------------------------------------------------- metrics, known answers
def test_fid_known_values():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4000, 4))
    assert fid(a, a) == pytest.approx(0.0, abs=1e-6)
    shift = np.array([1.0, -2.0, 0.5, 0.0])
    assert fid(a, a + shift) == pytest.approx(float(shift @ shift), rel=1e-6)  # same covariance
    # Gaussians with diagonal covariances: |Δμ|² + Σ (σ1 − σ2)².
    mu1, mu2 = np.zeros(3), np.array([1.0, 0.0, 2.0])
    s1, s2 = np.diag([1.0, 4.0, 9.0]), np.diag([4.0, 4.0, 1.0])
    assert gaussian_frechet_distance(mu1, s1, mu2, s2) == pytest.approx(5.0 + 1.0 + 0.0 + 4.0, rel=1e-9)
    # Fewer samples than dimensions (a singular covariance) still gives a finite number.
    assert np.isfinite(fid(rng.normal(size=(10, 32)), rng.normal(size=(12, 32))))


def test_r_precision_mm_dist_diversity_multimodality_known_values():
    rng = np.random.default_rng(1)
    texts = rng.normal(size=(64, 8))
    labels = [i // 2 for i in range(64)]
    assert np.allclose(r_precision(texts, texts, labels), 1.0)  # perfect embeddings
    assert mm_dist(texts, texts) == 0.0
    assert mm_dist(np.zeros((3, 2)), np.tile([3.0, 4.0], (3, 1))) == pytest.approx(5.0)
    # Unrelated embeddings: chance, k/32 at top-k.
    many = rng.normal(size=(1000, 8))
    top = r_precision(rng.normal(size=(1000, 8)), many, [i // 2 for i in range(1000)], rounds=4)
    assert np.allclose(top, [1 / 32, 2 / 32, 3 / 32], atol=0.015)
    # Every motion at the origin; captions at distance 1 (clip 0), 0.5 (clip 1) and 2 (the rest):
    # clip 1 ranks first, clip 0 second (one nearer), the rest third (two nearer; ties are hits).
    motions = np.zeros((10, 2))
    captions = np.array([[1.0, 0.0], [0.0, 0.5]] + [[2.0, 0.0]] * 8)
    assert np.allclose(r_precision(motions, captions, None, rounds=1), [0.1, 0.2, 1.0])
    assert r_precision_pool(["walk", "walk", "trot", "idle"]) == pytest.approx((3 + 3 + 4 + 4) / 4)
    assert r_precision_pool([i // 2 for i in range(100)]) == 32
    # Diversity never pairs a motion with itself: two motions at distance 1 → exactly 1; identical → 0.
    assert diversity(np.array([[0.0, 0.0], [1.0, 0.0]])) == pytest.approx(1.0)
    assert diversity(np.ones((500, 3))) == 0.0
    spread = rng.normal(size=(2000, 16))
    assert diversity(spread) == pytest.approx(np.sqrt(2 * 16), rel=0.05)  # E|x − y| ≈ √(2D)
    assert multimodality([np.array([[0.0], [1.0], [3.0]]), np.array([[5.0]])]) == pytest.approx(2.0)
    assert np.isnan(multimodality([np.ones((1, 3))]))


# ----------------------------------------------------------------------------- on a tiny library
@pytest.fixture(scope="module")
def library(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("evaluation")
    small_cache(
        root, BuildConfig(clips=40, seed=11, clips_per_creature=2, min_frames=40, max_frames=60, workers=1)
    )
    return root


@pytest.fixture(scope="module")
def tiny_evaluator(library):
    config = EvaluatorTrainConfig(
        data=[str(library / "cache")],
        out=str(library / "evaluator_run"),
        export=str(library / "evaluator"),
        steps=3,
        batch=16,
        min_frames=24,
        max_frames=48,
        log_every=1,
        checkpoint_every=2,
        model=TINY_EVALUATOR,
    )
    first = train_evaluator(config, progress=False)
    config.steps = 5
    second = train_evaluator(config, progress=False)
    return library / "evaluator", first, second


def test_evaluator_trains_resumes_and_embeds(library, tiny_evaluator):
    folder, first, second = tiny_evaluator
    assert first["step"] == 3 and second["step"] == 5
    log = (library / "evaluator_run" / "log.jsonl").read_text().splitlines()
    lines = [line for line in map(json.loads, log) if "loss" in line]
    assert [line["step"] for line in lines] == [1, 2, 3, 4, 5]
    assert all(np.isfinite(line["loss"]) for line in lines)
    net = TextMotionEvaluator.load(folder)
    assert net.card["step"] == 5 and net.config == TINY_EVALUATOR
    cache = FeatureCache(library / "cache")
    # Any rig and any length, one batch or several: unit vectors, independent of the batching.
    items = [(cache.features(i)[: 17 + 5 * i], cache.rig(cache.records[i]["rig"])) for i in range(6)]
    together = net.embed_motions(items)
    alone = np.concatenate([net.embed_motions([item]) for item in items])
    assert together.shape == (6, TINY_EVALUATOR.embedding)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.allclose(together, alone, atol=1e-5)
    texts = net.embed_texts(["a dog walks forward", "a snake coils up"])
    assert texts.shape == (2, TINY_EVALUATOR.embedding) and not np.allclose(texts[0], texts[1])


def test_shipped_evaluator_recognises_motions_of_unseen_creatures(library):
    """The committed evaluator, on creatures built with another seed than its training library:
    ground-truth R-Precision top-3 far above chance (3 / pool size)."""
    net = TextMotionEvaluator.load(DEFAULT_EVALUATOR)
    cache = FeatureCache(library / "cache")
    clips = [i for i, r in enumerate(cache.records) if r["captions"] and not r["static"]]
    pool = r_precision_pool([cache.records[i]["action"] for i in clips])
    scores = ground_truth_r_precision(net, cache, clips)
    assert scores["r_precision_top3"] > max(0.5, 3 * 3 / pool), (scores, pool)
    assert scores["r_precision_top1"] <= scores["r_precision_top2"] <= scores["r_precision_top3"]


def test_eval_command_writes_every_row_and_key(library, tiny_evaluator, capsys):
    from kirin.cli.main import main

    folder, _, _ = tiny_evaluator
    train(
        TrainConfig(
            data=[str(library / "cache")],
            out=str(library / "model"),
            window=24,
            batch=4,
            steps=2,
            checkpoint_every=2,
            log_every=1,
            model=DenoiserConfig(width=32, heads=2, layers=2, ffn=64, window=4),
            bf16=False,
            warmup=1,
        ),
        progress=False,
    )
    report_path = library / "report.json"
    code = main(
        ["eval", "--model", str(library / "model"), "--cache", str(library / "cache"),
         "--evaluator", str(folder), "--split", "train", "--samples", "4", "--steps", "2",
         "--mm-prompts", "1", "--mm-repeats", "2", "--json", str(report_path), "--quiet"]
    )  # fmt: skip
    assert code == 0
    report = json.loads(report_path.read_text())
    assert set(report["rows"]) == set(ROWS) and report["clips"] == 4
    for row, values in report["rows"].items():
        assert set(KEYS) <= set(values), row
        assert values["clips"] == 4, row
        for key in ("r_precision_top3", "fid", "mm_dist", "diversity", "jitter", "bone_length_error"):
            assert values[key] is not None and np.isfinite(values[key]), (row, key)
    rows = report["rows"]
    assert rows["ground_truth"]["fid"] == pytest.approx(0.0, abs=1e-6)  # the reference itself
    assert rows["ground_truth"]["multimodality"] is None  # one motion per caption
    for row in ("text", "text_image", "image"):
        assert rows[row]["multimodality"] is not None and rows[row]["multimodality"] > 0
        assert rows[row]["bone_length_error"] < 1e-6  # rotations only: bones stay rigid
    assert rows["static_pose"]["jitter"] == pytest.approx(0.0, abs=1e-9)
    printed = capsys.readouterr().out
    assert all(f"| {row} |" in printed for row in ROWS)


def test_bounds_command_writes_the_library_quantiles_into_the_model_card(library, tmp_path):
    from kirin.cli.main import main
    from kirin.kirin_addon.generate.measure import within_bounds
    from kirin.models.eval.evaluate import BONE_TOLERANCE, data_bounds

    card = tmp_path / "model.json"
    card.write_text(json.dumps({"fps": 30.0}))
    assert main(["bounds", "--cache", str(library / "cache"), "--model", str(tmp_path), "--split", "train",
                 "--samples", "6", "--quantile", "0.9"]) == 0  # fmt: skip
    written = json.loads(card.read_text())
    assert written["fps"] == 30.0  # the rest of the card stays
    bounds = written["bounds"]
    assert bounds["quantile"] == 0.9 and bounds["clips"] == 6 and bounds["split"] == "train"
    per_clip = bounds["per_clip"]
    assert set(per_clip) == {"foot_skating", "jitter", "penetration", "bone_length_error"}
    assert per_clip["bone_length_error"] == BONE_TOLERANCE  # the library's own clips are exact
    assert per_clip["jitter"] > 0
    # A higher quantile never lowers a bound.
    higher = data_bounds(FeatureCache(library / "cache"), "train", 6, 0.99)["per_clip"]
    assert all(higher[k] >= per_clip[k] for k in per_clip)
    with pytest.raises(ValueError, match="quantile"):
        data_bounds(FeatureCache(library / "cache"), "train", 6, 1.0)

    inside = {k: v / 2 for k, v in per_clip.items()}
    assert within_bounds(inside, per_clip)
    assert within_bounds({**inside, "foot_skating": float("nan")}, per_clip)  # no feet: not judged
    assert not within_bounds({**inside, "jitter": per_clip["jitter"] * 1.01}, per_clip)
