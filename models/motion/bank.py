"""The motion bank's library on disk: a feature cache opened as a bank (`open_bank`), and the
default bank built once (`kirin bank build`: `build_bank`) where `default_bank_folder` says.

The bank is a feature cache (models/data/cache.py: captions, their MiniLM token features, clip
paths and splits) whose clip files are still on disk; only its training clips are searched. Its
captions' sentence vectors are computed once and kept beside it. The search and the retargeting of
the clips found are the engine's (kirin_addon/generate/retrieval.py); any cache of the user's own
library (authored clips ingested with `kirin data ingest`) can serve instead of the default one.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ...kirin_addon.generate.features import CHANNELS
from ...kirin_addon.generate.network import GenerationError
from ...kirin_addon.generate.retrieval import BankClip, MotionBank
from ..data.batching import usable
from ..data.cache import FeatureCache
from ..encoders.text import sentence_vectors

SENTENCES_FILE = "sentences.npy"  # the bank's caption sentence vectors, written into the cache once
BANK_ENV = "KIRIN_BANK"  # overrides where the default bank lives
BANK_CLIPS = 1200  # default bank size: ≈150 procedural creatures, every family and action
BANK_SEED = 7


def default_bank_folder() -> Path:
    """$KIRIN_BANK, else ~/.cache/kirin/bank (XDG_CACHE_HOME respected): the bank's library and cache."""
    if os.environ.get(BANK_ENV):
        return Path(os.environ[BANK_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kirin" / "bank"


def build_bank(
    folder: str | Path | None = None,
    clips: int = BANK_CLIPS,
    seed: int = BANK_SEED,
    workers: int = 2,
    progress: bool = True,
) -> Path:
    """A procedural library under `folder`/library and its feature cache under `folder`/cache (the
    bank: every clip searchable, no held-out splits); returns the cache folder."""
    from ...kirin_addon.library.build import BuildConfig, build_library
    from ..data.cache import build_cache
    from ..encoders.image import load_image_encoder
    from ..encoders.text import load_text_encoder

    folder = Path(folder) if folder else default_bank_folder()
    config = BuildConfig(clips=clips, seed=seed, test_fraction=0.0, zero_shot_family="", workers=workers)
    build_library(folder / "library", config, progress=progress)
    build_cache(
        [folder / "library"], folder / "cache", load_text_encoder(), load_image_encoder(), progress=progress
    )
    open_bank(folder / "cache")  # computes and keeps the sentence vectors now, not at first use
    return folder / "cache"


def open_bank(cache: FeatureCache | str | Path, split: str = "train") -> MotionBank:
    """The clips of a feature cache as a bank, its `split` clips searchable (ValueError when it has
    none with captions)."""
    cache = cache if isinstance(cache, FeatureCache) else FeatureCache(cache)
    clips = []
    for record in cache.records:
        start, count = record["offset"], record["frames"] * record["joints"]
        clips.append(BankClip(
            path=Path(record["path"]),
            creature=int(record["rig"]),
            procedural=not record["authored"],
            loop=bool(record.get("loop")),
            captions=tuple(record["captions"]),
            searchable=usable(record, split),
            # A view of the memory-mapped features: read only for a clip that is found.
            features=cache.motion[start: start + count].reshape(record["frames"], record["joints"], CHANNELS),
        ))
    if not any(clip.searchable and clip.captions for clip in clips):
        raise ValueError(f"No {split} clips with captions in {cache.folder}")
    return MotionBank(clips, cache.captions, _sentences(cache), source=f"cache {cache.folder}")


def open_default_bank() -> MotionBank | None:
    """The default bank when it has been built (`kirin bank build`), else None."""
    cache = default_bank_folder() / "cache"
    return open_bank(cache) if (cache / "clips.json").exists() else None


def load_bank(choice: str | Path | None) -> MotionBank | None:
    """The bank a backend is started with: "default" (the default bank when it has been built), a
    feature cache's folder, or None (none)."""
    if choice is None:
        return None
    if choice == "default":
        return open_default_bank()
    try:
        return open_bank(choice)
    except ValueError as exc:
        raise GenerationError(f"Cannot use the motion bank {choice}: {exc}") from exc


def _sentences(cache: FeatureCache) -> np.ndarray:
    """Every caption's sentence vector, computed once and kept beside the cache (fp16)."""
    path = cache.folder / SENTENCES_FILE
    if path.exists():
        vectors = np.load(path)
        if len(vectors) == len(cache.captions):
            return vectors.astype(np.float32)
    vectors = sentence_vectors(cache.text_tokens, cache.text_masks)
    try:
        np.save(path, vectors.astype(np.float16))
    except OSError:
        pass  # a read-only cache is searched all the same, just computed each time
    return vectors
