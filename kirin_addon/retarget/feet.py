"""Feet on the ground: flat where the source's feet are planted, and held there, whatever each rig calls
its foot bone and however long its legs are.

**Flat.**
`rest_alignment` turns each target bone onto its source bone's rest direction, which suits limbs (a
T-pose clip on an A-pose rig lifts the arms) but not feet: rigs draw the foot bone from the ankle to
the toes, to the ball or straight down, at any pitch. Turned onto another rig's foot direction, a
flat rest foot stands on its heel or its toes, its sole through the floor (CesiumMan, whose foot bone
points steeply down, pitched 40° on a Character Creator walk: its heels 6 % of its height under the
floor). So for the target's feet — mapped joints low at rest, within FOOT_HEIGHT of the hip height
above the floor, whose source joints come down to the clip's floor — the alignment is taken where
the source foot is planted instead: there the target foot lies as it does at rest (its standing
pose), turned about the up axis to head where the source foot heads. Everywhere else it follows the
source foot's rotation from there.

**Held.** Legs of other proportions than the source's (a monster's short thighs, long shins and big
feet) do not put the foot where the source's foot is when the hips move as the source's do: a planted
foot slides, or rises through the stance (a Quaternius monster's ankle on a CMU walk rose half its
swing height while the actor's stayed down: the stance read half as long). So while the source's foot
is down (in the lower CONTACT_BAND of its own height range), the target's foot is placed by two-bone
IK on its thigh and shin (`core.ik.two_bone`, the knee bending the way it bends) where the source's
foot puts it: it moves horizontally as the source's foot moves, scaled as the root path is (a planted
foot stays put, a heel rolling in or a toe pushing off moves as much as the source's does, and an
in-place game clip's foot goes back under the body as its source's does), from where it stands on
average over that contact; at the height of its rest above the floor plus the source foot's own rise
(its heel lifting, scaled). It fades in and out over BLEND frames and keeps its world rotation; every
other bone is untouched. Where the foot is raised while down (the clip stands too low on the target), the
lift carries on through the swing, from one contact's to the next's: faded out, it pulled a rising foot
back to the floor, and the stance read longer than the source's. Speed does not decide a contact: only
the height does, and the foot then does what the source's does (held by speed, only the slowest frames
of a CMU stance were placed, and the heel strike and toe-off slid with the target's proportions: the
stance read 25 % shorter).

**Soles above the floor.** A rigid foot (a monster's, a robot's: no toe bone) turned as the source's
rolling foot turns pitches its toes through the floor at the push-off (the Quaternius monsters' soles
8 % of their size under it on CMU walks, the foot at 70°): a human's toes stay flat there while the
foot rolls over them. Given the target's skin (`foot_soles`: its rest vertices within SOLE_BAND of
its lowest, each with the bone it follows most), a foot whose sole would go below that lowest point
is lifted by as much by the same leg IK (`lift_soles`): it pivots about its toes, its heel up, as
the source's does; its rotation is kept.

Both rigs are canonical (+Z up, unit body size). numpy only.
"""

from __future__ import annotations

import numpy as np

from ..core.ik import two_bone
from ..core.motion import forward_kinematics
from ..core.rest_pose_cues import body_joints
from ..core.rig import Rig
from ..core.rotations import matrix_to_quat, quat_about, quat_normalize, quat_to_matrix, rotation_between
from .retargeter import RetargetPair, TargetPose, hip_height, scale_joint

FOOT_HEIGHT = 0.25  # of the hip height: a joint this low at rest is part of a foot (ankles, toes, heels)
PLANTED_HEIGHT = 0.01  # body sizes above the joint's own lowest: low enough to be planted
PLANTED_FRAMES = 8  # of those, the slowest frames the foot's flat orientation is taken from
FLOOR_PERCENTILE = 5.0  # the clip's floor: the lowest body point in this percentile of frames
CONTACT_BAND = 0.25  # of a foot's rise (95th − 5th percentile height): down below this above its low
CONTACT_MIN_BAND = 0.01  # body sizes: the band is never narrower
BLEND = 3  # frames over which a hold fades in before and out after a contact
SOLE_BAND = 0.02  # body sizes above the rest skin's lowest point: a sole's vertices


