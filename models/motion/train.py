"""`kirin train`: train the motion denoiser on feature caches (models/data/cache.py).

Resumable (a checkpoint every `checkpoint_every` steps; a rerun with the same `out` continues),
EMA weights, bf16 autocast, JSON-lines logs, and distributed data parallel under torchrun (gloo on
CPU, NCCL on GPU): every rank draws from its own share of the clips and gradients are averaged.
Weights are saved without pickle (safetensors) next to a JSON card of config and normalisation.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from ..data.batching import Batcher, Shard
from ..data.cache import FeatureCache
from ..diffusion import Diffusion
from ..training import ema_copy, save_checkpoint, save_weights_card, weights_card
from .config import TrainConfig
from .denoiser import CONDITION_INPUTS, Denoiser, parameter_count, patchify, unpatchify
from .losses import diffusion_losses

MODEL_KEYS = CONDITION_INPUTS
FPS = 30.0  # the caches' frame rate


def model_inputs(batch: dict) -> dict:
    return {k: batch[k] for k in MODEL_KEYS}


def predict_x0(
    model: torch.nn.Module, x_t: torch.Tensor, t: torch.Tensor, inputs: dict, frames_per_token: int
) -> torch.Tensor:
    """Run the denoiser on (B,T,J,C) features; tokens are temporal patches."""
    out = model(patchify(x_t, frames_per_token), t, **inputs)
    return unpatchify(out, frames_per_token)


def _distributed() -> tuple[int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not torch.distributed.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        torch.distributed.init_process_group(backend)
    rank = torch.distributed.get_rank() if world > 1 else 0
    return rank, world


def save_weights(
    model: torch.nn.Module,
    folder: Path,
    config: TrainConfig,
    mean: np.ndarray,
    std: np.ndarray,
    step: int,
    extra: dict | None = None,
) -> None:
    """EMA weights as safetensors + model.json (config, normalisation, training facts)."""
    card = weights_card(config, mean, std, step, {"fps": FPS, **(extra or {})})
    save_weights_card(model, folder, "denoiser.safetensors", card)


def learning_rate(config: TrainConfig, step: int) -> float:
    """Linear warm-up, then constant or cosine decay to `min_lr`·lr at `steps` (a resumed run with
    more steps stretches the curve from where it is)."""
    rate = config.lr * min(1.0, (step + 1) / max(config.warmup, 1))
    if config.schedule == "cosine":
        progress = min(max(step / max(config.steps, 1), 0.0), 1.0)
        rate *= config.min_lr + (1.0 - config.min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))
    elif config.schedule != "constant":
        raise ValueError(f"Unknown learning-rate schedule {config.schedule!r} (constant or cosine)")
    return rate


def warm_start(
    model: torch.nn.Module, path: str | Path, device: torch.device
) -> tuple[np.ndarray, np.ndarray]:
    """Load a checkpoint's EMA weights into `model` where names and shapes match (new parameters keep
    their initialisation); returns the checkpoint's normalisation (mean, std), which the weights need."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"No checkpoint to start from at {path}")
    state = torch.load(path, map_location=device, weights_only=True)
    weights = state.get("ema", state.get("model"))
    own = model.state_dict()
    matching = {k: v for k, v in weights.items() if k in own and own[k].shape == v.shape}
    skipped = sorted(set(weights) - set(matching))
    if skipped:
        raise ValueError(f"{path} does not fit this model (e.g. {skipped[0]}); warm starts only add layers")
    model.load_state_dict(matching, strict=False)
    return state["mean"].cpu().numpy(), state["std"].cpu().numpy()


@dataclass
class _Run:
    """One training run's model, EMA copy, optimiser and the normalisation its weights need."""

    config: TrainConfig
    device: torch.device
    model: Denoiser
    ema: torch.nn.Module
    optimizer: torch.optim.Optimizer
    diffusion: Diffusion
    mean: torch.Tensor
    std: torch.Tensor


def _device(rank: int) -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda", rank % max(torch.cuda.device_count(), 1))
    return torch.device("cpu")


def _restore(run: _Run, out: Path, caches: list[FeatureCache], batchers: list[Batcher], rank: int,
             rng: np.random.Generator) -> tuple[int, float, np.random.Generator]:
    """Resume from `out`'s checkpoint (its step, seconds and random streams), or warm-start from
    `config.init`; either way the caches and the run take the normalisation the weights were trained
    with. Returns the step, the seconds already trained and the batch-choice generator."""
    config, device = run.config, run.device
    checkpoint = out / "checkpoint.pt"
    if checkpoint.exists():
        state = torch.load(checkpoint, map_location=device, weights_only=True)
        run.model.load_state_dict(state["model"])
        run.ema.load_state_dict(state["ema"])
        run.optimizer.load_state_dict(state["optimizer"])
        step = int(state["step"])
        seconds_before = float(state.get("seconds", 0.0))
        # The normalisation is part of the model: a resumed run keeps it whatever cache it reads.
        if "mean" in state:
            kept = state["mean"].cpu().numpy(), state["std"].cpu().numpy()
        elif (out / "model.json").exists():
            card = json.loads((out / "model.json").read_text())
            kept = np.array(card["mean"], np.float32), np.array(card["std"], np.float32)
        else:
            kept = caches[0].mean, caches[0].std
        _keep_normalisation(run, caches, kept)
        rng = np.random.default_rng([config.seed, rank, 99, step])
        for b in batchers:
            b.rng = np.random.default_rng([config.seed, rank, step])
        return step, seconds_before, rng
    if config.init:
        kept = warm_start(run.model, config.init, device)
        run.ema.load_state_dict(run.model.state_dict())
        _keep_normalisation(run, caches, kept)
    return 0, 0.0, rng


