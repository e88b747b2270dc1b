"""Tiny synthetic driving videos for the video-extraction tests: a procedural creature's bones drawn as
bright capsules walking across a dark, static background (side view, orthographic), with a keypoints
CSV of a few of its joints, and a still video (nothing moves).

Writing video needs PyAV, which lives in the backend's environment (.venv): where this Python has no
`av` (the bpy 5.0 environment), the files are written by running this module with the .venv's Python.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SIZE = (96, 64)  # (W, H) pixels
FPS = 24.0


def creature(family: str = "quadruped", seed: int = 3):
    from kirin.kirin_addon.library.families.build import build_creature

    return build_creature(family, seed)


def walking_heads(rig, frames: int) -> np.ndarray:
    """(T,J,3) joint heads of the rig at rest, moving forward (−Y) with a little bob."""
    t = np.arange(frames)[:, None]
    size = float(rig.body_size)
    offset = np.concatenate([np.zeros((frames, 1)), -0.04 * size * t,
                             0.03 * size * np.sin(t * 0.8)], axis=1)
    return rig.heads[None] + offset[:, None]


def projector(rig, frames: int):
    """World (Y, Z) → pixels: the side view that keeps the whole walk in the picture."""
    heads = walking_heads(rig, frames)
    lo, hi = heads.reshape(-1, 3).min(0), heads.reshape(-1, 3).max(0)
    span = max(float(hi[1] - lo[1]), float(hi[2] - lo[2]) * SIZE[0] / SIZE[1], 1e-6)
    scale = 0.8 * SIZE[0] / span
    centre = (lo + hi) / 2

    def project(points: np.ndarray) -> np.ndarray:
        x = SIZE[0] / 2 - (points[..., 1] - centre[1]) * scale
        y = SIZE[1] / 2 - (points[..., 2] - centre[2]) * scale
        return np.stack([x, y], axis=-1)

    return project


def draw(rig, frames: int) -> tuple[np.ndarray, np.ndarray]:
    """(T,H,W,3) uint8 frames and (T,J,2) projected joint heads."""
    project = projector(rig, frames)
    heads = walking_heads(rig, frames)
    tails = heads + (rig.tails - rig.heads)[None]
    yy, xx = np.mgrid[0:SIZE[1], 0:SIZE[0]] + 0.5
    images = np.full((frames, SIZE[1], SIZE[0], 3), 40, dtype=np.uint8)
    for t in range(frames):
        mask = np.zeros(SIZE[::-1], dtype=bool)
        for s in np.linspace(0.0, 1.0, 5):
            points = project(heads[t] * (1 - s) + tails[t] * s)
            for x, y in points:
                mask |= (xx - x) ** 2 + (yy - y) ** 2 <= 2.5**2
        images[t][mask] = (230, 200, 170)
    return images, project(heads)


def keypoint_joints(rig) -> list[int]:
    """A few joints with keypoints: the main root and up to three end effectors."""
    ends = [int(j) for j in rig.end_effectors][:3]
    return [int(rig.main_root)] + [j for j in ends if j != rig.main_root]


def write_keypoints(path: Path, rig, points: np.ndarray, joints: list[int]) -> Path:
    lines = ["frame,joint,x,y,confidence"]
    for t in range(points.shape[0]):
        for j in joints:
            lines.append(f"{t},{rig.names[j]},{points[t, j, 0]:.3f},{points[t, j, 1]:.3f},1.0")
    path.write_text("\n".join(lines) + "\n")
    return path


def write_files(folder: Path, frames: int = 12, family: str = "quadruped", seed: int = 3) -> dict:
    """walk.mp4 (the creature walking), walk.csv (its keypoints), still.mp4 (nothing moves),
    not_a_video.mp4 (text); returns their paths and the truth."""
    from kirin.kirin_addon.video.video_io import write_video

    folder.mkdir(parents=True, exist_ok=True)
    rig = creature(family, seed).rig
    images, points = draw(rig, frames)
    write_video(folder / "walk.mp4", images, FPS)
    write_keypoints(folder / "walk.csv", rig, points, keypoint_joints(rig))
    write_video(folder / "still.mp4", np.repeat(images[:1], frames, axis=0), FPS)
    (folder / "not_a_video.mp4").write_text("this is not a video\n")
    out = {"video": str(folder / "walk.mp4"), "keypoints": str(folder / "walk.csv"),
           "still": str(folder / "still.mp4"), "broken": str(folder / "not_a_video.mp4"),
           "frames": frames, "fps": FPS, "size": list(SIZE)}
    (folder / "files.json").write_text(json.dumps(out))
    return out


def synthetic_files(folder: Path, frames: int = 12, family: str = "quadruped", seed: int = 3) -> dict:
    """`write_files` here, or with the .venv's Python where this one has no PyAV."""
    try:
        import av  # noqa: F401
    except ImportError:
        python = ROOT / ".venv" / "bin" / "python"
        run = subprocess.run([str(python), __file__, str(folder), str(frames), family, str(seed)],
                             capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            raise RuntimeError(run.stdout[-2000:] + run.stderr[-2000:]) from None
        return json.loads((folder / "files.json").read_text())
    return write_files(folder, frames, family, seed)


def cesiumman_from_behind(frames: int = 16, size: tuple[int, int] = (320, 240)):
    """CesiumMan's clip (../shared/assets) rendered by kirin_addon/video_synth from behind and 15° above,
    a view MediaPipe Pose reads well on this untextured render: (rig, SyntheticVideo with the truth)."""
    from kirin.kirin_addon.core.motion import Motion
    from kirin.kirin_addon.io.gltf import load_gltf
    from kirin.kirin_addon.video.synth import Framing, frame_camera, render_motion, skinned_vertices
    from kirin.models.video.idm import default_frame

    from assets_support import asset_files

    asset = load_gltf(asset_files("khronos_cesiumman/CesiumMan.glb")[0])
    rig, mesh = asset.rig, asset.mesh
    clip = asset.clips["animation_0"]
    motion = Motion(clip.fps, clip.root_positions[:frames], clip.rotations[:frames])
    vertices, _ = skinned_vertices(rig, mesh, motion)
    frame = default_frame(rig, mesh)  # the canonical frame: +Z up, the front −Y
    behind = frame.rotation.T @ np.array([0.0, np.cos(0.26), np.sin(0.26)])
    camera = frame_camera(vertices[:, ::3], size, up=frame.rotation.T @ np.array([0.0, 0.0, 1.0]),
                          direction=behind, framing=Framing(fov_deg=40.0, fill=0.9))
    return rig, render_motion(rig, mesh, motion, camera, size, background="textured", seed=0)


def cesiumman_video(path: Path, frames: int = 16) -> Path:
    """`cesiumman_from_behind` written as an MP4 at `path`, with the .venv's Python where this one has
    no PyAV or torch (the bpy 5.0 environment)."""
    try:
        import av  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        python = ROOT / ".venv" / "bin" / "python"
        run = subprocess.run([str(python), __file__, "cesiumman", str(path), str(frames)],
                             capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            raise RuntimeError(run.stdout[-2000:] + run.stderr[-2000:]) from None
        return path
    from kirin.kirin_addon.video.video_io import write_video

    _, video = cesiumman_from_behind(frames)
    return Path(write_video(path, video.frames, video.fps))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT.parent))
    sys.path.insert(0, str(Path(__file__).parent))
    if sys.argv[1] == "cesiumman":
        cesiumman_video(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        write_files(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
