"""The wire format of Auto-Bind and Transfer Weights (POST /v1/jobs/bind, /v1/jobs/transfer): the
requests (kirin_addon/bind/request.py) as JSON and back, checked on the backend with messages that
name the field at fault. Arrays, numbers and rigs travel as protocol.py encodes them; numpy and the
standard library only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..bind.request import (
    BIND_WEIGHTS,
    DEFAULT_BIND_WEIGHTS,
    TRANSFER_OPTIONS,
    BindRequest,
    BindRequestError,
    TransferRequest,
)
from ..core.creature import FAMILIES
from .protocol import ProtocolError, decode_array, encode_array

MAX_GROUPS = 1024  # vertex groups one transfer may carry
MAX_TARGETS = 64  # meshes one Transfer Weights job may re-skin
MAX_VERTICES = 5_000_000  # per mesh; a 2M-vertex scan is legal (the fit samples its surface)
MAX_DENSE_WEIGHTS = 300_000_000  # vertices × groups held as dense float32 (1.2 GB): past it, a clear 4xx


# ----------------------------------------------------------------------------- surfaces and weights
def surface_to_json(vertices: np.ndarray, triangles: np.ndarray) -> dict[str, Any]:
    return {"vertices": encode_array(vertices, "float32"), "triangles": encode_array(triangles, "int32")}


def surface_from_json(obj: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V,3) and triangles (F,3) of a mesh, indices checked; no triangles is legal (a point
    cloud) — what a method then can do is the engine's call."""
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what}: expected an object with vertices and triangles.")
    vertices = decode_array(obj.get("vertices"), f"{what}.vertices", (None, 3))
    if vertices.shape[0] == 0:
        raise ProtocolError(f"{what}: the mesh has no vertices.")
    triangles = decode_array(obj.get("triangles"), f"{what}.triangles", (None, 3), kind="int")
    if triangles.size and (triangles.min() < 0 or triangles.max() >= vertices.shape[0]):
        raise ProtocolError(f"{what}.triangles: a vertex index is outside 0..{vertices.shape[0] - 1}.")
    return vertices, triangles


def weights_to_json(joint_indices: np.ndarray, joint_weights: np.ndarray) -> dict[str, Any]:
    return {"joint_indices": encode_array(joint_indices, "int32"),
            "joint_weights": encode_array(joint_weights, "float32")}


