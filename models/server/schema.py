"""The request and answer models every route shares (arrays, rig, mesh, motion; a job's status, an
error): they document the API (FastAPI's OpenAPI schema) and reject wrongly typed fields early; the
arrays inside are checked (shapes, bytes, finiteness) by the wire format (backend/protocol*.py) when
each feature's service decodes the body. Each feature's own models are next to its routes
(routes_<feature>.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field

from ...kirin_addon.backend.protocol import MAX_DIMS, MAX_ELEMENTS, MAX_FPS, MIN_FPS
from ...kirin_addon.core.rig import MAX_JOINTS


# A request model refuses the fields it does not know, and values of another type: no "10" for 10,
# no true for 1, no "yes" for true (a number field also takes a whole number).
class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ArrayIn(Strict):
    """An array: base64 of its little-endian C-ordered bytes, with shape and dtype."""

    dtype: Literal["float32", "float64", "int32", "int64", "uint8"]
    shape: list[Annotated[int, Field(ge=0, le=MAX_ELEMENTS)]] = Field(max_length=MAX_DIMS)
    data: str


class RigIn(Strict):
    """Armature-space rig: rest (J,4,4) bone matrices (Blender's bone.matrix_local), tails (J,3)."""

    names: list[str] = Field(min_length=1, max_length=MAX_JOINTS)
    parents: list[Annotated[int, Field(ge=-1, lt=MAX_JOINTS)]] = Field(
        max_length=MAX_JOINTS, description="parent index per bone, -1 for a root"
    )
    rest: ArrayIn
    tails: ArrayIn
    deform: list[bool] | None = None
    connected: list[bool] | None = None
    local_rest: ArrayIn | None = None


class MeshIn(Strict):
    """Skinned mesh in the rig's space: vertices (V,3), triangles (F,3), joint_indices/weights (V,K)."""

    vertices: ArrayIn
    triangles: ArrayIn
    joint_indices: ArrayIn
    joint_weights: ArrayIn


class MotionIn(Strict):
    """root_positions (T,3) armature space, rotations (T,J,4) local quaternions w,x,y,z."""

    fps: float = Field(ge=MIN_FPS, le=MAX_FPS, allow_inf_nan=False)
    root_positions: ArrayIn
    rotations: ArrayIn
    translations: ArrayIn | None = None


class JobOut(BaseModel):
    id: str
    kind: str
    state: Literal["queued", "running", "done", "failed", "cancelled"]
    progress: float
    message: str
    error: str | None
    created: float
    started: float | None
    finished: float | None
    has_result: bool
    position: int | None = None


class ErrorOut(BaseModel):
    error: str
    status: int


JobId = Annotated[str, PathParam(max_length=64)]# The error answers every route documents.
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (401, 403, 404, 409, 422, 429, 503)
}
