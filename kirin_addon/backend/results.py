"""What the backend answers, as the add-on reads it: job statuses, the results of each feature decoded
from their JSON and checked against what was asked for, and the errors every backend call raises.
Standard library (+ numpy, which Blender bundles) only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.motion import Motion
from ..core.rig import Rig
from .protocol import ProtocolError, decode_array, motion_from_json, rig_from_json
from .protocol_bind import weights_from_json


class BackendError(RuntimeError):
    """A backend request that failed; `message` is user-facing, `status` the HTTP status if any."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.status = status


class BackendStopped(BackendError):
    """The backend process ended, or nothing answers at its address."""


class JobCancelledError(BackendError):
    """The job was cancelled (by the user or by a backend shutting down)."""


# ----------------------------------------------------------------------------- results
@dataclass
class JobStatus:
    state: str  # queued, running, done, failed, cancelled
    progress: float  # 0..1
    message: str
    error: str | None = None
    position: int | None = None  # jobs ahead in the queue

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "cancelled")

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> JobStatus:
        return cls(
            str(obj.get("state", "")),
            float(obj.get("progress") or 0.0),
            str(obj.get("message") or ""),
            obj.get("error"),
            obj.get("position"),
        )


@dataclass
class GeneratedVariant:
    motion: Motion  # on the request's rig, armature space, `frames` frames at `fps`
    seed: int
    contacts: np.ndarray  # (T,F) planted feet
    feet: list[str]
    metrics: dict[str, float | None]  # foot_skating, jitter, penetration, bone_length_error
    report: dict[str, Any]  # the model's own report (clean-up, retrieval, seconds)
    within_bounds: bool | None = None  # metrics within the model's per-clip bounds (None: no bounds)


@dataclass
class GenerationResult:
    variants: list[GeneratedVariant]
    frames: int
    fps: float
    device: str
    backend: str
    seconds_model: float
    seconds_job: float
    info: dict[str, Any] = field(default_factory=dict)  # everything else the backend said


def decode_result(payload: dict[str, Any], joints: int, frames: int, variants: int) -> GenerationResult:
    """A result body, checked against what was asked for (a wrong shape is a BackendError)."""
    try:
        items = payload["variants"]
        if not isinstance(items, list) or len(items) != variants:
            raise ProtocolError(
                f"expected {variants} variants, got {len(items) if isinstance(items, list) else 0}"
            )
        out = []
        for i, item in enumerate(items):
            motion = motion_from_json(item["motion"], joints, frames, what=f"variants[{i}].motion")
            feet = [str(f) for f in item.get("feet", [])]
            contacts = decode_array(
                item["contacts"], f"variants[{i}].contacts", (frames, len(feet)), kind="bool"
            )
            out.append(
                GeneratedVariant(
                    motion,
                    int(item["seed"]),
                    contacts,
                    feet,
                    dict(item.get("metrics", {})),
                    dict(item.get("report", {})),
                    None if item.get("within_bounds") is None else bool(item["within_bounds"]),
                )
            )
        info = {k: v for k, v in payload.items() if k != "variants"}
        return GenerationResult(
            out,
            int(payload["frames"]),
            float(payload["fps"]),
            str(payload.get("device")),
            str(payload.get("backend")),
            float(payload.get("seconds_model") or 0.0),
            float(payload.get("seconds_job") or 0.0),
            info,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"The Kirin backend sent a result this add-on cannot read: {exc}") from exc


# ----------------------------------------------------------------------------- binding
@dataclass
class WeightSet:
    """Skin weights of one mesh from the backend: (V,K) group indices and weights, and which vertices
    took the source surface's weights, were inpainted, or fell back to the nearest surface."""

    joint_indices: np.ndarray
    joint_weights: np.ndarray
    matched: np.ndarray
    inpainted: np.ndarray
    fallback: np.ndarray
    stats: dict[str, Any]


@dataclass
class TransferResult:
    groups: list[str]
    targets: dict[str, WeightSet]  # by target name, in request order
    method: str
    seconds: float


@dataclass
class BindResult:
    family: str
    rig: Rig  # the fitted skeleton in the mesh's space (world space in the add-on): rest = bind B_j
    weights: WeightSet  # over the rig's joints
    quality: str  # good / fair / poor
    chamfer: dict[str, Any]
    scores: dict[str, Any]
    method: str
    seconds: float


