"""What the video pipeline (kirin_addon/video/pipeline.py) is given to optimise with, and what crosses
between the two: the pipeline plans (evidence, body, camera, starts, headings) and maps back; the
fitter (models/video/fitter.py: torch) poses the body and runs the rigid stage's and the full fit's
optimisation. Arrays in, arrays out; the canonical frame throughout (core/canonical.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..core.camera import PinholeCamera
from .fit_body import FitBody
from .fit_config import VideoFitConfig
from .fit_evidence import FitEvidence


@dataclass(frozen=True)
class RigidTask:
    """Per-frame rigid turns and root paths of H hypotheses to fit, each a start's pose turned and
    placed: `starts` (H,) the start each one turns, `frames` (S,) the frames they are fitted on (None:
    all), `turns6` (H,S,6) and `roots` (H,S,3) where they begin, `score` whether to score them."""

    starts: np.ndarray
    frames: np.ndarray | None
    turns6: np.ndarray
    roots: np.ndarray
    steps: int
    score: bool = True


@dataclass(frozen=True)
class RigidFit:
    """The fitted turns (H,S,6) and root paths (H,S,3), and each hypothesis's data loss (H,) when scored."""

    turns6: np.ndarray
    roots: np.ndarray
    score: np.ndarray | None = None


@dataclass(frozen=True)
class FitStart:
    """Where the full fit begins: start `start`'s pose turned by per-frame `turns6` (T,6), its main root
    on `root` (T,3); the body scale fitted or not."""

    start: int
    turns6: np.ndarray
    root: np.ndarray
    fit_scale: bool


@dataclass(frozen=True)
class FittedMotion:
    """The full fit's canonical world deltas (T,J,3,3), root path (T,3) of the unscaled rig, body scale
    and last loss terms."""

    deltas: np.ndarray
    root: np.ndarray
    scale: float
    losses: dict[str, float] = field(default_factory=dict)


class FitProblem(Protocol):
    """One clip's optimisation: the body, evidence, camera, settings and starts fixed."""

    def rigid(self, task: RigidTask) -> RigidFit:
        """Fit the task's rigid hypotheses (the heading search, and its winner on every frame)."""
        ...

    def fit(self, start: FitStart, progress: Callable[[float], None] | None) -> FittedMotion:
        """The full fit: every rotation, the root path and the body scale."""
        ...


class BodyModel(Protocol):
    """The body in the fitter's runtime: its kinematics in the fitter's precision (the rigid stage and the
    root path must see the same body) and the clip's problem."""

    @property
    def floor(self) -> float:
        """The mean rest height of the feet."""
        ...

    def pose(self, deltas: np.ndarray, root: np.ndarray | None = None,
             turn: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Joint heads and tails (…,J,3) of world deltas (…,J,3,3), first turned by `turn` (3,3) when
        given, with the main root at `root` (…,3; the origin when None)."""
        ...

    def problem(self, evidence: FitEvidence, camera: PinholeCamera, config: VideoFitConfig,
                starts: np.ndarray) -> FitProblem:
        """The clip's problem; `starts` (P,T,J,3,3) the starting poses' world deltas."""
        ...


class VideoFitter(Protocol):
    """The optimisation a video pipeline is given (models/video/fitter.py)."""

    def body(self, body: FitBody) -> BodyModel:
        ...
