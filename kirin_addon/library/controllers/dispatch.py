"""The controllers' entry point: one clip of an action for a creature, routed to the gait, action or axial
controller; `ACTIONS_BY_FAMILY` lists what each family can do."""

from __future__ import annotations

import numpy as np

from ...core.creature import Creature
from .actions import glide, in_place, jump
from .axial import axial
from .common import ControllerError, GeneratedClip, Travel
from .fall import death
from .gaits import FAMILY_GAITS, GAIT_OVERRIDES, GAITS, default_turn, locomotion

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


def normalise_segments(segments: list | None, action: str, frames: int | None, fps: float,
                       speed: float | None) -> list[dict]:
    """Segments as dicts {gait, duration (s), speed (m/s or None)}; tuples (gait, duration[, speed]) too."""
    if not segments:
        duration = (frames if frames is not None else 72) / fps
        return [{"gait": action, "duration": duration, "speed": speed}]
    out = []
    for seg in segments:
        if isinstance(seg, dict):
            # "frequency" (Hz) and the GAIT_OVERRIDES are optional: a calibrated tempo and gait.
            out.append({"gait": seg["gait"], "duration": float(seg["duration"]), "speed": seg.get("speed"),
                        "frequency": seg.get("frequency"), **{k: seg.get(k) for k in GAIT_OVERRIDES}})
        else:
            out.append({"gait": seg[0], "duration": float(seg[1]), "speed": seg[2] if len(seg) > 2 else None})
    if frames is not None:
        scale = (frames / fps) / sum(s["duration"] for s in out)
        for s in out:
            s["duration"] *= scale
    return out


def generate(creature: Creature, action: str, seed: int, frames: int | None = None, fps: float = 30.0,
             travel: Travel | None = None, segments: list | None = None,
             stance: np.ndarray | None = None) -> GeneratedClip:
    """One clip of `action` for `creature`; deterministic for a seed (amplitudes, phases, speeds vary).

    travel: speed, direction and turn rate (default: forward at the gait's own speed). segments:
    [(gait, seconds[, speed]), ...] or dicts, for transitions within a clip such as walk → trot → stop
    ("stop" ends it standing); frames rescales their durations. stance: (legs, 3) where the feet of a
    death or an action in place stand (body frame at rest; default their rest), as a stop left them.
    """
    travel = travel or Travel()
    speed, direction, turn_rate = travel.speed, travel.direction, travel.turn_rate
    family = creature.family
    allowed = ACTIONS_BY_FAMILY.get(family, ())
    names = [s["gait"] if isinstance(s, dict) else s[0] for s in segments] if segments else [action]
    for name in names:
        if name not in allowed and name not in ("stop", "stand"):
            raise ControllerError(f"A {family} cannot '{name}' (it can: {', '.join(allowed)}).")
    rng = np.random.default_rng(seed)
    segs = normalise_segments(segments, action, frames, fps, speed)
    count = int(round(sum(s["duration"] for s in segs) * fps))
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


def _drop_of(family: str, segment: dict) -> float:
    """Body drop (leg lengths) a segment's gait counts on: its crouch and its bob."""
    name = FAMILY_GAITS.get(family, {}).get(segment["gait"])
    own = (GAITS[name].crouch, GAITS[name].bob) if name else (0.0, 0.0)
    crouch, bob = (float(segment[k]) if segment.get(k) is not None else v
                   for k, v in zip(("crouch", "bob"), own, strict=True))
    return crouch + bob


def _legged(creature: Creature, action: str, seed: int, segs: list[dict], fps: float,
            travel: Travel) -> GeneratedClip:
    """A turn on the spot, or locomotion retried with quicker strides until the body need not drop far
    and every planted foot is met."""
    direction, turn_rate = travel.direction, travel.turn_rate
    rng = np.random.default_rng(seed)
    duration = int(round(sum(s["duration"] for s in segs) * fps)) / fps
    leg = creature.leg_length
    if action == "turn":
        walk = "walk"
        segs = [{"gait": walk, "duration": duration, "speed": 0.0}]
        rate = turn_rate or (np.pi / 2) / duration * (1 if direction != "right" else -1)
        clip = locomotion(creature, segs, fps, rng, "forward", rate)
        clip.action = "turn"
        return clip
    clip = None
    # A gait that counts on a crouch to reach its stride (a gallop's, a calibrated tempo's) may drop the
    # body that far, and as far again as it bobs, and a little more.
    crouch = max([CROUCH_LIMIT] + [_drop_of(creature.family, s) + DROP_MARGIN for s in segs
                                   if s["gait"] not in ("stop", "stand")])
    for attempt in range(4):
        trial = [dict(s) for s in segs]
        clip = locomotion(creature, trial, fps, np.random.default_rng(seed), direction, turn_rate or None,
                          stride_mult=1.25**attempt)
        if clip.metadata["body_drop_max"] <= crouch * leg and clip.metadata["unreached_planted"] == 0:
            break
    clip.metadata["attempts"] = attempt + 1
    clip.direction = direction
    return clip
