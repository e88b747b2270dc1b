"""Clean-up pass after motion sampling: lock foot contacts with IK, keep bone lengths exact.

A diffusion model (MDM / MotionDreamer style) samples rotations that are plausible but not exact:
planted feet slide a little, the body sinks into the floor, and a foot that should stay put drifts.
`clean_motion` fixes that the way MotionDreamer's post-process does, with rotations only:

1. Feet (given, else `Rig.foot_candidates`) and their contacts (given, e.g. the model's contact
   channel > 0.5, else `metrics.foot_contacts`).
2. Each foot's leg chain: walk up from the foot through joints with a single child, stopping below
   the main root or a branching joint (the girdle), at most MAX_SEGMENTS bones. Two bones are solved
   with `ik.two_bone` (bend plane from the sampled knee), three or more with `ik.fabrik` started from
   the sampled pose (so the change is small and spread over the leg).
3. Each contact run gets one target: the run's mean horizontal foot position at the foot's floor.
   Next to a run the same offset fades out over `blend_frames` frames (smoothstep), so nothing
   pops; a foot under a lock's influence is never aimed below its floor.
4. Each chain bone turns by the least rotation from its sampled segment to the solved one (what
   `ik.aim` does), so its roll is kept. The foot keeps its sampled world orientation and its toes
   follow it rigidly — unless a planted foot's toes would be in the floor: then it pitches up just
   enough. Every other joint is untouched. The Motion is rebuilt with the inverse-bind correction
   of `motion_from_world_deltas`, applied only to the joints that changed (see `_apply`): rotations
   only, so bone lengths are exact by construction and untouched joints stay bit-identical.
5. Penetration (order chosen: lock, then lift, then lock again): where a joint other than a planted
   foot is still below its floor after locking, the root is raised by the smallest amount (a
   smooth upper envelope over time) and the feet are locked again from the raised pose, so planted
   legs stretch back down; repeated (at most PENETRATION_PASSES times) while anything is left.

Canonical frame: +Z up. The ground is the lowest rest point of the rig unless given. A foot joint
sits a little above its sole, so each foot's floor — and that of every joint below it (toes) — is
its own rest height above the ground; every other joint's floor is the ground itself.

numpy only: this runs inside Blender as well as in the backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.ik import fabrik, two_bone
from ..core.motion import Motion, forward_kinematics
from ..core.rig import Rig
from ..core.rotations import (
    quat_conjugate,
    quat_from_axis_angle,
    quat_identity,
    quat_multiply,
    quat_rotate,
    quat_to_axis_angle,
    rotation_between,
)
from ..eval.metrics import (
    CONTACT_HEIGHT,
    CONTACT_SPEED,
    Ground,
    PenetrationStats,
    SkatingStats,
    foot_contacts,
    foot_skating,
    ground_penetration,
)
from ..library.controllers.common import smooth_upper

UP = np.array([0.0, 0.0, 1.0])
MAX_SEGMENTS = 6  # longest leg chain solved; longer single-child chains keep their top fixed
PENETRATION_TOLERANCE = 0.002  # body sizes below a floor before the root is raised
PENETRATION_PASSES = 3  # lift-and-relock rounds at most (one is almost always enough)
FABRIK_ITERATIONS = 24  # FABRIK starts at the sampled pose and closes exactly: few sweeps suffice
FABRIK_TOLERANCE = 1e-5  # of the chain length: stop sweeping, the analytic closing does the rest
CONFIRM_SCALE = 2.0  # sampled contacts are confirmed by a foot this many times lower/slower than detection's
_UNCHANGED = 1e-12  # body sizes: foot offsets below this are rounding, the frame is left alone


@dataclass
class CleanupResult:
    """The cleaned motion and what the pass did (F feet, T frames)."""

    motion: Motion
    feet: np.ndarray  # (F,) foot joints, in the order of the contact columns
    contacts: np.ndarray  # (T,F) the contacts that were locked
    floors: np.ndarray  # (F,) floor height of each foot (z of the foot joint when planted)
    chains: list[list[int]]  # per foot: chain joints top → foot; [] where the foot was skipped
    solvers: list[str]  # per foot: "two_bone", "fabrik" or "skipped: <why>"
    weights: np.ndarray  # (T,F) lock weight: 1 in contact, fading to 0 over blend_frames outside
    root_raise: np.ndarray  # (T,) how far the root was lifted against penetration
    skating_before: SkatingStats
    skating_after: SkatingStats
    penetration_before: PenetrationStats  # depth below each joint's own floor (see module doc)
    penetration_after: PenetrationStats
    frames_adjusted: int  # frames in which any joint moved
    unreached: int  # foot-frames whose target was out of the leg's reach (clamped: as near as it gets)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        """JSON-ready numbers for logs and the panel."""
        return {
            "feet": int(self.feet.size),
            "solvers": list(self.solvers),
            "skating_before_rel": self.skating_before.mean_rel,
            "skating_after_rel": self.skating_after.mean_rel,
            "penetration_before_rel": self.penetration_before.max_depth_rel,
            "penetration_after_rel": self.penetration_after.max_depth_rel,
            "root_raise_max": float(self.root_raise.max(initial=0.0)),
            "frames_adjusted": int(self.frames_adjusted),
            "unreached": int(self.unreached),
            "notes": list(self.notes),
        }


@dataclass
class _Leg:
    column: int  # index into feet / contact columns
    chain: np.ndarray  # (n+1,) joints top → foot; the first n bones rotate
    rest_bend: np.ndarray  # (3,) knee bend direction at rest (two-bone chains), zero when straight


# ----------------------------------------------------------------------------- chains
def leg_chain(rig: Rig, foot: int, max_segments: int = MAX_SEGMENTS) -> list[int]:
    """Joints from the top of the foot's limb down to the foot, inclusive.

    Walks up while the parent has exactly one child and is not the main root: rotating such a joint
    moves only this leg. The branching joint (pelvis, thorax, shoulder girdle with two arms) stays
    fixed. Chains longer than `max_segments` bones keep the ones nearest the foot.
    """
    chain = [int(foot)]
    while True:
        parent = int(rig.parents[chain[0]])
        if parent < 0 or parent == rig.main_root or len(rig.children[parent]) != 1:
            break
        chain.insert(0, parent)
    return chain[-(max_segments + 1):]


def _ancestors(rig: Rig, joint: int) -> set[int]:
    out: set[int] = set()
    parent = int(rig.parents[joint])
    while parent >= 0:
        out.add(parent)
        parent = int(rig.parents[parent])
    return out


def _plan_legs(rig: Rig, feet: np.ndarray) -> tuple[list[_Leg], list[list[int]], list[str]]:
    """Usable leg chains, and per foot its chain and solver (or why it is skipped)."""
    legs: list[_Leg] = []
    chains: list[list[int]] = []
    solvers: list[str] = []
    taken: list[tuple[set[int], set[int], str]] = []  # (joints, joints + ancestors, foot name)
    size = max(rig.body_size, 1e-12)
    for column, foot in enumerate(feet):
        chain = leg_chain(rig, int(foot))
        segments = len(chain) - 1
        reason = ""
        if int(foot) == rig.main_root:
            reason = "the foot is the main root"
        elif segments < 2:
            reason = "leg chain has fewer than two bones"
        else:
            lengths = np.linalg.norm(np.diff(rig.heads[chain], axis=0), axis=-1)
            if np.any(lengths <= 1e-6 * size):
                reason = "leg chain has a zero-length bone"
        joints = set(chain)
        reach = joints | _ancestors(rig, chain[0])
        if not reason:
            # Two chains may not move each other: solving one would invalidate the other's start.
            for other_joints, other_reach, name in taken:
                if joints & other_reach or other_joints & reach:
                    reason = f"leg chain overlaps the chain of {name}"
                    break
        if reason:
            chains.append([])
            solvers.append(f"skipped: {reason}")
            continue
        heads = rig.heads[chain]
        bend = np.zeros(3)
        if segments == 2:
            line = heads[2] - heads[0]
            line = line / max(np.linalg.norm(line), 1e-12)
            bend = (heads[1] - heads[0]) - np.dot(heads[1] - heads[0], line) * line
            if np.linalg.norm(bend) <= 1e-6 * size:
                bend = np.zeros(3)
        taken.append((joints, reach, rig.names[int(foot)]))
        legs.append(_Leg(column, np.asarray(chain, dtype=np.int64), bend))
        chains.append(chain)
        solvers.append("two_bone" if segments == 2 else "fabrik")
    return legs, chains, solvers


# ----------------------------------------------------------------------------- lock targets
def _ramp(blend_frames: int) -> np.ndarray:
    """Weights 1 → 0 (exclusive) at 1..blend_frames frames from a contact run (smoothstep)."""
    x = np.arange(1, blend_frames + 1) / (blend_frames + 1.0)
    return 1.0 - x * x * (3.0 - 2.0 * x)


def _fade(contact: np.ndarray, values: np.ndarray, ramp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spread per-contact-frame corrections (T,k) onto the frames next to each run; also weights (T,).

    Contact frames keep their value (weight 1). Outside, the value at the run's nearest end fades
    out with `ramp`; where two runs' fades overlap they are averaged by weight (continuous, never
    beyond either). Frames out of reach of every run get 0.
    """
    count = contact.shape[0]
    out = np.where(contact[:, None], values, 0.0)
    weight = contact.astype(np.float64)
    padded = np.concatenate([[False], contact, [False]])
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    starts, ends = edges[::2], edges[1::2]
    if starts.size == 0 or ramp.size == 0:
        return out, weight
    steps = np.arange(1, ramp.size + 1)
    frames = np.concatenate([starts[:, None] - steps, ends[:, None] - 1 + steps]).ravel()
    edge = np.repeat(np.concatenate([values[starts], values[ends - 1]]), ramp.size, axis=0)
    weights = np.tile(ramp, 2 * starts.size)
    keep = (frames >= 0) & (frames < count)
    frames, weights, edge = frames[keep], weights[keep], edge[keep]
    weights = np.where(contact[frames], 0.0, weights)  # a neighbouring run has its own value
    total = np.bincount(frames, weights, minlength=count)
    spread = np.stack([np.bincount(frames, weights * edge[:, k], minlength=count)
                       for k in range(values.shape[1])], axis=-1)
    free = ~contact
    out[free] = spread[free] / np.maximum(total[free], 1.0)[:, None]
    weight[free] = np.minimum(total[free], 1.0)
    return out, weight


