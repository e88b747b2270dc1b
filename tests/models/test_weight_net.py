"""Auto-Bind's learned weights: the scorer network, its ONNX export, and the training loop learning
from the deformation loss which classical weight set to trust (models/bind/weight_*.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from pose_support import random_poses

from kirin.kirin_addon.bind.skin_weights import to_dense
from kirin.kirin_addon.core.skinning import linear_blend_skinning, skin_matrices
from kirin.kirin_addon.library.families.build import build_creature
from kirin.models.bind.weight_config import WeightNetConfig, WeightTrainConfig
from kirin.models.bind.weight_data import CLASSICAL_KEYS
from kirin.models.bind.weight_export import WEIGHT_INPUTS, export_weight_onnx, weight_example_inputs
from kirin.models.bind.weight_net import WeightNet
from kirin.models.bind.weight_train import train
from kirin.models.onnx import OnnxDenoiser

SMALL = WeightNetConfig(width=16, layers=1)


def test_weights_sum_to_one_over_the_real_candidates_and_onnx_agrees(tmp_path: Path):
    pytest.importorskip("onnxruntime")
    torch.manual_seed(0)
    net = WeightNet(SMALL).eval()
    example = weight_example_inputs(net, vertices=6, candidates=5)
    with torch.no_grad():
        weights = net(**example)
    assert torch.allclose(weights.sum(dim=1), torch.ones(6), atol=1e-6)
    assert float(weights[0, -1]) < 1e-6  # the empty slot
    runner = OnnxDenoiser(export_weight_onnx(net, tmp_path / "w.onnx"), inputs=WEIGHT_INPUTS)
    other = weight_example_inputs(net, vertices=11, candidates=3)  # other axes: they are dynamic
    with torch.no_grad():
        assert torch.allclose(runner(**other), net(**other), atol=1e-5)


def synthetic_character(path: Path, seed: int) -> None:
    """A procedural creature as tools/bind_weight_data.py writes a character: its own rig as the
    fitted one, seeded poses as the best moves, the truth skinned by its painted weights. Of the
    classical sets only "transfer" is those weights; "heat" and "blend" are each vertex on a
    neighbouring bone's weights (a wrong set the network must learn to distrust)."""
    beast = build_creature("quadruped", seed)
    rig, mesh = beast.rig, beast.mesh
    truth_weights = to_dense(mesh.joint_indices, mesh.joint_weights, rig.joint_count)
    poses = np.concatenate([rig.rest[None], random_poses(rig, 6, np.random.default_rng(seed))])
    truth = linear_blend_skinning(mesh.vertices, mesh.joint_indices, mesh.joint_weights,
                                  skin_matrices(rig.rest, poses))
    moves = poses @ np.linalg.inv(rig.rest)[None]
    wrong = truth_weights[:, np.maximum(rig.parents, 0)]  # every bone's weight on its parent
    sets = {"heat": wrong, "blend": wrong, "transfer": truth_weights}
    np.savez_compressed(path, name=np.array(f"quadruped-{seed}"), family=np.array("quadruped"),
                        vertices=mesh.vertices, triangles=mesh.triangles, names=np.array(rig.names),
                        parents=rig.parents, rest=rig.rest, tails=rig.tails, deform=rig.deform,
                        moves=moves, truth=truth, artist=truth_weights,
                        **{CLASSICAL_KEYS[k]: v for k, v in sets.items()})


def test_training_learns_which_classical_set_reproduces_the_artists_mesh(tmp_path: Path):
    for seed in range(4):
        synthetic_character(tmp_path / f"c{seed}.npz", seed)
    config = WeightTrainConfig(data=str(tmp_path), out=str(tmp_path / "run"), vertices_per_character=600,
                               validation=1, batch=512, steps=250, lr=3e-3, model=SMALL,
                               reference_steps=50, validation_steps=20)
    result = train(config)
    last = result["history"][-1]
    # The transferred set is the truth here: the network must end near it and far below the wrong sets.
    assert last["transfer"] < 0.05 * last["heat"]
    assert result["best_validation_over_heat"] < 0.3 and last["learned"] < 0.3 * last["heat"]
    assert result["validation"] and not set(result["validation"]) & set(result["train"])
