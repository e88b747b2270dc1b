"""Generate Motion's pipeline in the engine: a gait prompt is made without torch or any server
package; a prompt that needs the network is refused clearly without one; and with a network (a
stand-in that keeps to the protocol of kirin_addon/generate/network.py) the pipeline hands it the
rig, the kept frames and the token layout, and maps what comes back onto the rig."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from kirin.kirin_addon.generate.features import CHANNELS, motion_features
from kirin.kirin_addon.generate.network import GenerationError, SampleRequest, token_layout
from kirin.kirin_addon.generate.pipeline import NEEDS_NETWORK, GeneratePipeline, SamplingOptions, Ticker
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.library.families.build import build_creature

UNAVAILABLE = ("torch", "fastapi", "uvicorn", "starlette", "onnxruntime", "bpy", "bmesh", "mathutils")

# Run in a fresh interpreter where the networks' and the server's packages and Blender's cannot be
# imported: a gait prompt is made, a network prompt is refused with the pipeline's message.
WITHOUT_TORCH = f"""
import json, sys
for name in {UNAVAILABLE!r}:
    sys.modules[name] = None
from kirin.kirin_addon.generate.network import GenerationError
from kirin.kirin_addon.generate.pipeline import GeneratePipeline
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.library.families.build import build_creature

creature = build_creature("quadruped", 3)
pipeline = GeneratePipeline(None)
prepared = pipeline.prepare(creature.rig, creature.mesh)
walk = GenerateRequest("a husky walking forward", frames=60, seed=2, variants=2).check()
made = pipeline.run(prepared, walk)
try:
    pipeline.run(prepared, GenerateRequest("a husky wags its tail", frames=60).check())
    refused = None
except GenerationError as exc:
    refused = str(exc)
loaded = sorted(name for name in {UNAVAILABLE!r} if sys.modules.get(name) is not None)
print(json.dumps({{"paths": [m.report.get("path") for m in made], "gaits": made[0].report.get("gaits"),
                  "frames": [m.motion.frame_count for m in made], "fps": [m.motion.fps for m in made],
                  "contacts": list(made[0].contacts.shape), "feet": int(prepared.feet.size),
                  "differ": float(abs(made[0].motion.rotations - made[1].motion.rotations).max()),
                  "refused": refused, "loaded": loaded}}))
"""


def test_a_gait_prompt_is_made_without_torch_and_a_network_prompt_is_refused_clearly():
    done = subprocess.run([sys.executable, "-c", WITHOUT_TORCH], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["paths"] == ["constructed", "constructed"] and out["gaits"] == ["walk"]
    assert out["frames"] == [60, 60] and out["fps"] == [30.0, 30.0]
    assert out["contacts"] == [60, out["feet"]] and out["feet"] >= 4
    assert out["differ"] > 1e-3  # variants differ
    assert out["refused"] == NEEDS_NETWORK
    assert out["loaded"] == []


class StandIn:
    """A network that keeps to the protocol: it hands back `template` (T,J,C features) for every
    variant, the kept features where they are kept, and records what it was given."""

    fps = 30.0
    frames_per_token = 8

    def __init__(self, template: np.ndarray):
        self.template = template
        self.encoded: list[int] = []
        self.requests: list[SampleRequest] = []

    def encode_rig(self, features) -> dict:
        self.encoded.append(len(features.names))
        return {"joints": len(features.names)}

    def embed_text(self, text: str) -> np.ndarray:
        raise AssertionError("no bank: nothing to search")

    def sample(self, request: SampleRequest, progress=None) -> tuple[np.ndarray, np.ndarray]:
        self.requests.append(request)
        features = np.repeat(self.template[None, : request.frames], request.variants, axis=0)
        features = features.astype(np.float64)
        if request.keep is not None:
            mask = request.keep.mask[: request.frames]
            features[:, : len(mask)][:, mask] = request.keep.features[: request.frames][mask]
        return features, np.ones(request.variants)


@pytest.fixture(scope="module")
def creature():
    return build_creature("quadruped", 7)


def _template(pipeline: GeneratePipeline, creature, frames: int) -> np.ndarray:
    """A walk's features: what the stand-in hands back must move (a held rest pose is a frozen clip,
    which the pipeline's guard never lets out)."""
    from kirin.kirin_addon.library.controllers.dispatch import generate

    prepared = pipeline.prepare(creature.rig)
    walk = generate(creature, "walk", 5, frames=frames).motion
    return motion_features(prepared.canon, creature.rig, walk).features


def test_the_network_gets_the_rig_once_the_kept_frames_and_the_token_layout(creature):
    from kirin.kirin_addon.library.controllers.dispatch import generate

    template = _template(GeneratePipeline(None), creature, 64)
    network = StandIn(template)
    pipeline = GeneratePipeline(network)
    prepared = pipeline.prepare(creature.rig, creature.mesh, key="dog")
    assert pipeline.prepare(creature.rig, creature.mesh, key="dog") is prepared  # kept by its key
    keep = generate(creature, "walk", 2, frames=40).motion
    kept = np.array([0, 1, 2, 30, 31])
    made = pipeline.run(prepared, GenerateRequest("a dog sniffs", frames=40, keep=keep, keep_frames=kept),
                        SamplingOptions(clean=False))
    pipeline.run(prepared, GenerateRequest("a dog sniffs", frames=21, loop=True, variants=2))
    assert network.encoded == [creature.rig.joint_count]  # encoded once for the prepared rig
    first, loop = network.requests
    assert (first.length, first.extra, first.strength) == (40, 0, 0.6)  # kept keys: blended in
    assert first.keep.features.shape == (40, creature.rig.joint_count, CHANNELS)
    assert np.array_equal(np.flatnonzero(first.keep.mask.all(axis=1)), kept)
    assert (loop.length, loop.extra, loop.variants) == (24, 8, 2) and loop.keep is None
    assert (loop.length, loop.extra) == token_layout(21, True, 8)
    assert token_layout(120, True, 8) == (120, 16) and token_layout(3, False, 8) == (8, 0)
    # The kept frames come back exactly as keyed on the rig.
    dots = np.abs(np.sum(made[0].motion.rotations[kept] * keep.rotations[kept], axis=-1))
    assert dots.min() > 1 - 1e-9 and "key_corrections" in made[0].report
    assert np.abs(made[0].motion.root_positions[kept] - keep.root_positions[kept]).max() < 1e-9


def test_without_a_network_only_construction_is_made(creature):
    pipeline = GeneratePipeline(None)
    prepared = pipeline.prepare(creature.rig)
    made = pipeline.run(prepared, GenerateRequest("a dog trotting", frames=30, seed=1))
    assert made[0].report["path"] == "constructed"
    for request, options in ((GenerateRequest("a dog trotting", frames=30, loop=True), None),
                             (GenerateRequest("a dog trotting", frames=30), SamplingOptions(construct=False)),
                             (GenerateRequest(None, image=np.zeros(1280), frames=30), None)):
        with pytest.raises(GenerationError, match="needs the motion network"):
            pipeline.run(prepared, request, options)


def test_reports_between_variants_are_spaced_out():
    calls = []
    ticker = Ticker(lambda *args: calls.append(args), seconds=0.0)
    ticker(0.5, "measuring")
    assert calls == [(0.5, "measuring")]
    slow = Ticker(calls.append, seconds=3600.0)
    slow(1.0)
    assert len(calls) == 1  # too soon: left out
    Ticker(None, seconds=0.0)(1.0)  # no callback: nothing to do