def _runs(contact: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) frames of each contact run."""
    padded = np.concatenate([[False], contact, [False]])
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return edges[::2], edges[1::2]


def _footprint_offsets(contact: np.ndarray, foot: np.ndarray, floor: float) -> np.ndarray:
    """(T,3) offsets taking a foot (T,3) to its footprint in each contact run: the run's mean
    horizontal position, at the floor; zero outside the runs."""
    starts, ends = _runs(contact)
    offset = np.zeros(foot.shape)
    if starts.size:
        sums = np.concatenate([np.zeros((1, 2)), np.cumsum(foot[:, :2], axis=0)])
        prints = np.empty((starts.size, 3))
        prints[:, :2] = (sums[ends] - sums[starts]) / (ends - starts)[:, None]
        prints[:, 2] = floor
        run = np.repeat(np.arange(starts.size), ends - starts)
        offset[contact] = prints[run] - foot[contact]
    return offset


def plausible_contacts(contacts: np.ndarray, feet_positions: np.ndarray, floors: np.ndarray,
                       limits: np.ndarray) -> tuple[np.ndarray, int]:
    """Contacts (T,F) without the runs whose lock would move the foot (T,F,3) farther than its limit
    (F,) at some frame, and how many runs that dropped. Such a run is not a slip to fix but a contact
    that is not there (a sampled label, or a foot held off the floor on purpose); locking it would
    drag the leg straight."""
    kept = contacts.copy()
    dropped = 0
    for c in range(contacts.shape[1]):
        offsets = _footprint_offsets(contacts[:, c], feet_positions[:, c], floors[c])
        distance = np.linalg.norm(offsets, axis=-1)
        for start, end in zip(*_runs(contacts[:, c]), strict=True):
            if distance[start:end].max() > limits[c]:
                kept[start:end, c] = False
                dropped += 1
    return kept, dropped


def _lock_targets(contact: np.ndarray, foot: np.ndarray, floor: float,
                  ramp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame foot offsets (T,3) and lock weights (T,) for one foot (contact (T,), foot (T,3)).

    In a run the foot goes to its footprint (`_footprint_offsets`). Outside, the offset at the run's
    nearest end fades out (`_fade`): the swing keeps its shape and is only shifted, instead of being
    pulled towards the footprint.
    """
    offset, weight = _fade(contact, _footprint_offsets(contact, foot, floor), ramp)
    # A swing shifted by its neighbours' offsets may dip below the floor: never aim a foot there.
    low = (weight > 0) & (foot[:, 2] + offset[:, 2] < floor)
    offset[low, 2] = floor - foot[low, 2]
    return offset, weight


