"""Secondary body motion: tails kept up and off the ground, arms hanging and swinging, wings and fins."""

from __future__ import annotations

import numpy as np

from ...core.creature import Creature, Limb
from ...core.ik import aim
from ...core.rotations import matrix_to_quat, quat_identity, quat_multiply, quat_rotate
from ...eval.metrics import run_lengths
from .common import X_AXIS, Y_AXIS, Z_AXIS, about, smooth_upper
from .poser import Poser


def tail_lift(creature: Creature) -> float:
    """Angle (rad) that raises a drooping rest tail to horizontal (0 when it already is)."""
    if not creature.tail:
        return 0.0
    rig = creature.rig
    base, tip = rig.heads[creature.tail[0]], rig.tails[creature.tail[-1]]
    back = tip - base
    return float(np.arctan2(-back[2], max(back[1], 1e-9))) if back[1] > 0 else 0.0


def clearance_lifts(creature: Creature, world: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(T,) extra lifts (rad) about the tail's base and the neck's base keeping the tail, and the head and
    neck, above the ground (their skin too), each None where nothing dips: a long tail must not drag, nor
    a low-headed creature's gallop nod and pitch its head into the floor (world: (T,J,4,4) poses)."""
    tail = _clearance(creature, world, creature.tail[0]) if creature.tail else None
    head = _clearance(creature, world, creature.neck[0]) if creature.neck else None
    return tail, head


def sole_lifts(creature: Creature, world: np.ndarray, fps: float, chains: list[list[int]],
               planted: np.ndarray) -> np.ndarray | None:
    """(T,L) heights to raise each leg's foot target by so that the skin below its knee (hoof, paw,
    shoe) stays above the ground; None where none dips. An artist's hoof often follows the shin, not a
    foot bone, so it tilts with the shin over a planted foot and its toe sinks below the floor. A planted
    foot (planted: (T,L)) rises once for its whole stance, by its deepest dip, so it does not move; a
    swinging one goes from one stance's lift to the next, and higher where its own skin would dip
    (world: (T,J,4,4) poses at `fps`)."""
    depths = _sole_depths(creature, world, chains)
    if depths is None:
        return None
    half = max(1, int(round(0.08 * fps)))
    return np.stack([_held_in_stance(depths[:, k], planted[:, k], half) for k in range(len(chains))], axis=1)


def _held_in_stance(depth: np.ndarray, planted: np.ndarray, half: int) -> np.ndarray:
    """(T,) a lift ≥ depth: constant over each planted run, eased between runs."""
    lift = smooth_upper(depth, half)
    starts, ends, values = run_lengths(np.asarray(planted, dtype=bool))
    held = np.full(depth.shape, np.nan)
    for start, end, down in zip(starts, ends, values, strict=True):
        if down:
            held[start:end] = depth[start:end].max()
    if np.all(np.isnan(held)):
        return lift
    frames = np.arange(depth.size)
    known = ~np.isnan(held)
    between = np.interp(frames, frames[known], held[known])
    return np.where(known, held, np.maximum(between, lift))


def _sole_depths(creature: Creature, world: np.ndarray, chains: list[list[int]]) -> np.ndarray | None:
    """(T,L) how far below the ground each leg's skin below the knee reaches (0 where it clears)."""
    mesh = creature.mesh
    if mesh is None:
        return None
    rig = creature.rig
    lifts = np.zeros((world.shape[0], len(chains)))
    for k, chain in enumerate(chains):
        chosen, dominant = _following(mesh, rig.subtree(chain[-2]))
        chosen = chosen[::max(1, chosen.size // 400)]
        if chosen.size:  # a vertex that rests below the ground (a capsule round a foot) may go that low
            floor = np.minimum(mesh.vertices[chosen, 2], 0.0)
            depth = floor[None] - _carried(rig, world, mesh, chosen, dominant)[..., 2]
            lifts[:, k] = np.maximum(depth.max(axis=1), 0.0)
    return lifts if np.any(lifts > 1e-4 * rig.body_size) else None


def _carried(rig, world: np.ndarray, mesh, chosen: np.ndarray, dominant: np.ndarray) -> np.ndarray:
    """(T,V,3) the `chosen` vertices carried rigidly by their main joints through the poses `world`."""
    carry = world[:, dominant[chosen]] @ np.linalg.inv(rig.rest[dominant[chosen]])[None]
    local = np.concatenate([mesh.vertices[chosen], np.ones((chosen.size, 1))], axis=1)
    return np.einsum("tvij,vj->tvi", carry, local)[..., :3]


def _clearance(creature: Creature, world: np.ndarray, top: int) -> np.ndarray | None:
    """(T,) lift about joint `top` keeping what hangs from it above the ground (world: (T,J,4,4) poses):
    its joints and, where the creature has a skin, a few hundred of the vertices that follow them (carried
    by their main joint). Each point keeps a margin of 2 % of a leg, or less where it rests lower."""
    rig = creature.rig
    inside = rig.subtree(top)
    joints = np.flatnonzero(inside)
    joints = joints[joints != top]
    points, rest = [world[:, joints][..., :3, 3]], [rig.heads[joints, 2]]
    if creature.mesh is not None:
        mesh = creature.mesh
        chosen, dominant = _following(mesh, inside)
        chosen = chosen[::max(1, chosen.size // 400)]
        if chosen.size:
            points.append(_carried(rig, world, mesh, chosen, dominant))
            rest.append(mesh.vertices[chosen, 2])
    pos, rest_z = np.concatenate(points, axis=1), np.concatenate(rest)
    if pos.shape[1] == 0:
        return None
    margin = np.minimum(0.02 * max(creature.leg_length, 1e-3), np.maximum(rest_z, 0.0))
    deficit = margin[None] - pos[..., 2]
    if not np.any(deficit > 1e-9 * rig.body_size):
        return None
    base = world[:, top, :3, 3]
    reach = np.maximum(np.linalg.norm(pos - base[:, None], axis=-1), 1e-9)
    angle = np.arcsin(np.clip(np.maximum(deficit, 0.0) / reach, 0.0, 1.0))
    return 1.2 * angle.max(axis=1)


def arm_limbs(creature: Creature) -> list[Limb]:
    return [limb for limb in creature.limbs if limb.kind == "arm" and limb.foot < 0]


def _arm_start(limb: Limb) -> int:
    """Index of the upper arm in an arm chain (skipping a clavicle when there is one)."""
    return 1 if len(limb.joints) >= 4 else 0


# A hanging arm's lowest point stays above this share of its shoulder's height (a yeti's knuckles do
# not drag through the floor): long arms hang out to the side.
ARM_CLEARANCE = 0.8
# An arm whose rest holds it less than this far out from hanging straight down (frontal plane) hangs at
# rest: the artist's own standing pose, kept, and its hand may come down to a tenth of the shoulder's
# height (a robot's long mitts beside its legs); T- and A-pose arms, further out, are brought down.
REST_HANGING = np.radians(30.0)
ARM_CLEARANCE_HANGING = 0.9
# An arm's skin counts towards its reach up to this many times its bones' (a mitt does, a held prop not).
SKIN_REACH = 1.35
# The furthest out a broad body holds its arms (rad): the Quaternius monsters' own walks hold them 35–50°.
TORSO_ANGLE = float(np.radians(50.0))
# A body that needs its arms less than this far out (rad) is slim: they hang at the default (the skin's
# estimate varies by a few degrees with how a rig's arm is split into bones: a 256-bone rig and its
# 64-bone reduction must hang their arms alike).
TORSO_MIN = float(np.radians(20.0))
# The most a hanging arm bends its elbow to keep its hand off the floor (rad); a longer arm goes out.
ELBOW_MAX = 1.0


def _following(mesh, joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices of the vertices of a skinned mesh that mostly follow `joints` (a mask), every vertex's
    main joint)."""
    dominant = mesh.dominant_joints()
    inside = joints[np.clip(dominant, 0, len(joints) - 1)] & (dominant < len(joints))
    return np.flatnonzero(inside), dominant


def _skin_of(mesh, joints: np.ndarray) -> np.ndarray:
    """(N,3) the vertices of a skinned mesh (None: none) that mostly follow `joints` (a mask)."""
    if mesh is None:
        return np.zeros((0, 3))
    return mesh.vertices[_following(mesh, joints)[0]]


def _arm_reach(rig, upper: int, skin: np.ndarray) -> float:
    """How far an arm reaches from its shoulder: its bones, or its skin where that reaches further (a
    robot's mitts reach past its finger joints), but not a held prop's (a trident in a demon's fist)."""
    inside = rig.subtree(upper)
    bones = float(np.max(np.linalg.norm(np.concatenate([rig.heads[inside], rig.tails[inside]])
                                        - rig.heads[upper], axis=1)))
    if not len(skin):
        return bones
    return min(float(np.max(np.linalg.norm(skin - rig.heads[upper], axis=1))), SKIN_REACH * bones)


def _clears_torso(creature: Creature, limb: Limb, k0: int, reach: float) -> float:
    """The least angle out from straight down (rad) at which an arm hanging from its upper arm keeps the
    skin of its upper and fore arm (not the hand's, which may hold a prop) out of the body beside it (a
    chunky monster holds its arms out over its belly), at most TORSO_ANGLE; 0 without a mesh."""
    mesh, rig = creature.mesh, creature.rig
    upper = limb.joints[k0]
    if mesh is None:
        return 0.0
    segments = np.zeros(rig.joint_count, dtype=bool)
    segments[limb.joints[k0:k0 + 2]] = True
    skin = _skin_of(mesh, segments)
    if len(skin) < 4:
        return 0.0
    shoulder = rig.heads[upper]
    along = skin.mean(axis=0) - shoulder
    along /= max(float(np.linalg.norm(along)), 1e-12)
    offsets = skin - shoulder
    radius = float(np.median(np.linalg.norm(offsets - np.outer(offsets @ along, along), axis=1)))
    others = np.ones(rig.joint_count, dtype=bool)
    for arm in arm_limbs(creature):
        others &= ~rig.subtree(arm.joints[0])
    body = mesh.vertices[_following(mesh, others)[0]]
    near = body[(np.abs(body[:, 1] - shoulder[1]) < 2.0 * radius) & (body[:, 0] * limb.side > 0)]
    if not len(near):
        return 0.0
    depths = np.linspace(0.3, 1.0, 8) * reach
    for angle in np.arange(0.0, TORSO_ANGLE, np.radians(2.0)):
        x = np.abs(shoulder[0]) + np.sin(angle) * depths - radius
        z = shoulder[2] - np.cos(angle) * depths
        band = np.abs(near[:, 2][None] - z[:, None]) < radius
        widest = np.where(band, np.abs(near[:, 0])[None], 0.0).max(axis=1)
        if np.all(x >= widest):
            return float(angle)
    return TORSO_ANGLE


def _hang(creature: Creature, limb: Limb, k0: int) -> tuple[np.ndarray, float]:
    """(body-frame direction an arm hangs along, the elbow bend (rad) it needs): down and a little out;
    further out where the body beside it is broad (its skin); a long arm that would reach the floor bends
    its elbow (a robot's mitts), and only beyond ELBOW_MAX goes out to the side (a yeti's knuckles)."""
    rig = creature.rig
    upper = limb.joints[k0]
    skin = _skin_of(creature.mesh, rig.subtree(upper))
    length = _arm_reach(rig, upper, skin)
    height = float(rig.heads[upper, 2])
    rest = rig.heads[limb.joints[k0 + 1]] - rig.heads[upper]
    abducted = float(np.arctan2(abs(rest[0]), -rest[2]))
    hanging = abducted < REST_HANGING  # the artist's rest hangs the arm: it may come lower
    clearance = (ARM_CLEARANCE_HANGING if hanging else ARM_CLEARANCE) * height
    torso = _clears_torso(creature, limb, k0, length)
    torso = torso if torso >= TORSO_MIN else 0.0  # a slim body: its arms hang as arms do
    angle = max(float(np.arctan(0.15)), abducted if hanging else 0.0, torso)
    upper_arm = float(np.linalg.norm(rest))
    drop = upper_arm * np.cos(angle)
    fore = length - upper_arm
    bend = 0.0
    if drop + fore * np.cos(angle) > clearance and fore > 1e-9 and drop < clearance:
        bend = float(np.arccos(np.clip((clearance - drop) / fore, -1.0, 1.0)))
    if bend > ELBOW_MAX or drop >= clearance:  # bending will not do: the arm goes out
        bend = 0.0
        if length > clearance:
            angle = max(angle, float(np.arccos(np.clip(clearance / length, 0.0, 1.0))))
    return np.array([np.sin(angle) * limb.side, 0.0, -np.cos(angle)]), bend


def pose_arms(poser: Poser, swing: dict[int, np.ndarray], raise_dir: dict[int, np.ndarray] | None = None,
              raise_weight: np.ndarray | None = None, bend: float | np.ndarray = 0.35) -> None:
    """Arms hang at the sides and swing fore–aft, the elbows bent by `bend` (rad; one, or one a frame); an
    arm in `raise_dir` is lifted towards that direction."""
    rig = poser.rig
    frames = poser.frames
    for n, limb in enumerate(arm_limbs(poser.creature)):
        k0 = _arm_start(limb)
        if k0 + 1 >= len(limb.joints):
            continue
        upper, lower = limb.joints[k0], limb.joints[k0 + 1]
        parent_q = poser.get(int(rig.parents[upper]))
        rest_dir = rig.heads[lower] - rig.heads[upper]
        hang, elbow = _hang(poser.creature, limb, k0)
        amount = swing.get(n, np.zeros(frames))
        body_dir = quat_rotate(about(X_AXIS, -amount), np.broadcast_to(hang, (frames, 3)))
        if raise_dir is not None and n in raise_dir and raise_weight is not None:
            w = raise_weight[:, None]
            body_dir = (1 - w) * body_dir + w * raise_dir[n]
        q_upper = aim(parent_q, rest_dir, quat_rotate(parent_q, body_dir))
        poser.set(upper, q_upper)
        if k0 + 2 < len(limb.joints):
            fore, hand = limb.joints[k0 + 1], limb.joints[k0 + 2]
            fore_rest = rig.heads[hand] - rig.heads[fore]
            bent = quat_rotate(about(X_AXIS, -np.broadcast_to(np.maximum(bend, elbow), (frames,))), body_dir)
            poser.set(fore, aim(q_upper, fore_rest, quat_rotate(parent_q, bent)))


def pose_wings(poser: Poser, beat: np.ndarray, fold: np.ndarray) -> None:
    """Wings rotate about the body's long axis by `beat` (up > 0); distal joints fold by `fold`."""
    rig = poser.rig
    for limb in poser.creature.limbs_of("wing"):
        parent_q = poser.get(int(rig.parents[limb.root]))
        q = quat_multiply(parent_q, about(Y_AXIS, -limb.side * beat))
        poser.set(limb.root, q)
        for k, j in enumerate(limb.joints[1:]):
            q = quat_multiply(q, about(Z_AXIS, limb.side * fold * (0.6 if k else 1.0)))
            poser.set(j, q)


# A folded wing's span, from its shoulder: back along the body and down by at most this much (the sine of
# its angle below the horizontal), less where a long wing's tip would come within WING_CLEARANCE of the
# shoulder's height to the floor.
FOLDED_DROP = 0.34
WING_CLEARANCE = 0.5
# A folded wing's surface lies over the back: its chord points in towards the spine and up by this
# (x, z) direction, the feathers of the two wings meeting over it as a roof.
ROOF = (0.8, 0.6)
# A wing whose span at rest already points this far back or down is folded at rest (the procedural birds').
FOLDED_AT_REST = 0.6


def _chord(creature: Creature, limb: Limb, span: np.ndarray) -> np.ndarray:
    """A wing's chord at rest: the unit direction across its surface, square to its span, from its bones
    towards its trailing edge (where its skin lies, else backward)."""
    skin = _skin_of(creature.mesh, creature.rig.subtree(limb.root))
    towards = skin.mean(axis=0) - creature.rig.heads[limb.root] if len(skin) else np.array([0.0, 1.0, 0.0])
    chord = towards - np.dot(towards, span) * span
    if np.linalg.norm(chord) < 1e-9:
        chord = np.array([0.0, 1.0, 0.0]) - span[1] * span
    return chord / max(float(np.linalg.norm(chord)), 1e-12)


def _fold(span: np.ndarray, chord: np.ndarray, drop: float, side: int) -> np.ndarray:
    """The rotation (4,) that folds a wing spread along `span` (unit, body frame) with its surface along
    `chord` to the body: its span back along the flank `drop` (a sine) below the horizontal, its surface
    laid over the back like a roof, trailing edge towards the spine (not sticking out sideways)."""
    if span[1] > FOLDED_AT_REST or -span[2] > FOLDED_AT_REST:
        return quat_identity(())
    to_span = np.array([0.0, np.sqrt(1.0 - drop**2), -drop])
    to_chord = np.array([-side * ROOF[0], 0.0, ROOF[1]])
    to_chord = to_chord - np.dot(to_chord, to_span) * to_span
    to_chord /= np.linalg.norm(to_chord)
    rest = np.stack([span, chord, np.cross(span, chord)], axis=1)
    folded = np.stack([to_span, to_chord, np.cross(to_span, to_chord)], axis=1)
    return matrix_to_quat(folded @ rest.T)


# A folded wing bends in a Z: the forearm turned forward at the joint a third of the way out, the hand
# back at the joint two thirds out (a bird's elbow and wrist), so it lies within the body's length.
Z_FOLD = np.radians(162.0)


def _z_joints(rig, limb: Limb, reach: float) -> tuple[int, int]:
    """Indices in `limb.joints` of the joints the wing folds at (its elbow and wrist by distance from
    the shoulder); (0, 0) for a chain too short to fold in a Z."""
    if len(limb.joints) < 3:
        return 0, 0
    out = np.linalg.norm(rig.heads[limb.joints] - rig.heads[limb.root], axis=1) / reach
    elbow = int(np.argmin(np.abs(out[1:] - 1 / 3))) + 1
    wrist = int(np.argmin(np.abs(out[elbow + 1:] - 2 / 3))) + elbow + 1 if elbow + 1 < len(out) else 0
    return (elbow, wrist) if wrist else (0, 0)


def fold_wings(poser: Poser) -> None:
    """Wings folded to the body, however the rig spreads them at rest (a bird standing or walking)."""
    rig = poser.rig
    for limb in poser.creature.limbs_of("wing"):
        root = rig.heads[limb.root]
        tip = max(np.flatnonzero(rig.subtree(limb.root)),
                  key=lambda j: float(np.linalg.norm(rig.tails[j] - root)))
        span = rig.tails[tip] - root
        reach = max(float(np.linalg.norm(span)), 1e-12)
        drop = float(np.clip(WING_CLEARANCE * root[2] / reach, 0.0, FOLDED_DROP))
        fold = _fold(span / reach, _chord(poser.creature, limb, span / reach), drop, limb.side)
        parent_q = poser.get(int(rig.parents[limb.root]))
        elbow, wrist = _z_joints(rig, limb, reach) if fold[0] < 1.0 - 1e-9 else (0, 0)
        forearm = quat_multiply(about(X_AXIS, np.array(-Z_FOLD)), fold)
        for k, j in enumerate(limb.joints):
            bent = forearm if elbow and elbow <= k < wrist else fold
            poser.set(j, quat_multiply(parent_q, np.broadcast_to(bent, parent_q.shape)))


def pose_fins(poser: Poser, t: np.ndarray, rate: float, amplitude: float) -> None:
    for limb in poser.creature.limbs_of("fin"):
        parent_q = poser.get(int(poser.rig.parents[limb.root]))
        poser.set(limb.root, quat_multiply(parent_q, about(Y_AXIS, limb.side * amplitude
                                                            * np.sin(2 * np.pi * rate * t))))

