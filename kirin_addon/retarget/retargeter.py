"""Retargeting a motion between rigs of different topology, naming, rest pose and scale.

Both rigs are brought into the canonical frame (canonical.py); there the source motion becomes
world deltas, which are rig-independent. Each mapped target joint takes its source joint's delta,
after a rest alignment that turns the target bone onto the source bone's rest direction (so a
T-pose clip on an A-pose rig lifts the arms, and a bent rest knee follows a straight one).
Unmapped joints keep their rest pose relative to their parent. The root trajectory is scaled by
the ratio of hip heights. The inverse-bind correction then gives the target's own basis rotations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.canonical import CanonicalFrame, detect_canonical_frame
from ..core.motion import Motion, forward_kinematics, motion_from_world_deltas, world_deltas
from ..core.rig import Rig
from ..core.rotations import matrix_to_quat, quat_identity, quat_to_matrix, rotation_between
from .joint_mapping import auto_map_joints
from .mapping_text import validate_mapping

MIN_HIP_HEIGHT = 0.05  # canonical units (body size = 1); below this a rig has no legs to scale by


@dataclass
class RetargetResult:
    motion: Motion
    mapping: dict[str, str | None]
    root_scale: float
    source_frame: CanonicalFrame
    target_frame: CanonicalFrame
    warnings: list[str] = field(default_factory=list)

    @property
    def mapped_count(self) -> int:
        return sum(v is not None for v in self.mapping.values())


def hip_height(rig: Rig, joint: int) -> float:
    """Height of a joint above the lowest point of the rig at rest (canonical rig, +Z up)."""
    floor = min(rig.heads[:, 2].min(), rig.tails[:, 2].min())
    return float(rig.heads[joint, 2] - floor)


def _descendants_bfs(rig: Rig, joint: int) -> list[int]:
    out: list[int] = []
    frontier = list(rig.children[joint])
    while frontier:
        out.extend(frontier)
        frontier = [c for j in frontier for c in rig.children[j]]
    return out


def _is_ancestor(rig: Rig, ancestor: int, joint: int) -> bool:
    j = rig.parents[joint]
    while j >= 0:
        if j == ancestor:
            return True
        j = rig.parents[j]
    return False


def rest_alignment(source: Rig, target: Rig, mapped: np.ndarray) -> np.ndarray:
    """(J_target,4) rotation per target joint turning its rest bone onto the source's rest bone.

    The bone direction of a joint is taken towards its nearest mapped descendant whose source
    image is also a descendant of the joint's source image, so both sides measure the same limb.
    Joints without such a descendant inherit the alignment of their parent.
    """
    align = quat_identity((target.joint_count,))
    for j in target.topological_order:
        parent = target.parents[j]
        inherited = align[parent] if parent >= 0 else quat_identity()
        src = mapped[j]
        if src < 0:
            align[j] = inherited
            continue
        for d in _descendants_bfs(target, int(j)):
            if mapped[d] >= 0 and _is_ancestor(source, int(src), int(mapped[d])):
                target_dir = target.heads[d] - target.heads[j]
                source_dir = source.heads[mapped[d]] - source.heads[src]
                if np.linalg.norm(target_dir) > 1e-9 and np.linalg.norm(source_dir) > 1e-9:
                    align[j] = rotation_between(target_dir, source_dir)
                    break
        else:
            align[j] = inherited
    return align


def retarget(
    source: Rig,
    motion: Motion,
    target: Rig,
    mapping: dict[str, str | None] | None = None,
    source_frame: CanonicalFrame | None = None,
    target_frame: CanonicalFrame | None = None,
    align_rest: bool = True,
    scale_root: bool = True,
) -> RetargetResult:
    """Transfer `motion` (on `source`) onto `target`; returns the target's motion and the mapping used."""
    motion.check_rig(source)
    source_frame = source_frame or detect_canonical_frame(source)
    target_frame = target_frame or detect_canonical_frame(target)
    src = source.transformed(source_frame.matrix())
    tgt = target.transformed(target_frame.matrix())
    # Basis rotations do not change when a whole rig is rotated; only the root path moves.
    src_motion = Motion(motion.fps, source_frame.to_canonical_points(motion.root_positions), motion.rotations)

    if mapping is None:
        mapping = auto_map_joints(src, tgt)
    validate_mapping(mapping, source, target)
    mapped = np.array([source.names.index(mapping[n]) if mapping.get(n) else -1 for n in target.names])
    warnings: list[str] = []
    if not np.any(mapped >= 0):
        raise ValueError("No target joint is mapped to a source joint: nothing to retarget.")

    src_deltas = quat_to_matrix(world_deltas(src, src_motion))  # (T,Js,3,3)
    identity = quat_identity((tgt.joint_count,))
    align = quat_to_matrix(rest_alignment(src, tgt, mapped) if align_rest else identity)
    frames = motion.frame_count
    world = np.empty((frames, tgt.joint_count, 3, 3))
    local_rest = tgt.rest_local[:, :3, :3]
    for j in tgt.topological_order:
        if mapped[j] >= 0:
            world[:, j] = src_deltas[:, mapped[j]] @ align[j] @ tgt.rest_rotations[j]
        elif tgt.parents[j] >= 0:
            world[:, j] = world[:, tgt.parents[j]] @ local_rest[j]
        else:
            world[:, j] = tgt.rest_rotations[j]
    deltas = world @ np.swapaxes(tgt.rest_rotations, -1, -2)[None]

    # Root trajectory: the target's highest mapped joint (the hips, also below an unmapped ground
    # root bone) moves as its source joint does, scaled by the ratio of their heights.
    main = tgt.main_root
    anchor = min(np.flatnonzero(mapped >= 0), key=lambda j: (tgt.depth[j], -tgt.descendant_count[j]))
    driver = int(mapped[anchor])
    src_positions = forward_kinematics(src, src_motion)[:, driver, :3, 3]
    displacement = src_positions - src.heads[driver]
    root_scale = 1.0
    if scale_root:
        src_h, tgt_h = hip_height(src, driver), hip_height(tgt, int(anchor))
        if src_h > MIN_HIP_HEIGHT and tgt_h > MIN_HIP_HEIGHT:
            root_scale = tgt_h / src_h
        else:
            warnings.append("One rig has no legs to measure; the root path is scaled by body size only.")
    root_canonical = tgt.heads[main] + root_scale * displacement
    root_positions = target_frame.from_canonical_points(root_canonical)

    # Basis rotations computed on the canonical target are those of the target itself.
    canonical_out = motion_from_world_deltas(tgt, matrix_to_quat(deltas), root_canonical, motion.fps)
    out = Motion(motion.fps, root_positions, canonical_out.rotations)
    return RetargetResult(out, dict(mapping), root_scale, source_frame, target_frame, warnings)
