"""`MotionDescription`: what a clip shows, and `chain` for motions made of parts in order."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.creature import FAMILIES
from .lexicon import _STATIONARY, _check_action
from .phrasing import _bucket_of_word, speed_bucket


@dataclass(frozen=True)
class MotionDescription:
    """What a clip shows.

    species: e.g. "wolf" (any string; known ones get synonyms). family: one of FAMILIES.
    action: a canonical action id (see ACTIONS / lexicon()). speed: root speed in m/s or None.
    speed_word: a word that overrides the computed one ("briskly"). direction: one of DIRECTIONS
    (other strings are used verbatim) or None. manner: adverbs ("playfully"), adjectives ("tired",
    put on the subject), -ing words ("limping"), prepositional phrases ("with a limp") or nouns
    ("headbutt" → "with a headbutt"). leg_length: hip height (legless: body length) in metres for
    the speed word; None takes a typical size. label: raw words of an authored clip name; only
    said for the generic "move" action ("performs a roll motion").

    segments: when given, the motion is these parts in order ("walks, then trots, then sits
    down"); `action` should be the first part's (it is used for tags), the parts' own species and
    family are ignored, and of the parent's own fields only manner adjectives (on the subject)
    are used. Nested segments are flattened.
    """

    species: str
    family: str
    action: str
    speed: float | None = None
    speed_word: str | None = None
    direction: str | None = None
    manner: tuple[str, ...] = ()
    segments: tuple[MotionDescription, ...] = ()
    leg_length: float | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"Unknown family {self.family!r}; expected one of {', '.join(FAMILIES)}.")
        _check_action(self.action)
        if isinstance(self.manner, str):
            object.__setattr__(self, "manner", (self.manner,) if self.manner else ())
        else:
            object.__setattr__(self, "manner", tuple(m for m in self.manner if m and m.strip()))
        if not all(isinstance(s, MotionDescription) for s in self.segments):
            raise TypeError("segments must be MotionDescription objects.")
        object.__setattr__(self, "segments", tuple(self.segments))

    def parts(self) -> tuple[MotionDescription, ...]:
        """The motion's parts in order (itself when it has no segments)."""
        if not self.segments:
            return (self,)
        return tuple(p for s in self.segments for p in s.parts())

    def bucket(self) -> str | None:
        """The speed bucket said in captions: None (nothing said), one of SPEED_BUCKETS, or
        "other" (a speed_word this module does not know, said verbatim)."""
        if self.speed_word:
            return _bucket_of_word(self.speed_word) or "other"
        if self.speed is None or self.action in _STATIONARY:
            return None
        return speed_bucket(self.family, self.action, self.speed, self.leg_length)


def chain(first: MotionDescription, *rest: MotionDescription) -> MotionDescription:
    """A description of `first` followed by `rest` (e.g. walk, then trot, then sit)."""
    if not rest:
        return first
    return MotionDescription(first.species, first.family, first.parts()[0].action, segments=(first, *rest))

