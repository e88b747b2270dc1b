"""The HTTP routes of Transfer Weights and Auto-Bind (POST /v1/jobs/transfer, /v1/jobs/bind) and their
request models; the requests are decoded and checked by the service (bind.py) and run as jobs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter
from pydantic import Field

from ...kirin_addon.backend.protocol import API
from ...kirin_addon.backend.protocol_bind import MAX_GROUPS, MAX_TARGETS
from ...kirin_addon.bind.request import BIND_WEIGHTS
from ...kirin_addon.core.creature import FAMILIES
from .bind import BindingService
from .http_limits import OffLoopRoute
from .jobs import JobQueue
from .schema import ERRORS, ArrayIn, JobOut, Strict


class SurfaceIn(Strict):
    """A mesh: vertices (V,3) and triangles (F,3), in one space shared by the whole request."""

    vertices: ArrayIn
    triangles: ArrayIn


class TransferOptionsIn(Strict):
    """Weight transfer settings (kirin_addon/bind/weight_transfer.py: TransferConfig); omitted: defaults."""

    method: Literal["robust", "nearest"] | None = None
    max_distance: float | None = Field(
        None, gt=0, le=1, allow_inf_nan=False, description="fraction of the target's bounding-box diagonal"
    )
    max_angle: float | None = Field(None, ge=0, le=180, allow_inf_nan=False, description="degrees")
    surface_tolerance: float | None = Field(
        None, ge=0, le=1, allow_inf_nan=False, description="closer than this (fraction of the diagonal): "
        "on the source surface, normals not tested"
    )
    allow_flipped_normals: bool | None = None
    smooth_iterations: int | None = Field(None, ge=0, le=100)
    max_influences: int | None = Field(None, ge=0, le=64, description="0: keep every influence")
    k: int | None = Field(None, ge=1, le=64, description="neighbours of the nearest method")


class TransferSourceIn(SurfaceIn):
    """The source mesh and its weights: joint_indices/joint_weights (V,K) index `groups`."""

    joint_indices: ArrayIn
    joint_weights: ArrayIn


class TransferTargetIn(SurfaceIn):
    name: str = Field(min_length=1, max_length=256)


GroupName = Annotated[str, Field(min_length=1, max_length=256)]


class TransferIn(Strict):
    source: TransferSourceIn
    groups: list[GroupName] = Field(min_length=1, max_length=MAX_GROUPS)
    targets: list[TransferTargetIn] = Field(min_length=1, max_length=MAX_TARGETS)
    options: TransferOptionsIn | None = None


class BindIn(Strict):
    mesh: SurfaceIn
    family: Literal[FAMILIES] | None = Field(None, description="template family; null: detect the best")
    weights: Literal[BIND_WEIGHTS] | None = Field(
        None, description="transfer: the template's weights; heat: bone heat on the mesh; blend: heat pulled "
        "towards the transferred weights; null: the default (blend)"
    )
    options: TransferOptionsIn | None = None


def bind_router(binding: BindingService, queue: JobQueue) -> APIRouter:
    router = APIRouter(route_class=OffLoopRoute)

    @router.post(f"{API}/jobs/transfer", status_code=202, response_model=JobOut, responses=ERRORS)
    def submit_transfer(body: TransferIn) -> dict[str, Any]:
        """Queue Transfer Weights: the source's vertex-group weights onto each target mesh."""
        job = binding.check_transfer(body.model_dump(exclude_none=True))
        return queue.submit(binding.transfer_work(job), "transfer")

    @router.post(f"{API}/jobs/bind", status_code=202, response_model=JobOut, responses=ERRORS)
    def submit_bind(body: BindIn) -> dict[str, Any]:
        """Queue Auto-Bind: fit a template skeleton to an unrigged mesh and skin it."""
        job = binding.check_bind(body.model_dump(exclude_none=True))
        return queue.submit(binding.bind_work(job), "bind")

    return router
