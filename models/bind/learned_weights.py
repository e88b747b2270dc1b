"""Auto-Bind's "learned" weights: the classical weight sets of the fitted rig, re-weighed by the
shipped network (models/weights/bind/, trained by models/bind/weight_train.py).

The network runs by onnxruntime (models/onnx.py); the classical sets it starts from are bone heat
on the mesh, the fitted template's transferred weights and their blend (kirin_addon/bind/).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from ...kirin_addon.bind.heat_weights import PRIOR_WEIGHT, HeatConfig, HeatResult, rig_heat_weights
from ...kirin_addon.bind.skin_weights import finish_weights
from ...kirin_addon.bind.weight_features import weight_features
from ...kirin_addon.core.rig import Rig
from ..onnx import OnnxDenoiser
from .weight_export import WEIGHT_INPUTS

WEIGHTS_FOLDER = Path(__file__).resolve().parents[1] / "weights" / "bind"
MIN_WEIGHT = 0.01  # as bone heat's: smaller weights are dropped before the influence limit
CHUNK = 65536  # vertices per network call: bounds the (chunk, K, F) arrays


@dataclass
class LearnedResult:
    weights: np.ndarray  # (V, J) float32, rows sum to 1
    heat: HeatResult  # bone heat alone (its masks are the learned set's too)


@lru_cache(maxsize=2)
def weight_scorer(folder: Path = WEIGHTS_FOLDER) -> OnnxDenoiser:
    return OnnxDenoiser(folder / "weight_net.onnx", providers=["CPUExecutionProvider"], threads=1,
                        inputs=WEIGHT_INPUTS)


def learned_weights(vertices: np.ndarray, triangles: np.ndarray, rig: Rig, transferred: np.ndarray,
                    max_influences: int = 4, folder: Path = WEIGHTS_FOLDER) -> LearnedResult:
    """(V, J) weights of the mesh for the fitted `rig` (its deform bones), from the template weights
    `transferred` onto the mesh (V, J) and bone heat with and without them as a prior."""
    heat = rig_heat_weights(vertices, triangles, rig, None, HeatConfig(max_influences=max_influences))
    blend = rig_heat_weights(vertices, triangles, rig, transferred,
                             HeatConfig(prior_weight=PRIOR_WEIGHT, max_influences=max_influences))
    found = weight_features(vertices, triangles, rig,
                            {"heat": heat.weights, "blend": blend.weights, "transfer": transferred})
    scorer = weight_scorer(folder)
    scores = np.concatenate([
        scorer(features=torch.from_numpy(found.features[start:start + CHUNK]),
               valid=torch.from_numpy(found.valid[start:start + CHUNK])).numpy()
        for start in range(0, len(found.valid), CHUNK)])
    dense = found.dense(scores, rig.joint_count).astype(np.float32)
    dense[dense < MIN_WEIGHT] = 0.0  # a vertex's strongest of ≤ 8 candidates is ≥ 1/8: never dropped
    return LearnedResult(finish_weights(dense, max_influences), heat)
