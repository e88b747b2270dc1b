"""Generate Motion's pipeline: a request on a rig → motions on that rig, the network given.

    validate the rig → canonical frame → roles → plan the prompt →
        construct (the gait controllers: construct.py)
      | retrieve (the motion bank: retrieval.py) → the network samples (network.py)
    → features → motion on the canonical rig → clean-up → the user's rig → kept frames pinned

Like a diffusers pipeline is composed from a model and a scheduler, `GeneratePipeline` is given
its network as an object with the small protocol of network.py (models/motion/generator.py's
`MotionModel` in the backend) and does everything else itself, numpy only: a prompt made by
construction (gaits, an idle, a jump) needs no network at all, and with `network=None` a prompt
that does is refused with a clear message.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..core.canonical import CanonicalFrame, CanonicalRig, canonical_rig
from ..core.motion import Motion
from ..core.rig import Rig
from ..core.rig_features import rig_features
from ..core.rig_reduction import RigReduction, reduce_rig
from ..core.skinning import SkinnedMesh
from ..library.captions.phrasing import stated_direction
from .construct import construct_motion, construction_roles
from .features import CONTACT, motion_features
from .guard import UNGUARDED, ClipGuard, without_extras
from .map_back import Start, nearest_legs, on_rig, pin_kept
from .network import GenerationError, KeptFeatures, MotionNetwork, Progress, SampleRequest, token_layout
from .plan import plan_prompt
from .reduced_rig import carried_back, reduced_canon, reduced_joints, reduced_request
from .request import GenerateRequest
from .retrieval import MotionBank, RetrievalConfig, Retrieved, fit_length, retime, retime_rows
from .rig_roles import RoleError

MODEL_FPS = 30.0  # the rate motions are made at without a network (the shipped network's)
KEEP_STRENGTH = 0.6  # a retrieved clip under kept frames (in-betweening) starts this far along the noise
RIG_CACHE = 8  # prepared rigs kept: Generate Motion is usually run many times on one character
# After sampling, the pipeline reports (where a cancel is seen) between variants at most this often:
# a short job makes no report of its own, a long one is stopped within about this long.
REPORT_SECONDS = 0.25
NEEDS_NETWORK = (
    "This request needs the motion network, which is not loaded here: without it Generate Motion "
    "makes only gaits (walking, trotting, running...), an idle or a jump, from a prompt alone (no "
    "reference image, kept keys or loop)."
)


@dataclass
class PreparedRig:
    """What the pipeline works out of a rig once: its canonical frame and feet, and (on first use) the
    network's encoding of it."""

    rig: Rig
    canon: CanonicalRig
    mesh: SkinnedMesh | None = None  # the rig's skin (armature space), where it has one
    encoded: Any = None  # the network's encoding (MotionNetwork.encode_rig) ...
    encoded_by: Any = None  # ... by this network
    # More than 64 bones: the network makes the motion of the bones that matter (reduced_rig.py).
    reduction: RigReduction | None = None
    small: PreparedRig | None = None  # ... the reduced rig, prepared

    @property
    def feet(self) -> np.ndarray:
        return self.canon.feet


@dataclass
class Generated:
    motion: Motion  # on the user's rig, armature space
    features: np.ndarray  # (T,J,C) denormalised model features (canonical frame)
    contacts: np.ndarray  # (T,F) predicted planted feet (F = prepared.feet)
    seed: int
    report: dict = field(default_factory=dict)


@dataclass
class SamplingOptions:
    """How a request is made: what the backend leaves at its defaults and benchmarks, evaluation and
    tests tune."""

    steps: int | None = None  # sampling steps; None: the network's
    sampler: str = "ddim"  # or "ancestral" (the full-length reference sampler, benchmarks)
    clean: bool = True  # the foot-lock clean-up
    smooth: float = 1.0  # frames (a Gaussian sigma) evening out the seams between tokens; 0: off
    keep_joints: np.ndarray | None = None  # with the request's `keep`: only these joints are kept
    image_encoder: str | None = None  # None: the default image encoder
    bank: MotionBank | None = None  # the library to retrieve from; None: the pipeline's own
    retrieval: RetrievalConfig | None = None  # None: the defaults
    construct: bool = True  # by construction where the prompt asks only for gaits (or an idle, a jump)
    guard: bool = True  # no broken variant (guard.py); False: each as made (evaluating the network itself)


