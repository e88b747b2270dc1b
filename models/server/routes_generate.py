"""The HTTP routes of Generate Motion (POST /v1/jobs/generate) and its request model. The model
describes the body's schema (types and bounds, for OpenAPI, refused with a 422 before any work);
the request is decoded by the wire format and checked by its own `GenerateRequest.check`
(kirin_addon/generate/request.py) in the service (generate.py), and runs as a job."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import Field

from ...kirin_addon.backend.protocol import API
from ...kirin_addon.generate.request import (
    MAX_FPS,
    MAX_FRAMES,
    MAX_GUIDANCE,
    MAX_PROMPT,
    MAX_SEED,
    MAX_VARIANTS,
    MIN_FPS,
)
from .generate import GenerationService
from .http_limits import OffLoopRoute
from .jobs import JobQueue
from .schema import ERRORS, JobOut, MeshIn, MotionIn, RigIn, Strict


class KeepIn(Strict):
    """Existing keys to honour (in-betweening): a motion on the rig and the frames of it to keep."""

    motion: MotionIn
    frames: list[Annotated[int, Field(ge=0, lt=MAX_FRAMES)]] = Field(min_length=1, max_length=MAX_FRAMES * 64)


class GenerateIn(Strict):
    prompt: str | None = Field(None, max_length=MAX_PROMPT, description="text; may be null with an image")
    image_path: str | None = Field(
        None, max_length=4096, description="reference image file on the backend's machine"
    )
    image_data: str | None = Field(None, description="reference image file as base64 (backend elsewhere)")
    rig: RigIn
    mesh: MeshIn | None = None
    frames: int = Field(120, ge=1, le=MAX_FRAMES)
    fps: float | None = Field(None, ge=MIN_FPS, le=MAX_FPS, allow_inf_nan=False,
                              description="default: the model's")
    seed: int = Field(0, ge=0, le=MAX_SEED)
    variants: int = Field(1, ge=1, le=MAX_VARIANTS)
    guidance: float | None = Field(
        None, ge=0, le=MAX_GUIDANCE, allow_inf_nan=False, description="default: the model's"
    )
    keep: KeepIn | None = None
    loop: bool = False


def generate_router(service: GenerationService, queue: JobQueue) -> APIRouter:
    router = APIRouter(route_class=OffLoopRoute)

    @router.post(f"{API}/jobs/generate", status_code=202, response_model=JobOut, responses=ERRORS)
    def submit_generate(body: GenerateIn) -> dict[str, Any]:
        """Queue a Generate Motion job; poll GET jobs/{id}, then fetch GET jobs/{id}/result."""
        job = service.check(body.model_dump())
        return queue.submit(service.work(job), "generate")

    return router
