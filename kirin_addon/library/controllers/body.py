"""Secondary body motion: tails kept up and off the ground, arms hanging and swinging, wings and fins."""

from __future__ import annotations

import numpy as np

from ...core.creature import Creature, Limb
from ...core.ik import aim
from ...core.rotations import quat_multiply, quat_rotate
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


def _following(mesh, joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices of the vertices of a skinned mesh that mostly follow `joints` (a mask), every vertex's
    main joint)."""
    dominant = mesh.joint_indices[np.arange(mesh.vertex_count), np.argmax(mesh.joint_weights, axis=1)]
    inside = joints[np.clip(dominant, 0, len(joints) - 1)] & (dominant < len(joints))
    return np.flatnonzero(inside), dominant


def _skin_of(mesh, joints: np.ndarray) -> np.ndarray:
    """(N,3) the vertices of a skinned mesh (None: none) that mostly follow `joints` (a mask)."""
    if mesh is None:
        return np.zeros((0, 3))
    return mesh.vertices[_following(mesh, joints)[0]]


def _hang_direction(creature: Creature, limb: Limb, k0: int) -> np.ndarray:
    """Body-frame direction an arm hangs along: down and a little out, further out when it is long (its
    bones, or its skin where the creature has one: a robot's mitts reach well past its finger joints)."""
    rig = creature.rig
    upper = limb.joints[k0]
    inside = rig.subtree(upper)  # the arm and the hand's fingers beyond the chain
    points = np.concatenate([rig.heads[inside], rig.tails[inside], _skin_of(creature.mesh, inside)])
    length = float(np.max(np.linalg.norm(points - rig.heads[upper], axis=1)))
    height = float(rig.heads[upper, 2])
    angle = np.arctan(0.15)
    if length > 1e-9 and length > ARM_CLEARANCE * height:
        angle = max(angle, float(np.arccos(np.clip(ARM_CLEARANCE * height / length, 0.0, 1.0))))
    return np.array([np.sin(angle) * limb.side, 0.0, -np.cos(angle)])


def pose_arms(poser: Poser, swing: dict[int, np.ndarray], raise_dir: dict[int, np.ndarray] | None = None,
              raise_weight: np.ndarray | None = None, bend: float = 0.35) -> None:
    """Arms hang at the sides and swing fore–aft; an arm in `raise_dir` is lifted towards that direction."""
    rig = poser.rig
    frames = poser.frames
    for n, limb in enumerate(arm_limbs(poser.creature)):
        k0 = _arm_start(limb)
        if k0 + 1 >= len(limb.joints):
            continue
        upper, lower = limb.joints[k0], limb.joints[k0 + 1]
        parent_q = poser.get(int(rig.parents[upper]))
        rest_dir = rig.heads[lower] - rig.heads[upper]
        hang = _hang_direction(poser.creature, limb, k0)
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
            bent = quat_rotate(about(X_AXIS, np.full(frames, -bend)), body_dir)
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


def pose_fins(poser: Poser, t: np.ndarray, rate: float, amplitude: float) -> None:
    for limb in poser.creature.limbs_of("fin"):
        parent_q = poser.get(int(poser.rig.parents[limb.root]))
        poser.set(limb.root, quat_multiply(parent_q, about(Y_AXIS, limb.side * amplitude
                                                            * np.sin(2 * np.pi * rate * t))))

