"""The motion model end to end on a tiny library: cache → train (and resume) → sample → export."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from cache_support import small_cache

from kirin.kirin_addon.core.motion import joint_positions
from kirin.kirin_addon.generate import pipeline as pipeline_module
from kirin.kirin_addon.generate.features import CHANNELS, CONTACT, YAW, motion_features
from kirin.kirin_addon.generate.network import GenerationError
from kirin.kirin_addon.generate.pipeline import GeneratePipeline, SamplingOptions
from kirin.kirin_addon.generate.request import GenerateRequest, GenerateRequestError
from kirin.kirin_addon.library.build import BuildConfig
from kirin.kirin_addon.library.families.build import build_creature
from kirin.models.data.cache import FeatureCache
from kirin.models.motion.config import DenoiserConfig, TrainConfig
from kirin.models.motion.denoiser import Denoiser
from kirin.models.motion.export import example_inputs, export_onnx
from kirin.models.motion.generator import MotionModel
from kirin.models.motion.train import train
from kirin.models.onnx import OnnxDenoiser

TINY = DenoiserConfig(width=32, heads=2, layers=2, ffn=64, window=4)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("model")
    small_cache(
        root, BuildConfig(clips=24, seed=3, clips_per_creature=3, min_frames=30, max_frames=40, workers=1)
    )
    config = TrainConfig(
        data=[str(root / "cache")],
        out=str(root / "run"),
        window=24,
        batch=4,
        steps=3,
        checkpoint_every=3,
        log_every=1,
        model=TINY,
        bf16=False,
        warmup=1,
    )
    first = train(config, progress=False)
    config.steps = 5
    second = train(config, progress=False)
    return root, first, second


def test_cache_holds_features_rigs_text_and_images(trained):
    root, _, _ = trained
    cache = FeatureCache(root / "cache")
    assert len(cache.records) == 24
    record = cache.records[0]
    features = cache.features(0)
    assert features.shape == (record["frames"], record["joints"], CHANNELS)
    rig = cache.rig(record["rig"])
    assert rig.geometry.shape[0] == record["joints"] and rig.names.shape == (record["joints"], 384)
    assert cache.text_tokens.shape[1:] == (24, 384) and cache.text_masks[record["captions"][0]].sum() > 3
    assert cache.images.shape[1] == 1280 and record["image"] >= 0
    assert cache.std[CONTACT] > 0 and cache.mean[YAW] == 0


def test_training_logs_checkpoints_and_resumes(trained):
    root, first, second = trained
    assert first["step"] == 3 and second["step"] == 5
    lines = [json.loads(line) for line in (root / "run" / "log.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [1, 2, 3, 4, 5]
    assert all(np.isfinite(line["total"]) for line in lines)
    card = json.loads((root / "run" / "model.json").read_text())
    assert card["step"] == 5 and len(card["mean"]) == CHANNELS


@pytest.fixture(autouse=True)
def unguarded(monkeypatch):
    """The model trained here for a few steps samples noise: these tests check the sampler's mechanics
    (seeds, guidance, inpainting, loops, retrieval), not its clips, so the pipeline's guard is stood down
    for every call here, as SamplingOptions(guard=False) stands it down for one (the guard itself:
    tests/generate/test_guard.py)."""
    monkeypatch.setattr(pipeline_module, "ClipGuard", _Unguarded)


class _Unguarded:
    @classmethod
    def for_request(cls, *args, **kwargs):
        return pipeline_module.UNGUARDED


@pytest.fixture(scope="module")
def model_and_rig(trained):
    root, _, _ = trained
    pipeline = GeneratePipeline(MotionModel.load(root / "run"))
    creature = build_creature("quadruped", 7)
    return pipeline, creature, pipeline.prepare(creature.rig, creature.mesh)


def test_same_seed_same_motion_and_guidance_matters(model_and_rig):
    pipeline, creature, prepared = model_and_rig
    a = pipeline.run(
        prepared,
        GenerateRequest("a wolf trotting forward", frames=24, seed=5),
        SamplingOptions(construct=False, steps=4, clean=False),
    )[0]
    b = pipeline.run(
        prepared,
        GenerateRequest("a wolf trotting forward", frames=24, seed=5),
        SamplingOptions(construct=False, steps=4, clean=False),
    )[0]
    c = pipeline.run(
        prepared,
        GenerateRequest("a wolf trotting forward", frames=24, seed=5, guidance=4.0),
        SamplingOptions(construct=False, steps=4, clean=False),
    )[0]
    assert np.array_equal(a.motion.rotations, b.motion.rotations)
    assert np.abs(a.features - c.features).max() > 1e-4
    assert a.motion.frame_count == 24 and a.motion.joint_count == creature.rig.joint_count
    # Rotations only: bone lengths come out exact on the user's rig.
    pos = joint_positions(creature.rig, a.motion)
    child = creature.rig.parents >= 0
    rest = np.linalg.norm(
        creature.rig.heads[child] - creature.rig.heads[creature.rig.parents[child]], axis=-1
    )
    now = np.linalg.norm(pos[:, child] - pos[:, creature.rig.parents[child]], axis=-1)
    assert np.abs(now - rest).max() < 1e-9 * creature.rig.body_size


def test_gait_prompts_are_made_by_construction_and_other_actions_by_the_network(model_and_rig):
    """A prompt whose every segment is a gait goes to the gait controllers on the rig's own legs (no
    sampling, contacts per foot, variants differ); an action the controllers do not make, a loop, or
    kept keys go to the network."""
    pipeline, creature, prepared = model_and_rig
    made = pipeline.run(prepared, GenerateRequest("a dog walking, then trotting", frames=48, seed=2,
                                                    variants=2), SamplingOptions(steps=2))
    assert [m.report["path"] for m in made] == ["constructed"] * 2
    assert made[0].report["gaits"] == ["walk", "trot"]
    assert made[0].contacts.shape == (48, prepared.feet.size) and 0.2 < made[0].contacts.mean() < 0.8
    assert made[0].features.shape[:2] == (48, creature.rig.joint_count)
    assert np.abs(made[0].motion.rotations - made[1].motion.rotations).max() > 1e-3
    for request in (GenerateRequest("a dog wags its tail", frames=24),
                    GenerateRequest("a dog trotting", frames=32, loop=True)):
        out = pipeline.run(prepared, request, SamplingOptions(steps=2))[0]
        assert out.report.get("path") != "constructed"


def test_variants_differ_and_frames_odd_lengths(model_and_rig):
    pipeline, _, prepared = model_and_rig
    out = pipeline.run(
        prepared,
        GenerateRequest("a dog walking", frames=21, seed=1, variants=2),
        SamplingOptions(construct=False, steps=3, clean=False),
    )
    assert len(out) == 2 and out[0].motion.frame_count == 21
    assert np.abs(out[0].features - out[1].features).max() > 1e-3


def test_inpainted_frames_are_kept_exactly(model_and_rig):
    pipeline, creature, prepared = model_and_rig
    from kirin.kirin_addon.library.controllers.dispatch import generate

    keep = generate(creature, "walk", 2, frames=24).motion
    frames = np.array([0, 1, 2, 3, 20, 21, 22, 23])
    out = pipeline.run(
        prepared,
        GenerateRequest("a dog walking", frames=24, seed=3, keep=keep, keep_frames=frames),
        SamplingOptions(steps=4, clean=False),
    )[0]
    wanted = motion_features(prepared.canon, creature.rig, keep).features
    assert np.abs(out.features[frames] - wanted[frames]).max() < 1e-5
    assert np.abs(out.features[8:16] - wanted[8:16]).max() > 1e-3  # the rest is generated
    # On the rig: the kept start is where the kept motion starts, and every kept frame has the kept
    # pose (joint rotations below the root; the root's path between keys is generated).
    size = creature.rig.body_size
    start = joint_positions(creature.rig, out.motion)[:4] - joint_positions(creature.rig, keep)[:4]
    assert np.abs(start).max() < 1e-4 * size
    below_root = creature.rig.parents >= 0
    dots = np.abs(
        np.sum(out.motion.rotations[frames][:, below_root] * keep.rotations[frames][:, below_root], -1)
    )
    assert dots.min() > 1 - 1e-6
    # With the clean-up too (it moves legs and lifts the root): every kept frame exactly as keyed.
    cleaned = pipeline.run(
        prepared,
        GenerateRequest("a dog walking", frames=24, seed=3, keep=keep, keep_frames=frames),
        SamplingOptions(steps=4),
    )[0]
    assert np.abs(cleaned.motion.root_positions[frames] - keep.root_positions[frames]).max() < 1e-9 * size
    dots = np.abs(np.sum(cleaned.motion.rotations[frames] * keep.rotations[frames], -1))
    assert dots.min() > 1 - 1e-9 and "key_corrections" in cleaned.report


def test_kept_joints_are_kept_exactly_and_the_rest_generated(model_and_rig):
    """Joint-level inpainting: an animator's keyed tail (or any joints) stays, the body is generated."""
    pipeline, creature, prepared = model_and_rig
    from kirin.kirin_addon.library.controllers.dispatch import generate

    keep = generate(creature, "walk", 2, frames=24).motion
    joints = np.array([j for j, name in enumerate(creature.rig.names) if "tail" in name.lower()][:4])
    assert joints.size
    out = pipeline.run(
        prepared,
        GenerateRequest("a dog walking", frames=24, seed=3, keep=keep),
        SamplingOptions(steps=4, keep_joints=joints, clean=False),
    )[0]
    wanted = motion_features(prepared.canon, creature.rig, keep).features
    assert np.abs(out.features[:, joints] - wanted[:, joints]).max() < 1e-5
    others = np.setdiff1d(np.arange(creature.rig.joint_count), joints)
    assert np.abs(out.features[:, others] - wanted[:, others]).max() > 1e-3
    with pytest.raises(GenerationError, match="Joints to keep"):
        pipeline.run(
            prepared,
            GenerateRequest("a dog", frames=24, keep=keep),
            SamplingOptions(keep_joints=np.array([999])),
        )


