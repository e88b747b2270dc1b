"""Training Auto-Bind's learned weights on 2 CPU cores (minutes): the deformation loss on the
artists' characters (models/bind/weight_data.py), never the held-out ones (tools/bind_weight_data.py
does not write them). The fitted bones' pose of every character is learned with the network, so a
weight set is judged as the weights-alone measure judges it: under its own best pose.

Run: .venv/bin/python -m kirin.models.bind.weight_train --data ~/.cache/kirin/bind_weights
     [--steps 3000] [--out runs/bind_weights]
Writes out/weight_net.safetensors + out/model.json (the card's facts) and out/weight_net.onnx.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ...kirin_addon.bind.weight_features import WEIGHT_SETS
from ..training import save_weights_card
from .weight_config import WeightTrainConfig
from .weight_data import MoveTable, PairTensors, deformation_error, load_pairs
from .weight_export import export_weight_onnx
from .weight_net import WeightNet


def split_files(folder: Path, validation: int) -> tuple[list[Path], list[Path]]:
    """Training and validation character files: every len/validation-th character validates."""
    files = sorted(folder.glob("*.npz"))
    if len(files) <= validation:
        raise ValueError(f"{folder} holds {len(files)} characters; more than {validation} are needed.")
    spread = np.linspace(0, len(files) - 1, validation).round().astype(int) if validation else []
    picked = {int(n) for n in spread}
    return ([f for n, f in enumerate(files) if n not in picked],
            [f for n, f in enumerate(files) if n in picked])


def normalised(weights: torch.Tensor) -> torch.Tensor:
    return weights / weights.sum(dim=1, keepdim=True).clamp_min(1e-12)


def per_character(errors: torch.Tensor, pairs: PairTensors) -> np.ndarray:
    """Mean error of each character, in % of its diagonal (characters weigh alike)."""
    totals = torch.zeros(len(pairs.names)).index_add_(0, pairs.character, errors.detach())
    counts = torch.bincount(pairs.character, minlength=len(pairs.names)).clamp_min(1)
    return (totals / counts).numpy() * 100.0


def fit_moves(table: MoveTable, weights: torch.Tensor, pairs: PairTensors, steps: int,
              lr: float) -> np.ndarray:
    """Fit the table's pose corrections to fixed `weights` (N,K) on all of `pairs`: that weight
    set's best pose, as the weights-alone measure gives each set its own. Returns the per-character
    errors (%) at the end."""
    optimiser = torch.optim.Adam(table.parameters(), lr=lr)
    weights = weights.detach()
    for _ in range(steps):
        loss = deformation_error(weights, pairs, table).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        return per_character(deformation_error(weights, pairs, table), pairs)


def reference_errors(pairs: PairTensors, table: MoveTable,
                     config: WeightTrainConfig) -> dict[str, np.ndarray]:
    """Each classical set's per-character error under its own fitted pose (a fresh copy of the table)."""
    out = {}
    for name, weights in pairs.classical.items():
        if name != "artist":
            fresh = copy.deepcopy(table)
            out[name] = fit_moves(fresh, normalised(weights), pairs, config.reference_steps, config.lr_moves)
    return out


def evaluate(net: WeightNet, pairs: PairTensors, table: MoveTable, references: dict[str, np.ndarray],
             config: WeightTrainConfig) -> dict[str, float]:
    """The network's per-character error under its own fitted pose (the validation table, warm),
    as the median (%) and as the median of each character's ratio to bone heat's."""
    with torch.no_grad():
        weights = net(pairs.features, pairs.valid)
    learned = fit_moves(table, weights, pairs, config.validation_steps, config.lr_moves)
    out = {"learned": float(np.median(learned))} | {k: float(np.median(v)) for k, v in references.items()}
    for name in references:
        out[f"learned_over_{name}"] = float(np.median(learned / np.maximum(references[name], 1e-9)))
    return out


def feature_statistics(pairs: PairTensors) -> tuple[torch.Tensor, torch.Tensor]:
    rows = pairs.features[pairs.valid]
    return rows.mean(dim=0), rows.std(dim=0).clamp_min(1e-3)


