"""The video fit's evidence checked and prepared: keypoints with their confidence as weights, the
silhouettes area-downsampled to the working size (kirin_addon/video/pipeline.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.rig import Rig
from .fit_config import VideoFitConfig, VideoFitError


@dataclass
class FitEvidence:
    """The evidence as the fit reads it (`check_evidence`)."""

    size: tuple[int, int]
    fps: float
    points: np.ndarray  # (T,J,2) NaN → 0
    weights: np.ndarray  # (T,J) confidence, 0 where unknown
    masks: np.ndarray | None  # (T,h,w) float32 on the silhouette grid
    mask_scale: float  # working-mask pixels per image pixel
    horizon: float | None = None  # the horizon's row, image pixels (None: unknown)


def check_evidence(evidence, rig: Rig, config: VideoFitConfig) -> FitEvidence:
    """`evidence` (an `Evidence2D`: image_size, fps, points, confidence, silhouettes, horizon) checked
    against the rig, as the fit reads it; VideoFitError with a user-facing message otherwise."""
    try:
        width, height = (int(v) for v in evidence.image_size)
        fps = float(evidence.fps)
        points = np.asarray(evidence.points, dtype=np.float64)
        confidence = np.asarray(evidence.confidence, dtype=np.float64)
        silhouettes = getattr(evidence, "silhouettes", None)
    except (AttributeError, TypeError, ValueError) as exc:
        raise VideoFitError(f"The video evidence is malformed: {exc}") from exc
    if width <= 0 or height <= 0:
        raise VideoFitError(f"The video's image size must be positive, got {width}×{height}.")
    if not (math.isfinite(fps) and fps > 0):
        raise VideoFitError(f"The video's frame rate must be positive, got {fps}.")
    if points.ndim != 3 or points.shape[-1] != 2:
        raise VideoFitError(f"Keypoints must be (frames, joints, 2), got {points.shape}.")
    frames, joints = points.shape[:2]
    if frames == 0:
        raise VideoFitError("The video evidence has zero frames.")
    if joints != rig.joint_count:
        raise VideoFitError(f"The evidence has keypoints for {joints} joints but the rig has "
                            f"{rig.joint_count}; give one column per bone (NaN where unknown).")
    if confidence.shape != (frames, joints):
        raise VideoFitError(f"Confidence must be (frames, joints) = {(frames, joints)}, "
                            f"got {confidence.shape}.")
    known = np.all(np.isfinite(points), axis=-1) & np.isfinite(confidence)
    weights = np.where(known, np.clip(np.nan_to_num(confidence), 0.0, 1.0), 0.0)
    weights[weights < config.min_confidence] = 0.0
    points = np.where(known[..., None], points, 0.0)

    masks, mask_scale = None, 1.0
    if silhouettes is not None:
        masks = np.asarray(silhouettes, dtype=np.float32)
        if masks.ndim != 3 or masks.shape[0] != frames:
            raise VideoFitError(f"Silhouettes must be (frames, height, width) with {frames} frames, "
                                f"got {masks.shape}.")
        h, w = masks.shape[1:]
        if h == 0 or w == 0:
            raise VideoFitError("The silhouettes are empty images.")
        if abs(w / h - width / height) > 0.02 * width / height + 1.0 / min(h, w):
            raise VideoFitError(f"The silhouettes ({w}×{h}) do not have the video's aspect "
                                f"({width}×{height}).")
        masks = np.clip(np.nan_to_num(masks), 0.0, 1.0)
        longest = max(h, w)
        if longest > config.mask_size:
            factor = config.mask_size / longest
            size = (max(1, round(h * factor)), max(1, round(w * factor)))
            masks = area_downsample(masks, size)
        mask_scale = masks.shape[2] / width
        if not np.any(masks.reshape(frames, -1).max(1) > 0.5):
            masks = None  # silhouettes without a subject say nothing
    if not weights.any() and masks is None:
        raise VideoFitError("The video evidence has no keypoint for any joint and no silhouette: "
                            "nothing to fit the rig to.")
    horizon = getattr(evidence, "horizon", None)
    horizon = float(horizon) if horizon is not None and math.isfinite(float(horizon)) else None
    return FitEvidence((width, height), fps, points, weights, masks, mask_scale, horizon)


def area_downsample(masks: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """(T,h,w) float32 → (T,*size): each output pixel the mean of the input pixels its window covers,
    rows [⌊i·h/H⌋, ⌈(i+1)·h/H⌉) by columns likewise — adaptive average pooling, summed in float32 row by
    row then divided by the window's height and width, the order torch's area interpolation sums in (the
    fit's working masks were made by it: the same bits)."""
    masks = np.asarray(masks, dtype=np.float32)
    height, width = masks.shape[1:]
    rows, row_counts = _windows(height, size[0])
    cols, col_counts = _windows(width, size[1])
    total = np.zeros((masks.shape[0], size[0], size[1]), np.float32)
    for dy in range(int(row_counts.max())):
        band = masks[:, np.minimum(rows + dy, height - 1)]
        for dx in range(int(col_counts.max())):
            inside = (dy < row_counts)[:, None] & (dx < col_counts)[None, :]
            total = np.where(inside, total + band[:, :, np.minimum(cols + dx, width - 1)], total)
    return total / row_counts[:, None].astype(np.float32) / col_counts[None, :].astype(np.float32)


def _windows(length: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The first input index and the size of each of `count` adaptive pooling windows over `length`."""
    index = np.arange(count)
    first = index * length // count
    return first, ((index + 1) * length + count - 1) // count - first
