"""The gait measure on constructed motions whose answers are known (numpy only, fast)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from kirin.kirin_addon.eval.gait import (
    HELD_OUT_RULES,
    FootTrack,
    GaitInput,
    GaitMeasures,
    contacts,
    gait_verdict,
    measure_gait,
)

# Phase shifts (in cycles) of each foot, by (side, end).
WALK = {("left", "hind"): 0.0, ("left", "front"): 0.25, ("right", "hind"): 0.5, ("right", "front"): 0.75}
TROT = {("left", "hind"): 0.0, ("right", "front"): 0.0, ("right", "hind"): 0.5, ("left", "front"): 0.5}
PACE = {("left", "hind"): 0.0, ("left", "front"): 0.0, ("right", "hind"): 0.5, ("right", "front"): 0.5}
BOUND = {("left", "front"): 0.0, ("right", "front"): 0.0, ("left", "hind"): 0.5, ("right", "hind"): 0.5}
BIPED = {("left", "hind"): 0.0, ("right", "hind"): 0.5}


def _foot_path(t: np.ndarray, shift: float, freq: float, duty: float, speed: float, offset: np.ndarray,
               lift: float, slide: float) -> np.ndarray:
    """(T,3) a sole planted for `duty` of each cycle (creeping forward at `slide` while planted) and
    swung to its next footfall, which lies one stride (speed / freq) further along −Y."""
    stride, stance, swing = speed / freq, duty / freq, (1 - duty) / freq
    cycle = freq * t + shift
    n, s = np.floor(cycle), cycle % 1.0
    middle = (n - shift + duty / 2) / freq  # mid-stance time of cycle n: the foot is beside the body then
    place = offset[1] - speed * middle
    y_stance = place - slide * (t - middle)
    lift_off = place - slide * stance / 2
    landing = place - stride + slide * stance / 2
    u = np.clip((s - duty) / (1 - duty), 0.0, 1.0)
    y_swing = lift_off + (landing - lift_off) * (1 - np.cos(np.pi * u)) / 2
    planted = s < duty
    y = np.where(planted, y_stance, y_swing)
    z = np.where(planted, 0.0, lift * np.sin(np.pi * u))
    assert swing > 0
    return np.stack([np.full_like(t, offset[0]), y, z], axis=1)


def stepping(phases: dict[tuple[str, str], float], freq: float = 1.2, duty: float = 0.6, fps: float = 60.0,
             seconds: float = 5.0, speed: float = 0.8, lift: float = 0.1, scale: float = 1.0,
             slide: float = 0.0) -> GaitInput:
    """A creature of body size `scale` walking along −Y at `speed` body sizes/s, one foot per entry of
    `phases`; the body sways sideways at the stride frequency (travel must not count the sway)."""
    t = (np.arange(int(round(seconds * fps))) + 0.5) / fps
    body = np.stack([0.03 * np.sin(2 * np.pi * freq * t), -speed * t, np.full_like(t, 0.5)], axis=1)
    feet = []
    for (side, end), shift in phases.items():
        offset = np.array([0.15 if side == "left" else -0.15, -0.3 if end == "front" else 0.3])
        points = _foot_path(t, shift, freq, duty, speed, offset, lift, slide)
        feet.append(FootTrack(f"{end} {side}", side, end, points * scale))
    return GaitInput(fps=fps, feet=tuple(feet), body=body * scale, body_size=scale, floor=0.0)


def gliding(speed: float = 0.8, fps: float = 60.0, seconds: float = 4.0, glued: bool = False) -> GaitInput:
    """Frozen legs on a body moving at `speed`: the feet skate along with it, or stay glued to the floor."""
    t = (np.arange(int(seconds * fps)) + 0.5) / fps
    body = np.stack([np.zeros_like(t), -speed * t, np.full_like(t, 0.5)], axis=1)
    feet = []
    for (side, end) in WALK:
        offset = np.array([0.15 if side == "left" else -0.15, -0.3 if end == "front" else 0.3, 0.0])
        points = np.tile(offset, (len(t), 1)) + (0 if glued else body * [1, 1, 0])
        feet.append(FootTrack(f"{end} {side}", side, end, points))
    return GaitInput(fps=fps, feet=tuple(feet), body=body, body_size=1.0, floor=0.0)


# --------------------------------------------------------------------------- footfalls


def test_a_walk_has_its_duty_frequency_and_phases():
    m = measure_gait(stepping(WALK))
    assert m.duty == pytest.approx(0.6, abs=0.05)
    assert all(abs(d - 0.6) < 0.05 for d in m.duty_per_foot.values())
    assert m.frequency_hz == pytest.approx(1.2, rel=0.05)
    assert m.contralateral == pytest.approx(-1.0, abs=0.05)
    assert m.contralateral_phase == pytest.approx(0.5, abs=0.03)
    assert m.diagonal == pytest.approx(0.0, abs=0.1)  # a walk's diagonals are a quarter cycle apart
    assert m.diagonal_phase == pytest.approx(0.25, abs=0.03)
    # The raw 0/1 correlation of alternating feet at duty 0.6 is (0.2 − 0.36) / 0.24 = −2/3.
    assert m.contralateral_pearson == pytest.approx(-2 / 3, abs=0.08)
    assert m.travel_speed == pytest.approx(0.8, rel=0.02)
    assert m.stride_length == pytest.approx(0.8 / 1.2, rel=0.02)
    assert m.stance_slide < 0.02 and m.penetration == 0.0
    # Stance carries the foot S·duty back relative to the body; the eased swing overshoots a little.
    assert 0.40 <= m.swing_amplitude <= 0.44


def test_the_contacts_follow_the_footfalls():
    gait = stepping(WALK, fps=30.0)
    masks = contacts(gait)
    t = (np.arange(len(gait.body)) + 0.5) / 30.0
    planted = ((1.2 * t + WALK[("left", "hind")]) % 1.0) < 0.6
    assert np.mean(masks["hind left"] == planted) > 0.95


def test_a_jittering_sole_keeps_its_footfalls():
    gait = stepping(WALK)
    rng = np.random.default_rng(0)
    noisy = tuple(replace(f, points=f.points + rng.normal(0, 0.003, f.points.shape)) for f in gait.feet)
    m = measure_gait(replace(gait, feet=noisy))
    assert m.duty == pytest.approx(0.6, abs=0.05)
    assert m.frequency_hz == pytest.approx(1.2, rel=0.05)
    assert m.contralateral == pytest.approx(-1.0, abs=0.05)


def test_a_high_duty_walk_still_alternates():
    m = measure_gait(stepping(WALK, duty=0.75, freq=0.9, speed=0.5))
    assert m.duty == pytest.approx(0.75, abs=0.05)
    assert m.contralateral == pytest.approx(-1.0, abs=0.05)
    assert m.contralateral_pearson > -0.5  # why the verdict does not use the raw correlation


@pytest.mark.parametrize("phases, contralateral, diagonal", [
    (TROT, -1.0, 1.0), (PACE, -1.0, -1.0), (BOUND, 1.0, -1.0),
])
def test_trot_pace_and_bound_couple_their_feet(phases, contralateral, diagonal):
    m = measure_gait(stepping(phases, duty=0.5, freq=1.8, speed=1.5))
    assert m.duty == pytest.approx(0.5, abs=0.05)
    assert m.frequency_hz == pytest.approx(1.8, rel=0.05)
    assert m.contralateral == pytest.approx(contralateral, abs=0.05)
    assert m.diagonal == pytest.approx(diagonal, abs=0.05)
    assert m.contralateral_phase == pytest.approx(0.5 if contralateral < 0 else 0.0, abs=0.03)
    assert m.diagonal_phase == pytest.approx(0.5 if diagonal < 0 else 0.0, abs=0.03)


def test_a_biped_has_no_diagonal():
    m = measure_gait(stepping(BIPED))
    assert m.contralateral == pytest.approx(-1.0, abs=0.05) and m.diagonal is None
    assert m.diagonal_phase is None and m.diagonal_pearson is None


def test_an_in_place_walk_neither_travels_nor_strides():
    m = measure_gait(stepping(WALK, speed=1e-9))
    assert m.frequency_hz == pytest.approx(1.2, rel=0.05)
    assert m.travel_speed < 1e-3 and m.stride_length < 1e-3
    assert gait_verdict(m, m, "walk")["gait_like"]


@pytest.mark.parametrize("glued", [False, True])
def test_frozen_legs_on_a_gliding_body_have_no_stride(glued):
    m = measure_gait(gliding(glued=glued))
    assert m.frequency_hz is None and m.stride_length is None
    assert m.duty == pytest.approx(1.0)
    assert m.contralateral is None and m.diagonal is None and m.contralateral_pearson is None
    assert m.stance_slide == pytest.approx(0.0 if glued else 0.8, abs=1e-6)
    verdict = gait_verdict(m, measure_gait(stepping(WALK)), "walk")
    assert not verdict["gait_like"] and not verdict["no_gliding"] and not verdict["frequency"]


def test_too_short_a_clip_has_no_frequency():
    m = measure_gait(stepping(WALK, seconds=1.0))  # 1.2 cycles
    assert m.frequency_hz is None and m.contralateral is None


# --------------------------------------------------------------------------- soles


def test_a_foot_sliding_while_planted():
    m = measure_gait(stepping(WALK, slide=0.3))
    assert m.stance_slide == pytest.approx(0.3, abs=0.03)
    assert m.duty == pytest.approx(0.6, abs=0.05)
    t = (np.arange(120) + 0.5) / 30.0
    skate = FootTrack("hind left", "left", "hind", np.stack([np.zeros_like(t), -0.3 * t, 0 * t], 1))
    body = np.stack([np.zeros_like(t), -0.5 * t, np.full_like(t, 0.5)], 1)  # it travels: the ground rule
    alone = measure_gait(GaitInput(30.0, (skate,), body, 1.0, floor=0.0))
    assert alone.stance_slide == pytest.approx(0.3, rel=1e-6) and alone.duty == 1.0


def test_a_foot_below_the_floor_penetrates():
    gait = stepping(WALK, scale=2.0)
    sunk = replace(gait.feet[0], points=gait.feet[0].points - [0, 0, 0.02 * 2.0])
    m = measure_gait(replace(gait, feet=(sunk, *gait.feet[1:])))
    assert m.penetration == pytest.approx(0.02, rel=1e-6)
    assert m.duty == pytest.approx(0.6, abs=0.05)
    vertices = np.stack([f.points for f in gait.feet], axis=1)
    vertices[10, 2, 2] = -0.05 * 2.0  # the mesh reaches deeper than the soles
    assert measure_gait(replace(gait, vertices=vertices)).penetration == pytest.approx(0.05)


def test_the_floor_is_estimated_from_the_soles():
    gait = stepping(WALK)
    raised = tuple(replace(f, points=f.points + [0, 0, 0.7]) for f in gait.feet)
    m = measure_gait(replace(gait, feet=raised, floor=None))
    assert m.floor == pytest.approx(0.7, abs=1e-9)
    assert m.duty == pytest.approx(measure_gait(gait).duty, abs=1e-9) and m.penetration == 0.0


@pytest.mark.parametrize("lift", [0.05, 0.2])
def test_foot_lift_is_the_swing_height(lift):
    m = measure_gait(stepping(BIPED, lift=lift, scale=2.0))
    assert m.foot_lift == pytest.approx(lift, rel=0.02)


@pytest.mark.parametrize("fps", [24.0, 60.0])
def test_jerk_of_a_sine(fps):
    amplitude, freq = 0.05, 1.5
    t = np.arange(int(4 * fps)) / fps  # six whole cycles
    points = np.stack([amplitude * np.sin(2 * np.pi * freq * t), 0 * t, 0 * t], 1)
    foot = FootTrack("hind left", "left", "hind", points * 3.0)
    m = measure_gait(GaitInput(fps, (foot,), np.zeros((len(t), 3)), body_size=3.0, floor=0.0))
    assert m.jerk == pytest.approx(amplitude * (2 * np.pi * freq) ** 3 * 2 / np.pi, rel=0.03)


def test_smoothed_jerk_keeps_a_smooth_motion_and_drops_the_kinks_of_linear_keys():
    fps, freq, amplitude = 24.0, 1.0, 0.05
    t = np.arange(96) / fps
    smooth = np.stack([amplitude * np.sin(2 * np.pi * freq * t), 0 * t, 0 * t], 1)
    keyed = smooth.copy()  # the same sine keyed every third frame, linear in between
    keys = np.arange(0, 96, 3)
    keyed[:, 0] = np.interp(np.arange(96), keys, smooth[keys, 0])

    def measured(points):
        foot = FootTrack("hind left", "left", "hind", points)
        return measure_gait(GaitInput(fps, (foot,), np.zeros((96, 3)), body_size=1.0, floor=0.0))

    clean, kinked = measured(smooth), measured(keyed)
    assert clean.jerk_smoothed == pytest.approx(clean.jerk, rel=0.15)
    assert kinked.jerk > 3 * clean.jerk  # the kinks are most of its jerk
    assert kinked.jerk_smoothed < 0.5 * kinked.jerk


# --------------------------------------------------------------------------- invariance


def _numbers(m: GaitMeasures) -> dict[str, float]:
    d = m.as_dict()
    skip = ("floor", "jerk", "jerk_smoothed")
    return {k: v for k, v in d.items() if isinstance(v, float) and k not in skip}


def test_the_same_motion_at_100_times_the_scale_measures_the_same():
    small, large = measure_gait(stepping(TROT, duty=0.5)), measure_gait(stepping(TROT, duty=0.5, scale=100.0))
    assert _numbers(large) == pytest.approx(_numbers(small), rel=1e-6, abs=1e-9)
    assert large.jerk == pytest.approx(small.jerk, rel=1e-6)
    assert large.floor == small.floor == 0.0


def test_24_and_60_fps_measure_the_same():
    slow, fast = measure_gait(stepping(WALK, fps=24.0)), measure_gait(stepping(WALK, fps=60.0))
    assert slow.duty == pytest.approx(fast.duty, abs=0.03)
    assert slow.frequency_hz == pytest.approx(fast.frequency_hz, rel=0.03)
    for key in ("contralateral", "contralateral_phase", "diagonal", "diagonal_phase"):
        assert getattr(slow, key) == pytest.approx(getattr(fast, key), abs=0.05), key
    for key in ("travel_speed", "stride_length", "swing_amplitude"):
        assert getattr(slow, key) == pytest.approx(getattr(fast, key), rel=0.03), key


def test_as_dict_is_json_ready():
    d = measure_gait(gliding()).as_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["frequency_hz"] is None and isinstance(d["duty_per_foot"]["front left"], float)
    assert d["in_place"] is False and d["belt_speed"] is None
    assert all(v is None or isinstance(v, bool) or (isinstance(v, float | dict) and (
        not isinstance(v, float) or math.isfinite(v))) for v in d.values())


# --------------------------------------------------------------------------- the verdict


def test_a_walk_passes_against_itself():
    m = measure_gait(stepping(WALK))
    verdict = gait_verdict(m, m, "walk")
    assert verdict["gait_like"] and all(verdict.values())
    assert set(verdict) == {"duty", "frequency", "contralateral", "diagonal", "stance_slide", "penetration",
                            "jerk", "no_gliding", "gait_like"}


def test_a_trot_with_diagonals_out_of_phase_fails():
    authored = measure_gait(stepping(TROT, duty=0.5, freq=1.8, speed=1.5))
    assert gait_verdict(authored, authored, "trot")["gait_like"]
    quarter = {**TROT, ("right", "front"): 0.25, ("left", "front"): 0.75}
    for phases in (PACE, quarter):
        generated = measure_gait(stepping(phases, duty=0.5, freq=1.8, speed=1.5))
        verdict = gait_verdict(generated, authored, "trot")
        assert not verdict["diagonal"] and not verdict["gait_like"]


def test_the_verdict_bounds():
    authored = measure_gait(stepping(WALK))
    assert not gait_verdict(measure_gait(stepping(WALK, freq=1.6, speed=0.8 * 1.6 / 1.2)), authored,
                            "walk")["frequency"]
    assert not gait_verdict(measure_gait(stepping(WALK, duty=0.8)), authored, "walk")["duty"]
    assert not gait_verdict(measure_gait(stepping(WALK, slide=0.3)), authored, "walk")["stance_slide"]
    assert not gait_verdict(replace(authored, penetration=0.02), authored, "walk")["penetration"]
    assert not gait_verdict(replace(authored, jerk=authored.jerk * 3), authored, "walk")["jerk"]
    assert gait_verdict(replace(authored, jerk=authored.jerk * 1.5), authored, "walk")["jerk"]
    # A body that outruns its feet by 50 % glides.
    assert not gait_verdict(replace(authored, travel_speed=1.2), authored, "walk")["no_gliding"]
    # A gallop is not held to alternating feet; an unknown kind is an error.
    bound = measure_gait(stepping(BOUND, duty=0.5, freq=1.8, speed=1.5))
    assert gait_verdict(bound, bound, "gallop")["gait_like"]
    assert not gait_verdict(bound, bound, "walk")["contralateral"]
    with pytest.raises(ValueError):
        gait_verdict(bound, bound, "hop")


# --------------------------------------------------------------------------- in-place clips


def in_place(front_speed: float = 0.5, hind_speed: float = 0.8, front_lift: float = 0.015,
             duty: float = 0.6, freq: float = 1.0, fps: float = 24.0) -> GaitInput:
    """A walk in place, as game clips are authored: each foot's walk along −Y with the root motion taken
    out, the front stance feet moving back at `front_speed` and the hind at `hind_speed` (body sizes/s),
    the front paws lifted only `front_lift` body sizes."""
    t = (np.arange(int(round(5.0 * fps))) + 0.5) / fps
    body = np.stack([np.zeros_like(t), np.zeros_like(t), np.full_like(t, 0.5)], axis=1)
    feet = []
    for (side, end), shift in WALK.items():
        speed, lift = (front_speed, front_lift) if end == "front" else (hind_speed, 0.1)
        offset = np.array([0.15 if side == "left" else -0.15, -0.3 if end == "front" else 0.3])
        points = _foot_path(t, shift, freq, duty, speed, offset, lift, 0.0) + [0, speed, 0] * t[:, None]
        feet.append(FootTrack(f"{end} {side}", side, end, points))
    return GaitInput(fps=fps, feet=tuple(feet), body=body, body_size=1.0, floor=0.0)


def test_an_in_place_walk_reads_as_a_walk_on_per_foot_belts():
    m = measure_gait(in_place())
    assert m.in_place
    # An eased swing starts at the belt's speed, so its first low frames still move back: ≈ +0.05.
    assert m.duty == pytest.approx(0.62, abs=0.06)
    assert all(abs(d - 0.62) < 0.08 for d in m.duty_per_foot.values())
    assert m.frequency_hz == pytest.approx(1.0, rel=0.05)
    assert m.contralateral == pytest.approx(-1.0, abs=0.1)
    assert m.belt_speed_per_foot["front left"] == pytest.approx(0.5, rel=0.05)
    assert m.belt_speed_per_foot["hind right"] == pytest.approx(0.8, rel=0.05)
    # Travel is the median belt; strides are each foot's belt over one period.
    assert m.travel_speed == pytest.approx(m.belt_speed, rel=0.05)
    assert 0.5 <= m.stride_length <= 0.8 and m.stance_slide < 0.05
    assert gait_verdict(m, m, "walk")["gait_like"]


def test_in_place_and_travelling_walks_measure_alike():
    travelling = measure_gait(stepping(WALK, freq=1.0, fps=24.0, speed=0.8))
    still = measure_gait(in_place(front_speed=0.8, hind_speed=0.8, front_lift=0.1))
    assert not travelling.in_place and travelling.belt_speed is None
    assert still.duty == pytest.approx(travelling.duty, abs=0.06)
    assert still.frequency_hz == pytest.approx(travelling.frequency_hz, rel=0.05)
    assert still.contralateral == pytest.approx(travelling.contralateral, abs=0.1)
    assert still.travel_speed == pytest.approx(travelling.travel_speed, rel=0.05)


def rolling(roll: float = 0.035, lift: float = 0.1, fps: float = 30.0) -> GaitInput:
    """A biped walk (1.2 Hz, duty 0.6) whose soles are joints inside a rolling foot: the sole rises by
    `roll` through each stance (heel off, the foot rolls onto its toes) and swings from there."""
    gait = stepping(BIPED, fps=fps, lift=lift)
    t = (np.arange(len(gait.body)) + 0.5) / fps
    feet = []
    for foot in gait.feet:
        s = (1.2 * t + BIPED[(foot.side, foot.end)]) % 1.0
        u = np.clip((s - 0.6) / 0.4, 0.0, 1.0)
        z = np.where(s < 0.6, roll * s / 0.6, roll * (1 - u) + lift * np.sin(np.pi * u))
        feet.append(replace(foot, points=np.column_stack([foot.points[:, :2], z])))
    return replace(gait, feet=tuple(feet))


def test_a_rolling_foot_stays_planted_through_its_stance():
    # The stance rises by 35 % of the lift: no narrow band around the low holds it, the lower half of
    # the foot's height range (and slow) does.
    m = measure_gait(rolling())
    assert m.duty == pytest.approx(0.6, abs=0.06)
    assert m.frequency_hz == pytest.approx(1.2, rel=0.05)
    assert m.contralateral == pytest.approx(-1.0, abs=0.05)
    assert m.stride_length == pytest.approx(0.8 / 1.2, rel=0.05)


def test_a_foot_lifting_straight_up_is_not_planted_on_its_way():
    # The constructed swing lifts first (eased fore–aft, sine height): slow horizontally while it rises
    # through the lower half of its range; its vertical speed keeps it lifted, so the duty stays 0.6.
    gait = stepping(WALK, lift=0.2)
    assert measure_gait(gait).duty == pytest.approx(0.6, abs=0.03)


def test_an_in_place_walk_that_pauses_keeps_its_feet_down():
    # Five seconds of an in-place walk, then one second holding the last pose: the held feet that are
    # down stay planted (a pause is not a swing), so the duty over the walk's cycles does not fall.
    walk = in_place()
    frames = len(walk.body)
    hold = int(walk.fps)
    def held(points):
        return np.concatenate([points, np.repeat(points[-1:], hold, axis=0)])

    paused = replace(walk, feet=tuple(replace(f, points=held(f.points)) for f in walk.feet),
                     body=held(walk.body))
    m, plain = measure_gait(paused), measure_gait(walk)
    masks = contacts(paused)
    down = [f.name for f in walk.feet if contacts(walk)[f.name][-1]]
    assert down and all(masks[name][frames:].all() for name in down)
    assert m.in_place and m.frequency_hz == pytest.approx(plain.frequency_hz, rel=0.05)


def test_issue_31s_held_out_bounds_are_looser_and_still_bind():
    """HELD_OUT_RULES: duty ±0.15, stride frequency ×/÷1.5, jerk 0.4–2.5× the authored clip's."""
    authored = measure_gait(stepping(WALK))
    freq = authored.frequency_hz

    def verdict(**changes):
        return gait_verdict(replace(authored, **changes), authored, "walk", HELD_OUT_RULES)

    assert verdict(frequency_hz=1.4 * freq)["frequency"] and not verdict(frequency_hz=1.6 * freq)["frequency"]
    assert verdict(frequency_hz=freq / 1.4)["frequency"] and not verdict(frequency_hz=freq / 1.6)["frequency"]
    assert not gait_verdict(replace(authored, frequency_hz=1.4 * freq), authored, "walk")["frequency"]
    assert verdict(duty=authored.duty + 0.14)["duty"] and not verdict(duty=authored.duty + 0.16)["duty"]
    assert verdict(jerk=authored.jerk * 0.45)["jerk"] and not verdict(jerk=authored.jerk * 0.35)["jerk"]
    assert verdict(jerk=authored.jerk * 2.4)["jerk"] and not verdict(jerk=authored.jerk * 2.6)["jerk"]
