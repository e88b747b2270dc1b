"""Auto-Bind's pipeline in the engine (kirin_addon/bind/pipeline.py), given a stand-in optimiser and
weight scorer in numpy: the target, the starts, the family ranking, the finished result mapped into
the mesh's frame and the skin weights — without torch."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from kirin.kirin_addon.bind.fit_protocol import FitConfig, FitStart, FitTarget, FittedTemplate
from kirin.kirin_addon.bind.pipeline import BindPipeline
from kirin.kirin_addon.bind.request import BindRequest
from kirin.kirin_addon.bind.templates import template
from kirin.kirin_addon.bind.weight_transfer import TransferConfig


class StillRun:
    """A run that never moves: the template stays where its start put it."""

    def __init__(self, family: str, start: FitStart, steps: dict[str, int]) -> None:
        self.creature, self.start, self.steps = template(family), start, steps
        self.last_loss = float(start.chamfer)

    def run(self, stage, steps, tick=None):
        self.steps[stage] = self.steps.get(stage, 0) + steps
        for _ in range(steps):
            if tick is not None:
                tick(1)
        return self.last_loss

    def final_loss(self):
        return self.last_loss

    def surface_points(self):
        return self.start.apply(self.creature.mesh.vertices)

    def fitted(self):
        rig, count = self.creature.rig, self.creature.rig.joint_count
        return FittedTemplate(self.start.rotation, self.start.scale, self.start.translation,
                              rig.rest_rotations, rig.heads, np.ones((count, 3)), self.creature.mesh.vertices)

    def deformation(self):
        return {"bend_mean_deg": 0.0, "bend_max_deg": 0.0, "edge_stretch": 0.0, "scale_min": 1.0,
                "scale_max": 1.0, "loss": self.last_loss}


class StillFitter:
    def __init__(self) -> None:
        self.sessions = 0
        self.steps: dict[str, int] = {}

    @contextmanager
    def session(self, config: FitConfig):
        self.sessions += 1
        yield

    def start(self, family: str, target: FitTarget, start: FitStart, config: FitConfig) -> StillRun:
        assert isinstance(target.points, np.ndarray) and isinstance(start, FitStart)
        return StillRun(family, start, self.steps)


def moved_template(family: str):
    creature = template(family)
    matrix = np.eye(4)
    matrix[:3, :3] = 2.0 * Rotation.random(random_state=4).as_matrix()
    matrix[:3, 3] = [0.5, -1.0, 3.0]
    return creature, matrix, creature.mesh.vertices @ matrix[:3, :3].T + matrix[:3, 3]


def test_a_template_is_found_on_its_own_mesh_and_mapped_into_the_mesh_frame():
    creature, matrix, vertices = moved_template("quadruped")
    fitter = StillFitter()
    seen: list[float] = []
    config = FitConfig(coarse_steps=3, fine_steps=4, detect_orientations=1, finalists=1,
                       families=("quadruped", "fish"))
    result = BindPipeline(fitter).fit(vertices, creature.mesh.triangles, None, config,
                                      progress=lambda fraction, message: seen.append(fraction))
    assert result.family == "quadruped" and set(result.scores) == {"quadruped", "fish"}
    assert result.scores["quadruped"] < result.scores["fish"]
    assert result.quality == "good" and result.creature is creature
    truth = creature.rig.transformed(matrix)
    assert np.abs(result.rig.heads - truth.heads).max() < 0.06 * truth.body_size  # ICP only: no fit
    assert fitter.sessions == 1 and fitter.steps == {"coarse": 2 * 3, "fine": 4}
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)


def test_an_unknown_family_is_refused_before_the_fitter_runs():
    fitter = StillFitter()
    creature, _, vertices = moved_template("fish")
    with pytest.raises(ValueError, match="Unknown family"):
        BindPipeline(fitter).fit(vertices, creature.mesh.triangles, "unicorn")
    assert fitter.sessions == 0


def test_the_learned_weights_need_a_scorer_and_use_the_one_given():
    creature = template("biped")
    mesh = creature.mesh
    config = FitConfig(coarse_steps=1, fine_steps=1, orientations=1, finalists=1)
    fit = BindPipeline(StillFitter()).fit(mesh.vertices, mesh.triangles, "biped", config)
    request = BindRequest(mesh.vertices, mesh.triangles, "biped", "learned")
    transfer = TransferConfig(method="robust")
    with pytest.raises(ValueError, match="weight network"):
        BindPipeline(StillFitter()).skin(request, fit, transfer, lambda fraction, message: None)
    calls = []

    def even(features: np.ndarray, valid: np.ndarray) -> np.ndarray:
        calls.append(features.shape)
        return valid / valid.sum(axis=1, keepdims=True)

    result, method = BindPipeline(StillFitter(), even).skin(request, fit, transfer, lambda f, m: None)
    assert method == "learned" and calls and calls[0][0] == mesh.vertex_count
    assert np.allclose(result.weights.sum(axis=1), 1.0, atol=1e-5)
