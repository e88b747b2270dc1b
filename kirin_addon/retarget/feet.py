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
swing height while the actor's stayed down: the stance read half as long). So where the source's foot
is planted (low and slow), the target's foot is held by two-bone IK on its thigh and shin
(`core.ik.two_bone`, the knee bending the way it bends): in place over the contact (where it stands
on average), at the height of its rest above the floor plus the source foot's own rise (its heel
lifting, scaled by leg length), fading in and out over BLEND frames. The foot keeps its world
rotation; every other bone is untouched.

Both rigs are canonical (+Z up, unit body size). numpy only.
"""

from __future__ import annotations

import numpy as np

from ..core.ik import two_bone
from ..core.motion import forward_kinematics
from ..core.rest_pose_cues import body_joints
from ..core.rotations import matrix_to_quat, quat_about, quat_normalize, quat_to_matrix, rotation_between
from .retargeter import RetargetPair, TargetPose, hip_height, scale_joint

FOOT_HEIGHT = 0.25  # of the hip height: a joint this low at rest is part of a foot (ankles, toes, heels)
PLANTED_HEIGHT = 0.01  # body sizes above the joint's own lowest: low enough to be planted
PLANTED_FRAMES = 8  # of those, the slowest frames the foot's flat orientation is taken from
FLOOR_PERCENTILE = 5.0  # the clip's floor: the lowest body point in this percentile of frames
CONTACT_BAND = 0.15  # of a foot's rise (95th − 5th percentile height): planted below this above its low
CONTACT_MIN_BAND = 0.01  # body sizes: the band is never narrower
CONTACT_SPEED = 0.3  # body sizes per second: planted only when slower (horizontally)
BLEND = 3  # frames over which a hold fades in before and out after a contact


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


def feet_to_ground(pair: RetargetPair, align: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """`align` ((J_target,4), from `rest_alignment`) with the target's feet aligned where the source's
    are planted (module docstring); and the target joints so aligned."""
    src, tgt, mapped = pair.source, pair.target, pair.mapped
    anchor = scale_joint(src, tgt, mapped)
    if anchor is None:
        return align, []
    source_hip, target_hip = hip_height(src, int(mapped[anchor])), hip_height(tgt, anchor)
    target_floor = float(tgt.heads[body_joints(tgt), 2].min())
    feet = [j for j in np.flatnonzero(mapped >= 0)
            if tgt.heads[j, 2] - target_floor <= FOOT_HEIGHT * target_hip and j != anchor]
    if not feet or pair.motion.frame_count < 2:
        return align, []
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


def _contacts(height: np.ndarray, speed: np.ndarray) -> np.ndarray:
    """(T,) a source foot joint planted: within its band above its low, and slow."""
    low, high = np.percentile(height, [5.0, 95.0])
    band = max(CONTACT_BAND * (high - low), CONTACT_MIN_BAND)
    return (height <= low + band) & (speed <= CONTACT_SPEED)


def _weights(contact: np.ndarray) -> np.ndarray:
    """(T,) 1 in contact, fading (smoothstep) to 0 over BLEND frames before and after."""
    frames = np.arange(len(contact))
    where = np.flatnonzero(contact)
    if not len(where):
        return np.zeros(len(contact))
    distance = np.abs(frames[:, None] - where[None]).min(axis=1)
    x = np.clip(1.0 - distance / (BLEND + 1.0), 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _run_means(contact: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(T,2) per frame the mean horizontal position of `points` over the contact run nearest to it."""
    out = points[:, :2].copy()
    edges = np.flatnonzero(np.diff(np.concatenate([[0], contact.astype(int), [0]])))
    runs = list(zip(edges[::2], edges[1::2], strict=True))
    if not runs:
        return out
    centres = [points[a:b, :2].mean(axis=0) for a, b in runs]
    middles = np.array([(a + b - 1) / 2.0 for a, b in runs])
    for t in range(len(points)):
        out[t] = centres[int(np.argmin(np.abs(middles - t)))]
    return out


def hold_feet(pair: RetargetPair, pose: TargetPose, feet: list[int]) -> list[int]:
    """Hold the target's feet where the source's are planted (module docstring): the thighs' and shins'
    world rotations of `pose` changed in place (unmapped bones below follow). `feet`: the aligned foot
    joints (`feet_to_ground`). Returns the feet held."""
    src, tgt, mapped = pair.source, pair.target, pair.mapped
    legs = _legs(pair, pose, feet)
    if not legs or pair.motion.frame_count < 2:
        return []
    source_heads = forward_kinematics(src, pair.motion)[..., :3, 3]
    speed = np.linalg.norm(np.gradient(source_heads[..., :2], axis=0), axis=-1) * pair.motion.fps
    held = []
    for thigh, shin, foot in legs:
        s = int(mapped[foot])
        contact = _contacts(source_heads[:, s, 2], speed[:, s])
        weight = _weights(contact)
        if not weight.any():
            continue
        positions = pose.positions(tgt)
        rise = pose.root_scale * (source_heads[:, s, 2] - np.percentile(source_heads[:, s, 2], 5.0))
        goal = positions[:, foot].copy()
        goal[:, :2] = _run_means(contact, positions[:, foot])
        goal[:, 2] = tgt.heads[foot, 2] + rise
        goal = positions[:, foot] + weight[:, None] * (goal - positions[:, foot])
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
