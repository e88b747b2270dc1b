"""Gait segments: frozen, read and never changed by the controllers; their overrides are the gait's fields;
the gait table is written by keyword."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, fields

import pytest

from kirin.kirin_addon.library.controllers.dispatch import generate
from kirin.kirin_addon.library.controllers.gaits import GAITS, Gait
from kirin.kirin_addon.library.controllers.segments import GaitOverrides, GaitSegment
from kirin.kirin_addon.library.families.build import build_creature


def _not_in_gait(overrides: type) -> list[str]:
    """The overrides' fields that are no float field of the controllers' Gait."""
    gait = {f.name: f.type for f in fields(Gait)}
    return [f.name for f in fields(overrides) if gait.get(f.name) != "float"]


def test_every_override_is_a_field_of_the_gait() -> None:
    assert _not_in_gait(GaitOverrides) == []

    @dataclass(frozen=True)
    class Drifted(GaitOverrides):  # a name the gait does not have, as a drift would leave it
        stride: float | None = None

    assert _not_in_gait(Drifted) == ["stride"]


def test_overrides_set_what_they_give_and_keep_the_rest() -> None:
    every = GaitOverrides(**{f.name: 0.5 for f in fields(GaitOverrides)})
    for gait in GAITS.values():
        changed = every.applied(gait)
        assert all(getattr(changed, name) == 0.5 for name in every.given())
        assert (changed.name, changed.froude, changed.pattern) == (gait.name, gait.froude, gait.pattern)
    assert GaitOverrides().applied(GAITS["trot"]) == GAITS["trot"]
    assert GaitOverrides(duty=0.4, lift=None).given() == {"duty": 0.4}


def test_the_gait_table_is_written_by_keyword() -> None:
    assert all(name == gait.name for name, gait in GAITS.items())
    with pytest.raises(TypeError):
        Gait("walk", "lateral", 0.58, 0.30, 0.08, 0.012, 2)  # type: ignore[misc]


def test_the_controllers_do_not_change_the_segments_they_are_given() -> None:
    creature = build_creature("quadruped", seed=0)
    trot = GaitSegment("trot", 1.0, frequency=1.3, overrides=GaitOverrides(duty=0.4))
    asked = (GaitSegment("walk", 1.0), trot, GaitSegment("stop", 0.5))
    clip = generate(creature, "walk", seed=1, frames=60, fps=30.0, segments=asked)
    assert asked[0].speed is None and asked[1].speed is None
    with pytest.raises(FrozenInstanceError):
        asked[0].speed = 1.0  # type: ignore[misc]
    # The clip's segments are those asked, rescaled to its frames, with the speed each got.
    assert [s.action for s in clip.segments] == ["walk", "trot", "stop"]
    assert clip.segments[0].speed > 0 and clip.segments[1].speed > 0 and clip.segments[2].speed == 0.0
    assert clip.segments[1].overrides == asked[1].overrides and clip.segments[1].frequency == 1.3
    assert sum(s.duration for s in clip.segments) == pytest.approx(2.0)
