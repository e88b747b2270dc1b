"""Gaussian diffusion over normalised motion features: noising, DDIM and ancestral sampling,
classifier-free guidance and inpainting. The network predicts x0 (as MDM does), so any sampler
turns its prediction into the next, less noisy x.

The denoiser is any callable `predict(x_t, t, cond_on) -> x0` where `cond_on` is a (B,) float
(1 conditioned, 0 unconditioned); the sampler batches both halves of classifier-free guidance
into one call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

Predict = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def cosine_alphas_cumprod(steps: int, s: float = 0.008) -> torch.Tensor:
    """ᾱ_t of Nichol & Dhariwal's cosine schedule, clipped like theirs (β ≤ 0.999)."""
    x = torch.linspace(0, steps, steps + 1, dtype=torch.float64)
    f = torch.cos(((x / steps) + s) / (1 + s) * math.pi / 2) ** 2
    alphas = f / f[0]
    betas = (1 - alphas[1:] / alphas[:-1]).clamp(max=0.999)
    return torch.cumprod(1 - betas, dim=0)


def linear_alphas_cumprod(steps: int) -> torch.Tensor:
    scale = 1000 / steps
    betas = torch.linspace(scale * 1e-4, scale * 0.02, steps, dtype=torch.float64)
    return torch.cumprod(1 - betas, dim=0)


@dataclass
class Inpaint:
    """Known values to keep: `values` (B,T,J,C) normalised features; `mask` like it, True where known."""

    values: torch.Tensor
    mask: torch.Tensor


@dataclass(frozen=True, eq=False)
class DDIMOptions:
    """How `Diffusion.sample_ddim` samples: `steps` network calls over the whole schedule (fewer
    with SDEdit), classifier-free `guidance`, `eta` (0: deterministic DDIM; 1: DDPM-like noise),
    `strength` (where on the schedule it starts), known values to keep (`inpaint`) and `hook`, a
    function every x0 prediction goes through (e.g. the loop cross-fade, or IK guidance)."""

    steps: int = 10
    guidance: float = 1.0
    eta: float = 0.0
    strength: float = 1.0
    inpaint: Inpaint | None = None
    hook: Callable[[torch.Tensor], torch.Tensor] | None = None


