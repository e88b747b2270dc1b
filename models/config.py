"""Configurations of the motion model, its diffusion and its training, as dataclasses.

A checkpoint stores all three as JSON next to its weights, so a model always loads with the shape
and normalisation it was trained with.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from .representation import CHANNELS
from .rig_features import EDGE_TYPES, GEOMETRY, MAX_HOPS, SKIN

TEXT_DIM = 384  # all-MiniLM-L6-v2
IMAGE_DIM = 1280  # EfficientNet-Lite0 global feature


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
class DiffusionConfig:
    steps: int = 1000  # training noise levels
    schedule: str = "cosine"
    sample_steps: int = 10  # default DDIM steps
    guidance: float = 2.0  # default classifier-free guidance scale (text, or text + image)
    guidance_image: float = 2.0  # default scale when only a reference image conditions the motion


@dataclass
class LossConfig:
    features: float = 1.0  # x0 reconstruction of the normalised features
    positions: float = 1.0  # FK positions from the predicted rotations (body sizes)
    velocity: float = 1.0  # frame-to-frame FK displacement
    foot_contact: float = 1.0  # FK feet still where the data says they are planted


@dataclass
class TrainConfig:
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


T = TypeVar("T")


def from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build a (nested) config dataclass from a dict, refusing unknown keys with a clear message."""
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"Unknown {cls.__name__} keys: {', '.join(unknown)}")
    values = {}
    for name, value in data.items():
        nested = NESTED.get(cls, {})
        if name in nested and isinstance(value, dict):
            value = from_dict(nested[name], value)
        values[name] = value
    return cls(**values)


def load_config(path: str | Path, cls: type[T] = TrainConfig) -> T:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"Cannot read the config {path}: {exc}") from exc
    return from_dict(cls, data)


def to_dict(config: Any) -> dict:
    return asdict(config)


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


NESTED: dict[type, dict[str, type]] = {
    TrainConfig: {"model": DenoiserConfig, "diffusion": DiffusionConfig, "loss": LossConfig},
    PoseTrainConfig: {"model": PoseDenoiserConfig, "diffusion": DiffusionConfig},
}
