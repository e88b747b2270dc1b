"""Posing a clip: legs as IK sees them, the per-frame body pose, and solving every leg onto its foot target.

Legs are solved by IK from their girdle joint to a foot target; the body is lowered where a foot would be
out of reach, so every planted foot is met exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...core.creature import Creature, Limb
from ...core.ik import aim, two_bone_deltas
from ...core.motion import Motion, motion_from_world_deltas
from ...core.rotations import quat_identity, quat_multiply, quat_rotate, quat_slerp
from .common import FORWARD, X_AXIS, Z_AXIS, ControllerError, about, euler_q, smooth_upper

# Leg reach kept inside [min, max] of the solved two-bone pair: a straight knee is a singularity.
REACH_MAX = 0.985
REACH_MIN_EXTRA = 0.04


# ----------------------------------------------------------------------------- leg geometry
@dataclass
class LegRig:
    """One leg as IK sees it: chain girdle → foot, and the two bones the analytic solve moves."""

    limb: Limb
    chain: list[int]  # joints from the limb root to the foot, inclusive
    vectors: np.ndarray  # (n,3) rest head-to-head vectors of the chain's segments
    pair: int  # index a: segments a and a+1 are solved analytically
    pole: np.ndarray  # (3,) bend direction in the rest (body) frame
    foot_rest: np.ndarray  # (3,) rest position of the foot joint's head

    @property
    def reach(self) -> tuple[float, float]:
        l1, l2 = np.linalg.norm(self.vectors[self.pair]), np.linalg.norm(self.vectors[self.pair + 1])
        return abs(l1 - l2) + REACH_MIN_EXTRA * (l1 + l2), REACH_MAX * (l1 + l2)


def leg_rigs(creature: Creature) -> list[LegRig]:
    rig = creature.rig
    out = []
    for limb in creature.legs():
        chain = [limb.foot]
        while chain[-1] != limb.root and rig.parents[chain[-1]] >= 0:
            chain.append(int(rig.parents[chain[-1]]))
        chain = chain[::-1]
        if chain[0] != limb.root or len(chain) < 3:
            raise ControllerError("A leg needs at least two bones between its root and its foot.")
        heads = rig.heads[chain]
        vectors = np.diff(heads, axis=0)
        lengths = np.linalg.norm(vectors, axis=1)
        pair = int(np.argmax(lengths[:-1] + lengths[1:]))
        start, mid, end = heads[pair], heads[pair + 1], heads[pair + 2]
        line = (end - start) / max(np.linalg.norm(end - start), 1e-12)
        bend = (mid - start) - np.dot(mid - start, line) * line
        if np.linalg.norm(bend) > 1e-3 * (lengths[pair] + lengths[pair + 1]):
            pole = bend / np.linalg.norm(bend)
        else:
            # A straight rest leg says nothing: knees forward, elbows of fore legs backward.
            pole = -FORWARD if limb.position == "front" else FORWARD.copy()
        out.append(LegRig(limb, chain, vectors, pair, pole, rig.heads[limb.foot].copy()))
    return out


# Distal leg joints (ankles, wrists) keep at least this fraction of their rest height above the foot.
DISTAL_CLEARANCE = 0.5


def _distal_heights(leg: LegRig, q: np.ndarray) -> np.ndarray:
    """(T,k) heights above the foot of the distal joints (below the solved pair) under delta q."""
    vectors = leg.vectors[leg.pair + 2:]
    drops = quat_rotate(q[:, None], np.broadcast_to(vectors, (q.shape[0],) + vectors.shape))[..., 2]
    return -np.cumsum(drops[:, ::-1], axis=1)[:, ::-1]


def _limit_lean(leg: LegRig, upright: np.ndarray, lean: np.ndarray, fold: np.ndarray,
                iterations: int = 8) -> np.ndarray:
    """`lean` blended back towards `upright` (per frame, as little as needed) so that every distal
    joint stays at least DISTAL_CLEARANCE of its rest height above the foot."""
    rest = _distal_heights(leg, quat_identity((1,)))[0]
    floor = np.where(rest > 0, DISTAL_CLEARANCE * rest, rest)

    def ok(q: np.ndarray) -> np.ndarray:
        return np.all(_distal_heights(leg, quat_multiply(q, fold)) >= floor[None] - 1e-12, axis=1)

    good = ok(lean)
    if good.all():
        return lean
    lo, hi = np.zeros(lean.shape[0]), np.ones(lean.shape[0])
    for _ in range(iterations):  # bisection on the blend weight: continuous over time
        mid = 0.5 * (lo + hi)
        fine = ok(quat_slerp(upright, lean, mid))
        lo, hi = np.where(fine, mid, lo), np.where(fine, hi, mid)
    return np.where(good[:, None], lean, quat_slerp(upright, lean, lo))


# ----------------------------------------------------------------------------- pose assembly
@dataclass
class BodyPose:
    """Per-frame body: pelvis target and rotation, plus cumulative bends (pitch, roll, yaw) of chains."""

    root: np.ndarray  # (T,3) pelvis head target
    body: np.ndarray  # (T,4) pelvis world delta
    spine: np.ndarray | None = None  # (T,n,3) per-joint bends along creature.spine
    neck: np.ndarray | None = None  # (T,n,3) along neck + [head]
    tail: np.ndarray | None = None  # (T,n,3) along tail
    jaw: np.ndarray | None = None  # (T,) opening angle


def chain_bends(frames: int, count: int) -> np.ndarray:
    """(frames, count, 3) zero bends (pitch, roll, yaw) for a chain of `count` joints."""
    return np.zeros((frames, count, 3))


@dataclass
class FootPlan:
    """Where each foot goes, frame by frame: targets, heading, which feet are planted, swing fold."""

    targets: np.ndarray  # (N,L,3)
    yaw: np.ndarray  # (N,L)
    contacts: np.ndarray  # (N,L)
    fold: np.ndarray  # (N,L) distal flexion during swing
    roll: np.ndarray | None = None  # (N,L) foot pitch (rad, toes down > 0): heel-off and heel-strike


class Poser:
    """Accumulates world deltas for one clip and solves legs onto foot targets."""

    def __init__(self, creature: Creature, frames: int):
        self.creature = creature
        self.rig = creature.rig
        self.frames = frames
        self.deltas = quat_identity((frames, self.rig.joint_count))
        self.fixed = np.zeros(self.rig.joint_count, dtype=bool)
        self.legs = leg_rigs(creature)
        self.offsets = self.rig.heads - self.rig.heads[np.maximum(self.rig.parents, 0)]

    def set(self, joint: int, q: np.ndarray) -> None:
        self.deltas[:, joint] = q
        self.fixed[joint] = True

    def get(self, joint: int) -> np.ndarray:
        return self.deltas[:, joint] if joint >= 0 else quat_identity((self.frames,))

    def inherit(self) -> None:
        """Joints nobody set move rigidly with their parent."""
        parents = self.rig.parents
        for j in self.rig.topological_order:
            if not self.fixed[j] and parents[j] >= 0:
                self.deltas[:, j] = self.deltas[:, parents[j]]

    def relative_positions(self) -> np.ndarray:
        """(T,J,3) joint heads with the main root's head at the origin."""
        rig = self.rig
        rel = np.zeros((self.frames, rig.joint_count, 3))
        main = rig.heads[rig.main_root]
        for level in rig.levels:
            parents = rig.parents[level]
            roots = level[parents < 0]
            rel[:, roots] = rig.heads[roots] - main
            child = level[parents >= 0]
            if child.size:
                par = rig.parents[child]
                rel[:, child] = rel[:, par] + quat_rotate(self.deltas[:, par], self.offsets[child])
        return rel

    def apply_body(self, pose: BodyPose) -> None:
        c = self.creature
        self.set(c.pelvis, pose.body)
        if self.rig.main_root != c.pelvis:
            self.set(self.rig.main_root, pose.body)
        for chain, bends in ((c.spine, pose.spine), (c.neck + ([c.head] if c.head >= 0 else []), pose.neck),
                             (c.tail, pose.tail)):
            if not chain:
                continue
            parent = int(self.rig.parents[chain[0]])
            q = self.get(parent) if parent >= 0 else pose.body
            for k, j in enumerate(chain):
                if bends is not None and k < bends.shape[1]:
                    q = quat_multiply(q, euler_q(bends[:, k, 0], bends[:, k, 1], bends[:, k, 2]))
                self.set(j, q)
        if c.jaw >= 0 and pose.jaw is not None:
            self.set(c.jaw, quat_multiply(self.get(int(self.rig.parents[c.jaw])), about(X_AXIS, -pose.jaw)))

    def root_for(self, pelvis_target: np.ndarray, rel: np.ndarray) -> np.ndarray:
        """Main-root head positions that put the pelvis head on its target."""
        return pelvis_target - rel[:, self.creature.pelvis]

    def leg_ends(self, rel: np.ndarray, root: np.ndarray, targets: np.ndarray, yaw: np.ndarray,
                 fold: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray], list[list[np.ndarray]]]:
        """For each leg: start S of the solved pair, its target E, and the distal deltas."""
        starts, ends, distal_all, proximal_all = [], [], [], []
        for i, leg in enumerate(self.legs):
            base = self.get(int(self.rig.parents[leg.chain[0]]))
            hip = rel[:, leg.chain[0]] + root
            proximal = base
            if leg.pair > 0:
                # Segments above the solved pair swing with the whole leg (hip → foot direction).
                whole = leg.foot_rest - self.rig.heads[leg.chain[0]]
                proximal = aim(base, whole, targets[:, i] - hip)
            start = hip
            for k in range(leg.pair):
                start = start + quat_rotate(proximal, leg.vectors[k])
            proximal_all.append(proximal)
            heading = about(Z_AXIS, yaw[:, i])
            end = targets[:, i].copy()
            distal = []
            if leg.pair + 2 < len(leg.vectors):
                # Below the pair: lean with the whole leg (gives the pair the most slack), fold in swing,
                # but never so far that an ankle or wrist dips towards the ground (a far-forward or
                # far-back foot would otherwise tip its paw segment past horizontal).
                whole = leg.foot_rest - self.rig.heads[leg.chain[0]]
                lean = _limit_lean(leg, heading, aim(heading, whole, targets[:, i] - hip),
                                   about(X_AXIS, fold[:, i]))
                for _ in range(leg.pair + 2, len(leg.vectors)):
                    distal.append(quat_multiply(lean, about(X_AXIS, fold[:, i])))
            for k, q in zip(range(leg.pair + 2, len(leg.vectors)), distal, strict=True):
                end = end - quat_rotate(q, leg.vectors[k])
            starts.append(start)
            ends.append(end)
            distal_all.append(distal)
        self._proximal = proximal_all
        return starts, ends, distal_all

    def lowering(self, rel: np.ndarray, root: np.ndarray, targets: np.ndarray, yaw: np.ndarray,
                 fold: np.ndarray, active: np.ndarray) -> np.ndarray:
        """(T,) how far the body must drop so every active leg's target is within reach."""
        starts, ends, _ = self.leg_ends(rel, root, targets, yaw, fold)
        need = np.zeros(self.frames)
        for i, leg in enumerate(self.legs):
            _, hi = leg.reach
            gap = starts[i] - ends[i]
            horiz = np.hypot(gap[:, 0], gap[:, 1])
            vertical = np.sqrt(np.maximum(hi**2 - horiz**2, 0.0))
            drop = np.maximum(gap[:, 2] - vertical, 0.0)
            need = np.maximum(need, np.where(active[:, i], drop, 0.0))
        return need

    def solve_legs(self, rel: np.ndarray, root: np.ndarray, targets: np.ndarray, yaw: np.ndarray,
                   fold: np.ndarray, roll: np.ndarray | None = None) -> np.ndarray:
        """Set leg deltas so each foot reaches its target; returns (T,legs) reached flags."""
        starts, ends, distal_all = self.leg_ends(rel, root, targets, yaw, fold)
        reached = np.ones((self.frames, len(self.legs)), dtype=bool)
        for i, leg in enumerate(self.legs):
            base = self._proximal[i]
            for k in range(leg.pair):
                self.set(leg.chain[k], base)
            pole = quat_rotate(base, leg.pole)
            d1, d2, result = two_bone_deltas(starts[i], ends[i], leg.vectors[leg.pair],
                                             leg.vectors[leg.pair + 1], pole, base)
            self.set(leg.chain[leg.pair], d1)
            self.set(leg.chain[leg.pair + 1], d2)
            for k, q in zip(range(leg.pair + 2, len(leg.vectors)), distal_all[i], strict=True):
                self.set(leg.chain[k], q)
            flat = about(Z_AXIS, yaw[:, i])
            foot = flat if roll is None else quat_multiply(flat, about(X_AXIS, roll[:, i]))
            self.set(leg.chain[-1], foot)  # rolling about its own lateral axis (toes down > 0)
            if roll is not None and leg.limb.toe >= 0:  # the toes stay flat while the heel comes up
                self.set(leg.limb.toe, np.where((roll[:, i] > 0)[:, None], flat, foot))
            reached[:, i] = result.reached
        return reached

    def motion(self, root: np.ndarray, fps: float) -> Motion:
        self.inherit()
        return motion_from_world_deltas(self.rig, self.deltas, root, fps)


