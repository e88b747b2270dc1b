"""Retargeting a motion between rigs of different topology, naming, rest pose and scale.

Both rigs are brought into the canonical frame (canonical.py); there the source motion becomes
world deltas, which are rig-independent. Each mapped target joint takes its source joint's delta,
after a rest alignment that turns the target bone onto the source bone's rest direction (so a
T-pose clip on an A-pose rig lifts the arms, and a bent rest knee follows a straight one).
Unmapped joints keep their rest pose relative to their parent. The root trajectory is scaled by
the ratio of hip heights. The inverse-bind correction then gives the target's own basis rotations.
`ground_pose` puts a clip whose floor is not the source's rest floor (a mocap take) on the target's floor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.canonical import CanonicalFrame, detect_canonical_frame
from ..core.motion import (
    Motion,
    forward_kinematics,
    motion_from_world_deltas,
    motion_from_world_transforms,
    world_deltas,
)
from ..core.rest_pose_cues import body_joints
from ..core.rig import Rig
from ..core.rotations import matrix_to_quat, quat_identity, quat_to_matrix, rotation_between
from .joint_mapping import auto_map_joints
from .mapping_text import validate_mapping

MIN_HIP_HEIGHT = 0.05  # canonical units (body size = 1); below this a rig has no legs to scale by
# The clip's floor: its lowest body point in this percentile of frames (its contacts, a mocap glitch
# that dips below them left out).
FLOOR_PERCENTILE = 5.0


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


def _branch_directions(source: Rig, target: Rig, mapped: np.ndarray, joint: int) -> list[tuple]:
    """Per child branch of a mapped target joint, (target, source) unit directions from the joint to
    the branch's nearest mapped joint whose source image hangs below the joint's own image."""
    src = int(mapped[joint])
    pairs = []
    for child in target.children[joint]:
        for d in [child, *_descendants_bfs(target, child)]:
            if mapped[d] >= 0 and _is_ancestor(source, src, int(mapped[d])):
                target_dir = target.heads[d] - target.heads[joint]
                source_dir = source.heads[mapped[d]] - source.heads[src]
                if np.linalg.norm(target_dir) > 1e-9 and np.linalg.norm(source_dir) > 1e-9:
                    pairs.append((target_dir / np.linalg.norm(target_dir),
                                  source_dir / np.linalg.norm(source_dir)))
                break
    return pairs


def rest_alignment(source: Rig, target: Rig, mapped: np.ndarray) -> np.ndarray:
    """(J_target,4) rotation per target joint turning its rest bone onto the source's rest bone.

    A joint's bone direction is taken towards its nearest mapped descendant whose source image is also a
    descendant of the joint's source image, so both sides measure the same limb. A joint that branches
    into two or more such limbs (hips: two legs and a spine; a chest: neck and shoulders; a trajectory
    root) is not turned: both rigs stand upright and face the same way in their canonical frames, and
    the directions to its branches say more about where each rig puts its heads than about its pose
    (turned onto one thigh's direction, the hips lift the other leg; a game rig's `Body` has its thighs
    behind it and its `Hips` bone below it, a mocap pelvis its thighs below and its waist above; one
    rotation that fits every branch then pitched a monster's hips by 90°). Joints without such a
    descendant inherit their parent's.
    """
    align = quat_identity((target.joint_count,))
    for j in target.topological_order:
        parent = target.parents[j]
        align[j] = align[parent] if parent >= 0 else quat_identity()
        if mapped[j] < 0:
            continue
        pairs = _branch_directions(source, target, mapped, int(j))
        if len(pairs) >= 2:
            align[j] = quat_identity()  # a trunk joint: not turned (see the docstring)
        elif pairs:
            align[j] = rotation_between(pairs[0][0], pairs[0][1])
    return align


@dataclass
class RetargetPair:
    """Both rigs in their canonical frames, the source motion there and the joint map: what `transfer`
    works on."""

    source: Rig  # canonical
    motion: Motion  # the source motion on the canonical source
    target: Rig  # canonical
    mapping: dict[str, str | None]
    mapped: np.ndarray  # (J_target,) source joint of each target joint, −1 for none
    source_frame: CanonicalFrame
    target_frame: CanonicalFrame


def retarget_pair(source: Rig, motion: Motion, target: Rig, mapping: dict[str, str | None] | None = None,
                  source_frame: CanonicalFrame | None = None,
                  target_frame: CanonicalFrame | None = None) -> RetargetPair:
    """The two rigs in their canonical frames (detected when not given) and the joint map (found when not
    given, checked when given)."""
    motion.check_rig(source)
    source_frame = source_frame or detect_canonical_frame(source)
    target_frame = target_frame or detect_canonical_frame(target)
    src = source.transformed(source_frame.matrix())
    tgt = target.transformed(target_frame.matrix())
    # Basis rotations do not change when a whole rig is rotated; only the root path moves (and the
    # joints' own translations scale with the rig).
    moved = None if motion.translations is None else motion.translations * source_frame.scale
    src_motion = Motion(motion.fps, source_frame.to_canonical_points(motion.root_positions), motion.rotations,
                        moved)
    if mapping is None:
        mapping = auto_map_joints(src, tgt)
    validate_mapping(mapping, source, target)
    mapped = np.array([source.names.index(mapping[n]) if mapping.get(n) else -1 for n in target.names])
    if not np.any(mapped >= 0):
        raise ValueError("No target joint is mapped to a source joint: nothing to retarget.")
    return RetargetPair(src, src_motion, tgt, dict(mapping), mapped, source_frame, target_frame)


@dataclass
class TargetPose:
    """The clip on the canonical target before it becomes basis rotations: each joint's world rotation
    per frame, the root path, and how the joints placed otherwise than by their parent are placed."""

    world: np.ndarray  # (T,J,3,3) world rotations
    root: np.ndarray  # (T,3) the main root's head
    carrier: np.ndarray  # (J,) `carriers`
    extra: np.ndarray  # (T,J,3) offsets from where parent or carrier put a joint (`_source_offsets`)
    placed: np.ndarray  # (J,) joints that get locations: carried, or moved by their own offsets
    root_scale: float
    warnings: list[str]

    def positions(self, target: Rig) -> np.ndarray:
        """(T,J,3) every joint's head."""
        return _carried_positions(target, self.world, self.root, self.carrier, self.extra)


def target_pose(pair: RetargetPair, align: np.ndarray, scale_root: bool = True) -> TargetPose:
    """The source motion on the canonical target: each mapped target joint turned by its source joint's
    world delta after `align` ((J_target,4): `rest_alignment`, or identities), the root path scaled by
    the ratio of hip heights."""
    src, tgt, mapped, src_motion = pair.source, pair.target, pair.mapped, pair.motion
    warnings: list[str] = []
    src_deltas = quat_to_matrix(world_deltas(src, src_motion))  # (T,Js,3,3)
    align = quat_to_matrix(align)
    world = np.empty((src_motion.frame_count, tgt.joint_count, 3, 3))
    local_rest = tgt.rest_local[:, :3, :3]
    for j in tgt.topological_order:
        if mapped[j] >= 0:
            world[:, j] = src_deltas[:, mapped[j]] @ align[j] @ tgt.rest_rotations[j]
        elif tgt.parents[j] >= 0:
            world[:, j] = world[:, tgt.parents[j]] @ local_rest[j]
        else:
            world[:, j] = tgt.rest_rotations[j]

    # Root trajectory: the target's highest mapped joint (the hips, also below an unmapped ground
    # root bone) moves as its source joint does, scaled by the ratio of the hips' heights.
    driver = int(mapped[anchor_joint(tgt, mapped)])
    src_pose = forward_kinematics(src, src_motion)
    displacement = src_pose[:, driver, :3, 3] - src.heads[driver]
    root_scale = 1.0
    if scale_root:
        hips = scale_joint(src, tgt, mapped)
        if hips is not None:
            root_scale = hip_height(tgt, hips) / hip_height(src, int(mapped[hips]))
        else:
            warnings.append("One rig has no legs to measure; the root path is scaled by body size only.")
    root = tgt.heads[tgt.main_root] + root_scale * displacement
    carrier, extra, placed = _placements(pair, root_scale * _source_offsets(src, src_pose))
    return TargetPose(world, root, carrier, extra, placed, root_scale, warnings)


def transfer(pair: RetargetPair, align: np.ndarray, scale_root: bool = True) -> RetargetResult:
    """The source motion on the target (`target_pose`), as the target's own motion."""
    return finish(pair, target_pose(pair, align, scale_root))


def finish(pair: RetargetPair, pose: TargetPose) -> RetargetResult:
    """A target pose as the target's motion: basis rotations (the inverse-bind correction on the
    canonical target equals the target's own), locations where a bone is placed by more than its
    parent, the root path back in the target's units."""
    tgt = pair.target
    if not pose.placed.any():
        deltas = pose.world @ np.swapaxes(tgt.rest_rotations, -1, -2)[None]
        rotations = motion_from_world_deltas(tgt, matrix_to_quat(deltas), pose.root, 1.0).rotations
        translations = None
    else:
        full = np.zeros(pose.world.shape[:2] + (4, 4))
        full[..., :3, :3], full[..., 3, 3] = pose.world, 1.0
        full[..., :3, 3] = pose.positions(tgt)
        out = motion_from_world_transforms(tgt, full, 1.0)
        moved = np.zeros(full.shape[:2] + (3,))
        if out.translations is not None:
            moved[:, pose.placed] = out.translations[:, pose.placed] / pair.target_frame.scale
        rotations, translations = out.rotations, (moved if np.any(moved) else None)
    root_positions = pair.target_frame.from_canonical_points(pose.root)
    motion = Motion(pair.motion.fps, root_positions, rotations, translations)
    return RetargetResult(motion, dict(pair.mapping), pose.root_scale, pair.source_frame, pair.target_frame,
                          list(pose.warnings))


def _source_offsets(source: Rig, pose: np.ndarray) -> np.ndarray:
    """(T,Js,3) how far each source joint's head is from where its parent puts it (its translation in the
    clip, in world axes: a game rig's foot control under the root, the hips' bob under a ground bone)."""
    offsets = np.zeros(pose.shape[:2] + (3,))
    child = np.flatnonzero(source.parents >= 0)
    parent = source.parents[child]
    above = pose[:, parent]
    local = source.rest_local[child, :3, 3]
    expected = above[..., :3, 3] + np.einsum("tjab,jb->tja", above[..., :3, :3], local)
    offsets[:, child] = pose[:, child][..., :3, 3] - expected
    return offsets


def _placements(pair: RetargetPair, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(carrier (J,), extra (T,J,3), placed (J,)): the target joints placed by more than their parent —
    those carried by another joint (`carriers`), and those whose source joint moves from its parent by
    itself (`offsets`, scaled; when they hang from the image of its parent and are not connected)."""
    tgt, src, mapped = pair.target, pair.source, pair.mapped
    carrier = carriers(src, tgt, mapped)
    moving = np.zeros(tgt.joint_count, dtype=bool)
    extra = np.zeros(offsets.shape[:1] + (tgt.joint_count, 3))
    for j in np.flatnonzero((mapped >= 0) & (tgt.parents >= 0) & ~tgt.connected):
        s = int(mapped[j])
        if mapped[tgt.parents[j]] == src.parents[s] and np.abs(offsets[:, s]).max() > 1e-6:
            moving[j], extra[:, j] = True, offsets[:, s]
    return carrier, extra, (carrier >= 0) | moving


def scale_joint(source: Rig, target: Rig, mapped: np.ndarray) -> int | None:
    """The target's highest mapped joint that stands above the floor on both rigs (the hips; a root
    bone on the floor is passed over): the root path is scaled by their heights' ratio."""
    order = sorted(np.flatnonzero(mapped >= 0), key=lambda j: (target.depth[j], -target.descendant_count[j]))
    for j in order:
        if min(hip_height(target, int(j)), hip_height(source, int(mapped[j]))) > MIN_HIP_HEIGHT:
            return int(j)
    return None


def carriers(source: Rig, target: Rig, mapped: np.ndarray) -> np.ndarray:
    """(J_target,) the joint that carries each target joint where the rigs' trees differ, −1 elsewhere.

    A mapped target joint whose source joint hangs below another mapped source joint, whose image on
    the target is not among the joint's ancestors, is carried by that image: a game rig's foot control
    parented to the root (a Quaternius monster's `Foot.L`) goes where the shin's end takes it, as the
    source's foot hangs from its shin, instead of staying with the root."""
    image: dict[int, int] = {}
    for j, s in enumerate(mapped):
        if s >= 0:
            image.setdefault(int(s), j)
    out = np.full(target.joint_count, -1, dtype=np.int64)
    # A connected bone sits on its parent's tail whatever happens (Blender ignores its location): it
    # is never carried (a finger's end bone mapped past an unmapped knuckle).
    for j in np.flatnonzero((mapped >= 0) & ~target.connected):
        a = int(source.parents[mapped[j]])
        while a >= 0 and a not in image:
            a = int(source.parents[a])
        if a < 0:
            continue
        carrier = image[a]
        related = _is_ancestor(target, carrier, int(j)) or _is_ancestor(target, int(j), carrier)
        if carrier != j and not related:
            out[j] = carrier
    return out


def _carried_positions(target: Rig, world: np.ndarray, root: np.ndarray, carrier: np.ndarray,
                       extra: np.ndarray) -> np.ndarray:
    """(T,J,3) joint heads: each hangs from its parent, or from its carrier, by its rest offset, moved
    by `extra` (T,J,3)."""
    heads = target.heads
    positions = np.zeros(world.shape[:2] + (3,))
    done = np.zeros(target.joint_count, dtype=bool)
    for r in target.roots:
        if carrier[r] < 0:
            positions[:, r] = root + (heads[r] - heads[target.main_root])
            done[r] = True
    while not done.all():
        progressed = False
        for j in target.topological_order:
            base = carrier[j] if carrier[j] >= 0 else target.parents[j]
            if done[j] or base < 0 or not done[base]:
                continue
            offset = target.rest_rotations[base].T @ (heads[j] - heads[base])
            positions[:, j] = positions[:, base] + world[:, base] @ offset + extra[:, j]
            done[j] = progressed = True
        if not progressed:
            raise ValueError("The joint map makes joints carry each other in a loop.")
    return positions


def anchor_joint(target: Rig, mapped: np.ndarray) -> int:
    """The target's highest mapped joint (the hips), whose source joint drives the root path."""
    return int(min(np.flatnonzero(mapped >= 0), key=lambda j: (target.depth[j], -target.descendant_count[j])))


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
    pair = retarget_pair(source, motion, target, mapping, source_frame, target_frame)
    align = (rest_alignment(pair.source, pair.target, pair.mapped) if align_rest
             else quat_identity((pair.target.joint_count,)))
    return transfer(pair, align, scale_root)


def _lowest(poses: np.ndarray, joints: np.ndarray, up: np.ndarray) -> np.ndarray:
    """(…,) the lowest head of `joints` along `up`, per pose (…,J,4,4). Heads, not tails: a leaf bone's
    tail is whatever the exporter or importer made up (a foot's may point through the floor)."""
    return (np.take(poses, joints, axis=-3)[..., :3, 3] @ up).min(axis=-1)


def limb_joints(rig: Rig, hips: int | None) -> np.ndarray:
    """The body joints but the hips and the bones above them: a root bone lying on the floor under the
    body (a game rig's `Root`) stays there whatever the feet do, and must not be taken for a sole."""
    above = set()
    j = hips
    while j is not None and j >= 0:
        above.add(int(j))
        j = int(rig.parents[j])
    joints = np.array([j for j in body_joints(rig) if int(j) not in above], dtype=np.int64)
    return joints if len(joints) else body_joints(rig)


def ground_pose(pair: RetargetPair, pose: TargetPose) -> float:
    """Move the pose along +Z by as much as the clip's floor lies below the source's rest floor, scaled as
    the root path is: the hips then stand as high above the target's floor as the source's stand above
    the clip's, in leg lengths. The floor is measured on the source (its lowest limb joint over the clip,
    the FLOOR_PERCENTILE of frames, against its rest): the target's own lowest joint over the clip says
    as much about how its feet differ from the source's (a human's long toes turned down as a monster's
    stubby foot swings, 80°) as about the floor, and grounding on it lifted the whole clip until the
    stance feet could not reach the floor. The shift (canonical units)."""
    src, up = pair.source, np.array([0.0, 0.0, 1.0])
    hips = scale_joint(src, pair.target, pair.mapped)
    joints = limb_joints(src, None if hips is None else int(pair.mapped[hips]))
    rest_floor = float(_lowest(src.rest, joints, up))
    lowest = forward_kinematics(src, pair.motion)[:, joints, 2, 3].min(axis=1)
    shift = pose.root_scale * (rest_floor - float(np.percentile(lowest, FLOOR_PERCENTILE)))
    pose.root = pose.root + shift * up
    return shift
