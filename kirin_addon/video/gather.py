"""The 2D evidence of an Extract Motion From Video job (kirin_addon/video/pipeline.py): from the clip's
frames and what the user gave — a keypoints file (shared with the frames that repeat a labelled one),
MediaPipe Pose for a humanoid rig, Movie Clip tracks, silhouettes by background subtraction, frame by
frame ("stills") or from a mask folder — gathered into one `Evidence2D` with the horizon the film
shows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.rig import Rig
from .evidence import Evidence2D, combine

Report = Callable[..., None]  # report(fraction, message); what it raises (a cancel) stops the work


@dataclass
class VideoClip:
    """The frames of a job's video that the fit uses, and what they are."""

    frames: np.ndarray | None  # (T,H,W,3) pixels; dropped once the evidence is made
    indices: np.ndarray  # (T,) video frames (0-based)
    fps: float  # the clip's frame rate (the video's over the stride)
    size: tuple[int, int]  # (width, height) of the video in pixels
    count: int  # frames


@dataclass
class EvidenceSources:
    """What the user gave besides the video: per video frame from 0, keypoints ((F,J,2) px, (F,J)
    confidence) and tracks (joint → (N,2) px, NaN where untracked); MediaPipe Pose's roles → the rig's
    joints (None: not asked); the silhouette source ('background', 'stills', 'none' or a mask folder) and,
    for a mask folder, `masks(indices)`: the mask files of those video frames, checked by whoever may
    read them."""

    keypoints: tuple[np.ndarray, np.ndarray] | None = None
    tracks: dict[int, np.ndarray] = field(default_factory=dict)
    mediapipe: dict[str, int] | None = None
    silhouettes: str = "background"
    masks: Callable[[np.ndarray], Sequence[str]] | None = None


def frame_rows(points: np.ndarray, indices: np.ndarray, fill: float = np.nan) -> np.ndarray:
    """Rows `indices` of a per-video-frame array, `fill` past its end."""
    out = np.full((len(indices),) + points.shape[1:], fill, dtype=np.float64)
    inside = indices < points.shape[0]
    out[inside] = points[indices[inside]]
    return out


def gather_evidence(rig: Rig, clip: VideoClip, sources: EvidenceSources, report: Report,
                    notes: dict[str, Any]) -> tuple[Evidence2D, tuple[np.ndarray, np.ndarray] | None]:
    """The 2D evidence of the clip's frames and the keypoints among it; the clip's pixels are let go.
    What was found on the way goes into `notes`."""
    from .repeats import repeated_frames, shared_with_repeats
    from .tracks import tracks_evidence

    indices = clip.indices
    keypoints = None
    if sources.keypoints is not None:
        points, confidence = sources.keypoints
        points, confidence = frame_rows(points, indices), frame_rows(confidence, indices, 0.0)
        # A photograph labelled once is labelled wherever the film shows it again.
        points, confidence, gained = shared_with_repeats(points, confidence, repeated_frames(clip.frames))
        notes["keypoint_frames_from_repeats"] = gained
        keypoints = (points, confidence)
    if sources.mediapipe is not None:
        keypoints = _mediapipe(rig, clip, sources.mediapipe, keypoints, report, notes)
    tracks = None
    if sources.tracks:
        rows = {j: frame_rows(points, indices) for j, points in sources.tracks.items()}
        tracks = tracks_evidence(rows, clip.count, rig.joint_count)
    silhouettes = _silhouettes(clip, sources, report)
    horizon = None
    if silhouettes is not None and sources.silhouettes in ("background", "stills"):
        from .ground import horizon_row

        horizon = horizon_row(clip.frames, silhouettes)
        horizon = None if horizon is None else horizon * clip.size[1] / clip.frames.shape[1]
        notes["horizon_row"] = horizon
    clip.frames = None  # the pixels are not needed any more
    evidence = combine(clip.size, clip.fps, rig.joint_count, keypoints=keypoints, tracks=tracks,
                       silhouettes=silhouettes, horizon=horizon)
    return evidence, keypoints


def _silhouettes(clip: VideoClip, sources: EvidenceSources, report: Report) -> np.ndarray | None:
    """The clip's silhouettes from the source asked for (None: 'none'); VideoError where background
    subtraction finds no moving subject, or the stills no subject inside their borders."""
    source = sources.silhouettes
    if source == "background":
        from .silhouettes import background_silhouettes

        report(0.06, "separating the subject from the background")
        return background_silhouettes(clip.frames)
    if source == "stills":
        from .stills import still_silhouettes

        report(0.06, "separating the subject from each frame's surroundings")
        return still_silhouettes(clip.frames)
    if source == "none":
        return None
    from .silhouettes import mask_silhouettes

    assert sources.masks is not None, "a mask folder needs its mask files"
    return mask_silhouettes(sources.masks(clip.indices))


def _mediapipe(rig: Rig, clip: VideoClip, joints: dict[str, int], keypoints: Any, report: Report,
               notes: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The keypoints file's points merged with MediaPipe Pose's: the file wins where it has a point
    (MediaPipeError, a user-facing ValueError, where MediaPipe cannot give any)."""
    from .mediapipe_pose import mediapipe_keypoints

    def progress(fraction: float) -> None:  # what report raises (a cancel) stops MediaPipe's process
        report(0.05 + 0.05 * min(max(float(fraction), 0.0), 1.0), "finding the person (MediaPipe Pose)")

    points, confidence, notes["mediapipe"] = mediapipe_keypoints(clip.frames, rig, clip.size, joints=joints,
                                                                 progress=progress)
    if keypoints is not None:
        given = keypoints[1] > 0
        points = np.where(given[..., None], keypoints[0], points)
        confidence = np.where(given, keypoints[1], confidence)
    return points, confidence
