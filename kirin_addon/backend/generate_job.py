"""A Generate Motion job on the backend's worker, from the checked request to the result encoded for
the wire: the pipeline (kirin_addon/generate/pipeline.py) runs the request at the model's frame rate,
and each variant is brought back to the scene's rate, measured in the units of the model card's
bounds and encoded (protocol.py). The backend's service (models/server/generate.py) checks the
request and gives the pipeline its network; everything after is here, numpy only, so that the job
passes into the networks only through the pipeline's network calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.json_values import plain
from ..core.motion import Motion, joint_positions
from ..core.rig import Rig
from ..core.skinning import SkinnedMesh
from ..generate.measure import BOUNDED, physical_metrics, within_bounds
from ..generate.network import Progress
from ..generate.pipeline import Generated, GeneratePipeline, PreparedRig, Ticker
from ..generate.request import GenerateRequest
from .protocol import encode_array, motion_to_json

Report = Callable[[float, str], None]  # the job's progress and message; raises once it is cancelled
METRIC_UNITS = {
    "foot_skating": "body sizes/s",
    "jitter": "body sizes/s^3",
    "penetration": "body sizes",
    "bone_length_error": "relative",
}


@dataclass
class GenerateJob:
    """A checked generate request, ready for the worker."""

    request: GenerateRequest  # as asked: at the scene's `fps` (never None here), image as pixels
    model_request: GenerateRequest  # what the model samples: at its frame rate, keys resampled
    rig: Rig
    mesh: SkinnedMesh | None
    rig_key: str  # the rig's (and its mesh's) identity: the pipeline keeps its prepared rigs by it


def run_generate_job(
    pipeline: GeneratePipeline, job: GenerateJob, progress: Progress, report: Report, bounds: dict[str, float]
) -> dict[str, Any]:
    """The job's motions and their metrics, as the result's JSON (the backend adds what it ran on).
    `progress` (the fraction sampled) goes to the pipeline and its network as it is; `report` tells
    the job's progress while measuring. Either raises once the job is cancelled."""
    started = time.perf_counter()
    prepared = pipeline.prepare(job.rig, job.mesh, key=job.rig_key)
    generated = pipeline.run(prepared, job.model_request, progress=progress)
    seconds_model = time.perf_counter() - started
    frames, fps = job.request.frames, float(job.request.fps)
    variants = []
    ticker = Ticker(report)
    for item in generated:
        if variants:  # a cancel lands between variants (it raises)
            ticker(0.9 + 0.1 * len(variants) / len(generated), "measuring")
        variants.append(_variant(job, prepared, item, pipeline.fps, bounds))
    return {
        "frames": frames,
        "fps": fps,
        "joints": job.rig.joint_count,
        "joint_names": list(job.rig.names),
        "prompt": job.request.prompt,
        "seconds_model": seconds_model,
        "seconds_job": time.perf_counter() - started,
        "metric_units": dict(METRIC_UNITS),
        "bounds": bounds,
        "variants": variants,
    }


def _variant(
    job: GenerateJob, prepared: PreparedRig, item: Generated, model_fps: float, bounds: dict[str, float]
) -> dict[str, Any]:
    """One variant at the scene's rate, measured (in the canonical frame and body sizes: the units of
    the model card's bounds) and encoded."""
    frames, fps = job.request.frames, float(job.request.fps)
    motion = at_rate(item.motion, fps, frames)
    contacts = contacts_at_rate(np.asarray(item.contacts, bool), model_fps, fps, frames)
    positions = prepared.canon.frame.to_canonical_points(joint_positions(job.rig, motion))
    moved = motion.translations
    free = None if moved is None else np.flatnonzero(np.abs(moved).max(axis=(0, 2)) > 0)
    metrics = physical_metrics(prepared.canon, positions, fps, free=free)
    return {
        "seed": int(item.seed),
        "motion": motion_to_json(motion),
        "contacts": encode_array(contacts, "uint8"),
        "feet": [job.rig.names[int(f)] for f in prepared.feet],
        "metrics": plain({k: metrics[k] for k in BOUNDED}),
        "within_bounds": within_bounds(metrics, bounds) if bounds else None,
        "report": plain(item.report),
    }


def at_rate(motion: Motion, fps: float, frames: int) -> Motion:
    """The motion at `fps`, exactly `frames` long (the last frame held if resampling fell short)."""
    if abs(motion.fps - fps) > 1e-6:
        motion = motion.resampled(fps)
    if motion.frame_count < frames:
        pad = frames - motion.frame_count

        def held(values: np.ndarray) -> np.ndarray:
            return np.concatenate([values, np.repeat(values[-1:], pad, 0)])

        moved = None if motion.translations is None else held(motion.translations)
        motion = Motion(fps, held(motion.root_positions), held(motion.rotations), moved)
    return motion.sliced(0, frames) if motion.frame_count > frames else motion


def contacts_at_rate(contacts: np.ndarray, source_fps: float, fps: float, frames: int) -> np.ndarray:
    """Planted feet (T,F) at `source_fps` brought to `frames` frames at `fps` (the nearest frame's)."""
    if contacts.ndim != 2 or contacts.shape[0] == 0:
        return np.zeros((frames, contacts.shape[-1] if contacts.ndim == 2 else 0), dtype=bool)
    index = np.minimum(np.round(np.arange(frames) * source_fps / fps).astype(np.int64), contacts.shape[0] - 1)
    return contacts[index]