def _heading(vector: np.ndarray) -> float | None:
    """Angle about +Z of a vector's horizontal part (None when it is nearly vertical)."""
    if np.hypot(vector[0], vector[1]) < 0.2 * np.linalg.norm(vector):
        return None
    return float(np.arctan2(vector[1], vector[0]))


def _mean_rotation(matrices: np.ndarray) -> np.ndarray:
    """(4,) the normalised sign-aligned mean of rotations (…,3,3) as a quaternion."""
    q = matrix_to_quat(matrices)
    q = q * np.where(q @ q[0] < 0, -1.0, 1.0)[:, None]
    return quat_normalize(q.mean(0))


def _planted(height: np.ndarray, speed: np.ndarray) -> np.ndarray:
    """The slowest frames among those where a joint is within PLANTED_HEIGHT of its lowest."""
    low = np.flatnonzero(height <= height.min() + PLANTED_HEIGHT)
    return low[np.argsort(speed[low], kind="stable")[:PLANTED_FRAMES]]


def mapped_feet(pair: RetargetPair) -> list[int]:
    """The target's mapped joints that are part of a foot: low at rest (within FOOT_HEIGHT of the hip
    height above the floor), below the joint the root path is scaled by. None of them: no leg follows
    the source's."""
    src, tgt, mapped = pair.source, pair.target, pair.mapped
    anchor = scale_joint(src, tgt, mapped)
    if anchor is None:
        return []
    target_hip = hip_height(tgt, anchor)
    target_floor = float(tgt.heads[body_joints(tgt), 2].min())
    return [int(j) for j in np.flatnonzero(mapped >= 0)
            if tgt.heads[j, 2] - target_floor <= FOOT_HEIGHT * target_hip and j != anchor]


