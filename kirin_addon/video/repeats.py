"""Frames that show again a picture an earlier frame showed: a film of plates holding each for a few
frames and looping (Muybridge's), telecine doubles, a paused clip. A point labelled on one of them holds
on all (`shared_with_repeats`): an animator labels each photograph once.

Pictures are compared as small grey thumbnails; compression makes one photograph differ from itself by a
few levels, two photographs by many more. numpy only.
"""

from __future__ import annotations

import numpy as np

from .silhouettes import _resize, _target_size

THUMB_SIDE = 32  # pixels across the thumbnails compared
SAME_PICTURE = 4.0  # mean absolute grey difference (0–255) below which two frames show one picture
CHUNK = 64  # frames compared at once


def repeated_frames(frames: np.ndarray) -> np.ndarray:
    """(T,) for each frame of (T,H,W,3) the first frame that shows the same picture (itself if none
    does)."""
    frames = np.asarray(frames)
    count, height, width = frames.shape[:3]
    w, h = _target_size(width, height, THUMB_SIDE)
    thumbs = np.concatenate([_resize(frames[s:s + 64], h, w).mean(-1).reshape(-1, h * w)
                             for s in range(0, count, 64)]) if count else np.zeros((0, h * w))
    thumbs = thumbs.astype(np.float32)
    first = np.arange(count)
    for s in range(0, count, CHUNK):
        block = thumbs[s:s + CHUNK]
        found = np.full(len(block), -1)
        for e in range(0, s + len(block), CHUNK):  # earlier frames, a chunk at a time (bounded memory)
            same = np.abs(block[:, None, :] - thumbs[None, e:e + CHUNK]).mean(-1) < SAME_PICTURE
            hit = same.any(axis=1) & (found < 0)
            found[hit] = e + np.argmax(same[hit], axis=1)
        first[s:s + len(block)] = np.where(found >= 0, found, first[s:s + len(block)])
    return first


def shared_with_repeats(points: np.ndarray, confidence: np.ndarray,
                        repeats: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Keypoints (T,J,2) and confidence (T,J) with every frame that has none taking those of a frame
    showing the same picture (`repeats` from `repeated_frames`); and how many frames gained some."""
    points, confidence = np.array(points, dtype=np.float64), np.array(confidence, dtype=np.float64)
    labelled = confidence.max(axis=1) > 0
    source: dict[int, int] = {}
    for t in np.flatnonzero(labelled):
        source.setdefault(int(repeats[t]), int(t))
    gained = 0
    for t in np.flatnonzero(~labelled):
        donor = source.get(int(repeats[t]))
        if donor is not None:
            points[t], confidence[t] = points[donor], confidence[donor]
            gained += 1
    return points, confidence, gained
