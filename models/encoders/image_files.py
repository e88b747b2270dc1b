"""Image files and arrays as the image encoder reads them: (H, W, 3) uint8 RGB, alpha composited over
mid grey. Files are decoded by Pillow (imported when a file is read)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MAGIC = {  # formats an error can name when Pillow cannot read the file
    _PNG_SIGNATURE: "PNG", b"\xff\xd8\xff": "JPEG", b"GIF8": "GIF", b"BM": "BMP", b"II*\x00": "TIFF",
    b"MM\x00*": "TIFF",
}


def load_image(path: str | Path) -> np.ndarray:
    """Read an image file as (H, W, 3) uint8 (alpha composited over mid grey)."""
    p = Path(path)
    if not p.exists():
        raise ValueError(f"image file not found: {p}")
    if not p.is_file():
        raise ValueError(f"not an image file: {p} is a directory or special file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read image file {p}: {exc}") from exc
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise ValueError(f"reading {p} needs Pillow (not installed): pass the pixels as an array") from None
    try:
        with Image.open(io.BytesIO(data)) as im:
            image = _png_pixels(im) if data.startswith(_PNG_SIGNATURE) else np.asarray(im.convert("RGBA"))
    except UnidentifiedImageError as exc:
        kind = _format_name(data)
        if kind is None:
            raise ValueError(f"{p} is not an image file (no format Pillow reads)") from exc
        raise ValueError(f"{p} is not a readable {kind} image file: {exc}") from exc
    except Exception as exc:  # Pillow raises several exception types for bad files
        raise ValueError(f"{p} is not a readable image file: {exc}") from exc
    return as_rgb(image, str(p))


def _png_pixels(im) -> np.ndarray:
    """A PNG's pixels as the encoders have always read them: 16-bit channels by their high byte (the
    encoders see 8-bit colour), a palette's transparency kept, a grey or RGB image's transparent
    colour key ignored."""
    if im.mode.startswith("I"):  # 16-bit grey: Pillow keeps all 16 bits
        return (np.asarray(im).astype(np.uint32) >> 8).astype(np.uint8)
    if im.mode in ("P", "PA", "LA", "RGBA"):
        return np.asarray(im.convert("RGBA"))
    return np.asarray(im.convert("RGB"))


def _format_name(data: bytes) -> str | None:
    kind = next((name for magic, name in _MAGIC.items() if data.startswith(magic)), None)
    if kind is None and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        kind = "WebP"
    return kind


def as_rgb(image: np.ndarray, what: str) -> np.ndarray:
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
