"""A prompt read as a plan: the segments of motion it asks for, each an action with its pace and direction.

"a wolf trotting forward, then sitting down" → trot forward, then sit. The words come from the clip-name
reader the library's captions use (`describe_clip_name`), with the family's own names for each gait
("running" is a gallop for a quadruped, a run for a biped). The rig is already given: the species a
prompt names only sets the cadence (a fox steps quicker than a donkey).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..library.captions.clip_names import describe_clip_name
from ..library.controllers.dispatch import ACTIONS_BY_FAMILY
from ..library.controllers.gaits import FAMILY_GAITS
from ..library.controllers.segments import GaitSegment
from .rig_shape import RigShape
from .tempo import gait_segment, species_in

# Pace of each speed bucket a prompt's speed word falls in, as a share of the gait's own speed (people's
# slow and fast walks are about 0.6 and 1.4 times their usual speed). The cadence carries pace^0.55 of it
# (tempo.py), the stride the rest.
PACE_OF_BUCKET = {"very_slow": 0.45, "slow": 0.6, "fast": 1.4, "very_fast": 1.75}
# The families whose legs the controllers solve on artists' rigs. Not the spider yet: on the luanti spider
# its sprawled legs now keep their order and lift (reach.NEIGHBOUR_SHIFT, gaits.SPRAWLED_LIFT), but where
# its foot controls are taken away its legs are not all found (two of eight) and the abdomen drags.
CONSTRUCTED_FAMILIES = ("quadruped", "biped")
# The actions besides the gaits that the controllers make on artists' rigs (the benchmark decides: idle
# and jump by R@1; death by its filmstrips at the network's R@1 — the body goes over and lies on the
# ground; sit by its filmstrips: no held-out rig has a sit clip, and the network's sit stands still;
# attack, eat and hit by their filmstrips: the network's attacks and hits stood still, its husky ate with
# its head up).
CONSTRUCTED_ACTIONS = ("idle", "jump", "death", "sit", "attack", "eat", "hit")
# What may end a locomotion clip made by construction: the creature comes to a stop, then does it in
# place where it stopped ("a husky runs, then dies", "a wolf trotting forward, then sitting down").
FINALES = ("death", "sit")
# How long the stop before a finale takes (s): the feet finish their steps and settle.
STOP_SECONDS = 0.8
# What a prompt's last part may be that only brings the creature to rest, and the controllers' name for
# the end of a locomotion clip that stops, standing.
AT_REST = ("idle", "land", "stop")
STOP = "stop"
DIRECTIONS = {"forward": "forward", "backward": "backward", "left": "left", "right": "right",
              "turning left": "left", "turning right": "right", "in a circle": "circle"}
# A part of a plan whose direction differs from the others' turns on its own by this much (rad, positive
# left: counter-clockwise seen from above, about +Z in the canonical frame, where −Y is forward):
# "…, then turning right" is a right angle clockwise.
TURN_ANGLES = {"left": math.pi / 2, "right": -math.pi / 2, "circle": 2 * math.pi}
# How long such a turn takes where its part is longer: TURN_SECONDS, or TURN_STRIDES of a slow gait (a giant
# turns over more than a stride); the rest of the part goes on straight in the new heading (a part shorter
# than the turn and MIN_STRAIGHT turns all along).
TURN_SECONDS = 1.5
TURN_STRIDES = 1.25
MIN_STRAIGHT = 0.6


@dataclass(frozen=True)
class Segment:
    action: str  # a controller action of the family ("walk", "gallop", "sit"…)
    share: float  # of the clip's length
    pace: float = 1.0  # multiplies the gait's own speed
    direction: str = "forward"
    frequency: float | None = None  # the stride frequency asked (Hz; a video's), instead of the tempo's


@dataclass(frozen=True)
class MotionPlan:
    family: str
    segments: tuple[Segment, ...]
    species: str | None = None  # what the prompt names, where its size is known (it sets the cadence)

    @property
    def locomotion(self) -> bool:
        """Every segment is a gait of the family, and the family is one the controllers walk on artists'
        rigs (CONSTRUCTED_FAMILIES)."""
        gaits = FAMILY_GAITS.get(self.family, {})
        stops = len(self.segments) > 1 and self.segments[-1].action == STOP
        moving = self.segments[:-1] if stops else self.segments
        return (self.family in CONSTRUCTED_FAMILIES and bool(moving)
                and all(s.action in gaits for s in moving))

    @property
    def finale(self) -> Segment | None:
        """The in-place action (FINALES) that ends a plan of gaits, where it has one."""
        last = self.segments[-1] if len(self.segments) > 1 else None
        if last is None or last.action not in FINALES:
            return None
        if last.action not in ACTIONS_BY_FAMILY.get(self.family, ()):
            return None
        return last if self.moving_part(1.0).locomotion else None

    def moving_part(self, seconds: float) -> MotionPlan:
        """The gaits before the finale, coming to a stop over STOP_SECONDS at the end of their `seconds`."""
        moving = self.segments[:-1]
        shares = sum(s.share for s in moving)
        stop = shares * STOP_SECONDS / max(seconds - STOP_SECONDS, 1e-6)
        ending = Segment(STOP, stop, 1.0, moving[-1].direction)
        return MotionPlan(self.family, (*moving, ending), self.species)

    @property
    def constructed(self) -> bool:
        """Made by construction: locomotion, locomotion ending in a finale, or one of CONSTRUCTED_ACTIONS
        alone where the family has it."""
        if self.locomotion or self.finale is not None:
            return True
        return (self.family in CONSTRUCTED_FAMILIES and len(self.segments) == 1
                and self.segments[0].action in CONSTRUCTED_ACTIONS
                and self.segments[0].action in ACTIONS_BY_FAMILY.get(self.family, ()))

    @property
    def direction(self) -> str:
        """The direction of the whole clip: the one its parts share, else forward (backward where the first
        goes backward) with each part that goes left, right or round turning on its own."""
        directions = {s.direction for s in self.segments}
        if len(directions) == 1:
            return directions.pop()
        return "backward" if self.segments[0].direction == "backward" else "forward"

    def controller_segments(self, seconds: float, shape: RigShape | None = None) -> tuple[GaitSegment, ...]:
        """The controllers' segments over a clip of `seconds`, each at the tempo tempo.py gives it (on a rig
        of `shape`, the tempo of the calibration rigs built like it); a part that turns on its own (see
        `direction`) turns by its TURN_ANGLES over TURN_SECONDS (or TURN_STRIDES), then goes on straight."""
        total = sum(s.share for s in self.segments)
        out: list[GaitSegment] = []
        for s in self.segments:
            made = gait_segment(self.family, s.action, seconds * s.share / total, s.pace, self.species, shape,
                                s.frequency)
            angle = TURN_ANGLES.get(s.direction) if s.direction != self.direction else None
            if angle is None or made.stops:
                out.append(made)
                continue
            turning = max(TURN_SECONDS, TURN_STRIDES / made.frequency if made.frequency else 0.0)
            turning = made.duration if made.duration < turning + MIN_STRAIGHT else turning
            out.append(replace(made, duration=turning, turn=angle))
            if turning < made.duration:
                out.append(replace(made, duration=made.duration - turning, turn=0.0))
        return tuple(out)


def _ending_at_rest(segments: list[Segment], family: str) -> list[Segment]:
    """A last part that only comes to rest ("…, then stands still", "jumps and lands"): after gaits it is
    the controllers' stop; after an action that ends standing (a jump) it is part of that action."""
    if len(segments) < 2 or segments[-1].action not in AT_REST:
        return segments
    last, before = segments[-1], segments[-2]
    if before.action in FAMILY_GAITS.get(family, {}):
        return [*segments[:-1], Segment(STOP, last.share, 1.0, before.direction)]
    if before.action in CONSTRUCTED_ACTIONS:
        joined = Segment(before.action, before.share + last.share, before.pace, before.direction)
        return [*segments[:-2], joined]
    return segments


