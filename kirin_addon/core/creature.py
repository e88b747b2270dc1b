"""A creature: a rig in the canonical frame, its skinned mesh, and what its joints are for.

The roles let motion controllers, captions and tests drive any family without reading names
(names vary on purpose, as they do on real rigs). Canonical frame: +Z up, facing −Y, the
creature's left side on +X, metres, feet on z = 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .rig import Rig
from .skinning import SkinnedMesh

FAMILIES = ("quadruped", "biped", "bird", "hexapod", "spider", "serpent", "dragon", "fish")

LEFT, CENTRE, RIGHT = 1, 0, -1  # side of a limb: the sign of its canonical x


@dataclass
class Limb:
    """One chain from its girdle joint (shoulder/hip/wing root) to its tip, root first."""

    joints: list[int]
    side: int  # LEFT, CENTRE or RIGHT
    kind: str  # "leg", "arm", "wing", "fin"
    position: str = ""  # "front", "middle", "hind", or "" where it says nothing (bipeds, birds)
    foot: int = -1  # the joint that plants on the ground (-1: never touches it)
    toe: int = -1  # the tip beyond the foot, if any

    @property
    def root(self) -> int:
        return self.joints[0]


@dataclass
class Creature:
    family: str  # one of FAMILIES
    species: str  # e.g. "wolf", "horse", "human", "tarantula" — used by captions
    rig: Rig
    mesh: SkinnedMesh
    pelvis: int  # the main root of the body (carries the trajectory)
    spine: list[int]  # pelvis → chest, pelvis excluded
    neck: list[int] = field(default_factory=list)
    head: int = -1
    jaw: int = -1
    tail: list[int] = field(default_factory=list)  # base → tip
    limbs: list[Limb] = field(default_factory=list)
    extras: dict[str, list[int]] = field(default_factory=dict)  # ears, eyes, antennae, fins...
    naming: str = ""  # the naming convention its joints follow
    seed: int = 0

    def legs(self) -> list[Limb]:
        return [limb for limb in self.limbs if limb.foot >= 0]

    def limbs_of(self, kind: str) -> list[Limb]:
        return [limb for limb in self.limbs if limb.kind == kind]

    @property
    def leg_length(self) -> float:
        """Hip height of the body above the ground at rest (0 for legless creatures): the pelvis', or the
        legs' tops' where the legs hang from a root on the floor (the Quaternius women's `Root`)."""
        legs = self.legs()
        if not legs:
            return 0.0
        pelvis = float(self.rig.heads[self.pelvis, 2])
        tops = float(np.median([self.rig.heads[leg.root, 2] for leg in legs]))
        return tops if pelvis < 0.5 * tops else pelvis
