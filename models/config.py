"""What every network's configuration shares: the frozen encoders' feature sizes, the diffusion
schedule's settings, and reading and writing config dataclasses as JSON.

A checkpoint stores its configs as JSON next to its weights, so a model always loads with the shape
and normalisation it was trained with. The networks' own configs live with them
(models/motion/config.py, models/pose/config.py); a config with nested configs names them in its
`NESTED` class variable (field → dataclass), which `from_dict` follows.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

TEXT_DIM = 384  # all-MiniLM-L6-v2
IMAGE_DIM = 1280  # EfficientNet-Lite0 global feature


@dataclass
class DiffusionConfig:
    steps: int = 1000  # training noise levels
    schedule: str = "cosine"
    sample_steps: int = 10  # default DDIM steps
    guidance: float = 2.0  # default classifier-free guidance scale (text, or text + image)
    guidance_image: float = 2.0  # default scale when only a reference image conditions the motion


T = TypeVar("T")


def from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build a (nested) config dataclass from a dict, refusing unknown keys with a clear message."""
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"Unknown {cls.__name__} keys: {', '.join(unknown)}")
    values = {}
    for name, value in data.items():
        nested = getattr(cls, "NESTED", {})
        if name in nested and isinstance(value, dict):
            value = from_dict(nested[name], value)
        values[name] = value
    return cls(**values)


def load_config(path: str | Path, cls: type[T]) -> T:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"Cannot read the config {path}: {exc}") from exc
    return from_dict(cls, data)


def to_dict(config: Any) -> dict:
    return asdict(config)
