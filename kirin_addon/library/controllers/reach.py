"""Where feet can be planted: each leg's stance centre and reach radii, measured with the solver itself."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from ...core.creature import Creature
from ...core.rotations import quat_identity
from .common import Z_AXIS
from .poser import BodyPose, LegRig, Poser, leg_rigs

# Body drop (in leg lengths) a gait may count on when the rest leg is too straight to sweep.
CROUCH = 0.08

# Directions (evenly spaced about up) in which a foot's reach from its stance centre is sampled.
REACH_DIRECTIONS = 16
# A foot's stance centre moves at most this fraction of its leg's length from its rest point.
STANCE_SHIFT = 0.12
# … and at most this share of the fore–aft gap to the next foot on its side; a stance reaches at most
# NEIGHBOUR_REACH of that gap fore–aft from its centre (legs of a row keep their order; less than 0.8
# and a procedural hexapod cannot turn its circle).
NEIGHBOUR_SHIFT = 0.2
NEIGHBOUR_REACH = 0.8
_REACH_STEPS = 32  # samples along each direction, up to 1.5 × the leg's length, then refined


@dataclass
class LegReach:
    """Where each foot can be planted: its stance centre and how far it may go from it.

    Measured with the solver itself (`Poser.leg_ends`: proximal segments aiming at the foot, distal
    ones leaning with the leg) on the rest body lowered by `crouch`, so a gait planned within these
    radii needs no more body drop than that.
    """

    neutral: np.ndarray  # (L,3) stance centre of each foot: its rest point shifted fore–aft (y)
    radius: np.ndarray  # (L,D) reach (m) from the centre towards angle 2πk/D (0 = +X, π/2 = +Y)
    crouch: float  # body drop (m) the radii count on

    def half_sweep(self, direction: np.ndarray) -> np.ndarray:
        """(L,) half the straight stance each foot can sweep through its centre along (L,2) directions."""
        count = self.radius.shape[1]
        angle = np.arctan2(direction[:, 1], direction[:, 0])
        out = []
        for turn in (0.0, np.pi):  # a stance runs both ways from the centre
            x = ((angle + turn) % (2 * np.pi)) / (2 * np.pi) * count
            k0 = np.floor(x).astype(int) % count
            rows = np.arange(len(self.radius))
            # The smaller sampled neighbour: never promise more than was measured.
            out.append(np.minimum(self.radius[rows, k0], self.radius[rows, (k0 + 1) % count]))
        return np.minimum(out[0], out[1])

    def frequency(self, velocity: np.ndarray, duty: float) -> float:
        """Least stride frequency at which every foot's stance (duration duty/f) fits its reach, for
        (L,2) ground velocities of the feet's stance centres relative to the body (body frame)."""
        speed = np.linalg.norm(velocity, axis=1)
        if not np.any(speed > 0):
            return 0.0
        half = np.maximum(self.half_sweep(np.where(speed[:, None] > 0, velocity, [[0.0, 1.0]])), 1e-12)
        return float(np.max(speed * duty / (2.0 * half)))


def _reachable(creature: Creature, legs: list[LegRig], offsets: np.ndarray, drop: float) -> np.ndarray:
    """(M,L): can each leg put its foot at foot_rest + offsets[m, leg] with the rest body lowered by drop?"""
    m = offsets.shape[0]
    poser = Poser(creature, m)
    pelvis = creature.rig.heads[creature.pelvis]
    pose = BodyPose(np.repeat((pelvis - drop * Z_AXIS)[None], m, axis=0), quat_identity((m,)))
    poser.apply_body(pose)
    poser.inherit()
    rel = poser.relative_positions()
    root = poser.root_for(pose.root, rel)
    feet = np.array([leg.foot_rest for leg in legs])[None] + offsets
    zeros = np.zeros((m, len(legs)))
    starts, ends, _ = poser.leg_ends(rel, root, feet, zeros, zeros)
    ok = np.zeros((m, len(legs)), dtype=bool)
    for i, leg in enumerate(legs):
        lo, hi = leg.reach
        d = np.linalg.norm(starts[i] - ends[i], axis=-1)
        ok[:, i] = (d <= hi) & (d >= lo)
    return ok


