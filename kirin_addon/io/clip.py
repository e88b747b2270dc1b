"""Kirin's clip file: one compressed .npz holding a rig, its motion, captions and metadata.

Only plain arrays are stored (strings as fixed-width unicode, metadata as a JSON string), so a
clip loads with `allow_pickle=False` and can be read by any numpy.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.motion import Motion
from ..core.rig import Rig

FORMAT_VERSION = 1
_FORMAT_KEY = "kirin_clip_version"
_REQUIRED = ("names", "parents", "rest", "tails", "deform", "connected", "fps", "root_positions",
             "rotations", "captions", "metadata")


class ClipError(ValueError):
    """A clip file that cannot be read or written; the message is user-facing."""


@dataclass
class Clip:
    rig: Rig
    motion: Motion
    captions: list[str] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)


def _strings(values: Iterable[str]) -> np.ndarray:
    values = [str(v) for v in values]
    return np.array(values, dtype=str) if values else np.zeros(0, dtype="<U1")


def save_clip(path: str | os.PathLike, rig: Rig, motion: Motion, captions: Iterable[str] = (),
              metadata: dict | None = None) -> None:
    """Write a clip; the file is replaced atomically so a crash never leaves half a clip."""
    motion.check_rig(rig)
    try:
        metadata_json = json.dumps(dict(metadata or {}), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ClipError(f"Clip metadata must be JSON-serialisable: {exc}") from exc
    arrays = {
        _FORMAT_KEY: np.array(FORMAT_VERSION, dtype=np.int64),
        "names": _strings(rig.names),
        "parents": rig.parents.astype(np.int64),
        "rest": rig.rest.astype(np.float64),
        "tails": rig.tails.astype(np.float64),
        "deform": rig.deform.astype(bool),
        "connected": rig.connected.astype(bool),
        "fps": np.array(motion.fps, dtype=np.float64),
        "root_positions": motion.root_positions.astype(np.float64),
        "rotations": motion.rotations.astype(np.float64),
        "captions": _strings(captions),
        "metadata": np.array(metadata_json),
    }
    if motion.has_translations:
        arrays["translations"] = motion.translations.astype(np.float64)
    if rig.local_rest is not None:  # the host's exact parent-relative rest (Blender's bone_mat)
        arrays["local_rest"] = np.asarray(rig.local_rest, dtype=np.float64)
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    # Writing through a handle keeps numpy from appending ".npz" to names that lack it.
    with open(temporary, "wb") as handle:
        np.savez_compressed(handle, **arrays)
    os.replace(temporary, path)


def load_clip(path: str | os.PathLike) -> Clip:
    """Read a clip written by `save_clip` (any format version up to FORMAT_VERSION)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if not hasattr(data, "files") or _FORMAT_KEY not in data.files:
                raise ClipError("Not a Kirin clip file (no format version).")
            version = int(data[_FORMAT_KEY])
            if version > FORMAT_VERSION:
                raise ClipError(f"Clip format version {version} is newer than this Kirin ({FORMAT_VERSION}).")
            missing = [k for k in _REQUIRED if k not in data.files]
            if missing:
                raise ClipError(f"The clip file lacks: {', '.join(missing)}.")
            arrays = {k: data[k] for k in _REQUIRED}
            optional = {k: data[k] for k in ("translations", "local_rest") if k in data.files}
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ClipError(f"Cannot read the clip file: {exc}") from exc
    except ValueError as exc:  # includes ClipError; object arrays refused by allow_pickle=False
        if isinstance(exc, ClipError):
            raise
        raise ClipError(f"Cannot read the clip file: {exc}") from exc
    rig = Rig([str(n) for n in arrays["names"]], arrays["parents"], arrays["rest"], arrays["tails"],
              arrays["deform"], arrays["connected"], optional.get("local_rest"))
    motion = Motion(float(arrays["fps"]), arrays["root_positions"], arrays["rotations"],
                    optional.get("translations"))
    motion.check_rig(rig)
    try:
        metadata = json.loads(str(arrays["metadata"]))
    except json.JSONDecodeError as exc:
        raise ClipError(f"The clip's metadata is not valid JSON: {exc}") from exc
    return Clip(rig, motion, [str(c) for c in arrays["captions"]], metadata)


def find_clips(folder: str | os.PathLike) -> list[Path]:
    """The clip files of a library folder: those its index.json lists (`kirin data build`), else
    every .npz below it except the skinned meshes kept beside the clips."""
    folder = Path(folder)
    index = folder / "index.json"
    if index.exists():
        return [folder / row["file"] for row in json.loads(index.read_text())]
    return sorted(p for p in folder.rglob("*.npz") if p.parent.name != "meshes")

