"""Blender Movie Clip tracks assigned to bones as 2D evidence (`tracks_evidence`; the operator converts
the markers to pixel arrays)."""

from __future__ import annotations

import numpy as np

from .video_io import VideoError

__all__ = ["tracks_evidence"]


def tracks_evidence(tracks: dict[int, np.ndarray], frame_count: int, joint_count: int,
                    confidence: float | dict[int, float | np.ndarray] = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Movie Clip tracks (already pixel arrays (T,2), NaN where a track has no marker) assigned to
    joint indices → points (T,J,2) and confidence (T,J). `confidence` is one value for all tracks or
    {joint: value or (T,) array}. A track shorter than `frame_count` is padded with NaN."""
    if frame_count <= 0:
        raise VideoError("Tracks need a video with at least one frame")
    points = np.full((frame_count, joint_count, 2), np.nan)
    conf = np.zeros((frame_count, joint_count))
    for joint, track in tracks.items():
        if not (0 <= int(joint) < joint_count) or int(joint) != joint:
            raise VideoError(f"A track is assigned to joint {joint}, "
                             f"but the rig has joints 0–{joint_count - 1}")
        joint = int(joint)
        track = np.asarray(track, dtype=np.float64)
        if track.ndim != 2 or track.shape[1] != 2:
            raise VideoError(f"The track of joint {joint} must have shape (frames, 2), got {track.shape}")
        if track.shape[0] > frame_count:
            raise VideoError(f"The track of joint {joint} has {track.shape[0]} frames, the video "
                             f"{frame_count}")
        value = confidence.get(joint, 1.0) if isinstance(confidence, dict) else confidence
        value = np.broadcast_to(np.asarray(value, dtype=np.float64), (frame_count,))[:track.shape[0]]
        if np.isnan(value).any() or (value < 0).any() or (value > 1).any():
            raise VideoError(f"Track confidence of joint {joint} must lie in [0, 1]")
        known = np.isfinite(track).all(1)
        points[:track.shape[0]][known, joint] = track[known]
        conf[:track.shape[0]][known, joint] = value[known]
    return points, conf
