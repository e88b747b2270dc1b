"""A Movie Clip's tracks (Extract Motion From Video): listed, and their markers read in the footage's
pixels."""

from __future__ import annotations

import numpy as np

from . import SceneError
from .arrays import foreach_vectors


def movie_clip_tracks(clip) -> list:
    """Every track of a Movie Clip: the camera's, then each tracked object's (first of a name wins)."""
    seen, out = set(), []
    for tracking_object in clip.tracking.objects:
        for track in tracking_object.tracks:
            if track.name not in seen:
                seen.add(track.name)
                out.append(track)
    return out


def read_movie_clip_tracks(
    clip, names: list[str] | None = None
) -> tuple[dict[str, np.ndarray], tuple[int, int]]:
    """Marker positions of a Movie Clip's tracks in pixels of its footage: track name → (N,2) (x right,
    y down from the top-left corner), one row per video frame from frame 0, NaN where the track has no
    marker or a disabled one; and the footage's (width, height). `names` limits the tracks read (a
    name the clip does not have is a SceneError). Markers are stored in clip frames (1 = the clip's
    first frame), shown at video frame `frame - 1 + frame_offset`."""
    if clip is None:
        raise SceneError("Choose a Movie Clip.")
    width, height = (int(v) for v in clip.size)
    if width <= 0 or height <= 0:
        raise SceneError(f"The Movie Clip '{clip.name}' cannot be read (no frames): check its file.")
    tracks = {t.name: t for t in movie_clip_tracks(clip)}
    if names is not None:
        missing = [n for n in names if n not in tracks]
        if missing:
            raise SceneError(
                f"The Movie Clip '{clip.name}' has no track named {', '.join(map(repr, missing))}."
            )
        tracks = {n: tracks[n] for n in names}
    offset = int(clip.frame_offset)
    length = max(int(clip.frame_duration) + offset, 1)
    out: dict[str, np.ndarray] = {}
    for name, track in tracks.items():
        markers = track.markers
        count = len(markers)
        frames = foreach_vectors(markers, "frame", 1, dtype=np.int32).astype(np.int64) - 1 + offset
        co = foreach_vectors(markers, "co", 2).astype(np.float64)
        muted = foreach_vectors(markers, "mute", 1, dtype=bool)
        keep = (~muted) & (frames >= 0) if count else np.zeros(0, bool)
        frames, co = frames[keep], co[keep]
        points = np.full((max(length, int(frames.max(initial=-1)) + 1), 2), np.nan)
        points[frames, 0] = co[:, 0] * width
        points[frames, 1] = (1.0 - co[:, 1]) * height
        out[name] = points
    return out, (width, height)
