"""Generate Motion: a trained denoiser + frozen encoders + DDIM → Motions on any rig.

`MotionModel.load(folder)` reads `denoiser.safetensors` + `model.json` (no pickle);
`prepare_rig` computes what the network needs of a rig once (canonical frame, joint features,
name embeddings), and `generate` samples variants for a prompt (and optional reference image),
with classifier-free guidance, optional frames to keep (inpainting) and seamless loops, then maps
the features back onto the user's rig (canonical frame and inverse-bind correction) and runs the
foot-lock clean-up.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ...kirin_addon.core.canonical import CanonicalFrame, CanonicalRig, canonical_rig
from ...kirin_addon.core.motion import Motion, motion_from_world_deltas, pin_frames, world_deltas
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.rig_features import EDGE_TYPES, MAX_HOPS, rig_features
from ...kirin_addon.core.rotations import matrix_to_quat, quat_to_matrix
from ...kirin_addon.core.skinning import SkinnedMesh
from ...kirin_addon.generate.construct import construct_motion
from ...kirin_addon.generate.features import CONTACT, features_to_motion, motion_features
from ...kirin_addon.generate.plan import plan_prompt
from ...kirin_addon.generate.request import GenerateRequest, GenerateRequestError
from ...kirin_addon.generate.rig_roles import RoleError, detect_roles
from ...kirin_addon.library.captions.phrasing import stated_direction
from ..config import DiffusionConfig
from ..data.cache import MAX_TOKENS
from ..diffusion import DDIMOptions, Diffusion, Inpaint
from .config import DenoiserConfig
from .denoiser import Denoiser, added_since_v0, patchify, unpatchify
from .retrieval import MotionBank, RetrievalConfig, fit_length, open_default_bank, retime, retime_rows

DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "weights" / "motion"
# The clean-up locks a sampled contact only if that moves the foot at most this share of its leg's
# length: farther, the contact label is wrong, and locking it drags the leg straight (the model card
# has the R-Precision this costs and saves).
LOCK_LIMIT = 0.3
VARIATION_STRENGTH = 0.5  # variants beyond the clips found: the clips varied from this far along the noise
KEEP_STRENGTH = 0.6  # a retrieved clip under kept frames (in-betweening) starts this far along the noise


def load_weights(net: Denoiser, weights: dict[str, torch.Tensor]) -> None:
    """Strict loading, except that weights from before the adaptive norms (denoiser.py) load too:
    those layers start at identity, so such a model computes exactly what it did."""
    missing, unexpected = net.load_state_dict(weights, strict=False)
    added = [k for k in missing if not added_since_v0(k)]
    if added or unexpected:
        raise GenerationError(
            f"The denoiser weights do not fit the model (missing {added[:3]}, unexpected {unexpected[:3]})"
        )


class GenerationError(ValueError):
    """Bad generation input; the message is user-facing."""


@dataclass
class PreparedRig:
    rig: Rig
    canon: CanonicalRig
    inputs: dict[str, torch.Tensor]  # rig tensors for one sample (batch 1)
    feet: np.ndarray
    mesh: SkinnedMesh | None = None  # the rig's skin (armature space), where it has one


@dataclass
class Generated:
    motion: Motion  # on the user's rig, armature space
    features: np.ndarray  # (T,J,C) denormalised model features (canonical frame)
    contacts: np.ndarray  # (T,F) predicted planted feet (F = prepared.feet)
    seed: int
    report: dict = field(default_factory=dict)


@dataclass
class SamplingOptions:
    """How the model samples a request: what the backend leaves at its defaults and benchmarks,
    evaluation and tests tune."""

    steps: int | None = None  # DDIM steps; None: the model card's
    sampler: str = "ddim"  # or "ancestral" (the full-length reference sampler, benchmarks)
    clean: bool = True  # the foot-lock clean-up
    smooth: float = 1.0  # frames (a Gaussian sigma) evening out the seams between tokens; 0: off
    keep_joints: np.ndarray | None = None  # with the request's `keep`: only these joints are kept
    image_encoder: str | None = None  # None: the default image encoder
    bank: MotionBank | None = None  # the library to retrieve from; None: the model's own
    retrieval: RetrievalConfig | None = None  # None: the defaults
    construct: bool = True  # by construction where the prompt asks only for gaits (or an idle, a jump)


@dataclass
class _Plan:
    """What sampling one request needs, worked out before the noise is drawn."""

    predict: Callable
    shape: tuple[int, int, int, int]  # (variants, total frames, joints, channels)
    length: int  # frames in whole tokens
    extra: int  # frames past the end a loop is blended from
    guidance: float
    steps: int
    inpaint: Inpaint | None
    hook: Callable | None  # applied to each step's clean estimate (the loop's crossfade)
    start_yaw: float
    start_ground: np.ndarray


class TorchRunner:
    """The torch denoiser on a device, callable like `OnnxDenoiser`: CPU tensors in and out, so the
    sampler and clean-up stay on the CPU while the network's forward passes run on the GPU."""

    def __init__(self, net: torch.nn.Module, device: str):
        self.torch_device = torch.device(device)
        self.net = net.to(self.torch_device)
        self.device = self.torch_device.type
        self.providers = None

    def __call__(self, **inputs: torch.Tensor) -> torch.Tensor:
        moved = {k: v.to(self.torch_device) if torch.is_tensor(v) else v for k, v in inputs.items()}
        with torch.inference_mode():
            return self.net(**moved).float().cpu()