def _tilt(vectors: np.ndarray, required: np.ndarray, tolerance: float) -> np.ndarray:
    """(m,3) rotation vectors that pitch (m,D,3) foot → toe vectors up until every z ≥ `required` (D,).

    The least rotation for the worst toe: in its vertical plane, keeping its length and heading.
    """
    deficit = required[None] - vectors[..., 2]
    worst = np.argmax(deficit, axis=1)
    need = deficit[np.arange(vectors.shape[0]), worst] > tolerance
    v = vectors[np.arange(vectors.shape[0]), worst]
    length = np.linalg.norm(v, axis=-1)
    z = np.minimum(required[worst], length)
    flat = np.concatenate([v[:, :2], np.zeros((v.shape[0], 1))], axis=-1)
    flat = flat / np.maximum(np.linalg.norm(flat, axis=-1, keepdims=True), 1e-300)
    goal = flat * np.sqrt(np.maximum(length**2 - z**2, 0.0))[:, None]
    goal[:, 2] = z
    axis, angle = quat_to_axis_angle(rotation_between(v, goal))
    return np.where(need[:, None], axis * angle[:, None], 0.0)


# ----------------------------------------------------------------------------- solving
@dataclass
class _Locked:
    corrections: np.ndarray  # (T,J,4) world-space rotation applied to each joint (identity: untouched)
    positions: np.ndarray  # (T,J,3) joint positions after locking
    weights: np.ndarray  # (T,F)
    active: np.ndarray  # (T,F) frames where a leg was re-solved
    unreached: int


