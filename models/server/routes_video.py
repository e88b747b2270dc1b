"""The HTTP route of Extract Motion From Video (POST /v1/jobs/extract) and its request model; the
request is decoded and checked by the service (video.py) and runs as a job."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter
from pydantic import Field

from ...kirin_addon.backend.protocol import API, MAX_FPS, MIN_FPS
from ...kirin_addon.backend.protocol_video import MAX_TRACKS, MAX_VIDEO_INDEX
from ...kirin_addon.video.request import MAX_EPOCHS
from .http_limits import OffLoopRoute
from .jobs import JobQueue
from .schema import ERRORS, ArrayIn, JobOut, MeshIn, RigIn, Strict
from .video import ExtractService


class ExtractIn(Strict):
    """Driving video → motion on the rig (armature space). Frames start, start+stride, ... < stop of
    the video (0-based); the result comes back at `fps`."""

    rig: RigIn
    mesh: MeshIn | None = Field(
        None, description="the rig's skinned mesh (its silhouette); null: a capsule proxy"
    )
    video_path: str = Field(
        min_length=1, max_length=4096,
        description="the video file on the backend's machine (a backend elsewhere: a shared path)",
    )
    start: int = Field(0, ge=0, le=MAX_VIDEO_INDEX, description="first video frame (0-based)")
    stop: int | None = Field(None, ge=1, le=MAX_VIDEO_INDEX,
                             description="video frame to stop before; null: the end")
    stride: int = Field(1, ge=1, le=10**6, description="take every stride-th frame")
    keypoints_path: str | None = Field(
        None, min_length=1, max_length=4096,
        description="JSON/CSV keypoints file (frame, joint, x, y, confidence) on the backend's machine",
    )
    tracks: dict[Annotated[str, Field(min_length=1, max_length=256)], ArrayIn] | None = Field(
        None, max_length=MAX_TRACKS,
        description="bone name → (N,2) pixels (x right, y down) per video frame from 0; NaN: not tracked",
    )
    silhouettes: str = Field(
        "background", min_length=1, max_length=4096,
        description="'background' (subtraction; a static or slow camera), 'stills' (each frame on its "
                    "own), 'none', or a mask folder",
    )
    fps: float | None = Field(None, ge=MIN_FPS, le=MAX_FPS, allow_inf_nan=False,
                              description="the scene's frame rate; null: the clip's")
    epochs: int | None = Field(None, ge=1, le=MAX_EPOCHS, description="fit epochs; null: the default")
    idm: bool = Field(False, description="initialise with the rig's inverse-dynamics model (when available)")
    gait: str = Field("auto", min_length=1, max_length=200,
                      description="the gait the fit starts from at the video's stride frequency: 'auto', "
                                  "'none' or words naming one ('gallop', 'a bison galloping')")
    facing: Literal["auto", "left", "right", "toward", "away"] = Field(
        "auto", description="where the creature's head points in the video's first frame")
    mediapipe: bool = Field(False, description="MediaPipe Pose landmarks as keypoints (humanoid rigs; needs "
                                               "the backend's MediaPipe environment: health `mediapipe`)")


def extract_router(extract: ExtractService, queue: JobQueue) -> APIRouter:
    router = APIRouter(route_class=OffLoopRoute)

    @router.post(f"{API}/jobs/extract", status_code=202, response_model=JobOut, responses=ERRORS)
    def submit_extract(body: ExtractIn) -> dict[str, Any]:
        """Queue Extract Motion From Video: fit the rig's motion to a video (keypoints, Movie Clip
        tracks, silhouettes); the result is the motion at `fps` and a report."""
        job = extract.check(body.model_dump(exclude_none=True))
        return queue.submit(extract.work(job), "extract")

    return router