def test_loop_ends_where_it_starts(model_and_rig):
    pipeline, _, prepared = model_and_rig
    out = pipeline.run(
        prepared,
        GenerateRequest("a dog trotting", frames=32, seed=2, loop=True),
        SamplingOptions(steps=4, clean=False),
    )[0]
    f = out.features[..., :6]
    seam = np.abs(f[0] - f[-1]).mean()
    typical = np.abs(np.diff(f, axis=0)).mean()
    assert seam < 3 * typical


def test_bad_input_is_refused(model_and_rig):
    """The request's own check refuses what no one makes; what only the network can tell (the image
    file) fails the run."""
    pipeline, _, prepared = model_and_rig
    with pytest.raises(GenerateRequestError, match="prompt is empty"):
        GenerateRequest("   ").check()
    with pytest.raises(GenerateRequestError, match="Frames"):
        GenerateRequest("a dog", frames=0).check()
    with pytest.raises(GenerationError, match="does not exist"):
        pipeline.run(prepared, GenerateRequest("a dog", image="/no/such/image.png"))


def test_onnx_matches_torch(tmp_path):
    torch.manual_seed(0)
    net = Denoiser(TINY).eval()
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.05 * torch.randn_like(p))  # zero-initialised biases must not hide a wrong graph
    path = export_onnx(net, tmp_path / "denoiser.onnx")
    runner = OnnxDenoiser(path)
    assert runner.device in ("cpu", "cuda")
    for shape in [(2, 6, 7, 5), (1, 9, 23, 11)]:
        inputs = example_inputs(net, *shape)
        inputs["joint_mask"][:, -2:] = False
        inputs["text_on"][0] = 0.0
        with torch.no_grad():
            expected = net(**inputs)
        assert (runner(**inputs) - expected).abs().max() < 1e-4


