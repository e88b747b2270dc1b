"""MediaPipe Pose as 2D keypoint evidence for humanoid rigs (issue 8: the optional extra).

MediaPipe (the legacy `solutions.pose`, whose landmark model ships in the wheel and runs offline) needs
numpy<2 and protobuf<5, so it lives in an environment of its own — `.venv-mediapipe`, made by
tools/setup_env.sh — and runs as a child process (`mediapipe_runner.py`); `find_mediapipe_python`
says which interpreter (KIRIN_MEDIAPIPE_PYTHON, this one if it has mediapipe, else the project's
.venv-mediapipe).

Its 33 landmarks become keypoints of the user's rig by role: the rig is mapped onto a reference biped
(procedural.build_biped) with the retargeter's automatic joint mapping, which reads names and rest
geometry alike ("leg_joint_L_1" is a thigh), and each role takes the landmark at its joint's head
(shoulder → upper arm, elbow → forearm, wrist → hand, hip → thigh, knee → shin, ankle → foot; the
hips the midpoint of the two hip landmarks, the neck that of the shoulders at lower confidence). A rig
is humanoid when both arms and both legs map, its shoulders stand well above its hips and its arms
hang free of the ground (a quadruped's front legs map onto arms too, but stand on the floor). Frames
where MediaPipe sees the person upside down are dropped (`drop_flipped`).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..core.rig import Rig

LANDMARK_NAMES = (
    "nose", "left_eye_inner", "left_eye", "left_eye_outer", "right_eye_inner", "right_eye", "right_eye_outer",
    "left_ear", "right_ear", "mouth_left", "mouth_right", "left_shoulder", "right_shoulder", "left_elbow",
    "right_elbow", "left_wrist", "right_wrist", "left_pinky", "right_pinky", "left_index", "right_index",
    "left_thumb", "right_thumb", "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle",
    "right_ankle", "left_heel", "right_heel", "left_foot_index", "right_foot_index",
)
# Role of the reference biped → (landmarks averaged for its joint's head, confidence factor).
ROLE_LANDMARKS: dict[str, tuple[tuple[int, ...], float]] = {
    "hips": ((23, 24), 0.8),
    "neck": ((11, 12), 0.5),  # the shoulders' midpoint is near, not at, the neck's base
    "upper_arm.L": ((11,), 1.0), "forearm.L": ((13,), 1.0), "hand.L": ((15,), 1.0),
    "upper_arm.R": ((12,), 1.0), "forearm.R": ((14,), 1.0), "hand.R": ((16,), 1.0),
    "thigh.L": ((23,), 1.0), "shin.L": ((25,), 1.0), "foot.L": ((27,), 1.0),
    "thigh.R": ((24,), 1.0), "shin.R": ((26,), 1.0), "foot.R": ((28,), 1.0),
}
LIMB_ROLES = ("upper_arm.L", "forearm.L", "upper_arm.R", "forearm.R",
              "thigh.L", "shin.L", "thigh.R", "shin.R")
# An upright body: at rest the shoulders stand well above the hips and the elbows hang clear of the
# ground (a quadruped's front legs map onto arms too, shoulders level with the hips, paws down).
SHOULDER_RISE = 1.25
ARM_CLEARANCE = 0.6
VENV = Path(__file__).resolve().parents[2] / ".venv-mediapipe"
RUNNER = Path(__file__).resolve().with_name("mediapipe_runner.py")
INSTALL_HINT = ("MediaPipe is not installed for this backend: run `bash tools/setup_env.sh` (it makes "
                ".venv-mediapipe) or point KIRIN_MEDIAPIPE_PYTHON at a Python with mediapipe==0.10.21")


class MediaPipeError(ValueError):
    """MediaPipe cannot give evidence here: not installed, a rig that is not humanoid, no person."""


# ----------------------------------------------------------------------------- the interpreter
def find_mediapipe_python() -> str | None:
    """The Python that runs MediaPipe: $KIRIN_MEDIAPIPE_PYTHON, this interpreter when it has
    mediapipe, or the project's .venv-mediapipe; None when there is none."""
    given = os.environ.get("KIRIN_MEDIAPIPE_PYTHON", "").strip()
    if given:
        return given if os.access(given, os.X_OK) else None
    if importlib.util.find_spec("mediapipe") is not None:
        return sys.executable
    python = VENV / "bin" / "python"
    return str(python) if os.access(python, os.X_OK) else None


