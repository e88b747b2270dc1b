"""What the backend's worker runs: the motion model, loaded once and kept warm, and the checked
generate requests it is fed.

A request is checked in two steps. `GenerationService.check` runs in the HTTP handler: protocol.py
decodes the body into a `GenerateRequest`, and everything that can be checked without the model
(arrays, rig, mesh, image file, frames and fps, frames to keep) becomes a clear 4xx; what only the
model can tell (a GenerationError) fails the job with its user-facing message. Torch and the model
are imported only here and in `server`.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ...kirin_addon.backend.protocol import ProtocolError, encode_array, generate_from_json, motion_to_json
from ...kirin_addon.core.json_values import plain
from ...kirin_addon.core.motion import Motion, joint_positions
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.skinning import SkinnedMesh
from ...kirin_addon.generate.request import MAX_FRAMES, GenerateRequest
from .files import AllowedFiles
from .interruptible import InterruptibleDenoiser
from .jobs import Report, UserError, Work

DEVICES = ("auto", "cpu", "cuda")
RIG_CACHE = 8  # prepared rigs kept: Generate Motion is usually run many times on one character
MAX_IMAGE_PIXELS = 40_000_000  # a reference image's pixels decoded at most


def cuda_providers() -> list[str]:
    """onnxruntime's execution providers ([] when onnxruntime is missing)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return []
    return list(ort.get_available_providers())


@dataclass
class GenerateJob:
    """A checked generate request, ready for the worker."""

    request: GenerateRequest  # as asked: at the scene's `fps` (never None here), image as pixels
    model_request: GenerateRequest  # what the model samples: at its frame rate, keys resampled
    rig: Rig
    mesh: SkinnedMesh | None
    rig_key: str