def test_clean_up_locks_the_predicted_contacts(model_and_rig):
    pipeline, creature, prepared = model_and_rig
    out = pipeline.run(
        prepared,
        GenerateRequest("a dog walking", frames=24, seed=4),
        SamplingOptions(construct=False, steps=3),
    )[0]
    summary = out.report["cleanup"]
    assert isinstance(summary, dict) and "frames_adjusted" in summary
    pos = joint_positions(creature.rig, out.motion)
    child = creature.rig.parents >= 0
    rest = creature.rig.heads[child] - creature.rig.heads[creature.rig.parents[child]]
    now = pos[:, child] - pos[:, creature.rig.parents[child]]
    assert np.abs(np.linalg.norm(now, axis=-1) - np.linalg.norm(rest, axis=-1)).max() < 1e-9


def test_image_only_and_precomputed_image_features(model_and_rig):
    pipeline, _, prepared = model_and_rig
    feature = np.random.default_rng(0).normal(size=1280).astype(np.float32)
    a = pipeline.run(
        prepared,
        GenerateRequest(None, frames=16, seed=1, image=feature),
        SamplingOptions(steps=2, clean=False),
    )[0]
    b = pipeline.run(
        prepared,
        GenerateRequest("a dog walking", frames=16, seed=1, image=feature),
        SamplingOptions(steps=2, clean=False),
    )[0]
    assert np.abs(a.features - b.features).max() > 1e-5  # the text matters when it is given
    with pytest.raises(GenerateRequestError, match="prompt, a reference image"):
        GenerateRequest(None, frames=16).check()
    with pytest.raises(GenerationError, match="1280"):
        pipeline.run(prepared, GenerateRequest("a dog", frames=16, image=np.zeros(7)))