# ----------------------------------------------------------------------------- the rig's roles
def humanoid_joints(rig: Rig) -> dict[str, int]:
    """Role (ROLE_LANDMARKS' keys) → the rig's joint, for the roles it has; raises MediaPipeError
    when the rig is not a humanoid."""
    from ..core.canonical import detect_canonical_frame
    from ..library.procedural import BipedSpec, biped_roles, build_biped
    from ..retarget.joint_mapping import auto_map_joints

    spec = BipedSpec(arm_pose="A", height=1.0)
    reference = build_biped(spec)
    roles = biped_roles(reference, spec)
    canonical = rig.transformed(detect_canonical_frame(rig).matrix())
    mapping = auto_map_joints(reference, skeletal_tails(canonical))  # rig joint name → reference joint name
    image = {source: rig.index(target) for target, source in mapping.items() if source}
    joints = {role: image[reference.names[j]] for role, j in roles.items()
              if role in ROLE_LANDMARKS and reference.names[j] in image}
    missing = [role for role in LIMB_ROLES if role not in joints]
    if missing:
        raise MediaPipeError(f"MediaPipe pose is for humanoid rigs: no bone of this rig maps to "
                             f"{', '.join(missing)} (found {len(joints)} of {len(ROLE_LANDMARKS)} body "
                             "parts).")
    heights = canonical.heads[:, 2] - canonical.heads[:, 2].min()

    def height(*roles: str) -> float:
        return float(np.mean([heights[joints[r]] for r in roles]))

    hips = height("thigh.L", "thigh.R")
    if height("upper_arm.L", "upper_arm.R") < SHOULDER_RISE * hips or \
            height("forearm.L", "forearm.R") < ARM_CLEARANCE * hips:
        raise MediaPipeError("MediaPipe pose is for humanoid rigs: this rig's front limbs stand on the "
                             "ground (a quadruped); use silhouettes, tracks or a keypoints file.")
    return joints


def skeletal_tails(rig: Rig) -> Rig:
    """The rig with each bone's tail at its children's heads (their mean), a leaf's continuing its
    parent's direction: importers give tails that say nothing (Blender's glTF import points every bone
    along its local X), and the joint mapping compares bone directions."""
    from ..core.rig import rig_from_bones

    heads = rig.heads
    tails = np.array(rig.tails, np.float64)
    for j in range(rig.joint_count):
        children = np.flatnonzero(rig.parents == j)
        ends = heads[children][np.linalg.norm(heads[children] - heads[j], axis=-1) > 1e-6]
        parent = rig.parents[j]
        if len(ends):
            tails[j] = ends.mean(0)
        elif parent >= 0 and np.linalg.norm(heads[j] - heads[parent]) > 1e-6:
            tails[j] = heads[j] + 0.5 * (heads[j] - heads[parent])
    return rig_from_bones(rig.names, rig.parents, heads, tails, 0.0, rig.deform)


