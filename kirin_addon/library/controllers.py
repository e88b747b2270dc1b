"""Motion controllers: contact-consistent gaits and actions for every creature family.

Creatures are driven only through their roles (pelvis, spine, neck, head, tail, limbs), never
by joint names. Everything is authored as world rotation deltas D_j = R_world_j · R_rest_j⁻¹
(bone-roll independent) and turned into a rotation-only Motion, so bone lengths are exact.

Legs are solved by IK from their girdle joint to a foot target: during stance a foot's target
is one constant point (zero skating by construction); during swing it travels on an arc. The
body is lowered where a foot would be out of reach, so every planted foot is met exactly.

Entry point: `generate(creature, action, seed, ...)`; `ACTIONS_BY_FAMILY` lists the actions.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..core.creature import LEFT, Creature, Limb
from ..core.ik import aim, two_bone_deltas
from ..core.motion import Motion, forward_kinematics, motion_from_world_deltas
from ..core.rotations import quat_about, quat_identity, quat_multiply, quat_rotate, quat_slerp

GRAVITY = 9.81
X_AXIS = np.array([1.0, 0.0, 0.0])  # the creature's lateral axis (pitch)
Y_AXIS = np.array([0.0, 1.0, 0.0])  # its long axis, pointing backwards (roll)
Z_AXIS = np.array([0.0, 0.0, 1.0])  # up (yaw / heading)
FORWARD = np.array([0.0, -1.0, 0.0])

# Leg reach kept inside [min, max] of the solved two-bone pair: a straight knee is a singularity.
REACH_MAX = 0.985
REACH_MIN_EXTRA = 0.04
# Body drop (in leg lengths) a gait may count on when the rest leg is too straight to sweep.
CROUCH = 0.08
# At least this many frames per gait cycle by default: faster cycles alias at the clip's frame rate.
MIN_CYCLE_FRAMES = 6.0
# ... and at least this many frames per swing, so a swinging foot never crosses its stride in one frame (the
# wave gait's 0.8 duty leaves a fifth of the cycle for the swing).
MIN_SWING_FRAMES = 2.0
# Never fewer than this many (explicit speeds and turn rates may need faster cycles than the above).
HARD_CYCLE_FRAMES = 4.0
# A default turn may shorten strides by up to this factor before it is made wider.
TURN_STRIDE = 1.5


@dataclass(frozen=True)
class Gait:
    """A legged gait: footfall phases by leg pattern, duty factor and defaults from the Froude number."""

    name: str
    pattern: str  # how per-leg phase offsets are laid out (see `_phase_offsets`)
    duty: float  # fraction of the cycle each foot is on the ground
    froude: float  # default speed as Froude number v² / (g L)
    lift: float  # swing foot clearance, in leg lengths
    bob: float  # vertical body bob, in leg lengths
    bobs_per_cycle: int  # 2 for symmetric gaits, 1 for gallops, bounds and pronks
    pitch: float = 0.0  # body pitch oscillation (rad), for bounds and gallops
    sway: float = 0.0  # lateral body sway, in leg lengths (bipeds)
    stride_scale: float = 1.0  # multiplies Alexander's relative stride length
    nod: float = 0.04  # head-and-neck pitch oscillation (rad), with the body bob
    crouch: float = 0.08  # body drop (in leg lengths) the stride may count on to reach further


GAITS: dict[str, Gait] = {
    "walk": Gait("walk", "lateral", 0.58, 0.30, 0.08, 0.012, 2),
    "trot": Gait("trot", "trot", 0.45, 0.70, 0.12, 0.025, 2),
    "pace": Gait("pace", "pace", 0.45, 0.70, 0.11, 0.02, 2),
    "canter": Gait("canter", "canter", 0.40, 1.30, 0.13, 0.03, 1, pitch=0.06),
    "gallop": Gait("gallop", "transverse", 0.25, 5.00, 0.14, 0.03, 1, pitch=0.08, stride_scale=0.95,
                   nod=0.25, crouch=0.12),
    "rotary_gallop": Gait("rotary_gallop", "rotary", 0.25, 5.00, 0.14, 0.03, 1, pitch=0.08,
                          stride_scale=0.95, nod=0.25, crouch=0.12),
    "bound": Gait("bound", "bound", 0.38, 1.40, 0.14, 0.035, 1, pitch=0.10, stride_scale=0.85),
    "pronk": Gait("pronk", "pronk", 0.35, 0.60, 0.16, 0.05, 1, stride_scale=0.7),
    "biped_walk": Gait("biped_walk", "alternate", 0.62, 0.20, 0.07, 0.015, 2, sway=0.02, stride_scale=0.7),
    "run": Gait("run", "alternate", 0.36, 1.00, 0.14, 0.03, 2, sway=0.01, stride_scale=0.75),
    "hop": Gait("hop", "pronk", 0.40, 0.35, 0.18, 0.06, 1, stride_scale=0.7),
    "tripod": Gait("tripod", "tripod", 0.55, 0.25, 0.10, 0.01, 2, stride_scale=0.8),
    "wave": Gait("wave", "wave", 0.80, 0.10, 0.10, 0.005, 1, stride_scale=0.8),
}

# Gait names each family accepts for locomotion, and what "walk" means for it.
_FAMILY_GAITS = {
    "quadruped": {"walk": "walk", "trot": "trot", "pace": "pace", "canter": "canter", "gallop": "gallop",
                  "rotary_gallop": "rotary_gallop", "bound": "bound", "pronk": "pronk"},
    "dragon": {"walk": "walk", "trot": "trot", "canter": "canter", "gallop": "gallop", "bound": "bound"},
    "biped": {"walk": "biped_walk", "run": "run"},
    "bird": {"walk": "biped_walk", "hop": "hop", "run": "run"},
    "hexapod": {"walk": "tripod", "tripod": "tripod", "wave": "wave"},
    "spider": {"walk": "tripod", "tripod": "tripod", "wave": "wave"},
}

ACTIONS_BY_FAMILY: dict[str, tuple[str, ...]] = {
    "quadruped": ("walk", "trot", "pace", "canter", "gallop", "rotary_gallop", "bound", "pronk", "turn",
                  "idle", "sit", "lie_down", "stand_up", "rear_up", "jump", "look_around", "sniff", "shake",
                  "wag_tail"),
    "dragon": ("walk", "trot", "canter", "gallop", "bound", "turn", "idle", "sit", "lie_down", "stand_up",
               "rear_up", "jump", "look_around", "sniff", "shake", "wag_tail", "flap", "glide"),
    "biped": ("walk", "run", "turn", "idle", "jump", "crouch", "wave"),
    "bird": ("walk", "run", "hop", "turn", "idle", "peck", "flap", "glide"),
    "hexapod": ("walk", "tripod", "wave", "turn", "idle"),
    "spider": ("walk", "tripod", "wave", "turn", "idle"),
    "serpent": ("slither", "sidewind", "coil", "idle"),
    "fish": ("swim", "turn", "idle"),
}



class ControllerError(ValueError):
    """An action a creature cannot perform; the message is user-facing."""


@dataclass
class GeneratedClip:
    motion: Motion
    action: str
    segments: list[dict]
    speed: float  # requested mean ground speed (m/s; 0 for in-place actions)
    direction: str
    contacts: np.ndarray  # (T, legs) planted feet, legs in creature.legs() order
    metadata: dict = field(default_factory=dict)


# ----------------------------------------------------------------------------- small helpers
about = quat_about  # rotations by angles about one fixed axis (used everywhere below)


def euler_q(pitch: np.ndarray, roll: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Body-frame rotation: yaw (about up) · pitch (about lateral) · roll (about the long axis)."""
    return quat_multiply(about(Z_AXIS, yaw), quat_multiply(about(X_AXIS, pitch), about(Y_AXIS, roll)))


def smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def envelope(t: np.ndarray, up0: float, up1: float, down0: float = np.inf,
             down1: float = np.inf) -> np.ndarray:
    """0 → 1 between up0 and up1, back to 0 between down0 and down1 (exact 0 and 1 outside)."""
    rise = smoothstep((t - up0) / max(up1 - up0, 1e-9))
    if np.isinf(down0):
        return rise
    return rise * (1.0 - smoothstep((t - down0) / max(down1 - down0, 1e-9)))


def _running(values: np.ndarray, half: int, fn: Callable) -> np.ndarray:
    if half <= 0:
        return values.copy()
    pad = np.pad(values, (half, half), mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(pad, 2 * half + 1)
    return fn(windows, axis=-1)


def smooth_upper(values: np.ndarray, half: int) -> np.ndarray:
    """A smooth curve that is ≥ values everywhere (running max, then a moving average)."""
    return _running(_running(values, half, np.max), half, np.mean)


def smooth_lower(values: np.ndarray, half: int) -> np.ndarray:
    """A smooth curve that is ≤ values everywhere (running min, then a moving average)."""
    return _running(_running(values, half, np.min), half, np.mean)


def heading_forward(heading: np.ndarray) -> np.ndarray:
    """World forward direction (…,3) for a heading angle (0 = facing −Y, positive turns left)."""
    return np.stack([np.sin(heading), -np.cos(heading), np.zeros_like(heading)], axis=-1)


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
                   fold: np.ndarray) -> np.ndarray:
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
            self.set(leg.chain[-1], about(Z_AXIS, yaw[:, i]))
            reached[:, i] = result.reached
        return reached

    def motion(self, root: np.ndarray, fps: float) -> Motion:
        self.inherit()
        return motion_from_world_deltas(self.rig, self.deltas, root, fps)


