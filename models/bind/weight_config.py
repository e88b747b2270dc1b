"""Configurations of Auto-Bind's learned weights: the network and its training, as dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...kirin_addon.bind.weight_features import FEATURES


@dataclass
class WeightNetConfig:
    """The scorer of (vertex, candidate bone) pairs (models/bind/weight_net.py)."""

    features: int = FEATURES
    width: int = 64
    layers: int = 2  # per-pair layers before and after the vertex's pooled context


@dataclass
class WeightTrainConfig:
    data: str = ""  # the folder of tools/bind_weight_data.py's .npz files
    out: str = "runs/bind_weights"
    vertices_per_character: int = 2500  # sampled once per character (seeded)
    validation: int = 12  # characters kept out of the gradient, for choosing the step (by name order)
    batch: int = 4096  # vertices
    lr: float = 2e-3
    lr_moves: float = 3e-3  # the characters' pose corrections (rotation vectors, diagonals)
    weight_decay: float = 1e-4
    steps: int = 3000
    every: int = 250  # steps between validations
    reference_steps: int = 150  # fitting each classical set's own pose (full batch)
    validation_steps: int = 40  # refitting the validation pose to the network's weights (warm)
    seed: int = 0
    start_set: str = "heat"  # the classical set (weight_features.WEIGHT_SETS) the untrained network gives
    model: WeightNetConfig = field(default_factory=WeightNetConfig)