def decode_weight_set(obj: Any, count: int, groups: int, what: str) -> WeightSet:
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what}: expected an object.")
    indices, weights = weights_from_json(obj, count, groups, what)
    masks = [decode_array(obj.get(k), f"{what}.{k}", (count,), kind="bool")
             for k in ("matched", "inpainted", "fallback")]
    return WeightSet(indices, weights, *masks, dict(obj.get("stats") or {}))


def decode_transfer(payload: dict[str, Any], targets: Sequence[tuple[str, int]]) -> TransferResult:
    """A transfer result, checked against the (name, vertex count) of each target sent."""
    try:
        groups = [str(g) for g in payload["groups"]]
        items = payload["targets"]
        if not isinstance(items, list) or len(items) != len(targets):
            raise ProtocolError(f"expected {len(targets)} targets")
        out = {}
        for item, (name, count) in zip(items, targets, strict=True):
            out[name] = decode_weight_set(item, count, len(groups), f"targets[{name}]")
        return TransferResult(groups, out, str(payload.get("method")), float(payload.get("seconds") or 0.0))
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"The backend sent a transfer result Kirin cannot read: {exc}") from None


def decode_bind(payload: dict[str, Any], count: int) -> BindResult:
    try:
        rig = rig_from_json(payload["rig"], "rig")
        weights = decode_weight_set(payload["weights"], count, rig.joint_count, "weights")
        return BindResult(str(payload["family"]), rig, weights, str(payload.get("quality")),
                          dict(payload.get("chamfer") or {}), dict(payload.get("scores") or {}),
                          str(payload.get("method")), float(payload.get("seconds") or 0.0))
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"The backend sent an Auto-Bind result Kirin cannot read: {exc}") from None


@dataclass
class PoseResult:
    """The answer of a Pose Space request (synchronous: no job)."""

    motion: Motion  # one frame per pose, on the request's rig (local rotations as Blender keys them)
    handle_error: np.ndarray | None  # (H,) body sizes: each target in order, then each pin; None: no handles
    reached: bool  # every handle within tolerance (always True for sample and walk)
    message: str  # why not, for the status bar ("" when reached)
    seconds: float  # server-side compute
    mesh_key: str | None  # send this instead of the mesh next time (None: no mesh)


def decode_pose(payload: Any, joints: int, frames: int, handles: int | None, what: str) -> PoseResult:
    """A pose answer, checked against what was asked for: `frames` poses of `joints` joints and, for a
    projection, one error per handle."""
    try:
        if not isinstance(payload, dict):
            raise ProtocolError("expected an object")
        motion = motion_from_json(payload["motion"], joints, frames, what="motion")
        error = None
        if handles is not None:
            error = decode_array(payload["handle_error"], "handle_error", (handles,))
        reached, message = payload.get("reached", True), payload.get("message") or ""
        key = payload.get("mesh_key")
        if not isinstance(reached, bool):
            raise ProtocolError("reached: expected true or false")
        if not isinstance(message, str) or (key is not None and not isinstance(key, str)):
            raise ProtocolError("message and mesh_key: expected text")
        return PoseResult(motion, error, reached, message, float(payload.get("seconds") or 0.0), key)
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"The backend sent a {what} result Kirin cannot read: {exc}") from None


@dataclass
class ExtractResult:
    """A motion extracted from a driving video."""

    motion: Motion  # on the request's rig, armature space, at the requested fps (the scene's)
    report: dict[str, Any]  # frames, frame rates, evidence used, reprojection error, timings, the fit's own
    reprojection_px: np.ndarray | None = None  # (T,) per clip frame (before resampling)
    camera: Any = None  # the fitted camera as the backend describes it
    seconds: float = 0.0


def decode_extract(payload: dict[str, Any], joints: int, fps: float | None) -> ExtractResult:
    """An extraction result, checked against the rig sent (joints) and the frame rate asked for."""
    try:
        frames = payload["frames"]
        if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
            raise ProtocolError(f"frames: expected a positive whole number, got {frames!r}")
        motion = motion_from_json(payload["motion"], joints, frames, what="motion")
        if fps is not None and abs(motion.fps - float(fps)) > 1e-6:
            raise ProtocolError(f"motion.fps: asked for {fps}, got {motion.fps}")
        report = payload.get("report") or {}
        if not isinstance(report, dict):
            raise ProtocolError("report: expected an object")
        error = None
        if payload.get("reprojection_px") is not None:
            error = decode_array(payload["reprojection_px"], "reprojection_px", (None,), finite=False)
        seconds = float(payload.get("seconds") or 0.0)
        return ExtractResult(motion, report, error, payload.get("camera"), seconds)
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"The backend sent a video extraction result Kirin cannot read: {exc}") from None