def plan_prompt(prompt: str, family: str) -> MotionPlan:
    """The plan a prompt asks of a rig of `family`; actions the family has no controller for are kept by
    name (the plan is then not `locomotion`)."""
    description = describe_clip_name(prompt, "", family)
    parts = description.parts()
    allowed = ACTIONS_BY_FAMILY.get(family, ())
    gaits = FAMILY_GAITS.get(family, {})
    segments: list[Segment] = []
    for part in parts:
        action = part.action
        if action not in allowed and action in ("run", "gallop", "canter"):
            action = "run" if "run" in gaits else "gallop"
        pace = PACE_OF_BUCKET.get(part.bucket() or "", 1.0)
        direction = DIRECTIONS.get(part.direction or "forward", "forward")
        if action == "turn" and direction in ("left", "right"):  # "…, then turning right": the gait turns
            before = segments[-1] if segments and segments[-1].action in gaits else None
            action = before.action if before is not None else "walk"
            if before is not None and part.bucket() is None:
                pace = before.pace
        segments.append(Segment(action, 1.0, pace, direction))
    segments = _ending_at_rest(segments, family)
    merged: list[Segment] = []
    for segment in segments:  # "walks, walks on" is one walk; each turn and each change of pace is a part
        if (merged and merged[-1].action == segment.action and merged[-1].direction == segment.direction
                and merged[-1].pace == segment.pace and segment.direction not in ("left", "right")):
            last = merged.pop()
            segment = Segment(last.action, last.share + segment.share, last.pace, last.direction)
        merged.append(segment)
    return MotionPlan(family, tuple(merged), species_in(prompt))
