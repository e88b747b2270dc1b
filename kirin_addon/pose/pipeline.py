"""Pose Space's pipeline (ViPS): sample plausible poses, project an edit with sparse handles onto
plausible poses, and walk the pose space between keyposes — planned and composed here, around the
pose prior given as a `PoseNetwork` (the network and its DDIM sampler, models/pose/sampler.py).

All of them work on a `PosedRig` — a user's rig brought into the canonical frame with the
network's per-joint inputs ready — and on poses as world deltas seen from the creature's heading
(posed.py, space.py); `pose_from_motion` / `pose_to_motion` convert from and to the user's rig.

Projection is few-step guided sampling: the edit is first met by plain IK over the whole tree
(the unprojected edit), noised part-way up the schedule (SDEdit) and denoised in a few DDIM steps;
after every x0 prediction a couple of damped IK iterations pull the handles back onto their
targets, so the network decides everything the handles leave open (moving a paw moves the
shoulder) and the handles decide the rest. The last prediction is left unguided and then met by
a short, step-limited IK: a target the prior will not go near stays unmet, and the result says so
instead of folding the rig into it.

The network works in its own space, (N,J,6) float32 arrays of normalised 6D deltas
(`PoseNetwork.encode` / `decode`); what the pipeline composes there (a drag's relative correction,
a walk's residuals) is float32 arithmetic on those arrays.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from ..core.canonical import CanonicalFrame, canonical_rig
from ..core.rig import Rig
from ..core.rig_features import RigFeatures, rig_features
from ..core.rig_reduction import reduce_rig
from ..core.rotations import matrix_to_quat, orthonormalize, quat_slerp, quat_to_matrix, yaw_matrix
from ..core.skinning import SkinnedMesh
from .posed import Pose, PosedRig, PoseSpaceError, carried_between, whole_positions
from .space import (
    LIMIT_ROUNDS,
    MAX_STEP,
    Handle,
    JointLimits,
    Skeleton,
    SolveOptions,
    shrink_turns,
    solve_handles,
    solve_within_limits,
)

REACH_TOLERANCE = 0.02  # body sizes: a handle further than this from its target is "not reached"
PIN_WEIGHT = 4.0  # pinned joints weigh this much more than dragged ones
ROOT_STIFFNESS = 4.0  # the root turns the whole body: it gives way last
GUIDE_ITERATIONS = 2  # IK iterations after each x0 prediction
FINAL_ITERATIONS = 4
RIG_SAMPLES = 64  # prior samples a rig's joint stiffness and limits are measured on
RIG_SAMPLE_STEPS = 6
RIG_SEED = 1234
LIMIT_MARGIN = np.radians(10.0)  # beyond the widest angle the samples use
EDIT_ITERATIONS = 8
PROJECT_STEPS = 15  # over the whole schedule: 3 network calls at the drag's strength
DRAG_STRENGTH = 0.1
PROJECT_STRENGTH = 0.4
WALK_GUIDED_STRENGTH = 0.3
WALK_LATENT_STRENGTH = 0.5
MIN_SPREAD = np.radians(3.0)  # a joint that never turns in the samples is stiff, not frozen
STIFFNESS_POWER = 2.0
FINAL_STEP = 0.12  # radians per joint per final IK iteration: enough to close a small gap, not to fold
CORRECTION_NOISE = np.radians(4.0)  # a drag's correction turns each joint this much less (noise)
MAX_SAMPLES = 4096

Guide = Callable[[np.ndarray], np.ndarray]


class PoseNetwork(Protocol):
    """The pose prior as the pipeline is given it: the network and its DDIM sampler on plain arrays.
    Poses travel in the network's space, x (N,J,6) float32; `rig` is what `rig_inputs` returned."""

    def rig_inputs(self, features: RigFeatures, names: np.ndarray | None) -> object:
        """The network's encoding of a canonical rig: its features and (J,text) joint-name embeddings
        (None: none, as the prior was trained a fifth of the time); PoseSpaceError for bad names."""

    def encode(self, deltas: np.ndarray) -> np.ndarray:
        """(…,J,3,3) heading-frame deltas → (…,J,6) float32 network space."""

    def decode(self, x: np.ndarray) -> np.ndarray:
        """(…,J,6) network space → (…,J,3,3) heading-frame deltas."""

    def sample(self, rig: object, count: int, steps: int | None, seed: int) -> np.ndarray:
        """(count,J,6) poses by full DDIM from noise (`steps` None: the network's own count)."""

    def denoise(
        self, rig: object, init: np.ndarray, strength: float, steps: int, seed: int,
        guide: Guide | None = None,
    ) -> np.ndarray:
        """SDEdit of the rows of `init` (N,J,6) at `strength`, every row with one shared noise;
        `guide` sees every x0 prediction (N,J,6) but the last, which is the prior's own answer."""

    def invert(self, rig: object, x: np.ndarray, steps: int, strength: float) -> np.ndarray:
        """DDIM inversion: the latents (N,J,6) that `reconstruct` turns back into about `x`."""

    def reconstruct(self, rig: object, noise: np.ndarray, steps: int, strength: float) -> np.ndarray:
        """DDIM from the latents `noise` (N,J,6) at `strength` of the schedule."""

    def interpolate(self, a: np.ndarray, b: np.ndarray, shares: np.ndarray) -> np.ndarray:
        """(F,J,6) latents between two (J,6) latents at `shares` (F,), keeping their statistics."""