def test_backend_choice(trained):
    root, _, _ = trained
    assert MotionModel.load(root / "run", "auto").backend == "torch"  # no ONNX file: torch
    with pytest.raises(GenerationError, match="ONNX"):
        MotionModel.load(root / "run", "onnx")
    with pytest.raises(GenerationError, match="Unknown backend"):
        MotionModel.load(root / "run", "tpu")


def test_torch_runner_on_a_device_samples_what_the_network_does(trained, monkeypatch):
    """The CUDA path where onnxruntime has no GPU: the same call through `TorchRunner` (here on the
    CPU, the only device this machine has) gives the network's own motion; the service picks it
    when torch sees a GPU."""
    from kirin.models.server.generate import GenerationService

    root, _, _ = trained
    model = MotionModel.load(root / "run")
    pipeline = GeneratePipeline(model)
    creature = build_creature("quadruped", 7)
    prepared = pipeline.prepare(creature.rig, creature.mesh)
    plain = pipeline.run(
        prepared,
        GenerateRequest("a wolf trotting forward", frames=24, seed=5),
        SamplingOptions(construct=False, steps=4, clean=False),
    )[0]
    model.use_torch_device("cpu")
    assert model.device == "cpu" and model.backend == "torch"
    moved = pipeline.run(
        prepared,
        GenerateRequest("a wolf trotting forward", frames=24, seed=5),
        SamplingOptions(construct=False, steps=4, clean=False),
    )[0]
    assert np.allclose(plain.features, moved.features, atol=1e-5)

    placed = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(MotionModel, "use_torch_device", lambda self, device: (
        placed.append(device), setattr(self, "device", device)))
    service = GenerationService(root / "run", device="cuda", bank=None, threads=1)
    service.load()
    assert placed == ["cuda"] and service.info()["device"] == "cuda"
    cpu = GenerationService(root / "run", device="cpu", bank=None, threads=1)
    cpu.load()
    assert placed == ["cuda"] and cpu.info()["device"] == "cpu"  # CPU forced: the GPU is left alone


# ----------------------------------------------------------------------------- retrieval from the library
@pytest.fixture(scope="module")
def cache(trained):
    root, _, _ = trained
    return FeatureCache(root / "cache")


@pytest.fixture(scope="module")
def bank(cache):
    from kirin.models.motion.bank import open_bank

    return open_bank(cache)


def _train_record(cache, family: str) -> int:
    from kirin.models.data.batching import usable

    return next(i for i, r in enumerate(cache.records) if r["family"] == family and usable(r, "train"))


def test_bank_finds_the_clip_a_caption_describes(model_and_rig, cache, bank):
    pipeline, _, _ = model_and_rig
    index = _train_record(cache, "quadruped")
    caption = bank.captions[bank.clips[index].captions[0]]
    vector = pipeline.network.embed_text(caption)
    best_record, best_caption, score = bank.search(vector, count=3)[0]
    assert bank.captions[best_caption] == caption and score > 0.99
    assert cache.records[best_record]["action"] == cache.records[index]["action"]
    assert (cache.folder / "sentences.npy").exists()  # computed once, kept beside the cache


