"""Every metric of one clip on one rig in one report (`evaluate_motion`, `MotionReport.as_dict` for
JSON benchmark output); the metrics themselves and their conventions are in `metrics`.

numpy only: this runs inside Blender, which has no scipy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.json_values import plain
from ..core.motion import Motion, forward_kinematics
from ..core.rig import Rig
from ..core.skinning import SkinnedMesh, linear_blend_skinning, skin_matrices
from .metrics import (
    BoneLengthStats,
    DriftStats,
    GaitStats,
    Ground,
    JitterStats,
    PenetrationStats,
    SkatingStats,
    as_positions,
    bone_length_error,
    broken_reasons,
    finite_min,
    foot_contacts,
    foot_skating,
    gait_stats,
    ground_penetration,
    is_static_clip,
    jitter,
    positions_and_fps,
    root_drift,
    unit_up,
)


@dataclass
class MotionReport:
    """Every metric of one clip on one rig; `as_dict()` for JSON benchmark output."""

    frames: int
    fps: float
    duration: float  # s: (frames - 1) / fps
    joints: int
    body_size: float  # m: Rig.body_size, the unit of every *_rel value
    leg_length: float  # m: rest height of the main root above the lowest foot (unit of stride_length_rel)
    floor: float  # m along up: the ground used for contacts and penetration
    feet: list[str]
    contact_fraction: list[float]  # per foot: fraction of frames in contact
    skating: SkatingStats
    penetration: PenetrationStats
    jitter: JitterStats
    bone_length: BoneLengthStats
    drift: DriftStats
    gait: GaitStats
    static: bool
    broken: bool
    broken_reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return plain(dataclasses.asdict(self))  # type: ignore[return-value]


def evaluate_motion(
    rig: Rig,
    motion: Motion | np.ndarray,
    feet: Sequence[int] | np.ndarray | None = None,
    up: Sequence[float] | np.ndarray | None = None,
    *,
    fps: float | None = None,
    floor: float | None = 0.0,
    mesh: SkinnedMesh | None = None,
    vertices: np.ndarray | None = None,
) -> MotionReport:
    """All metrics of a Motion (or (T,J,3) positions with `fps`) on `rig`.

    `feet` default to `rig.foot_candidates(up)`. `floor` is the ground height along `up` (canonical
    frame: 0); None estimates it as the lowest foot height of the clip. Penetration is measured on
    `vertices` (T,V,3), else on `mesh` skinned by the motion (a Motion only), else on the joints.
    """
    axis = unit_up(up)
    positions, rate = positions_and_fps(rig, motion, fps)
    if not rate > 0:
        raise ValueError("fps must be given (and positive) for a positions array")
    feet = rig.foot_candidates(axis) if feet is None else np.asarray(feet, dtype=np.int64).reshape(-1)
    size = rig.body_size
    if floor is None:
        ground = finite_min(positions[:, feet] @ axis if feet.size else positions @ axis)
        ground = ground if np.isfinite(ground) else 0.0
    else:
        ground = float(floor)
    rest_h = rig.heads @ axis
    lowest = float(rest_h[feet].min()) if feet.size else float(min(rest_h.min(), (rig.tails @ axis).min()))
    leg = float(rest_h[rig.main_root]) - lowest
    leg = leg if leg > 0.01 * size else size  # legless or ground-level root: fall back to body size

    on_ground = Ground(axis, ground, size)
    contacts = foot_contacts(positions, feet, rate, ground=on_ground)
    if vertices is not None:
        points = as_positions(vertices)
    elif mesh is not None and isinstance(motion, Motion):
        with np.errstate(invalid="ignore", over="ignore"):
            mats = skin_matrices(rig.rest, forward_kinematics(rig, motion))
            points = linear_blend_skinning(mesh.vertices, mesh.joint_indices, mesh.joint_weights, mats)
    else:
        points = positions
    reasons = broken_reasons(rig, motion if isinstance(motion, Motion) else positions)
    count = positions.shape[0]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        return MotionReport(
            frames=count,
            fps=rate,
            duration=(count - 1) / rate if count else 0.0,
            joints=rig.joint_count,
            body_size=size,
            leg_length=leg,
            floor=ground,
            feet=[rig.names[j] for j in feet],
            contact_fraction=[float(c) for c in contacts.mean(axis=0)] if count else [0.0] * feet.size,
            skating=foot_skating(positions, feet, rate, ground=on_ground),
            penetration=ground_penetration(points, up=axis, floor=ground, body_size=size),
            jitter=jitter(positions, rate, body_size=size),
            bone_length=bone_length_error(rig, positions),
            drift=root_drift(positions[:, rig.main_root], up=axis, body_size=size),
            gait=gait_stats(positions, feet, rate, contacts, ground=on_ground, leg_length=leg,
                            root=rig.main_root),
            static=is_static_clip(positions),
            broken=bool(reasons),
            broken_reasons=reasons,
        )