class GenerationService:
    """The warm motion model and the two halves of a generate job (check, then run)."""

    def __init__(
        self,
        model_dir: str | Path | None = None,
        device: str = "auto",
        bank: str | None = "default",
        threads: int = 0,
    ):
        from ..motion.generator import DEFAULT_MODEL

        if device not in DEVICES:
            raise ValueError(f"Unknown device {device!r} (one of {', '.join(DEVICES)}).")
        self.model_dir = Path(model_dir) if model_dir is not None else DEFAULT_MODEL
        self.device_request = device
        self.bank = bank
        self.threads = threads
        self.model: Any = None
        self.load_seconds: float | None = None
        # The model's frame rate, from its card (no torch) so that requests can be checked while
        # the model still loads.
        try:
            card = json.loads((self.model_dir / "model.json").read_text())
        except (OSError, ValueError):
            card = {}
        self.model_fps = float(card.get("fps", 30.0))
        # Per-clip metric bounds (the library's 95th percentile, `kirin bounds`); {} for older models.
        self.bounds: dict[str, float] = dict(card.get("bounds", {}).get("per_clip", {}))
        self._rigs: OrderedDict[str, Any] = OrderedDict()
        self._rigs_lock = threading.Lock()
        self.files = AllowedFiles()  # what image_path may name (the backend sets its allowed folders)

    # ------------------------------------------------------------------ model
    def load(self) -> None:
        """Load the model on the chosen device, and its text encoder (the first job would pay for
        it otherwise). Runs on the worker thread."""
        import torch

        from ..motion.generator import GenerationError, MotionModel
        from ..onnx import OnnxDenoiser

        started = time.perf_counter()
        if self.threads:
            torch.set_num_threads(self.threads)
        bank = None if self.bank in (None, "", "none") else self.bank
        model = MotionModel.load(self.model_dir, backend="auto", bank=bank)
        onnx_file = self.model_dir / "denoiser.onnx"
        if model.backend == "onnxruntime" and (self.device_request == "cpu" or self.threads):
            # Rebuild the session where the defaults do not fit: CPU forced, or a thread budget.
            providers = ["CPUExecutionProvider"] if self.device_request == "cpu" else None
            model.runner = OnnxDenoiser(onnx_file, providers=providers, threads=self.threads)
            model.device = model.runner.device
        if self.device_request != "cpu" and model.device != "cuda" and torch.cuda.is_available():
            model.use_torch_device("cuda")  # onnxruntime without a GPU build, torch with one
        if self.device_request == "cuda" and model.device != "cuda":
            raise GenerationError(
                "CUDA was asked for, but neither onnxruntime (providers: "
                f"{', '.join(cuda_providers()) or 'none'}) nor torch sees a GPU here: install "
                "onnxruntime-gpu or a CUDA build of torch, or use --device cpu."
            )
        _ = model.text_encoder  # load it now, not in the first job
        model.runner = InterruptibleDenoiser(model.runner)  # a cancel stops a sampling step
        self.model = model
        self.load_seconds = time.perf_counter() - started

    def info(self) -> dict[str, Any]:
        model = self.model
        providers = getattr(getattr(model, "runner", None), "providers", None)
        return {
            "model_loaded": model is not None,
            "device": None if model is None else model.device,
            "device_requested": self.device_request,
            "backend": None if model is None else model.backend,
            "providers": providers,
            "model": str(self.model_dir),
            "model_fps": self.model_fps,
            "bank": None if model is None or model.bank is None else "loaded",
            "load_seconds": self.load_seconds,
        }

    # ------------------------------------------------------------------ check (HTTP thread)
    def check(self, body: dict[str, Any]) -> GenerateJob:
        """A generate request's JSON body, checked and decoded; ProtocolError/RigError otherwise.
        What the job will cost (frames at the model's rate, kept keys resampled) is bounded here,
        before anything costly is done."""
        rig, mesh, request = generate_from_json(body)
        fps = self.model_fps if request.fps is None else request.fps
        frames = request.frames
        model_frames = self._model_frames(frames, fps)
        if model_frames > MAX_FRAMES:
            raise ProtocolError(
                f"{frames} frames at {fps:g} fps last {(frames - 1) / fps:.1f} s; the model makes at most "
                f"{MAX_FRAMES} frames at {self.model_fps:g} fps ({(MAX_FRAMES - 1) / self.model_fps:.1f} s)."
            )
        keep = request.keep
        if keep is not None:
            keep = keep.sliced(0, min(keep.frame_count, frames))  # later keys can never be kept
            if self._model_frames(keep.frame_count, keep.fps) > MAX_FRAMES:
                longest = (MAX_FRAMES - 1) / self.model_fps
                raise ProtocolError(f"keep.motion: {keep.frame_count} frames at {keep.fps:g} fps last "
                                    f"{(keep.frame_count - 1) / keep.fps:.1f} s; at most {longest:.1f} s.")
        request = replace(request, fps=fps, image=self._image(request.image), keep=keep)
        keep, keep_frames = self._at_model_rate(request.keep, request.keep_frames)
        model_request = replace(request, frames=model_frames, fps=self.model_fps, keep=keep,
                                keep_frames=keep_frames)
        return GenerateJob(request, model_request, rig, mesh, rig_key(rig, mesh))

    def _model_frames(self, frames: int, fps: float) -> int:
        """How many frames `frames` at `fps` are at the model's rate (fps is at least MIN_FPS: finite)."""
        if abs(fps - self.model_fps) < 1e-6:
            return frames
        return math.ceil((frames - 1) * self.model_fps / fps - 1e-9) + 1

    def _image(self, image: str | bytes | None) -> np.ndarray | None:
        """The reference image's pixels, read now: the uploaded file's bytes, or a file under the
        backend's allowed folders (no larger than its cap)."""
        if image is None:
            return None
        if isinstance(image, str):
            image = self.files.read(image, "image", "image_path")
        return _decoded_image(image)

    def _at_model_rate(
        self, motion: Motion | None, chosen: Any
    ) -> tuple[Motion | None, np.ndarray | None]:
        """Existing keys to honour, brought to the model's frame rate."""
        if motion is not None and abs(motion.fps - self.model_fps) > 1e-6:
            ratio = self.model_fps / motion.fps
            motion = motion.resampled(self.model_fps)
            chosen = np.unique(np.minimum(np.round(chosen * ratio).astype(np.int64), motion.frame_count - 1))
        return motion, chosen

    # ------------------------------------------------------------------ run (worker thread)
    def work(self, job: GenerateJob) -> Work:
        return lambda report: self.run(job, report)

    def _prepared(self, job: GenerateJob):
        """The model's view of the rig, cached: the bone-name embeddings are the costly part."""
        with self._rigs_lock:
            if job.rig_key in self._rigs:
                self._rigs.move_to_end(job.rig_key)
                return self._rigs[job.rig_key]
        prepared = self.model.prepare_rig(job.rig, job.mesh)
        with self._rigs_lock:
            self._rigs[job.rig_key] = prepared
            while len(self._rigs) > RIG_CACHE:
                self._rigs.popitem(last=False)
        return prepared

    def run(self, job: GenerateJob, report: Report) -> dict[str, Any]:
        """The job's motions and their metrics (worker thread); a cancel stops it between steps and
        between the slices of each sampling step."""
        if self.model is None:
            raise UserError("The motion model is not loaded.")
        runner = getattr(self.model, "runner", None)
        if isinstance(runner, InterruptibleDenoiser):
            runner.check = lambda: report(0.0)  # raises JobCancelled once cancelled (progress kept)
            try:
                return self._run(job, report)
            finally:
                runner.check = None
        return self._run(job, report)

    def _run(self, job: GenerateJob, report: Report) -> dict[str, Any]:
        from ..eval.evaluate import BOUNDED, physical_metrics, within_bounds
        from ..motion.generator import GenerationError

        started = time.perf_counter()
        report(0.0, "preparing the rig")
        try:
            prepared = self._prepared(job)
        except ValueError as exc:  # RigError and GenerationError are user-facing
            raise UserError(str(exc)) from exc
        report(0.05, "sampling")

        def progress(fraction: float) -> None:  # raises JobCancelled: stops the sampler between steps
            report(0.05 + 0.85 * float(fraction), f"sampling {float(fraction):.0%}")

        try:
            generated = self.model.generate(prepared, job.model_request, progress=progress)
        except GenerationError as exc:
            raise UserError(str(exc)) from exc
        seconds_model = time.perf_counter() - started
        report(0.9, "measuring")
        feet = [job.rig.names[int(f)] for f in prepared.feet]
        frames, fps = job.request.frames, float(job.request.fps)
        variants = []
        for item in generated:
            motion = _at_rate(item.motion, fps, frames)
            contacts = _contacts_at_rate(np.asarray(item.contacts, bool), self.model_fps, fps, frames)
            # Metrics in the canonical frame and body sizes: the units of the model card's bounds.
            positions = prepared.canon.frame.to_canonical_points(joint_positions(job.rig, motion))
            moved = motion.translations
            free = None if moved is None else np.flatnonzero(np.abs(moved).max(axis=(0, 2)) > 0)
            metrics = physical_metrics(prepared.canon, positions, fps, free=free)
            variants.append(
                {
                    "seed": int(item.seed),
                    "motion": motion_to_json(motion),
                    "contacts": encode_array(contacts, "uint8"),
                    "feet": feet,
                    "metrics": plain({k: metrics[k] for k in BOUNDED}),
                    "within_bounds": within_bounds(metrics, self.bounds) if self.bounds else None,
                    "report": plain(item.report),
                }
            )
            report(0.9 + 0.1 * len(variants) / len(generated), "measuring")
        return {
            "frames": frames,
            "fps": fps,
            "joints": job.rig.joint_count,
            "joint_names": list(job.rig.names),
            "prompt": job.request.prompt,
            "device": self.model.device,
            "backend": self.model.backend,
            "seconds_model": seconds_model,
            "seconds_job": time.perf_counter() - started,
            "metric_units": {
                "foot_skating": "body sizes/s",
                "jitter": "body sizes/s^3",
                "penetration": "body sizes",
                "bone_length_error": "relative",
            },
            "bounds": self.bounds,
            "variants": variants,
        }


