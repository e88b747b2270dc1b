"""What Auto-Bind and Transfer Weights ask the backend for, defined once for every layer that carries
them: the add-on's operators build them from the scene, the client sends them
(kirin_addon/backend/protocol_bind.py encodes and decodes them) and the backend's service fits and skins.

Meshes are (V,3) vertices and (F,3) triangles, all in one space (world space in the add-on). The
transfer options are TransferConfig fields (kirin_addon/bind/weight_transfer.py), None for the
default. numpy and the standard library only: it is imported inside Blender.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

TRANSFER_OPTIONS = ("method", "max_distance", "max_angle", "surface_tolerance", "allow_flipped_normals",
                    "smooth_iterations", "max_influences", "k")
# How Auto-Bind skins the mesh: the fitted template's weights transferred, bone heat on the mesh
# itself (kirin_addon/bind/heat_weights.py), bone heat pulled towards the transferred weights, or
# those three re-weighed by the network learned from artists' weights (models/bind/learned_weights.py).
BIND_WEIGHTS = ("transfer", "heat", "blend", "learned")
# The lowest error on benchmarks/bench_autobind.py; "learned" does not beat it (docs/autobind_real.md).
DEFAULT_BIND_WEIGHTS = "blend"


class BindRequestError(ValueError):
    """A request with an option no layer knows; the message is user-facing."""


def _check_options(options: dict[str, Any]) -> None:
    unknown = set(options) - set(TRANSFER_OPTIONS)
    if unknown:
        raise BindRequestError(f"Unknown transfer option(s): {', '.join(sorted(unknown))}.")


@dataclass
class TransferRequest:
    """Transfer Weights: the source mesh's vertex-group weights ((V,K) `joint_indices` into `groups`
    and `joint_weights`) onto each target, given as (name, vertices, triangles)."""

    source_vertices: np.ndarray
    source_triangles: np.ndarray
    groups: Sequence[str]
    joint_indices: np.ndarray
    joint_weights: np.ndarray
    targets: Sequence[tuple[str, np.ndarray, np.ndarray]]
    options: dict[str, Any] = field(default_factory=dict)

    def check(self) -> TransferRequest:
        """The request itself, when its options are TransferConfig fields; BindRequestError otherwise
        (arrays and settings are checked where they are decoded and used)."""
        _check_options(self.options)
        return self


@dataclass
class BindRequest:
    """Auto-Bind: an unrigged mesh to fit a template skeleton to (`family` None: the best family is
    detected) and skin by `weights` (one of BIND_WEIGHTS; None: the backend's default) with transfer
    `options`."""

    vertices: np.ndarray
    triangles: np.ndarray
    family: str | None = None
    weights: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def check(self) -> BindRequest:
        """The request itself, when its options and weights are known; BindRequestError otherwise."""
        _check_options(self.options)
        if self.weights is not None and self.weights not in BIND_WEIGHTS:
            raise BindRequestError(
                f"Unknown Auto-Bind weights {self.weights!r}; one of {', '.join(BIND_WEIGHTS)}."
            )
        return self