class MotionModel:
    def __init__(
        self,
        net: torch.nn.Module | None,
        config: DenoiserConfig,
        diffusion: DiffusionConfig,
        mean: np.ndarray,
        std: np.ndarray,
        fps: float = 30.0,
        runner=None,
    ):
        self.net = net
        self.config = config
        self.diffusion_config = diffusion
        self.diffusion = Diffusion(diffusion.steps, diffusion.schedule)
        self.mean = torch.tensor(mean, dtype=torch.float32)
        self.std = torch.tensor(std, dtype=torch.float32)
        self.fps = fps
        self.runner = runner or net  # a torch module or an ONNX runner with the same call
        self.device = getattr(runner, "device", "cpu") if runner is not None else "cpu"
        self.backend = "onnxruntime" if runner is not None else "torch"
        self._text = None
        self._image: dict[str | None, object] = {}
        self.bank: MotionBank | None = None  # the library generation retrieves from (motion/retrieval.py)

    def use_torch_device(self, device: str) -> None:
        """Run the torch network on `device` (CUDA where onnxruntime has no GPU but torch has one)."""
        self.runner = TorchRunner(self.net, device)
        self.device = self.runner.device
        self.backend = "torch"

    @classmethod
    def load(
        cls, folder: str | Path = DEFAULT_MODEL, backend: str = "torch", bank: str | Path | None = None
    ) -> MotionModel:
        """`backend`: "onnx" (onnxruntime: CUDA when present, else CPU), "torch", or "auto" (ONNX when
        the folder has it and onnxruntime runs, else torch). `bank`: a feature cache to retrieve
        from, "default" for the default bank when it has been built (`kirin bank build`; what Generate
        Motion uses), or None (plain generation)."""
        from safetensors.torch import load_file

        folder = Path(folder)
        card_path = folder / "model.json"
        if not card_path.exists():
            raise GenerationError(f"No motion model at {folder} (model.json missing)")
        card = json.loads(card_path.read_text())
        config = DenoiserConfig(**card["model"])
        diffusion = DiffusionConfig(**card["diffusion"])
        net = Denoiser(config)
        load_weights(net, load_file(str(folder / "denoiser.safetensors")))
        net.eval()
        runner = None
        if backend not in ("auto", "onnx", "torch"):
            raise GenerationError(f"Unknown backend {backend!r} (auto, onnx or torch)")
        onnx_file = folder / "denoiser.onnx"
        if backend == "onnx" or (backend == "auto" and onnx_file.exists()):
            try:
                from ..onnx import OnnxDenoiser

                runner = OnnxDenoiser(onnx_file)
            except (ImportError, OSError, RuntimeError) as exc:
                if backend == "onnx":
                    raise GenerationError(f"Cannot run the ONNX denoiser: {exc}") from exc
                runner = None  # auto: torch is the fallback
        model = cls(
            net,
            config,
            diffusion,
            np.array(card["mean"]),
            np.array(card["std"]),
            card.get("fps", 30.0),
            runner,
        )
        if bank == "default":
            model.bank = open_default_bank()
        elif bank is not None:
            try:
                model.bank = MotionBank(bank)
            except ValueError as exc:
                raise GenerationError(f"Cannot use the motion bank {bank}: {exc}") from exc
        return model

    # ------------------------------------------------------------------ encoders
    @property
    def text_encoder(self):
        if self._text is None:
            from ..encoders.text import load_text_encoder

            self._text = load_text_encoder()
        return self._text

    def image_encoder(self, path: str | None = None):
        if path not in self._image:
            from ..encoders.image import load_image_encoder

            self._image[path] = load_image_encoder(path)
        return self._image[path]

    # ------------------------------------------------------------------ rig
    def prepare_rig(
        self, rig: Rig, mesh: SkinnedMesh | None = None, frame: CanonicalFrame | None = None
    ) -> PreparedRig:
        rig.validate()
        canon = canonical_rig(rig, frame)
        rf = rig_features(canon.rig, canon.feet, mesh, canon.frame.matrix())
        names = self.text_encoder.encode_sentences(rf.names)
        count = rig.joint_count
        inputs = {
            "geometry": torch.from_numpy(rf.geometry)[None],
            "skin": torch.from_numpy(rf.skin)[None],
            "names": torch.from_numpy(np.asarray(names, np.float32))[None],
            "hops": torch.from_numpy(np.minimum(rf.hops, MAX_HOPS))[None],
            "edges": torch.from_numpy(np.minimum(rf.edges, EDGE_TYPES - 1))[None],
            "joint_mask": torch.ones(1, count, dtype=torch.bool),
        }
        return PreparedRig(rig, canon, inputs, canon.feet, mesh)

    # ------------------------------------------------------------------ conditions
    def _conditions(
        self, prompt: str | None, image: str | np.ndarray | None, image_encoder: str | None
    ) -> dict[str, torch.Tensor]:
        """Text tokens (prompt None: no text, only the image conditions) and the image feature (from
        a file or pixels through the image encoder, or given precomputed as a 1-D array)."""
        image_feature = None
        if isinstance(image, np.ndarray) and image.ndim == 1:
            image, image_feature = None, image
        tokens, mask = self.text_encoder.encode_tokens([prompt or ""], max_tokens=MAX_TOKENS)
        out = {
            "text": torch.from_numpy(tokens.astype(np.float32)),
            "text_mask": torch.from_numpy(mask),
            "text_use": torch.ones(1) if prompt is not None else torch.zeros(1),
            "image": torch.zeros(1, self.config.image_dim),
            "image_on": torch.zeros(1),
        }
        if image is not None:
            if isinstance(image, (str, Path)) and not Path(image).is_file():
                raise GenerationError(f"The reference image {image} does not exist.")
            try:
                image_feature = self.image_encoder(image_encoder).encode([image])[0]
            except ValueError as exc:
                raise GenerationError(f"Cannot use the reference image: {exc}") from exc
        if image_feature is not None:
            feature = np.asarray(image_feature, np.float32).reshape(1, -1)
            if feature.shape[1] != self.config.image_dim:
                raise GenerationError(
                    f"The image feature has {feature.shape[1]} values; "
                    f"this model takes {self.config.image_dim}."
                )
            out["image"] = torch.from_numpy(feature)
            out["image_on"] = torch.ones(1)
        return out

    # ------------------------------------------------------------------ sampling
    def _predict(self, inputs: dict[str, torch.Tensor]):
        fpt = self.config.frames_per_token
        image_on, text_use = inputs["image_on"], inputs["text_use"]

        def predict(x: torch.Tensor, t: torch.Tensor, cond_on: torch.Tensor) -> torch.Tensor:
            batch = x.shape[0]
            fixed = {k: v for k, v in inputs.items() if k not in ("image_on", "text_use")}
            expanded = {k: v.expand(batch, *v.shape[1:]) for k, v in fixed.items()}
            # cond_on: 1 in the conditional branch of guidance, 0 in the unconditional one.
            expanded["text_on"] = cond_on * text_use.expand(batch)
            expanded["image_on"] = cond_on * image_on.expand(batch)
            with torch.inference_mode():
                out = self.runner(x=patchify(x, fpt), t=t, **expanded)
            return unpatchify(out, fpt)

        return predict

    def generate(
        self,
        prepared: PreparedRig,
        request: GenerateRequest,
        options: SamplingOptions | None = None,
        progress=None,
    ) -> list[Generated]:
        """`request.variants` motions of `request.frames` frames (at the model's frame rate) for a
        prompt (None: image only) and/or a reference image (a path, pixels, or the image encoder's
        feature, precomputed). `request.keep` (a motion on the rig, same length) with `keep_frames`
        (indices) pins those frames (in-betweening), and with `options.keep_joints` (indices) only
        those joints (e.g. a keyed tail). `request.loop` makes the last frame flow into the first.
        `options.smooth` (frames, a Gaussian sigma) evens out the seams between the network's 8-frame
        tokens; 0 turns it off. With a bank (`options.bank`, models/motion/retrieval.py; None: the
        model's own `bank`), a library clip that matches the prompt and fits the rig is retargeted onto
        it and sampling starts from it (the report says which clip); `options.retrieval` tunes that or
        turns it off."""
        options = options or SamplingOptions()
        try:
            request.check()
        except GenerateRequestError as exc:
            raise GenerationError(str(exc)) from None
        constructed = self._constructed(prepared, request, options, progress)
        if constructed is not None:
            return constructed
        plan = self._plan(prepared, request, options)
        started = time.perf_counter()
        generator = torch.Generator().manual_seed(int(request.seed))
        noise = torch.randn(plan.shape, generator=generator)
        bank = self.bank if options.bank is None else options.bank
        retrieval = options.retrieval or RetrievalConfig()
        retrieved = self._retrieve(prepared, request, bank, retrieval)
        init = self._references(prepared, request, bank, retrieved, plan.shape[1]) if retrieved else None
        # Kept frames spliced into a clip as it is would jump at their edges: the network blends them.
        strength = max(retrieval.strength, KEEP_STRENGTH) if plan.inpaint is not None else retrieval.strength
        x0, strengths = self._sample(plan, options.sampler, noise, generator, init, strength, len(retrieved),
                                     progress)
        features = self._decoded(plan, x0, request, strengths > 0, options.smooth, progress)
        seconds = time.perf_counter() - started
        results = []
        for v in range(request.variants):
            if progress is not None:  # a cancel lands between variants too (it raises)
                progress(1.0)
            report = {"seconds_model": seconds / request.variants}
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
            results.append(self._variant(prepared, request, options, plan, features[v], v, report, trusted))
        return results

    def _constructed(
        self, prepared: PreparedRig, request: GenerateRequest, options: SamplingOptions, progress=None
    ) -> list[Generated] | None:
        """Motion by construction (kirin_addon/generate/construct.py): the controllers on the rig's own
        legs, for a prompt whose every segment is a gait of the rig's family, or an idle or a jump alone;
        None where the network makes the request (other actions, a reference image, kept keys, a loop,
        no legs found)."""
        if not options.construct or request.prompt is None or request.image is not None:
            return None
        if request.keep is not None or request.loop:
            return None
        try:
            roles = detect_roles(prepared.canon.rig)
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
            contacts = made.contacts[:, _nearest_legs(prepared, made.feet)]
            report = {**made.report, "seconds_model": time.perf_counter() - started}
            results.append(Generated(made.motion, features.astype(np.float32), contacts,
                                     int(request.seed) + v, report))
        return results

    def _plan(self, prepared: PreparedRig, request: GenerateRequest, options: SamplingOptions) -> _Plan:
        """The sampler's inputs: the length in whole tokens (and the loop's extra frames), the
        conditions, the guidance and steps, and the features to keep."""
        fpt = self.config.frames_per_token
        length = -(-max(request.frames, fpt) // fpt) * fpt
        extra = 0
        if request.loop:
            extra = max(fpt, (length // 6) // fpt * fpt)
        total = length + extra
        conditions = self._conditions(request.prompt, request.image, options.image_encoder)
        predict = self._predict({**prepared.inputs, **conditions})
        guidance = request.guidance
        if guidance is None:  # defaults tuned per condition (models/weights/motion/MODEL_CARD.md)
            text_given = bool(conditions["text_use"][0])
            guidance = self.diffusion_config.guidance if text_given else self.diffusion_config.guidance_image
        steps = self.diffusion_config.sample_steps if options.steps is None else int(options.steps)
        inpaint = None
        # The motion starts where the rig stands, facing its forward (or where the kept frames start).
        start_yaw, start_ground = 0.0, prepared.canon.rig.heads[prepared.canon.rig.main_root, :2].copy()
        if request.keep is not None:
            inpaint, start_yaw, start_ground = self._inpaint(
                prepared, request.keep, request.keep_frames, options.keep_joints, total, request.variants
            )
        shape = (request.variants, total, prepared.rig.joint_count, self.config.channels)
        hook = None
        if request.loop:

            def hook(x0: torch.Tensor) -> torch.Tensor:
                return crossfade_loop(x0, extra)

        return _Plan(predict, shape, length, extra, float(guidance), steps, inpaint, hook, start_yaw,
                     start_ground)

    def _retrieve(
        self,
        prepared: PreparedRig,
        request: GenerateRequest,
        bank: MotionBank | None,
        retrieval: RetrievalConfig,
    ) -> list:
        """The library clips the prompt finds that fit the rig (none without a bank or a prompt)."""
        if bank is None or request.prompt is None or not retrieval.enabled:
            return []
        return bank.retrieve(
            self.text_encoder.encode_sentences([request.prompt])[0],
            prepared.rig,
            prepared.canon.frame,
            prepared.feet,
            retrieval,
            count=request.variants,
            direction=stated_direction(request.prompt),
        )

    def _references(
        self, prepared: PreparedRig, request: GenerateRequest, bank: MotionBank, retrieved: list, total: int
    ) -> torch.Tensor:
        """Variant v starts from the v-th clip found (cycling when fewer were found), as features."""
        references = []
        for v in range(request.variants):
            found = retrieved[v % len(retrieved)]
            loops = bool(bank.cache.records[found.record].get("loop")) or request.loop
            played = retime(found.motion, request.frames, loops)
            reference = self._features(prepared, played)
            if found.contacts is not None:  # the library's exact labels, not ones guessed from motion
                planted = retime_rows(found.contacts, played.frame_count).astype(np.float32)
                mean, std = float(self.mean[CONTACT]), float(self.std[CONTACT])
                reference[:, prepared.feet, CONTACT] = (planted - mean) / std
            references.append(fit_length(reference, total, loops))
        return torch.from_numpy(np.stack(references))

    def _sample(
        self,
        plan: _Plan,
        sampler: str,
        noise: torch.Tensor,
        generator: torch.Generator,
        init: torch.Tensor | None,
        strength: float,
        as_is: int,
        progress=None,
    ) -> tuple[torch.Tensor, np.ndarray]:
        """The sampled (V,total,J,C) normalised features, and per variant how far along the noise
        schedule it started (1: from noise, 0: the retrieved clip as it is; `as_is` clips were found)."""
        variants = plan.shape[0]
        strengths = np.full(variants, strength if init is not None else 1.0)
        if init is not None and strength <= 0.0:  # the retrieved clips as they are
            strengths[as_is:] = VARIATION_STRENGTH  # more variants than clips: variations of them
            x0 = plan.hook(init) if plan.hook is not None else init
            if variants > as_is:
                x0 = x0.clone()
                x0[as_is:] = self.diffusion.sample_ddim(
                    plan.predict,
                    (variants - as_is,) + plan.shape[1:],
                    DDIMOptions(plan.steps, plan.guidance, strength=VARIATION_STRENGTH, hook=plan.hook),
                    noise=noise[as_is:],
                    init=init[as_is:],
                    progress=progress,
                )
        elif sampler == "ancestral":  # the full-length reference sampler (benchmarks)
            x0 = self.diffusion.sample_ancestral(
                plan.predict, plan.shape, guidance=plan.guidance, generator=generator, inpaint=plan.inpaint
            )
        elif sampler == "ddim":
            x0 = self.diffusion.sample_ddim(
                plan.predict,
                plan.shape,
                DDIMOptions(
                    plan.steps,
                    plan.guidance,
                    strength=strength if init is not None else 1.0,
                    inpaint=plan.inpaint,
                    hook=plan.hook,
                ),
                noise=noise,
                init=init,
                progress=progress,
            )
        else:
            raise GenerationError(f"Unknown sampler {sampler!r} (ddim or ancestral)")
        return x0, strengths

    def _decoded(
        self, plan: _Plan, x0: torch.Tensor, request: GenerateRequest, sampled: np.ndarray, smooth: float,
        progress=None,
    ) -> np.ndarray:
        """The sampled features cut to the request's frames and denormalised; the token seams of the
        variants the network made (`sampled`) smoothed, kept features exact."""
        frames, inpaint = request.frames, plan.inpaint
        if request.loop:
            x0 = crossfade_loop(x0, plan.extra)[:, : plan.length]
        x0 = x0[:, :frames]
        features = (x0 * self.std + self.mean).numpy().astype(np.float64)
        if smooth > 0 and sampled.any():
            whole = None if inpaint is None else inpaint.mask[0, :frames].any(-1).all(-1)  # every joint kept
            kept = None if whole is None else np.flatnonzero(whole.numpy())
            for v in np.flatnonzero(sampled):  # one variant at a time: a cancel lands between them
                if progress is not None:
                    progress(1.0)
                features[v] = smooth_in_time(features[v:v + 1], smooth, kept, wrap=request.loop)[0]
            if inpaint is not None:  # kept joints of partly kept frames come back exact as well
                mask = inpaint.mask[:, :frames].numpy()
                values = (inpaint.values[:, :frames] * self.std + self.mean).numpy()
                features = np.where(mask, values, features)
        return features

    def _variant(
        self,
        prepared: PreparedRig,
        request: GenerateRequest,
        options: SamplingOptions,
        plan: _Plan,
        features: np.ndarray,
        v: int,
        report: dict,
        trusted: bool,
    ) -> Generated:
        """Variant `v`'s features as a motion on the user's rig, cleaned up (`trusted`: its contacts are
        a library clip's, not doubted) and with the kept frames exact."""
        canon = prepared.canon
        # Features → a motion on the canonical rig (clean-up works there: +Z up, feet on the floor),
        # then onto the user's rig through the canonical frame and the inverse-bind correction.
        in_canonical = CanonicalRig(canon.rig, identity_frame(), canon.feet)
        motion = features_to_motion(
            in_canonical, canon.rig, features, self.fps, plan.start_yaw, plan.start_ground
        )
        contacts = features[:, prepared.feet, CONTACT] > 0.5
        if options.clean and prepared.feet.size:
            motion, report["cleanup"] = _clean(canon.rig, prepared.feet, motion, contacts, not trusted)
        motion = from_canonical(canon, prepared.rig, motion)
        keep = request.keep
        if keep is not None:  # kept frames exactly as given, whatever the root path and clean-up did
            pinned = request.kept_frames()
            pinned = pinned[pinned < request.frames]
            if pinned.size:
                motion, report["key_corrections"] = pin_frames(motion, keep, pinned, options.keep_joints)
        return Generated(motion, features.astype(np.float32), contacts, int(request.seed) + v, report)

    def _features(self, prepared: PreparedRig, motion: Motion) -> np.ndarray:
        """A motion on the rig as the network's normalised features (T,J,C)."""
        return self._normalise(motion_features(prepared.canon, prepared.rig, motion).features)

    def _normalise(self, features: np.ndarray) -> np.ndarray:
        return ((torch.from_numpy(np.asarray(features, np.float32)) - self.mean) / self.std).numpy()

    def _inpaint(
        self,
        prepared: PreparedRig,
        keep: Motion,
        keep_frames: np.ndarray | None,
        keep_joints: np.ndarray | None,
        total: int,
        variants: int,
    ) -> tuple[Inpaint, float, np.ndarray]:
        """Known features of the frames (and joints) to keep, and where the kept motion starts
        (heading, ground)."""
        if keep.joint_count != prepared.rig.joint_count:
            raise GenerationError("The frames to keep are for a different rig.")
        clip = motion_features(prepared.canon, prepared.rig, keep)
        feats = self._normalise(clip.features)
        count = min(len(feats), total)
        frames = np.arange(count) if keep_frames is None else np.asarray(keep_frames, dtype=np.int64)
        if frames.size and (frames.min() < 0 or frames.max() >= count):
            raise GenerationError(f"Frames to keep must lie in 0..{count - 1}.")
        joints = np.arange(keep.joint_count) if keep_joints is None else np.asarray(keep_joints, np.int64)
        if joints.size and (joints.min() < 0 or joints.max() >= keep.joint_count):
            raise GenerationError(f"Joints to keep must lie in 0..{keep.joint_count - 1}.")
        values = torch.zeros(variants, total, keep.joint_count, self.config.channels)
        mask = torch.zeros_like(values, dtype=torch.bool)
        values[:, :count] = torch.from_numpy(feats[:count])
        mask[:, frames[:, None], joints[None, :]] = True
        return Inpaint(values, mask), clip.start_yaw, clip.start_ground


def smooth_in_time(
    features: np.ndarray, sigma: float, keep_frames: np.ndarray | None = None, wrap: bool = False
) -> np.ndarray:
    """Gaussian smoothing of (V,T,J,C) features along time (edges held, or wrapped round for a loop);
    kept frames stay exact."""
    radius = max(1, int(round(3 * sigma)))
    offsets = np.arange(-radius, radius + 1)
    kernel = np.exp(-0.5 * (offsets / sigma) ** 2)
    kernel /= kernel.sum()
    count = features.shape[1]
    index = np.arange(count)[:, None] + offsets[None]  # (T,K)
    index = index % count if wrap else np.clip(index, 0, count - 1)
    out = np.einsum("vtkjc,k->vtjc", features[:, index], kernel)
    if keep_frames is not None and len(keep_frames):
        frames = np.asarray(keep_frames, dtype=np.int64)
        frames = frames[frames < count]
        out[:, frames] = features[:, frames]
    return out


def crossfade_loop(x0: torch.Tensor, extra: int) -> torch.Tensor:
    """Blend the `extra` frames generated past the end into the first ones, so the clip's last frame
    is followed seamlessly by its first (the generated frame after it)."""
    if extra <= 0:
        return x0
    length = x0.shape[1] - extra
    w = torch.linspace(0.0, 1.0, extra + 2, dtype=x0.dtype)[1:-1].view(1, extra, 1, 1)
    out = x0.clone()
    out[:, :extra] = (1 - w) * x0[:, length:] + w * x0[:, :extra]
    return out


def _nearest_legs(prepared: PreparedRig, planting: list[int]) -> np.ndarray:
    """For each of the prepared rig's feet, the constructed leg whose planted joint is nearest at rest."""
    heads = prepared.canon.rig.heads
    if not planting:
        return np.zeros(0, dtype=np.int64)
    distance = np.linalg.norm(heads[prepared.feet][:, None] - heads[planting][None], axis=-1)
    return np.argmin(distance, axis=1) if distance.size else np.zeros(0, dtype=np.int64)


def identity_frame() -> CanonicalFrame:
    return CanonicalFrame(np.eye(3), 1.0, np.zeros(3), notes=("already canonical",))


def from_canonical(canon: CanonicalRig, rig: Rig, motion: Motion) -> Motion:
    """A motion of `canon.rig` as the same motion of `rig` (its own armature space)."""
    deltas = quat_to_matrix(world_deltas(canon.rig, motion))
    root = motion.root_positions
    return motion_from_world_deltas(
        rig,
        matrix_to_quat(canon.frame.from_canonical_rotations(deltas)),
        canon.frame.from_canonical_points(root),
        motion.fps,
    )


def _clean(
    rig: Rig, feet: np.ndarray, motion: Motion, contacts: np.ndarray, confirm: bool = True
) -> tuple[Motion, dict]:
    from ...kirin_addon.generate.cleanup import CleanupOptions, clean_motion

    result = clean_motion(rig, motion, contacts, feet, CleanupOptions(max_lock=LOCK_LIMIT, confirm=confirm))
    return result.motion, result.summary()