def _solve_group(legs: list[_Leg], positions: np.ndarray, world: np.ndarray, rest_rotations: np.ndarray,
                 offsets: np.ndarray, active: np.ndarray, corrections: np.ndarray, moved: np.ndarray) -> int:
    """Solve every leg with the same chain length at once (all their active frames in one batch).

    Writes each chain bone's world correction (the least rotation from its sampled segment to the
    solved one, which is what `ik.aim` applies) into `corrections` and the solved chain positions
    into `moved`; returns how many foot-frames were out of reach.
    """
    chains = np.stack([leg.chain for leg in legs])  # (L,n+1)
    columns = np.asarray([leg.column for leg in legs])
    frame, which = np.nonzero(active[:, columns])
    if frame.size == 0:
        return 0
    joints = chains[which]  # (m,n+1)
    points = positions[frame[:, None], joints]  # (m,n+1,3)
    target = points[:, -1] + offsets[frame, columns[which]]
    steps = np.diff(points, axis=1)
    if steps.shape[1] == 2:
        root, mid, end = points[:, 0], points[:, 1], points[:, 2]
        line = end - root
        line = line / np.maximum(np.linalg.norm(line, axis=-1, keepdims=True), 1e-300)
        bend = (mid - root) - np.sum((mid - root) * line, axis=-1, keepdims=True) * line
        # The sampled knee says which way the leg bends. A straight sampled leg falls back to the
        # rest bend carried along by the thigh (its segment's rotation away from rest).
        lengths = np.linalg.norm(steps, axis=-1)
        straight = np.linalg.norm(bend, axis=-1) <= 1e-6 * lengths.sum(-1)
        if np.any(straight):
            rest_bend = np.stack([leg.rest_bend for leg in legs])[which]
            top = joints[:, 0]
            delta = world[frame, top] @ np.swapaxes(rest_rotations[top], -1, -2)  # D = W · R_restᵀ
            bend = np.where(straight[:, None], np.einsum("mab,mb->ma", delta, rest_bend), bend)
        result = two_bone(root, target, lengths[:, 0], lengths[:, 1], bend)
        solved = np.stack([root, result.mid, result.end], axis=1)
        reached = result.reached
    else:
        solved, reached = fabrik(points, target, iterations=FABRIK_ITERATIONS, tolerance=FABRIK_TOLERANCE)
    corrections[frame[:, None], joints[:, :-1]] = rotation_between(steps, np.diff(solved, axis=1))
    moved[frame[:, None], joints] = solved
    return int(np.sum(~reached))


