"""What the backend runs for Auto-Bind and Transfer Weights: checked requests and the work on them.

Both need scipy (the Laplacian solve of the robust transfer) and Auto-Bind needs torch (the template
fit), so they run here, never in Blender's Python: Auto-Bind is the engine's pipeline
(kirin_addon/bind/pipeline.py) given the torch template fitter and the learned weight network. As for
Generate Motion, a request is checked in the HTTP handler (clear 4xx for bad arrays, sizes, options)
and the engine's own errors fail the job with their message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ...kirin_addon.backend.protocol import ProtocolError, encode_array, rig_to_json
from ...kirin_addon.backend.protocol_bind import bind_from_json, transfer_from_json, weights_to_json
from ...kirin_addon.bind.pipeline import BindPipeline
from ...kirin_addon.bind.request import BindRequest, TransferRequest
from ...kirin_addon.core.json_values import plain
from .jobs import Report, UserError, Work


@dataclass
class TransferJob:
    request: TransferRequest
    source_weights: np.ndarray  # (Vs, G) dense
    config: Any  # weight_transfer.TransferConfig


@dataclass
class BindJob:
    request: BindRequest  # its weights never None (the default filled in)
    config: Any  # weight_transfer.TransferConfig


def transfer_config(options: dict[str, Any]) -> Any:
    """A checked TransferConfig from a request's options (ProtocolError names the bad one)."""
    from ...kirin_addon.bind.weight_transfer import TransferConfig

    known = {f.name for f in fields(TransferConfig)}
    try:
        config = TransferConfig(**{k: v for k, v in options.items() if k in known})
        config.validate()
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"options: {exc}") from None
    return config


def _weight_set(result: Any, max_influences: int) -> dict[str, Any]:
    """A TransferResult as JSON: sparse (V,K) weights and the masks the add-on shows as vertex groups."""
    from ...kirin_addon.bind.skin_weights import to_sparse

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
        from ...kirin_addon.bind.skin_weights import to_dense

        request = transfer_from_json(body)
        config = transfer_config(request.options)
        dense = to_dense(request.joint_indices, request.joint_weights, len(request.groups))
        return TransferJob(request, dense, config)

    def check_bind(self, body: dict[str, Any]) -> BindJob:
        request = bind_from_json(body)
        return BindJob(request, transfer_config(request.options))

    # ------------------------------------------------------------------ run (worker thread)
    def transfer_work(self, job: TransferJob) -> Work:
        return lambda report: self.run_transfer(job, report)

    def bind_work(self, job: BindJob) -> Work:
        return lambda report: self.run_bind(job, report)

    def run_transfer(self, job: TransferJob, report: Report) -> dict[str, Any]:
        from ...kirin_addon.bind.weight_transfer import transfer_weights

        started = time.perf_counter()
        request, out = job.request, []
        for n, (name, vertices, triangles) in enumerate(request.targets):
            report(n / len(request.targets), f"transferring to {name}")
            try:
                result = transfer_weights(request.source_vertices, request.source_triangles,
                                          job.source_weights, vertices, triangles, job.config)
            except ValueError as exc:
                raise UserError(f"{name}: {exc}") from exc
            out.append({"name": name, **_weight_set(result, job.config.max_influences)})
        return {"groups": list(request.groups), "targets": out, "method": job.config.method,
                "seconds": time.perf_counter() - started}

    def run_bind(self, job: BindJob, report: Report) -> dict[str, Any]:
        started = time.perf_counter()
        request = job.request
        pipeline = bind_pipeline()
        report(0.0, "fitting the template" if request.family else "finding the template")
        def progress(fraction: float, message: str = "") -> None:  # raises JobCancelled: stops the fit
            report(0.8 * float(fraction), message or "fitting the template")

        try:
            fit = pipeline.fit(request.vertices, request.triangles, request.family, progress=progress)
        except ValueError as exc:
            raise UserError(str(exc)) from exc
        seconds_fit = time.perf_counter() - started
        try:
            result, method = pipeline.skin(request, fit, job.config, report)
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


def bind_pipeline() -> BindPipeline:
    """Auto-Bind's pipeline given the torch template fitter and the shipped weight network (both
    imported here, on the first bind: torch is not needed before)."""
    from ..bind.learned_weights import WeightNetwork
    from ..bind.template_fit import TorchTemplateFitter

    return BindPipeline(TorchTemplateFitter(), WeightNetwork())
