"""Generate Motion's guard in the pipeline: a broken variant never leaves it. Construction that breaks is
made again by the network, a network clip that breaks by construction where the prompt allows, and
where nothing sound can be made the request fails with a message that says what was wrong; a walk asked
of a rig without legs is refused before anything is made (numpy only; the network is a stand-in)."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core.canonical import procedural_frame
from kirin.kirin_addon.core.motion import Motion
from kirin.kirin_addon.core.rig import RigBuilder
from kirin.kirin_addon.generate import pipeline as pipeline_module
from kirin.kirin_addon.generate.features import motion_features
from kirin.kirin_addon.generate.guard import ClipGuard, asks_for_legs, asks_to_leave_the_floor, asks_to_travel
from kirin.kirin_addon.generate.network import GenerationError, SampleRequest
from kirin.kirin_addon.generate.pipeline import NEEDS_NETWORK, GeneratePipeline, SamplingOptions
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.library.controllers.dispatch import generate
from kirin.kirin_addon.library.families.build import build_creature
from kirin.kirin_addon.library.procedural import capsule_mesh

IMAGE = np.zeros(1280, dtype=np.float32)  # a precomputed image feature: the request goes to the network


class StandIn:
    """A network that keeps to the protocol and hands back `template` (T,J,C) for every variant."""

    fps = 30.0
    frames_per_token = 8

    def __init__(self, template: np.ndarray):
        self.template = template
        self.requests: list[SampleRequest] = []

    def encode_rig(self, features) -> dict:
        return {}

    def embed_text(self, text: str) -> np.ndarray:
        raise AssertionError("no bank: nothing to search")

    def sample(self, request: SampleRequest, progress=None) -> tuple[np.ndarray, np.ndarray]:
        self.requests.append(request)
        features = np.repeat(self.template[None, : request.frames], request.variants, axis=0)
        return features.astype(np.float64), np.ones(request.variants)


@pytest.fixture(scope="module")
def dog():
    return build_creature("quadruped", 7)


def features_of(creature, motion: Motion) -> np.ndarray:
    prepared = GeneratePipeline(None).prepare(creature.rig)
    return motion_features(prepared.canon, creature.rig, motion).features


def network_of(creature, moving: bool) -> StandIn:
    """A stand-in that walks (`moving`) or holds the rest pose (a frozen clip)."""
    motion = Motion.rest(creature.rig, 64, 30.0)
    if moving:
        motion = generate(creature, "walk", 5, frames=64).motion
    return StandIn(features_of(creature, motion))


def stick():
    """A legless rig: a post standing on the floor (root, body, head up the middle), skinned."""
    b = RigBuilder()
    b.add("Root", None, (0, 0, 0), (0, 0, 0.3))
    b.add("Body", "Root", (0, 0, 0.3), (0, 0, 0.7))
    b.add("Head", "Body", (0, 0, 0.7), (0, -0.1, 1.0))
    rig = b.build()
    return rig, capsule_mesh(rig, radius_scale=0.2)


def test_prompts_that_ask_for_legs_for_locomotion_and_to_leave_the_floor():
    for prompt in ("a wolf walking forward", "a robot running forward", "a husky walks, then sits down",
                   "a horse gallops", "trotting"):
        assert asks_for_legs(prompt), prompt
    for prompt in ("a bird flying forward", "a fish swimming forward", "a dog sits down", "a jump", "", None,
                   "a snake slithering forward", "a spider crawling forward"):
        assert not asks_for_legs(prompt), prompt
    assert asks_to_travel("a snake slithering forward") and not asks_to_leave_the_floor("a snake slithering")
    # A crawl plants the feet of a rig with legs, and is refused to none.
    dog = build_creature("quadruped", 7)
    prepared = GeneratePipeline(None).prepare(dog.rig, dog.mesh)
    assert ClipGuard.for_request(prepared.canon, prepared.rig, prepared.mesh, "a dog crawling").legged
    rig, mesh = stick()
    post = GeneratePipeline(None).prepare(rig, mesh, procedural_frame(rig))
    assert not ClipGuard.for_request(post.canon, post.rig, post.mesh, "a worm crawling forward").legged
    assert asks_to_travel("a dog walks, then idles") and asks_to_travel("a koi swimming forward")
    assert not asks_to_travel("a dog standing idle") and not asks_to_travel("a dog wagging its tail")
    assert asks_to_leave_the_floor("a koi swimming forward") and asks_to_leave_the_floor("a bat flying")
    assert not asks_to_leave_the_floor("a dog walks, then sits")


def test_a_swim_or_a_flight_has_no_floor_to_sink_through(dog):
    prepared = GeneratePipeline(None).prepare(dog.rig, dog.mesh)
    low = Motion.rest(dog.rig, 30, 30.0)
    low = Motion(30.0, low.root_positions - [0.0, 0.0, 0.1 * dog.rig.body_size], low.rotations)
    walking = ClipGuard.for_request(prepared.canon, prepared.rig, prepared.mesh, "a dog walking")
    swimming = ClipGuard.for_request(prepared.canon, prepared.rig, prepared.mesh, "a dog swimming")
    assert "sinking" in [f.kind for f in walking.findings(low)]
    assert "sinking" not in [f.kind for f in swimming.findings(low)]


def test_a_walk_asked_of_a_rig_without_legs_is_refused_before_anything_is_made():
    rig, mesh = stick()
    network = StandIn(np.zeros((64, rig.joint_count, 1)))
    for pipeline in (GeneratePipeline(None), GeneratePipeline(network)):
        prepared = pipeline.prepare(rig, mesh, procedural_frame(rig))
        with pytest.raises(GenerationError, match="found no legs") as refused:
            pipeline.run(prepared, GenerateRequest("a blob walking forward", frames=30).check())
        assert "'a blob walking forward'" in str(refused.value) and "A walk needs legs" in str(refused.value)
    assert network.requests == []  # refused before the network is asked
    # What needs no legs still goes its way: without a network, the network's message.
    prepared = GeneratePipeline(None).prepare(rig, mesh, procedural_frame(rig))
    with pytest.raises(GenerationError, match="needs the motion network"):
        GeneratePipeline(None).run(prepared, GenerateRequest("a blob wobbles", frames=30).check())


def test_a_frozen_network_clip_is_refused_naming_what_was_wrong(dog):
    pipeline = GeneratePipeline(network_of(dog, moving=False))
    prepared = pipeline.prepare(dog.rig, dog.mesh)
    with pytest.raises(GenerationError) as refused:
        pipeline.run(prepared, GenerateRequest("a dog sniffs", frames=40).check())
    text = str(refused.value)
    assert text.startswith("No clip was written") and "made by the network is broken" in text
    assert "The clip froze: nothing moved" in text
    made = GeneratePipeline(network_of(dog, moving=True)).run(prepared, GenerateRequest("a dog sniffs",
                                                                                       frames=40).check())
    assert len(made) == 1 and "guard" not in made[0].report
    # Evaluating the network itself: its clip as made, broken or not.
    sniff = GenerateRequest("a dog sniffs", frames=40).check()
    raw = pipeline.run(prepared, sniff, SamplingOptions(guard=False))
    assert len(raw) == 1 and np.ptp(raw[0].motion.rotations, axis=0).max() < 1e-6


def test_a_broken_network_clip_is_made_by_construction_where_the_prompt_allows(dog):
    network = network_of(dog, moving=False)
    pipeline = GeneratePipeline(network)
    prepared = pipeline.prepare(dog.rig, dog.mesh)
    made = pipeline.run(prepared, GenerateRequest("a dog trotting", IMAGE, frames=40, variants=2).check())
    assert len(network.requests) == 1  # the image sent it to the network first
    assert [m.report["path"] for m in made] == ["constructed", "constructed"]
    assert made[0].report["guard"].startswith("by the network: The clip froze")
    assert made[0].report["guard"].endswith("Made by construction instead.")
    # Kept keys decide where the body is: the rest pose pinned to two walk keys (it glides) is what
    # in-betweening those keys with this network gives, and it is kept.
    keep = generate(dog, "walk", 2, frames=40).motion
    kept = pipeline.run(prepared, GenerateRequest("a dog trotting", IMAGE, frames=40, keep=keep,
                                                  keep_frames=[0, 39]).check())
    assert kept[0].report.get("path") != "constructed" and "guard" not in kept[0].report


def test_between_the_users_keys_only_an_explosion_is_broken(dog):
    prepared = GeneratePipeline(None).prepare(dog.rig, dog.mesh)
    guard = ClipGuard.for_request(prepared.canon, prepared.rig, prepared.mesh, "a dog trotting", keeps=True)
    held = Motion.rest(dog.rig, 30, 30.0)
    assert guard.findings(held) == []  # frozen, but the keys say so
    shot = np.arange(30)[:, None] * [0.0, -dog.rig.body_size, 0.0]  # 30 body sizes a second
    away = Motion(30.0, held.root_positions + shot, held.rotations)
    assert [f.kind for f in guard.findings(away)] == ["exploded"]


def test_a_broken_constructed_clip_is_made_by_the_network_or_refused(dog, monkeypatch):
    def held(canon, rig, plan, frames, fps, seed, mesh=None, roles=None):
        made = real(canon, rig, plan, frames, fps, seed, mesh, roles)
        made.motion = Motion.rest(rig, frames, fps)  # the construction broke: it holds the rest pose
        return made

    real = pipeline_module.construct_motion
    monkeypatch.setattr(pipeline_module, "construct_motion", held)
    network = network_of(dog, moving=True)
    pipeline = GeneratePipeline(network)
    prepared = pipeline.prepare(dog.rig, dog.mesh)
    made = pipeline.run(prepared, GenerateRequest("a dog trotting", frames=40).check())
    assert len(network.requests) == 1 and made[0].report.get("path") != "constructed"
    assert made[0].report["guard"].startswith("by construction: The clip froze")
    alone = GeneratePipeline(None)
    with pytest.raises(GenerationError) as refused:
        alone.run(alone.prepare(dog.rig, dog.mesh), GenerateRequest("a dog trotting", frames=40).check())
    assert "made by construction is broken" in str(refused.value) and "froze" in str(refused.value)
    assert NEEDS_NETWORK not in str(refused.value)
    both = GeneratePipeline(network_of(dog, moving=False))  # the network's clip froze as well
    with pytest.raises(GenerationError) as refused:
        both.run(both.prepare(dog.rig, dog.mesh), GenerateRequest("a dog trotting", frames=40).check())
    text = str(refused.value)
    assert text.startswith("No clip was written: every way to make variant 1 gave a broken clip.")
    assert "Made by construction: the clip froze" in text and "Made by the network: the clip froze" in text
