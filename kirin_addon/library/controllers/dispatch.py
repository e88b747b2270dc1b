"""The controllers' entry point: one clip of an action for a creature, routed to the gait, action or axial
controller; `ACTIONS_BY_FAMILY` lists what each family can do."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ...core.creature import Creature
from .actions import glide, in_place, jump
from .axial import axial
from .common import ControllerError, GeneratedClip, Travel
from .fall import death
from .gaits import FAMILY_GAITS, GAITS, default_turn, locomotion
from .segments import GaitSegment

# A locomotion clip whose body drops further than this (leg lengths) is retried with quicker strides.
CROUCH_LIMIT = 0.12
# ... or further than its gaits' crouch and bob by this much.
DROP_MARGIN = 0.06

ACTIONS_BY_FAMILY: dict[str, tuple[str, ...]] = {
    "quadruped": ("walk", "trot", "pace", "canter", "gallop", "rotary_gallop", "bound", "pronk", "turn",
                  "idle", "sit", "lie_down", "stand_up", "rear_up", "jump", "look_around", "sniff", "shake",
                  "wag_tail", "death", "attack", "eat", "hit"),
    "dragon": ("walk", "trot", "canter", "gallop", "bound", "turn", "idle", "sit", "lie_down", "stand_up",
               "rear_up", "jump", "look_around", "sniff", "shake", "wag_tail", "flap", "glide"),
    "biped": ("walk", "run", "turn", "idle", "jump", "crouch", "wave", "death", "attack", "hit"),
    "bird": ("walk", "run", "hop", "turn", "idle", "peck", "flap", "glide"),
    "hexapod": ("walk", "tripod", "wave", "turn", "idle"),
    "spider": ("walk", "tripod", "wave", "turn", "idle"),
    "serpent": ("slither", "sidewind", "coil", "idle"),
    "fish": ("swim", "turn", "idle"),
}


def normalise_segments(segments: Sequence[GaitSegment] | None, action: str, frames: int | None, fps: float,
                       speed: float | None) -> list[GaitSegment]:
    """The clip's segments, their durations in seconds rescaled to `frames` where it is given; without
    segments, one of `action` at `speed` (m/s or None) for `frames` (default 72)."""
    if not segments:
        duration = (frames if frames is not None else 72) / fps
        return [GaitSegment(action, duration, speed)]
    out = [replace(seg, duration=float(seg.duration)) for seg in segments]
    if frames is not None:
        scale = (frames / fps) / sum(s.duration for s in out)
        out = [replace(s, duration=s.duration * scale) for s in out]
    return out


def generate(creature: Creature, action: str, seed: int, frames: int | None = None, fps: float = 30.0,
             travel: Travel | None = None, segments: Sequence[GaitSegment] | None = None,
             stance: np.ndarray | None = None) -> GeneratedClip:
    """One clip of `action` for `creature`; deterministic for a seed (amplitudes, phases, speeds vary).

    travel: speed, direction and turn rate (default: forward at the gait's own speed). segments: for
    transitions within a clip such as walk → trot → stop ("stop" ends it standing), or a gait at a
    calibrated tempo; frames rescales their durations. stance: (legs, 3) where the feet of a
    death or an action in place stand (body frame at rest; default their rest), as a stop left them.
    """
    travel = travel or Travel()
    speed, direction, turn_rate = travel.speed, travel.direction, travel.turn_rate
    family = creature.family
    allowed = ACTIONS_BY_FAMILY.get(family, ())
    names = [s.action for s in segments] if segments else [action]
    for name in names:
        if name not in allowed and name not in ("stop", "stand"):
            raise ControllerError(f"A {family} cannot '{name}' (it can: {', '.join(allowed)}).")
    rng = np.random.default_rng(seed)
    segs = normalise_segments(segments, action, frames, fps, speed)
    count = int(round(sum(s.duration for s in segs) * fps))
    duration = count / fps
    if family in ("serpent", "fish"):
        rate = default_turn(direction, turn_rate, duration, 0.0, 0.0) if action != "turn" else turn_rate
        return axial(creature, action, count, fps, rng, Travel(speed, direction, rate))
    if action == "turn" or action in FAMILY_GAITS.get(family, {}):
        return _legged(creature, action, seed, segs, fps, travel)
    if action == "jump":
        return jump(creature, count, fps, rng)
    if action == "death":
        return death(creature, count, fps, rng, stance)
    if action == "glide":
        return glide(creature, count, fps, rng, speed, default_turn(direction, turn_rate, duration, 0, 0))
    return in_place(creature, action, count, fps, rng, stance)


def _drop_of(family: str, segment: GaitSegment) -> float:
    """Body drop (leg lengths) a segment's gait counts on: its crouch and its bob."""
    name = FAMILY_GAITS.get(family, {}).get(segment.action)
    if not name:
        return 0.0
    gait = segment.overrides.applied(GAITS[name])
    return gait.crouch + gait.bob


def _legged(creature: Creature, action: str, seed: int, segs: list[GaitSegment], fps: float,
            travel: Travel) -> GeneratedClip:
    """A turn on the spot, or locomotion retried with quicker strides until the body need not drop far
    and every planted foot is met."""
    direction, turn_rate = travel.direction, travel.turn_rate
    rng = np.random.default_rng(seed)
    duration = int(round(sum(s.duration for s in segs) * fps)) / fps
    leg = creature.leg_length
    if action == "turn":
        segs = [GaitSegment("walk", duration, 0.0)]
        rate = turn_rate or (np.pi / 2) / duration * (1 if direction != "right" else -1)
        clip = locomotion(creature, segs, fps, rng, "forward", rate)
        clip.action = "turn"
        return clip
    clip = None
    # A gait that counts on a crouch to reach its stride (a gallop's, a calibrated tempo's) may drop the
    # body that far, and as far again as it bobs, and a little more.
    crouch = max([CROUCH_LIMIT] + [_drop_of(creature.family, s) + DROP_MARGIN for s in segs if not s.stops])
    for attempt in range(4):
        clip = locomotion(creature, segs, fps, np.random.default_rng(seed), direction, turn_rate or None,
                          stride_mult=1.25**attempt)
        if clip.metadata["body_drop_max"] <= crouch * leg and clip.metadata["unreached_planted"] == 0:
            break
    clip.metadata["attempts"] = attempt + 1
    clip.direction = direction
    return clip
