"""The physical metrics a generated clip is measured by, in the canonical frame and body sizes (the
units of the model card's bounds): foot skating, jitter, penetration and bone-length error
(kirin_addon/eval/metrics.py), and whether a clip stays within the per-clip bounds. `kirin eval`
(models/eval/evaluate.py) and the backend's Generate jobs measure with these.

numpy only.
"""

from __future__ import annotations

import numpy as np

from ..core.canonical import CanonicalRig
from ..eval.metrics import Ground, bone_length_error, foot_skating, ground_penetration, jitter
from .features import positions_from_features

BOUNDED = ("foot_skating", "jitter", "penetration", "bone_length_error")


def physical_metrics(
    canon: CanonicalRig,
    positions: np.ndarray,
    fps: float,
    features: np.ndarray | None = None,
    free: np.ndarray | None = None,
) -> dict:
    """Physical metrics of canonical joint positions (T,J,3) (body size 1) on a `CanonicalRig`.

    Skating is NaN for rigs without foot candidates (fish, snakes): averaging their zeros would flatter
    a row. `features` (the model's own (T,J,C) output) add the bone-length error of its `pos` channels.
    `free`: joints the motion translates on purpose, whose links the bone-length error leaves out."""
    rig, feet = canon.rig, np.asarray(canon.feet, np.int64)
    rest_height = rig.heads[feet, 2]
    shifted = np.array(positions, np.float64)
    shifted[:, feet, 2] -= rest_height  # a foot joint's floor is its rest height (it sits above its sole)
    out = {
        "foot_skating": (
            foot_skating(positions, feet, fps, ground=Ground(floor=rest_height, body_size=1.0)).mean_speed
            if feet.size
            else float("nan")
        ),
        "jitter": jitter(positions, fps, body_size=1.0).mean_jerk,
        "penetration": ground_penetration(shifted, floor=0.0, body_size=1.0).mean_depth,
        "bone_length_error": bone_length_error(rig, positions, free).mean_error,
    }
    if features is not None:
        decoded = positions_from_features(features, rig.main_root, fps)
        out["feature_bone_length_error"] = bone_length_error(rig, decoded).mean_error
    return out


def within_bounds(metrics: dict, bounds: dict) -> bool:
    """Every bounded metric that was measured (skating is NaN on rigs without feet) is at most its bound."""
    for key, bound in bounds.items():
        value = metrics.get(key)
        if value is not None and np.isfinite(value) and value > bound:
            return False
    return True
