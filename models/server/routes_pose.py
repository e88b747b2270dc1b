"""The HTTP routes of Pose Space (POST /v1/pose/project, /v1/pose/sample, /v1/pose/walk) and their
request models: synchronous, the answer is the result (no job); the service (pose.py) decodes,
checks and answers."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import Field

from ...kirin_addon.backend.protocol import API
from ...kirin_addon.backend.protocol_pose import MAX_MESH_KEY, MAX_POSE_SAMPLES
from ...kirin_addon.core.rig import MAX_JOINTS
from ...kirin_addon.generate.request import MAX_FRAMES, MAX_SEED
from .http_limits import OffLoopRoute
from .pose import PoseService
from .schema import ERRORS, ArrayIn, MeshIn, MotionIn, RigIn, Strict


class PoseRangesIn(Strict):
    """Per-joint ranges (radians, 0..π): the widest swing of each bone from its rest direction and
    twist about it that the rig's own actions show."""

    swing: ArrayIn
    twist: ArrayIn


class PoseRigIn(Strict):
    rig: RigIn
    mesh: MeshIn | None = Field(
        None, description="skinned mesh; once sent, the `mesh_key` of the answer will do"
    )
    mesh_key: str | None = Field(
        None, min_length=1, max_length=MAX_MESH_KEY,
        description="the mesh_key of a previous pose answer instead of the mesh (unknown: 409, send the mesh)"
    )
    ranges: PoseRangesIn | None = Field(
        None, description="the rig's own joint ranges (from its actions): the answer keeps inside them"
    )


JointIndex = Annotated[int, Field(ge=0, lt=MAX_JOINTS)]


class PoseTargetsIn(Strict):
    """Joints to move and their targets: points (H,3) in armature space, one per joint."""

    joints: list[JointIndex] = Field(max_length=MAX_JOINTS)
    points: ArrayIn


class PoseProjectIn(PoseRigIn):
    pose: MotionIn = Field(description="the current pose: one frame on the rig")
    targets: PoseTargetsIn
    pins: list[JointIndex] = Field(
        default_factory=list, max_length=MAX_JOINTS, description="joints kept where they are"
    )
    strength: float | None = Field(
        None,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="how far the prior may move the edit, (0, 1]; default 0.1 relative, 0.4 not",
    )
    relative: bool = Field(
        True, description="the correction relative to the current pose (a drag) or as it is (Project Pose)"
    )


class PoseSampleIn(PoseRigIn):
    pose: MotionIn = Field(description="one frame on the rig: where the samples stand and face")
    count: int = Field(1, ge=1, le=MAX_POSE_SAMPLES, description="poses to sample")
    seed: int = Field(0, ge=0, le=MAX_SEED)


class PoseWalkIn(PoseRigIn):
    keys: MotionIn = Field(description="keyposes: K frames on the rig")
    frames: list[Annotated[int, Field(ge=1, le=MAX_FRAMES)]] = Field(
        max_length=MAX_FRAMES, description="K-1 frame counts, from each key to the next"
    )
    method: Literal["guided", "latent"] = Field(
        "guided", description="guided (slerp + the prior's correction) or latent (DDIM-inverted keys slerped)"
    )


def _answer(result: dict[str, Any]) -> Response:
    # Serialised here rather than by FastAPI: the arrays are already base64 strings.
    return Response(json.dumps(result), media_type="application/json")


def pose_router(pose: PoseService) -> APIRouter:
    router = APIRouter(route_class=OffLoopRoute)

    @router.post(f"{API}/pose/project", responses=ERRORS)
    def pose_project(body: PoseProjectIn) -> Response:
        """Project a dragged pose onto plausible poses: `targets` joints reach their points, `pins`
        stay; answers the pose (one frame), each handle's error in body sizes (targets, then pins),
        `reached` and a message when a target is out of plausible reach."""
        return _answer(pose.project(body.model_dump()))

    @router.post(f"{API}/pose/sample", responses=ERRORS)
    def pose_sample(body: PoseSampleIn) -> Response:
        """`count` plausible poses (one frame each), placed and turned like `pose`."""
        return _answer(pose.sample(body.model_dump()))

    @router.post(f"{API}/pose/walk", responses=ERRORS)
    def pose_walk(body: PoseWalkIn) -> Response:
        """In-betweens through the pose space: sum(frames) + 1 frames, the keys included."""
        return _answer(pose.walk(body.model_dump()))

    return router
