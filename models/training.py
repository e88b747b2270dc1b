"""What the training loops of the motion denoiser and the pose prior share: the EMA copy, resumable
checkpoints written atomically, and weights saved without pickle (safetensors + a JSON card)."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file


def ema_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A frozen copy of `model` in eval mode, for the exponential moving average of its weights."""
    ema = copy.deepcopy(model).eval()
    for p in ema.parameters():
        p.requires_grad_(False)
    return ema


def save_checkpoint(path: Path, state: dict) -> None:
    """torch.save through a temporary file, so a run killed mid-write keeps its last checkpoint."""
    torch.save(state, str(path) + ".tmp")
    os.replace(str(path) + ".tmp", path)


def save_weights_card(model: torch.nn.Module, folder: Path, weights_file: str, card: dict) -> None:
    """`model`'s weights as float32 safetensors `folder/weights_file` and `card` as folder/model.json."""
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().float().contiguous().cpu() for k, v in model.state_dict().items()}
    save_file(tensors, str(folder / f"{weights_file}.tmp"))
    os.replace(folder / f"{weights_file}.tmp", folder / weights_file)
    (folder / "model.json").write_text(json.dumps(card, indent=2))


def weights_card(config, mean: np.ndarray, std: np.ndarray, step: int, extra: dict | None = None) -> dict:
    """model.json of a train config (its `model` and `diffusion`), the feature normalisation the
    weights need and the training facts in `extra`."""
    return {
        "model": asdict(config.model),
        "diffusion": asdict(config.diffusion),
        "mean": np.asarray(mean).tolist(),
        "std": np.asarray(std).tolist(),
        "step": step,
        **(extra or {}),
    }