def landmarks_to_keypoints(points: np.ndarray, visibility: np.ndarray, joints: dict[str, int],
                           joint_count: int, image_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """MediaPipe's (T,33,2) normalised landmarks and (T,33) visibility → the rig's keypoints: (T,J,2)
    pixels of an image of `image_size` (width, height), NaN where unknown, and (T,J) confidences."""
    points = np.asarray(points, np.float64)
    visibility = np.nan_to_num(np.asarray(visibility, np.float64), nan=0.0)
    count = points.shape[0]
    out = np.full((count, joint_count, 2), np.nan)
    confidence = np.zeros((count, joint_count))
    scale = np.array(image_size, np.float64)
    for role, joint in joints.items():
        marks, factor = ROLE_LANDMARKS[role]
        out[:, joint] = points[:, list(marks)].mean(1) * scale
        confidence[:, joint] = factor * visibility[:, list(marks)].min(1)
    found = np.isfinite(out).all(-1)
    confidence = np.where(found, np.clip(confidence, 0.0, 1.0), 0.0)
    return out, confidence


# ----------------------------------------------------------------------------- detection
def detect_landmarks(frames: np.ndarray, python: str | None = None,
                     progress: Callable[[float], None] | None = None,
                     timeout: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """MediaPipe Pose over (T,H,W,3) uint8 RGB frames in its own process: (T,33,2) normalised image
    coordinates (NaN where no person) and (T,33) visibility. `progress(fraction)` is called while it
    runs; an exception it raises (a cancel) stops the process."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise MediaPipeError(f"Frames must have shape (T, H, W, 3), got {frames.shape}")
    python = python or find_mediapipe_python()
    if python is None:
        raise MediaPipeError(INSTALL_HINT + ".")
    with tempfile.TemporaryDirectory(prefix="kirin-mediapipe-") as folder:
        source, result, done = (os.path.join(folder, n) for n in ("frames.npy", "landmarks.npz", "done.txt"))
        np.save(source, np.ascontiguousarray(frames, dtype=np.uint8))
        env = {**os.environ, "GLOG_minloglevel": "2", "TF_CPP_MIN_LOG_LEVEL": "2"}
        # Its messages go to a file: a pipe nobody reads while it runs would fill and stall it.
        with open(os.path.join(folder, "stderr.txt"), "w+b") as log:
            process = subprocess.Popen([python, str(RUNNER), source, result, done],
                                       stdout=subprocess.DEVNULL, stderr=log, env=env)
            started = time.monotonic()
            try:
                while process.poll() is None:
                    if timeout is not None and time.monotonic() - started > timeout:
                        raise MediaPipeError(f"MediaPipe did not finish {len(frames)} frames within "
                                             f"{timeout:.0f} s.")
                    if progress is not None:
                        progress(_frames_done(done) / max(len(frames), 1))
                    time.sleep(0.1)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
            log.seek(max(log.seek(0, os.SEEK_END) - 4096, 0))  # the last lines say what went wrong
            errors = log.read().decode(errors="replace")
        if process.returncode != 0 or not os.path.isfile(result):
            lines = [line.strip() for line in errors.splitlines() if line.strip()]
            last = lines[-1][-400:] if lines else "no message"  # the exception, not its traceback
            raise MediaPipeError(f"MediaPipe failed (exit {process.returncode}): {last}")
        with np.load(result) as data:
            return np.asarray(data["points"], np.float64), np.asarray(data["visibility"], np.float64)


def _frames_done(path: str) -> int:
    try:
        with open(path) as handle:
            return int(handle.read() or 0)
    except (OSError, ValueError):
        return 0


def drop_flipped(points: np.ndarray) -> tuple[np.ndarray, int]:
    """The landmarks without the frames whose person stands upside down in the picture (mid-hip above
    mid-shoulder): MediaPipe now and then locks onto a body upside down and tracks it so for a
    while, and such a frame pulls the fit through a somersault. An upright camera and a person on
    their feet are assumed (a handstand loses those frames). Returns the points (NaN there) and how
    many frames were dropped."""
    points = np.array(points, np.float64)
    hips = points[:, [23, 24], 1].mean(1)
    shoulders = points[:, [11, 12], 1].mean(1)
    flipped = np.isfinite(hips) & np.isfinite(shoulders) & (hips < shoulders)  # image y grows downwards
    points[flipped] = np.nan
    return points, int(flipped.sum())


def mediapipe_keypoints(
    frames: np.ndarray, rig: Rig, image_size: tuple[int, int], *, joints: dict[str, int] | None = None,
    python: str | None = None, progress: Callable[[float], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """The rig's keypoints from MediaPipe Pose on `frames` (the video's frames at any scale; the
    keypoints come in pixels of `image_size`): (T,J,2), (T,J) and a report. Raises MediaPipeError for a
    rig that is not humanoid or a video in which no person is found."""
    joints = humanoid_joints(rig) if joints is None else joints
    started = time.perf_counter()
    raw, visibility = detect_landmarks(frames, python, progress)
    points, flipped = drop_flipped(raw)
    detected = np.isfinite(points).all(-1).any(-1)
    if not detected.any():
        raise MediaPipeError(f"MediaPipe found no person in the {len(frames)} frames.")
    keypoints, confidence = landmarks_to_keypoints(points, visibility, joints, rig.joint_count, image_size)
    report = {"frames_detected": int(detected.sum()), "frames_flipped": flipped, "frames": len(frames),
              "bones": {role: rig.names[j] for role, j in joints.items()},
              "seconds_per_frame": (time.perf_counter() - started) / max(len(frames), 1)}
    return keypoints, confidence, report
