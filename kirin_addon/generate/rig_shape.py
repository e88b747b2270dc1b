"""A rig's build in a few scale-free numbers: what the tempo table (tempo.py) compares rigs by.

Artists animate the rigs they build in their own tempo (the Quaternius monsters walk at 1.0 Hz and run
at 1.7 Hz with a quarter of the cycle on the ground; the CMU actors walk at 0.85 Hz), so a rig like one
of the calibration rigs is animated like it. The numbers are read from the roles in the canonical frame
(body size 1), lengths over the leg's length, so the same rig reads the same at any scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.rest_pose_cues import control_joints
from .rig_roles import RigRoles

FEATURES = (
    "joints",  # log of the user's joint count, controls left out (IK and pole targets, props, ORG- copies)
    "leg_joints",  # joints per leg, girdle to foot
    "leg_length",  # a leg's length along its bones (body sizes)
    "hip_height",  # the legs' tops above their ends (the feet), over the leg length
    "body_length",  # the axial chain's fore–aft extent (pelvis to head), over the leg length
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
    # Controls deform nothing and may be added or left out as the rigger likes: not the creature's build.
    joints = roles.joint_count - int(np.count_nonzero(control_joints(roles.rig)[:roles.joint_count]))
    values = (
        float(np.log(max(joints, 1))),
        float(np.mean([len(chain) for chain in legs])),
        leg,
        hips / leg,
        float(np.ptp(heads[axial, 1])) / leg,
        float(heads[head, 2] - heads[roles.pelvis, 2]) / leg,
        (float(np.mean(arms)) if arms else 0.0) / leg,
        _chain_length(heads, tail) / leg,
    )
    return RigShape(roles.family, tuple(round(v, 4) for v in values))
