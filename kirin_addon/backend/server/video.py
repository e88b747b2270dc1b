"""What the backend runs for Extract Motion From Video: a checked request and the work on it.

The video is read here (PyAV), never in Blender's Python, from a path on the backend's machine: the
backend is local by default, and a backend elsewhere needs a path both machines see. As for the other
jobs, the request is checked in the HTTP handler (a clear 4xx for a missing or unreadable video, an
empty frame range, keypoints or tracks of bones the rig does not have, a request with no evidence at
all) and the engine's own errors (a video with no moving subject...) fail the job with their message.

The job: read the frames (start, stop, stride) → 2D evidence (keypoints file, MediaPipe Pose for a
humanoid rig — in its own environment, kirin_addon/video/mediapipe_pose.py —, Movie Clip tracks, silhouettes
by background subtraction or from a mask folder) → an optional initial motion from the
rig's inverse-dynamics model (`idm`: models/video/idm.py, trained per rig on first use) → Kirin's sequence fit
(models/video/fit.py) → the motion resampled from the clip's frame rate to the scene's.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.motion import Motion
from ...core.rig import Rig
from ...core.rotations import quat_continuity, quat_slerp
from ...core.skinning import SkinnedMesh
from ..protocol import (
    MAX_EPOCHS,
    MAX_TRACK_FRAMES,
    MAX_TRACKS,
    MAX_VIDEO_FRAMES,
    SILHOUETTE_SOURCES,
    ProtocolError,
    decode_array,
    encode_array,
    mesh_from_json,
    motion_to_json,
    plain,
    rig_from_json,
)
from .jobs import Report, UserError, Work

FRAME_SIDE = 512  # longest side the frames are decoded at for silhouettes (they are made at 256)
REMOTE_HINT = ("the backend reads it itself, so a backend on another machine needs a path it can read "
               "there, in a shared folder")


@dataclass
class ExtractJob:
    rig: Rig
    mesh: SkinnedMesh | None
    video_path: str
    probe: dict[str, Any]
    start: int
    stop: int | None
    stride: int
    keypoints: tuple[np.ndarray, np.ndarray] | None  # (F,J,2) px, (F,J) over video frames from 0
    keypoints_path: str | None
    tracks: dict[int, np.ndarray]  # joint → (N,2) px over video frames from 0, NaN where untracked
    silhouettes: str  # "background", "none" or a folder of masks
    fps: float | None  # the scene's; None: the clip's
    epochs: int | None
    idm: bool
    mediapipe: dict[str, int] | None = None  # MediaPipe Pose: role → the rig's joint


def _int(body: dict[str, Any], name: str, default: int | None, low: int, high: int) -> int | None:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ProtocolError(f"{name}: expected a whole number from {low} to {high}, got {value!r}.")
    return int(value)


def _file(path: Any, what: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise ProtocolError(f"{what}: expected the path of a file.")
    full = os.path.abspath(os.path.expanduser(path))
    if not os.path.exists(full):
        raise ProtocolError(f"The {what} {full} is not on the backend's machine: {REMOTE_HINT}.")
    if not os.path.isfile(full):
        raise ProtocolError(f"The {what} {full} is not a file.")
    return full


def _frames(points: np.ndarray, indices: np.ndarray, fill: float = np.nan) -> np.ndarray:
    """Rows `indices` of a per-video-frame array, `fill` past its end."""
    out = np.full((len(indices),) + points.shape[1:], fill, dtype=np.float64)
    inside = indices < points.shape[0]
    out[inside] = points[indices[inside]]
    return out


def resample_positions(motion: Motion, positions: np.ndarray, fps: float) -> Motion:
    """The motion at fractional frame `positions` (clip frames): slerp for rotations, linear for the
    root and local moves."""
    positions = np.clip(np.asarray(positions, dtype=np.float64).ravel(), 0.0, motion.frame_count - 1)
    if motion.frame_count < 2:
        lo = np.zeros(len(positions), np.int64)
        return Motion(fps, motion.root_positions[lo], motion.rotations[lo],
                      None if motion.translations is None else motion.translations[lo])
    rotations = quat_continuity(motion.rotations, axis=0)
    lo = np.minimum(np.floor(positions).astype(np.int64), motion.frame_count - 2)
    frac = positions - lo
    weights = np.repeat(frac[:, None], motion.joint_count, 1)
    rot = quat_slerp(rotations[lo], rotations[lo + 1], weights)
    root = motion.root_positions[lo] * (1 - frac[:, None]) + motion.root_positions[lo + 1] * frac[:, None]
    moved = None
    if motion.translations is not None:
        f = frac[:, None, None]
        moved = motion.translations[lo] * (1 - f) + motion.translations[lo + 1] * f
    return Motion(fps, root, rot, moved)


def mask_files(folder: str) -> list[str]:
    """The mask images of a folder, one per video frame from frame 0, in name order."""
    names = sorted(n for n in os.listdir(folder) if n.lower().endswith(".png"))
    return [os.path.join(folder, n) for n in names]


def _camera_json(camera: Any) -> Any:
    if camera is None:
        return None
    if dataclasses.is_dataclass(camera) and not isinstance(camera, type):
        return plain({f.name: getattr(camera, f.name) for f in dataclasses.fields(camera)})
    if isinstance(camera, dict | list | tuple | np.ndarray | float | int):
        return plain(camera)
    if hasattr(camera, "__dict__"):
        return plain({k: v for k, v in vars(camera).items() if not k.startswith("_")})
    return str(camera)


class ExtractService:
    """Checks and runs video extraction jobs (stateless: the fit holds no model between jobs)."""

    # ------------------------------------------------------------------ check (HTTP thread)
    def check(self, body: dict[str, Any]) -> ExtractJob:
        from ...video.video_io import probe_video

        rig = rig_from_json(body.get("rig"))
        mesh = None if body.get("mesh") is None else mesh_from_json(body["mesh"], rig.joint_count)
        video = _file(body.get("video_path"), "video file")
        start = _int(body, "start", 0, 0, 10**9)
        stop = _int(body, "stop", None, 1, 10**9)
        stride = _int(body, "stride", 1, 1, 10**6)
        if stop is not None and stop <= start:
            raise ProtocolError(f"The frame range is empty: stop ({stop}) must be after start ({start}).")
        probe = probe_video(video)  # VideoError (a ValueError, 422) for a file that is no video
        count = int(probe.get("frames") or 0)
        name = os.path.basename(video)
        if count <= 0 and not probe.get("duration"):
            raise ProtocolError(f"{name} has no video frames.")
        if count > 0 and start >= count:
            raise ProtocolError(f"The video {name} has {count} frames (0–{count - 1}): start {start} is past "
                                "its end.")
        if count > 0 and stop is not None and stop >= count:
            stop = None  # past the end: to the end
        chosen = len(range(start, min(stop or count, count), stride)) if count > 0 else 0
        if chosen > MAX_VIDEO_FRAMES:
            raise ProtocolError(f"{chosen} frames is more than the {MAX_VIDEO_FRAMES} one extraction fits: "
                                "raise the stride or shorten the range.")

        silhouettes = body.get("silhouettes", "background")
        if not isinstance(silhouettes, str) or not silhouettes.strip():
            raise ProtocolError("silhouettes: expected 'background', 'none' or a folder of mask images.")
        if silhouettes not in SILHOUETTE_SOURCES:
            folder = os.path.abspath(os.path.expanduser(silhouettes))
            if not os.path.isdir(folder):
                raise ProtocolError(
                    f"silhouettes: expected 'background', 'none' or a folder of mask images; the folder "
                    f"{folder} is not on the backend's machine: {REMOTE_HINT}."
                )
            if not mask_files(folder):
                raise ProtocolError(f"silhouettes: the folder {folder} holds no PNG mask images.")
            silhouettes = folder

        keypoints = keypoints_path = None
        if body.get("keypoints_path") is not None:
            from ...video.keypoints import load_keypoints

            keypoints_path = _file(body["keypoints_path"], "keypoints file")
            try:
                points, confidence = load_keypoints(keypoints_path, list(rig.names))
            except (OSError, UnicodeDecodeError) as exc:
                raise ProtocolError(f"Cannot read the keypoints file {keypoints_path}: {exc}") from None
            points, confidence = np.asarray(points, np.float64), np.asarray(confidence, np.float64)
            if not np.any(np.isfinite(points).all(-1) & (confidence > 0)):
                raise ProtocolError(f"The keypoints file {os.path.basename(keypoints_path)} has no point "
                                    "with a confidence above 0 for any bone of the rig.")
            keypoints = (points, confidence)

        tracks: dict[int, np.ndarray] = {}
        given = body.get("tracks") or {}
        if not isinstance(given, dict):
            raise ProtocolError("tracks: expected an object of bone name → (frames, 2) pixel positions.")
        if len(given) > MAX_TRACKS:
            raise ProtocolError(f"tracks: {len(given)} tracks; at most {MAX_TRACKS}.")
        index = {n: j for j, n in enumerate(rig.names)}
        unknown = sorted(n for n in given if n not in index)
        if unknown:
            raise ProtocolError(f"tracks: the rig has no bone named {', '.join(map(repr, unknown[:5]))}"
                                + (f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else "") + ".")
        for bone, array in given.items():
            points = decode_array(array, f"tracks[{bone}]", (None, 2), finite=False)
            if points.shape[0] > MAX_TRACK_FRAMES:
                raise ProtocolError(f"tracks[{bone}]: {points.shape[0]} frames; at most {MAX_TRACK_FRAMES}.")
            if np.any(np.isinf(points)) or np.nanmax(np.abs(points), initial=0.0) > 1e7:
                raise ProtocolError(f"tracks[{bone}]: pixel positions must be finite (NaN: not tracked).")
            if not np.any(np.isfinite(points).all(-1)):
                raise ProtocolError(f"tracks[{bone}]: the track has no marker on any frame.")
            tracks[index[bone]] = points

        mediapipe = None
        if body.get("mediapipe", False) is not False:
            if body["mediapipe"] is not True:
                raise ProtocolError("mediapipe: expected true or false.")
            from ...video.mediapipe_pose import (
                INSTALL_HINT,
                MediaPipeError,
                find_mediapipe_python,
                humanoid_joints,
            )

            if find_mediapipe_python() is None:
                raise ProtocolError(INSTALL_HINT + ".")
            try:
                mediapipe = humanoid_joints(rig)
            except MediaPipeError as exc:
                raise ProtocolError(str(exc)) from None
        if keypoints is None and not tracks and silhouettes == "none" and mediapipe is None:
            raise ProtocolError("No evidence to fit to: give a keypoints file, MediaPipe Pose (humanoid "
                                "rigs), Movie Clip tracks assigned to bones, or silhouettes (background "
                                "subtraction or a mask folder).")
        fps = body.get("fps")
        if fps is not None and (isinstance(fps, bool) or not isinstance(fps, int | float)
                                or not math.isfinite(fps) or not 0 < fps <= 1000):
            raise ProtocolError(f"fps: expected a frame rate in (0, 1000], got {fps!r}.")
        epochs = _int(body, "epochs", None, 1, MAX_EPOCHS)
        idm = body.get("idm", False)
        if not isinstance(idm, bool):
            raise ProtocolError("idm: expected true or false.")
        return ExtractJob(rig, mesh, video, dict(probe), start, stop, stride, keypoints, keypoints_path,
                          tracks, silhouettes, None if fps is None else float(fps), epochs, idm, mediapipe)

    # ------------------------------------------------------------------ run (worker thread)
    def work(self, job: ExtractJob) -> Work:
        return lambda report: self.run(job, report)

    def run(self, job: ExtractJob, report: Report) -> dict[str, Any]:
        from ....models.video.fit import fit_motion
        from ....models.video.fit_config import VideoFitConfig
        from ...video.evidence import combine
        from ...video.silhouettes import background_silhouettes, mask_silhouettes
        from ...video.tracks import tracks_evidence
        from ...video.video_io import read_video, scene_frame_map

        started = time.perf_counter()
        name = os.path.basename(job.video_path)
        timings: dict[str, float] = {}
        report(0.0, f"reading {name}")
        # Background subtraction and MediaPipe need the pixels; masks and keypoints files do not.
        side = FRAME_SIDE if job.silhouettes == "background" or job.mediapipe is not None else 64
        clip = read_video(job.video_path, job.start, job.stop, job.stride, max_side=side)
        frames = np.asarray(clip.frames)
        indices = np.asarray(clip.indices, dtype=np.int64)
        clip_fps = float(clip.fps)
        count = int(frames.shape[0])
        if count == 0:
            raise UserError(f"{name} has no frames from {job.start} to {job.stop or 'its end'} "
                            f"(stride {job.stride}).")
        if count > MAX_VIDEO_FRAMES:
            raise UserError(f"{count} frames is more than the {MAX_VIDEO_FRAMES} one extraction fits: raise "
                            "the stride or shorten the range.")
        timings["read_video"] = time.perf_counter() - started
        joints = job.rig.joint_count
        size = (int(job.probe.get("width") or frames.shape[2]),
                int(job.probe.get("height") or frames.shape[1]))

        report(0.05, "gathering the 2D evidence")
        t = time.perf_counter()
        notes: dict[str, Any] = {}
        keypoints = None
        if job.keypoints is not None:
            points, confidence = job.keypoints
            keypoints = (_frames(points, indices), _frames(confidence, indices, 0.0))
        if job.mediapipe is not None:
            keypoints = self._mediapipe(job, frames, size, keypoints, report, notes)
        tracks = None
        if job.tracks:
            rows = {j: _frames(points, indices) for j, points in job.tracks.items()}
            tracks = tracks_evidence(rows, count, joints)
        silhouettes = None
        if job.silhouettes == "background":
            report(0.06, "separating the subject from the background")
            silhouettes = background_silhouettes(frames)  # VideoError: no moving subject
        elif job.silhouettes != "none":
            files = mask_files(job.silhouettes)
            if int(indices[-1]) >= len(files):
                raise UserError(f"The mask folder {job.silhouettes} has {len(files)} images (one per video "
                                f"frame from the first), but video frame {int(indices[-1]) + 1} is used.")
            silhouettes = mask_silhouettes([files[i] for i in indices])
        del frames, clip  # the pixels are not needed any more
        evidence = combine(size, clip_fps, joints, keypoints=keypoints, tracks=tracks,
                           silhouettes=silhouettes)
        timings["evidence"] = time.perf_counter() - t

        init = None
        if job.idm:
            init = self._idm_init(job, evidence, report, notes)
        report(0.15, "fitting the motion")
        t = time.perf_counter()

        def progress(fraction: float, *_: Any) -> None:  # raises JobCancelled: stops the fit
            report(0.15 + 0.8 * min(max(float(fraction), 0.0), 1.0), "fitting the motion")

        config = VideoFitConfig() if job.epochs is None else VideoFitConfig(epochs=job.epochs)
        fit = fit_motion(job.rig, evidence, mesh=job.mesh, config=config, init=init, progress=progress)
        timings["fit"] = time.perf_counter() - t

        report(0.96, "resampling to the scene's frame rate")
        motion = fit.motion
        fps = job.fps or float(motion.fps)
        if abs(fps - float(motion.fps)) > 1e-9:
            positions = np.asarray(scene_frame_map(float(motion.fps), fps, motion.frame_count), np.float64)
            motion = resample_positions(motion, positions, fps)
        reprojection = np.asarray(fit.reprojection_px, dtype=np.float64).ravel()
        seen = reprojection[np.isfinite(reprojection)]
        summary = {
            "video": job.video_path,
            "codec": job.probe.get("codec"),
            "image_size": list(size),
            "source_fps": float(job.probe.get("fps") or 0.0),
            "clip_fps": clip_fps,
            "fps": fps,
            "video_frames": count,
            "first_video_frame": int(indices[0]),
            "last_video_frame": int(indices[-1]),
            "stride": job.stride,
            "frames": motion.frame_count,
            "evidence": {
                "keypoints": None if job.keypoints_path is None else os.path.basename(job.keypoints_path),
                "keypoint_bones": 0 if keypoints is None else int(np.any(keypoints[1] > 0, axis=0).sum()),
                "mediapipe": notes.pop("mediapipe", None),
                "tracks": [job.rig.names[j] for j in job.tracks],
                "silhouettes": job.silhouettes if job.silhouettes in SILHOUETTE_SOURCES else "masks",
                "silhouettes_dropped": int(evidence.silhouettes_dropped),
            },
            "reprojection_px_mean": float(seen.mean()) if seen.size else None,
            "reprojection_px_median": float(np.median(seen)) if seen.size else None,
            "scale": plain(fit.scale),
            "seconds_fit": float(fit.seconds),
            "seconds_per_frame": float(fit.seconds) / count,
            "timings_s": {k: round(v, 3) for k, v in timings.items()},
            **notes,
            "fit": plain(fit.report),
        }
        return {
            "motion": motion_to_json(motion),
            "frames": motion.frame_count,
            "fps": fps,
            "reprojection_px": encode_array(reprojection, "float32"),
            "camera": _camera_json(fit.camera),
            "report": summary,
            "seconds": time.perf_counter() - started,
        }

    # ------------------------------------------------------------------ MediaPipe Pose
    @staticmethod
    def _mediapipe(job: ExtractJob, frames: np.ndarray, size: tuple[int, int], keypoints: Any,
                   report: Report, notes: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """The keypoints file's points merged with MediaPipe's: the file wins where it has a point."""
        from ...video.mediapipe_pose import MediaPipeError, mediapipe_keypoints

        def progress(fraction: float) -> None:  # raises JobCancelled: stops MediaPipe's process
            report(0.05 + 0.05 * min(max(float(fraction), 0.0), 1.0), "finding the person (MediaPipe Pose)")

        try:
            points, confidence, notes["mediapipe"] = mediapipe_keypoints(
                frames, job.rig, size, joints=job.mediapipe, progress=progress)
        except MediaPipeError as exc:
            raise UserError(str(exc)) from None
        if keypoints is not None:
            given = keypoints[1] > 0
            points = np.where(given[..., None], keypoints[0], points)
            confidence = np.where(given, keypoints[1], confidence)
        return points, confidence

    # ------------------------------------------------------------------ the inverse-dynamics slot
    @staticmethod
    def _idm_api() -> Any:
        """`load_or_train_idm(rig, mesh, progress=...)` of models/video/idm_train.py, or None when this
        backend has no inverse-dynamics model."""
        try:
            from ....models.video.idm_train import load_or_train_idm
        except ImportError:
            return None
        return load_or_train_idm

    def _idm_init(self, job: ExtractJob, evidence: Any, report: Report, notes: dict[str, Any]) -> Any:
        """An initial motion (the fit's start) from the rig's inverse-dynamics model, trained on renders
        of the rig on first use and cached per rig; None with a note when there is none to use. The
        model reads silhouettes; its failure (bad masks...) leaves the fit to start from rest."""
        load = self._idm_api()
        if load is None:
            notes["idm"] = "not available: this backend has no inverse-dynamics model (models/video/idm.py)"
            return None
        if evidence.silhouettes is None:
            notes["idm"] = ("not available without silhouettes: use background subtraction or a mask "
                            "folder")
            return None
        report(0.07, "the rig's inverse-dynamics model (trained once per rig: minutes)")
        started = time.perf_counter()

        def progress(fraction: float, message: str = "") -> None:  # raises JobCancelled
            report(0.07 + 0.07 * min(max(float(fraction), 0.0), 1.0),
                   message or "training the rig's inverse-dynamics model")

        try:
            model = load(job.rig, job.mesh, progress=progress)
            motion = model.predict(evidence.silhouettes, image_size=evidence.image_size, fps=evidence.fps)
        except ValueError as exc:  # IDMError: the fit starts from rest instead
            notes["idm"] = f"not used: {exc}"
            return None
        notes["idm"] = {"used": True, "seconds": time.perf_counter() - started,
                        "model": plain(getattr(model, "card", {}).get("key"))}
        return motion
