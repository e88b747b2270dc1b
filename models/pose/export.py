"""The pose prior's denoiser as ONNX: its inputs, example tensors, and the export (models/onnx.py runs it)."""

from __future__ import annotations

from pathlib import Path

import torch

from ..onnx import DYNAMIC_AXES, export_graph, rig_example_inputs
from .denoiser import POSE_INPUTS, PoseDenoiser

POSE_ONNX_INPUTS = ("x", "t", *POSE_INPUTS)


def pose_example_inputs(net: PoseDenoiser, batch: int = 2, joints: int = 7) -> dict:
    c = net.config
    generator = torch.Generator().manual_seed(0)
    return {
        "x": torch.randn(batch, joints, c.channels, generator=generator),
        "t": torch.arange(batch, dtype=torch.int64) * 100 + 5,
        **rig_example_inputs(c, batch, joints, generator),
    }


def export_pose_onnx(net: PoseDenoiser, path: str | Path, opset: int = 17) -> Path:
    """Write the pose prior's denoiser as ONNX, batch and joint axes dynamic."""
    dynamic = {name: DYNAMIC_AXES[name] for name in POSE_INPUTS}
    dynamic["x"] = {0: "batch", 1: "joints"}
    dynamic["t"] = {0: "batch"}
    dynamic["x0"] = {0: "batch", 1: "joints"}
    return export_graph(net, pose_example_inputs(net), POSE_ONNX_INPUTS, dynamic, path, opset)