@dataclass
class _LockPlan:
    """What every lock of one clip shares."""

    legs: list[_Leg]
    contacts: np.ndarray  # (T,F) bool
    floors: np.ndarray  # (F,) each foot's floor height
    joint_floor: np.ndarray  # (J,) each joint's floor height (feet and what hangs below them: their own)
    ramp: np.ndarray  # the fade in and out of a lock, see _ramp
    below_foot: np.ndarray  # (J,F) bool: the joint is the foot or hangs below it


def _lock(rig: Rig, plan: _LockPlan, positions: np.ndarray, world: np.ndarray) -> _Locked:
    """Lock every leg's contacts, from the sampled positions (T,J,3) and world rotations (T,J,3,3)."""
    legs, contacts, floors, joint_floor = plan.legs, plan.contacts, plan.floors, plan.joint_floor
    ramp, below_foot = plan.ramp, plan.below_foot
    count, feet = contacts.shape
    offsets = np.zeros((count, feet, 3))
    weights = np.zeros((count, feet))
    for leg in legs:
        c = leg.column
        offsets[:, c], weights[:, c] = _lock_targets(contacts[:, c], positions[:, leg.chain[-1]],
                                                     float(floors[c]), ramp)
    # Frames whose foot is already where it should be stay bit-identical (clean input stays clean).
    active = (weights > 0) & (np.linalg.norm(offsets, axis=-1) > _UNCHANGED * max(rig.body_size, 1e-12))
    corrections = quat_identity(positions.shape[:2])
    moved = positions.copy()
    unreached = 0
    for segments in sorted({len(leg.chain) - 1 for leg in legs}):
        group = [leg for leg in legs if len(leg.chain) - 1 == segments]
        unreached += _solve_group(group, positions, world, rig.rest_rotations, offsets, active, corrections,
                                  moved)
    for leg in legs:
        foot = leg.chain[-1]
        below = np.flatnonzero(below_foot[:, leg.column])
        below = below[below != foot]
        if below.size == 0:
            continue
        # The foot keeps its sampled orientation, so what hangs below it (toes) follows it rigidly,
        # except where a planted foot's toes would be in the floor: there the foot pitches up just
        # enough (faded in and out like the lock).
        vectors = positions[:, below] - positions[:, foot, None]
        planted = np.flatnonzero(contacts[:, leg.column])
        spin = np.zeros((count, 3))
        if planted.size:
            required = joint_floor[below][None] - moved[planted, foot, 2:3]
            spin[planted] = _tilt(vectors[planted], required.max(axis=0), _UNCHANGED * rig.body_size)
        if np.any(spin):
            spin, _ = _fade(contacts[:, leg.column], spin, ramp)
            angle = np.linalg.norm(spin, axis=-1)
            turn = quat_from_axis_angle(spin, angle)
            vectors = quat_rotate(turn[:, None], vectors)
            corrections[:, foot] = turn
            corrections[:, below] = turn[:, None]
            active[:, leg.column] |= angle > 0
        moved[:, below] = moved[:, foot, None] + vectors
    return _Locked(corrections, moved, weights, active, unreached)


