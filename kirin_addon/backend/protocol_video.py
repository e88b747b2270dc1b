"""The wire format of Extract Motion From Video (POST /v1/jobs/extract): the request
(kirin_addon/video/request.py) as JSON and back, checked on the backend with messages that name the
field at fault. The backend reads the video itself, from a path on its own machine: a backend
elsewhere needs a path both machines see (a shared folder); that the files are there is checked where
they are read (models/server/video.py). numpy and the standard library only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.rig import Rig
from ..core.skinning import SkinnedMesh
from ..video.request import FACING_AUTO, GAIT_AUTO, MAX_EPOCHS, ExtractRequest, ExtractRequestError
from .protocol import (
    MAX_FPS,
    MIN_FPS,
    ProtocolError,
    bounded_number,
    decode_array,
    encode_array,
    mesh_from_json,
    mesh_to_json,
    rig_from_json,
    rig_to_json,
)

MAX_TRACKS = 512  # Movie Clip tracks one request may carry
MAX_TRACK_FRAMES = 1_000_000  # video frames a track may cover
MAX_VIDEO_FRAMES = 20_000  # frames one extraction may fit (after start/stop/stride)
MAX_VIDEO_INDEX = 10**9  # the largest video frame number a request may name


def extract_to_json(rig: Rig, request: ExtractRequest, mesh: SkinnedMesh | None = None) -> dict[str, Any]:
    """The JSON body of POST /v1/jobs/extract: fit a motion of `rig` (armature space; its skinned
    `mesh` for the silhouette, None: a capsule proxy) to the request's video, read by the backend."""
    body: dict[str, Any] = {
        "rig": rig_to_json(rig),
        "video_path": str(request.video),
        "start": int(request.start),
        "stride": int(request.stride),
        "silhouettes": str(request.silhouettes),
        "idm": bool(request.idm),
        "gait": str(request.gait),
        "facing": str(request.facing),
    }
    if request.mediapipe:
        body["mediapipe"] = True
    if request.stop is not None:
        body["stop"] = int(request.stop)
    if mesh is not None:
        body["mesh"] = mesh_to_json(mesh)
    if request.keypoints is not None:
        body["keypoints_path"] = str(request.keypoints)
    if request.tracks:
        body["tracks"] = _tracks_to_json(request.tracks)
    if request.fps is not None:
        body["fps"] = float(request.fps)
    if request.epochs is not None:
        body["epochs"] = int(request.epochs)
    return body


def _tracks_to_json(tracks: dict[str, np.ndarray]) -> dict[str, Any]:
    out = {}
    for name, points in tracks.items():
        values = np.asarray(points, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] != 2:
            raise ProtocolError(f"tracks[{name}]: expected (frames, 2) pixel positions, got {values.shape}.")
        out[str(name)] = encode_array(values, "float32")
    return out


def extract_from_json(body: dict[str, Any]) -> tuple[Rig, SkinnedMesh | None, ExtractRequest]:
    """An extraction request's JSON body, checked and decoded: the rig, its mesh and the request (paths
    as sent, tracks as (N,2) float64 pixel positions of the rig's bones); ProtocolError/RigError
    otherwise. The files, the video's length and whether there is evidence are the backend's to check."""
    rig = rig_from_json(body.get("rig"))
    mesh = None if body.get("mesh") is None else mesh_from_json(body["mesh"], rig.joint_count)
    video = _path(body.get("video_path"), "video file")
    start = _whole(body, "start", 0, 0, MAX_VIDEO_INDEX)
    stop = _whole(body, "stop", None, 1, MAX_VIDEO_INDEX)
    stride = _whole(body, "stride", 1, 1, 10**6)
    if stop is not None and stop <= start:
        raise ProtocolError(f"The frame range is empty: stop ({stop}) must be after start ({start}).")
    silhouettes = body.get("silhouettes", "background")
    if not isinstance(silhouettes, str) or not silhouettes.strip():
        raise ProtocolError("silhouettes: expected 'background', 'stills', 'none' or a folder of mask "
                            "images.")
    keypoints = body.get("keypoints_path")
    keypoints = None if keypoints is None else _path(keypoints, "keypoints file")
    tracks = _tracks_from_json(body.get("tracks") or {}, rig)
    mediapipe = body.get("mediapipe", False)
    if mediapipe is not False and mediapipe is not True:
        raise ProtocolError("mediapipe: expected true or false.")
    fps = body.get("fps")
    fps = None if fps is None else bounded_number(fps, "fps", MIN_FPS, MAX_FPS, low_inclusive=True)
    epochs = _whole(body, "epochs", None, 1, MAX_EPOCHS)
    idm = body.get("idm", False)
    if not isinstance(idm, bool):
        raise ProtocolError("idm: expected true or false.")
    gait, facing = body.get("gait", GAIT_AUTO), body.get("facing", FACING_AUTO)
    try:
        request = ExtractRequest(video, start, stop, stride, keypoints, tracks, silhouettes, fps, epochs, idm,
                                 mediapipe, gait, facing).check()
    except ExtractRequestError as exc:
        raise ProtocolError(str(exc)) from None
    return rig, mesh, request


def _whole(body: dict[str, Any], name: str, default: int | None, low: int, high: int) -> int | None:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ProtocolError(f"{name}: expected a whole number from {low} to {high}, got {value!r}.")
    return int(value)


def _path(path: Any, what: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise ProtocolError(f"{what}: expected the path of a file.")
    return path


def _tracks_from_json(given: Any, rig: Rig) -> dict[str, np.ndarray]:
    """Bone name → (N,2) pixel positions (NaN: not tracked) of bones the rig has."""
    if not isinstance(given, dict):
        raise ProtocolError("tracks: expected an object of bone name → (frames, 2) pixel positions.")
    if len(given) > MAX_TRACKS:
        raise ProtocolError(f"tracks: {len(given)} tracks; at most {MAX_TRACKS}.")
    bones = set(rig.names)
    unknown = sorted(n for n in given if n not in bones)
    if unknown:
        raise ProtocolError(f"tracks: the rig has no bone named {', '.join(map(repr, unknown[:5]))}"
                            + (f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else "") + ".")
    tracks = {}
    for bone, array in given.items():
        points = decode_array(array, f"tracks[{bone}]", (None, 2), finite=False)
        if points.shape[0] > MAX_TRACK_FRAMES:
            raise ProtocolError(f"tracks[{bone}]: {points.shape[0]} frames; at most {MAX_TRACK_FRAMES}.")
        if np.any(np.isinf(points)) or np.nanmax(np.abs(points), initial=0.0) > 1e7:
            raise ProtocolError(f"tracks[{bone}]: pixel positions must be finite (NaN: not tracked).")
        if not np.any(np.isfinite(points).all(-1)):
            raise ProtocolError(f"tracks[{bone}]: the track has no marker on any frame.")
        tracks[bone] = points
    return tracks
