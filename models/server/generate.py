"""What the backend's worker runs: the motion network, loaded once and kept warm, composed with the
engine's Generate pipeline (kirin_addon/generate/pipeline.py), and the checked generate requests it
is fed.

A request is checked in two steps. `GenerationService.check` runs in the HTTP handler: protocol.py
decodes the body into a `GenerateRequest` and calls its one check, and everything else that can be
checked without the model (arrays, rig, mesh, image file, frames and fps at the model's rate, frames
to keep) becomes a clear 4xx; what only the pipeline can tell (a GenerationError) fails the job with
its user-facing message. The job itself runs in the engine (kirin_addon/backend/generate_job.py),
which calls into the network only through the pipeline. Torch and the model are imported only here
and in `server`.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ...kirin_addon.backend.generate_job import GenerateJob, run_generate_job
from ...kirin_addon.backend.protocol import ProtocolError, generate_from_json
from ...kirin_addon.core.motion import Motion
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.skinning import SkinnedMesh
from ...kirin_addon.generate.network import GenerationError
from ...kirin_addon.generate.pipeline import GeneratePipeline
from ...kirin_addon.generate.request import MAX_FRAMES
from .files import AllowedFiles
from .interruptible import InterruptibleDenoiser
from .jobs import Report, UserError, Work

DEVICES = ("auto", "cpu", "cuda")
MAX_IMAGE_PIXELS = 40_000_000  # a reference image's pixels decoded at most


def cuda_providers() -> list[str]:
    """onnxruntime's execution providers ([] when onnxruntime is missing)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return []
    return list(ort.get_available_providers())


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
        self.model: Any = None  # the network (models/motion/generator.py)
        self.pipeline: GeneratePipeline | None = None  # the engine's pipeline, given the network
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
        self.files = AllowedFiles()  # what image_path may name (the backend sets its allowed folders)

    # ------------------------------------------------------------------ model
    def load(self) -> None:
        """Load the model on the chosen device, and its text encoder (the first job would pay for
        it otherwise). Runs on the worker thread."""
        import torch

        from ..motion.bank import load_bank
        from ..motion.generator import MotionModel
        from ..onnx import OnnxDenoiser

        started = time.perf_counter()
        if self.threads:
            torch.set_num_threads(self.threads)
        model = MotionModel.load(self.model_dir, backend="auto")
        bank = load_bank(None if self.bank in (None, "", "none") else self.bank)
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
        self.pipeline = GeneratePipeline(model, bank=bank)
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
            "bank": None if self.pipeline is None or self.pipeline.bank is None else "loaded",
            "load_seconds": self.load_seconds,
        }

    # ------------------------------------------------------------------ check (HTTP thread)
    def check(self, body: dict[str, Any]) -> GenerateJob:
        """A generate request's JSON body, decoded and checked; ProtocolError, RigError or
        GenerateRequestError otherwise. What the job will cost (frames at the model's rate, kept keys
        resampled) is bounded here, before anything costly is done."""
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
        report(0.0, "preparing the rig")

        # Defined here, so that the network's reports while it samples stay inside the networks.
        def progress(fraction: float) -> None:  # raises JobCancelled: stops the sampler between steps
            report(0.05 + 0.85 * float(fraction), f"sampling {float(fraction):.0%}")

        try:
            result = run_generate_job(self.pipeline, job, progress, report, self.bounds)
        except ValueError as exc:  # GenerationError, RigError...: user-facing
            raise UserError(str(exc)) from exc
        result.update(device=self.model.device, backend=self.model.backend)
        return result


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