def _apply(rig: Rig, motion: Motion, world: np.ndarray, corrections: np.ndarray, joints: np.ndarray,
           root: np.ndarray) -> Motion:
    """The motion with world-space corrections Q_j applied to the world rotations W_j of `joints`.

    The inverse-bind correction of motion_from_world_deltas, restricted to the joints whose basis
    changes (chain bones and the feet below them): W_j' = Q_j W_j and W_parent' = Q_p W_parent give
    basis_j' = basis_j · (W_jᵀ Q_pᵀ Q_j W_j), i.e. Q_pᵀ Q_j with its axis expressed in the joint's
    own frame. Rotations only, so bone lengths stay exact; every other joint (and any authored
    translation) is left exactly as sampled.
    """
    parents = rig.parents[joints]
    parent_q = corrections[:, np.maximum(parents, 0)]
    parent_q[:, parents < 0] = quat_identity()
    change = quat_multiply(quat_conjugate(parent_q), corrections[:, joints])  # (T,A,4) world frame
    local = np.concatenate([change[..., :1],
                            np.einsum("tjba,tjb->tja", world[:, joints], change[..., 1:])], axis=-1)
    rotations = motion.rotations.copy()
    rotations[:, joints] = quat_multiply(rotations[:, joints], local)
    translations = None if motion.translations is None else motion.translations.copy()
    return Motion(motion.fps, root, rotations, translations)


# ----------------------------------------------------------------------------- entry point
def _check_inputs(rig: Rig, motion: Motion, contacts: np.ndarray | None,
                  feet: np.ndarray | None, blend_frames: int) -> tuple[np.ndarray, np.ndarray | None]:
    if motion.joint_count != rig.joint_count:
        raise ValueError(f"The motion has {motion.joint_count} joints but the rig has {rig.joint_count}.")
    if not (np.all(np.isfinite(motion.rotations)) and np.all(np.isfinite(motion.root_positions))):
        raise ValueError("The motion contains non-finite values; nothing to clean up.")
    if int(blend_frames) != blend_frames or blend_frames < 0:
        raise ValueError(f"blend_frames must be a non-negative integer, got {blend_frames!r}.")
    feet = rig.foot_candidates(UP) if feet is None else np.asarray(feet).reshape(-1)
    if feet.size and not np.issubdtype(feet.dtype, np.integer):
        raise ValueError("feet must be joint indices (integers).")
    feet = feet.astype(np.int64)
    if np.any((feet < 0) | (feet >= rig.joint_count)):
        raise ValueError(f"A foot index is out of range for a rig of {rig.joint_count} joints.")
    if np.unique(feet).size != feet.size:
        raise ValueError("feet must not repeat a joint.")
    if contacts is not None:
        contacts = np.asarray(contacts)
        expected = (motion.frame_count, feet.size)
        if contacts.shape != expected:
            raise ValueError(f"contacts must be (frames, feet) = {expected}, got {contacts.shape}.")
        # Probabilities (e.g. the model's contact channel) are thresholded at one half.
        contacts = contacts > 0.5 if contacts.dtype != bool else contacts.copy()
    return feet, contacts