def solve_clip(creature: Creature, pose: BodyPose, targets: np.ndarray, yaw: np.ndarray,
               fold: np.ndarray, contacts: np.ndarray, fps: float,
               extra: Callable[[Poser], None] | None = None, lower: bool = True,
               planted: np.ndarray | None = None) -> tuple[Motion, dict]:
    """Body pose + foot targets → Motion, dropping the body where a foot in `contacts` is out of reach.

    info["unreached_planted"] counts frames × legs of `planted` (default: contacts) whose target was
    not met (a swing foot lifted closer to its hip than the leg folds is met as near as it goes)."""
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
    reached = poser.solve_legs(rel, root, targets, yaw, fold) if poser.legs else np.ones((frames, 0), bool)
    motion = poser.motion(root, fps)
    info = {"body_drop_max": float(drop.max()) if drop.size else 0.0,
            "unreached_planted": int(np.sum(~reached & (contacts if planted is None else planted)))}
    return motion, info


# ----------------------------------------------------------------------------- paths and speed profiles
@dataclass
class Profile:
    """Time grid (with padding before and after the clip) and everything that varies along the path."""

    times: np.ndarray  # (N,) seconds; clip frames are [pad, pad + frames)
    pad: int
    frames: int
    fps: float
    speed: np.ndarray  # (N,) ground speed along the travel direction
    turn: np.ndarray  # (N,) heading rate, rad/s (positive turns left)
    heading: np.ndarray  # (N,) facing angle (0 = −Y)
    position: np.ndarray  # (N,2) pelvis ground track
    weights: np.ndarray  # (N,K) blend weight of each segment
    track: np.ndarray | None = None  # (N,2) ground track of the pivot the body turns about
    sign: float = 1.0  # −1 when travelling backwards

    def turn_centre(self, t: float) -> np.ndarray | None:
        """(2,) the point the body is turning about at time t, None on a (nearly) straight path."""
        k = int(np.clip(round((t - self.times[0]) * self.fps), 0, len(self.times) - 1))
        w, v = self.turn[k], self.sign * self.speed[k]
        if abs(w) < 1e-9:
            return None
        track = self.position if self.track is None else self.track
        left = np.array([np.cos(self.heading[k]), np.sin(self.heading[k])])
        return track[k] + (v / w) * left

    def at(self, t: float) -> tuple[np.ndarray, float]:
        """Ground position and heading at any time (linear between grid samples, clamped)."""
        x = np.clip((t - self.times[0]) * self.fps, 0.0, len(self.times) - 1.0)
        lo = min(int(np.floor(x)), len(self.times) - 2)
        w = x - lo
        pos = (1 - w) * self.position[lo] + w * self.position[lo + 1]
        return pos, float((1 - w) * self.heading[lo] + w * self.heading[lo + 1])

    def clip(self, values: np.ndarray) -> np.ndarray:
        return values[self.pad:self.pad + self.frames]


def segment_weights(times: np.ndarray, durations: list[float], ramp: float) -> np.ndarray:
    """(N,K) smooth partition of unity: segment k holds between its boundaries, cross-fading over `ramp`."""
    bounds = np.cumsum(durations)[:-1]
    rises = [np.ones_like(times)] + [smoothstep((times - b + 0.5 * ramp) / ramp) for b in bounds]
    rises.append(np.zeros_like(times))
    return np.stack([rises[k] - rises[k + 1] for k in range(len(durations))], axis=-1)


def build_path(times: np.ndarray, pad: int, frames: int, fps: float, speeds: np.ndarray, weights: np.ndarray,
               turns: np.ndarray, sign: float, start: np.ndarray, pivot: np.ndarray | None = None) -> Profile:
    """Integrate heading and ground position; the clip's first frame sits at `start`, heading 0.

    The path is that of `pivot` (rest position; default `start`, the pelvis): the pelvis track is
    the pivot's track plus the pelvis's rest offset from it, turned with the heading.
    """
    speed = weights @ speeds
    turn = weights @ turns
    dt = 1.0 / fps
    heading = np.concatenate([[0.0], np.cumsum(0.5 * (turn[1:] + turn[:-1]) * dt)])
    heading -= heading[pad]
    velocity = sign * speed[:, None] * heading_forward(heading)[:, :2]
    position = np.concatenate([[[0.0, 0.0]], np.cumsum(0.5 * (velocity[1:] + velocity[:-1]) * dt, axis=0)])
    if pivot is None:
        position += start[:2] - position[pad]
        track = position
    else:
        arm = start[:2] - pivot[:2]
        c, s = np.cos(heading), np.sin(heading)
        swung = np.stack([c * arm[0] - s * arm[1], s * arm[0] + c * arm[1]], axis=-1)
        track = position + pivot[:2] - position[pad]
        position = track + swung
    return Profile(times, pad, frames, fps, speed, turn, heading, position, weights, track, sign)


# ----------------------------------------------------------------------------- gaits
def _leg_ranks(legs: list[LegRig]) -> tuple[list[int], int]:
    """Rank of each leg from the rear on its side (0 = hindmost) and the most legs on one side."""
    ranks = [0] * len(legs)
    most = 1
    for side in {leg.limb.side for leg in legs}:
        members = [i for i, leg in enumerate(legs) if leg.limb.side == side]
        members.sort(key=lambda i: -legs[i].foot_rest[1])  # +Y is the rear
        for r, i in enumerate(members):
            ranks[i] = r
        most = max(most, len(members))
    return ranks, most


def phase_offsets(pattern: str, legs: list[LegRig]) -> np.ndarray:
    """Touchdown phase (fraction of a cycle) of each leg for a footfall pattern."""
    ranks, most = _leg_ranks(legs)
    out = np.zeros(len(legs))
    for i, leg in enumerate(legs):
        right = leg.limb.side != LEFT
        r = ranks[i]
        front = r >= most / 2 if most > 1 else False
        if pattern in ("lateral", "wave"):
            out[i] = 0.5 * right + r / (2 * most)
        elif pattern in ("trot", "tripod", "alternate"):
            out[i] = 0.5 * ((r + right) % 2)
        elif pattern == "pace":
            out[i] = 0.5 * right
        elif pattern == "canter" and most == 2:
            table = {(True, False): 0.0, (False, False): 0.3, (True, True): 0.3, (False, True): 0.6}
            out[i] = table[(right, front)]
        elif pattern in ("transverse", "rotary") and most == 2:
            lead = 0.1 * right if not front else 0.5 + 0.1 * (right if pattern == "transverse" else not right)
            out[i] = lead
        elif pattern == "bound":
            out[i] = 0.5 * front
        elif pattern == "pronk":
            out[i] = 0.0
        else:
            out[i] = 0.5 * ((r + right) % 2)
    return out


# Directions (evenly spaced about up) in which a foot's reach from its stance centre is sampled.
REACH_DIRECTIONS = 16
# A foot's stance centre moves at most this fraction of its leg's length from its rest point.
STANCE_SHIFT = 0.12
_REACH_STEPS = 32  # samples along each direction, up to 1.5 × the leg's length, then refined


@dataclass
class LegReach:
    """Where each foot can be planted: its stance centre and how far it may go from it.

    Measured with the solver itself (`Poser.leg_ends`: proximal segments aiming at the foot, distal
    ones leaning with the leg) on the rest body lowered by `crouch`, so a gait planned within these
    radii needs no more body drop than that.
    """

    neutral: np.ndarray  # (L,3) stance centre of each foot: its rest point shifted fore–aft (y)
    radius: np.ndarray  # (L,D) reach (m) from the centre towards angle 2πk/D (0 = +X, π/2 = +Y)
    crouch: float  # body drop (m) the radii count on

    def half_sweep(self, direction: np.ndarray) -> np.ndarray:
        """(L,) half the straight stance each foot can sweep through its centre along (L,2) directions."""
        count = self.radius.shape[1]
        angle = np.arctan2(direction[:, 1], direction[:, 0])
        out = []
        for turn in (0.0, np.pi):  # a stance runs both ways from the centre
            x = ((angle + turn) % (2 * np.pi)) / (2 * np.pi) * count
            k0 = np.floor(x).astype(int) % count
            rows = np.arange(len(self.radius))
            # The smaller sampled neighbour: never promise more than was measured.
            out.append(np.minimum(self.radius[rows, k0], self.radius[rows, (k0 + 1) % count]))
        return np.minimum(out[0], out[1])

    def frequency(self, velocity: np.ndarray, duty: float) -> float:
        """Least stride frequency at which every foot's stance (duration duty/f) fits its reach, for
        (L,2) ground velocities of the feet's stance centres relative to the body (body frame)."""
        speed = np.linalg.norm(velocity, axis=1)
        if not np.any(speed > 0):
            return 0.0
        half = np.maximum(self.half_sweep(np.where(speed[:, None] > 0, velocity, [[0.0, 1.0]])), 1e-12)
        return float(np.max(speed * duty / (2.0 * half)))


def _reachable(creature: Creature, legs: list[LegRig], offsets: np.ndarray, drop: float) -> np.ndarray:
    """(M,L): can each leg put its foot at foot_rest + offsets[m, leg] with the rest body lowered by drop?"""
    m = offsets.shape[0]
    poser = Poser(creature, m)
    pelvis = creature.rig.heads[creature.pelvis]
    pose = BodyPose(np.repeat((pelvis - drop * Z_AXIS)[None], m, axis=0), quat_identity((m,)))
    poser.apply_body(pose)
    poser.inherit()
    rel = poser.relative_positions()
    root = poser.root_for(pose.root, rel)
    feet = np.array([leg.foot_rest for leg in legs])[None] + offsets
    zeros = np.zeros((m, len(legs)))
    starts, ends, _ = poser.leg_ends(rel, root, feet, zeros, zeros)
    ok = np.zeros((m, len(legs)), dtype=bool)
    for i, leg in enumerate(legs):
        lo, hi = leg.reach
        d = np.linalg.norm(starts[i] - ends[i], axis=-1)
        ok[:, i] = (d <= hi) & (d >= lo)
    return ok


