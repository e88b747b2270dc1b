"""Auto-Bind's "learned" weights (kirin_addon/bind/pipeline.py) with the shipped network
(models/weights/bind/, run by models/bind/learned_weights.py): valid skin weights on a rig it never
saw, and the ONNX graph the backend runs agreeing with the safetensors weights."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from kirin.kirin_addon.bind.pipeline import learned_weights
from kirin.kirin_addon.bind.skin_weights import to_dense
from kirin.kirin_addon.library.families.build import build_creature
from kirin.models.bind.learned_weights import WEIGHTS_FOLDER, WeightNetwork, weight_scorer
from kirin.models.bind.weight_config import WeightNetConfig
from kirin.models.bind.weight_export import weight_example_inputs
from kirin.models.bind.weight_net import WeightNet

pytest.importorskip("onnxruntime")


def test_the_shipped_weights_skin_a_new_rig_on_its_deforming_bones_only():
    beast = build_creature("biped", 1)
    rig, mesh = beast.rig, beast.mesh
    rig.deform[rig.names.index(rig.names[-1])] = False  # a bone that does not deform gets nothing
    transferred = to_dense(mesh.joint_indices, mesh.joint_weights, rig.joint_count)
    transferred[:, ~rig.deform] = 0.0
    result = learned_weights(mesh.vertices, mesh.triangles, rig, transferred, WeightNetwork(), 4)
    weights = result.weights
    assert weights.shape == (mesh.vertex_count, rig.joint_count) and weights.dtype == np.float32
    assert np.allclose(weights.sum(axis=1), 1.0, atol=1e-5) and (weights >= 0).all()
    assert (weights > 0).sum(axis=1).max() <= 4
    assert not weights[:, ~rig.deform].any()
    # Most vertices keep the bone that bone heat gives them most: a correction, not a repaint.
    agree = (weights.argmax(axis=1) == result.heat.weights.argmax(axis=1)).mean()
    assert agree > 0.6
    again = learned_weights(mesh.vertices, mesh.triangles, rig, transferred, WeightNetwork(), 4).weights
    assert np.array_equal(weights, again)


def test_the_shipped_onnx_graph_is_the_shipped_safetensors_network():
    card = json.loads((WEIGHTS_FOLDER / "model.json").read_text())
    net = WeightNet(WeightNetConfig(**card["model"]))
    net.load_state_dict(load_file(str(WEIGHTS_FOLDER / "weight_net.safetensors")))
    example = weight_example_inputs(net.eval(), vertices=40, candidates=8)
    with torch.no_grad():
        expected = net(**example)
    assert torch.allclose(weight_scorer()(**example), expected, atol=1e-5)
    training, validation = set(card["training_characters"]), set(card["validation_characters"])
    assert training and validation and not training & validation


def test_no_held_out_character_trained_or_validated_the_shipped_network():
    card = json.loads((WEIGHTS_FOLDER / "model.json").read_text())
    seen = set(card["training_characters"]) | set(card["validation_characters"])
    lines = (WEIGHTS_FOLDER.parents[2] / "data" / "bind_heldout.txt").read_text().splitlines()
    held = {line.strip().rsplit(".", 1)[0].replace("/", "__") for line in lines
            if line.strip() and not line.startswith("#")}
    assert len(held) == 20 and len(seen) > 80
    assert not held & seen
