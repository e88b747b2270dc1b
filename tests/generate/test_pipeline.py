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

from kirin.benchmarks.big_rig import big_creature
from kirin.kirin_addon.core.motion import forward_kinematics, joint_positions
from kirin.kirin_addon.core.rotations import quat_from_axis_angle
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


# ----------------------------------------------------------------------------- any size (issue 31)
def test_a_256_bone_rig_walks_by_construction_as_its_body_does():
    """Fingers, twist bones and a face change nothing of a constructed walk: the body walks as the
    25-bone body does, and the added bones ride on their parents."""
    small, big = build_creature("biped", 1, naming="mixamo"), big_creature("biped", 1)
    request = GenerateRequest("a robot walking forward", frames=90, seed=2).check()
    walks = []
    for creature in (small, big):
        pipeline = GeneratePipeline(None)
        made = pipeline.run(pipeline.prepare(creature.rig, creature.mesh), request)[0]
        assert made.report["path"] == "constructed" and made.motion.joint_count == creature.rig.joint_count
        walks.append(made.motion)
    body = small.rig.joint_count
    heads = [joint_positions(c.rig, m) for c, m in zip((small, big), walks, strict=True)]
    assert np.abs(heads[0] - heads[1][:, :body]).max() < 0.01 * small.rig.body_size
    travel = np.linalg.norm(heads[1][-1, big.pelvis, :2] - heads[1][0, big.pelvis, :2])
    assert travel > 0.5 * small.rig.body_size
    # The added bones are held at rest relative to their parents: fingers go where the hand goes.
    added = np.arange(body, big.rig.joint_count)
    pose = forward_kinematics(big.rig, walks[1])
    parents = big.rig.parents[added]
    relative = np.linalg.inv(pose[:, parents]) @ pose[:, added]
    at_rest = np.linalg.inv(big.rig.rest[parents]) @ big.rig.rest[added]
    assert np.allclose(relative, at_rest[None], atol=1e-6)
    fingers = big.extras["fingers"]
    assert np.linalg.norm(heads[1][-1, fingers] - heads[1][0, fingers], axis=-1).min() > 0.3 * travel


def test_a_256_bone_rig_reaches_the_network_as_its_bones_that_matter():
    """The network sees at most 64 joints of a 256-bone rig; what it makes comes back on every bone,
    the kept frames exact on every bone (keyed fingers included), the fingers riding on the hands."""
    from kirin.kirin_addon.library.controllers.dispatch import generate

    creature = big_creature("biped", 1)
    rig = creature.rig
    prepared = GeneratePipeline(None).prepare(rig, creature.mesh)
    small = prepared.small
    assert prepared.reduction.reduced and small.rig.joint_count <= 64
    walk = prepared.reduction.reduce_motion(generate(creature, "walk", 5, frames=48).motion)
    network = StandIn(motion_features(small.canon, small.rig, walk).features)
    pipeline = GeneratePipeline(network)
    prepared = pipeline.prepare(rig, creature.mesh)
    keep = generate(creature, "walk", 2, frames=40).motion
    fingers = creature.extras["fingers"]
    keep.rotations[:, fingers] = quat_from_axis_angle(np.array([1.0, 0.0, 0.0]), np.radians(40.0))
    kept = np.array([0, 1, 30])
    made = pipeline.run(prepared, GenerateRequest("a robot waves", frames=40, keep=keep, keep_frames=kept),
                        SamplingOptions(clean=False))[0]
    assert network.encoded == [small.rig.joint_count]
    assert network.requests[0].keep.features.shape == (40, small.rig.joint_count, CHANNELS)
    assert made.motion.joint_count == rig.joint_count and made.contacts.shape == (40, prepared.feet.size)
    dots = np.abs(np.sum(made.motion.rotations[kept] * keep.rotations[kept], axis=-1))
    assert dots.min() > 1 - 1e-9  # every bone of every kept frame as keyed, the curled fingers too
    # Between the keys the bones that the network did not see (the face) move with their anchors.
    dropped = np.setdiff1d(np.arange(rig.joint_count), prepared.reduction.keep)
    assert dropped.size >= 150
    anchors = prepared.reduction.anchor[dropped]
    pose = forward_kinematics(rig, made.motion)
    relative = np.linalg.inv(pose[:, anchors]) @ pose[:, dropped]
    rest = np.linalg.inv(rig.rest[anchors]) @ rig.rest[dropped]
    assert np.abs(relative - rest[None]).max() < 1e-6  # none of them keyed: at rest on their anchors
    assert np.ptp(joint_positions(rig, made.motion)[:, dropped], axis=0).max() > 0.05 * rig.body_size
