"""The video fit's rigid stage (kirin_addon/video/pipeline.py): which start, at which heading, turned and
placed per frame, explains the evidence best. This module plans the hypotheses, their root paths and
the winner; the fitter (fit_protocol.FitProblem) runs the optimisation."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..core.camera import PinholeCamera
from ..core.rotations import matrix_to_6d, yaw_matrix
from .fit_body import FitBody
from .fit_config import VideoFitConfig, report_progress
from .fit_evidence import FitEvidence
from .fit_protocol import BodyModel, FitProblem, RigidTask
from .fit_start import facing_barred, initial_root_path


def heading_yaws(config: VideoFitConfig) -> np.ndarray:
    """The initial headings the rigid stage tries (radians about the vertical)."""
    return np.arange(max(config.init_yaws, 1)) * (2 * np.pi / max(config.init_yaws, 1))


def heading_paths(model: BodyModel, body: FitBody, ev: FitEvidence, first: np.ndarray,
                  init_path: np.ndarray | None, camera_c: PinholeCamera, yaws: np.ndarray) -> np.ndarray:
    """(Y,T,3) the root path each heading starts from: the evidence's, for the first start's pose `first`
    (T,J,3,3) turned to the heading (the phase of a gait barely moves the evidence's centre), or
    `init_path` for the first heading where the start brings its own."""
    paths = []
    for h, yaw in enumerate(yaws):
        if init_path is not None and h == 0:
            paths.append(init_path)
        else:
            heads, tails = model.pose(first, turn=yaw_matrix(yaw))
            paths.append(initial_root_path(ev, body, heads, tails, camera_c, 1.0))
    return np.stack(paths)


def rigid_stage(problem: FitProblem, deltas0: np.ndarray, paths: np.ndarray, trunk: int,
                camera_c: PinholeCamera, config: VideoFitConfig,
                progress: Callable[[float], None] | None) -> tuple[int, np.ndarray, np.ndarray, float]:
    """Per-frame root rotation + translation for each start (P of them, deltas0 (P,T,J,3,3)) turned to
    each heading (`paths` (Y,T,3) their root paths), on a subset of frames; the best start and heading
    (among those the user's facing allows: `trunk` the joint that says where the body faces) is then
    refined on all frames. Returns the winning start, its per-frame turns (T,6) and root path (T,3), and
    the winning heading (radians)."""
    count, frames = deltas0.shape[0], deltas0.shape[1]
    yaws = heading_yaws(config)
    subset = np.unique(np.linspace(0, frames - 1, min(frames, config.rigid_frames)).round().astype(np.int64))
    # Hypothesis h is start h // len(yaws) at heading h % len(yaws).
    which = np.repeat(np.arange(count), len(yaws))
    turns = np.broadcast_to(np.tile(yaw_matrix(yaws), (count, 1, 1))[:, None],
                            (count * len(yaws), len(subset), 3, 3))
    barred = facing_barred(config.facing, yaws, deltas0[:, 0, trunk], camera_c)  # (P,Y)
    search = problem.rigid(RigidTask(which, subset, matrix_to_6d(turns),
                                     np.tile(paths, (count, 1, 1))[:, subset], config.rigid_steps))
    best = int(np.argmin(np.where(barred.ravel(), np.inf, search.score)))
    chosen = int(which[best])
    report_progress(progress, 0.08)
    # The winner on every frame: the subset's rotations and root path interpolated, then refined.
    index = np.arange(frames)
    turn_all = np.stack([np.interp(index, subset, search.turns6[best, :, k]) for k in range(6)], -1)
    root_all = np.stack([np.interp(index, subset, search.roots[best, :, k]) for k in range(3)], -1)
    refined = problem.rigid(RigidTask(np.array([chosen]), None, turn_all[None], root_all[None],
                                      config.rigid_steps // 2, score=False))
    report_progress(progress, 0.15)
    return chosen, refined.turns6[0], refined.roots[0], float(yaws[best % len(yaws)])
