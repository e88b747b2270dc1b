"""What the backend runs for Extract Motion From Video: a checked request and the work on it.

The video is read here (PyAV), never in Blender's Python, from a path on the backend's machine, and
only under the folders the backend was started to allow (files.py; the keypoints file and the mask
folder too): the backend is local by default, and a backend elsewhere needs a path both machines
see. As for the other jobs, the request is checked in the HTTP handler (a clear 4xx for a missing or
unreadable video, an empty frame range, keypoints or tracks of bones the rig does not have, a request
with no evidence at all) and the engine's own errors (a video with no moving subject...) fail the job
with their message.

The job: read the frames (start, stop, stride), then the engine's pipeline (kirin_addon/video/pipeline.py)
given the torch fit (models/video/fitter.py) and the rig's inverse-dynamics model (`idm`:
models/video/idm.py, trained per rig on first use): 2D evidence (keypoints file, MediaPipe Pose for a
humanoid rig — in its own environment, kirin_addon/video/mediapipe_pose.py —, Movie Clip tracks,
silhouettes by background subtraction or from a mask folder) → the start (the inverse-dynamics model or
the rig's gait) → Kirin's sequence fit; then the motion resampled from the clip's frame rate to the
scene's.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...kirin_addon.backend.protocol import ProtocolError, encode_array, motion_to_json
from ...kirin_addon.backend.protocol_video import MAX_VIDEO_FRAMES, extract_from_json
from ...kirin_addon.core.json_values import plain
from ...kirin_addon.core.motion import Motion
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.rotations import quat_continuity
from ...kirin_addon.core.skinning import SkinnedMesh
from ...kirin_addon.video.gather import EvidenceSources, VideoClip
from ...kirin_addon.video.request import SILHOUETTE_SOURCES, ExtractRequest
from .files import AllowedFiles
from .jobs import Report, UserError, Work

FRAME_SIDE = 512  # longest side the frames are decoded at for silhouettes (they are made at 256)


@dataclass
class ExtractJob:
    """A checked extraction request, ready for the worker."""

    rig: Rig
    mesh: SkinnedMesh | None
    request: ExtractRequest  # paths absolute on this machine; stop None past the video's end
    probe: dict[str, Any]
    keypoints: tuple[np.ndarray, np.ndarray] | None  # (F,J,2) px, (F,J) over video frames from 0
    tracks: dict[int, np.ndarray]  # joint → (N,2) px over video frames from 0, NaN where untracked
    mediapipe: dict[str, int] | None = None  # MediaPipe Pose: role → the rig's joint


def resample_positions(motion: Motion, positions: np.ndarray, fps: float) -> Motion:
    """The motion at fractional frame `positions` (clip frames): slerp for rotations, linear for the
    root and local moves."""
    positions = np.clip(np.asarray(positions, dtype=np.float64).ravel(), 0.0, motion.frame_count - 1)
    if motion.frame_count < 2:
        lo = np.zeros(len(positions), np.int64)
        return Motion(fps, motion.root_positions[lo], motion.rotations[lo],
                      None if motion.translations is None else motion.translations[lo])
    continuous = Motion(motion.fps, motion.root_positions, quat_continuity(motion.rotations, axis=0),
                        motion.translations)
    return continuous.at_frames(positions, fps)


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
    """Checks and runs video extraction jobs (no model held between jobs); `files`: what the requests'
    paths may name (nothing by default)."""

    def __init__(self, files: AllowedFiles | None = None):
        self.files = files or AllowedFiles()

    # ------------------------------------------------------------------ check (HTTP thread)
    def check(self, body: dict[str, Any]) -> ExtractJob:
        """An extraction request's JSON body, checked: its fields (protocol_video.py), then what is on
        this machine (the video and its length, the mask folder, the keypoints file, MediaPipe) and
        that there is evidence to fit to; ProtocolError/RigError otherwise."""
        rig, mesh, request = extract_from_json(body)
        request, probe = self._video(request)
        silhouettes = self._mask_folder(request.silhouettes)
        keypoints_path, keypoints = self._keypoints(request.keypoints, rig)
        mediapipe = self._mediapipe_joints(rig) if request.mediapipe else None
        if not request.has_evidence:
            raise ProtocolError("No evidence to fit to: give a keypoints file, MediaPipe Pose (humanoid "
                                "rigs), Movie Clip tracks assigned to bones, or silhouettes (background "
                                "subtraction or a mask folder).")
        index = {n: j for j, n in enumerate(rig.names)}
        tracks = {index[bone]: points for bone, points in (request.tracks or {}).items()}
        request = replace(request, keypoints=keypoints_path, silhouettes=silhouettes)
        return ExtractJob(rig, mesh, request, probe, keypoints, tracks, mediapipe)

    def _video(self, request: ExtractRequest) -> tuple[ExtractRequest, dict[str, Any]]:
        """The request with the video's absolute path (and no stop past its end), and the video's
        probe; a missing file, one that is no video (VideoError, a ValueError: 422) or a frame range
        outside it is refused."""
        from ...kirin_addon.video.video_io import probe_video

        video = self.files.file(request.video, "video", "video_path")
        start, stop, stride = request.start, request.stop, request.stride
        probe = probe_video(video)
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
        return replace(request, video=video, stop=stop), dict(probe)

    def _mask_folder(self, silhouettes: str) -> str:
        """The silhouette source; a mask folder as its resolved path, refused unless it holds masks."""
        if silhouettes in SILHOUETTE_SOURCES:
            return silhouettes
        folder = self.files.folder(silhouettes,
                                   "silhouettes ('background', 'stills', 'none' or a mask folder)")
        if not self.files.mask_files(folder, "silhouettes"):
            raise ProtocolError(f"silhouettes: the folder {os.path.basename(folder)} holds no PNG mask "
                                "images.")
        return folder

    def _keypoints(
        self, path: str | None, rig: Rig
    ) -> tuple[str | None, tuple[np.ndarray, np.ndarray] | None]:
        """The keypoints file's resolved path and its (F,J,2) points and (F,J) confidences on the rig's
        bones; (None, None) without one. A file with no usable point is refused; no message quotes it."""
        if path is None:
            return None, None
        from ...kirin_addon.video.keypoints import load_keypoints
        from ...kirin_addon.video.video_io import VideoError

        path = self.files.file(path, "keypoints", "keypoints_path")
        try:
            points, confidence = load_keypoints(path, list(rig.names))
        except VideoError as exc:  # it names the file and the row, never what the file holds
            raise ProtocolError(f"keypoints_path: {exc}") from None
        except OSError:
            raise ProtocolError(f"keypoints_path: {os.path.basename(path)} cannot be read.") from None
        points, confidence = np.asarray(points, np.float64), np.asarray(confidence, np.float64)
        if not np.any(np.isfinite(points).all(-1) & (confidence > 0)):
            raise ProtocolError(f"The keypoints file {os.path.basename(path)} has no point "
                                "with a confidence above 0 for any bone of the rig.")
        return path, (points, confidence)

    @staticmethod
    def _mediapipe_joints(rig: Rig) -> dict[str, int]:
        """MediaPipe Pose's roles → the rig's joints; refused without MediaPipe's environment or for a
        rig that is no humanoid."""
        from ...kirin_addon.video.mediapipe_pose import (
            INSTALL_HINT,
            MediaPipeError,
            find_mediapipe_python,
            humanoid_joints,
        )

        if find_mediapipe_python() is None:
            raise ProtocolError(INSTALL_HINT + ".")
        try:
            return humanoid_joints(rig)
        except MediaPipeError as exc:
            raise ProtocolError(str(exc)) from None

    # ------------------------------------------------------------------ run (worker thread)
    def work(self, job: ExtractJob) -> Work:
        return lambda report: self.run(job, report)

    def run(self, job: ExtractJob, report: Report) -> dict[str, Any]:
        """Read the frames, then the pipeline: gather the evidence, (start from the inverse-dynamics model
        or the gait,) fit; the motion at the scene's frame rate and a report."""
        from ...kirin_addon.video.pipeline import VideoPipeline
        from ..video.fitter import TorchVideoFitter

        started = time.perf_counter()
        clip = self._read(job, report)
        read_video = time.perf_counter() - started
        source = job.request.silhouettes
        masks = None if source in SILHOUETTE_SOURCES else lambda indices: self._mask_files(source, indices)
        sources = EvidenceSources(job.keypoints, job.tracks, job.mediapipe, source, masks)
        pipeline = VideoPipeline(TorchVideoFitter(), idm=self._idm_api() if job.request.idm else None)
        run = pipeline.run(job.rig, job.mesh, job.request, clip, sources, report)
        timings = {"read_video": read_video, **run.timings}
        report(0.96, "resampling to the scene's frame rate")
        return _answer(job, clip, run.fit, run.evidence, run.keypoints, run.notes, timings, started)

    def _mask_files(self, source: str, indices: np.ndarray) -> list[str]:
        """The mask folder's files of these video frames (one image per video frame from the first), each
        checked as a file this backend may read."""
        files = self.files.mask_files(source, "silhouettes")
        if int(indices[-1]) >= len(files):
            raise UserError(f"The mask folder {source} has {len(files)} images (one per video "
                            f"frame from the first), but video frame {int(indices[-1]) + 1} is used.")
        return [self.files.file(files[i], "mask", "silhouettes") for i in indices]

    @staticmethod
    def _read(job: ExtractJob, report: Report) -> VideoClip:
        """The request's frames of the video, decoded as small as what reads them allows."""
        from ...kirin_addon.video.video_io import read_video

        request = job.request
        name = os.path.basename(request.video)
        report(0.0, f"reading {name}")
        # Background subtraction and MediaPipe need the pixels; masks and keypoints files do not.
        pixels = request.silhouettes in ("background", "stills") or job.mediapipe is not None
        side = FRAME_SIDE if pixels else 64
        clip = read_video(request.video, request.start, request.stop, request.stride, max_side=side)
        frames = np.asarray(clip.frames)
        count = int(frames.shape[0])
        if count == 0:
            raise UserError(f"{name} has no frames from {request.start} to {request.stop or 'its end'} "
                            f"(stride {request.stride}).")
        if count > MAX_VIDEO_FRAMES:
            raise UserError(f"{count} frames is more than the {MAX_VIDEO_FRAMES} one extraction fits: raise "
                            "the stride or shorten the range.")
        size = (int(job.probe.get("width") or frames.shape[2]),
                int(job.probe.get("height") or frames.shape[1]))
        return VideoClip(frames, np.asarray(clip.indices, dtype=np.int64), float(clip.fps), size, count)

    # ------------------------------------------------------------------ the inverse-dynamics slot
    @staticmethod
    def _idm_api() -> Any:
        """`load_or_train_idm(rig, mesh, progress=...)` of models/video/idm_train.py, or None when this
        backend has no inverse-dynamics model."""
        try:
            from ..video.idm_train import load_or_train_idm
        except ImportError:
            return None
        return load_or_train_idm


