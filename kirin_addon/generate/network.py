"""The motion network as the Generate pipeline sees it: a small protocol the pipeline is given an
object of (models/motion/generator.py's `MotionModel` is one), and the plain data that crosses it.

The pipeline (pipeline.py) works out everything about a request that needs no network: the rig's
features (kirin_addon/core/rig_features.py), the frames to keep and the clips retrieved from the
motion bank, as features in the canonical frame. The network turns them into its own inputs,
samples, and hands back features; the pipeline decodes them and does everything after. The few
calls of the protocol are the only places a Generate job passes from the engine to the networks.

numpy and the standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..core.rig_features import RigFeatures

Progress = Callable[[float], None]  # a fraction done; may raise to stop the work (a cancelled job)


class GenerationError(ValueError):
    """Bad generation input, or a request this pipeline cannot make; the message is user-facing."""


@dataclass(frozen=True)
class KeptFeatures:
    """Existing keys to honour (in-betweening), as features."""

    features: np.ndarray  # (T,J,C) the kept motion's features (canonical frame, not normalised)
    mask: np.ndarray  # (T,J) bool: the joints of the frames that are kept


@dataclass(frozen=True)
class SampleRequest:
    """One sampling call: `variants` clips of `frames` frames for a prompt and/or an image on a rig.

    `length` and `extra` lay the clip out in the network's tokens (`token_layout`): it samples
    `length + extra` frames, the `extra` ones past the end blended into the start for a loop.
    `references` (V, length + extra, J, C) are the retrieved clips' features (contacts the library's
    labels), the first `found` of them distinct clips: sampling starts from them noised to `strength`
    of the schedule (0: taken as they are). The features are in the canonical frame, not normalised."""

    rig: Any  # the network's encoding of the rig (`MotionNetwork.encode_rig`)
    prompt: str | None
    image: str | np.ndarray | None  # a file path, pixels, or the image encoder's feature (1-D)
    frames: int
    length: int
    extra: int
    variants: int
    seed: int
    guidance: float | None = None  # None: the network's default for the conditions given
    loop: bool = False
    keep: KeptFeatures | None = None
    references: np.ndarray | None = None
    found: int = 0
    strength: float = 1.0
    steps: int | None = None  # sampling steps; None: the network's default
    sampler: str = "ddim"  # or "ancestral" (the full-length reference sampler, benchmarks)
    smooth: float = 1.0  # frames (a Gaussian sigma) evening out the seams between tokens; 0: off
    image_encoder: str | None = None  # None: the default image encoder


class MotionNetwork(Protocol):
    """What the Generate pipeline needs of a motion network. `fps` and `frames_per_token` are plain
    attributes (the rate it makes motions at, the frames one of its tokens holds)."""

    fps: float
    frames_per_token: int

    def encode_rig(self, features: RigFeatures) -> Any:
        """The network's inputs for a rig (its joint names embedded): computed once, kept by the
        pipeline with the prepared rig and handed back in each `SampleRequest`."""
        ...

    def embed_text(self, text: str) -> np.ndarray:
        """The sentence vector of a prompt, which the motion bank's captions are searched with."""
        ...

    def sample(
        self, request: SampleRequest, progress: Progress | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The sampled features (V, frames, J, C), not normalised, the kept ones exact; and per
        variant how far along the noise schedule it started (1: from noise, 0: a reference as it
        is). `progress` is called as sampling goes (and may raise to stop it)."""
        ...


def token_layout(frames: int, loop: bool, frames_per_token: int) -> tuple[int, int]:
    """`frames` in whole tokens (at least one), and the frames a loop samples past the end to blend
    into its start (a sixth of it, whole tokens, at least one; none without a loop)."""
    length = -(-max(frames, frames_per_token) // frames_per_token) * frames_per_token
    extra = max(frames_per_token, (length // 6) // frames_per_token * frames_per_token) if loop else 0
    return length, extra