def weights_from_json(obj: Any, count: int, groups: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(V,K) group indices and weights of `count` vertices over `groups` groups."""
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what}: expected an object with joint_indices and joint_weights.")
    indices = decode_array(obj.get("joint_indices"), f"{what}.joint_indices", (count, None), kind="int")
    weights = decode_array(obj.get("joint_weights"), f"{what}.joint_weights", (count, indices.shape[1]))
    if indices.size and (indices.min() < 0 or indices.max() >= groups):
        raise ProtocolError(f"{what}.joint_indices: a group index is outside 0..{groups - 1}.")
    if np.any(weights < 0):
        raise ProtocolError(f"{what}.joint_weights: weights must not be negative.")
    return indices, weights


def _check_size(count: int, what: str, groups: int = 1) -> None:
    if count > MAX_VERTICES:
        raise ProtocolError(f"{what}: {count:,} vertices is more than the {MAX_VERTICES:,} Kirin handles.")
    if count * groups > MAX_DENSE_WEIGHTS:
        raise ProtocolError(
            f"{what}: {count:,} vertices × {groups} groups is too many weights for one transfer; "
            "transfer fewer groups or decimate the mesh."
        )


def _checked(request: TransferRequest | BindRequest) -> None:
    """The request's own check, as the ProtocolError every encoding failure is."""
    try:
        request.check()
    except BindRequestError as exc:
        raise ProtocolError(str(exc)) from None


def _options_to_json(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if v is not None}


def options_from_json(obj: Any) -> dict[str, Any]:
    """The transfer options of a request: TransferConfig field names (their values are checked by
    TransferConfig itself, where the backend builds it)."""
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        raise ProtocolError("options: expected an object.")
    unknown = set(obj) - set(TRANSFER_OPTIONS)
    if unknown:
        raise ProtocolError(f"options: unknown option(s) {', '.join(sorted(unknown))}.")
    return dict(obj)


# ----------------------------------------------------------------------------- Transfer Weights
def transfer_to_json(request: TransferRequest) -> dict[str, Any]:
    """The JSON body of POST /v1/jobs/transfer: the source mesh with its vertex-group weights and each
    target, all in one space."""
    _checked(request)
    return {
        "source": {**surface_to_json(request.source_vertices, request.source_triangles),
                   **weights_to_json(request.joint_indices, request.joint_weights)},
        "groups": [str(g) for g in request.groups],
        "targets": [{"name": str(name), **surface_to_json(v, t)} for name, v, t in request.targets],
        "options": _options_to_json(request.options),
    }


def transfer_from_json(body: dict[str, Any]) -> TransferRequest:
    """A transfer request's JSON body, checked and decoded (sizes within what one job may hold)."""
    groups = body.get("groups")
    if not isinstance(groups, list) or not groups or not all(isinstance(g, str) and g for g in groups):
        raise ProtocolError("groups: expected a non-empty list of vertex-group names.")
    if len(groups) > MAX_GROUPS:
        raise ProtocolError(f"groups: {len(groups)} vertex groups; at most {MAX_GROUPS}.")
    source = body.get("source")
    vertices, triangles = surface_from_json(source, "source")
    _check_size(vertices.shape[0], "source", len(groups))
    if triangles.shape[0] == 0:
        raise ProtocolError("source: the source mesh has no faces to transfer from.")
    indices, weights = weights_from_json(source, vertices.shape[0], len(groups), "source")
    if not np.any(weights > 0):
        raise ProtocolError("The source mesh has no vertex weights to transfer.")
    targets_in = body.get("targets")
    if not isinstance(targets_in, list) or not targets_in:
        raise ProtocolError("targets: expected a non-empty list of meshes.")
    if len(targets_in) > MAX_TARGETS:
        raise ProtocolError(f"targets: {len(targets_in)} meshes; at most {MAX_TARGETS} per job.")
    targets = []
    for n, target in enumerate(targets_in):
        name = target.get("name") if isinstance(target, dict) else None
        if not isinstance(name, str) or not name:
            raise ProtocolError(f"targets[{n}].name: expected the mesh's name.")
        t_vertices, t_triangles = surface_from_json(target, f"targets[{n}] ({name})")
        _check_size(t_vertices.shape[0], f"targets[{n}] ({name})", len(groups))
        targets.append((name, t_vertices, t_triangles))
    options = options_from_json(body.get("options"))
    return TransferRequest(vertices, triangles, list(groups), indices, weights, targets, options)


# ----------------------------------------------------------------------------- Auto-Bind
def bind_to_json(request: BindRequest) -> dict[str, Any]:
    """The JSON body of POST /v1/jobs/bind: an unrigged mesh (world space in the add-on), the template
    family (null: detect it), the weights method (absent: the backend's default) and transfer options."""
    _checked(request)
    body = {
        "mesh": surface_to_json(request.vertices, request.triangles),
        "family": request.family,
        "options": _options_to_json(request.options),
    }
    if request.weights is not None:
        body["weights"] = request.weights
    return body


def bind_from_json(body: dict[str, Any]) -> BindRequest:
    """An Auto-Bind request's JSON body, checked and decoded; `weights` is never None (the default)."""
    vertices, triangles = surface_from_json(body.get("mesh"), "mesh")
    _check_size(vertices.shape[0], "mesh")
    if triangles.shape[0] == 0:
        raise ProtocolError("mesh: Auto-Bind needs a mesh with faces, not loose vertices.")
    family = body.get("family")
    if family is not None and family not in FAMILIES:
        raise ProtocolError(f"family: unknown template {family!r}; one of {', '.join(FAMILIES)}.")
    weights = body.get("weights") or DEFAULT_BIND_WEIGHTS
    if weights not in BIND_WEIGHTS:
        raise ProtocolError(f"weights: unknown {weights!r}; one of {', '.join(BIND_WEIGHTS)}.")
    return BindRequest(vertices, triangles, family, weights, options_from_json(body.get("options")))