def _answer(job: ExtractJob, clip: VideoClip, fit: Any, evidence: Any, keypoints: Any, notes: dict[str, Any],
            timings: dict[str, float], started: float) -> dict[str, Any]:
    """The job's result: the fitted motion at the scene's frame rate, the reprojection error, the
    camera and a report of what was used."""
    request = job.request
    motion = fit.motion
    fps = request.fps or float(motion.fps)
    if abs(fps - float(motion.fps)) > 1e-9:
        from ...kirin_addon.video.video_io import scene_frame_map

        positions = np.asarray(scene_frame_map(float(motion.fps), fps, motion.frame_count), np.float64)
        motion = resample_positions(motion, positions, fps)
    reprojection = np.asarray(fit.reprojection_px, dtype=np.float64).ravel()
    seen = reprojection[np.isfinite(reprojection)]
    summary = {
        "video": request.video,
        "codec": job.probe.get("codec"),
        "image_size": list(clip.size),
        "source_fps": float(job.probe.get("fps") or 0.0),
        "clip_fps": clip.fps,
        "fps": fps,
        "video_frames": clip.count,
        "first_video_frame": int(clip.indices[0]),
        "last_video_frame": int(clip.indices[-1]),
        "stride": request.stride,
        "frames": motion.frame_count,
        "evidence": {
            "keypoints": None if request.keypoints is None else os.path.basename(request.keypoints),
            "keypoint_bones": 0 if keypoints is None else int(np.any(keypoints[1] > 0, axis=0).sum()),
            "mediapipe": notes.pop("mediapipe", None),
            "tracks": [job.rig.names[j] for j in job.tracks],
            "silhouettes": request.silhouettes if request.silhouettes in SILHOUETTE_SOURCES else "masks",
            "silhouettes_dropped": int(evidence.silhouettes_dropped),
        },
        "reprojection_px_mean": float(seen.mean()) if seen.size else None,
        "reprojection_px_median": float(np.median(seen)) if seen.size else None,
        "scale": plain(fit.scale),
        "seconds_fit": float(fit.seconds),
        "seconds_per_frame": float(fit.seconds) / clip.count,
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
