"""A small procedural library and its feature cache, for tests of the models."""

from __future__ import annotations

from pathlib import Path

from kirin.kirin_addon.library.build import BuildConfig, build_library
from kirin.models.data.cache import build_cache
from kirin.models.encoders.image import load_image_encoder
from kirin.models.encoders.text import load_text_encoder


def small_cache(root: Path, config: BuildConfig) -> Path:
    """Build `root/lib` with `config` and its feature cache `root/cache`; returns the cache folder."""
    build_library(root / "lib", config, progress=False)
    build_cache([root / "lib"], root / "cache", load_text_encoder(), load_image_encoder(), progress=False)
    return root / "cache"