def test_generation_starts_from_a_retrieved_clip_that_fits_the_rig(model_and_rig, cache, bank):
    from kirin.kirin_addon.generate.retrieval import RetrievalConfig, fit_length, retime, retime_rows

    pipeline, creature, prepared = model_and_rig
    index = _train_record(cache, "quadruped")
    caption = bank.captions[bank.clips[index].captions[0]]
    vector = pipeline.network.embed_text(caption)
    found = bank.retrieve(vector, creature.rig, prepared.canon.frame, prepared.feet, count=3)
    assert found and found[0].score > 0.99
    for item in found:  # only creatures with the rig's build
        assert cache.records[item.record]["family"] == "quadruped"
        assert item.motion.joint_count == creature.rig.joint_count and item.mapped >= 0.7
    bird = bank.clips[_train_record(cache, "bird")]
    hopper = pipeline.network.embed_text(bank.captions[bird.captions[0]])
    for item in bank.retrieve(hopper, creature.rig, prepared.canon.frame, prepared.feet, count=3):
        assert cache.records[item.record]["family"] != "bird"  # two feet do not drive four

    as_is = RetrievalConfig(strength=0.0)
    out = pipeline.run(
        prepared,
        GenerateRequest(caption, frames=30),
        SamplingOptions(construct=False, bank=bank, retrieval=as_is, clean=False),
    )[0]
    assert out.report["retrieved"]["caption"] == found[0].caption
    loops = bank.clips[found[0].record].loop
    played = retime(found[0].motion, 30, loops)
    expected = fit_length(motion_features(prepared.canon, creature.rig, played).features, 32, loops)[:30]
    # The clip, unchanged — with the library's own contact labels on the rig's feet.
    assert found[0].contacts is not None and found[0].contacts.shape[1] == prepared.feet.size
    planted = fit_length(retime_rows(found[0].contacts, played.frame_count)[:, :, None], 32, loops)[:30, :, 0]
    assert np.array_equal(out.features[:, prepared.feet, CONTACT] > 0.5, planted)
    expected[:, prepared.feet, CONTACT] = out.features[:, prepared.feet, CONTACT]
    assert np.abs(out.features - expected).max() < 1e-4

    edited = pipeline.run(
        prepared,
        GenerateRequest(caption, frames=30),
        SamplingOptions(construct=False, bank=bank, retrieval=RetrievalConfig(strength=0.5), steps=4,
                        clean=False),
    )[0]
    assert "retrieved" in edited.report and np.abs(edited.features - out.features).max() > 1e-3
    # In-betweening: the network blends the kept frames into the retrieved clip; they come back exact.
    frames = np.array([0, 1, 2, 27, 28, 29])
    kept = pipeline.run(
        prepared,
        GenerateRequest(caption, frames=30, keep=out.motion, keep_frames=frames),
        SamplingOptions(construct=False, bank=bank, retrieval=as_is, steps=4, clean=False),
    )[0]
    assert kept.report["retrieved"]["strength"] >= 0.5
    # (contacts aside: those of the kept motion are read from its feet, not the library's labels)
    assert np.abs(kept.features[frames, :, :CONTACT] - out.features[frames, :, :CONTACT]).max() < 1e-4
    # More variants than clips found: the rest are variations of them, never copies.
    exact = RetrievalConfig(strength=0.0, min_score=0.999)
    many = pipeline.run(
        prepared,
        GenerateRequest(caption, frames=30, variants=3),
        SamplingOptions(construct=False, bank=bank, retrieval=exact, steps=4, clean=False),
    )
    assert [v.report["retrieved"]["strength"] for v in many][0] == 0.0
    assert any(v.report["retrieved"]["strength"] > 0 for v in many)
    for a in range(3):
        for b in range(a + 1, 3):
            assert np.abs(many[a].features - many[b].features).max() > 1e-3
    strict = RetrievalConfig(min_score=1.01)  # nothing is that close: plain generation
    plain = pipeline.run(
        prepared,
        GenerateRequest(caption, frames=30),
        SamplingOptions(construct=False, bank=bank, retrieval=strict, steps=2, clean=False),
    )[0]
    assert "retrieved" not in plain.report


