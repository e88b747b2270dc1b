"""Grids of clips rendered as skinned meshes, so a person can look at the data.

Any clip works: its rig gets a capsule mesh (procedural.capsule_mesh) skinned to it, posed by
linear blend skinning and drawn by the numpy rasteriser. The camera follows each creature.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..core.motion import forward_kinematics
from ..core.skinning import linear_blend_skinning, skin_matrices
from ..io.clip import Clip, load_clip
from .procedural import capsule_mesh
from .render import Camera, rasterize, write_png

FAMILY_COLOURS = {
    "quadruped": (0.78, 0.58, 0.38), "biped": (0.62, 0.68, 0.80), "bird": (0.85, 0.80, 0.45),
    "hexapod": (0.55, 0.75, 0.45), "spider": (0.60, 0.50, 0.65), "serpent": (0.50, 0.72, 0.55),
    "dragon": (0.82, 0.45, 0.40), "fish": (0.45, 0.65, 0.85),
}


def _families_from_index(paths: list[Path]) -> dict[Path, str]:
    """Families from a library's index.json (written by `kirin data build`), to avoid opening
    every clip; empty when there is none."""
    found: dict[Path, str] = {}
    roots = {p.parent.parent for p in paths} | {p.parent for p in paths}
    for root in roots:
        index = root / "index.json"
        if index.is_file():
            for row in json.loads(index.read_text()):
                found[root / row["file"]] = row["family"]
    return found


def pick_clips(paths: list[Path], count: int) -> list[Path]:
    """Up to `count` clips spread over families and actions (round robin by family)."""
    by_family: dict[str, list[Path]] = {}
    families = _families_from_index(paths)
    for path in paths:
        family = families.get(path) or str(load_clip(path).metadata.get("family", "unknown"))
        by_family.setdefault(family, []).append(path)
    chosen: list[Path] = []
    while len(chosen) < count and any(by_family.values()):
        for family in sorted(by_family):
            if by_family[family] and len(chosen) < count:
                chosen.append(by_family[family].pop(0))
    return chosen


def clip_frames(clip: Clip, frames: int, size: int) -> list[np.ndarray]:
    """`frames` images of one clip (its last pose held if it is shorter)."""
    rig, motion = clip.rig, clip.motion
    mesh = capsule_mesh(rig, radius_scale=0.05)
    pose = forward_kinematics(rig, motion)
    skins = skin_matrices(rig.rest, pose)
    size_m = rig.body_size
    direction = np.array([0.55, -0.75, 0.35])
    direction /= np.linalg.norm(direction)
    colour = FAMILY_COLOURS.get(str(clip.metadata.get("family")), (0.7, 0.7, 0.7))
    images = []
    for t in range(frames):
        k = min(t, motion.frame_count - 1)
        vertices = linear_blend_skinning(mesh.vertices, mesh.joint_indices, mesh.joint_weights, skins[k])
        centre = pose[k, :, :3, 3].mean(0)
        camera = Camera(centre + direction * 2.4 * size_m, centre, fov_deg=35.0)
        images.append(rasterize(vertices, mesh.triangles, camera, size=size, color=colour))
    return images


def render_grid_frames(clip_paths: list[Path], out_dir: Path, columns: int = 3, cell: int = 160,
                       frames: int = 90) -> int:
    """Write frame_0000.png… of a grid of clips into out_dir; returns the number of frames."""
    out_dir.mkdir(parents=True, exist_ok=True)
    clips = [load_clip(p) for p in clip_paths]
    frames = min(frames, max(c.motion.frame_count for c in clips))
    cells = [clip_frames(c, frames, cell) for c in clips]
    rows = -(-len(cells) // columns)
    for t in range(frames):
        grid = np.zeros((rows * cell, columns * cell, 3), dtype=np.uint8)
        for i, images in enumerate(cells):
            r, c = divmod(i, columns)
            grid[r * cell:(r + 1) * cell, c * cell:(c + 1) * cell] = images[t]
        write_png(out_dir / f"frame_{t:04d}.png", grid)
    return frames
