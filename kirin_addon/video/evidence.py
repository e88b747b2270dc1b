"""2D evidence from a driving video (issue 8): the container the sequence optimisation reads, and
how the sources are combined into it.

Whatever the user can give is gathered into one `Evidence2D` (`combine`):

- keypoints from a file written by any external detector (`keypoints.load_keypoints`, JSON or CSV);
- Blender Movie Clip tracks assigned to bones (`tracks.tracks_evidence`; the operator converts the
  markers to pixel arrays);
- silhouettes: background subtraction for a static camera (`silhouettes.background_silhouettes`) or
  the user's own mask sequence (`silhouettes.mask_silhouettes`).

Pixels: x to the right, y down, origin at the top-left corner of the video's top-left pixel (a pixel
centre is at +0.5). Unknown points are NaN with confidence 0. Engine layer: numpy and scipy only.
Bad input raises `VideoError` with a message for the status bar.

MediaPipe pose for humanoid rigs (the optional extra of the issue) is not here: mediapipe is not
installed in these environments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .video_io import VideoError

# ------------------------------------------------------------------------------ the container


@dataclass
class Evidence2D:
    image_size: tuple[int, int]  # (W,H) pixels of the video
    fps: float
    points: np.ndarray  # (T,J,2) pixels, x right, y down, NaN where unknown
    confidence: np.ndarray  # (T,J) in [0,1], 0 where unknown
    silhouettes: np.ndarray | None = None  # (T,h,w) float32 in [0,1], same aspect as the video
    silhouettes_dropped: int = 0  # frames whose silhouette `combine` dropped: the points contradict it
    horizon: float | None = None  # the horizon's row in the video's pixels (ground.py), None: unknown

    @property
    def frame_count(self) -> int:
        return int(self.points.shape[0])

    def validate(self, joint_count: int) -> Evidence2D:
        """Check shapes and values against a rig of `joint_count` joints; VideoError if wrong.
        Returns self so calls chain."""
        try:
            width, height = (int(v) for v in self.image_size)
        except (TypeError, ValueError) as exc:
            raise VideoError(f"Evidence image size must be (width, height), got {self.image_size!r}") from exc
        if width <= 0 or height <= 0:
            raise VideoError(f"Evidence image size must be positive, got {width}×{height}")
        if not (np.isfinite(self.fps) and self.fps > 0):
            raise VideoError(f"Evidence frame rate must be positive, got {self.fps}")
        points, conf = np.asarray(self.points), np.asarray(self.confidence)
        if points.ndim != 3 or points.shape[2] != 2:
            raise VideoError(f"Evidence points must have shape (frames, joints, 2), got {points.shape}")
        if points.shape[0] == 0:
            raise VideoError("The evidence has zero frames")
        if points.shape[1] != joint_count:
            raise VideoError(f"Evidence has {points.shape[1]} joints but the rig has {joint_count}")
        if conf.shape != points.shape[:2]:
            raise VideoError(f"Evidence confidence must have shape {points.shape[:2]}, got {conf.shape}")
        if np.isnan(conf).any():
            raise VideoError("Evidence confidence contains NaN (use 0 where a joint is unknown)")
        if (conf < 0).any() or (conf > 1).any():
            raise VideoError("Evidence confidence must lie in [0, 1] "
                             f"(found {conf.min():.3g}…{conf.max():.3g})")
        bad = (conf > 0) & ~np.isfinite(points).all(-1)
        if bad.any():
            t, j = np.argwhere(bad)[0]
            raise VideoError(f"Evidence point of joint {j} at frame {t} is not a number but has "
                             f"confidence {conf[t, j]:.3g}")
        has_silhouette = False
        if self.silhouettes is not None:
            sil = np.asarray(self.silhouettes)
            if sil.ndim != 3 or sil.shape[0] != points.shape[0] or min(sil.shape[1:], default=0) == 0:
                raise VideoError(f"Silhouettes must have shape ({points.shape[0]}, h, w), got {sil.shape}")
            h, w = sil.shape[1:]
            if abs(h - w * height / width) > 1.0:
                raise VideoError(f"Silhouettes ({w}×{h}) do not have the video's aspect ({width}×{height})")
            if not np.isfinite(sil).all() or sil.min() < 0 or sil.max() > 1:
                raise VideoError("Silhouette values must lie in [0, 1]")
            has_silhouette = bool(sil.max() > 0)
        if not (conf > 0).any() and not has_silhouette:
            raise VideoError("No evidence at all: no keypoint, track or silhouette in any frame")
        horizon = self.horizon
        if horizon is not None and not (np.isfinite(horizon) and -height <= horizon <= 2 * height):
            raise VideoError(f"The horizon's row must be a number near the picture, got {self.horizon!r}")
        return self


# ------------------------------------------------------------------------------ combining


def combine(image_size: tuple[int, int], fps: float, joint_count: int, *,
            keypoints: tuple[np.ndarray, np.ndarray] | None = None,
            tracks: tuple[np.ndarray, np.ndarray] | None = None,
            silhouettes: np.ndarray | None = None, horizon: float | None = None) -> Evidence2D:
    """Gather the evidence into one validated Evidence2D.

    `keypoints` and `tracks` are (points (T,J,2), confidence (T,J)) pairs. Where a track has a marker
    (confidence > 0) for a joint in a frame it wins over the file's keypoint — a tracked marker is
    placed by the user; elsewhere the keypoint is kept. All sources must have the same frame count.
    A frame's silhouette that most of its confident points fall outside is dropped
    (`drop_contradicted_silhouettes`). `horizon`: the horizon's row in the video's pixels, where known.
    """
    counts = {}
    for name, pair in (("keypoints", keypoints), ("tracks", tracks)):
        if pair is not None:
            counts[name] = np.asarray(pair[0]).shape[0]
    if silhouettes is not None:
        silhouettes = np.asarray(silhouettes, dtype=np.float32)
        counts["silhouettes"] = silhouettes.shape[0]
    if not counts:
        raise VideoError("No evidence given: add keypoints, tracks or silhouettes")
    if len(set(counts.values())) > 1:
        raise VideoError("The evidence sources cover different numbers of frames: "
                         + ", ".join(f"{k} {v}" for k, v in counts.items()))
    count = next(iter(counts.values()))
    points = np.full((count, joint_count, 2), np.nan)
    conf = np.zeros((count, joint_count))
    for name, pair in (("keypoints", keypoints), ("tracks", tracks)):  # later sources win
        if pair is None:
            continue
        p, c = np.asarray(pair[0], dtype=np.float64), np.asarray(pair[1], dtype=np.float64)
        if p.shape != (count, joint_count, 2) or c.shape != (count, joint_count):
            raise VideoError(f"The {name} have shapes {p.shape} and {c.shape}; expected "
                             f"({count}, {joint_count}, 2) and ({count}, {joint_count})")
        use = c > 0
        points[use] = p[use]
        conf[use] = c[use]
    dropped = 0
    if silhouettes is not None:
        silhouettes, dropped = drop_contradicted_silhouettes(silhouettes, points, conf, image_size)
    evidence = Evidence2D(image_size=(int(image_size[0]), int(image_size[1])), fps=float(fps), points=points,
                          confidence=conf, silhouettes=silhouettes, silhouettes_dropped=dropped,
                          horizon=None if horizon is None else float(horizon))
    return evidence.validate(joint_count)


MIN_CHECK_POINTS = 4  # confident points a frame needs before they may overrule its silhouette
CHECK_CONFIDENCE = 0.5
MIN_POINTS_INSIDE = 0.5  # share of them that must lie in (or near) the silhouette
INSIDE_MARGIN = 0.03  # of the mask's longer side: joints near the outline still count as inside


def drop_contradicted_silhouettes(silhouettes: np.ndarray, points: np.ndarray, confidence: np.ndarray,
                                  image_size: tuple[int, int]) -> tuple[np.ndarray, int]:
    """Silhouettes without the frames where most confident points (keypoints, tracks: joint heads, inside
    the body) fall outside the mask: background subtraction found only part of the subject there (a
    subject that walks towards or away from the camera stays in the median background) or something
    else, and the fit would pull the body onto that. Returns the masks (cleared there) and how many."""
    from scipy import ndimage

    silhouettes = np.array(silhouettes, dtype=np.float32)
    frames, h, w = silhouettes.shape
    scale = np.array([w / image_size[0], h / image_size[1]])
    margin = max(1, int(round(INSIDE_MARGIN * max(h, w))))
    dropped = 0
    for t in range(frames):
        sure = confidence[t] >= CHECK_CONFIDENCE
        if sure.sum() < MIN_CHECK_POINTS or not silhouettes[t].any():
            continue
        near = ndimage.binary_dilation(silhouettes[t] >= 0.5, iterations=margin)
        xy = np.floor(points[t, sure] * scale).astype(np.int64)
        seen = (xy[:, 0] >= 0) & (xy[:, 0] < w) & (xy[:, 1] >= 0) & (xy[:, 1] < h)
        inside = np.zeros(len(xy), bool)
        inside[seen] = near[xy[seen, 1], xy[seen, 0]]
        if inside.mean() < MIN_POINTS_INSIDE:
            silhouettes[t] = 0.0
            dropped += 1
    return silhouettes, dropped
