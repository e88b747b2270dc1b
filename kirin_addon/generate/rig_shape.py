"""A rig's build in a few scale-free numbers: what the tempo table (tempo.py) compares rigs by.

Artists animate the rigs they build in their own tempo (the Quaternius monsters walk at 1.0 Hz and run
at 1.7 Hz with a quarter of the cycle on the ground; the CMU actors walk at 0.85 Hz), so a rig like one
of the calibration rigs is animated like it. The numbers are read from the roles in the canonical frame
(body size 1), lengths over the leg's length, so the same rig reads the same at any scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rig_roles import RigRoles

# How many bones the rigger split the body into (joints in all, joints per leg), the legs' length in
# body sizes (the body's size takes in a T-pose's fingers and spread wings) and the axial chain's
# fore–aft extent (it ends at a jaw or at a head that face bones branch from) are conventions, not the
# build: toes taken off changed a Mesh2Motion fox's tempo by 11 %, fingers and a face a biped's. Leaving
# them out costs the table nothing (tools/calibrate_tempo.py, score a rig left out 0.252 → 0.251, a new
# pack 0.449 → 0.448).
FEATURES = (
    "hip_height",  # the legs' tops above their ends (the feet), over the leg length
    "head_height",  # the head above the hips, over the leg length
    "arm_length",  # an arm's length over the leg length (0: none)
    "tail_length",  # the tail's length over the leg length (0: none)
)


@dataclass(frozen=True)
class RigShape:
    family: str
    values: tuple[float, ...]  # in FEATURES order

    def as_dict(self) -> dict:
        return {"family": self.family, **dict(zip(FEATURES, self.values, strict=True))}


def _chain_length(heads: np.ndarray, chain: list[int]) -> float:
    if len(chain) < 2:
        return 0.0
    return float(np.linalg.norm(np.diff(heads[chain], axis=0), axis=1).sum())


def rig_shape(roles: RigRoles) -> RigShape:
    """The build of the rig `roles` were read from."""
    heads = roles.rig.heads
    legs = [list(leg.chain) for leg in roles.legs]
    leg = max(float(np.mean([_chain_length(heads, chain) for chain in legs])), 1e-6)
    # Hip height above the leg's own end, not above z = 0: a frame's origin may lie below the soles.
    hips = float(np.mean([heads[chain[0], 2] - heads[chain[-1], 2] for chain in legs]))
    axial = [roles.pelvis, *roles.spine, *roles.neck] + ([roles.head] if roles.head >= 0 else [])
    head = roles.head if roles.head >= 0 else axial[-1]
    arms = [_chain_length(heads, arm) for arm in roles.arms]
    tail = [roles.pelvis, *roles.tail] if roles.tail else []
    values = (
        hips / leg,
        float(heads[head, 2] - heads[roles.pelvis, 2]) / leg,
        (float(np.mean(arms)) if arms else 0.0) / leg,
        _chain_length(heads, tail) / leg,
    )
    return RigShape(roles.family, tuple(round(v, 4) for v in values))