def feet_to_ground(pair: RetargetPair, align: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """`align` ((J_target,4), from `rest_alignment`) with the target's feet aligned where the source's
    are planted (module docstring); and the target joints so aligned."""
    src, tgt, mapped = pair.source, pair.target, pair.mapped
    feet = mapped_feet(pair)
    if not feet or pair.motion.frame_count < 2:
        return align, []
    source_hip = hip_height(src, int(mapped[scale_joint(src, tgt, mapped)]))
    pose = forward_kinematics(src, pair.motion)
    heads = pose[..., :3, 3]
    floor = float(np.percentile(heads[:, body_joints(src), 2].min(axis=1), FLOOR_PERCENTILE))
    speed = np.linalg.norm(np.gradient(heads[..., :2], axis=0), axis=-1)
    out, aligned = align.copy(), []
    for j in feet:
        s = int(mapped[j])
        if heads[:, s, 2].min() - floor > FOOT_HEIGHT * source_hip:
            continue  # the source joint never comes down: no planted pose to take
        frames = _planted(heads[:, s, 2], speed[:, s])
        rest = tgt.rest_rotations[j]
        # The heading of the bone's most horizontal axis (a foot bone may point straight down).
        axis = rest[:, int(np.argmax(np.hypot(rest[0], rest[1])))]
        ahead = quat_to_matrix(align[j]) @ axis  # that axis, turned onto the source bone's rest
        estimates = []
        for f in frames:
            turn = pose[f, s, :3, :3] @ src.rest_rotations[s].T  # the source's world delta at f
            want, have = _heading(turn @ ahead), _heading(axis)
            yaw = 0.0 if want is None or have is None else want - have
            lie = quat_to_matrix(quat_about(np.array([0.0, 0.0, 1.0]), yaw)) @ rest  # flat, heading there
            estimates.append(pose[f, s, :3, :3].T @ lie)  # B: source bone frame → target bone frame
        offset = quat_to_matrix(_mean_rotation(np.array(estimates)))
        out[j] = matrix_to_quat(src.rest_rotations[s] @ offset @ rest.T)
        aligned.append(int(j))
    return out, aligned


# ----------------------------------------------------------------------------- held
def _base(pose: TargetPose, target, joint: int) -> int:
    """The joint that places `joint`: its carrier, else its parent."""
    return int(pose.carrier[joint]) if pose.carrier[joint] >= 0 else int(target.parents[joint])


def _legs(pair: RetargetPair, pose: TargetPose, feet: list[int]) -> list[tuple[int, int, int]]:
    """(thigh, shin, foot) per leg: each aligned foot joint that no other foot joint places, with the two
    mapped bones above it (the shin places the foot, the thigh the shin)."""
    tgt, mapped = pair.target, pair.mapped
    legs = []
    for foot in feet:
        shin = _base(pose, tgt, foot)
        if shin < 0 or shin in feet or mapped[shin] < 0:
            continue
        thigh = _base(pose, tgt, shin)
        if thigh < 0 or mapped[thigh] < 0 or tgt.parents[shin] != thigh:
            continue
        lengths = np.linalg.norm(tgt.heads[[shin, foot]] - tgt.heads[[thigh, shin]], axis=1)
        if np.all(lengths > 1e-6):
            legs.append((thigh, shin, foot))
    return legs


def _contacts(height: np.ndarray) -> np.ndarray:
    """(T,) a source foot joint down: within its band above its low."""
    low, high = np.percentile(height, [5.0, 95.0])
    band = max(CONTACT_BAND * (high - low), CONTACT_MIN_BAND)
    return height <= low + band


def _weights(contact: np.ndarray) -> np.ndarray:
    """(T,) 1 in contact, fading (smoothstep) to 0 over BLEND frames before and after."""
    frames = np.arange(len(contact))
    where = np.flatnonzero(contact)
    if not len(where):
        return np.zeros(len(contact))
    distance = np.abs(frames[:, None] - where[None]).min(axis=1)
    x = np.clip(1.0 - distance / (BLEND + 1.0), 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _contact_runs(contact: np.ndarray) -> list[tuple[int, int]]:
    """(first, past last) frame of each run of contact."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], contact.astype(int), [0]])))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _run_means(contact: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(T,2) per frame the mean horizontal position of `points` over the contact run nearest to it."""
    out = points[:, :2].copy()
    runs = _contact_runs(contact)
    if not runs:
        return out
    centres = [points[a:b, :2].mean(axis=0) for a, b in runs]
    middles = np.array([(a + b - 1) / 2.0 for a, b in runs])
    for t in range(len(points)):
        out[t] = centres[int(np.argmin(np.abs(middles - t)))]
    return out


def _between_runs(contact: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(T,) `values` over each contact run, and from the value a run ends with to the one the next begins
    with linearly between them (the first run's first before it, the last run's last after it)."""
    runs = _contact_runs(contact)
    if not runs:
        return np.zeros(len(values))
    frames = [f for a, b in runs for f in (a, b - 1)]
    out = np.interp(np.arange(len(values)), frames, values[frames])
    for a, b in runs:
        out[a:b] = values[a:b]
    return out


def hold_feet(pair: RetargetPair, pose: TargetPose, feet: list[int]) -> list[int]:
    """Place the target's feet as the source's while those are down (module docstring): the thighs' and shins'
    world rotations of `pose` changed in place (unmapped bones below follow). `feet`: the aligned foot
    joints (`feet_to_ground`). Returns the feet held."""
    src, tgt, mapped = pair.source, pair.target, pair.mapped
    legs = _legs(pair, pose, feet)
    if not legs or pair.motion.frame_count < 2:
        return []
    source_heads = forward_kinematics(src, pair.motion)[..., :3, 3]
    held = []
    for thigh, shin, foot in legs:
        s = int(mapped[foot])
        contact = _contacts(source_heads[:, s, 2])
        weight = _weights(contact)
        if not weight.any():
            continue
        positions = pose.positions(tgt)
        rise = pose.root_scale * (source_heads[:, s, 2] - np.percentile(source_heads[:, s, 2], 5.0))
        followed = pose.root_scale * source_heads[:, s, :2]  # the source foot's path, scaled as the root's
        goal = positions[:, foot].copy()
        goal[:, :2] = followed + _run_means(contact, positions[:, foot, :2] - followed)
        goal[:, 2] = tgt.heads[foot, 2] + rise
        # A foot the clip puts too low is lifted through the swing too, from where one contact leaves the
        # lift to where the next takes it up: faded out at toe-off, the lift pulled the rising foot back
        # down to the floor, and the stance read longer (a CMU walk on the CMU skeleton: duty 0.59 where
        # the actor's is 0.48). A foot put too high swings as it is (lowered, its stance read shorter).
        carried = np.maximum(_between_runs(contact, goal[:, 2] - positions[:, foot, 2]), 0.0)
        base = positions[:, foot].copy()
        base[:, 2] += carried
        goal = base + weight[:, None] * (goal - base)
        _solve_leg(pose, positions, (thigh, shin, foot), goal)
        held.append(int(foot))
    if held:  # bones that follow their parent (twists, an unmapped toe) follow the turned legs
        local = tgt.rest_local[:, :3, :3]
        for j in tgt.topological_order:
            if mapped[j] < 0 and tgt.parents[j] >= 0:
                pose.world[:, j] = pose.world[:, tgt.parents[j]] @ local[j]
    return held


def _solve_leg(pose: TargetPose, positions: np.ndarray, leg: tuple[int, int, int], goal: np.ndarray) -> None:
    """Turn thigh and shin (world rotations of `pose`) so that the foot reaches `goal` (T,3), the knee
    bending as it does; the foot keeps its world rotation."""
    thigh, shin, foot = leg
    hip, knee, ankle = positions[:, thigh], positions[:, shin], positions[:, foot]
    l1, l2 = np.linalg.norm(knee - hip, axis=1), np.linalg.norm(ankle - knee, axis=1)
    solved = two_bone(hip, goal, l1, l2, knee - 0.5 * (hip + ankle))
    turn1 = quat_to_matrix(rotation_between(knee - hip, solved.mid - hip))
    shin_after = np.einsum("tab,tb->ta", turn1, ankle - knee)
    turn2 = quat_to_matrix(rotation_between(shin_after, solved.end - solved.mid))
    pose.world[:, thigh] = turn1 @ pose.world[:, thigh]
    pose.world[:, shin] = turn2 @ turn1 @ pose.world[:, shin]


# ----------------------------------------------------------------------------- soles
def foot_soles(target: Rig, vertices: np.ndarray, joints: np.ndarray,
               feet: list[int]) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], float]:
    """Per foot joint, its sole at rest: the skin's vertices ((V,3), canonical target) within SOLE_BAND
    of their lowest whose bone (`joints` (V,): the one each follows most) is the foot or below it, and
    those bones; and the skin's lowest height (the floor the soles stand on)."""
    floor = float(vertices[:, 2].min())
    low = vertices[:, 2] <= floor + SOLE_BAND
    soles = {}
    for foot in feet:
        mine = low & target.subtree(foot)[joints]
        if mine.any():
            soles[int(foot)] = (vertices[mine], joints[mine])
    return soles, floor


def lift_soles(pair: RetargetPair, pose: TargetPose, soles: dict[int, tuple[np.ndarray, np.ndarray]],
               floor: float) -> list[int]:
    """Lift each foot whose sole (`foot_soles`) would go below `floor` by as much, by leg IK (a foot
    control placed by offsets of its own, with no leg above it, by those); the feet lifted (module
    docstring)."""
    tgt = pair.target
    lifted = []
    for foot, (points, joints) in soles.items():
        legs = _legs(pair, pose, [foot])
        if not legs and not pose.placed[foot]:
            continue
        positions = pose.positions(tgt)
        local = np.einsum("nba,nb->na", tgt.rest_rotations[joints], points - tgt.heads[joints])
        heights = positions[:, joints, 2] + np.einsum("tnab,nb->tna", pose.world[:, joints], local)[..., 2]
        lift = np.maximum(floor - heights.min(axis=1), 0.0)
        if lift.max() <= 1e-6:
            continue
        if legs:
            goal = positions[:, foot].copy()
            goal[:, 2] += lift
            _solve_leg(pose, positions, legs[0], goal)
        else:  # a foot control placed by its own offsets (a game rig's, under its root): moved up itself
            pose.extra[:, foot, 2] += lift
        lifted.append(int(foot))
    return lifted
