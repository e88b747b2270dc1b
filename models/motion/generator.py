"""The motion network of Generate Motion: a trained denoiser + frozen encoders + DDIM.

`MotionModel.load(folder)` reads `denoiser.safetensors` + `model.json` (no pickle) and runs the
denoiser with onnxruntime or torch. It is the network the engine's pipeline
(kirin_addon/generate/pipeline.py) is given, with the protocol of kirin_addon/generate/network.py:
`encode_rig` embeds a rig's joint names, `embed_text` a prompt's sentence (which the motion bank
is searched with), and `sample` turns one `SampleRequest` into features — the conditions (text
tokens, the reference image through the image encoder), classifier-free guidance, DDIM or
ancestral sampling, inpainting of kept features, starting from retrieved clips, the loop's
crossfade and the smoothing of the token seams. It never plans, constructs, cleans up or maps
motions onto a rig: the pipeline does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ...kirin_addon.core.rig_features import EDGE_TYPES, MAX_HOPS, RigFeatures
from ...kirin_addon.generate.network import GenerationError, KeptFeatures, Progress, SampleRequest
from ..config import DiffusionConfig
from ..data.cache import MAX_TOKENS
from ..diffusion import DDIMOptions, Diffusion, Inpaint
from .config import DenoiserConfig
from .denoiser import Denoiser, added_since_v0, patchify, unpatchify

DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "weights" / "motion"
VARIATION_STRENGTH = 0.5  # variants beyond the clips found: the clips varied from this far along the noise


def load_weights(net: Denoiser, weights: dict[str, torch.Tensor]) -> None:
    """Strict loading, except that weights from before the adaptive norms (denoiser.py) load too:
    those layers start at identity, so such a model computes exactly what it did."""
    missing, unexpected = net.load_state_dict(weights, strict=False)
    added = [k for k in missing if not added_since_v0(k)]
    if added or unexpected:
        raise GenerationError(
            f"The denoiser weights do not fit the model (missing {added[:3]}, unexpected {unexpected[:3]})"
        )


@dataclass
class _Plan:
    """What sampling one request needs, worked out before the noise is drawn."""

    predict: Callable
    shape: tuple[int, int, int, int]  # (variants, total frames, joints, channels)
    guidance: float
    steps: int
    inpaint: Inpaint | None
    hook: Callable | None  # applied to each step's clean estimate (the loop's crossfade)


class TorchRunner:
    """The torch denoiser on a device, callable like `OnnxDenoiser`: CPU tensors in and out, so the
    sampler stays on the CPU while the network's forward passes run on the GPU."""

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
    """The motion network (kirin_addon.generate.network.MotionNetwork)."""

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
        # Plain attributes, read by the pipeline.
        self.fps = fps
        self.frames_per_token = config.frames_per_token
        self.runner = runner or net  # a torch module or an ONNX runner with the same call
        self.device = getattr(runner, "device", "cpu") if runner is not None else "cpu"
        self.backend = "onnxruntime" if runner is not None else "torch"
        self._text = None
        self._image: dict[str | None, object] = {}

    def use_torch_device(self, device: str) -> None:
        """Run the torch network on `device` (CUDA where onnxruntime has no GPU but torch has one)."""
        self.runner = TorchRunner(self.net, device)
        self.device = self.runner.device
        self.backend = "torch"

    @classmethod
    def load(cls, folder: str | Path = DEFAULT_MODEL, backend: str = "torch") -> MotionModel:
        """`backend`: "onnx" (onnxruntime: CUDA when present, else CPU), "torch", or "auto" (ONNX when
        the folder has it and onnxruntime runs, else torch)."""
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
        mean, std = np.array(card["mean"]), np.array(card["std"])
        return cls(net, config, diffusion, mean, std, card.get("fps", 30.0), runner)

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

    def encode_rig(self, features: RigFeatures) -> dict[str, torch.Tensor]:
        """The rig's inputs for one sample (batch 1), its joint names embedded."""
        names = self.text_encoder.encode_sentences(features.names)
        return {
            "geometry": torch.from_numpy(features.geometry)[None],
            "skin": torch.from_numpy(features.skin)[None],
            "names": torch.from_numpy(np.asarray(names, np.float32))[None],
            "hops": torch.from_numpy(np.minimum(features.hops, MAX_HOPS))[None],
            "edges": torch.from_numpy(np.minimum(features.edges, EDGE_TYPES - 1))[None],
            "joint_mask": torch.ones(1, len(features.names), dtype=torch.bool),
        }

    def embed_text(self, text: str) -> np.ndarray:
        """MiniLM's sentence vector of `text` (what the motion bank's captions are searched with)."""
        return self.text_encoder.encode_sentences([text])[0]

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

    def sample(
        self, request: SampleRequest, progress: Progress | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The request's features (V, frames, J, C), denormalised, and per variant how far along the
        noise schedule it started (1: from noise, 0: the retrieved clip as it is; the first
        `request.found` references are clips found, the others repeat them)."""
        if progress is not None:  # reports, and raises once the job is cancelled
            progress(0.0)
        plan = self._plan(request)
        generator = torch.Generator().manual_seed(int(request.seed))
        noise = torch.randn(plan.shape, generator=generator)
        init = None
        if request.references is not None:
            init = torch.from_numpy(self._normalise(request.references))
        x0, strengths = self._sample(plan, request, noise, generator, init, progress)
        return self._decoded(plan, x0, request, strengths > 0, progress), strengths

    def _plan(self, request: SampleRequest) -> _Plan:
        """The sampler's inputs: the conditions, the guidance and steps, and the features to keep."""
        total = request.length + request.extra
        conditions = self._conditions(request.prompt, request.image, request.image_encoder)
        predict = self._predict({**request.rig, **conditions})
        guidance = request.guidance
        if guidance is None:  # defaults tuned per condition (models/weights/motion/MODEL_CARD.md)
            text_given = bool(conditions["text_use"][0])
            guidance = self.diffusion_config.guidance if text_given else self.diffusion_config.guidance_image
        steps = self.diffusion_config.sample_steps if request.steps is None else int(request.steps)
        inpaint = None
        if request.keep is not None:
            inpaint = self._inpaint(request.keep, total, request.variants)
        joints = int(request.rig["geometry"].shape[1])
        shape = (request.variants, total, joints, self.config.channels)
        hook = None
        if request.loop:
            extra = request.extra

            def hook(x0: torch.Tensor) -> torch.Tensor:
                return crossfade_loop(x0, extra)

        return _Plan(predict, shape, float(guidance), steps, inpaint, hook)

    def _sample(
        self,
        plan: _Plan,
        request: SampleRequest,
        noise: torch.Tensor,
        generator: torch.Generator,
        init: torch.Tensor | None,
        progress: Progress | None,
    ) -> tuple[torch.Tensor, np.ndarray]:
        """The sampled (V,total,J,C) normalised features, and per variant how far along the noise
        schedule it started."""
        variants, strength, as_is = plan.shape[0], request.strength, request.found
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
        elif request.sampler == "ancestral":  # the full-length reference sampler (benchmarks)
            x0 = self.diffusion.sample_ancestral(
                plan.predict, plan.shape, guidance=plan.guidance, generator=generator, inpaint=plan.inpaint
            )
        elif request.sampler == "ddim":
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
            raise GenerationError(f"Unknown sampler {request.sampler!r} (ddim or ancestral)")
        return x0, strengths

    def _decoded(
        self,
        plan: _Plan,
        x0: torch.Tensor,
        request: SampleRequest,
        sampled: np.ndarray,
        progress: Progress | None,
    ) -> np.ndarray:
        """The sampled features cut to the request's frames and denormalised; the token seams of the
        variants the network made (`sampled`) smoothed, kept features exact."""
        frames, inpaint, smooth = request.frames, plan.inpaint, request.smooth
        if request.loop:
            x0 = crossfade_loop(x0, request.extra)[:, : request.length]
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

    def _normalise(self, features: np.ndarray) -> np.ndarray:
        return ((torch.from_numpy(np.asarray(features, np.float32)) - self.mean) / self.std).numpy()

    def _inpaint(self, keep: KeptFeatures, total: int, variants: int) -> Inpaint:
        """The kept features (normalised) and where they are, over the sampled frames."""
        feats = self._normalise(keep.features)
        count = min(len(feats), total)
        values = torch.zeros(variants, total, feats.shape[1], self.config.channels)
        mask = torch.zeros_like(values, dtype=torch.bool)
        values[:, :count] = torch.from_numpy(feats[:count])
        mask[:, :count] = torch.from_numpy(np.asarray(keep.mask[:count], dtype=bool))[..., None]
        return Inpaint(values, mask)


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