def solve_clip(creature: Creature, pose: BodyPose, feet: FootPlan, fps: float,
               extra: Callable[[Poser], None] | None = None, lower: bool = True,
               planted: np.ndarray | None = None) -> tuple[Motion, dict]:
    """Body pose + foot targets → Motion, dropping the body where a foot in `feet.contacts` is out of reach.

    info["unreached_planted"] counts frames × legs of `planted` (default: feet.contacts) whose target was
    not met (a swing foot lifted closer to its hip than the leg folds is met as near as it goes)."""
    targets, yaw, fold, contacts = feet.targets, feet.yaw, feet.fold, feet.contacts
    frames = pose.root.shape[0]
    poser = Poser(creature, frames)
    poser.apply_body(pose)
    poser.inherit()
    if extra is not None:
        extra(poser)
        poser.inherit()
    rel = poser.relative_positions()
    root = poser.root_for(pose.root, rel)
    drop = np.zeros(frames)
    if lower and poser.legs:
        for _ in range(3):  # the proximal swing depends a little on the drop: settle it
            need = poser.lowering(rel, root, targets, yaw, fold, contacts)
            if not np.any(need > 1e-12):
                break
            step = smooth_upper(need, max(1, int(round(0.08 * fps))))
            drop = drop + step
            root = root - step[:, None] * Z_AXIS
    reached = (poser.solve_legs(rel, root, targets, yaw, fold, feet.roll) if poser.legs
               else np.ones((frames, 0), bool))
    motion = poser.motion(root, fps)
    info = {"body_drop_max": float(drop.max()) if drop.size else 0.0,
            "unreached_planted": int(np.sum(~reached & (contacts if planted is None else planted)))}
    return motion, info
