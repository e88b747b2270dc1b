"""One entry point for motion files: .bvh, .glb/.gltf and Kirin .npz clips."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..core.canonical import Y_UP_TO_Z_UP
from ..core.motion import Motion
from ..core.rig import Rig, RigError
from .bvh import load_bvh
from .clip import load_clip
from .gltf import load_gltf

MOTION_EXTENSIONS = (".bvh", ".glb", ".gltf", ".npz")
DEFAULT_GLTF_FPS = 30.0


def load_motion_file(path: str | os.PathLike, clip: str | None = None,
                     fps: float | None = None) -> tuple[Rig, Motion, str]:
    """(rig, motion, clip name) from a motion file; every failure is a ValueError with a clear message.

    `clip` picks a glTF animation by name (default: the first one); BVH and .npz files hold one
    clip and ignore it. `fps` is the glTF sampling rate, and resamples BVH and clip files.
    """
    path = Path(path)
    extension = path.suffix.lower()
    if extension not in MOTION_EXTENSIONS:
        expected = ", ".join(MOTION_EXTENSIONS)
        raise ValueError(f"Unsupported motion file '{path.name}': expected one of {expected}.")
    if not path.is_file():
        raise ValueError(f"Motion file not found: {path}")
    if fps is not None and not fps > 0:
        raise ValueError(f"fps must be positive, got {fps}.")
    try:
        if extension == ".bvh":
            rig, motion = load_bvh(path)
            name = path.stem
        elif extension == ".npz":
            loaded = load_clip(path)
            rig, motion = loaded.rig, loaded.motion
            name = str(loaded.metadata.get("name") or path.stem)
        else:
            asset = load_gltf(path, fps=fps or DEFAULT_GLTF_FPS)
    except Exception as exc:  # any parser failure (struct, zip, JSON, index...) means "cannot read"
        raise ValueError(f"Could not read {path.name}: {exc}") from exc

    if extension in (".glb", ".gltf"):
        if not asset.clips:
            raise ValueError(f"{path.name} has no animation to load.")
        if clip is None:
            name = next(iter(asset.clips))
        elif clip in asset.clips:
            name = clip
        else:
            available = ", ".join(f"'{c}'" for c in asset.clips)
            raise ValueError(f"{path.name} has no animation named '{clip}'; available: {available}.")
        rig, motion = asset.rig, asset.clips[name]
    elif fps is not None:
        motion = motion.resampled(fps)
    try:
        rig.validate()
    except RigError as exc:
        raise ValueError(f"{path.name}: {exc}") from exc
    return rig, motion, name


def declared_unit(path: str | os.PathLike) -> str | None:
    """The unit a motion file's format fixes: glTF is metres by specification; a BVH declares none (its
    unit is guessed from the body's height: kirin_addon/retarget/motion_file.py), nor does a Kirin clip."""
    return "m" if Path(path).suffix.lower() in {".glb", ".gltf"} else None


def file_world_matrix(path: str | os.PathLike) -> np.ndarray | None:
    """How a file's native axes sit in Blender's world: glTF (by specification) and BVH (by custom)
    are Y-up, so they get Blender's import turn; Kirin clips are already Z-up. Canonical-frame
    detection uses this as its prior where a rig's own evidence is weak (fish, snakes)."""
    return Y_UP_TO_Z_UP if Path(path).suffix.lower() in {".bvh", ".glb", ".gltf"} else None
