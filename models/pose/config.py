"""Configurations of the pose prior: its denoiser and its training, as dataclasses (the diffusion
schedule's settings and the JSON helpers are shared: models/config.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ...kirin_addon.core.rig_features import EDGE_TYPES, GEOMETRY, MAX_HOPS, SKIN
from ..config import TEXT_DIM, DiffusionConfig


@dataclass
class PoseDenoiserConfig:
    """The pose prior's network: one token per joint of one static pose."""

    channels: int = 6  # the joint's world delta (heading frame), 6D form
    width: int = 128
    heads: int = 4
    layers: int = 4
    ffn: int = 256
    geometry: int = GEOMETRY
    skin: int = SKIN
    text_dim: int = TEXT_DIM
    max_hops: int = MAX_HOPS
    edge_types: int = EDGE_TYPES


@dataclass
class PoseTrainConfig:
    NESTED: ClassVar[dict[str, type]] = {"model": PoseDenoiserConfig, "diffusion": DiffusionConfig}

    data: list[str] = field(default_factory=list)  # feature caches (models/data/cache.py)
    out: str = "runs/pose"
    batch: int = 128
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup: int = 200
    steps: int = 20000
    min_lr: float = 0.1  # cosine floor, as a share of lr
    ema: float = 0.999
    random_share: float = 0.1  # share of a batch drawn as random valid poses (within data limits)
    drop_names: float = 0.2  # joint names replaced by zeros: the prior must work on any naming
    min_change: float = 0.02  # ViPS' static filter: a frame is kept when it moved ≥ this (body sizes)
    checkpoint_every: int = 200
    log_every: int = 20
    seed: int = 0
    threads: int = 0
    max_seconds: float = 0.0
    model: PoseDenoiserConfig = field(default_factory=PoseDenoiserConfig)
    diffusion: DiffusionConfig = field(default_factory=lambda: DiffusionConfig(steps=1000, sample_steps=8))