def _reach_along(creature: Creature, legs: list[LegRig], centre: np.ndarray, directions: np.ndarray,
                 drop: float) -> np.ndarray:
    """(L,D) farthest distance from `centre` (L,3 offsets from the rest feet) along each of (D,2)
    directions up to which every sample is reachable."""
    scale = np.array([1.5 * np.sum(np.linalg.norm(leg.vectors, axis=1)) for leg in legs])
    steps = np.linspace(0.0, 1.0, _REACH_STEPS + 1)
    dirs3 = np.concatenate([directions, np.zeros((len(directions), 1))], axis=1)

    def test(fractions: np.ndarray) -> np.ndarray:  # (S,D,L) fractions of scale → (S,D,L) reachable
        offsets = centre[None, None] + (fractions * scale)[..., None] * dirs3[None, :, None, :]
        shape = offsets.shape[:3]
        return _reachable(creature, legs, offsets.reshape(-1, len(legs), 3), drop).reshape(shape)

    grid = np.broadcast_to(steps[:, None, None], (len(steps), len(directions), len(legs)))
    ok = test(grid)
    first_bad = np.where(ok.all(axis=0), len(steps) - 1, np.argmin(ok, axis=0))  # (D,L)
    lo = np.where(first_bad > 0, steps[np.maximum(first_bad - 1, 0)], 0.0)
    hi = np.where(ok.all(axis=0), 1.0, steps[first_bad])
    lo = np.where(ok[0], lo, 0.0)
    hi = np.where(ok[0], hi, 0.0)
    # Refine between the last reachable sample and the first one out of reach (one more batch).
    sub = np.linspace(0.0, 1.0, _REACH_STEPS + 1)[1:-1]
    fine = test(lo[None] + sub[:, None, None] * (hi - lo)[None])
    count = np.where(fine.all(axis=0), len(sub), np.argmin(fine, axis=0))
    lo = lo + np.where(count > 0, sub[np.maximum(count - 1, 0)], 0.0) * (hi - lo)
    return (lo * scale[None]).T


_REACH_CACHE: dict[tuple[int, float], tuple[weakref.ref, LegReach]] = {}


def leg_reach(creature: Creature, legs: list[LegRig] | None = None, crouch: float = CROUCH) -> LegReach:
    """Stance centres and reach radii of the legs (see `LegReach`), the body lowered by crouch·L.

    Cached per creature object (a library build makes many clips of one creature)."""
    key = (id(creature), crouch)
    hit = _REACH_CACHE.get(key)
    if hit is not None and hit[0]() is creature:
        return hit[1]
    reach = _leg_reach(creature, legs if legs is not None else leg_rigs(creature), crouch)
    if len(_REACH_CACHE) > 256:
        _REACH_CACHE.clear()
    _REACH_CACHE[key] = (weakref.ref(creature), reach)
    return reach


def _leg_reach(creature: Creature, legs: list[LegRig], crouch: float) -> LegReach:
    drop = crouch * max(creature.leg_length, 1e-3)
    zero = np.zeros((len(legs), 3))
    # Fore–aft first: centre each foot's stance in what it can reach forwards and backwards (at the
    # default crouch, so that every gait of a creature shares its stance centres).
    ahead, behind = _reach_along(creature, legs, zero, np.array([[0.0, -1.0], [0.0, 1.0]]),
                                 CROUCH * max(creature.leg_length, 1e-3)).T
    centre = zero.copy()
    # ... but not far from where the rig stands: sprawled legs would bunch up under the body.
    most = STANCE_SHIFT * np.array([np.sum(np.linalg.norm(leg.vectors, axis=1)) for leg in legs])
    centre[:, 1] = np.clip(0.5 * (behind - ahead), -most, most)
    angles = 2 * np.pi * np.arange(REACH_DIRECTIONS) / REACH_DIRECTIONS
    directions = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    radius = _reach_along(creature, legs, centre, directions, drop)
    neutral = np.array([leg.foot_rest for leg in legs]) + centre
    return LegReach(neutral, radius, drop)


def max_sweep(creature: Creature, legs: list[LegRig], crouch: float = CROUCH) -> float:
    """Longest straight fore–aft stance sweep (m) every leg can cover with at most crouch·L body drop."""
    reach = leg_reach(creature, legs, crouch)
    return float(2.0 * np.min(reach.half_sweep(np.tile([[0.0, 1.0]], (len(legs), 1)))))


def stride_frequency(gait: Gait, speed: float, leg: float) -> float:
    """Cycles per second from Alexander's relative stride length λ = 2.3·Fr^0.3 (scaled per gait)."""
    default = np.sqrt(gait.froude * GRAVITY * leg)
    froude = max(speed, 0.25 * default) ** 2 / (GRAVITY * leg)
    stride = 2.3 * froude**0.3 * gait.stride_scale * leg
    return max(speed, 0.25 * default) / stride


# Share of the swing's fore–aft travel that follows an ease-in/ease-out curve; the rest is linear,
# so a foot leaves its footprint at once (a pure ease held it near the ground and near its old
# footprint, i.e. in effect planted, for the first and last ~10% of the swing).
SWING_EASE = 0.4


# Swing height peaks early (at 0.5^(1/SWING_RISE) of the swing): feet snap up at lift-off and reach
# forward to a softer touchdown, instead of grazing the ground at both ends of a symmetric arc.
SWING_RISE = 0.6


def swing_profile(s: np.ndarray | float) -> np.ndarray | float:
    """Fraction of the way from lift-off to touchdown at swing progress s ∈ [0, 1]."""
    return (1.0 - SWING_EASE) * np.clip(s, 0.0, 1.0) + SWING_EASE * smoothstep(s)


def swing_height(s: np.ndarray | float) -> np.ndarray | float:
    """Foot height over the swing, as a fraction of the gait's lift (0 at both ends, 1 at the top)."""
    return np.sin(np.pi * np.clip(s, 0.0, 1.0) ** SWING_RISE)


def swing_point(src: np.ndarray, dst: np.ndarray, centre: np.ndarray | None, h: float) -> np.ndarray:
    """Foot position a fraction h of the way from src to dst (3,): along the arc about the point the
    body turns about (radius and angle blended), so a swing keeps up with a turning body instead of
    cutting the chord inside it; a straight line on a straight path."""
    out = src + (dst - src) * h
    if centre is None:
        return out
    a, b = src[:2] - centre, dst[:2] - centre
    ra, rb = np.hypot(*a), np.hypot(*b)
    if min(ra, rb) < 1e-12:
        return out
    sweep = (np.arctan2(b[1], b[0]) - np.arctan2(a[1], a[0]) + np.pi) % (2 * np.pi) - np.pi
    if abs(sweep) < 1e-6:
        return out
    angle = np.arctan2(a[1], a[0]) + sweep * h
    out[:2] = centre + (ra + (rb - ra) * h) * np.array([np.cos(angle), np.sin(angle)])
    return out


@dataclass
class FootPlan:
    targets: np.ndarray  # (N,L,3)
    yaw: np.ndarray  # (N,L)
    contacts: np.ndarray  # (N,L)
    fold: np.ndarray  # (N,L) distal flexion during swing


def plan_feet(profile: Profile, legs: list[LegRig], neutral: np.ndarray, pelvis_rest: np.ndarray,
              phase: np.ndarray, offsets: np.ndarray, duty: np.ndarray, lift: np.ndarray, freq: np.ndarray,
              moving: np.ndarray, girdle_shift: np.ndarray | None = None) -> FootPlan:
    """Contact schedule and foot targets: one constant point per stance, an arc per swing.

    A foot lands where its stance centre (`neutral`, body frame at rest, moved by `girdle_shift`
    (N,L,2) where the spine bends) will be at mid-stance (predicted from the path), so stance is
    centred in what the leg can reach. Once the creature has stopped for good, feet in stance stay
    down and feet in swing finish their step and stay down.
    """
    n, count = len(profile.times), len(legs)
    targets = np.zeros((n, count, 3))
    yaw = np.zeros((n, count))
    contacts = np.zeros((n, count), dtype=bool)
    fold = np.zeros((n, count))
    settled = np.flip(np.logical_and.accumulate(np.flip(~moving)))

    def placement(i: int, t: float) -> tuple[np.ndarray, float]:
        pos, head = profile.at(t)
        rel = neutral[i] - pelvis_rest
        if girdle_shift is not None:
            x = np.clip((t - profile.times[0]) * profile.fps, 0.0, n - 1.0)
            lo = min(int(np.floor(x)), n - 2)
            rel = rel.copy()
            rel[:2] += (1 - (x - lo)) * girdle_shift[lo, i] + (x - lo) * girdle_shift[lo + 1, i]
        c, s = np.cos(head), np.sin(head)
        return np.array([pos[0] + c * rel[0] - s * rel[1], pos[1] + s * rel[0] + c * rel[1],
                         legs[i].foot_rest[2]]), head

    for i in range(count):
        u = phase - offsets[:, i]
        t0 = profile.times[0]
        plant, plant_yaw = placement(i, t0)
        stance, u_down = True, np.floor(u[0])
        src = dst = plant
        src_yaw = dst_yaw = plant_yaw
        centre = None
        u_up = u_land = 0.0
        for k in range(n):
            t, f = profile.times[k], freq[k]
            if stance and u[k] - u_down >= duty[k] and not settled[k]:
                stance = False
                # The swing began at phase u_down + duty, between two frames: a frame later the foot
                # is already on its way (starting it at u[k] held it down one frame too long).
                src, src_yaw, u_up = plant, plant_yaw, min(u_down + duty[k], u[k])
                u_land = np.floor(u[k]) + 1.0
                t_land = t + (u_land - u[k]) / f
                dst, dst_yaw = placement(i, t_land + 0.5 * duty[k] / f)
                centre = profile.turn_centre(0.5 * (t + t_land))
            if not stance and u[k] >= u_land:
                stance, plant, plant_yaw, u_down = True, dst, dst_yaw, u_land
            if stance:
                targets[k, i], yaw[k, i], contacts[k, i] = plant, plant_yaw, True
            else:
                s = float(np.clip((u[k] - u_up) / max(u_land - u_up, 1e-9), 0.0, 1.0))
                h = swing_profile(s)
                targets[k, i] = swing_point(src, dst, centre, h)
                targets[k, i, 2] = legs[i].foot_rest[2] + lift[k] * swing_height(s)
                yaw[k, i] = src_yaw + (dst_yaw - src_yaw) * h
                fold[k, i] = 0.4 * np.sin(np.pi * s)
    return FootPlan(targets, yaw, contacts, fold)


