"""A pose to generate from when a rig's rest pose does not stand.

A CMU BVH's zero pose is folded (thighs along +Y, the feet above the head): in it no leg reaches the
floor. Its animation does stand, and its opening frame is a T-pose with the feet side by side. The
motion is then made for the rig posed as in the frame that stands best, and written back onto the real
rest (the same armature-space poses). numpy only.
"""

from __future__ import annotations

import numpy as np

from ..core.rig import Rig, posed_rig  # noqa: F401 — posed_rig: the operator's import
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


def sample_frames(start: int, end: int, count: int = 24) -> list[int]:
    """The frames to try: the first few (a take's opening T-pose) and `count` spread over the range."""
    spread = np.linspace(start, end, count).round().astype(int).tolist()
    return sorted(set(range(start, min(start + 4, end + 1))) | set(spread))