@dataclass
class Projection:
    pose: Pose
    edit: Pose  # the unprojected edit (plain IK to the same handles)
    handle_error: np.ndarray  # (H,) body sizes, after projection
    reached: bool
    message: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class ProjectOptions:
    """How `PosePipeline.project` meets an edit. `relative` (a drag): the prior's correction of the
    edit is measured against its correction of the pose itself, so what the edit leaves alone stays
    as the animator had it; off (Project Pose): the prior's own answer. `strength`: how far up the
    noise schedule it goes (None: 0.1 relative, 0.4 not); `steps` over the whole schedule; `seed` of
    the shared noise."""

    strength: float | None = None
    steps: int = PROJECT_STEPS
    seed: int = 0
    relative: bool = True


class PosePipeline:
    """Pose Space's operations on a given pose prior: `PosePipeline(network)`."""

    def __init__(self, network: PoseNetwork):
        self.network = network

    # ------------------------------------------------------------------ rig
    def prepare(
        self,
        rig: Rig,
        mesh: SkinnedMesh | None = None,
        names: np.ndarray | None = None,
        frame: CanonicalFrame | None = None,
    ) -> PosedRig:
        """`names`: (J,384) joint-name embeddings (the text encoder's), or None (zeros: the prior
        was trained with names dropped a fifth of the time). A rig of more than 64 bones is posed on
        its bones that matter (core/rig_reduction.py), in the canonical frame of those."""
        rig.validate()
        canon = canonical_rig(rig, frame)
        reduction = reduce_rig(rig, keep=canon.feet)
        whole = None
        if reduction.reduced:
            whole = Skeleton.from_rig(canonical_rig(rig, reduction.canonical_frame(canon.frame)).rig)
            canon = canonical_rig(reduction.rig, reduction.canonical_frame(canon.frame))
            mesh = None if mesh is None else reduction.reduce_mesh(mesh)
            names = None if names is None else np.asarray(names)[reduction.keep]
        features = rig_features(canon.rig, canon.feet, mesh, canon.frame.matrix())
        inputs = self.network.rig_inputs(features, names)
        skeleton = Skeleton.from_rig(canon.rig)
        return PosedRig(rig, canon.frame, skeleton, inputs, reduction=reduction, whole=whole)

    def learn_rig(self, posed: PosedRig) -> PosedRig:
        """What the prior says of this rig, from its own samples (cached on `posed`):
        - stiffness (J,): how much each joint resists turning in IK, from how much it turns in the
          samples: a back that never bends stays straight while a leg reaches — semantic IK rather
          than an even spread over every ancestor;
        - joint limits: the widest swing and twist the samples use (plus a margin), which random
          poses of the rig are drawn inside (the inverse-dynamics model's training poses)."""
        if posed.stiffness is None or posed.limits is None or posed.mobility is None:
            samples = self.sample(posed, RIG_SAMPLES, steps=RIG_SAMPLE_STEPS, seed=RIG_SEED)
            local = posed.skeleton.local_rotations(samples)
            mean = orthonormalize(local.mean(axis=0))
            cosine = (np.trace(np.swapaxes(mean, -1, -2)[None] @ local, axis1=-2, axis2=-1) - 1.0) / 2.0
            spread = np.sqrt(np.mean(np.arccos(np.clip(cosine, -1.0, 1.0)) ** 2, axis=0))
            stiffness = 1.0 / (spread + MIN_SPREAD) ** STIFFNESS_POWER
            stiffness /= np.median(stiffness)
            stiffness[posed.skeleton.parents < 0] *= ROOT_STIFFNESS
            posed.stiffness = stiffness
            posed.mobility = spread**2 / (spread**2 + MIN_SPREAD**2)
            posed.limits = JointLimits.from_poses(posed.skeleton, samples, margin=LIMIT_MARGIN)
        return posed

    # ------------------------------------------------------------------ operations
    def sample(
        self,
        posed: PosedRig,
        count: int = 1,
        steps: int | None = None,
        seed: int = 0,
        ranges: JointLimits | None = None,
    ) -> np.ndarray:
        """(count,J,3,3) plausible poses of the skeleton (heading frame), full DDIM from noise; with
        `ranges` (the rig's own joint ranges, as for `project`) brought inside them
        (`JointLimits.clamp`)."""
        if not 1 <= count <= MAX_SAMPLES:
            raise PoseSpaceError(f"Sample between 1 and {MAX_SAMPLES} poses.")
        poses = self.network.decode(self.network.sample(posed.inputs, count, steps, seed))
        ranges = posed.reduced_limits(ranges)
        return poses if ranges is None else ranges.clamp(posed.skeleton, poses)

    def project(
        self,
        posed: PosedRig,
        pose: Pose,
        targets: dict[int, np.ndarray],
        pins: list[int] | tuple[int, ...] = (),
        ranges: JointLimits | None = None,
        options: ProjectOptions | None = None,
    ) -> Projection:
        """The plausible pose nearest `pose` whose joints `targets` (joint → canonical point) reach
        their targets, with `pins` kept where they are. `ranges`: the rig's own joint ranges
        (`JointLimits.from_motion` of its actions): every IK step keeps inside them where the handles
        allow (`solve_within_limits`). `options`: relative (a drag) or not, strength, steps, seed
        (`ProjectOptions`)."""
        started = time.perf_counter()
        options = ProjectOptions() if options is None else options
        handles = _handles(posed, pose, targets, pins)
        ranges = posed.reduced_limits(ranges)
        if options.strength is None:
            options = replace(options, strength=DRAG_STRENGTH if options.relative else PROJECT_STRENGTH)
        self.learn_rig(posed)
        reach = _reacher(posed.skeleton, handles, ranges, posed.stiffness)
        edit = reach(pose.deltas, EDIT_ITERATIONS)
        network = self.network

        def guide(x0: np.ndarray) -> np.ndarray:
            guided = reach(network.decode(x0[0]), GUIDE_ITERATIONS, rounds=1)  # the edit's stiffness will do
            return np.concatenate([network.encode(guided)[None], x0[1:]])

        corrected = self._corrected(posed, pose, edit, options, guide)
        result = reach(corrected, FINAL_ITERATIONS, FINAL_STEP)
        reached_at = posed.skeleton.positions(result)[[h.joint for h in handles]]
        error = np.linalg.norm(reached_at - np.array([h.target for h in handles]), axis=-1)
        reached = bool(error.max() <= REACH_TOLERANCE)
        message = (
            ""
            if reached
            else (
                f"Out of plausible reach: the pose goes as far as it plausibly can, "
                f"{error.max():.2f} body sizes short of the target."
            )
        )
        return Projection(
            Pose(result, pose.root.copy(), pose.yaw, pose.carried),
            Pose(edit, pose.root.copy(), pose.yaw, pose.carried),
            error,
            reached,
            message,
            time.perf_counter() - started,
        )

    def _corrected(
        self, posed: PosedRig, pose: Pose, edit: np.ndarray, options: ProjectOptions, guide: Guide
    ) -> np.ndarray:
        """The edit (J,3,3) after the prior's correction: SDEdit at `options.strength` with `guide`
        pulling every prediction but the last onto the handles."""
        network = self.network
        start = network.encode(pose.deltas)
        edit_x = network.encode(edit)
        rows = np.stack([edit_x, start] if options.relative else [edit_x])
        denoised = network.denoise(posed.inputs, rows, options.strength, options.steps, options.seed, guide)
        # Relative: what the prior does to the edit, less what it does to the pose the edit started
        # from (the animator's own pose, plausible by their word): its reconstruction bias cancels.
        if not options.relative:
            return network.decode(denoised[0])
        # Trusted where the prior itself moves the joint: on a joint it never turns (a pole
        # target, a rigid trunk), a correction is the network's noise, not knowledge.
        trust = posed.mobility.astype(np.float32)[:, None]
        x = edit_x + trust * (denoised[0] - denoised[1] + start - edit_x)
        # Turns of a few degrees are the network's noise, not knowledge (off the drag they push
        # joints a rig never moves past its range): every joint's correction loses that much.
        return shrink_turns(posed.skeleton, edit, network.decode(x), CORRECTION_NOISE)

    def walk(
        self,
        posed: PosedRig,
        keys: list[Pose],
        frames: list[int],
        method: str = "guided",
        strength: float | None = None,
        steps: int = 10,
        seed: int = 0,
        ranges: JointLimits | None = None,
    ) -> list[Pose]:
        """In-betweens through the pose space: `keys` (K ≥ 2) with frames[i] frames from key i to
        key i+1 (the keys included once each); the keys come back exactly.

        - "guided": each in-between starts as the keys' per-joint slerp and is denoised part-way
          (`strength`, default 0.3) with one shared noise; the prior's correction of the keys
          themselves is subtracted (blended across the gap), so what moves is what the prior finds
          implausible in the blend, and neighbouring frames stay neighbours;
        - "latent" (ViPS' walk): each key is DDIM-inverted part-way (default 0.5), the latents are
          slerped and decoded; the keys' reconstruction error is spread linearly.

        `ranges` (the rig's own joint ranges, as for `project`): in-betweens are brought inside them
        (`JointLimits.clamp`); the keys are left as they are."""
        if len(keys) < 2 or len(frames) != len(keys) - 1 or min(frames, default=0) < 1:
            raise PoseSpaceError(
                "Walk needs two or more keyposes and a positive frame count between each pair."
            )
        if method not in ("guided", "latent"):
            raise PoseSpaceError(f"Unknown walk method {method!r} (guided or latent).")
        network, rig = self.network, posed.inputs
        ranges = posed.reduced_limits(ranges)
        stack = np.stack([k.deltas for k in keys])
        keys_x = network.encode(stack)
        if method == "latent":
            strength = WALK_LATENT_STRENGTH if strength is None else strength
            noise = network.invert(rig, keys_x, steps, strength)
            residual = keys_x - self._reconstructed(rig, noise, steps, strength)
        else:
            strength = WALK_GUIDED_STRENGTH if strength is None else strength
            residual = keys_x - network.denoise(rig, keys_x, strength, steps, seed)
        out: list[Pose] = []
        for i, count in enumerate(frames):
            s = frame_shares(count, last=i == len(frames) - 1)
            if method == "latent":
                latents = network.interpolate(noise[i], noise[i + 1], s)
                decoded = self._reconstructed(rig, latents, steps, strength)
            else:
                blend = _slerp_deltas(stack[i], stack[i + 1], s.astype(np.float64))
                decoded = network.denoise(rig, network.encode(blend), strength, steps, seed)
            decoded = decoded + (1 - s)[:, None, None] * residual[i] + s[:, None, None] * residual[i + 1]
            deltas = network.decode(decoded)
            if ranges is not None:
                between = (s > 0) & (s < 1)
                deltas[between] = ranges.clamp(posed.skeleton, deltas[between])
            a, b = keys[i], keys[i + 1]
            for k, share in enumerate(s):
                root = (1 - share) * a.root + share * b.root
                carried = carried_between(a, b, float(share))
                out.append(Pose(deltas[k], root, float((1 - share) * a.yaw + share * b.yaw), carried))
        return out

    def _reconstructed(self, rig: object, noise: np.ndarray, steps: int, strength: float) -> np.ndarray:
        """The poses DDIM makes of latents, back in network space through the poses (as the keys were)."""
        network = self.network
        return network.encode(network.decode(network.reconstruct(rig, noise, steps, strength)))


