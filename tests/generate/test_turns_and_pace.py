"""Turns and speed words in constructed locomotion, measured on the body by the engine alone
(benchmarks/bench_turns_pace.py measures; this checks): "…, then turning right" turns clockwise seen from
above (negative about +Z in the canonical frame, where −Y is forward and the creature's left is +X) by
about a right angle, smoothly, with the feet stepping through the turn; "slowly" and "fast" move the speed
by 30 % and more; a plain walk goes straight. On the families' built creatures, game-style rigs
(tests/artist_rigs.py) and artists' glTF rigs of other sources where ../shared/assets has them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from artist_rigs import biped_with_foot_controls, ik_quadruped

from kirin.benchmarks.bench_turns_pace import Measured, body_track, measure
from kirin.benchmarks.motion_real_sets import is_held_out
from kirin.kirin_addon.core.creature import LEFT
from kirin.kirin_addon.core.motion import forward_kinematics
from kirin.kirin_addon.generate.pipeline import GeneratePipeline, PreparedRig
from kirin.kirin_addon.generate.plan import PACE_OF_BUCKET, TURN_SECONDS, TURN_STRIDES, plan_prompt
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.generate.rig_roles import detect_roles
from kirin.kirin_addon.io.gltf import load_gltf
from kirin.kirin_addon.library.controllers.segments import GaitSegment
from kirin.kirin_addon.library.families.build import build_creature

from assets_support import ASSETS, asset_files

FRAMES = 150  # 5 s at 30 fps: 2.5 s forward, then the turn's part (1.5 s turning, 1 s on)
FPS = 30.0
# Artists' rigs of three more sources, none held out (benchmarks/motion_real_sets.py): Mesh2Motion's fox,
# Khronos' fox, a Quaternius modular man.
ASSET_RIGS = ("mesh2motion/fox-animations.glb", "khronos_fox/Fox.glb",
              "quaternius/modular_men/Adventurer.glb")


def _rig_cases() -> list:
    cases = [pytest.param(("built", "quadruped"), id="built-quadruped"),
             pytest.param(("built", "biped"), id="built-biped"),
             pytest.param(("game", "quadruped"), id="game-quadruped"),
             pytest.param(("game", "biped"), id="game-biped")]
    for path in asset_files(*ASSET_RIGS):
        assert not is_held_out(path, ASSETS)
        cases.append(pytest.param(("asset", str(path)), id=f"{path.parent.name}-{path.stem}"))
    return cases


_PREPARED: dict[tuple[str, str], tuple[GeneratePipeline, PreparedRig]] = {}


def _prepared(case: tuple[str, str]) -> tuple[GeneratePipeline, PreparedRig]:
    if case not in _PREPARED:
        kind, what = case
        if kind == "built":
            creature = build_creature(what, 3)
            rig, mesh = creature.rig, creature.mesh
        elif kind == "game":
            rig, mesh = (ik_quadruped() if what == "quadruped" else biped_with_foot_controls()), None
        else:
            asset = load_gltf(what)
            rig, mesh = asset.rig, asset.mesh
        pipeline = GeneratePipeline(None)
        _PREPARED[case] = (pipeline, pipeline.prepare(rig, mesh))
    return _PREPARED[case]


def _made(case: tuple[str, str], prompt: str) -> Measured:
    pipeline, prepared = _prepared(case)
    made = measure(pipeline, prepared, prompt, FRAMES)
    assert made.report["path"] == "constructed", prompt  # no network: made by the controllers
    return made


def _touchdowns(contacts: np.ndarray) -> np.ndarray:
    """(F,) how many times each foot lands."""
    return (contacts[1:] & ~contacts[:-1]).sum(axis=0)


def test_a_turn_is_a_gait_segment_that_turns_a_right_angle_and_walks_on():
    plan = plan_prompt("a wolf walking forward, then turning right", "quadruped")
    assert plan.locomotion and [s.action for s in plan.segments] == ["walk", "walk"]
    assert [s.direction for s in plan.segments] == ["forward", "right"] and plan.direction == "forward"
    forward, turning, on = plan.controller_segments(FRAMES / FPS)
    assert (forward.turn, turning.turn, on.turn) == (None, pytest.approx(-math.pi / 2), 0.0)
    assert turning.duration == pytest.approx(TURN_SECONDS) and forward.duration == pytest.approx(2.5)
    assert turning.frequency == forward.frequency  # the same gait keeps its tempo through the turn
    left = plan_prompt("a man walks forward, then turns left", "biped")
    assert [s.turn for s in left.controller_segments(4.0)][1] == pytest.approx(math.pi / 2)
    # "walks to the right" is one part: the whole clip curves (the controllers' direction), as before
    aside = plan_prompt("a wolf walks to the right", "quadruped")
    assert aside.direction == "right" and all(s.turn is None for s in aside.controller_segments(4.0))
    # "…, then turns right" keeps the pace of the gait before it; a short part turns all along
    brisk = plan_prompt("a husky trots quickly, then turns right", "quadruped")
    fast = PACE_OF_BUCKET["fast"]
    assert [(s.action, s.pace) for s in brisk.segments] == [("trot", fast), ("trot", fast)]
    short = plan_prompt("walks, then turns left", "quadruped").controller_segments(2.0)
    assert [s.duration for s in short] == pytest.approx([1.0, 1.0])
    assert short[1].turn == pytest.approx(math.pi / 2)
    # two turns are two right angles; a change of pace is a part of its own
    twice = plan_prompt("walks, then turns right, then turns right again", "quadruped")
    twice = twice.controller_segments(6.0)
    assert sum(s.turn or 0.0 for s in twice) == pytest.approx(-math.pi)
    paces = plan_prompt("walks slowly, then walks fast", "quadruped").segments
    assert [s.pace for s in paces] == [PACE_OF_BUCKET["slow"], PACE_OF_BUCKET["fast"]]
    # a walk that turns while it goes is a turn of the whole clip, not a step aside
    assert plan_prompt("a wolf walks while turning right", "quadruped").direction == "right"
    assert GaitSegment("walk", 1.0).turn is None and GaitSegment("walk", 1.0).stride == 1.0


@pytest.mark.parametrize("case", _rig_cases())
def test_turns_go_the_way_asked_by_about_a_right_angle_smoothly(case):
    straight = _made(case, "walking forward")
    assert abs(straight.heading) < 10.0  # a plain walk goes straight
    start = int(2.5 * FPS)  # the turn's part begins
    for prompt, low, high in (("a wolf walking forward, then turning right", -120.0, -60.0),
                              ("a wolf walking forward, then turning left", 60.0, 120.0)):
        made = _made(case, prompt)
        # it turns for TURN_SECONDS, or TURN_STRIDES of a slow gait (this Quaternius man walks at 0.5 Hz)
        seconds = max(TURN_SECONDS, TURN_STRIDES / made.report["stride_frequency"][1])
        turn_frames = slice(start, min(FRAMES, start + int(seconds * FPS)))
        assert low <= made.heading <= high, (prompt, made.heading)
        assert made.max_step < 4.0, prompt  # degrees a frame: the heading never snaps
        assert abs(np.degrees(made.headings[start - 15])) < 10.0  # straight before the turn ...
        middle = np.degrees(made.headings[start + int(0.5 * seconds * FPS)])
        assert 15.0 < abs(middle) < 85.0 and np.sign(middle) == np.sign(low)  # ... turning during it
        # the feet keep stepping through the turn, and a planted foot stays planted
        assert (_touchdowns(made.contacts[turn_frames]) >= 1).all(), prompt
        assert made.slide <= straight.slide + 0.01, prompt
        assert made.speed > 0.6 * straight.speed  # it walks round, not on the spot


@pytest.mark.parametrize("case", _rig_cases())
@pytest.mark.parametrize("gait", ["walking", "running"])
def test_speed_words_move_the_speed_as_artists_slow_and_fast_clips_do(case, gait):
    plain = _made(case, f"{gait} forward")
    speeds = {word: _made(case, f"{gait} {word}").speed / plain.speed
              for word in ("slowly", "very slowly", "fast", "quickly", "very fast")}
    assert speeds["slowly"] <= 0.7 and speeds["fast"] >= 1.3 and speeds["quickly"] >= 1.3, speeds
    assert speeds["very slowly"] < speeds["slowly"] and speeds["very fast"] > speeds["fast"], speeds
    # the cadence follows the speed (∝ speed^0.55) and the stride carries the rest: slower cadence, shorter
    # strides going slowly
    slow = _made(case, f"{gait} slowly")
    cadence = slow.report["stride_frequency"][0] / plain.report["stride_frequency"][0]
    assert speeds["slowly"] < cadence < 0.95
    for made in (plain, slow):
        assert abs(made.heading) < 10.0


def test_the_yaw_convention_left_is_counter_clockwise_about_up():
    """The canonical frame's left is +X: turning left takes the body from −Y towards +X, whose legs are the
    creature's left ones."""
    pipeline, prepared = _prepared(("built", "quadruped"))
    for prompt, sign in (("walks forward, then turns left", 1.0), ("walks forward, then turns right", -1.0)):
        made = pipeline.run(prepared, GenerateRequest(prompt, frames=FRAMES, seed=0).check())[0]
        heading, track = body_track(prepared, forward_kinematics(prepared.rig, made.motion))
        assert np.sign(heading[-1] - heading[0]) == sign
        late = track[-1] - track[-int(FPS)]  # the last second's travel: sideways, to the side turned to
        assert sign * late[0] > 2.0 * abs(late[1])
    roles = detect_roles(prepared.canon.rig)
    left = [leg for leg in roles.legs if leg.side == LEFT]
    assert left and all(prepared.canon.rig.heads[leg.foot, 0] > 0 for leg in left)
