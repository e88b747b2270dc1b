"""What the backend runs for Auto-Bind and Transfer Weights: checked requests and the work on them.

Both need scipy (the Laplacian solve of the robust transfer) and Auto-Bind needs torch (the template
fit), so they run here, never in Blender's Python. As for Generate Motion, a request is checked in
the HTTP handler (clear 4xx for bad arrays, sizes, options) and the engine's own errors fail the job
with their message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ...core.creature import FAMILIES
from ..protocol import (
    BIND_WEIGHTS,
    DEFAULT_BIND_WEIGHTS,
    MAX_GROUPS,
    MAX_TARGETS,
    TRANSFER_OPTIONS,
    ProtocolError,
    encode_array,
    plain,
    rig_to_json,
    surface_from_json,
    weights_from_json,
    weights_to_json,
)
from .jobs import Report, UserError, Work

MAX_VERTICES = 5_000_000  # per mesh; a 2M-vertex scan is legal (the fit samples its surface)
MAX_DENSE_WEIGHTS = 300_000_000  # vertices × groups held as dense float32 (1.2 GB): past it, a clear 4xx


@dataclass
class TransferJob:
    source_vertices: np.ndarray
    source_triangles: np.ndarray
    source_weights: np.ndarray  # (Vs, G) dense
    groups: list[str]
    targets: list[tuple[str, np.ndarray, np.ndarray]]
    config: Any  # weight_transfer.TransferConfig


@dataclass
class BindJob:
    vertices: np.ndarray
    triangles: np.ndarray
    family: str | None
    config: Any  # weight_transfer.TransferConfig
    weights: str = DEFAULT_BIND_WEIGHTS  # one of BIND_WEIGHTS


def transfer_config(options: Any) -> Any:
    """A checked TransferConfig from a request's options (ProtocolError names the bad one)."""
    from ...bind.weight_transfer import TransferConfig

    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise ProtocolError("options: expected an object.")
    unknown = set(options) - set(TRANSFER_OPTIONS)
    if unknown:
        raise ProtocolError(f"options: unknown option(s) {', '.join(sorted(unknown))}.")
    known = {f.name for f in fields(TransferConfig)}
    try:
        config = TransferConfig(**{k: v for k, v in options.items() if k in known})
        config.validate()
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"options: {exc}") from None
    return config


def _check_size(count: int, what: str, groups: int = 1) -> None:
    if count > MAX_VERTICES:
        raise ProtocolError(f"{what}: {count:,} vertices is more than the {MAX_VERTICES:,} Kirin handles.")
    if count * groups > MAX_DENSE_WEIGHTS:
        raise ProtocolError(
            f"{what}: {count:,} vertices × {groups} groups is too many weights for one transfer; "
            "transfer fewer groups or decimate the mesh."
        )


def _weight_set(result: Any, max_influences: int) -> dict[str, Any]:
    """A TransferResult as JSON: sparse (V,K) weights and the masks the add-on shows as vertex groups."""
    from ...bind.skin_weights import to_sparse

    indices, weights = to_sparse(result.weights, max_influences or result.weights.shape[1])
    return {
        **weights_to_json(indices, weights),
        "matched": encode_array(result.matched, "uint8"),
        "inpainted": encode_array(result.inpainted, "uint8"),
        "fallback": encode_array(result.fallback, "uint8"),
        "stats": plain(result.stats),
    }


class BindingService:
    """Checks and runs transfer and bind jobs (stateless: the engine holds no model)."""

    # ------------------------------------------------------------------ check (HTTP thread)
    def check_transfer(self, body: dict[str, Any]) -> TransferJob:
        from ...bind.skin_weights import to_dense

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
        config = transfer_config(body.get("options"))
        dense = to_dense(indices, weights, len(groups))
        return TransferJob(vertices, triangles, dense, list(groups), targets, config)

    def check_bind(self, body: dict[str, Any]) -> BindJob:
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
        return BindJob(vertices, triangles, family, transfer_config(body.get("options")), weights)

    # ------------------------------------------------------------------ run (worker thread)
    def transfer_work(self, job: TransferJob) -> Work:
        return lambda report: self.run_transfer(job, report)

    def bind_work(self, job: BindJob) -> Work:
        return lambda report: self.run_bind(job, report)

    def run_transfer(self, job: TransferJob, report: Report) -> dict[str, Any]:
        from ...bind.weight_transfer import transfer_weights

        started = time.perf_counter()
        out = []
        for n, (name, vertices, triangles) in enumerate(job.targets):
            report(n / len(job.targets), f"transferring to {name}")
            try:
                result = transfer_weights(job.source_vertices, job.source_triangles, job.source_weights,
                                          vertices, triangles, job.config)
            except ValueError as exc:
                raise UserError(f"{name}: {exc}") from exc
            out.append({"name": name, **_weight_set(result, job.config.max_influences)})
        return {"groups": job.groups, "targets": out, "method": job.config.method,
                "seconds": time.perf_counter() - started}

    def run_bind(self, job: BindJob, report: Report) -> dict[str, Any]:
        from ....models.bind.template_fit import fit_template
        from ...bind.heat_weights import PRIOR_WEIGHT, HeatConfig, rig_heat_weights
        from ...bind.weight_transfer import TransferResult, transfer_weights

        started = time.perf_counter()
        report(0.0, "fitting the template" if job.family else "finding the template")
        def progress(fraction: float, message: str = "") -> None:  # raises JobCancelled: stops the fit
            report(0.8 * float(fraction), message or "fitting the template")

        try:
            fit = fit_template(job.vertices, job.triangles, job.family, progress=progress)
        except ValueError as exc:
            raise UserError(str(exc)) from exc
        seconds_fit = time.perf_counter() - started
        method = job.config.method
        try:
            if job.weights != "heat":
                report(0.8, "transferring the template's skin weights")
                result = transfer_weights(fit.template_vertices, fit.template_triangles, fit.template_weights,
                                          job.vertices, job.triangles, job.config)
            if job.weights != "transfer":
                # Bone heat on the mesh; "blend" pulls it towards the transferred weights. Its masks:
                # matched = heated by its nearest visible bone, inpainted = only diffused to,
                # fallback = a piece no bone is visible from.
                report(0.9, "computing bone-heat weights")
                prior = result.weights if job.weights == "blend" else None
                config = HeatConfig(prior_weight=PRIOR_WEIGHT if prior is not None else 0.0,
                                    max_influences=job.config.max_influences)
                heat = rig_heat_weights(job.vertices, job.triangles, fit.rig, prior, config)
                result = TransferResult(heat.weights, heat.heated, ~heat.heated, heat.blind, heat.stats)
                method = "heat" if prior is None else f"heat+{method}"
        except ValueError as exc:
            raise UserError(str(exc)) from exc
        return {
            "family": fit.family,
            "rig": rig_to_json(fit.rig),
            "quality": fit.quality,
            "chamfer": plain(fit.chamfer),
            "scores": plain(fit.scores),
            "method": method,
            "weights": _weight_set(result, job.config.max_influences),
            "seconds_fit": seconds_fit,
            "seconds": time.perf_counter() - started,
        }
