"""The motion denoiser as ONNX: its inputs, example tensors, and the export (models/onnx.py runs it)."""

from __future__ import annotations

from pathlib import Path

import torch

from ..onnx import DYNAMIC_AXES, export_graph, rig_example_inputs
from .denoiser import CONDITION_INPUTS, Denoiser

INPUTS = ("x", "t", *CONDITION_INPUTS)


def example_inputs(net: Denoiser, batch: int = 2, tokens: int = 6, joints: int = 7, words: int = 5) -> dict:
    c = net.config
    generator = torch.Generator().manual_seed(0)
    return {
        "x": torch.randn(batch, tokens, joints, c.frames_per_token * c.channels, generator=generator),
        "t": torch.arange(batch, dtype=torch.int64) * 100 + 5,
        **rig_example_inputs(c, batch, joints, generator),
        "text": torch.randn(batch, words, c.text_dim, generator=generator),
        "text_mask": torch.ones(batch, words, dtype=torch.bool),
        "image": torch.randn(batch, c.image_dim, generator=generator),
        "text_on": torch.ones(batch),
        "image_on": torch.ones(batch),
    }


def export_onnx(net: Denoiser, path: str | Path, opset: int = 17) -> Path:
    """Write the denoiser as ONNX (legacy exporter, which torch 2.13 exports this model with)."""
    return export_graph(net, example_inputs(net), INPUTS, DYNAMIC_AXES, path, opset)