def spine_turn_bend(turn: np.ndarray) -> np.ndarray:
    """Total yaw bend (rad) of the spine into a turn of `turn` rad/s."""
    return np.clip(0.25 * turn, -0.5, 0.5)


def girdle_shifts(creature: Creature, legs: list[LegRig], bend: np.ndarray) -> np.ndarray | None:
    """(N,L,2) how far (body frame) each leg's girdle joint moves when the spine yaws by bend (N,)
    in total: the feet of a bent body are planted under its bent girdles, not the rest ones."""
    if not creature.spine or not np.any(bend):
        return None
    grid = np.linspace(-0.5, 0.5, 21)
    poser = Poser(creature, len(grid))
    pelvis = creature.rig.heads[creature.pelvis]
    spine = _chain_bends(len(grid), len(creature.spine))
    spine[:, :, 2] = (grid / len(creature.spine))[:, None]
    poser.apply_body(BodyPose(np.repeat(pelvis[None], len(grid), axis=0), quat_identity((len(grid),)),
                              spine=spine))
    poser.inherit()
    girdles = [leg.chain[0] for leg in legs]
    at = poser.relative_positions()[:, girdles, :2]
    moved = at - at[len(grid) // 2][None]  # relative to the straight spine (grid[10] = 0)
    out = np.zeros((len(bend), len(legs), 2))
    for i in range(len(legs)):
        for axis in range(2):
            out[:, i, axis] = np.interp(bend, grid, moved[:, i, axis])
    return out


# ----------------------------------------------------------------------------- body secondary motion
def _chain_bends(frames: int, count: int) -> np.ndarray:
    return np.zeros((frames, count, 3))


def _tail_lift(creature: Creature) -> float:
    """Angle (rad) that raises a drooping rest tail to horizontal (0 when it already is)."""
    if not creature.tail:
        return 0.0
    rig = creature.rig
    base, tip = rig.heads[creature.tail[0]], rig.tails[creature.tail[-1]]
    back = tip - base
    return float(np.arctan2(-back[2], max(back[1], 1e-9))) if back[1] > 0 else 0.0


def _tail_clearance(creature: Creature, motion: Motion) -> np.ndarray | None:
    """(T,) extra lift (rad, about the tail base) keeping every tail joint above the ground, or None."""
    if not creature.tail:
        return None
    rig = creature.rig
    inside = np.zeros(rig.joint_count, dtype=bool)
    inside[creature.tail[0]] = True
    for j in rig.topological_order:
        if rig.parents[j] >= 0 and inside[rig.parents[j]]:
            inside[j] = True
    joints = np.flatnonzero(inside)
    joints = joints[joints != creature.tail[0]]
    if joints.size == 0:
        return None
    pos = forward_kinematics(rig, motion)[..., :3, 3]
    margin = np.minimum(0.02 * max(creature.leg_length, 1e-3), np.maximum(rig.heads[joints, 2], 0.0))
    deficit = margin[None] - pos[:, joints, 2]
    if not np.any(deficit > 1e-9 * rig.body_size):
        return None
    base = pos[:, creature.tail[0]]
    reach = np.maximum(np.linalg.norm(pos[:, joints] - base[:, None], axis=-1), 1e-9)
    angle = np.arcsin(np.clip(np.maximum(deficit, 0.0) / reach, 0.0, 1.0))
    return 1.2 * angle.max(axis=1)


def _arm_limbs(creature: Creature) -> list[Limb]:
    return [limb for limb in creature.limbs if limb.kind == "arm" and limb.foot < 0]


def _arm_start(limb: Limb) -> int:
    """Index of the upper arm in an arm chain (skipping a clavicle when there is one)."""
    return 1 if len(limb.joints) >= 4 else 0


def pose_arms(poser: Poser, swing: dict[int, np.ndarray], raise_dir: dict[int, np.ndarray] | None = None,
              raise_weight: np.ndarray | None = None) -> None:
    """Arms hang at the sides and swing fore–aft; an arm in `raise_dir` is lifted towards that direction."""
    rig = poser.rig
    frames = poser.frames
    for n, limb in enumerate(_arm_limbs(poser.creature)):
        k0 = _arm_start(limb)
        if k0 + 1 >= len(limb.joints):
            continue
        upper, lower = limb.joints[k0], limb.joints[k0 + 1]
        parent_q = poser.get(int(rig.parents[upper]))
        rest_dir = rig.heads[lower] - rig.heads[upper]
        hang = np.array([0.15 * limb.side, 0.0, -1.0])
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
            bent = quat_rotate(about(X_AXIS, np.full(frames, -0.35)), body_dir)
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


# ----------------------------------------------------------------------------- segments
def normalise_segments(segments: list | None, action: str, frames: int | None, fps: float,
                       speed: float | None) -> list[dict]:
    """Segments as dicts {gait, duration (s), speed (m/s or None)}; tuples (gait, duration[, speed]) too."""
    if not segments:
        duration = (frames if frames is not None else 72) / fps
        return [{"gait": action, "duration": duration, "speed": speed}]
    out = []
    for seg in segments:
        if isinstance(seg, dict):
            out.append({"gait": seg["gait"], "duration": float(seg["duration"]), "speed": seg.get("speed")})
        else:
            out.append({"gait": seg[0], "duration": float(seg[1]), "speed": seg[2] if len(seg) > 2 else None})
    if frames is not None:
        scale = (frames / fps) / sum(s["duration"] for s in out)
        for s in out:
            s["duration"] *= scale
    return out


def _gait_for(family: str, name: str) -> Gait:
    table = _FAMILY_GAITS.get(family, {})
    if name not in table:
        raise ControllerError(f"A {family} has no gait '{name}' (known: {', '.join(sorted(table))}).")
    return GAITS[table[name]]


def _wrap(x: np.ndarray) -> np.ndarray:
    return (x + 0.5) % 1.0 - 0.5


# ----------------------------------------------------------------------------- legged locomotion
def _largest(ok: Callable[[float], bool], hi: float, iterations: int = 24) -> float:
    """Largest x in [0, hi] with ok(x), for ok true at 0 and monotone (bisection)."""
    if ok(hi):
        return hi
    lo = 0.0
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def locomotion(creature: Creature, segments: list[dict], fps: float, rng: np.random.Generator,
               direction: str, turn_rate: float | None, stride_mult: float = 1.0) -> GeneratedClip:
    """Any number of legs: gait phases, planted feet, swing arcs, body bob, IK legs.

    turn_rate: heading rate (rad/s) honoured as given; None takes the direction's default ("left" /
    "right": a turn of radius ~2 leg lengths, "circle": a full circle over the clip), bounded by
    what the legs can reach.
    """
    legs = leg_rigs(creature)
    if not legs:
        raise ControllerError(f"This {creature.family} has no legs to walk on.")
    leg_len = max(creature.leg_length, 1e-3)
    family = creature.family
    frames = int(round(sum(s["duration"] for s in segments) * fps))
    duration = frames / fps
    reach = leg_reach(creature, legs)
    pelvis_rest = creature.rig.heads[creature.pelvis].copy()
    # The body turns about the centre of its feet (not the pelvis: a cow's hips sit far behind its
    # fore feet), so no foot swings round a long lever arm; its stance centres are the feet's.
    pivot = reach.neutral.mean(axis=0)
    arms = (reach.neutral - pivot)[:, :2]
    sign = -1.0 if direction == "backward" else 1.0
    f_hard = fps / HARD_CYCLE_FRAMES

    def needed(v: float, w: float, gait: Gait) -> float:
        """Least stride frequency at which every foot's stance fits its reach (see LegReach)."""
        velocity = np.stack([-w * arms[:, 1], w * arms[:, 0]], axis=1)
        velocity[:, 1] -= sign * v  # forward is −Y
        return leg_reach(creature, legs, gait.crouch).frequency(velocity, gait.duty)

    gaits, speeds, freqs, turns = [], [], [], []
    variation = rng.uniform(0.92, 1.08)
    for k, seg in enumerate(segments):
        stop = seg["gait"] in ("stop", "stand")
        if stop and k == 0:
            raise ControllerError("A clip cannot start with a stop segment.")
        gait = gaits[-1] if stop else _gait_for(family, seg["gait"])
        if stop:
            seg["speed"] = 0.0
            gaits.append(gait)
            speeds.append(0.0)
            freqs.append(freqs[-1])
            turns.append(0.0)
            continue
        default_speed = seg["speed"] is None
        f_cap = fps / max(MIN_CYCLE_FRAMES, MIN_SWING_FRAMES / max(1.0 - gait.duty, 1e-3))
        if default_speed:
            v = variation * np.sqrt(gait.froude * GRAVITY * leg_len)
            # Default speeds stay what the legs can sweep at a cycle rate the frame rate can show.
            v = min(v, variation * f_cap / max(needed(1.0, 0.0, gait), 1e-12))
        else:
            v = float(seg["speed"])

        def base(v: float, gait: Gait = gait, f_cap: float = f_cap) -> float:
            # Alexander's stride, or shorter where the legs cannot reach that far (tiny legs give
            # frequencies above what the frame rate can show: capped there).
            return max(min(stride_frequency(gait, v, leg_len), f_cap), needed(v, 0.0, gait))

        if turn_rate is not None:
            w = float(turn_rate)
        else:
            w = _default_turn(direction, 0.0, duration, v, leg_len)
        if w and turn_rate is None:
            # A turn may shorten the stride a little (the outer and far feet sweep further than on a
            # straight path); beyond that a default turn is taken more slowly: on the same radius
            # (left/right; the feet's speeds scale with it) or, for a circle, at the same turn rate.
            # With an explicit speed a left/right turn is made wider instead. Explicit turn rates
            # are kept.
            allowed = min(f_cap, TURN_STRIDE * base(v))
            if default_speed and direction != "circle" and needed(v, w, gait) > allowed:
                scale = allowed / needed(v, w, gait)
                v, w = v * scale, w * scale
            if direction == "circle" and default_speed:
                # ... but at no less than half speed where quicker strides (up to the frame-rate
                # limit) allow it: a circle is walked, not turned on the spot.
                allowed = max(allowed, min(f_cap, needed(0.5 * v, w, gait)))
                v = _largest(lambda x, w=w, g=gait, allowed=allowed: needed(x, w, g) <= allowed, v)
            if needed(v, w, gait) > allowed:
                side = np.sign(w)
                w = side * _largest(lambda x, v=v, side=side, g=gait, allowed=allowed:
                                    needed(v, side * x, g) <= allowed, abs(w))
        seg["speed"] = v
        f = min(max(base(v), needed(v, w, gait)) * stride_mult, max(f_hard, base(v)))
        gaits.append(gait)
        speeds.append(v)
        freqs.append(f)
        turns.append(w)
    f_min = min(freqs)
    pad = int(np.ceil(1.6 / f_min * fps))
    post = int(np.ceil(1.2 / f_min * fps))
    n = pad + frames + post
    times = (np.arange(n) - pad) / fps
    durations = [s["duration"] for s in segments]
    ramp = min(0.5, 0.6 * min(durations))
    weights = segment_weights(times, durations, ramp)
    profile = build_path(times, pad, frames, fps, np.array(speeds), weights, np.array(turns), sign,
                         pelvis_rest, pivot)

    # Blend gait parameters across segments; phase offsets blend along the shortest way round.
    stop_mask = np.array([s["gait"] in ("stop", "stand") for s in segments], dtype=float)
    amp = rng.uniform(0.85, 1.15)
    duty = weights @ np.array([g.duty for g in gaits])
    lift = weights @ np.array([g.lift * leg_len * rng.uniform(0.9, 1.1) for g in gaits])
    freq = weights @ np.array(freqs)
    rises = np.cumsum(weights[:, ::-1], axis=1)[:, ::-1]
    offs = [phase_offsets(g.pattern, legs) for g in gaits]
    offsets = np.repeat(offs[0][None], n, axis=0)
    for k in range(1, len(gaits)):
        offsets = offsets + rises[:, k:k + 1] * _wrap(offs[k] - offs[k - 1])[None]
    phase = rng.uniform(0.0, 1.0) + np.concatenate([[0.0], np.cumsum(0.5 * (freq[1:] + freq[:-1]) / fps)])
    moving = (np.abs(profile.speed) > 1e-9) | (np.abs(profile.turn) > 1e-9)
    plan = plan_feet(profile, legs, reach.neutral, pelvis_rest, phase, offsets, duty, lift, freq, moving,
                     girdle_shifts(creature, legs, spine_turn_bend(profile.turn)))

    # Body: bob, pitch and sway per gait (none while stopped), heading from the path.
    live = weights * (1.0 - stop_mask)[None]
    cycle = 2 * np.pi * phase
    bob = sum(live[:, k] * g.bob * leg_len * amp * np.cos(g.bobs_per_cycle * cycle)
              for k, g in enumerate(gaits))
    pitch = -sum(live[:, k] * g.pitch * amp * np.sin(cycle) for k, g in enumerate(gaits))
    sway = sum(live[:, k] * g.sway * leg_len * amp * np.sin(cycle) for k, g in enumerate(gaits))
    heading = profile.heading
    lateral = np.stack([np.cos(heading), np.sin(heading), np.zeros(n)], axis=-1)
    root = np.concatenate([profile.position, np.full((n, 1), pelvis_rest[2])], axis=1)
    root = root + lateral * sway[:, None] + Z_AXIS * bob[:, None]
    body = quat_multiply(about(Z_AXIS, heading), quat_multiply(about(X_AXIS, pitch), about(Y_AXIS, -2 * sway
                                                                                           / leg_len)))
    clip = profile.clip
    frames_t = clip(times)
    pose = BodyPose(clip(root), clip(body))
    activity = clip(1.0 - weights @ stop_mask)
    turn_clip = clip(profile.turn)
    if creature.spine:
        bends = _chain_bends(frames, len(creature.spine))
        bends[:, :, 2] = (spine_turn_bend(turn_clip) / len(creature.spine))[:, None]
        bends[:, :, 0] = -clip(pitch)[:, None] / len(creature.spine)
        pose.spine = bends
    neck = creature.neck + ([creature.head] if creature.head >= 0 else [])
    if neck:
        bends = _chain_bends(frames, len(neck))
        # Nods with the bob: twice a cycle, or once (head down as the fore feet land: with the pitch).
        nod = sum(live[:, k] * g.nod * (np.sin(2 * cycle) if g.bobs_per_cycle == 2 else -np.sin(cycle))
                  for k, g in enumerate(gaits))
        bends[:, :, 0] = (amp * clip(nod))[:, None] / len(neck)
        bends[:, :, 2] = (np.clip(0.2 * turn_clip, -0.4, 0.4) / len(neck))[:, None]
        pose.neck = bends
    if creature.tail:
        bends = _chain_bends(frames, len(creature.tail))
        k = np.arange(len(creature.tail))
        bends[:, :, 2] = 0.12 * amp * np.sin(clip(cycle)[:, None] - 0.6 * k[None]) * (0.3 + activity[:, None])
        bends[:, 0, 0] = 0.3 * _tail_lift(creature)
        pose.tail = bends

    arms = _arm_limbs(creature)

    def extra(poser: Poser) -> None:
        swing = {}
        for n_arm, limb in enumerate(arms):
            same = [i for i, leg in enumerate(legs) if leg.limb.side == limb.side]
            offset = offsets[pad, same[0]] if same else 0.0
            swing[n_arm] = 0.35 * amp * activity * np.sin(clip(cycle) - 2 * np.pi * offset + np.pi)
        if arms:
            pose_arms(poser, swing)
        if creature.limbs_of("wing"):
            pose_wings(poser, np.full(frames, -0.1), np.full(frames, 0.0))

    contacts = clip(plan.contacts)
    # Swing feet count too for the body drop (a foot that cannot reach forward lowers the body).
    motion, info = solve_clip(creature, pose, clip(plan.targets), clip(plan.yaw), clip(plan.fold),
                              np.ones_like(contacts), fps, extra, planted=contacts)
    for _ in range(3):  # a long tail must not drag: lift it where the body pitches or drops
        lift_tail = _tail_clearance(creature, motion)
        if lift_tail is None:
            break
        pose.tail[:, 0, 0] += smooth_upper(lift_tail, max(1, int(round(0.08 * fps))))
        motion, info = solve_clip(creature, pose, clip(plan.targets), clip(plan.yaw), clip(plan.fold),
                                  np.ones_like(contacts), fps, extra, planted=contacts)
    info.update(heading=clip(heading).copy(), phase=clip(phase).copy(), times=frames_t,
                speed_profile=clip(profile.speed).copy(), foot_targets=clip(plan.targets).copy(),
                gaits=[g.name for g in gaits], stride_frequency=[float(f) for f in freqs])
    mean_speed = float(np.mean(clip(profile.speed)))
    return GeneratedClip(motion, segments[0]["gait"] if len(segments) == 1 else "transition", segments,
                         mean_speed, direction, contacts, info)


# ----------------------------------------------------------------------------- in-place actions
def _rest_feet(legs: list[LegRig], frames: int) -> np.ndarray:
    return np.repeat(np.array([leg.foot_rest for leg in legs]).reshape(1, -1, 3), frames, axis=0)


def limit_amplitude(creature: Creature, make_pose: Callable[[np.ndarray], BodyPose], wanted: np.ndarray,
                    planted: np.ndarray, fps: float, iterations: int = 10) -> np.ndarray:
    """Largest amplitude ≤ wanted (per frame) keeping planted legs in reach and the body above ground."""
    frames = wanted.shape[0]
    legs = leg_rigs(creature)
    feet = _rest_feet(legs, frames)
    zeros = np.zeros((frames, len(legs)))
    floor = np.minimum(creature.rig.heads[:, 2], 0.0)

    def feasible(a: np.ndarray) -> np.ndarray:
        pose = make_pose(a)
        poser = Poser(creature, frames)
        poser.apply_body(pose)
        poser.inherit()
        rel = poser.relative_positions()
        root = poser.root_for(pose.root, rel)
        starts, ends, _ = poser.leg_ends(rel, root, feet, zeros, zeros)
        ok = np.ones(frames, dtype=bool)
        for i, leg in enumerate(legs):
            if planted[i]:
                lo, hi = leg.reach
                d = np.linalg.norm(starts[i] - ends[i], axis=-1)
                ok &= (d <= hi) & (d >= lo)
        poser.solve_legs(rel, root, feet, zeros, zeros)
        poser.inherit()
        heights = poser.relative_positions()[..., 2] + root[:, None, 2]
        return ok & np.all(heights >= floor[None] - 1e-12, axis=1)

    if np.all(feasible(wanted)):
        return wanted
    lo, hi = np.zeros(frames), wanted.copy()
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        ok = feasible(mid)
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    half = max(1, int(round(0.1 * fps)))
    a = smooth_lower(lo, half)
    for _ in range(8):  # feasibility is not monotone everywhere: back off where smoothing broke it
        ok = feasible(a)
        if ok.all():
            break
        a = smooth_lower(np.where(ok, a, 0.8 * a), half)
    return a


def _pose_maker(creature: Creature, t: np.ndarray, spec: Callable[[np.ndarray, np.ndarray], dict]
                ) -> Callable[[np.ndarray], BodyPose]:
    """Wrap an action's pose function (t, amplitude) → dict of body terms into a BodyPose builder."""
    pelvis = creature.rig.heads[creature.pelvis]
    neck = creature.neck + ([creature.head] if creature.head >= 0 else [])
    frames = t.shape[0]

    def make(a: np.ndarray) -> BodyPose:
        terms = spec(t, a)
        shift = terms.get("shift", np.zeros((frames, 3)))
        pitch, roll, yaw = (terms.get(k, np.zeros(frames)) for k in ("pitch", "roll", "yaw"))
        pose = BodyPose(pelvis + shift, euler_q(pitch, roll, yaw))
        for name, chain in (("spine", creature.spine), ("neck", neck), ("tail", creature.tail)):
            if chain and name in terms:
                bends = np.zeros((frames, len(chain), 3))
                bends[:] = terms[name][:, None, :] / len(chain)
                if name + "_wave" in terms:
                    bends += terms[name + "_wave"](np.arange(len(chain)))
                setattr(pose, name, bends)
        if "jaw" in terms:
            pose.jaw = terms["jaw"]
        return pose

    return make


def _zeros3(frames: int) -> np.ndarray:
    return np.zeros((frames, 3))


def _vec(frames: int, pitch=0.0, roll=0.0, yaw=0.0) -> np.ndarray:
    out = np.zeros((frames, 3))
    out[:, 0], out[:, 1], out[:, 2] = pitch, roll, yaw
    return out


def action_terms(creature: Creature, action: str, duration: float, rng: np.random.Generator
                 ) -> tuple[Callable, Callable[[np.ndarray], np.ndarray], np.ndarray | None]:
    """(pose spec, wanted amplitude over time, which legs may leave the ground) for an in-place action."""
    leg_len = max(creature.leg_length, 0.05 * creature.rig.body_size)
    d = duration
    amp = rng.uniform(0.85, 1.1)
    phase = rng.uniform(0, 2 * np.pi)
    tail_up = _tail_lift(creature)
    legs = leg_rigs(creature)
    front = np.array([leg.limb.position == "front" for leg in legs], dtype=bool)

    def hold(t):
        return envelope(t, 0.05 * d, 0.5 * d)

    def breathe(t, a):
        return 0.006 * leg_len * np.sin(2 * np.pi * 0.4 * t + phase) * a

    if action == "idle":
        looks = rng.uniform(-0.35, 0.35, 3)

        def spec(t, a):
            yaw = np.interp(t, [0, 0.3 * d, 0.6 * d, d], [0, *looks]) * a
            shift = np.zeros((len(t), 3))
            shift[:, 2] = breathe(t, a)
            shift[:, 0] = 0.01 * leg_len * np.sin(2 * np.pi * 0.25 * t + phase) * a
            tail = _vec(len(t), 0.3 * tail_up, yaw=0.1 * np.sin(t + phase))
            return {"shift": shift, "neck": _vec(len(t), yaw=yaw), "tail": tail}
        return spec, lambda t: np.ones_like(t), None
    if action in ("sit", "lie_down", "stand_up"):
        depth = {"sit": 0.45, "lie_down": 0.85, "stand_up": 0.85}[action] * amp
        nose_up = 0.45 * amp if action == "sit" else 0.0

        def spec(t, a):
            shift = np.zeros((len(t), 3))
            shift[:, 2] = -depth * leg_len * a + breathe(t, 1.0)
            shift[:, 1] = 0.1 * leg_len * a if action == "sit" else 0.0
            return {"shift": shift, "pitch": -nose_up * a,
                    "neck": _vec(len(t), pitch=(0.6 * nose_up - 0.1) * a),
                    "tail": _vec(len(t), pitch=(nose_up + tail_up) * a), "spine": _vec(len(t), pitch=0.1 * a)}
        if action == "stand_up":
            return spec, lambda t: 1.0 - envelope(t, 0.2 * d, 0.75 * d), None
        return spec, lambda t: envelope(t, 0.1 * d, 0.7 * d), None
    if action == "crouch":
        def spec(t, a):
            shift = np.zeros((len(t), 3))
            shift[:, 2] = -0.4 * amp * leg_len * a
            return {"shift": shift, "pitch": 0.25 * a, "spine": _vec(len(t), pitch=0.15 * a),
                    "neck": _vec(len(t), pitch=-0.3 * a)}
        return spec, lambda t: envelope(t, 0.1 * d, 0.45 * d, 0.65 * d, 0.95 * d), None
    if action == "rear_up":
        def spec(t, a):
            shift = np.zeros((len(t), 3))
            shift[:, 2] = 0.05 * leg_len * a
            return {"shift": shift, "pitch": -0.8 * amp * a, "neck": _vec(len(t), pitch=0.5 * a),
                    "tail": _vec(len(t), pitch=(0.8 * amp + tail_up) * a),
                    "spine": _vec(len(t), pitch=-0.15 * a)}
        return spec, lambda t: envelope(t, 0.15 * d, 0.45 * d, 0.65 * d, 0.95 * d), front
    if action in ("look_around",):
        targets = rng.uniform(-1.0, 1.0, 3) * np.array([1, -1, 1])

        def spec(t, a):
            yaw = np.interp(t, [0, 0.2 * d, 0.45 * d, 0.7 * d, 0.9 * d, d], [0, targets[0], targets[0],
                                                                              targets[1], targets[2], 0])
            pitch = -0.15 * np.sin(2 * np.pi * t / d)
            return {"neck": _vec(len(t), pitch=pitch * a, yaw=yaw * a), "shift": np.c_[
                np.zeros(len(t)), np.zeros(len(t)), breathe(t, a)], "tail": _vec(len(t), tail_up * 0.3)}
        return spec, lambda t: np.ones_like(t), None
    if action in ("sniff", "peck"):
        rate = 3.0 if action == "sniff" else 2.0

        def spec(t, a):
            nod = 0.12 * np.sin(2 * np.pi * rate * t) if action == "sniff" else \
                0.5 * np.maximum(0, np.sin(2 * np.pi * rate * t)) ** 2
            shift = np.zeros((len(t), 3))
            shift[:, 2] = -0.05 * leg_len * a
            return {"shift": shift, "pitch": 0.1 * a, "neck": _vec(len(t), pitch=(1.1 * amp + nod) * a),
                    "tail": _vec(len(t), tail_up * 0.3, yaw=0.15 * np.sin(2 * t) * a)}
        return spec, lambda t: envelope(t, 0.1 * d, 0.35 * d, 0.75 * d, 0.95 * d), None
    if action == "shake":
        rate = rng.uniform(3.5, 4.5)

        def spec(t, a):
            wob = np.sin(2 * np.pi * rate * t)
            return {"roll": 0.3 * amp * a * wob, "spine": _vec(len(t), roll=0.3 * a * wob),
                    "neck": _vec(len(t), roll=0.4 * a * wob, yaw=0.3 * a * wob),
                    "tail": _vec(len(t), yaw=0.5 * a * wob)}
        return spec, lambda t: envelope(t, 0.1 * d, 0.25 * d, 0.7 * d, 0.9 * d), None
    if action == "wag_tail":
        rate = rng.uniform(2.5, 3.5)

        def spec(t, a):
            def wave(k):
                swing = 0.35 * amp * a[:, None] * np.sin(2 * np.pi * rate * t[:, None] - 0.7 * k[None])
                return swing[..., None] * np.array([0.0, 0.0, 1.0])
            return {"tail": _vec(len(t), pitch=tail_up + 0.3 * a), "tail_wave": wave,
                    "shift": np.c_[np.zeros(len(t)), np.zeros(len(t)), breathe(t, a)]}
        return spec, lambda t: envelope(t, 0.0, 0.2 * d), None
    if action in ("wave", "flap"):
        # Body still; arms or wings do the work (see `_limb_extra`).
        def spec(t, a):
            return {"shift": np.c_[np.zeros(len(t)), np.zeros(len(t)), breathe(t, 1.0)]}
        return spec, lambda t: np.ones_like(t), None
    raise ControllerError(f"Unknown action '{action}'.")


def _limb_extra(creature: Creature, action: str, t: np.ndarray, d: float, rng: np.random.Generator
                ) -> Callable[[Poser], None]:
    """Arms (hang, swing, wave) and wings (fold, flap) on top of a body pose."""
    frames = t.shape[0]
    rate = rng.uniform(1.2, 1.8)

    def extra(poser: Poser) -> None:
        arms = _arm_limbs(creature)
        if arms:
            raise_dir, weight = None, None
            if action == "wave":
                waving = max(range(len(arms)), key=lambda n: arms[n].side == -LEFT)
                side = arms[waving].side
                sweep = 0.35 * np.sin(2 * np.pi * rate * t)
                raise_dir = {waving: np.stack([side * (0.45 + sweep), np.full(frames, -0.15),
                                               np.full(frames, 0.9)], axis=-1)}
                weight = envelope(t, 0.05 * d, 0.3 * d, 0.75 * d, 0.95 * d)
            pose_arms(poser, {}, raise_dir, weight)
        if creature.limbs_of("wing"):
            if action == "flap":
                beat = 0.7 * np.sin(2 * np.pi * 2.5 * rate * t) * envelope(t, 0.0, 0.15 * d)
                pose_wings(poser, beat, 0.3 * np.maximum(0, np.cos(2 * np.pi * 2.5 * rate * t)))
            else:
                pose_wings(poser, np.full(frames, -0.1), np.full(frames, 0.0))
    return extra


def in_place(creature: Creature, action: str, frames: int, fps: float,
             rng: np.random.Generator) -> GeneratedClip:
    """Actions with the feet planted at rest (except legs an action lifts, e.g. fore legs rearing)."""
    t = np.arange(frames) / fps
    d = max(t[-1], 1e-6)
    spec, wanted_fn, free = action_terms(creature, action, d, rng)
    legs = leg_rigs(creature)
    free = np.zeros(len(legs), bool) if free is None else free
    make = _pose_maker(creature, t, spec)
    wanted = wanted_fn(t)
    a = limit_amplitude(creature, make, wanted, ~free, fps) if legs else wanted
    pose = make(a)
    targets = _rest_feet(legs, frames)
    contacts = np.ones((frames, len(legs)), dtype=bool)
    if free.any():
        # Lifted legs follow the body rigidly (tucked a little) and are down only where a == 0.
        pelvis = creature.rig.heads[creature.pelvis]
        for i in np.flatnonzero(free):
            carried = pose.root + quat_rotate(pose.body, legs[i].foot_rest - pelvis)
            carried[:, 2] = np.maximum(carried[:, 2] + 0.1 * creature.leg_length * a, legs[i].foot_rest[2])
            targets[:, i] = np.where(a[:, None] > 0, carried, targets[:, i])
            contacts[:, i] = a <= 0
    zeros = np.zeros((frames, len(legs)))
    motion, info = solve_clip(creature, pose, targets, zeros, zeros, contacts, fps,
                              _limb_extra(creature, action, t, d, rng))
    info.update(amplitude=a, foot_targets=targets)
    return GeneratedClip(motion, action, [{"gait": action, "duration": frames / fps, "speed": 0.0}], 0.0,
                         "none", contacts, info)


def jump(creature: Creature, frames: int, fps: float, rng: np.random.Generator) -> GeneratedClip:
    """Crouch, ballistic flight forward, land and absorb; feet planted before take-off and after landing."""
    legs = leg_rigs(creature)
    t = np.arange(frames) / fps
    d = max(t[-1], 1e-6)
    leg_len = creature.leg_length
    t_off, flight = 0.38 * d, 0.28 * d * rng.uniform(0.9, 1.1)
    t_land = t_off + flight
    distance = rng.uniform(0.5, 0.8) * leg_len * (0.5 if creature.family == "biped" else 1.0)
    s = np.clip((t - t_off) / flight, 0.0, 1.0)
    rise = 0.5 * GRAVITY * flight**2 * s * (1.0 - s)  # ballistic: h(s) = g T² s(1-s) / 2
    crouch = 0.22 * leg_len * (envelope(t, 0.05 * d, 0.28 * d, 0.28 * d, t_off)
                               + envelope(t, t_land, t_land + 0.08 * d, t_land + 0.08 * d, 0.95 * d))
    pelvis = creature.rig.heads[creature.pelvis]
    root = np.repeat(pelvis[None], frames, axis=0)
    root[:, 1] -= distance * s
    root[:, 2] += rise - crouch
    tilt = 0.15 * np.sin(2 * np.pi * s) * (s > 0) * (s < 1)
    pose = BodyPose(root, about(X_AXIS, tilt))
    neck = creature.neck + ([creature.head] if creature.head >= 0 else [])
    if neck:
        pose.neck = np.repeat(_vec(frames, pitch=-tilt)[:, None] / len(neck), len(neck), axis=1)
    if creature.tail:
        lift = 0.3 * _tail_lift(creature) + 0.4 * rise / max(leg_len, 1e-6)
        count = len(creature.tail)
        pose.tail = np.repeat(_vec(frames, pitch=lift)[:, None] / count, count, axis=1)
    targets = _rest_feet(legs, frames)
    contacts = (t <= t_off) | (t >= t_land)
    contacts = np.repeat(contacts[:, None], len(legs), axis=1)
    hs = smoothstep(s)
    targets[:, :, 1] -= distance * hs[:, None]
    targets[:, :, 2] += (0.9 * rise + 0.15 * leg_len * np.sin(np.pi * s))[:, None]
    zeros = np.zeros((frames, len(legs)))
    fold = np.repeat((0.4 * np.sin(np.pi * s))[:, None], len(legs), axis=1)
    motion, info = solve_clip(creature, pose, targets, zeros, fold, contacts, fps,
                              _limb_extra(creature, "jump", t, d, rng))
    info.update(foot_targets=targets, take_off=t_off, landing=t_land, distance=distance)
    return GeneratedClip(motion, "jump", [{"gait": "jump", "duration": frames / fps, "speed": 0.0}],
                         0.0, "forward", contacts, info)


def glide(creature: Creature, frames: int, fps: float, rng: np.random.Generator, speed: float | None,
          turn_rate: float) -> GeneratedClip:
    """Airborne glide: wings spread and banking, legs carried, slow descent well above the ground."""
    legs = leg_rigs(creature)
    size = creature.rig.body_size
    t = np.arange(frames) / fps
    v = speed if speed is not None else rng.uniform(0.9, 1.1) * 2.0 * np.sqrt(GRAVITY * size)
    heading = turn_rate * t
    dt = 1.0 / fps
    vel = v * heading_forward(heading)
    pelvis = creature.rig.heads[creature.pelvis]
    root = pelvis + np.concatenate([[np.zeros(3)], np.cumsum(0.5 * (vel[1:] + vel[:-1]) * dt, axis=0)])
    altitude = 1.5 * size
    root[:, 2] += altitude - 0.05 * size * t / max(t[-1], 1e-6)
    bank = 0.15 * np.sin(2 * np.pi * 0.3 * t + rng.uniform(0, 6.28)) + 0.3 * np.clip(turn_rate, -1, 1)
    pose = BodyPose(root, quat_multiply(about(Z_AXIS, heading), about(Y_AXIS, -bank)))
    targets = np.zeros((frames, len(legs), 3))
    for i, leg in enumerate(legs):
        carried = pose.root + quat_rotate(pose.body, leg.foot_rest - pelvis)
        targets[:, i] = carried + np.array([0.0, 0.1, 0.1]) * creature.leg_length
    zeros = np.zeros((frames, len(legs)))
    contacts = np.zeros((frames, len(legs)), dtype=bool)

    def extra(poser: Poser) -> None:
        pose_wings(poser, 0.08 * np.sin(2 * np.pi * 0.5 * t), np.zeros(frames))

    motion, info = solve_clip(creature, pose, targets, zeros, zeros, contacts, fps, extra, lower=False)
    info.update(heading=heading, foot_targets=targets)
    return GeneratedClip(motion, "glide", [{"gait": "glide", "duration": frames / fps, "speed": v}], v,
                         "forward", contacts, info)


# ----------------------------------------------------------------------------- serpents and fish
def _axial_layout(creature: Creature) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
    """Body-axis joints, each with its coordinate b (m from the pelvis, + towards the head), the
    coordinate of the middle of the segment it drives, and that segment's length."""
    rig = creature.rig
    head = [creature.head] if creature.head >= 0 else []
    forward = [creature.pelvis] + creature.spine + creature.neck + head
    joints, coord, mid, length = [], [], [], []
    b = 0.0
    for k, j in enumerate(forward):
        nxt = rig.heads[forward[k + 1]] if k + 1 < len(forward) else rig.tails[j]
        seg = float(np.linalg.norm(nxt - rig.heads[j]))
        joints.append(j)
        coord.append(b)
        mid.append(b + 0.5 * seg)
        length.append(seg)
        b += seg
    b = 0.0
    if creature.tail:
        b = -float(np.linalg.norm(rig.heads[creature.tail[0]] - rig.heads[creature.pelvis]))
    for k, j in enumerate(creature.tail):
        nxt = rig.heads[creature.tail[k + 1]] if k + 1 < len(creature.tail) else rig.tails[j]
        seg = float(np.linalg.norm(nxt - rig.heads[j]))
        joints.append(j)
        coord.append(b)
        mid.append(b - 0.5 * seg)
        length.append(seg)
        b -= seg
    return joints, np.array(coord), np.array(mid), np.array(length)


def axial(creature: Creature, action: str, frames: int, fps: float, rng: np.random.Generator,
          speed: float | None, direction: str, turn_rate: float) -> GeneratedClip:
    """Serpents and fish: the body is a curve of headings Φ(b, t); each joint is yawed onto it.

    slither: follow-the-leader lateral undulation — Φ depends on the path coordinate σ = s(t) + b
    only, so every point of the body travels along the same wavy track (no sideways slip beyond the
    wave); the pelvis rides that track at the requested speed.
    sidewind: the body lies across the direction of travel with a lateral and a lifting wave.
    coil: curvature growing monotonically towards the tail tip (nested, non-crossing turns).
    swim: travelling wave whose amplitude grows towards the tail; turn bends into the turn.
    """
    joints, coord, mid, _ = _axial_layout(creature)
    length = float(coord.max() - coord.min() + 1e-9)
    size = max(length, creature.rig.body_size)
    t = np.arange(frames) / fps
    d = max(t[-1], 1e-6)
    pelvis = creature.rig.heads[creature.pelvis]
    amp = rng.uniform(0.85, 1.15)
    poser = Poser(creature, frames)
    root = np.repeat(pelvis[None], frames, axis=0)
    heading = np.zeros(frames)
    v = 0.0
    sign = -1.0 if direction == "backward" else 1.0
    if action in ("slither", "swim", "turn"):
        if action == "turn" and turn_rate == 0.0:
            turn_rate = (np.pi / 2) / d * (1 if rng.uniform() < 0.5 else -1)
        pace = 0.35 if action == "slither" else 0.8  # body lengths per second
        v = speed if speed is not None else rng.uniform(0.9, 1.1) * pace * size
        v = max(v, 1e-6)
        wavelength = (0.6 if action == "slither" else 1.0) * size
        curvature = turn_rate / v
        sigma_now = sign * v * t
        table = np.linspace(sigma_now.min() + coord.min() - size, sigma_now.max() + coord.max() + size, 4001)
        if action == "slither":
            wave_amp = np.full_like(table, 0.55 * amp)
            phi_table = curvature * table + wave_amp * np.sin(2 * np.pi * table / wavelength)
        else:
            phi_table = curvature * table
        step = np.diff(table)
        fwd = heading_forward(phi_table)
        track = np.concatenate([[np.zeros(3)], np.cumsum(0.5 * (fwd[1:] + fwd[:-1]) * step[:, None], axis=0)])
        pelvis_track = np.stack([np.interp(sigma_now, table, track[:, k]) for k in range(3)], axis=-1)
        root = pelvis + pelvis_track - np.array([np.interp(0.0, table, track[:, k]) for k in range(3)])
        omega = 2 * np.pi * v / wavelength
        for n, j in enumerate(joints):
            phi = np.interp(sigma_now + sign * mid[n], table, phi_table)
            if action != "slither":
                # Fish: a wave running head → tail, amplitude growing towards the tail, about the track.
                rel = (coord.max() - mid[n]) / length
                phi = phi + 0.35 * amp * rel**2 * np.sin(omega * t + 2 * np.pi * mid[n] / wavelength)
                phi = phi + (0.4 * np.clip(turn_rate, -2, 2) * rel if action == "turn" else 0.0)
            poser.set(j, about(Z_AXIS, phi))
        heading = np.interp(sigma_now, table, curvature * table)
    elif action == "sidewind":
        v = speed if speed is not None else rng.uniform(0.9, 1.1) * 0.3 * size
        wavelength = 0.7 * size
        omega = 2 * np.pi * v / (0.6 * wavelength)
        travel = heading_forward(np.full(frames, np.pi / 2 * sign))  # moves towards its left
        root = pelvis + v * t[:, None] * travel
        lift_h = 0.04 * size
        for n, j in enumerate(joints):
            wave = 2 * np.pi * mid[n] / wavelength - omega * t
            phi = 0.5 * amp * np.sin(wave)
            toward = 1.0 if mid[n] >= coord[n] else -1.0
            def lifted(b: float) -> np.ndarray:
                return lift_h * np.maximum(0, np.sin(2 * np.pi * b / wavelength - omega * t - np.pi / 2)) ** 2
            end = coord[n] + 2 * (mid[n] - coord[n])
            z0, z1 = lifted(coord[n]), lifted(end)
            seg = 2 * abs(mid[n] - coord[n])
            pitch = -toward * np.arcsin(np.clip((z1 - z0) / max(seg, 1e-9), -1, 1))
            poser.set(j, quat_multiply(about(Z_AXIS, phi), about(X_AXIS, pitch)))
        root[:, 2] += lift_h * np.maximum(0, np.sin(-omega * t - np.pi / 2)) ** 2
    elif action == "coil":
        a = envelope(t, 0.05 * d, 0.7 * d)
        for n, j in enumerate(joints):
            rel = max(-mid[n], 0.0) / max(-coord.min(), 1e-9)
            phi = a * 2.6 * np.pi * rel**2 * amp
            pitch = np.zeros(frames)
            if mid[n] > coord[n] and coord[n] > 0.6 * coord.max():
                pitch = -0.5 * a  # the front rises, ready to strike
            poser.set(j, quat_multiply(about(Z_AXIS, phi), about(X_AXIS, pitch)))
    elif action == "idle":
        for n, j in enumerate(joints):
            poser.set(j, about(Z_AXIS, 0.05 * np.sin(2 * np.pi * 0.3 * t + mid[n] / size * 3)))
    else:
        raise ControllerError(f"Unknown action '{action}' for a {creature.family}.")
    poser.inherit()
    pose_fins(poser, t, 2.0, 0.3)
    poser.inherit()
    rel = poser.relative_positions()
    root_main = poser.root_for(root, rel)
    motion = poser.motion(root_main, fps)
    info = {"heading": heading, "wave_speed": v}
    segments = [{"gait": action, "duration": frames / fps, "speed": v}]
    return GeneratedClip(motion, action, segments, v, direction, np.zeros((frames, 0), dtype=bool), info)


# ----------------------------------------------------------------------------- entry point
def _default_turn(direction: str, turn_rate: float, duration: float, speed_hint: float, leg: float) -> float:
    if turn_rate:
        return turn_rate
    if direction in ("left", "right"):
        rate = 0.5 * speed_hint / max(leg, 1e-3) if speed_hint else np.pi / 2 / duration
        return min(rate, np.pi / duration) * (1 if direction == "left" else -1)
    if direction == "circle":
        return 2 * np.pi / duration
    return 0.0


def generate(creature: Creature, action: str, seed: int, frames: int | None = None, fps: float = 30.0,
             speed: float | None = None, direction: str = "forward", turn_rate: float = 0.0,
             segments: list | None = None) -> GeneratedClip:
    """One clip of `action` for `creature`; deterministic for a seed (amplitudes, phases, speeds vary).

    direction: "forward", "backward", "left"/"right" (constant-curvature turn), "circle" (a full
    circle over the clip). segments: [(gait, seconds[, speed]), ...] or dicts, for transitions within
    a clip such as walk → trot → stop ("stop" ends it standing); frames rescales their durations.
    """
    family = creature.family
    allowed = ACTIONS_BY_FAMILY.get(family, ())
    names = [s["gait"] if isinstance(s, dict) else s[0] for s in segments] if segments else [action]
    for name in names:
        if name not in allowed and name not in ("stop", "stand"):
            raise ControllerError(f"A {family} cannot '{name}' (it can: {', '.join(allowed)}).")
    rng = np.random.default_rng(seed)
    segs = normalise_segments(segments, action, frames, fps, speed)
    count = int(round(sum(s["duration"] for s in segs) * fps))
    duration = count / fps
    if family in ("serpent", "fish"):
        rate = _default_turn(direction, turn_rate, duration, 0.0, 0.0) if action != "turn" else turn_rate
        return axial(creature, action, count, fps, rng, speed, direction, rate)
    if action == "turn" or action in _FAMILY_GAITS.get(family, {}):
        leg = creature.leg_length
        if action == "turn":
            walk = "walk"
            segs = [{"gait": walk, "duration": duration, "speed": 0.0}]
            rate = turn_rate or (np.pi / 2) / duration * (1 if direction != "right" else -1)
            clip = locomotion(creature, segs, fps, rng, "forward", rate)
            clip.action = "turn"
            return clip
        clip = None
        for attempt in range(4):
            trial = [dict(s) for s in segs]
            clip = locomotion(creature, trial, fps, np.random.default_rng(seed), direction, turn_rate or None,
                              stride_mult=1.25**attempt)
            if clip.metadata["body_drop_max"] <= 0.12 * leg and clip.metadata["unreached_planted"] == 0:
                break
        clip.metadata["attempts"] = attempt + 1
        clip.direction = direction
        return clip
    if action == "jump":
        return jump(creature, count, fps, rng)
    if action == "glide":
        return glide(creature, count, fps, rng, speed, _default_turn(direction, turn_rate, duration, 0, 0))
    return in_place(creature, action, count, fps, rng)
