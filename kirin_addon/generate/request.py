"""What a Generate Motion request asks for, defined once for every layer that carries it: the add-on's
operator builds it, the client sends it (kirin_addon/backend/protocol.py encodes and decodes it), the
backend's service brings it to the model's frame rate and the pipeline (pipeline.py) makes it.
`GenerateRequest.check` is its one check.

numpy and the standard library only: it is imported inside Blender.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.motion import Motion

MAX_FRAMES = 2000
MAX_VARIANTS = 16
MAX_SEED = 2**31 - 1  # Blender's int properties are 32-bit
MAX_PROMPT = 2000  # characters
MAX_GUIDANCE = 100.0
MIN_FPS, MAX_FPS = 0.1, 1000.0  # frame rates a request may give (slower would make absurd lengths)
EMPTY_PROMPT = "The prompt is empty: describe the motion, e.g. 'a wolf trotting forward'."
NO_CONDITION = "Give a prompt, a reference image or both."


class GenerateRequestError(ValueError):
    """A request that asks for something no layer makes; the message is user-facing."""


@dataclass
class GenerateRequest:
    """The motion to generate on a rig (the rig and its mesh travel beside the request).

    `image` is the reference image: a file path (on the machine that reads it), the file's bytes
    (sent to a backend elsewhere), decoded pixels (what the backend hands the model) or the image
    encoder's feature of it (a 1-D array, precomputed: evaluation, tests). `fps` None:
    the model's frame rate. `keep` (a motion on the rig) with `keep_frames` (indices; None: every
    frame) are existing keys to honour (in-betweening); `loop` makes the last frame flow into the first."""

    prompt: str | None
    image: str | bytes | np.ndarray | None = None
    frames: int = 120
    fps: float | None = None
    seed: int = 0
    variants: int = 1
    guidance: float | None = None
    keep: Motion | None = None
    keep_frames: Sequence[int] | np.ndarray | None = None
    loop: bool = False

    def check(self) -> GenerateRequest:
        """The request itself, when it asks for something that can be made; GenerateRequestError
        otherwise. The one check of a request: the operator calls it where it builds one, the wire
        format where it decodes one (kirin_addon/backend/protocol.py). The rig, the image file and
        the model's limits are checked where they are known."""
        if self.prompt is not None and not self.prompt.strip():
            raise GenerateRequestError(EMPTY_PROMPT)
        if self.prompt is not None and len(self.prompt) > MAX_PROMPT:
            raise GenerateRequestError(
                f"The prompt is {len(self.prompt)} characters long; at most {MAX_PROMPT}."
            )
        if self.prompt is None and self.image is None:
            raise GenerateRequestError(NO_CONDITION)
        if not 1 <= self.frames <= MAX_FRAMES:
            raise GenerateRequestError(f"Frames must be from 1 to {MAX_FRAMES}, got {self.frames}.")
        if not 1 <= self.variants <= MAX_VARIANTS:
            raise GenerateRequestError(f"Variants must be from 1 to {MAX_VARIANTS}, got {self.variants}.")
        if not 0 <= self.seed <= MAX_SEED:
            raise GenerateRequestError(f"The seed must be from 0 to {MAX_SEED}, got {self.seed}.")
        if self.fps is not None and not MIN_FPS <= self.fps <= MAX_FPS:  # NaN fails too
            raise GenerateRequestError(f"The frame rate (fps) must be from {MIN_FPS:g} to {MAX_FPS:g}, "
                                       f"got {self.fps!r}.")
        if self.guidance is not None and not 0.0 <= self.guidance <= MAX_GUIDANCE:
            raise GenerateRequestError(f"Guidance must be from 0 to {MAX_GUIDANCE:g}, got {self.guidance!r}.")
        self._check_keep()
        return self

    def _check_keep(self) -> None:
        """The frames to keep lie in the kept motion and in the clip."""
        if self.keep is None or self.keep_frames is None:
            return
        frames = np.asarray(self.keep_frames)
        limit = min(self.keep.frame_count, self.frames)
        if frames.size and (frames.min() < 0 or frames.max() >= limit):
            raise GenerateRequestError(f"The frames to keep (keep.frames) must lie in 0..{limit - 1}.")

    def kept_frames(self) -> np.ndarray | None:
        """The indices of `keep` to honour (every frame of it when `keep_frames` is None); None
        without `keep`."""
        if self.keep is None:
            return None
        return np.arange(self.keep.frame_count) if self.keep_frames is None else np.asarray(self.keep_frames)