# ----------------------------------------------------------------------------- helpers
def _decoded_image(data: bytes) -> np.ndarray:
    """An image file's bytes as pixels (through a private temporary file: the image reader takes a
    path); ProtocolError for anything that is not an image it reads, or one too large to decode."""
    from PIL import Image, UnidentifiedImageError

    from ..encoders.image_files import load_image

    width = height = 0
    with contextlib.suppress(UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        with Image.open(io.BytesIO(data)) as header:  # reads the size only; the reader tells the rest
            width, height = header.size
    if width * height > MAX_IMAGE_PIXELS:
        raise ProtocolError(f"The reference image is {width}×{height} pixels; at most "
                            f"{MAX_IMAGE_PIXELS // 1_000_000} million (the encoder sees 224×224).")
    handle, name = tempfile.mkstemp(prefix="kirin-image-")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        return load_image(name)
    except (ValueError, OSError, Image.DecompressionBombError) as exc:
        # The file was read from a temporary file: its name would only confuse.
        raise ProtocolError(
            f"Cannot use the reference image: {str(exc).replace(name, 'the file')}"
        ) from None
    finally:
        os.unlink(name)


def rig_key(rig: Rig, mesh: SkinnedMesh | None) -> str:
    digest = hashlib.sha256()
    digest.update("\0".join(rig.names).encode())
    local = rig.local_rest if rig.local_rest is not None else np.zeros(0)
    for array in (rig.parents, rig.rest, rig.tails, rig.deform, rig.connected, local):
        digest.update(np.ascontiguousarray(array).tobytes())
    if mesh is not None:
        for array in (mesh.vertices, mesh.triangles, mesh.joint_indices, mesh.joint_weights):
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _at_rate(motion: Motion, fps: float, frames: int) -> Motion:
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


def _contacts_at_rate(contacts: np.ndarray, source_fps: float, fps: float, frames: int) -> np.ndarray:
    if contacts.ndim != 2 or contacts.shape[0] == 0:
        return np.zeros((frames, contacts.shape[-1] if contacts.ndim == 2 else 0), dtype=bool)
    index = np.minimum(np.round(np.arange(frames) * source_fps / fps).astype(np.int64), contacts.shape[0] - 1)
    return contacts[index]