@dataclass(frozen=True)
class CleanupOptions:
    """How `clean_motion` cleans.

    ground: height of the ground plane (default: the lowest rest point of the rig); each foot's
    floor is its rest height above it. blend_frames: frames over which a lock fades in before and
    out after each contact. fix_penetration: raise the root where a joint is more than
    `penetration_tolerance` body sizes below its floor, then lock again. max_lock: contact runs whose
    lock would move the foot farther than this share of its leg's length are left as sampled
    (`plausible_contacts`; sampled contacts deserve that doubt). confirm: a given contact counts only
    in frames where the foot is also low and slow (the detection of `metrics.foot_contacts` at
    CONFIRM_SCALE times its thresholds): a sampled label that says "planted" under a striding foot
    would otherwise pin it for the whole stride.
    """

    ground: float | None = None
    blend_frames: int = 3
    fix_penetration: bool = True
    penetration_tolerance: float = PENETRATION_TOLERANCE
    max_lock: float = np.inf
    confirm: bool = False


def _floors(rig: Rig, feet: np.ndarray, ground: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each foot's floor (F,), each joint's floor (J,) and which joints hang below each foot (J,F)."""
    rest_height = rig.heads @ UP
    rest_ground = float(min(rest_height.min(), (rig.tails @ UP).min()))
    ground = rest_ground if ground is None else float(ground)
    floors = ground + rest_height[feet] - rest_ground
    # Per-joint floors for penetration: feet and what hangs below them (toes) at their rest height.
    joint_floor = np.full(rig.joint_count, ground)
    below_foot = np.zeros((rig.joint_count, feet.size), dtype=bool)
    for column, foot in enumerate(feet):
        below_foot[foot, column] = True
    for j in rig.topological_order:
        parent = rig.parents[j]
        if parent >= 0:
            below_foot[j] |= below_foot[parent]
    in_foot = below_foot.any(axis=1)
    joint_floor[in_foot] = ground + rest_height[in_foot] - rest_ground
    return floors, joint_floor, below_foot


def _lift(rig: Rig, plan: _LockPlan, original: np.ndarray, world: np.ndarray, locked: _Locked,
          tolerance: float, blend_frames: int) -> tuple[_Locked, np.ndarray]:
    """Raise the root (T,) where a joint is more than `tolerance` (metres) below its floor, locking
    again after each lift; returns the last lock and the lift."""
    count = original.shape[0]
    raise_by = np.zeros(count)
    # A planted foot (and its toes) is on its floor already: lifting the body cannot help it.
    planted = np.zeros((count, rig.joint_count), dtype=bool)
    for leg in plan.legs:
        planted |= plan.contacts[:, leg.column, None] & plan.below_foot[None, :, leg.column]
    for _ in range(PENETRATION_PASSES):
        depth = plan.joint_floor[None] - locked.positions[..., 2]  # (T,J) how far below its floor
        need = np.clip(np.where(planted, -np.inf, depth).max(axis=1), 0.0, None)
        need = np.where(need > tolerance, need, 0.0)
        if not np.any(need > 0):
            break
        # Smallest lift as a smooth upper envelope (running max, then moving average); then lock
        # again from the lifted pose, so planted legs stretch back down to their footprints.
        raise_by = raise_by + smooth_upper(need, max(int(blend_frames), 1))
        locked = _lock(rig, plan, original + raise_by[:, None, None] * UP, world)
    return locked, raise_by


def clean_motion(
    rig: Rig,
    motion: Motion,
    contacts: np.ndarray | None = None,
    feet: np.ndarray | list[int] | None = None,
    options: CleanupOptions | None = None,
) -> CleanupResult:
    """Lock foot contacts with rotation-only IK, lift the body out of the floor; bone lengths stay exact.

    rig, motion: canonical frame (+Z up). contacts: (T,F) bools, or probabilities thresholded at
    0.5, one column per foot; None detects them with `metrics.foot_contacts`. feet: joint indices
    (default `rig.foot_candidates()`). options: see `CleanupOptions` (default: its defaults).

    Raises ValueError for mismatched shapes, bad feet or non-finite motion.
    """
    options = options or CleanupOptions()
    blend_frames, max_lock = options.blend_frames, options.max_lock
    feet, contacts = _check_inputs(rig, motion, contacts, feet, blend_frames)
    size = max(rig.body_size, 1e-12)
    floors, joint_floor, below_foot = _floors(rig, feet, options.ground)
    ground = Ground(floor=floors, body_size=size)

    pose = forward_kinematics(rig, motion)  # the only FK pass: later poses follow from the corrections
    original, world = pose[..., :3, 3], pose[..., :3, :3]
    if contacts is None:
        contacts = foot_contacts(original, feet, motion.fps, ground=ground)
    elif options.confirm:
        scale = CONFIRM_SCALE * size
        contacts = contacts & foot_contacts(original, feet, motion.fps, scale * CONTACT_HEIGHT,
                                            scale * CONTACT_SPEED, ground=ground)
    legs, chains, solvers = _plan_legs(rig, feet)
    notes: list[str] = []
    if np.isfinite(max_lock) and legs:
        columns = np.asarray([leg.column for leg in legs])
        lengths = np.asarray([np.linalg.norm(np.diff(rig.heads[leg.chain], axis=0), axis=-1).sum()
                              for leg in legs])
        kept, dropped = plausible_contacts(contacts[:, columns], original[:, feet[columns]], floors[columns],
                                           max_lock * lengths)
        contacts = contacts.copy()
        contacts[:, columns] = kept
        if dropped:
            notes.append(f"{dropped} contact runs left as sampled (their lock would move a foot more "
                         f"than {max_lock:.2g} leg lengths)")
    plan = _LockPlan(legs, contacts, floors, joint_floor, _ramp(int(blend_frames)), below_foot)
    count = motion.frame_count
    # Joints whose basis changes: chain bones (rotated) and feet (parent rotated, world kept).
    changed = np.unique(np.concatenate([leg.chain for leg in legs])) if legs else np.zeros(0, np.int64)

    def skating(points: np.ndarray) -> SkatingStats:
        return foot_skating(points, feet, motion.fps, contacts, ground=ground)

    def penetration(points: np.ndarray) -> PenetrationStats:
        return ground_penetration(points - joint_floor[:, None] * UP, floor=0.0, body_size=size,
                                  tolerance=options.penetration_tolerance * size)

    locked = _lock(rig, plan, original, world)
    raise_by = np.zeros(count)
    if options.fix_penetration and count:
        locked, raise_by = _lift(rig, plan, original, world, locked, options.penetration_tolerance * size,
                                 blend_frames)
        if np.any(raise_by):
            notes.append(f"root raised by up to {raise_by.max() / size:.3g} body sizes against penetration")
    root = motion.root_positions + raise_by[:, None] * UP
    cleaned = _apply(rig, motion, world, locked.corrections, changed, root)
    skipped = [f"{rig.names[int(f)]} ({why[9:]})" for f, why in zip(feet, solvers, strict=True)
               if why.startswith("skipped")]
    if skipped:
        notes.append("feet left as sampled: " + ", ".join(skipped))
    if locked.unreached:
        notes.append(f"{locked.unreached} locked foot-frames were out of reach (placed as near as the legs "
                     "reach)")
    return CleanupResult(
        motion=cleaned, feet=feet, contacts=contacts, floors=floors, chains=chains, solvers=solvers,
        weights=locked.weights, root_raise=raise_by,
        skating_before=skating(original), skating_after=skating(locked.positions),
        penetration_before=penetration(original), penetration_after=penetration(locked.positions),
        frames_adjusted=int(np.sum(locked.active.any(axis=1) | (raise_by > 0))), unreached=locked.unreached,
        notes=notes,
    )
