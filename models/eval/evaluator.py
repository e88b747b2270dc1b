"""The text–motion evaluator: contrastive motion and text encoders (Guo et al. 2022, as Kirin/MDM use).

R-Precision, FID, MM-Dist, Diversity and Multimodality (models/eval/evaluate.py) are all measured in the
joint embedding space of two small encoders trained here with InfoNCE on the library's train split:

- the motion encoder reads denormalised features (T,J,CHANNELS) of *any* rig
  (kirin_addon/generate/features.py)
  plus per-joint rig geometry and joint-name embeddings: a per-joint MLP on pairs of frames, attention
  + max pooling over joints (no joint order, any joint count), dilated residual temporal convolutions
  (no absolute positions, any length) and mean + max pooling over time → a unit vector;
- the text encoder is a head on the frozen MiniLM sentence vector (the masked mean of the token
  features the cache already stores, so training never runs the language model).

Many clips share one caption meaning ("A cobra coils up."), so a clip's positives in a batch are all
clips whose reference caption is the same: a multi-positive InfoNCE that does not push identical
actions apart. Weights are safetensors + a JSON card (config, normalisation, training facts).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ...kirin_addon.core.rig_features import GEOMETRY
from ...kirin_addon.eval.distributions import r_precision, r_precision_pool
from ...kirin_addon.generate.features import CHANNELS
from ..config import TEXT_DIM
from ..data.batching import usable
from ..data.cache import MAX_TOKENS, FeatureCache, RigArrays
from ..encoders.text import sentence_vectors
from ..training import save_checkpoint

DEFAULT_EVALUATOR = Path(__file__).resolve().parents[1] / "weights" / "evaluator"
WEIGHTS_FILE = "evaluator.safetensors"
CARD_FILE = "evaluator.json"


@dataclass
class EvaluatorConfig:
    """Shape of the two encoders (stored in the card: a folder always loads as it was trained)."""

    channels: int = CHANNELS
    geometry: int = GEOMETRY
    text_dim: int = TEXT_DIM
    name_dim: int = 16  # joint-name embedding (384) projected to this
    frames_per_token: int = 4  # consecutive frames read together (a patch loses nothing, costs 4× less)
    joint_width: int = 64  # per (token, joint): the bulk of the work, so kept narrow
    width: int = 128  # per token after pooling over joints
    pool_heads: int = 4  # attention pooling over joints
    kernel: int = 3
    dilations: tuple[int, ...] = (1, 2, 4)  # residual temporal convolutions on 7.5 Hz steps (≈2 s reach)
    text_hidden: int = 512
    text_dropout: float = 0.1
    embedding: int = 256


@dataclass
class EvaluatorTrainConfig:
    data: list[str] = field(default_factory=list)  # feature caches; the first one's stats normalise
    out: str = "runs/evaluator"  # checkpoint, log, weights and card
    export: str = ""  # also write the final weights + card here (e.g. models/weights/evaluator)
    steps: int = 2000
    batch: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: int = 100
    min_frames: int = 40  # training windows have a random length in [min_frames, max_frames] per batch
    max_frames: int = 120
    temperature: float = 0.1  # initial; the logit scale is learned (clamped to 1/τ ≤ 50)
    joint_dropout: float = 0.1  # each joint hidden with this probability: no single joint is relied on
    name_dropout: float = 0.0  # a clip's joint names blanked with this probability (rigs named otherwise)
    geometry_noise: float = 0.0  # multiplicative noise on rig geometry (bodies never seen in training)
    authored_weight: float = 4.0
    checkpoint_every: int = 200  # also when the test split's ground-truth R-Precision is logged
    log_every: int = 20
    seed: int = 0
    threads: int = 1
    max_seconds: float = 0.0  # stop (with a checkpoint) after this much wall time; 0: no limit
    model: EvaluatorConfig = field(default_factory=EvaluatorConfig)


# ----------------------------------------------------------------------------- networks
class MotionEncoder(nn.Module):
    """(B,T,J,C) normalised features + rig → (B,embedding) unit vectors; padding by masks."""

    def __init__(self, config: EvaluatorConfig):
        super().__init__()
        w, jw = config.width, config.joint_width
        self.patch = config.frames_per_token
        self.name = nn.Linear(config.text_dim, config.name_dim)
        self.frame_in = nn.Linear(self.patch * config.channels, jw)
        self.rig_in = nn.Linear(config.geometry + config.name_dim, jw)
        self.joint_mlp = nn.Sequential(nn.GELU(), nn.Linear(jw, jw), nn.GELU())
        self.heads = config.pool_heads
        self.score = nn.Linear(jw, config.pool_heads)
        self.merge = nn.Sequential(nn.Linear(2 * jw, w), nn.LayerNorm(w))
        pad = config.kernel // 2
        self.convs = nn.ModuleList(
            nn.Conv1d(w, w, config.kernel, padding=pad * d, dilation=d) for d in config.dilations
        )
        self.norms = nn.ModuleList(nn.LayerNorm(w) for _ in config.dilations)  # per step: padding-blind
        self.out = nn.Sequential(nn.Linear(2 * w, w), nn.GELU(), nn.Linear(w, config.embedding))

    def forward(
        self,
        x: torch.Tensor,
        geometry: torch.Tensor,
        names: torch.Tensor,
        frame_mask: torch.Tensor,
        joint_mask: torch.Tensor,
    ) -> torch.Tensor:
        batch, frames, joints, channels = x.shape
        p = self.patch
        extra = -frames % p
        if extra:  # repeat the last frame up to a whole patch (its mask too)
            x = torch.cat([x, x[:, -1:].expand(-1, extra, -1, -1)], dim=1)
            frame_mask = torch.cat([frame_mask, frame_mask[:, -1:].expand(-1, extra)], dim=1)
            frames += extra
        steps = frames // p
        pairs = (
            x.view(batch, steps, p, joints, channels)
            .permute(0, 1, 3, 2, 4)
            .reshape(batch, steps, joints, p * channels)
        )
        step_mask = frame_mask.view(batch, steps, p).any(-1)
        rig = self.rig_in(torch.cat([geometry, self.name(names)], dim=-1))  # (B,J,w), once per joint
        h = self.joint_mlp(self.frame_in(pairs) + rig[:, None])  # (B,S,J,w)
        # Attention pooling over joints (each head its own weights, softmax over real joints only)
        # and max pooling: neither depends on how many joints a rig has or how they are ordered.
        jm = joint_mask[:, None, :, None]
        scores = self.score(h).masked_fill(~jm, -1e4).softmax(dim=2)  # (B,S,J,H)
        values = h.view(batch, steps, joints, self.heads, -1)
        attended = torch.einsum("bsjh,bsjhd->bshd", scores, values).reshape(batch, steps, -1)
        peak = h.masked_fill(~jm, -1e4).amax(dim=2)
        keep = step_mask[..., None].to(h.dtype)  # (B,S,1)
        z = self.merge(torch.cat([attended, peak], dim=-1)) * keep  # (B,S,w)
        for conv, norm in zip(self.convs, self.norms, strict=True):
            # Padded steps are zero going into every convolution, as past the end of an unpadded clip.
            z = (z + conv(F.gelu(norm(z)).mul(keep).transpose(1, 2)).transpose(1, 2)) * keep
        count = keep.sum(1).clamp(min=1.0)
        mean = z.sum(1) / count
        peak_t = z.masked_fill(keep < 0.5, -1e4).amax(dim=1)
        return F.normalize(self.out(torch.cat([mean, peak_t], dim=-1)), dim=-1)


class TextHead(nn.Module):
    """Frozen MiniLM sentence vector (B,384) → (B,embedding) unit vectors."""

    def __init__(self, config: EvaluatorConfig):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(config.text_dim, config.text_hidden),
            nn.GELU(),
            nn.Dropout(config.text_dropout),
            nn.Linear(config.text_hidden, config.embedding),
        )

    def forward(self, sentence: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.net(sentence), dim=-1)


class TextMotionEvaluator(nn.Module):
    """Both encoders, the learned logit scale and the feature normalisation they were trained with."""

    def __init__(self, config: EvaluatorConfig, mean: np.ndarray, std: np.ndarray, temperature: float = 0.1):
        super().__init__()
        self.config = config
        self.motion = MotionEncoder(config)
        self.text = TextHead(config)
        self.log_scale = nn.Parameter(torch.tensor(math.log(1.0 / temperature)))
        self.register_buffer("mean", torch.as_tensor(np.asarray(mean), dtype=torch.float32))
        self.register_buffer("std", torch.as_tensor(np.asarray(std), dtype=torch.float32))
        self.card: dict = {}

    @property
    def scale(self) -> torch.Tensor:
        return self.log_scale.exp().clamp(1.0, 50.0)

    # ------------------------------------------------------------------ inference helpers
    @torch.no_grad()
    def embed_motions(self, motions: list[tuple[np.ndarray, RigArrays]], batch: int = 32) -> np.ndarray:
        """(N,embedding) for denormalised features (T,J,CHANNELS) each with its rig's arrays.

        Batches are formed by joint count so that padding stays small; any lengths are fine."""
        self.eval()
        out = np.zeros((len(motions), self.config.embedding), np.float32)
        order = sorted(range(len(motions)), key=lambda i: (motions[i][0].shape[1], motions[i][0].shape[0]))
        for start in range(0, len(order), batch):
            picks = order[start : start + batch]
            inputs = _collate([motions[i] for i in picks], self.mean.numpy(), self.std.numpy())
            out[picks] = self.motion(**inputs).numpy()
        return out

    @torch.no_grad()
    def embed_sentences(self, vectors: np.ndarray) -> np.ndarray:
        """(N,embedding) for MiniLM sentence vectors (N,384) (see `sentence_vectors`)."""
        self.eval()
        return self.text(torch.as_tensor(np.asarray(vectors, np.float32))).numpy()

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """(N,embedding) for captions, through the packaged MiniLM (as the cache encodes them)."""
        from ..encoders.text import load_text_encoder

        tokens, masks = load_text_encoder().encode_tokens(list(texts), max_tokens=MAX_TOKENS)
        return self.embed_sentences(sentence_vectors(tokens, masks))

    # ------------------------------------------------------------------ files
    def save(self, folder: str | Path, extra: dict | None = None) -> Path:
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {k: v.detach().float().contiguous().cpu() for k, v in self.state_dict().items()}
        save_file(tensors, str(folder / (WEIGHTS_FILE + ".tmp")))
        os.replace(folder / (WEIGHTS_FILE + ".tmp"), folder / WEIGHTS_FILE)
        card = {
            "model": asdict(self.config),
            "mean": self.mean.tolist(),
            "std": self.std.tolist(),
            **(extra or {}),
        }
        (folder / CARD_FILE).write_text(json.dumps(card, indent=2))
        return folder

    @classmethod
    def load(cls, folder: str | Path = DEFAULT_EVALUATOR) -> TextMotionEvaluator:
        from safetensors.torch import load_file

        folder = Path(folder)
        if not (folder / CARD_FILE).exists():
            raise ValueError(f"No text–motion evaluator at {folder} ({CARD_FILE} missing)")
        card = json.loads((folder / CARD_FILE).read_text())
        model = dict(card["model"])
        model["dilations"] = tuple(model["dilations"])
        net = cls(EvaluatorConfig(**model), np.array(card["mean"]), np.array(card["std"]))
        net.load_state_dict(load_file(str(folder / WEIGHTS_FILE)))
        net.card = card
        return net.eval()


def _collate(
    motions: list[tuple[np.ndarray, RigArrays]],
    mean: np.ndarray,
    std: np.ndarray,
    frame_masks: list[np.ndarray] | None = None,
) -> dict[str, torch.Tensor]:
    """Pad a list of (features, rig) to one batch: features normalised, masks for frames and joints."""
    count = len(motions)
    frames = max(m[0].shape[0] for m in motions)
    joints = max(m[0].shape[1] for m in motions)
    first = motions[0][1]
    x = np.zeros((count, frames, joints, CHANNELS), np.float32)
    geometry = np.zeros((count, joints, first.geometry.shape[1]), np.float32)
    names = np.zeros((count, joints, first.names.shape[1]), np.float32)
    frame_mask = np.zeros((count, frames), bool)
    joint_mask = np.zeros((count, joints), bool)
    for b, (features, rig) in enumerate(motions):
        t, j = features.shape[:2]
        x[b, :t, :j] = (np.asarray(features, np.float32) - mean) / std
        x[b, t:, :j] = x[b, t - 1, :j]  # as the encoder pads a clip to whole patches: its last frame
        geometry[b, :j], names[b, :j] = rig.geometry, rig.names
        frame_mask[b, :t] = True if frame_masks is None else frame_masks[b]
        joint_mask[b, :j] = True
    return {
        "x": torch.from_numpy(x),
        "geometry": torch.from_numpy(geometry),
        "names": torch.from_numpy(names),
        "frame_mask": torch.from_numpy(frame_mask),
        "joint_mask": torch.from_numpy(joint_mask),
    }


def contrastive_loss(
    motion: torch.Tensor, text: torch.Tensor, positives: torch.Tensor, scale: torch.Tensor
) -> torch.Tensor:
    """Symmetric multi-positive InfoNCE: −log(Σ_positives e^{s/τ} / Σ_all e^{s/τ}) both ways.

    `positives` (B,B) bool holds the diagonal and every pair that means the same thing; summing them
    inside the log lets same-meaning pairs share the mass instead of being pushed apart."""
    logits = scale * motion @ text.T
    blocked = logits.masked_fill(~positives, -1e4)
    m2t = torch.logsumexp(logits, 1) - torch.logsumexp(blocked, 1)
    t2m = torch.logsumexp(logits, 0) - torch.logsumexp(blocked, 0)
    return 0.5 * (m2t.mean() + t2m.mean())


# ----------------------------------------------------------------------------- training data
def meaning_key(cache: FeatureCache, index: int) -> str:
    """What a clip means: its reference caption (the first one), normalised; clips with the same key
    are positives of each other. Clips without captions mean only themselves."""
    record = cache.records[index]
    if not record["captions"]:
        return f"#{index}"
    return " ".join(cache.captions[record["captions"][0]].lower().strip(" .").split())


class EvaluatorBatches:
    """Random windows of training clips (any rigs mixed) with one of each clip's captions."""

    def __init__(self, cache: FeatureCache, config: EvaluatorTrainConfig, seed: int | list[int]):
        self.cache = cache
        self.config = config
        self.rng = np.random.default_rng(seed)
        self.clips = np.array(
            [i for i, r in enumerate(cache.records) if usable(r, "train") and r["captions"]]
        )
        if not len(self.clips):
            raise ValueError(f"No usable training clips with captions in {cache.folder}")
        weights = np.array(
            [config.authored_weight if cache.records[i]["authored"] else 1.0 for i in self.clips]
        )
        self.p = weights / weights.sum()
        keys = [meaning_key(cache, int(i)) for i in self.clips]
        ids = {k: n for n, k in enumerate(sorted(set(keys)))}
        self.meaning = {int(i): ids[k] for i, k in zip(self.clips, keys, strict=True)}
        sentences = sentence_vectors(cache.text_tokens, cache.text_masks)
        self.sentences = sentences

    def _window(self, index: int, length: int) -> tuple[np.ndarray, np.ndarray]:
        features = self.cache.features(index)
        frames = features.shape[0]
        mask = np.ones(length, bool)
        if frames >= length:
            start = int(self.rng.integers(frames - length + 1))
            return features[start : start + length], mask
        if self.cache.records[index]["loop"]:
            # A loop tiles seamlessly (features are heading-relative): a longer window of the same motion.
            reps = -(-length // frames) + 1
            start = int(self.rng.integers(frames))
            return np.concatenate([features] * reps)[start : start + length], mask
        mask[frames:] = False
        return features, mask

    def sample(self) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        """(motion inputs, sentence vectors (B,384), positives (B,B) bool)."""
        cfg = self.config
        picks = self.rng.choice(self.clips, size=min(cfg.batch, len(self.clips)), replace=False, p=self.p)
        length = int(self.rng.integers(cfg.min_frames, cfg.max_frames + 1))
        motions, masks, captions = [], [], []
        for index in picks:
            record = self.cache.records[int(index)]
            window, mask = self._window(int(index), length)
            motions.append((window, self.cache.rig(record["rig"])))
            masks.append(mask[: len(window)])
            captions.append(int(self.rng.choice(record["captions"])))
        inputs = _collate(motions, self.cache.mean, self.cache.std, masks)
        if cfg.joint_dropout > 0:
            dropped = torch.from_numpy(self.rng.random(inputs["joint_mask"].shape) < cfg.joint_dropout)
            dropped[:, 0] = False  # never all of them
            inputs["joint_mask"] &= ~dropped
        if cfg.name_dropout > 0:
            blank = torch.from_numpy(self.rng.random(len(picks)) < cfg.name_dropout)
            inputs["names"][blank] = 0.0
        if cfg.geometry_noise > 0:
            shape = inputs["geometry"].shape
            noise = self.rng.normal(size=(shape[0], 1, shape[2])).astype(np.float32)
            inputs["geometry"] *= 1.0 + cfg.geometry_noise * torch.from_numpy(noise)
        meaning = np.array([self.meaning[int(i)] for i in picks])
        positives = torch.from_numpy(meaning[:, None] == meaning[None, :])
        return inputs, torch.from_numpy(self.sentences[captions]), positives


# ----------------------------------------------------------------------------- training
def train_evaluator(config: EvaluatorTrainConfig, progress: bool = True) -> dict:
    """Train (or resume: a rerun with the same `out` continues from its checkpoint) the evaluator.

    Writes `checkpoint.pt` (weights_only-loadable), `log.jsonl`, and the weights + card to `out`
    (and to `export` when set). Returns the card's training facts, with ground-truth R-Precision on the
    cache's test split when it has one."""
    if not config.data:
        raise ValueError("No training data: set `data` to one or more feature caches")
    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    caches = [FeatureCache(path) for path in config.data]
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "checkpoint.pt"
    net = TextMotionEvaluator(config.model, caches[0].mean, caches[0].std, config.temperature)
    optimizer = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    step, seconds_before = _resume(checkpoint, net, optimizer)
    # Each (re)start draws from its own stream so a resumed run does not replay the same batches.
    batches = [EvaluatorBatches(c, config, seed=[config.seed, n, step]) for n, c in enumerate(caches)]
    sizes = np.array([len(b.clips) for b in batches], np.float64)
    rng = np.random.default_rng([config.seed, step, 7])
    (out / "config.json").write_text(json.dumps(asdict(config), indent=2))
    started = time.perf_counter()
    log = open(out / "log.jsonl", "a")

    def elapsed() -> float:
        return seconds_before + time.perf_counter() - started

    def save() -> None:
        save_checkpoint(
            checkpoint,
            {
                "model": net.state_dict(),
                "optimizer": optimizer.state_dict(),
                "step": step,
                "seconds": elapsed(),
            },
        )

    held_out = _HeldOut(net, caches[0])
    net.train()
    window: list[float] = []
    try:
        while step < config.steps:
            source = batches[int(rng.choice(len(batches), p=sizes / sizes.sum()))]
            window.append(_train_step(net, optimizer, source, config, step))
            step += 1
            if step % config.log_every == 0 or step == config.steps:
                line = {"step": step, "loss": float(np.mean(window)), "scale": float(net.scale.detach())}
                line["seconds"] = round(elapsed(), 1)
                log.write(json.dumps(line) + "\n")
                log.flush()
                window = []
                if progress:
                    sys.stderr.write(f"evaluator step {step}/{config.steps} loss {line['loss']:.3f}\n")
            if step % config.checkpoint_every == 0:
                save()
                if held_out.test or held_out.unseen:
                    line = {"step": step, **held_out()}
                    log.write(json.dumps(line) + "\n")
                    if progress:
                        sys.stderr.write(f"evaluator {json.dumps(line)}\n")
            if config.max_seconds and elapsed() - seconds_before >= config.max_seconds:
                break
    finally:
        log.close()
    save()
    net.eval()
    facts = _training_facts(config, net, step, round(elapsed(), 1), int(sizes.sum()))
    facts.update(held_out())
    net.eval()
    net.save(out, facts)
    if config.export:
        net.save(config.export, facts)
    return facts


def _training_facts(
    config: EvaluatorTrainConfig, net: TextMotionEvaluator, step: int, seconds: float, clips: int
) -> dict:
    """The card's training facts (held-out R-Precision is added to them)."""
    return {
        "step": step,
        "train_seconds": seconds,
        "params": sum(p.numel() for p in net.parameters()),
        "data": [str(Path(p)) for p in config.data],
        "train_clips": clips,
        "train_config": {k: v for k, v in asdict(config).items() if k != "model"},
    }


def _resume(
    checkpoint: Path, net: TextMotionEvaluator, optimizer: torch.optim.Optimizer
) -> tuple[int, float]:
    """Load `checkpoint` into `net` and `optimizer` where it exists: the step and seconds trained."""
    if not checkpoint.exists():
        return 0, 0.0
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    net.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["step"]), float(state.get("seconds", 0.0))


