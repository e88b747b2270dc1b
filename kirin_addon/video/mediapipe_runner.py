"""MediaPipe Pose over a stack of frames, run in MediaPipe's own environment (`.venv-mediapipe`).

    python mediapipe_runner.py FRAMES.npy OUT.npz PROGRESS.txt

FRAMES.npy: (T, H, W, 3) uint8 RGB. OUT.npz: `points` (T, 33, 2) float32 normalised image coordinates
(x right, y down, NaN where no person was found) and `visibility` (T, 33). PROGRESS.txt gets the number
of frames done, rewritten as it goes. MediaPipe pins numpy<2 and protobuf<5, which the backend's own
environment cannot share, so this file imports nothing but numpy and mediapipe (not Kirin) and the
backend runs it as a child process (kirin_addon/video/mediapipe_pose.py).

`model_complexity=1` is the landmark model the wheel ships (the others are downloaded on first use,
which fails offline); tracking between frames (`static_image_mode=False`) keeps the person once found.
"""

from __future__ import annotations

import os
import sys

import numpy as np

LANDMARK_COUNT = 33
PROGRESS_EVERY = 8  # frames between progress writes


def _write_progress(path: str, done: int) -> None:
    partial = path + ".part"
    with open(partial, "w") as handle:
        handle.write(str(done))
    os.replace(partial, path)  # the parent never reads a half-written number


def detect(frames: np.ndarray, progress_path: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    import mediapipe as mp

    count = len(frames)
    points = np.full((count, LANDMARK_COUNT, 2), np.nan, np.float32)
    visibility = np.zeros((count, LANDMARK_COUNT), np.float32)
    with mp.solutions.pose.Pose(static_image_mode=False, model_complexity=1, smooth_landmarks=True,
                                min_detection_confidence=0.5, min_tracking_confidence=0.5) as pose:
        for t in range(count):
            found = pose.process(np.ascontiguousarray(frames[t])).pose_landmarks
            if found is not None:
                for k, mark in enumerate(found.landmark):
                    points[t, k] = mark.x, mark.y
                    visibility[t, k] = mark.visibility
            if progress_path and (t % PROGRESS_EVERY == PROGRESS_EVERY - 1 or t == count - 1):
                _write_progress(progress_path, t + 1)
    return points, visibility


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    frames = np.load(argv[1], mmap_mode="r")
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        print(f"expected (T, H, W, 3) uint8 frames, got {frames.shape} {frames.dtype}", file=sys.stderr)
        return 2
    points, visibility = detect(frames, argv[3])
    np.savez(argv[2], points=points, visibility=visibility)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
