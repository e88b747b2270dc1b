"""The pose prior (ViPS) as Pose Space's pipeline is given it: the trained denoiser and its DDIM
sampler on plain arrays — the `PoseNetwork` of kirin_addon/pose/pipeline.py, which plans and composes
the projections, samples and walks around it.

`PosePrior.load()` reads the shipped weights (ONNX when it runs, else torch). Poses travel in the
network's space: (N,J,6) float32 arrays of 6D heading-frame deltas normalised by the training data's
statistics; the sampler here runs full DDIM, DDIM inversion, and SDEdit with one shared noise per
batch and a guide called on every x0 prediction but the last.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ...kirin_addon.core.rig_features import EDGE_TYPES, MAX_HOPS, RigFeatures
from ...kirin_addon.core.rotations import matrix_to_6d, sixd_to_matrix
from ...kirin_addon.pose.pipeline import Guide
from ...kirin_addon.pose.posed import PoseSpaceError
from ..config import DiffusionConfig
from ..diffusion import DDIMOptions, Diffusion
from .config import PoseDenoiserConfig
from .denoiser import PoseDenoiser

DEFAULT_POSE_MODEL = Path(__file__).resolve().parents[1] / "weights" / "pose"


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
    """A trained pose prior: `PosePrior.load()` reads the shipped weights. A `PoseNetwork`: a rig's
    inputs are the denoiser's keyword tensors (batch 1), from `rig_inputs`."""

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

    # ------------------------------------------------------------------ rig and representation
    def rig_inputs(self, features: RigFeatures, names: np.ndarray | None) -> dict[str, torch.Tensor]:
        """The denoiser's per-joint inputs of a canonical rig; `names` (J,384) joint-name embeddings
        (the text encoder's) or None (zeros: the prior was trained with names dropped a fifth of the
        time)."""
        count = len(features.geometry)
        names = (
            np.zeros((count, self.config.text_dim), np.float32)
            if names is None
            else np.asarray(names, np.float32)
        )
        if names.shape != (count, self.config.text_dim):
            raise PoseSpaceError(f"Joint-name embeddings must be ({count}, {self.config.text_dim}).")
        return {
            "geometry": torch.from_numpy(features.geometry)[None],
            "skin": torch.from_numpy(features.skin)[None],
            "names": torch.from_numpy(names)[None],
            "hops": torch.from_numpy(np.minimum(features.hops, MAX_HOPS))[None],
            "edges": torch.from_numpy(np.minimum(features.edges, EDGE_TYPES - 1))[None],
            "joint_mask": torch.ones(1, count, dtype=torch.bool),
        }

    def encode(self, deltas: np.ndarray) -> np.ndarray:
        """(…,J,3,3) heading-frame deltas → normalised network space (…,J,6) float32."""
        return ((matrix_to_6d(deltas) - self.mean) / self.std).astype(np.float32)

    def decode(self, x: np.ndarray) -> np.ndarray:
        return sixd_to_matrix(np.asarray(x).astype(np.float64) * self.std + self.mean)

    def _runner(self, rig: dict[str, torch.Tensor]) -> PriorRunner:
        return PriorRunner(self.net, rig)

    # ------------------------------------------------------------------ the sampler
    def sample(self, rig: dict[str, torch.Tensor], count: int, steps: int | None, seed: int) -> np.ndarray:
        """(count,J,6) poses by full DDIM from noise (`steps` None: the card's sample steps)."""
        generator = torch.Generator().manual_seed(seed)
        shape = (count, rig["joint_mask"].shape[1], self.config.channels)
        x = self.diffusion.sample_ddim(
            self._runner(rig), shape, DDIMOptions(steps or self.diffusion_config.sample_steps), generator
        )
        return x.numpy()

    def invert(self, rig: dict[str, torch.Tensor], x: np.ndarray, steps: int, strength: float) -> np.ndarray:
        """DDIM inversion: the noise (N,J,6) that `reconstruct` turns back into about `x` (N,J,6)."""
        return self.diffusion.invert_ddim(self._runner(rig), torch.from_numpy(x), steps, strength).numpy()

    def reconstruct(
        self, rig: dict[str, torch.Tensor], noise: np.ndarray, steps: int, strength: float
    ) -> np.ndarray:
        x = self.diffusion.sample_ddim(
            self._runner(rig), tuple(noise.shape), DDIMOptions(steps, strength=strength),
            noise=torch.from_numpy(noise),
        )
        return x.numpy()

    def denoise(
        self,
        rig: dict[str, torch.Tensor],
        init: np.ndarray,
        strength: float,
        steps: int,
        seed: int,
        guide: Guide | None = None,
    ) -> np.ndarray:
        """SDEdit of a batch of poses (N,J,6), every row with the same noise (so rows that differ a
        little come out differing a little); `guide` sees every x0 prediction but the last, which is
        the prior's own answer."""
        generator = torch.Generator().manual_seed(seed)
        noise = torch.randn((1,) + tuple(init.shape[1:]), generator=generator).expand(init.shape).clone()
        calls = {"n": 0}
        total = max(2, int(np.ceil(steps * strength)))

        def hook(x0: torch.Tensor) -> torch.Tensor:
            calls["n"] += 1
            return torch.from_numpy(guide(x0.numpy())) if guide is not None and calls["n"] < total else x0

        x = self.diffusion.sample_ddim(
            self._runner(rig),
            tuple(init.shape),
            DDIMOptions(steps, strength=strength, hook=hook),
            noise=noise,
            init=torch.from_numpy(init),
        )
        return x.numpy()

    def interpolate(self, a: np.ndarray, b: np.ndarray, shares: np.ndarray) -> np.ndarray:
        """Spherical interpolation of two Gaussian latents (J,6) at `shares` (F,): it keeps their
        norm statistics (F,J,6)."""
        return _slerp(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(shares)).numpy()


def _slerp(a: torch.Tensor, b: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    cos = torch.dot(flat_a, flat_b) / (flat_a.norm() * flat_b.norm()).clamp(min=1e-12)
    omega = torch.arccos(cos.clamp(-1.0, 1.0))
    if omega.abs() < 1e-4:
        return (1 - s)[:, None, None] * a + s[:, None, None] * b
    sa = torch.sin((1 - s) * omega) / torch.sin(omega)
    sb = torch.sin(s * omega) / torch.sin(omega)
    return sa[:, None, None] * a + sb[:, None, None] * b
