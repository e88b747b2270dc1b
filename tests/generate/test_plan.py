"""Prompts read as plans, and the calibrated tempo each gait gets."""

from __future__ import annotations

import pytest

from kirin.kirin_addon.generate.plan import PACE_OF_BUCKET, MotionPlan, Segment, plan_prompt
from kirin.kirin_addon.generate.tempo import TEMPI, TempoTable, species_in, tempo_of, tempo_table
from kirin.kirin_addon.library.controllers.segments import GaitSegment


def _segments(prompt: str, family: str) -> list[tuple[str, float, str]]:
    return [(s.action, s.pace, s.direction) for s in plan_prompt(prompt, family).segments]


def test_gaits_in_the_familys_words():
    assert _segments("a goblin running", "biped") == [("run", 1.0, "forward")]
    assert _segments("a goblin running", "quadruped") == [("gallop", 1.0, "forward")]
    fast, slow = PACE_OF_BUCKET["fast"], PACE_OF_BUCKET["slow"]
    assert slow <= 0.7 and fast >= 1.3  # speed words move the speed by 30 % and more, as artists' clips do
    assert _segments("A dog is galloping quickly to the left", "quadruped") == [("gallop", fast, "left")]
    assert _segments("walks in a circle", "quadruped") == [("walk", 1.0, "circle")]
    assert _segments("a man walks slowly forward", "biped") == [("walk", slow, "forward")]
    assert _segments("brisk walk", "biped") == [("walk", fast, "forward")]  # CMU's "brisk walk"
    assert plan_prompt("A husky walks.", "quadruped").locomotion


def test_two_segments_and_actions_the_controllers_do_not_walk():
    plan = plan_prompt("a wolf trotting forward, then sitting down", "quadruped")
    assert [s.action for s in plan.segments] == ["trot", "sit"] and not plan.locomotion
    walk_run = plan_prompt("A husky walks, then runs.", "quadruped")
    assert [s.action for s in walk_run.segments] == ["walk", "gallop"] and walk_run.locomotion
    segments = walk_run.controller_segments(6.0)
    assert [s.duration for s in segments] == pytest.approx([3.0, 3.0])
    walk = tempo_of("quadruped", "walk", 1.0, "husky")
    assert segments[0].frequency == pytest.approx(walk.frequency) and segments[0].overrides == walk.overrides
    assert not plan_prompt("a dog eating", "quadruped").locomotion


def test_the_constructed_actions_alone_are_constructed_other_actions_are_not():
    assert plan_prompt("A husky stands idle.", "quadruped").constructed
    assert plan_prompt("A goblin jumps.", "biped").constructed
    assert plan_prompt("A husky dies.", "quadruped").constructed
    assert plan_prompt("a goblin dying", "biped").constructed
    # coming to rest after a jump is part of the jump; after gaits it is the controllers' stop
    jump = plan_prompt("A husky jumps, then stands still.", "quadruped")
    assert [s.action for s in jump.segments] == ["jump"] and jump.constructed
    walk = plan_prompt("a wolf walks, then stands still", "quadruped")
    assert [s.action for s in walk.segments] == ["walk", "stop"] and walk.locomotion
    assert walk.controller_segments(4.0)[-1] == GaitSegment("stop", 2.0)  # no tempo: the gait's before it
    assert plan_prompt("A yeti punches, then stands still.", "biped").constructed  # an attack
    assert plan_prompt("a dog eating", "quadruped").constructed
    assert plan_prompt("A yeti flinches.", "biped").constructed  # a hit
    assert not plan_prompt("a dog wags its tail", "quadruped").constructed
    assert not plan_prompt("a spider walking forward", "spider").constructed  # its legs are not solved yet


def test_the_tempo_follows_pace_and_size():
    walk = TEMPI[("quadruped", "walk")].frequency
    assert tempo_of("quadruped", "walk").frequency == walk
    assert tempo_of("quadruped", "walk", 0.7).frequency == pytest.approx(walk * 0.7**0.55)
    # Where a species' size is calibrated to speak (leg^-0.3), a fox steps quicker than a donkey.
    sized = TempoTable([], {}, {}, size_exponent=0.3)
    fox = tempo_of("quadruped", "walk", species="fox", table=sized)
    donkey = tempo_of("quadruped", "walk", species="donkey", table=sized)
    assert fox.frequency > walk > donkey.frequency
    assert fox.frequency == pytest.approx(walk * (0.4 / 1.0) ** -0.3)
    assert tempo_of("quadruped", "walk", species="goblin", table=sized).frequency == walk  # no size known
    # The committed table's exponent is the calibration's: artists' game clips do not step by size.
    committed = tempo_table().size_exponent
    assert tempo_of("quadruped", "walk", species="fox").frequency == pytest.approx(walk * 0.4**-committed)
    assert tempo_of("serpent", "slither") is None
    assert tempo_of("biped", "run").overrides.lean > 0


def test_a_stride_frequency_asked_replaces_the_tempos_and_keeps_its_gait():
    """A video's stride frequency sets the segment's; the calibrated gait values and their source stay."""
    asked = MotionPlan("biped", (Segment("walk", 1.0, frequency=1.3),)).controller_segments(2.0)
    tempo = tempo_of("biped", "walk")
    assert asked == (GaitSegment("walk", 2.0, None, 1.3, tempo.overrides, tempo.source),)
    jump = MotionPlan("biped", (Segment("jump", 1.0),))
    assert jump.controller_segments(1.0) == (GaitSegment("jump", 1.0),)


def test_species_are_found_in_prompts():
    assert species_in("a Shiba Inu trotting") == "shiba inu"
    assert species_in("Two foxes walk") is None  # plural with -es is not guessed
    assert species_in("dogs walking") == "dog"
    assert species_in("A creature walks") is None


def test_gaits_may_end_in_a_death_or_a_sit_made_in_place():
    plan = plan_prompt("a goblin runs, then dies", "biped")
    assert [s.action for s in plan.segments] == ["run", "death"] and plan.constructed
    assert plan.finale.action == "death" and not plan.locomotion
    moving = plan.moving_part(2.0)
    assert moving.locomotion and [s.action for s in moving.segments] == ["run", "stop"]
    assert plan_prompt("a husky walks, then dies", "quadruped").finale.action == "death"
    assert plan_prompt("a husky dies, then walks", "quadruped").finale is None
    sits = plan_prompt("a wolf trotting forward, then sitting down", "quadruped")
    assert sits.finale.action == "sit" and sits.constructed
    assert plan_prompt("a dog sits", "quadruped").constructed
    assert not plan_prompt("a man walks, then sits", "biped").constructed  # a biped has no sit
