"""Auto-Bind's weight network as ONNX: example inputs and the export (models/onnx.py runs it)."""

from __future__ import annotations

from pathlib import Path

import torch

from ..onnx import export_graph
from .weight_net import WeightNet

WEIGHT_INPUTS = ("features", "valid")


def weight_example_inputs(net: WeightNet, vertices: int = 5, candidates: int = 8) -> dict:
    generator = torch.Generator().manual_seed(0)
    valid = torch.ones(vertices, candidates, dtype=torch.bool)
    valid[0, -1] = False
    return {"features": torch.randn(vertices, candidates, net.config.features, generator=generator),
            "valid": valid}


def export_weight_onnx(net: WeightNet, path: str | Path, opset: int = 17) -> Path:
    """Write the scorer as ONNX, the vertex and candidate axes dynamic."""
    dynamic = {"features": {0: "vertices", 1: "candidates"}, "valid": {0: "vertices", 1: "candidates"},
               "x0": {0: "vertices", 1: "candidates"}}
    return export_graph(net, weight_example_inputs(net), WEIGHT_INPUTS, dynamic, path, opset)