def _train_step(
    net: TextMotionEvaluator,
    optimizer: torch.optim.Optimizer,
    source: EvaluatorBatches,
    config: EvaluatorTrainConfig,
    step: int,
) -> float:
    """One optimiser step on a batch of `source` (learning rate warmed up over `config.warmup`): the loss."""
    inputs, sentences, positives = source.sample()
    for group in optimizer.param_groups:
        group["lr"] = config.lr * min(1.0, (step + 1) / max(config.warmup, 1))
    motion = net.motion(**inputs)
    text = net.text(sentences)
    loss = contrastive_loss(motion, text, positives, net.scale)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    optimizer.step()
    return float(loss.detach())


class _HeldOut:
    """Ground-truth R-Precision on the test split and the held-out family (model selection); a split
    with fewer than two captioned clips is left out."""

    def __init__(self, net: TextMotionEvaluator, cache: FeatureCache):
        self.net, self.cache = net, cache
        self.test = self._clips("test")
        self.unseen = self._clips("zero_shot")

    def _clips(self, split: str) -> list[int]:
        clips = [i for i, r in enumerate(self.cache.records) if usable(r, split) and r["captions"]]
        return clips if len(clips) >= 2 else []

    def __call__(self) -> dict:
        self.net.eval()
        out = {}
        for name, clips in (("test_ground_truth", self.test), ("zero_shot_ground_truth", self.unseen)):
            if clips:
                out[name] = ground_truth_r_precision(self.net, self.cache, clips)
        self.net.train()
        return out


