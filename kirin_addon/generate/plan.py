"""A prompt read as a plan: the segments of motion it asks for, each an action with its pace and direction.

"a wolf trotting forward, then sitting down" → trot forward, then sit. The words come from the clip-name
reader the library's captions use (`describe_clip_name`), with the family's own names for each gait
("running" is a gallop for a quadruped, a run for a biped). The rig is already given: the species a
prompt names only sets the cadence (a fox steps quicker than a donkey).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..library.captions.clip_names import describe_clip_name
from ..library.controllers.dispatch import ACTIONS_BY_FAMILY
from ..library.controllers.gaits import FAMILY_GAITS
from ..library.controllers.segments import GaitSegment
from .rig_shape import RigShape
from .tempo import gait_segment, species_in

# Pace of each speed bucket a prompt's speed word falls in, as a share of the gait's own speed.
PACE_OF_BUCKET = {"very_slow": 0.5, "slow": 0.7, "fast": 1.3, "very_fast": 1.6}
# The families whose legs the controllers solve on artists' rigs. Not the spider: on the luanti spider
# its sprawled, arched legs were pulled in under the body (the front feet 0.1 body sizes back of rest).
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
              "in a circle": "circle"}


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

    def controller_segments(self, seconds: float, shape: RigShape | None = None) -> tuple[GaitSegment, ...]:
        """The controllers' segments over a clip of `seconds`, each at the tempo tempo.py gives it (on a rig
        of `shape`, the tempo of the calibration rigs built like it)."""
        total = sum(s.share for s in self.segments)
        return tuple(gait_segment(self.family, s.action, seconds * s.share / total, s.pace, self.species,
                                  shape, s.frequency) for s in self.segments)


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
    segments = []
    for part in parts:
        action = part.action
        if action not in allowed and action in ("run", "gallop", "canter"):
            action = "run" if "run" in gaits else "gallop"
        segments.append(Segment(action, 1.0, PACE_OF_BUCKET.get(part.bucket() or "", 1.0),
                                DIRECTIONS.get(part.direction or "forward", "forward")))
    segments = _ending_at_rest(segments, family)
    merged: list[Segment] = []
    for segment in segments:  # "walks, walks on" is one walk
        if merged and merged[-1].action == segment.action and merged[-1].direction == segment.direction:
            last = merged.pop()
            segment = Segment(last.action, last.share + segment.share, last.pace, last.direction)
        merged.append(segment)
    return MotionPlan(family, tuple(merged), species_in(prompt))