class GeneratePipeline:
    """Generate Motion on any rig, given a motion network (None: construction only) and a motion
    bank to retrieve from (None: none). `fps`: the rate motions are made at without a network."""

    def __init__(self, network: MotionNetwork | None, bank: MotionBank | None = None, fps: float = MODEL_FPS):
        self.network = network
        self.bank = bank
        self.fps = float(network.fps) if network is not None else float(fps)
        self._rigs: OrderedDict[str, PreparedRig] = OrderedDict()
        self._rigs_lock = threading.Lock()

    # ------------------------------------------------------------------ rig
    def prepare(
        self,
        rig: Rig,
        mesh: SkinnedMesh | None = None,
        frame: CanonicalFrame | None = None,
        key: str | None = None,
    ) -> PreparedRig:
        """The rig validated and brought into its canonical frame (`frame`, else detected); with a
        `key` (the rig's identity, its mesh included) the last RIG_CACHE rigs are kept."""
        if key is not None:
            with self._rigs_lock:
                if key in self._rigs:
                    self._rigs.move_to_end(key)
                    return self._rigs[key]
        rig.validate()
        prepared = PreparedRig(rig, canonical_rig(rig, frame, mesh), mesh)  # controls: what no skin follows
        reduction = reduce_rig(rig, keep=prepared.feet)
        if reduction.reduced:
            small_mesh = None if mesh is None else reduction.reduce_mesh(mesh)
            small = PreparedRig(reduction.rig, reduced_canon(reduction, prepared.canon), small_mesh)
            prepared.reduction, prepared.small = reduction, small
        if key is not None:
            with self._rigs_lock:
                self._rigs[key] = prepared
                while len(self._rigs) > RIG_CACHE:
                    self._rigs.popitem(last=False)
        return prepared

    # ------------------------------------------------------------------ run
    def run(
        self,
        prepared: PreparedRig,
        request: GenerateRequest,
        options: SamplingOptions | None = None,
        progress: Progress | None = None,
    ) -> list[Generated]:
        """`request.variants` motions of `request.frames` frames (at `self.fps`) for a checked request
        (`GenerateRequest.check`): a prompt (None: image only) and/or a reference image (a path,
        pixels, or the image encoder's feature, precomputed). `request.keep` (a motion on the rig)
        with `keep_frames` pins those frames (in-betweening), and with `options.keep_joints` only
        those joints (e.g. a keyed tail). `request.loop` makes the last frame flow into the first.
        A prompt of gaits alone (or an idle, a jump) is made by construction; anything else by the
        network, starting from a library clip of the bank (`options.bank`, else the pipeline's) that
        matches the prompt and fits the rig (the report says which clip). `progress` is called with
        the fraction done and may raise to stop the work (a cancelled job); it is handed to the
        network as it is."""
        options = options or SamplingOptions()
        # No variant the guard calls broken leaves here: it is made the other way, or the job fails.
        guard = ClipGuard.for_request(prepared.canon, prepared.rig, prepared.mesh, request.prompt,
                                      keeps=request.keep is not None) if options.guard else UNGUARDED
        network = self.network
        sampled = None if network is None else (
            lambda: self._sampled(network, prepared, request, options, progress))
        constructed = self._constructed(prepared, request, options, progress)
        if constructed is not None:
            return guard.sound(constructed, sampled, "by construction", "by the network")
        if sampled is None:
            raise GenerationError(NEEDS_NETWORK)
        plain = without_extras(request)
        remade = None if plain is None else lambda: self._constructed(prepared, plain, options, progress)
        return guard.sound(sampled(), remade, "by the network", "by construction")

    def _constructed(
        self,
        prepared: PreparedRig,
        request: GenerateRequest,
        options: SamplingOptions,
        progress: Progress | None,
    ) -> list[Generated] | None:
        """Motion by construction (construct.py): the controllers on the rig's own legs, for a prompt
        whose every segment is a gait of the rig's family, or an idle or a jump alone; None where the
        network makes the request (other actions, a reference image, kept keys, a loop, no legs found)."""
        if not options.construct or request.prompt is None or request.image is not None:
            return None
        if request.keep is not None or request.loop:
            return None
        try:
            roles = construction_roles(prepared.canon, prepared.mesh)
        except RoleError:
            return None
        plan = plan_prompt(request.prompt, roles.family)
        if not plan.constructed:
            return None
        results = []
        for v in range(request.variants):
            if progress is not None:  # reports, and raises once the job is cancelled
                progress(v / request.variants)
            started = time.perf_counter()
            made = construct_motion(prepared.canon, prepared.rig, plan, request.frames, self.fps,
                                    int(request.seed) + v, prepared.mesh, roles)
            features = motion_features(prepared.canon, prepared.rig, made.motion).features
            contacts = made.contacts[:, nearest_legs(prepared.canon, made.feet)]
            report = {**made.report, "seconds_model": time.perf_counter() - started}
            results.append(Generated(made.motion, features.astype(np.float32), contacts,
                                     int(request.seed) + v, report))
        return results

    def _sampled(
        self,
        network: MotionNetwork,
        prepared: PreparedRig,
        request: GenerateRequest,
        options: SamplingOptions,
        progress: Progress | None,
    ) -> list[Generated]:
        """The network's motions: the kept frames and the retrieved clips as features, one sampling
        call, then each variant onto the rig (a big rig's bones that matter, the rest carried)."""
        if prepared.reduction is not None and prepared.small is not None:
            cut = prepared.reduction
            small = replace(options, keep_joints=reduced_joints(cut, options.keep_joints))
            made = self._sampled(network, prepared.small, reduced_request(cut, request), small, progress)
            return carried_back(cut, made, request, options.keep_joints)
        if prepared.encoded is None or prepared.encoded_by is not network:
            canon = prepared.canon
            prepared.encoded = network.encode_rig(rig_features(canon.rig, canon.feet, prepared.mesh,
                                                               canon.frame.matrix()))
            prepared.encoded_by = network
        length, extra = token_layout(request.frames, request.loop, network.frames_per_token)
        # The motion starts where the rig stands, facing its forward (or where the kept frames start).
        start = Start(0.0, prepared.canon.rig.heads[prepared.canon.rig.main_root, :2].copy())
        kept = None
        if request.keep is not None:
            kept, start = _kept_features(prepared, request, options.keep_joints)
        started = time.perf_counter()
        bank = self.bank if options.bank is None else options.bank
        retrieval = options.retrieval or RetrievalConfig()
        retrieved = self._retrieve(network, prepared, request, bank, retrieval)
        references = _references(prepared, request, bank, retrieved, length + extra) if retrieved else None
        # Kept frames spliced into a clip as it is would jump at their edges: the network blends them.
        strength = max(retrieval.strength, KEEP_STRENGTH) if kept is not None else retrieval.strength
        sample = SampleRequest(
            prepared.encoded, request.prompt, request.image, request.frames, length, extra,
            request.variants, int(request.seed), request.guidance, request.loop, kept, references,
            len(retrieved), strength, options.steps, options.sampler, options.smooth, options.image_encoder,
        )
        features, strengths = network.sample(sample, progress)
        seconds = time.perf_counter() - started
        results = []
        ticker = Ticker(progress)
        for v in range(request.variants):
            if v:
                ticker(1.0)  # a cancel lands between variants too (it raises)
            report: dict = {"seconds_model": seconds / request.variants}
            if retrieved:
                found = retrieved[v % len(retrieved)]
                report["retrieved"] = {
                    "caption": found.caption,
                    "score": round(found.score, 3),
                    "mapped": round(found.mapped, 3),
                    "strength": float(strengths[v]),
                }
            # A clip's own contacts are exact; the network's are doubted (confirmed by the feet).
            trusted = bool(retrieved) and strengths[v] <= 0.0
            motion, contacts = self._variant(prepared, request, options, features[v], start, trusted, report)
            results.append(Generated(motion, features[v].astype(np.float32), contacts, int(request.seed) + v,
                                     report))
        return results

    def _retrieve(
        self,
        network: MotionNetwork,
        prepared: PreparedRig,
        request: GenerateRequest,
        bank: MotionBank | None,
        retrieval: RetrievalConfig,
    ) -> list[Retrieved]:
        """The library clips the prompt finds that fit the rig (none without a bank or a prompt)."""
        if bank is None or request.prompt is None or not retrieval.enabled:
            return []
        return bank.retrieve(
            network.embed_text(request.prompt),
            prepared.rig,
            prepared.canon.frame,
            prepared.feet,
            retrieval,
            count=request.variants,
            direction=stated_direction(request.prompt),
        )

    def _variant(
        self,
        prepared: PreparedRig,
        request: GenerateRequest,
        options: SamplingOptions,
        features: np.ndarray,
        start: Start,
        trusted: bool,
        report: dict,
    ) -> tuple[Motion, np.ndarray]:
        """One variant's features as a motion on the user's rig, cleaned up and with the kept frames
        exact (what that took goes into `report`), and its planted feet."""
        motion, contacts, cleaned = on_rig(prepared.canon, prepared.rig, features, self.fps, start,
                                           options.clean, trusted)
        report.update(cleaned)
        if request.keep is not None:
            motion = pin_kept(motion, request.keep, request.kept_frames(), options.keep_joints, report)
        return motion, contacts


