"""A gait segment: one stretch of a clip as the controllers are asked for it — an action for a time, at a
speed or a stride frequency, with what a calibrated tempo changes of the gait.

The controllers read segments and never change them (a segment with the speed it got is a new one). The
tempo of a segment made from a prompt is decided in kirin_addon/generate/tempo.py (`gait_segment`);
the library's own clips give an action and a duration and take the gait as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TypeVar

# The segments that end a clip standing still where the gait before them stopped.
STOPS = ("stop", "stand")

_Gait = TypeVar("_Gait")


@dataclass(frozen=True)
class GaitOverrides:
    """What a calibrated tempo changes of the controllers' gait; each field is the `Gait` field of the same
    name (tests/library/test_segments.py checks it), None keeps the gait's own."""

    duty: float | None = None  # stance share
    crouch: float | None = None  # body drop (leg lengths) a stride may count on
    lean: float | None = None  # forward pitch (rad) of the spine
    arm_swing: float | None = None  # fore–aft arm swing (rad)
    elbow: float | None = None  # forearm bend (rad) of swinging arms
    bob: float | None = None  # vertical body bob (leg lengths)
    sway: float | None = None  # lateral body sway (leg lengths)
    nod: float | None = None  # head-and-neck pitch oscillation (rad)
    pitch: float | None = None  # body pitch oscillation (rad) of a gallop
    lift: float | None = None  # swing foot clearance (leg lengths)
    heel_off: float | None = None  # foot pitch (rad) as the heel comes up before lift-off
    heel_strike: float | None = None  # toes up (rad) as the foot lands heel first

    def given(self) -> dict[str, float]:
        """The values set, by field name."""
        return {f.name: float(value) for f in fields(self) if (value := getattr(self, f.name)) is not None}

    def applied(self, gait: _Gait) -> _Gait:
        """`gait` (the controllers' Gait) with the values set."""
        return replace(gait, **self.given())


NO_OVERRIDES = GaitOverrides()


@dataclass(frozen=True)
class GaitSegment:
    """One stretch of a clip: an action of the family (a gait, "stop"/"stand" after a gait, or an action in
    place) for `duration` seconds."""

    action: str
    duration: float  # seconds (a clip's frame count rescales them)
    speed: float | None = None  # m/s; None: the gait's own, or what the stride frequency allows
    frequency: float | None = None  # stride frequency asked (Hz); None: from the speed
    overrides: GaitOverrides = NO_OVERRIDES
    tempo_from: tuple[str, ...] | None = None  # the calibration rigs whose tempo this is; None: no tempo
    # The stride asked, as a share of the longest the legs take at the segment's tempo (a speed word's part
    # of the pace the cadence does not carry); above 1 the cadence rises instead: the legs reach no further.
    stride: float = 1.0
    # Heading change (rad, positive turns left: counter-clockwise seen from above, about +Z) over the
    # segment; None: the clip's direction's ("then turning right" is a segment of its own that turns).
    turn: float | None = None

    @property
    def stops(self) -> bool:
        return self.action in STOPS