def test_retime_plays_one_shots_to_length_and_keeps_loops():
    from kirin.kirin_addon.core.motion import Motion
    from kirin.kirin_addon.generate.retrieval import MAX_STRETCH, fit_length, retime

    count = 40
    root = np.zeros((count, 3))
    root[:, 0] = np.linspace(0.0, 1.0, count)
    motion = Motion(30.0, root, np.tile([1.0, 0.0, 0.0, 0.0], (count, 2, 1)))
    faster = retime(motion, 30, loop=False)
    assert faster.frame_count == 30 and faster.fps == 30.0
    assert faster.root_positions[-1, 0] == pytest.approx(1.0)  # the whole action, played faster
    slowest = retime(motion, 400, loop=False)
    assert slowest.frame_count == round((count - 1) * MAX_STRETCH) + 1  # stretched no further
    assert retime(motion, 30, loop=True) is motion
    features = np.arange(4.0)[:, None, None] * np.ones((4, 2, 3))
    assert fit_length(features, 6, loop=True)[:, 0, 0].tolist() == [0, 1, 2, 3, 0, 1]
    assert fit_length(features, 6, loop=False)[:, 0, 0].tolist() == [0, 1, 2, 3, 3, 3]


def test_ddim_from_a_clean_start_keeps_it_and_shortens_the_schedule():
    from kirin.models.diffusion import DDIMOptions, Diffusion

    diffusion = Diffusion(1000)
    start = torch.randn(2, 16, 3, 5, generator=torch.Generator().manual_seed(0))
    calls = []

    def oracle(x, t, cond_on):  # a perfect x0 predictor for this one sample
        calls.append(int(t[0]))
        return start[: x.shape[0] // 2].repeat(2, 1, 1, 1) if x.shape[0] == 4 else start

    out = diffusion.sample_ddim(oracle, tuple(start.shape), DDIMOptions(10, 2.0, strength=0.4), init=start)
    assert torch.allclose(out, start, atol=1e-6)
    assert len(calls) == 4 and max(calls) == round(0.4 * 999)  # ceil(10 · 0.4) steps from t = 400
    with pytest.raises(ValueError, match="strength"):
        diffusion.sample_ddim(oracle, tuple(start.shape), DDIMOptions(strength=0.0), init=start)


def test_weights_from_before_the_global_condition_load_unchanged(tmp_path):
    """v0 weights (no sentence path, no adaptive norms) load, and compute exactly what they did:
    the new layers start at identity; a warm start from such a checkpoint does the same."""
    from kirin.models.motion.denoiser import added_since_v0
    from kirin.models.motion.export import example_inputs
    from kirin.models.motion.generator import load_weights
    from kirin.models.motion.train import warm_start

    torch.manual_seed(0)
    trained_net = Denoiser(TINY).eval()
    with torch.no_grad():
        for p in trained_net.parameters():
            p.add_(0.05 * torch.randn_like(p))
        for name, p in trained_net.named_parameters():
            if ".modulation." in name:
                p.zero_()  # what a v0 model computes
    old = {k: v for k, v in trained_net.state_dict().items() if not added_since_v0(k)}
    assert len(old) < len(trained_net.state_dict())
    inputs = example_inputs(trained_net, 2, 3, 6, 9)
    with torch.no_grad():
        expected = trained_net(**inputs)
    loaded = Denoiser(TINY).eval()
    load_weights(loaded, old)
    with torch.no_grad():
        assert (loaded(**inputs) - expected).abs().max() < 1e-6
    path = tmp_path / "checkpoint.pt"
    torch.save({"ema": old, "mean": torch.zeros(CHANNELS), "std": torch.ones(CHANNELS)}, path)
    warm = Denoiser(TINY).eval()
    mean, std = warm_start(warm, path, torch.device("cpu"))
    with torch.no_grad():
        assert (warm(**inputs) - expected).abs().max() < 1e-6
    assert mean.shape == (CHANNELS,) and std.min() == 1.0
    with pytest.raises(GenerationError, match="do not fit"):
        load_weights(Denoiser(TINY), {k: v for k, v in old.items() if not k.startswith("output.")})


def test_the_sentence_reaches_every_token():
    """With the adaptive norms trained away from identity, two prompts that differ give different
    motions even with cross-attention switched off (the global path alone carries the sentence)."""
    from kirin.models.motion.export import example_inputs

    torch.manual_seed(1)
    net = Denoiser(TINY).eval()
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.05 * torch.randn_like(p))
        for block in net.blocks:
            block.cross.out.weight.zero_()
            block.cross.out.bias.zero_()
    inputs = example_inputs(net, 1, 3, 6, 9)
    other = dict(inputs, text=inputs["text"] + torch.randn_like(inputs["text"]))
    with torch.no_grad():
        assert (net(**inputs) - net(**other)).abs().max() > 1e-4
        off = dict(inputs, text_on=torch.zeros(1))
        off_other = dict(other, text_on=torch.zeros(1))
        assert (net(**off) - net(**off_other)).abs().max() < 1e-6  # no text: the prompt is ignored


