"""What the video fit (kirin_addon/video/pipeline.py) takes and gives: its settings, its result, the
error it raises for input it cannot work with, and its progress callback."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..core.camera import PinholeCamera
from ..core.motion import Motion


class VideoFitError(ValueError):
    """Input the video fit cannot work with; the message is user-facing."""


@dataclass
class VideoFitConfig:
    # Schedule: `epochs` × `steps_per_epoch` full-sequence Adam steps (models/video/fitter.py).
    epochs: int = 20
    steps_per_epoch: int = 30
    lr: float = 1e-3  # 6D rotations (the Adam lr)
    lr_root: float = 1e-2  # root translation (body sizes) and log body scale
    # Loss weights (the first three are the 1.0 / 100 / 0.2).
    projection: float = 1.0
    smooth_rotation: float = 100.0
    smooth_increment: float = 0.2
    silhouette: float = 1.0  # 1 − soft IoU
    silhouette_chamfer: float = 10.0  # both chamfer directions, in subject sizes
    smooth_root: float = 10.0  # squared root acceleration, body sizes
    prior: float = 0.01  # squared 6D distance to the initial pose
    gait_prior: float = 1.0  # ... its weight when the starts are a gait (generate/gait_cycle.py)
    orthonormal: float = 0.1  # keeps the raw 6D columns unit and orthogonal
    ground: float = 10.0  # feet below ground (squared, body sizes) and robust lowest-foot height
    ground_scale: float = 0.05  # body sizes: a frame whose lowest foot is higher counts as airborne
    # The lower half of the frames' lowest-foot heights, squared (× `ground`): only where the camera was
    # placed by the ground the footage shows (its horizon and contact row).
    settled: float = 1.0
    scale_prior: float = 0.01  # squared log body scale (only when it is fitted)
    # Upright: the body's up axis may tilt `upright_deg` freely; beyond, each radian of cosine costs
    # `upright` (a real animal's trunk does not roll onto its back between two frames of a gallop).
    upright: float = 10.0
    upright_deg: float = 20.0
    # Projection: Geman-McClure scale as a share of the subject's 2D size, annealed.
    robust_scale: float = 0.02
    robust_scale_start: float = 0.1
    # Silhouette rendering.
    mask_size: int = 256  # long side the silhouettes are area-downsampled to (at most)
    silhouette_size: int = 32  # side of the square grid of each frame's crop around the subject
    crop_margin: float = 0.15  # crop margin around the mask's bounding box, share of its size
    silhouette_sharpness: float = 0.7  # τ of the soft capsule edge, grid pixels
    silhouette_frames: int = 8  # frames rendered per step (0: all)
    silhouette_every: int = 2  # render the soft silhouette every this many steps
    radius_share: float = 0.12  # capsule radius / bone length without a mesh
    axis_samples: int = 5  # points per bone for the inside-the-mask term
    # Camera estimate (used when no camera is given).
    focal: float | None = None  # pixels; None → max(W, H)
    camera_elevation_deg: float = 10.0
    align_start: bool = True  # estimated camera: start at the rig's rest place, facing its forward
    # Rigid heading search.
    facing: str | None = None  # "left", "right", "toward", "away": where the head points in the video
    init_yaws: int = 8
    rigid_frames: int = 12  # frames the heading search runs on (evenly spaced)
    rigid_steps: int = 80  # steps of the search; half as many refine the winner on all frames
    lr_rigid: float = 0.05
    # Body scale: None → fitted exactly when a camera is given (and the rig has feet).
    fit_scale: bool | None = None
    # Canonical frame overrides (None = detect), as in the panel.
    up_axis: str | None = None
    forward_axis: str | None = None
    min_confidence: float = 1e-3  # points below this confidence are ignored
    seed: int = 0


@dataclass
class VideoFitResult:
    motion: Motion  # on the user's rig, armature space, fps = evidence.fps
    camera: PinholeCamera  # in the user's armature space
    scale: float
    reprojection_px: np.ndarray  # (T,) mean px error of joints with evidence (NaN: none that frame)
    seconds: float
    report: dict = field(default_factory=dict)


def report_progress(progress: Callable[[float], None] | None, value: float) -> None:
    """Tell `progress` (when given) how far the fit is, clamped to [0, 1]; what it raises stops the fit."""
    if progress is not None:
        progress(float(min(max(value, 0.0), 1.0)))