class Ticker:
    """Passes its calls on to `progress` (a progress callback), at most one every REPORT_SECONDS
    (counted from its creation): the reports between the variants of a short job are left out."""

    def __init__(self, progress: Callable[..., None] | None, seconds: float = REPORT_SECONDS):
        self.progress = progress
        self.seconds = seconds
        self.last = time.perf_counter()

    def __call__(self, *args: Any) -> None:
        if self.progress is not None and time.perf_counter() - self.last >= self.seconds:
            self.progress(*args)
            self.last = time.perf_counter()


def _kept_features(
    prepared: PreparedRig, request: GenerateRequest, keep_joints: np.ndarray | None
) -> tuple[KeptFeatures, Start]:
    """The features of the frames (and joints) to keep, and where the kept motion starts (heading,
    ground)."""
    keep = request.keep
    if keep.joint_count != prepared.rig.joint_count:
        raise GenerationError("The frames to keep are for a different rig.")
    clip = motion_features(prepared.canon, prepared.rig, keep)
    frames = np.asarray(request.kept_frames(), dtype=np.int64)
    joints = np.arange(keep.joint_count) if keep_joints is None else np.asarray(keep_joints, np.int64)
    if joints.size and (joints.min() < 0 or joints.max() >= keep.joint_count):
        raise GenerationError(f"Joints to keep must lie in 0..{keep.joint_count - 1}.")
    mask = np.zeros(clip.features.shape[:2], dtype=bool)
    mask[frames[:, None], joints[None, :]] = True
    return KeptFeatures(clip.features, mask), Start(clip.start_yaw, clip.start_ground)


def _references(
    prepared: PreparedRig, request: GenerateRequest, bank: MotionBank, retrieved: list[Retrieved], total: int
) -> np.ndarray:
    """Variant v starts from the v-th clip found (cycling when fewer were found), as features of
    `total` frames whose contacts are the library's own labels (not ones guessed from the motion)."""
    references = []
    for v in range(request.variants):
        found = retrieved[v % len(retrieved)]
        loops = bank.clips[found.record].loop or request.loop
        played = retime(found.motion, request.frames, loops)
        reference = motion_features(prepared.canon, prepared.rig, played).features
        if found.contacts is not None:
            reference[:, prepared.feet, CONTACT] = retime_rows(found.contacts, played.frame_count)
        references.append(fit_length(reference, total, loops))
    return np.stack(references)
