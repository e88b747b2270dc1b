"""Transfer Weights and Auto-Bind over real HTTP (the shared in-process backend, CPU, one thread)."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.backend.protocol import encode_array
from kirin.kirin_addon.backend.protocol_bind import surface_to_json
from kirin.kirin_addon.backend.results import BackendError
from kirin.kirin_addon.bind.request import BIND_WEIGHTS, DEFAULT_BIND_WEIGHTS, BindRequest, TransferRequest
from kirin.kirin_addon.core.skinning import linear_blend_skinning

pytest.importorskip("scipy")


def dense(mesh, joints: int) -> np.ndarray:
    out = np.zeros((mesh.vertex_count, joints))
    np.add.at(out, (np.arange(mesh.vertex_count)[:, None], mesh.joint_indices), mesh.joint_weights)
    return out


def test_transfer_weights_onto_a_moved_copy(client, creature):
    mesh, rig = creature.mesh, creature.rig
    rng = np.random.default_rng(0)
    # The same surface with new vertices: each slid a random way into one of its own triangles.
    incident = np.zeros(mesh.vertex_count, np.int64)
    for corner in range(3):
        incident[mesh.triangles[:, corner]] = np.arange(len(mesh.triangles))
    centre = mesh.vertices[mesh.triangles[incident]].mean(axis=1)
    slide = rng.uniform(0.05, 0.3, size=(mesh.vertex_count, 1))
    moved = (1 - slide) * mesh.vertices + slide * centre
    names = list(rig.names)
    targets = [("copy", moved, mesh.triangles), ("same", mesh.vertices, mesh.triangles)]
    job = client.transfer_weights(TransferRequest(mesh.vertices, mesh.triangles, names, mesh.joint_indices,
                                                  mesh.joint_weights, targets,
                                                  {"method": "robust", "max_influences": 4}))
    result = job.wait(timeout=120)
    assert result.groups == names and list(result.targets) == ["copy", "same"]
    same = result.targets["same"]
    # Sharp creases can fail the normal test on the source's own vertices; the rest match exactly.
    assert same.joint_indices.shape[1] <= 4 and same.matched.mean() > 0.85
    # On the source's own vertices the (≤4-influence) weights are the source's.
    weights = np.zeros((mesh.vertex_count, rig.joint_count))
    np.add.at(weights, (np.arange(mesh.vertex_count)[:, None], same.joint_indices), same.joint_weights)
    assert np.allclose(weights.sum(1), 1.0, atol=1e-5)
    assert np.abs(weights - dense(mesh, rig.joint_count)).max() < 0.35  # at most the dropped influences
    copy = result.targets["copy"]
    assert copy.matched.mean() > 0.85 and np.isfinite(copy.joint_weights).all()
    assert np.array_equal(copy.inpainted | copy.fallback, ~copy.matched)


def test_transfer_refuses_bad_requests_with_a_clear_4xx(client, creature):
    mesh = creature.mesh
    names = list(creature.rig.names)
    with pytest.raises(BackendError) as info:
        client.transfer_weights(TransferRequest(mesh.vertices, mesh.triangles, names, mesh.joint_indices,
                                                np.zeros_like(mesh.joint_weights),
                                                [("t", mesh.vertices, mesh.triangles)]))
    assert info.value.status == 422 and "no vertex weights" in info.value.message
    with pytest.raises(BackendError) as info:
        client.transfer_weights(TransferRequest(mesh.vertices, mesh.triangles, names[:3], mesh.joint_indices,
                                                mesh.joint_weights, [("t", mesh.vertices, mesh.triangles)]))
    assert info.value.status == 422 and "group index" in info.value.message
    with pytest.raises(BackendError) as info:
        client.transfer_weights(TransferRequest(mesh.vertices, mesh.triangles, names, mesh.joint_indices,
                                                mesh.joint_weights,
                                                [("t", mesh.vertices, mesh.triangles + 10**6)]))
    assert info.value.status == 422 and "vertex index" in info.value.message
    body = {"mesh": surface_to_json(mesh.vertices, mesh.triangles), "family": "unicorn"}
    with pytest.raises(BackendError) as info:
        client.request("POST", "/jobs/bind", body)
    assert info.value.status == 422
    flat = {"mesh": {"vertices": encode_array(mesh.vertices, "float32"),
                     "triangles": encode_array(np.zeros((0, 3), np.int32))}}
    with pytest.raises(BackendError) as info:
        client.request("POST", "/jobs/bind", flat)
    assert info.value.status == 422 and "faces" in info.value.message


def test_auto_bind_fits_a_rig_and_skins_the_mesh(client):
    from kirin.kirin_addon.library.families.build import build_creature

    creature = build_creature("quadruped", 12)
    mesh = creature.mesh
    request = BindRequest(mesh.vertices, mesh.triangles, "quadruped", options={"method": "robust"})
    job = client.auto_bind(request)
    result = job.wait(timeout=300)
    assert result.family == "quadruped" and result.quality in ("good", "fair")
    rig = result.rig
    weights = result.weights
    assert weights.joint_indices.shape[0] == mesh.vertex_count
    assert np.allclose(weights.joint_weights.sum(1), 1.0, atol=1e-5)
    # The bound mesh at the fitted rig's rest pose is the mesh itself (B_j⁻¹ then B_j).
    identity = np.repeat(np.eye(4)[None], rig.joint_count, axis=0)
    at_rest = linear_blend_skinning(mesh.vertices, weights.joint_indices, weights.joint_weights, identity)
    assert np.allclose(at_rest, mesh.vertices)
    # The fitted skeleton lies inside the body: joints within the mesh's bounds (5 % margin).
    lo, hi = mesh.vertices.min(0), mesh.vertices.max(0)
    margin = 0.05 * np.ptp(mesh.vertices, axis=0).max()
    assert np.all(rig.heads >= lo - margin) and np.all(rig.heads <= hi + margin)


def test_bind_weights_option_transfer_heat_blend_and_learned(client, creature, monkeypatch):
    """The `weights` option of Auto-Bind, with the creature as its own "fitted template" (no fit)."""
    from types import SimpleNamespace

    from kirin.kirin_addon.backend.protocol import ProtocolError
    from kirin.kirin_addon.backend.protocol_bind import bind_to_json
    from kirin.kirin_addon.bind.pipeline import BindPipeline
    from kirin.models.server.bind import BindingService

    mesh, rig = creature.mesh, creature.rig
    fit = SimpleNamespace(family="quadruped", rig=rig, template_vertices=mesh.vertices,
                          template_triangles=mesh.triangles, template_weights=dense(mesh, rig.joint_count),
                          quality="good", chamfer={"mean": 0.0}, scores={})
    monkeypatch.setattr(BindPipeline, "fit", lambda *args, **kwargs: fit)
    body = bind_to_json(BindRequest(mesh.vertices, mesh.triangles, family="quadruped"))
    assert "weights" not in body
    assert BindingService().check_bind(body).request.weights == DEFAULT_BIND_WEIGHTS
    with pytest.raises(ProtocolError):
        bind_to_json(BindRequest(mesh.vertices, mesh.triangles, weights="paint"))
    with pytest.raises(BackendError) as info:
        client.request("POST", "/jobs/bind", {**body, "weights": "paint"})
    assert info.value.status == 422
    methods = {}
    default_method = {"blend": "heat+robust", "learned": "learned"}[DEFAULT_BIND_WEIGHTS]
    for option in (*BIND_WEIGHTS, None):
        request = BindRequest(mesh.vertices, mesh.triangles, "quadruped", option, {"method": "robust"})
        result = client.auto_bind(request).wait(timeout=120)
        methods[option] = result.method
        weights = result.weights
        assert weights.joint_indices.shape == (mesh.vertex_count, 4)
        assert weights.joint_indices.max() < rig.joint_count
        assert np.allclose(weights.joint_weights.sum(axis=1), 1.0, atol=1e-5)
        if option == "heat":  # every vertex heated by a visible bone or diffused to; no blind piece
            assert np.array_equal(weights.inpainted, ~weights.matched) and not weights.fallback.any()
    assert methods == {"transfer": "robust", "heat": "heat", "blend": "heat+robust", "learned": "learned",
                       None: default_method}