def eval_caption(record: dict) -> int:
    """The caption a clip is evaluated with: its held-out paraphrase when it has one (never trained
    on), else its first caption."""
    return record["heldout_caption"] if record.get("heldout_caption", -1) >= 0 else record["captions"][0]


def eval_label(record: dict, cache: FeatureCache) -> str:
    """The action a clip shows (R-Precision's distractors come from other actions)."""
    return record.get("action") or cache.captions[eval_caption(record)]


def ground_truth_r_precision(
    net: TextMotionEvaluator, cache: FeatureCache, clips: list[int], seed: int = 0
) -> dict[str, float]:
    """R-Precision top-1/2/3 of the cache's own (float16) features of `clips` against their
    evaluation captions: a quick check of the evaluator itself."""
    records = [cache.records[i] for i in clips]
    motions = net.embed_motions(
        [(cache.features(i), cache.rig(r["rig"])) for i, r in zip(clips, records, strict=True)]
    )
    captions = [eval_caption(r) for r in records]
    texts = net.embed_sentences(sentence_vectors(cache.text_tokens[captions], cache.text_masks[captions]))
    labels = [eval_label(r, cache) for r in records]
    top = r_precision(motions, texts, labels, seed=seed)
    out = {f"r_precision_top{k}": round(float(v), 4) for k, v in zip((1, 2, 3), top, strict=True)}
    return out | {"r_precision_pool": round(r_precision_pool(labels), 1), "clips": len(clips)}


__all__ = [
    "DEFAULT_EVALUATOR",
    "EvaluatorConfig",
    "EvaluatorTrainConfig",
    "MotionEncoder",
    "TextHead",
    "TextMotionEvaluator",
    "contrastive_loss",
    "eval_caption",
    "eval_label",
    "ground_truth_r_precision",
    "train_evaluator",
]
