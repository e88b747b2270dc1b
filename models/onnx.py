"""The networks as ONNX (both denoisers, Auto-Bind's weight scorer): the export, int8 quantisation, and an
onnxruntime runner (CUDA when present).

An exported graph takes its denoiser's inputs by name, with batch, token, joint and text-length axes
dynamic, so one file serves every rig, clip length and guidance batch. onnxruntime-gpu and
onnxruntime are never installed together (BLENDER_NOTES.md); whichever is there is used, and
`providers` reports what a session really got. Each model's own inputs: motion/export.py, pose/export.py.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch

DYNAMIC_AXES = {
    "x": {0: "batch", 1: "tokens", 2: "joints"},
    "t": {0: "batch"},
    "geometry": {0: "batch", 1: "joints"},
    "skin": {0: "batch", 1: "joints"},
    "names": {0: "batch", 1: "joints"},
    "hops": {0: "batch", 1: "joints", 2: "joints2"},
    "edges": {0: "batch", 1: "joints", 2: "joints2"},
    "joint_mask": {0: "batch", 1: "joints"},
    "text": {0: "batch", 1: "words"},
    "text_mask": {0: "batch", 1: "words"},
    "image": {0: "batch"},
    "text_on": {0: "batch"},
    "image_on": {0: "batch"},
    "x0": {0: "batch", 1: "tokens", 2: "joints"},
}


class _Positional(torch.nn.Module):
    def __init__(self, net: torch.nn.Module, inputs: tuple[str, ...]):
        super().__init__()
        self.net = net
        self.inputs = inputs

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.net(**dict(zip(self.inputs, args, strict=True)))


def rig_example_inputs(c, batch: int, joints: int, generator: torch.Generator) -> dict:
    """Random per-joint rig inputs (both denoisers take the same ones)."""
    return {
        "geometry": torch.randn(batch, joints, c.geometry, generator=generator),
        "skin": torch.randn(batch, joints, c.skin, generator=generator),
        "names": torch.randn(batch, joints, c.text_dim, generator=generator),
        "hops": torch.randint(0, c.max_hops + 1, (batch, joints, joints), generator=generator),
        "edges": torch.randint(0, c.edge_types, (batch, joints, joints), generator=generator),
        "joint_mask": torch.ones(batch, joints, dtype=torch.bool),
    }


def export_graph(net: torch.nn.Module, example: dict, inputs: tuple[str, ...], dynamic: dict,
                 path: str | Path, opset: int) -> Path:
    """Write `net` as ONNX (legacy exporter, which torch 2.13 exports these models with), inputs by name."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    net = net.eval()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation and tracer notes
        torch.onnx.export(
            _Positional(net, inputs),
            tuple(example[k] for k in inputs),
            str(path),
            input_names=list(inputs),
            output_names=["x0"],
            dynamic_axes=dynamic,
            opset_version=opset,
            dynamo=False,
        )
    return path


def quantize_int8(path: str | Path, out: str | Path | None = None) -> Path:
    """Dynamic int8 quantisation of the linear layers (onnxruntime): smaller and faster on CPU."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    path = Path(path)
    out = Path(out) if out else path.with_name(path.stem + ".int8.onnx")
    quantize_dynamic(str(path), str(out), weight_type=QuantType.QInt8)
    return out


_NUMPY_TYPES = {"tensor(bool)": bool, "tensor(int64)": np.int64, "tensor(float)": np.float32}


class OnnxDenoiser:
    """Callable like `Denoiser.forward` (keyword tensors in, tensor out), run by onnxruntime."""

    def __init__(
        self,
        path: str | Path,
        providers: list[str] | None = None,
        threads: int = 0,
        inputs: tuple[str, ...] | None = None,
    ):
        import onnxruntime as ort

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"No ONNX denoiser at {path}")
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        wanted = providers or ["CUDAExecutionProvider", "CPUExecutionProvider"]
        available = set(ort.get_available_providers())
        self.session = ort.InferenceSession(
            str(path), options, providers=[p for p in wanted if p in available] or None
        )
        self.providers = self.session.get_providers()
        self.device = "cuda" if "CUDAExecutionProvider" in self.providers else "cpu"
        # The graph was exported with its inputs named (export_graph): their order is the graph's own.
        self.inputs = inputs or tuple(node.name for node in self.session.get_inputs())
        # Each input is cast to the type the graph declares (masks bool, steps and hops int64).
        self.dtypes = {node.name: _NUMPY_TYPES.get(node.type, np.float32)
                       for node in self.session.get_inputs()}

    def __call__(self, **inputs: torch.Tensor) -> torch.Tensor:
        feed = {name: inputs[name].detach().cpu().numpy().astype(self.dtypes.get(name, np.float32))
                for name in self.inputs}
        return torch.from_numpy(self.session.run(["x0"], feed)[0])
