"""What Auto-Bind's pipeline (pipeline.py) is given to fit and skin with, and what crosses between
them: the pipeline plans the template fit (the target's samples, the families tried, each one's
starting similarities, the ranking, the finished result); the fitter (models/bind/template_fit.py:
torch, it needs autograd) runs the optimisation of one template from one start; the weight scorer
(models/bind/learned_weights.py: onnxruntime) scores a vertex's candidate bones. Arrays in, arrays out.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.spatial import cKDTree

from ..core.creature import FAMILIES
from .templates import Similarity


@dataclass
class FitConfig:
    coarse_steps: int = 40  # similarity + bone scales, for each probed orientation
    fine_steps: int = 160  # + joint rotations (bind pose), for each finalist
    orientations: int = 4  # distinct ICP-refined orientations given the coarse stage
    detect_orientations: int = 2  # the same, per family, when detecting the family
    finalists: int = 2  # best coarse fits given the fine stage; the lowest final loss wins
    icp_iterations: int = 8
    lr: float = 0.02
    target_samples: int = 2500  # surface points of the target used by the loss
    template_samples: int = 800  # surface points of the template, besides its vertices
    nn_every: int = 2  # steps between nearest-neighbour searches (pairs change slowly)
    eval_samples: int = 10000  # fresh points for the reported Chamfer
    chamfer_unit: float = 0.01  # Chamfer distances are measured in this fraction of the diagonal
    edge_weight: float = 1.0
    rotation_weight: float = 0.02
    scale_smooth_weight: float = 0.05
    scale_size_weight: float = 0.005
    symmetry_weight: float = 1.0  # on the asymmetric residual of mirrored poses
    symmetric_pose: bool = True  # mirror pairs share pose parameters (plus a penalised residual)
    mirror_lock: bool = True  # lock the sagittal plane onto a mirror-symmetric target's mirror plane
    scale_bounds: tuple[float, float] = (0.5, 2.0)
    width_scales: bool = True
    families: tuple[str, ...] = FAMILIES  # tried by detection
    good: float = 0.015  # quality: mean Chamfer fraction up to `good` is good, up to `fair` fair
    fair: float = 0.03
    bend_fair: float = 20.0  # ... and mean bind-pose rotation per joint (degrees)
    bend_poor: float = 30.0
    stretch_fair: float = 0.025  # ... and mean relative stretch of the template's edges
    stretch_poor: float = 0.032
    seed: int = 0
    threads: int | None = 1  # the fitter's threads during the fit (torch intra-op; None: leave as is)


@dataclass
class FitTarget:
    """The mesh to fit, normalised (bbox centre at the origin, bbox diagonal 1): surface samples for
    the loss and fresh ones for the reported Chamfer, with their k-d trees."""

    points: np.ndarray  # (N,3) normalised samples for the loss
    eval_points: np.ndarray  # (M,3) normalised samples for the reported Chamfer
    centre: np.ndarray
    diagonal: float
    tree: cKDTree
    eval_tree: cKDTree


@dataclass
class FitStart(Similarity):
    """A starting similarity template canonical → normalised target."""

    locked: np.ndarray | None = None  # normal of the target's mirror plane the template is locked to


@dataclass
class FittedTemplate:
    """Where a fit left the template, in its canonical frame, and the similarity into the normalised
    target: x_target_n = scale · rotation · x + translation."""

    rotation: np.ndarray  # (3,3)
    scale: float
    translation: np.ndarray  # (3,)
    bone_rotations: np.ndarray  # (J,3,3) bone frames
    heads: np.ndarray  # (J,3)
    bone_scales: np.ndarray  # (J,3) per-bone scale along its local x, y (length), z (width)
    vertices: np.ndarray  # (V,3) the template mesh scaled and posed


class FitRun(Protocol):
    """One template's optimisation from one start against one target (the fitter's state)."""

    last_loss: float  # the loss of the last step taken

    def run(self, stage: str, steps: int, tick: Callable[[int], None] | None = None) -> float:
        """`steps` optimiser steps of "coarse" (similarity + bone scales) or "fine" (+ joint rotations);
        `tick(1)` after each; the Chamfer of the last nearest pairs."""
        ...

    def final_loss(self) -> float:
        """The loss where the run stands, its nearest pairs refreshed."""
        ...

    def surface_points(self) -> np.ndarray:
        """(N,3) the template's vertices and surface samples where the run stands, normalised target."""
        ...

    def fitted(self) -> FittedTemplate:
        """Where the run stands, as arrays."""
        ...

    def deformation(self) -> dict:
        """How far the template had to be bent and stretched: bend_mean_deg, bend_max_deg,
        edge_stretch, scale_min, scale_max and the final loss."""
        ...


class TemplateFitter(Protocol):
    """The template fit's optimiser as the pipeline is given it (models/bind/template_fit.py)."""

    def session(self, config: FitConfig) -> AbstractContextManager[object]:
        """Held for one whole fit (the optimiser's resources: its threads)."""
        ...

    def start(self, family: str, target: FitTarget, start: FitStart, config: FitConfig) -> FitRun:
        """A run of `family`'s template on `target` from `start`, not stepped yet."""
        ...


class WeightScorer(Protocol):
    """The network that re-weighs a vertex's candidate bones (models/bind/learned_weights.py)."""

    def __call__(self, features: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Scores (V,K) of the candidates from their features (V,K,F) float32 and mask (V,K) bool."""
        ...