def _keep_normalisation(run: _Run, caches: list[FeatureCache], kept: tuple[np.ndarray, np.ndarray]) -> None:
    for c in caches:
        c.mean, c.std = kept
    run.mean = torch.tensor(kept[0], device=run.device)
    run.std = torch.tensor(kept[1], device=run.device)


def _step(run: _Run, net: torch.nn.Module, batch: dict, step: int) -> tuple[dict, torch.Tensor, float]:
    """One optimiser step on `batch` (and the EMA update after it): the losses, the gradient norm
    before clipping and the learning rate."""
    config, device, model, optimizer = run.config, run.device, run.model, run.optimizer
    batch = {k: (v.to(device) if torch.is_tensor(v) else v) for k, v in batch.items()}
    x0 = batch["x0"]
    t = torch.randint(0, run.diffusion.steps, (x0.shape[0],), device=device)
    x_t = run.diffusion.q_sample(x0, t, torch.randn_like(x0))
    lr = learning_rate(config, step)
    for group in optimizer.param_groups:
        group["lr"] = lr
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=config.bf16):
        pred = predict_x0(net, x_t, t, model_inputs(batch), config.model.frames_per_token)
    losses = diffusion_losses(pred.float(), batch, run.mean, run.std, FPS, config.loss)
    optimizer.zero_grad(set_to_none=True)
    losses["total"].backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    done = step + 1  # the EMA warms up over the steps done, this one included
    decay = min(config.ema, (1 + done) / (10 + done))
    with torch.no_grad():
        for pe, pm in zip(run.ema.parameters(), model.parameters(), strict=True):
            pe.lerp_(pm, 1 - decay)
    return losses, grad_norm, lr


def _log_line(config: TrainConfig, last: dict, seconds_per_step: float) -> str:
    return (
        f"step {last['step']}/{config.steps} loss {last['total']:.4f} (feat {last['features']:.4f} "
        f"pos {last['positions']:.4f} vel {last['velocity']:.4f} "
        f"foot {last['foot_contact']:.4f}) "
        f"{seconds_per_step:.2f}s/step"
    )


def train(config: TrainConfig, progress: bool = True) -> dict:
    rank, world = _distributed()
    device = _device(rank)
    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed + rank)
    if not config.data:
        raise ValueError("No training data: set `data` to one or more feature caches")
    caches = [FeatureCache(path) for path in config.data]
    mean = torch.tensor(caches[0].mean, device=device)
    std = torch.tensor(caches[0].std, device=device)
    fpt = config.model.frames_per_token
    shard = Shard(rank, world)
    batchers = [
        Batcher(c, config.batch, config.window, fpt, config.authored_weight, "train", config.seed, shard)
        for c in caches
    ]
    sizes = np.array([len(b.order) for b in batchers], dtype=np.float64)
    rng = np.random.default_rng([config.seed, rank, 99])

    model = Denoiser(config.model).to(device)
    ema = ema_copy(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    diffusion = Diffusion(config.diffusion.steps, config.diffusion.schedule)
    run = _Run(config, device, model, ema, optimizer, diffusion, mean, std)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    step, seconds_before, rng = _restore(run, out, caches, batchers, rank, rng)
    first_step = step
    if rank == 0:
        (out / "config.json").write_text(json.dumps(asdict(config), indent=2))
    net = model
    if world > 1:
        net = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    net = torch.compile(net) if config.compile else net
    started = time.perf_counter()
    log = open(out / "log.jsonl", "a") if rank == 0 else None
    last: dict = {}
    window_losses: list[dict] = []

    def save() -> None:
        if rank != 0:
            return
        elapsed = seconds_before + time.perf_counter() - started
        state = {"model": model.state_dict(), "ema": ema.state_dict(), "optimizer": optimizer.state_dict(),
                 "step": step, "seconds": elapsed, "mean": run.mean.cpu(), "std": run.std.cpu()}
        save_checkpoint(out / "checkpoint.pt", state)
        facts = {"train_seconds": round(elapsed, 1), "params": parameter_count(model), "world_size": world}
        save_weights(ema, out, config, caches[0].mean, caches[0].std, step, facts)

    while step < config.steps:
        batcher = batchers[int(rng.choice(len(batchers), p=sizes / sizes.sum()))]
        batch = batcher.sample(config.drop_text, config.drop_image, rest_augment=config.rest_augment)
        losses, grad_norm, lr = _step(run, net, batch, step)
        step += 1
        window_losses.append({k: float(v.detach()) for k, v in losses.items()})
        if step % config.log_every == 0 and rank == 0:
            elapsed = time.perf_counter() - started
            last = {k: float(np.mean([w[k] for w in window_losses])) for k in window_losses[0]}
            seconds = round(seconds_before + elapsed, 1)
            last.update(step=step, lr=lr, grad_norm=float(grad_norm), seconds=seconds)
            window_losses.clear()
            log.write(json.dumps(last) + "\n")
            log.flush()
            if progress:
                print(_log_line(config, last, elapsed / max(step - first_step, 1)), flush=True)
        if step % config.checkpoint_every == 0:
            save()
        if config.max_seconds and time.perf_counter() - started > config.max_seconds:
            break
        if not math.isfinite(float(losses["total"].detach())):
            raise FloatingPointError(f"Loss became {float(losses['total'])} at step {step}")
    save()
    if log:
        log.close()
    if world > 1:
        torch.distributed.barrier()
    return {"step": step, **last}