class Diffusion:
    def __init__(self, steps: int = 1000, schedule: str = "cosine"):
        if schedule == "cosine":
            alphas_cumprod = cosine_alphas_cumprod(steps)
        elif schedule == "linear":
            alphas_cumprod = linear_alphas_cumprod(steps)
        else:
            raise ValueError(f"Unknown noise schedule {schedule!r} (cosine or linear)")
        self.steps = steps
        self.alphas_cumprod = alphas_cumprod

    def _ab(self, t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        ab = self.alphas_cumprod.to(like.device)[t].to(like.dtype)
        return ab.view(-1, *([1] * (like.dim() - 1)))

    def q_sample(self, x0: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        ab = self._ab(t, x0)
        return ab.sqrt() * x0 + (1 - ab).sqrt() * noise

    def _guided(self, predict: Predict, x: torch.Tensor, t: torch.Tensor, guidance: float) -> torch.Tensor:
        batch = x.shape[0]
        if guidance == 1.0:
            return predict(x, t, torch.ones(batch, device=x.device))
        on = torch.cat([torch.ones(batch), torch.zeros(batch)]).to(x.device)
        both = predict(torch.cat([x, x]), torch.cat([t, t]), on)
        cond, uncond = both[:batch], both[batch:]
        return uncond + guidance * (cond - uncond)

    def sample_ddim(
        self,
        predict: Predict,
        shape: tuple[int, ...],
        options: DDIMOptions | None = None,
        generator: torch.Generator | None = None,
        noise: torch.Tensor | None = None,
        init: torch.Tensor | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> torch.Tensor:
        """DDIM (Song et al.) over `options.steps` evenly spaced noise levels; known values
        (inpainting) are imposed on every x0 prediction and on the result, so they come back exactly.
        With `init` (a clean sample of `shape`), sampling starts from it noised to `options.strength`
        of the schedule (SDEdit): strength 1 ignores it, 0.5 keeps its broad strokes; the steps shrink
        with it. Without `init`, a strength below 1 starts from `noise` as the noisy x at that level
        (after `invert_ddim`)."""
        options = DDIMOptions() if options is None else options
        steps, guidance, eta, strength = options.steps, options.guidance, options.eta, options.strength
        inpaint, hook = options.inpaint, options.hook
        x = torch.randn(shape, generator=generator) if noise is None else noise.clone()
        if not 0.0 < strength <= 1.0:
            raise ValueError(f"strength must lie in (0, 1], got {strength}")
        top = max(1, round(strength * (self.steps - 1)))
        if strength < 1.0:
            steps = max(2, math.ceil(steps * strength))
        if init is not None:
            ab = self._ab(torch.full((shape[0],), top, dtype=torch.long), x)
            x = ab.sqrt() * init + (1 - ab).sqrt() * x
        times = torch.linspace(top, 0, steps).round().long()
        x0 = x
        for i, t_now in enumerate(times):
            t = torch.full((shape[0],), int(t_now), dtype=torch.long)
            x0 = self._guided(predict, x, t, guidance)
            if hook is not None:  # e.g. the loop cross-fade, applied to every prediction
                x0 = hook(x0)
            if inpaint is not None:
                x0 = torch.where(inpaint.mask, inpaint.values, x0)
            if i == len(times) - 1:
                break
            ab = self._ab(t, x)
            ab_next = self._ab(torch.full_like(t, int(times[i + 1])), x)
            eps = (x - ab.sqrt() * x0) / (1 - ab).clamp(min=1e-12).sqrt()
            sigma = eta * ((1 - ab_next) / (1 - ab) * (1 - ab / ab_next)).clamp(min=0).sqrt()
            x = ab_next.sqrt() * x0 + (1 - ab_next - sigma**2).clamp(min=0).sqrt() * eps
            if eta > 0:
                x = x + sigma * torch.randn(shape, generator=generator)
            if progress is not None:
                progress((i + 1) / len(times))
        if inpaint is not None:
            x0 = torch.where(inpaint.mask, inpaint.values, x0)
        return x0

    def invert_ddim(
        self, predict: Predict, x0: torch.Tensor, steps: int = 10, strength: float = 1.0
    ) -> torch.Tensor:
        """Deterministic DDIM inversion: the noisy x at `strength` of the schedule that DDIM (eta 0,
        the same `steps` and `strength`, `init` omitted) denoises back to about `x0`: the sampler's
        levels walked upwards, each step's noise taken from the prediction at the lower level."""
        top = max(1, round(strength * (self.steps - 1)))
        steps = max(2, math.ceil(steps * strength))
        times = torch.linspace(top, 0, steps).round().long().flip(0)  # 0 … top
        x = x0.clone()
        batch = x0.shape[0]
        for low, high in zip(times[:-1], times[1:], strict=True):
            t = torch.full((batch,), int(low), dtype=torch.long)
            predicted = self._guided(predict, x, t, 1.0)
            ab = self._ab(t, x)
            eps = (x - ab.sqrt() * predicted) / (1 - ab).clamp(min=1e-12).sqrt()
            ab_high = self._ab(torch.full_like(t, int(high)), x)
            x = ab_high.sqrt() * predicted + (1 - ab_high).sqrt() * eps
        return x

    def sample_ancestral(
        self,
        predict: Predict,
        shape: tuple[int, ...],
        guidance: float = 1.0,
        generator: torch.Generator | None = None,
        inpaint: Inpaint | None = None,
    ) -> torch.Tensor:
        """The full-length ancestral (DDPM) sampler, one network call per training noise level."""
        x = torch.randn(shape, generator=generator)
        ac = self.alphas_cumprod
        x0 = x
        for step in range(self.steps - 1, -1, -1):
            t = torch.full((shape[0],), step, dtype=torch.long)
            x0 = self._guided(predict, x, t, guidance)
            if inpaint is not None:
                x0 = torch.where(inpaint.mask, inpaint.values, x0)
            if step == 0:
                break
            ab, ab_prev = ac[step], ac[step - 1]
            beta = 1 - ab / ab_prev
            mean = (ab_prev.sqrt() * beta / (1 - ab)) * x0 + (
                (1 - beta).sqrt() * (1 - ab_prev) / (1 - ab)
            ) * x
            var = beta * (1 - ab_prev) / (1 - ab)
            x = mean.to(x.dtype) + var.sqrt().to(x.dtype) * torch.randn(shape, generator=generator)
        return x0
