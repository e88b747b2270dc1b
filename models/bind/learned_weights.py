"""Auto-Bind's weight network as the pipeline is given it: the shipped scorer (models/weights/bind/,
trained by models/bind/weight_train.py) run by onnxruntime (models/onnx.py) on plain arrays — the
`WeightScorer` of kirin_addon/bind/fit_protocol.py. What it re-weighs (bone heat on the mesh, the
fitted template's transferred weights and their blend) and how its scores become skin weights is the
pipeline's (kirin_addon/bind/pipeline.py `learned_weights`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from ..onnx import OnnxDenoiser
from .weight_export import WEIGHT_INPUTS

WEIGHTS_FOLDER = Path(__file__).resolve().parents[1] / "weights" / "bind"
CHUNK = 65536  # vertices per network call: bounds the (chunk, K, F) arrays


@lru_cache(maxsize=2)
def weight_scorer(folder: Path = WEIGHTS_FOLDER) -> OnnxDenoiser:
    return OnnxDenoiser(folder / "weight_net.onnx", providers=["CPUExecutionProvider"], threads=1,
                        inputs=WEIGHT_INPUTS)


class WeightNetwork:
    """The shipped weight network scoring every vertex's candidate bones (`WeightScorer`), loaded on
    first use."""

    def __init__(self, folder: Path = WEIGHTS_FOLDER):
        self.folder = folder

    def __call__(self, features: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """(V, K) softmax scores over each vertex's candidates, from their features (V, K, F) and
        mask (V, K), CHUNK vertices per call."""
        scorer = weight_scorer(self.folder)
        return np.concatenate([
            scorer(features=torch.from_numpy(features[start:start + CHUNK]),
                   valid=torch.from_numpy(valid[start:start + CHUNK])).numpy()
            for start in range(0, len(valid), CHUNK)])