def test_default_bank_is_built_found_and_used(tmp_path, monkeypatch):
    from kirin.models.motion.bank import build_bank, default_bank_folder, load_bank, open_default_bank

    monkeypatch.setenv("KIRIN_BANK", str(tmp_path / "bank"))
    assert default_bank_folder() == tmp_path / "bank" and open_default_bank() is None
    assert load_bank("default") is None  # not built: plain generation
    cache = build_bank(clips=8, seed=5, workers=1, progress=False)
    records = FeatureCache(cache).records
    assert len(records) == 8 and all(r["split"] == "train" for r in records)  # every clip searchable
    bank = load_bank("default")
    assert bank is not None and bank.source == f"cache {cache}" and len(bank.clips) == 8
    with pytest.raises(GenerationError, match="motion bank"):
        load_bank(tmp_path / "nowhere")


def test_retrieval_passes_over_clips_travelling_another_way():
    from kirin.kirin_addon.generate.retrieval import _same_travel

    walk_back = {"direction": "backward", "speed": 1.0}
    assert not _same_travel("forward", walk_back)
    assert _same_travel("backward", walk_back) and _same_travel(None, walk_back)
    assert _same_travel("turning left", {"direction": "left", "speed": 0.8})  # the library's "left" turns
    assert _same_travel("forward", {"direction": "forward", "speed": 0.0})
    assert _same_travel("backward", {"direction": "forward", "speed": 0.0})  # in place: nothing to contradict


def test_learning_rate_warms_up_and_decays():
    from kirin.models.motion.train import learning_rate

    flat = TrainConfig(lr=1e-3, warmup=10, steps=100)
    assert learning_rate(flat, 0) == pytest.approx(1e-4) and learning_rate(flat, 50) == 1e-3
    cosine = TrainConfig(lr=1e-3, warmup=10, steps=100, schedule="cosine", min_lr=0.1)
    assert learning_rate(cosine, 50) == pytest.approx(1e-3 * (0.1 + 0.9 * 0.5))
    assert learning_rate(cosine, 100) == pytest.approx(1e-4)
    assert learning_rate(cosine, 400) == pytest.approx(1e-4)  # a run taken past its steps stays at the floor
    with pytest.raises(ValueError, match="schedule"):
        learning_rate(TrainConfig(schedule="step"), 5)


def test_stance_slide_tells_a_clip_whose_feet_stay_planted():
    from kirin.kirin_addon.core.canonical import canonical_rig
    from kirin.kirin_addon.core.motion import Motion
    from kirin.kirin_addon.generate.retrieval import _stance_slide
    from kirin.kirin_addon.library.controllers.dispatch import generate

    creature = build_creature("quadruped", 7)
    clip = generate(creature, "walk", 0, frames=60)
    target = canonical_rig(creature.rig)
    legs = [leg.foot for leg in creature.legs()]  # the order of the clip's contact columns
    contacts = clip.contacts[:, [legs.index(int(f)) for f in target.feet]]
    assert _stance_slide(clip.motion, creature.rig, target, contacts) < 0.05  # the controller's own
    skid = clip.motion.root_positions.copy()
    skid[:, 1] -= np.arange(clip.motion.frame_count) * creature.rig.body_size / clip.motion.fps
    skidding = Motion(clip.motion.fps, skid, clip.motion.rotations)
    assert _stance_slide(skidding, creature.rig, target, contacts) > 0.5  # planted feet dragged along