def frame_shares(count: int, last: bool) -> np.ndarray:
    """(count,) float32 shares 0 … (count-1)/count of a walk's gap of `count` frames; the last gap
    gets (count+1,), 1 included. Each share is k·(1/count) counted from the nearer end of the gap and
    rounded once to float32 — the rounding the walks have always had (the sampler's linspace), so
    in-betweens stay bit-identical."""
    step = float(np.float32(1.0) / np.float32(count))
    index = np.arange(count + 1)
    shares = np.where(index < (count + 1) // 2, step * index, 1.0 - step * (count - index)).astype(np.float32)
    return shares if last else shares[:-1]


def _handles(
    posed: PosedRig, pose: Pose, targets: dict[int, np.ndarray], pins: list[int] | tuple[int, ...]
) -> list[Handle]:
    """The IK handles of a projection: the targets (canonical points) in the pose's heading frame,
    then the pins where the pose has them (a pinned joint that is also a target is a target). Joints
    are the user's rig's; on a reduced rig a left-out joint (a fingertip) is moved by its anchor (the
    hand), its target shifted by where the joint sits from the anchor."""
    count = posed.joint_count
    if not targets:
        raise PoseSpaceError("Give at least one joint to move.")
    for joint in list(targets) + list(pins):
        if not 0 <= int(joint) < count:
            raise PoseSpaceError(f"Joint {joint} is not in the rig ({count} joints).")
    reduction = posed.reduction
    turn = yaw_matrix(np.array(pose.yaw))
    positions = whole_positions(posed, pose)
    handles: dict[int, Handle] = {}
    for j, p in targets.items():
        anchor = int(reduction.anchor[int(j)])
        if anchor < 0:
            raise PoseSpaceError(f"Joint {j} moves with no bone of the body: drag a bone of the body.")
        k = int(reduction.index[anchor])
        shift = positions[anchor] - positions[int(j)]  # zero for a joint the skeleton has
        handles.setdefault(k, Handle(k, turn.T @ (np.asarray(p, np.float64) - pose.root) + shift))
    for j in pins:
        anchor = int(reduction.anchor[int(j)])
        if anchor >= 0 and int(reduction.index[anchor]) not in handles:
            k = int(reduction.index[anchor])
            handles[k] = Handle(k, positions[anchor], PIN_WEIGHT)
    return list(handles.values())


def _reacher(
    skeleton: Skeleton, handles: list[Handle], ranges: JointLimits | None, stiffness: np.ndarray | None
) -> Callable[..., np.ndarray]:
    """IK of deltas onto `handles` with the rig's `stiffness`, `reach(deltas, iterations, max_step,
    rounds)`; with `ranges`, inside them, and joints one solve found past their range stay stiff in
    the next."""

    def reach(
        deltas: np.ndarray, iterations: int, max_step: float = MAX_STEP, rounds: int = LIMIT_ROUNDS
    ) -> np.ndarray:
        nonlocal stiffness
        options = SolveOptions(iterations, max_step=max_step)
        if ranges is None:
            return solve_handles(skeleton, deltas, handles, stiffness=stiffness, options=options)
        solved, stiffness = solve_within_limits(
            skeleton, deltas, handles, ranges, stiffness, rounds, options=options
        )
        return solved

    return reach


def _slerp_deltas(a: np.ndarray, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Per-joint slerp of two poses (J,3,3) at shares s (F,) → (F,J,3,3)."""
    qa, qb = matrix_to_quat(a), matrix_to_quat(b)
    return quat_to_matrix(quat_slerp(qa[None], qb[None], s[:, None]))
