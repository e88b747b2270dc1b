"""The pose prior's operations (ViPS): sample plausible poses, DDIM-invert a pose, project an edit
with sparse handles onto plausible poses, and walk the pose space between keyposes.

All of them work on a `PosedRig` — a user's rig brought into the canonical frame with the
network's per-joint inputs ready — and on poses as world deltas seen from the creature's heading
(kirin_addon/pose/space.py); `pose_from_motion` / `pose_to_motion` convert from and to the user's
rig (a one-frame `Motion`, local rotations as Blender keys them).

Projection is few-step guided sampling: the edit is first met by plain IK over the whole tree
(the unprojected edit), noised part-way up the schedule (SDEdit) and denoised in a few DDIM steps;
after every x0 prediction a couple of damped IK iterations pull the handles back onto their
targets, so the network decides everything the handles leave open (moving a paw moves the
shoulder) and the handles decide the rest. The last prediction is left unguided and then met by
a short, step-limited IK: a target the prior will not go near stays unmet, and the result says so
instead of folding the rig into it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from ...kirin_addon.core.canonical import CanonicalFrame, canonical_rig
from ...kirin_addon.core.motion import Motion, forward_kinematics, motion_from_world_deltas
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.rig_features import EDGE_TYPES, MAX_HOPS, rig_features
from ...kirin_addon.core.rotations import (
    heading,
    matrix_to_6d,
    matrix_to_quat,
    orthonormalize,
    quat_slerp,
    quat_to_matrix,
    sixd_to_matrix,
    yaw_matrix,
)
from ...kirin_addon.core.skinning import SkinnedMesh
from ...kirin_addon.pose.space import (
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
from ..config import DiffusionConfig
from ..diffusion import DDIMOptions, Diffusion
from .config import PoseDenoiserConfig
from .denoiser import PoseDenoiser

DEFAULT_POSE_MODEL = Path(__file__).resolve().parents[1] / "weights" / "pose"
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


class PoseSpaceError(ValueError):
    """Bad input to a pose-space operation; the message is user-facing."""


@dataclass
class PosedRig:
    """A rig ready for the prior: its canonical form, pose skeleton and network inputs (batch 1)."""

    rig: Rig
    frame: CanonicalFrame
    skeleton: Skeleton
    inputs: dict[str, torch.Tensor]
    stiffness: np.ndarray | None = None  # (J,) from the prior's own samples (`PosePrior.learn_rig`)
    limits: JointLimits | None = None  # the joint limits the prior's samples keep to
    mobility: np.ndarray | None = None  # (J,) in [0,1): how freely each joint turns in the samples

    @property
    def joint_count(self) -> int:
        return self.rig.joint_count


@dataclass
class Pose:
    """A pose of a `PosedRig`: heading-frame world deltas, the root in canonical space, the heading."""

    deltas: np.ndarray  # (J,3,3)
    root: np.ndarray  # (3,) canonical position of the main root
    yaw: float = 0.0


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
    """How `PosePrior.project` meets an edit. `relative` (a drag): the prior's correction of the edit
    is measured against its correction of the pose itself, so what the edit leaves alone stays as the
    animator had it; off (Project Pose): the prior's own answer. `strength`: how far up the noise
    schedule it goes (None: 0.1 relative, 0.4 not); `steps` over the whole schedule; `seed` of the
    shared noise."""

    strength: float | None = None
    steps: int = PROJECT_STEPS
    seed: int = 0
    relative: bool = True


@dataclass
class PriorRunner:
    """The network as a function of (x, t) for one rig, batch broadcast (torch or onnxruntime)."""

    net: object
    inputs: dict[str, torch.Tensor] = field(default_factory=dict)

    def __call__(self, x: torch.Tensor, t: torch.Tensor, _on: torch.Tensor | None = None) -> torch.Tensor:
        batch = x.shape[0]
        expanded = {k: v.expand(batch, *v.shape[1:]) for k, v in self.inputs.items()}
        with torch.inference_mode():
            return self.net(x=x, t=t, **expanded).float()


class PosePrior:
    """A trained pose prior: `PosePrior.load()` reads the shipped weights."""

    def __init__(
        self, net, config: PoseDenoiserConfig, diffusion: DiffusionConfig, mean, std, card: dict | None = None
    ):
        self.net = net
        self.config = config
        self.diffusion_config = diffusion
        self.diffusion = Diffusion(diffusion.steps, diffusion.schedule)
        self.mean = np.asarray(mean, np.float64)
        self.std = np.asarray(std, np.float64)
        self.card = card or {}
        self._prepared: dict[int, PosedRig] = {}

    @classmethod
    def load(cls, folder: str | Path = DEFAULT_POSE_MODEL, backend: str = "auto") -> PosePrior:
        """`backend`: "onnx", "torch", or "auto" (ONNX when the folder has it and onnxruntime runs)."""
        from safetensors.torch import load_file

        folder = Path(folder)
        if not (folder / "model.json").exists():
            raise PoseSpaceError(f"No pose prior at {folder} (model.json missing)")
        card = json.loads((folder / "model.json").read_text())
        config = PoseDenoiserConfig(**card["model"])
        diffusion = DiffusionConfig(**card["diffusion"])
        net = None
        onnx_file = folder / "pose_denoiser.onnx"
        if backend in ("auto", "onnx") and onnx_file.exists():
            try:
                from ..onnx import OnnxDenoiser
                from .export import POSE_ONNX_INPUTS

                net = OnnxDenoiser(onnx_file, threads=1, inputs=POSE_ONNX_INPUTS)
            except (ImportError, OSError, RuntimeError) as exc:
                if backend == "onnx":
                    raise PoseSpaceError(f"Cannot run the ONNX pose prior: {exc}") from exc
        if net is None:
            net = PoseDenoiser(config)
            net.load_state_dict(load_file(str(folder / "pose_denoiser.safetensors")))
            net.eval()
        return cls(net, config, diffusion, card["mean"], card["std"], card)

    # ------------------------------------------------------------------ rig
    def prepare(
        self,
        rig: Rig,
        mesh: SkinnedMesh | None = None,
        names: np.ndarray | None = None,
        frame: CanonicalFrame | None = None,
    ) -> PosedRig:
        """`names`: (J,384) joint-name embeddings (the text encoder's), or None (zeros: the prior
        was trained with names dropped a fifth of the time)."""
        rig.validate()
        canon = canonical_rig(rig, frame)
        features = rig_features(canon.rig, canon.feet, mesh, canon.frame.matrix())
        count = rig.joint_count
        names = (
            np.zeros((count, self.config.text_dim), np.float32)
            if names is None
            else np.asarray(names, np.float32)
        )
        if names.shape != (count, self.config.text_dim):
            raise PoseSpaceError(f"Joint-name embeddings must be ({count}, {self.config.text_dim}).")
        inputs = {
            "geometry": torch.from_numpy(features.geometry)[None],
            "skin": torch.from_numpy(features.skin)[None],
            "names": torch.from_numpy(names)[None],
            "hops": torch.from_numpy(np.minimum(features.hops, MAX_HOPS))[None],
            "edges": torch.from_numpy(np.minimum(features.edges, EDGE_TYPES - 1))[None],
            "joint_mask": torch.ones(1, count, dtype=torch.bool),
        }
        return PosedRig(rig, canon.frame, Skeleton.from_rig(canon.rig), inputs)

    # ------------------------------------------------------------------ representation
    def encode(self, deltas: np.ndarray) -> torch.Tensor:
        """(…,J,3,3) heading-frame deltas → normalised network space (…,J,6)."""
        return torch.from_numpy(((matrix_to_6d(deltas) - self.mean) / self.std).astype(np.float32))

    def decode(self, x: torch.Tensor) -> np.ndarray:
        return sixd_to_matrix(x.detach().numpy().astype(np.float64) * self.std + self.mean)

    def _runner(self, posed: PosedRig) -> PriorRunner:
        return PriorRunner(self.net, posed.inputs)

    # ------------------------------------------------------------------ operations
    def sample(
        self,
        posed: PosedRig,
        count: int = 1,
        steps: int | None = None,
        seed: int = 0,
        ranges: JointLimits | None = None,
    ) -> np.ndarray:
        """(count,J,3,3) plausible poses (heading frame), full DDIM from noise; with `ranges` (the
        rig's own joint ranges, as for `project`) brought inside them (`JointLimits.clamp`)."""
        if not 1 <= count <= 4096:
            raise PoseSpaceError("Sample between 1 and 4096 poses.")
        generator = torch.Generator().manual_seed(seed)
        shape = (count, posed.joint_count, self.config.channels)
        x = self.diffusion.sample_ddim(
            self._runner(posed), shape, DDIMOptions(steps or self.diffusion_config.sample_steps), generator
        )
        poses = self.decode(x)
        return poses if ranges is None else ranges.clamp(posed.skeleton, poses)

    def invert(
        self, posed: PosedRig, deltas: np.ndarray, steps: int = 20, strength: float = 1.0
    ) -> torch.Tensor:
        """DDIM inversion: the noise (N,J,6) that `reconstruct` turns back into the poses (N,J,3,3)."""
        return self.diffusion.invert_ddim(
            self._runner(posed), self.encode(np.asarray(deltas)), steps, strength
        )

    def reconstruct(
        self, posed: PosedRig, noise: torch.Tensor, steps: int = 20, strength: float = 1.0
    ) -> np.ndarray:
        x = self.diffusion.sample_ddim(
            self._runner(posed), tuple(noise.shape), DDIMOptions(steps, strength=strength), noise=noise
        )
        return self.decode(x)

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
        if options.strength is None:
            options = replace(options, strength=DRAG_STRENGTH if options.relative else PROJECT_STRENGTH)
        self.learn_rig(posed)
        reach = _reacher(posed.skeleton, handles, ranges, posed.stiffness)
        edit = reach(pose.deltas, EDIT_ITERATIONS)

        def guide(x0: torch.Tensor) -> torch.Tensor:
            guided = reach(self.decode(x0[0]), GUIDE_ITERATIONS, rounds=1)  # the edit's stiffness will do
            return torch.cat([self.encode(guided)[None], x0[1:]])

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
            Pose(result, pose.root.copy(), pose.yaw),
            Pose(edit, pose.root.copy(), pose.yaw),
            error,
            reached,
            message,
            time.perf_counter() - started,
        )

    def _corrected(
        self,
        posed: PosedRig,
        pose: Pose,
        edit: np.ndarray,
        options: ProjectOptions,
        guide: Callable[[torch.Tensor], torch.Tensor],
    ) -> np.ndarray:
        """The edit (J,3,3) after the prior's correction: SDEdit at `options.strength` with `guide`
        pulling every prediction but the last onto the handles."""
        start = self.encode(pose.deltas)
        edit_x = self.encode(edit)
        rows = torch.stack([edit_x, start] if options.relative else [edit_x])
        denoised = self._denoise(posed, rows, options.strength, options.steps, options.seed, guide)
        # Relative: what the prior does to the edit, less what it does to the pose the edit started
        # from (the animator's own pose, plausible by their word): its reconstruction bias cancels.
        if not options.relative:
            return self.decode(denoised[0])
        # Trusted where the prior itself moves the joint: on a joint it never turns (a pole
        # target, a rigid trunk), a correction is the network's noise, not knowledge.
        trust = torch.from_numpy(posed.mobility.astype(np.float32))[:, None]
        x = edit_x + trust * (denoised[0] - denoised[1] + start - edit_x)
        # Turns of a few degrees are the network's noise, not knowledge (off the drag they push
        # joints a rig never moves past its range): every joint's correction loses that much.
        return shrink_turns(posed.skeleton, edit, self.decode(x), CORRECTION_NOISE)

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

    def _denoise(
        self,
        posed: PosedRig,
        init: torch.Tensor,
        strength: float,
        steps: int,
        seed: int,
        guide: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """SDEdit of a batch of poses (N,J,6), every row with the same noise (so rows that differ a
        little come out differing a little); `guide` sees every x0 prediction but the last, which is
        the prior's own answer."""
        generator = torch.Generator().manual_seed(seed)
        noise = torch.randn((1,) + tuple(init.shape[1:]), generator=generator).expand_as(init).clone()
        calls = {"n": 0}
        total = max(2, int(np.ceil(steps * strength)))

        def hook(x0: torch.Tensor) -> torch.Tensor:
            calls["n"] += 1
            return guide(x0) if guide is not None and calls["n"] < total else x0

        return self.diffusion.sample_ddim(
            self._runner(posed),
            tuple(init.shape),
            DDIMOptions(steps, strength=strength, hook=hook),
            noise=noise,
            init=init,
        )

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
        stack = np.stack([k.deltas for k in keys])
        if method == "latent":
            strength = WALK_LATENT_STRENGTH if strength is None else strength
            noise = self.invert(posed, stack, steps, strength)
            residual = self.encode(stack) - self.encode(self.reconstruct(posed, noise, steps, strength))
        else:
            strength = WALK_GUIDED_STRENGTH if strength is None else strength
            keys_x = self.encode(stack)
            residual = keys_x - self._denoise(posed, keys_x, strength, steps, seed)
        out: list[Pose] = []
        for i, count in enumerate(frames):
            last = i == len(frames) - 1
            s = torch.linspace(0.0, 1.0, count + 1)[: None if last else -1]
            if method == "latent":
                decoded = self.encode(
                    self.reconstruct(posed, _slerp(noise[i], noise[i + 1], s), steps, strength)
                )
            else:
                blend = _slerp_deltas(stack[i], stack[i + 1], s.numpy().astype(np.float64))
                decoded = self._denoise(posed, self.encode(blend), strength, steps, seed)
            decoded = decoded + (1 - s)[:, None, None] * residual[i] + s[:, None, None] * residual[i + 1]
            deltas = self.decode(decoded)
            if ranges is not None:
                between = ((s > 0) & (s < 1)).numpy()
                deltas[between] = ranges.clamp(posed.skeleton, deltas[between])
            a, b = keys[i], keys[i + 1]
            for k, share in enumerate(s.numpy()):
                root = (1 - share) * a.root + share * b.root
                out.append(Pose(deltas[k], root, float((1 - share) * a.yaw + share * b.yaw)))
        return out


def _handles(
    posed: PosedRig, pose: Pose, targets: dict[int, np.ndarray], pins: list[int] | tuple[int, ...]
) -> list[Handle]:
    """The IK handles of a projection: the targets (canonical points) in the pose's heading frame,
    then the pins where the pose has them (a pinned joint that is also a target is a target)."""
    count = posed.joint_count
    if not targets:
        raise PoseSpaceError("Give at least one joint to move.")
    for joint in list(targets) + list(pins):
        if not 0 <= int(joint) < count:
            raise PoseSpaceError(f"Joint {joint} is not in the rig ({count} joints).")
    turn = yaw_matrix(np.array(pose.yaw))
    positions = posed.skeleton.positions(pose.deltas)
    handles = [
        Handle(int(j), turn.T @ (np.asarray(p, np.float64) - pose.root)) for j, p in targets.items()
    ]
    handles += [Handle(int(j), positions[int(j)], PIN_WEIGHT) for j in pins if int(j) not in targets]
    return handles


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


def _slerp(a: torch.Tensor, b: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """Spherical interpolation of two Gaussian latents (keeps their norm statistics)."""
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    cos = torch.dot(flat_a, flat_b) / (flat_a.norm() * flat_b.norm()).clamp(min=1e-12)
    omega = torch.arccos(cos.clamp(-1.0, 1.0))
    if omega.abs() < 1e-4:
        return (1 - s)[:, None, None] * a + s[:, None, None] * b
    sa = torch.sin((1 - s) * omega) / torch.sin(omega)
    sb = torch.sin(s * omega) / torch.sin(omega)
    return sa[:, None, None] * a + sb[:, None, None] * b


# ----------------------------------------------------------------------------- the user's rig
def pose_from_motion(posed: PosedRig, motion: Motion, frame: int = 0) -> Pose:
    """One frame of a motion on the user's rig as a heading-frame pose."""
    motion.check_rig(posed.rig)
    world = forward_kinematics(posed.rig, motion.sliced(frame, frame + 1))[0]
    deltas = posed.frame.to_canonical_rotations(
        world[:, :3, :3] @ np.swapaxes(posed.rig.rest_rotations, -1, -2)
    )
    root = posed.frame.to_canonical_points(world[posed.rig.main_root, :3, 3])
    yaw = float(heading(deltas[posed.rig.main_root][None])[0])
    return Pose(yaw_matrix(np.array(-yaw)) @ deltas, root, yaw)


def pose_to_motion(posed: PosedRig, poses: list[Pose], fps: float = 30.0) -> Motion:
    """Poses back on the user's rig (local rotations as Blender keys them, the root where it was)."""
    deltas = np.stack([yaw_matrix(np.array(p.yaw)) @ p.deltas for p in poses])
    arm = posed.frame.from_canonical_rotations(deltas)
    roots = posed.frame.from_canonical_points(np.stack([p.root for p in poses]))
    return motion_from_world_deltas(posed.rig, matrix_to_quat(arm), roots, fps)


def target_to_canonical(posed: PosedRig, point: np.ndarray) -> np.ndarray:
    """An armature-space point (a drag target) in the canonical frame."""
    return posed.frame.to_canonical_points(np.asarray(point, np.float64))