def train(config: WeightTrainConfig) -> dict:
    torch.manual_seed(config.seed)
    started = time.perf_counter()
    train_files, validation_files = split_files(Path(config.data).expanduser(), config.validation)
    training, moves = load_pairs(train_files, config.vertices_per_character, config.seed)
    validation, validation_moves = load_pairs(validation_files, config.vertices_per_character, config.seed)
    print(f"{len(train_files)} training characters ({len(training)} vertices), "
          f"{len(validation_files)} validating, loaded in {time.perf_counter() - started:.0f} s", flush=True)
    net = WeightNet(config.model)
    net.mean, net.std = feature_statistics(training)
    net.start_from(WEIGHT_SETS.index(config.start_set))  # that set's log weight is its first feature
    references = reference_errors(validation, validation_moves, config)
    # Characters weigh alike: a vertex's share is 1 / its character's sampled count, and its error
    # counts relative to bone heat's on that character under the stored pose (a badly fitted
    # skeleton's large errors would otherwise decide every step).
    with torch.no_grad():  # under the stored pose: a scale per character is all the weighting needs
        heat = per_character(deformation_error(normalised(training.classical["heat"]), training, moves),
                             training)
    counts = torch.bincount(training.character).float()
    share = (1.0 / counts)[training.character]
    relative = torch.from_numpy(100.0 / np.maximum(heat, 1e-6)).float()[training.character]
    print(f"references fitted in {time.perf_counter() - started:.0f} s: validation "
          f"{json.dumps({k: float(np.median(v)) for k, v in references.items()})}, "
          f"training heat {float(np.median(heat)):.3f} %", flush=True)
    optimiser = torch.optim.AdamW([
        {"params": net.parameters(), "lr": config.lr, "weight_decay": config.weight_decay},
        {"params": moves.parameters(), "lr": config.lr_moves, "weight_decay": 0.0}])
    generator = torch.Generator().manual_seed(config.seed)
    best, best_state, history = math.inf, None, []
    for step in range(1, config.steps + 1):
        fade = 0.5 * (1.0 + math.cos(math.pi * step / config.steps))
        optimiser.param_groups[0]["lr"] = config.lr * fade
        rows = torch.multinomial(share, config.batch, replacement=True, generator=generator)
        batch = training.take(rows)
        weights = net(batch.features, batch.valid)
        loss = (deformation_error(weights, batch, moves) * relative[rows]).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % config.every == 0 or step == config.steps:
            scores = evaluate(net, validation, validation_moves, references, config)
            history.append({"step": step, "train_loss_over_heat": float(loss.detach()), **scores})
            print(f"step {step}: train {float(loss.detach()):.3f}× heat  validation {json.dumps(scores)} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
            if scores["learned_over_heat"] < best:
                best = scores["learned_over_heat"]
                best_state = {k: v.clone() for k, v in net.state_dict().items()}
    net.load_state_dict(best_state)
    return {"net": net, "history": history, "train": [f.stem for f in train_files],
            "validation": [f.stem for f in validation_files], "seconds": time.perf_counter() - started,
            "best_validation_over_heat": best}


def save(result: dict, config: WeightTrainConfig) -> Path:
    out = Path(config.out)
    net = result["net"]
    card = {"model": asdict(config.model), "train": asdict(config) | {"model": None},
            "step_chosen": min(result["history"], key=lambda h: h["learned_over_heat"])["step"],
            "history": result["history"], "training_characters": result["train"],
            "validation_characters": result["validation"], "seconds": result["seconds"]}
    save_weights_card(net, out, "weight_net.safetensors", card)
    export_weight_onnx(net, out / "weight_net.onnx")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = WeightTrainConfig()
    parser.add_argument("--data", default=str(Path.home() / ".cache" / "kirin" / "bind_weights"))
    parser.add_argument("--out", default=defaults.out)
    parser.add_argument("--steps", type=int, default=defaults.steps)
    parser.add_argument("--vertices", type=int, default=defaults.vertices_per_character)
    parser.add_argument("--start-set", choices=WEIGHT_SETS, default=defaults.start_set)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = WeightTrainConfig(data=args.data, out=args.out, steps=args.steps,
                               vertices_per_character=args.vertices, start_set=args.start_set)
    print(f"written to {save(train(config), config)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
