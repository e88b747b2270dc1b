"""Configurations of the motion model: its denoiser, its losses and its training, as dataclasses
(the diffusion schedule's settings and the JSON helpers are shared: models/config.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ...kirin_addon.core.rig_features import EDGE_TYPES, GEOMETRY, MAX_HOPS, SKIN
from ...kirin_addon.generate.features import CHANNELS
from ..config import IMAGE_DIM, TEXT_DIM, DiffusionConfig


@dataclass
class DenoiserConfig:
    channels: int = CHANNELS  # per joint and frame
    frames_per_token: int = 8  # temporal patch: 8 frames of one joint are one token (speed on 2 cores)
    width: int = 128
    heads: int = 4
    layers: int = 4
    ffn: int = 256
    window: int = 6  # temporal attention reaches ±window tokens (length-agnostic)
    geometry: int = GEOMETRY
    skin: int = SKIN
    text_dim: int = TEXT_DIM
    image_dim: int = IMAGE_DIM
    max_hops: int = MAX_HOPS
    edge_types: int = EDGE_TYPES
    dropout: float = 0.0


@dataclass
class LossConfig:
    features: float = 1.0  # x0 reconstruction of the normalised features
    positions: float = 1.0  # FK positions from the predicted rotations (body sizes)
    velocity: float = 1.0  # frame-to-frame FK displacement
    foot_contact: float = 1.0  # FK feet still where the data says they are planted


@dataclass
class TrainConfig:
    NESTED: ClassVar[dict[str, type]] = {
        "model": DenoiserConfig,
        "diffusion": DiffusionConfig,
        "loss": LossConfig,
    }

    data: list[str] = field(default_factory=list)  # feature caches (see models/data/cache.py)
    out: str = "runs/default"
    window: int = 64  # training crop, frames (a multiple of frames_per_token)
    batch: int = 16
    lr: float = 3e-4
    weight_decay: float = 0.01
    warmup: int = 200
    schedule: str = "constant"  # or "cosine": from lr down to lr·min_lr over the run's `steps`
    min_lr: float = 0.1  # cosine floor, as a share of lr
    steps: int = 20000
    ema: float = 0.999
    drop_text: float = 0.2  # each condition dropped with p = 0.2 (classifier-free guidance)
    drop_image: float = 0.2
    # share of samples shown on a rig with another rest pose (models/data/augment.py)
    rest_augment: float = 0.3
    authored_weight: float = 4.0  # how much more often an authored clip is drawn than a procedural one
    checkpoint_every: int = 100
    log_every: int = 10
    seed: int = 0
    threads: int = 0  # torch threads (0: torch's default)
    bf16: bool = True  # autocast on CPU/GPU
    compile: bool = False
    max_seconds: float = 0.0  # stop (with a checkpoint) after this much wall time; 0: no limit
    init: str = ""  # warm start: a checkpoint.pt whose EMA weights (and normalisation) seed a new run;
    # parameters it lacks keep their initialisation (e.g. layers added since, identity-initialised)
    model: DenoiserConfig = field(default_factory=DenoiserConfig)
    diffusion: DiffusionConfig = field(default_factory=DiffusionConfig)
    loss: LossConfig = field(default_factory=LossConfig)