def _reach_along(creature: Creature, legs: list[LegRig], centre: np.ndarray, directions: np.ndarray,
                 drop: float) -> np.ndarray:
    """(L,D) farthest distance from `centre` (L,3 offsets from the rest feet) along each of (D,2)
    directions up to which every sample is reachable."""
    scale = np.array([1.5 * np.sum(np.linalg.norm(leg.vectors, axis=1)) for leg in legs])
    steps = np.linspace(0.0, 1.0, _REACH_STEPS + 1)
    dirs3 = np.concatenate([directions, np.zeros((len(directions), 1))], axis=1)

    def test(fractions: np.ndarray) -> np.ndarray:  # (S,D,L) fractions of scale → (S,D,L) reachable
        offsets = centre[None, None] + (fractions * scale)[..., None] * dirs3[None, :, None, :]
        shape = offsets.shape[:3]
        return _reachable(creature, legs, offsets.reshape(-1, len(legs), 3), drop).reshape(shape)

    grid = np.broadcast_to(steps[:, None, None], (len(steps), len(directions), len(legs)))
    ok = test(grid)
    first_bad = np.where(ok.all(axis=0), len(steps) - 1, np.argmin(ok, axis=0))  # (D,L)
    lo = np.where(first_bad > 0, steps[np.maximum(first_bad - 1, 0)], 0.0)
    hi = np.where(ok.all(axis=0), 1.0, steps[first_bad])
    lo = np.where(ok[0], lo, 0.0)
    hi = np.where(ok[0], hi, 0.0)
    # Refine between the last reachable sample and the first one out of reach (one more batch).
    sub = np.linspace(0.0, 1.0, _REACH_STEPS + 1)[1:-1]
    fine = test(lo[None] + sub[:, None, None] * (hi - lo)[None])
    count = np.where(fine.all(axis=0), len(sub), np.argmin(fine, axis=0))
    lo = lo + np.where(count > 0, sub[np.maximum(count - 1, 0)], 0.0) * (hi - lo)
    return (lo * scale[None]).T


_REACH_CACHE: dict[tuple[int, float], tuple[weakref.ref, LegReach]] = {}


def leg_reach(creature: Creature, legs: list[LegRig] | None = None, crouch: float = CROUCH) -> LegReach:
    """Stance centres and reach radii of the legs (see `LegReach`), the body lowered by crouch·L.

    Cached per creature object (a library build makes many clips of one creature)."""
    key = (id(creature), crouch)
    hit = _REACH_CACHE.get(key)
    if hit is not None and hit[0]() is creature:
        return hit[1]
    reach = _leg_reach(creature, legs if legs is not None else leg_rigs(creature), crouch)
    if len(_REACH_CACHE) > 256:
        _REACH_CACHE.clear()
    _REACH_CACHE[key] = (weakref.ref(creature), reach)
    return reach


def _neighbour_gaps(legs: list[LegRig]) -> np.ndarray:
    """(L,) how far (fore–aft, at rest) each foot is from the nearest foot on its side (inf: none)."""
    rest = np.array([leg.foot_rest for leg in legs])
    sides = np.array([leg.limb.side for leg in legs])
    gaps = np.full(len(legs), np.inf)
    for i in range(len(legs)):
        same = (sides == sides[i]) & (np.arange(len(legs)) != i)
        if same.any():
            gaps[i] = float(np.min(np.abs(rest[same, 1] - rest[i, 1])))
    return gaps


def _leg_reach(creature: Creature, legs: list[LegRig], crouch: float) -> LegReach:
    drop = crouch * max(creature.leg_length, 1e-3)
    zero = np.zeros((len(legs), 3))
    # Fore–aft first: centre each foot's stance in what it can reach forwards and backwards (at the
    # default crouch, so that every gait of a creature shares its stance centres).
    ahead, behind = _reach_along(creature, legs, zero, np.array([[0.0, -1.0], [0.0, 1.0]]),
                                 CROUCH * max(creature.leg_length, 1e-3)).T
    centre = zero.copy()
    # ... but not far from where the rig stands: sprawled legs would bunch up under the body.
    most = STANCE_SHIFT * np.array([np.sum(np.linalg.norm(leg.vectors, axis=1)) for leg in legs])
    # Nor towards the next foot on its side: a spider's eight feet, a beetle's six, keep their order.
    gaps = _neighbour_gaps(legs)
    most = np.minimum(most, NEIGHBOUR_SHIFT * gaps)
    centre[:, 1] = np.clip(0.5 * (behind - ahead), -most, most)
    angles = 2 * np.pi * np.arange(REACH_DIRECTIONS) / REACH_DIRECTIONS
    directions = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    radius = _reach_along(creature, legs, centre, directions, drop)
    # A stance sweeps fore–aft no further than most of the way to the next foot on its side (the legs of
    # a row keep their order); sideways it reaches as far as it can.
    fore_aft = np.maximum(np.abs(directions[:, 1]), 1e-6)
    radius = np.minimum(radius, NEIGHBOUR_REACH * gaps[:, None] / fore_aft[None])
    neutral = np.array([leg.foot_rest for leg in legs]) + centre
    return LegReach(neutral, radius, drop)


def max_sweep(creature: Creature, legs: list[LegRig], crouch: float = CROUCH) -> float:
    """Longest straight fore–aft stance sweep (m) every leg can cover with at most crouch·L body drop."""
    reach = leg_reach(creature, legs, crouch)
    return float(2.0 * np.min(reach.half_sweep(np.tile([[0.0, 1.0]], (len(legs), 1)))))

