"""A pose to generate from when a rig's rest pose does not stand.

A CMU BVH's zero pose is folded (thighs along +Y, the feet above the head): in it no leg reaches the
floor. Its animation does stand (which pose: core/standing.py). The motion is then made for the rig
posed so, and written back onto the real rest (the same armature-space poses). `standing_score` says
whether a pose stands on legs that pair up. numpy only.
"""

from __future__ import annotations

import numpy as np

from ..core.rig import Rig
from .rig_roles import RoleError, detect_roles


def standing_score(canonical: Rig) -> float | None:
    """How far a posed rig (canonical frame) is from standing on its feet side by side: the spread of
    its feet's heights plus their fore–aft spread (body sizes; 0 is a neutral stance). None when its
    legs cannot be found or do not pair up."""
    try:
        roles = detect_roles(canonical)
    except RoleError:
        return None
    feet = roles.rig.heads[[leg.foot for leg in roles.legs]] if roles.legs else np.zeros((0, 3))  # tips too
    if len(feet) < 2 or len(feet) % 2:
        return None
    return float(np.ptp(feet[:, 2]) + np.ptp(feet[:, 1]) / max(len(feet) // 2, 1))
