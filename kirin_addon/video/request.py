"""What an Extract Motion From Video request asks for, defined once for every layer that carries it:
the add-on's operator builds it from the panel, the client sends it (kirin_addon/backend/protocol_video.py
encodes and decodes it) and the backend's service reads the video and fits the motion it names.

numpy and the standard library only: it is imported inside Blender.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

MAX_EPOCHS = 1000
GAIT_AUTO, GAIT_NONE = "auto", "none"
FACING_AUTO = "auto"
FACINGS = (FACING_AUTO, "left", "right", "toward", "away")
MAX_GAIT_TEXT = 200
SILHOUETTE_SOURCES = ("background", "stills", "none")  # or the path of a folder of mask images


class ExtractRequestError(ValueError):
    """A request that asks for something no extraction makes; the message is user-facing."""


@dataclass
class ExtractRequest:
    """The video to fit a rig's motion to (the rig and its skinned mesh travel beside the request).

    Video frames start, start+stride, ... < stop are used (0-based; stop None: to the end). The video,
    the keypoints file (frame, joint, x, y, confidence: JSON or CSV) and the mask folder are read by
    the backend from their paths. `tracks`: bone name → (N,2) pixel positions (x right and y down
    from the top-left corner), one row per video frame from frame 0, NaN where the bone is not
    tracked. `silhouettes`: "background" (background subtraction), "stills" (each frame segmented on
    its own: a subject that never leaves its place, a film of photographs), "none", or a folder of mask
    images. The motion comes back at `fps` (the scene's; None: the video's); `epochs` None: the
    fitter's default; `idm` starts the fit from the rig's inverse-dynamics model when there is one;
    `mediapipe` adds MediaPipe Pose's landmarks as keypoints (humanoid rigs). `gait`: the gait the fit
    starts from and is held near where the evidence is silent, at the stride frequency the silhouettes
    show — "auto" (the rig's gait whose calibrated tempo is nearest it), words naming one ("gallop", "a
    bison galloping"), or "none" (no gait: the inverse-dynamics model or the rig's standing pose starts
    the fit).
    `facing`: where the creature's head points in the video at its first frame — "left", "right",
    "toward" or "away" (the camera) — or "auto": a silhouette cannot tell front from back, and an
    artist's rig fits a real animal's silhouette mirrored as well as not."""

    video: str | os.PathLike
    start: int = 0
    stop: int | None = None
    stride: int = 1
    keypoints: str | os.PathLike | None = None
    tracks: dict[str, np.ndarray] | None = None
    silhouettes: str | os.PathLike = "background"
    fps: float | None = None
    epochs: int | None = None
    idm: bool = False
    mediapipe: bool = False
    gait: str = GAIT_AUTO
    facing: str = FACING_AUTO

    def check(self) -> ExtractRequest:
        """The request itself when its frame range, stride and epochs can be fitted, in the panel's
        terms (1-based first and last video frames); ExtractRequestError otherwise (files, the video's
        length and the evidence are checked where they are read)."""
        first, last = self.start + 1, self.stop
        if first < 1:
            raise ExtractRequestError(f"The first video frame is 1 or more, got {first}.")
        if last is not None and last < first:
            raise ExtractRequestError(f"The last video frame ({last}) comes before the first ({first}).")
        if self.stride < 1:
            raise ExtractRequestError(f"The stride must be 1 or more, got {self.stride}.")
        if self.epochs is not None and not 1 <= self.epochs <= MAX_EPOCHS:
            raise ExtractRequestError(f"Epochs must be from 1 to {MAX_EPOCHS}, got {self.epochs}.")
        if not isinstance(self.gait, str) or not self.gait.strip() or len(self.gait) > MAX_GAIT_TEXT:
            raise ExtractRequestError(f"The gait is '{GAIT_AUTO}', '{GAIT_NONE}' or a few words naming one "
                                      f"(at most {MAX_GAIT_TEXT} characters).")
        if self.facing not in FACINGS:
            raise ExtractRequestError(f"Facing is one of {', '.join(FACINGS)}, got '{self.facing}'.")
        return self

    @property
    def has_evidence(self) -> bool:
        """Whether anything is given to fit to: keypoints, MediaPipe, tracks or silhouettes."""
        return self.keypoints is not None or bool(self.tracks) or self.silhouettes != "none" or self.mediapipe
