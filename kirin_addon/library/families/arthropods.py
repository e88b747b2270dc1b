"""The leg shared by insects and spiders: coxa up to a knee, down to the ground, then out along it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .builder import Builder, LimbRole, Z, radial


@dataclass(frozen=True)
class ArthropodLeg:
    """One leg pair's shape: its segments, their (outward, upward) steps in leg lengths (None rise: down
    to z = 0), its length (m) and its radius at the body (m)."""

    segs: list[str]
    profile: list[tuple[float, float | None]]
    length: float
    radius: float


def add_arthropod_leg(b: Builder, leg: ArthropodLeg, parent: int, attach, deg: float, n: int,
                      position: str) -> None:
    """One leg pair in the vertical plane at `deg` azimuth: up to a knee, down to the ground, then out."""
    rad = radial(deg)
    pts = [np.asarray(attach, dtype=np.float64)]
    for reach, rise in leg.profile:  # (outward, upward) steps in leg lengths; None rise: down to z = 0
        q = pts[-1] + reach * leg.length * rad
        q[2] = 0.0 if rise is None else q[2] + rise * leg.length
        pts.append(q)
    r = leg.radius
    radii = [(r * f, r * f) for f in np.linspace(1.2, 0.4, len(pts))]
    b.limb(LimbRole("arthro", "leg", position, n=n, foot=leg.segs[-1]), leg.segs, pts, parent, radii=radii,
           up=Z, sides=6, caps=(0.6, 0.8))
