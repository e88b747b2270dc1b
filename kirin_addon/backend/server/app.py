"""`kirin serve`: the local inference backend of Generate Motion (FastAPI + uvicorn).

Runs in the project's environment (torch, onnxruntime), never in Blender's Python. It binds to
127.0.0.1 on a free port by default, writes a random per-session token to a 0600 file and refuses
every request without it (401) or with a wrong one (403). One worker thread runs the model, loaded
once and kept warm (jobs.py); the HTTP side only checks requests and hands out status and results,
so health and progress answer while a job samples. The OpenAPI schema is at /openapi.json (with the
token too).

Endpoints (all JSON, under /v1): GET health, GET version, POST jobs/generate, jobs/transfer,
jobs/bind and jobs/extract (a driving video → motion on the rig; the video is read from a path on the
backend's machine) (202 + job status), GET jobs, GET jobs/{id}, GET jobs/{id}/result (removes it unless
?keep=true), POST jobs/{id}/cancel, DELETE jobs/{id}, POST shutdown; Pose Space, synchronous (the
answer is the result, no job): POST pose/project (a dragged pose projected onto plausible poses),
pose/sample (plausible poses) and pose/walk (in-betweens through the pose space). Errors are
`{"error": message, "status": code}` with a 4xx for anything a client did wrong.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import importlib.metadata
import ipaddress
import json
import logging
import os
import platform
import secrets
import socket
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import uvicorn
from fastapi import BackgroundTasks, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ...core.creature import FAMILIES
from ...core.rig import MAX_JOINTS
from ...generate.request import MAX_FRAMES, MAX_SEED, MAX_VARIANTS
from ...video.mediapipe_pose import find_mediapipe_python
from ..protocol import (
    API,
    BIND_WEIGHTS,
    MAX_DIMS,
    MAX_EPOCHS,
    MAX_GROUPS,
    MAX_MESH_KEY,
    MAX_POSE_SAMPLES,
    MAX_PROMPT,
    MAX_TARGETS,
    MAX_TRACKS,
    PROTOCOL_VERSION,
)
from .bind import BindingService
from .generate import GenerationService, cuda_providers
from .jobs import JobError, JobQueue
from .pose import PoseService
from .video import ExtractService

log = logging.getLogger("kirin.backend")

MAX_BODY = 512 * 1024 * 1024  # bytes of one request (a dense mesh is a few tens of MB)
LOOPBACK = ("127.0.0.1", "::1", "localhost")


# ----------------------------------------------------------------------------- request schema
# These models document the API (OpenAPI) and reject wrongly typed fields early; the arrays inside
# are checked (shapes, bytes, finiteness) by protocol.py in GenerationService.check.
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ArrayIn(_Strict):
    """An array: base64 of its little-endian C-ordered bytes, with shape and dtype."""

    dtype: Literal["float32", "float64", "int32", "int64", "uint8"]
    shape: list[Annotated[int, Field(ge=0)]] = Field(max_length=MAX_DIMS)
    data: str


class RigIn(_Strict):
    """Armature-space rig: rest (J,4,4) bone matrices (Blender's bone.matrix_local), tails (J,3)."""

    names: list[str] = Field(min_length=1, max_length=MAX_JOINTS)
    parents: list[int] = Field(max_length=MAX_JOINTS, description="parent index per bone, -1 for a root")
    rest: ArrayIn
    tails: ArrayIn
    deform: list[bool] | None = None
    connected: list[bool] | None = None
    local_rest: ArrayIn | None = None


class MeshIn(_Strict):
    """Skinned mesh in the rig's space: vertices (V,3), triangles (F,3), joint_indices/weights (V,K)."""

    vertices: ArrayIn
    triangles: ArrayIn
    joint_indices: ArrayIn
    joint_weights: ArrayIn


class MotionIn(_Strict):
    """root_positions (T,3) armature space, rotations (T,J,4) local quaternions w,x,y,z."""

    fps: float = Field(gt=0, le=1000, allow_inf_nan=False)
    root_positions: ArrayIn
    rotations: ArrayIn
    translations: ArrayIn | None = None


class KeepIn(_Strict):
    """Existing keys to honour (in-betweening): a motion on the rig and the frames of it to keep."""

    motion: MotionIn
    frames: list[int] = Field(min_length=1, max_length=MAX_FRAMES * 64)


class GenerateIn(_Strict):
    prompt: str | None = Field(None, max_length=MAX_PROMPT, description="text; may be null with an image")
    image_path: str | None = Field(
        None, max_length=4096, description="reference image file on the backend's machine"
    )
    image_data: str | None = Field(None, description="reference image file as base64 (backend elsewhere)")
    rig: RigIn
    mesh: MeshIn | None = None
    frames: int = Field(120, ge=1, le=MAX_FRAMES)
    fps: float | None = Field(None, gt=0, le=1000, allow_inf_nan=False, description="default: the model's")
    seed: int = Field(0, ge=0, le=MAX_SEED)
    variants: int = Field(1, ge=1, le=MAX_VARIANTS)
    guidance: float | None = Field(
        None, ge=0, le=100, allow_inf_nan=False, description="default: the model's"
    )
    keep: KeepIn | None = None
    loop: bool = False


class SurfaceIn(_Strict):
    """A mesh: vertices (V,3) and triangles (F,3), in one space shared by the whole request."""

    vertices: ArrayIn
    triangles: ArrayIn


class TransferOptionsIn(_Strict):
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


class TransferIn(_Strict):
    source: TransferSourceIn
    groups: list[GroupName] = Field(min_length=1, max_length=MAX_GROUPS)
    targets: list[TransferTargetIn] = Field(min_length=1, max_length=MAX_TARGETS)
    options: TransferOptionsIn | None = None


class BindIn(_Strict):
    mesh: SurfaceIn
    family: Literal[FAMILIES] | None = Field(None, description="template family; null: detect the best")
    weights: Literal[BIND_WEIGHTS] | None = Field(
        None, description="transfer: the template's weights; heat: bone heat on the mesh; blend: heat pulled "
        "towards the transferred weights; null: the default (blend)"
    )
    options: TransferOptionsIn | None = None


class ExtractIn(_Strict):
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
    start: int = Field(0, ge=0, description="first video frame (0-based)")
    stop: int | None = Field(None, ge=1, description="video frame to stop before; null: the end")
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
        description="'background' (subtraction; a static or slow camera), 'none', or a mask folder",
    )
    fps: float | None = Field(None, gt=0, le=1000, allow_inf_nan=False,
                              description="the scene's frame rate; null: the clip's")
    epochs: int | None = Field(None, ge=1, le=MAX_EPOCHS, description="fit epochs; null: the default")
    idm: bool = Field(False, description="initialise with the rig's inverse-dynamics model (when available)")
    mediapipe: bool = Field(False, description="MediaPipe Pose landmarks as keypoints (humanoid rigs; needs "
                                               "the backend's MediaPipe environment: health `mediapipe`)")


class PoseRangesIn(_Strict):
    """Per-joint ranges (radians, 0..π): the widest swing of each bone from its rest direction and
    twist about it that the rig's own actions show."""

    swing: ArrayIn
    twist: ArrayIn


class PoseRigIn(_Strict):
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


class PoseTargetsIn(_Strict):
    """Joints to move and their targets: points (H,3) in armature space, one per joint."""

    joints: list[int] = Field(max_length=MAX_JOINTS)
    points: ArrayIn


class PoseProjectIn(PoseRigIn):
    pose: MotionIn = Field(description="the current pose: one frame on the rig")
    targets: PoseTargetsIn
    pins: list[int] = Field(
        default_factory=list, max_length=MAX_JOINTS, description="joints kept where they are"
    )
    strength: float | None = Field(
        None,
        allow_inf_nan=False,
        description="how far the prior may move the edit, (0, 1]; default 0.1 relative, 0.4 not",
    )
    relative: bool = Field(
        True, description="the correction relative to the current pose (a drag) or as it is (Project Pose)"
    )


class PoseSampleIn(PoseRigIn):
    pose: MotionIn = Field(description="one frame on the rig: where the samples stand and face")
    count: int = Field(1, description=f"poses to sample, 1..{MAX_POSE_SAMPLES}")
    seed: int = Field(0, description=f"0..{MAX_SEED}")


class PoseWalkIn(PoseRigIn):
    keys: MotionIn = Field(description="keyposes: K frames on the rig")
    frames: list[int] = Field(
        max_length=MAX_FRAMES, description="K-1 frame counts, from each key to the next"
    )
    method: Literal["guided", "latent"] = Field(
        "guided", description="guided (slerp + the prior's correction) or latent (DDIM-inverted keys slerped)"
    )


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


JobId = Annotated[str, PathParam(max_length=64)]
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (401, 403, 404, 409, 422, 429, 503)
}


# ----------------------------------------------------------------------------- the app
def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status, headers=headers)


class TokenAuth:
    """ASGI middleware: every HTTP request (the schema and unknown paths too) needs the token."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        value = headers.get(b"authorization", b"")
        scheme, _, given = value.partition(b" ")
        if not given.strip():  # no header, or "Bearer" with nothing after it
            response = _error(
                401,
                "Missing token: send 'Authorization: Bearer <token>' (the token is in the "
                "file given to kirin serve --token-file).",
                {"WWW-Authenticate": "Bearer"},
            )
        elif scheme.lower() != b"bearer" or not secrets.compare_digest(given.strip(), self.token):
            response = _error(
                403,
                "Wrong token: this backend was started with another one (a new session "
                "writes a new token file).",
            )
        else:
            length = headers.get(b"content-length", b"0")
            if length.isdigit() and int(length) > MAX_BODY:
                response = _error(413, f"The request is {int(length)} bytes; at most {MAX_BODY}.")
            else:
                await self.app(scope, receive, send)
                return
        await response(scope, receive, send)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        location = ".".join(str(p) for p in error.get("loc", ()) if p not in ("body", "query", "path"))
        message = error.get("msg", "invalid")
        value = error.get("input")
        shown = f" (got {value!r})" if isinstance(value, int | float | bool) and len(repr(value)) < 40 else ""
        parts.append(f"{location or 'request'}: {message}{shown}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _version_info() -> dict[str, Any]:
    def version(name: str) -> str | None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    return {
        "kirin": version("kirin"),
        "protocol": PROTOCOL_VERSION,
        "python": platform.python_version(),
        "packages": {
            name: version(name)
            for name in ("numpy", "torch", "onnxruntime", "onnxruntime-gpu", "fastapi", "uvicorn")
        },
    }


def create_app(backend: Backend) -> FastAPI:
    service, queue = backend.service, backend.queue

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        # Runs inside uvicorn's graceful shutdown (also after SIGTERM, which re-raises the signal
        # once serve() returns: nothing after it would run).
        backend.cleanup()

    app = FastAPI(
        title="Kirin backend",
        version=str(PROTOCOL_VERSION),
        lifespan=lifespan,
        description=__doc__,
        docs_url=None,
        redoc_url=None,
    )
    app.add_middleware(TokenAuth, token=backend.token)

    @app.exception_handler(JobError)
    async def job_error(_: Request, exc: JobError) -> JSONResponse:
        return _error(exc.status, exc.message)

    @app.exception_handler(ValueError)  # ProtocolError, RigError: user-facing
    async def value_error(_: Request, exc: ValueError) -> JSONResponse:
        return _error(422, str(exc) or "Invalid request.")

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def internal_error(_: Request, exc: Exception) -> JSONResponse:
        log.exception("request failed")
        return _error(500, f"Internal error in the backend: {type(exc).__name__}: {exc}")

    @app.get(f"{API}/health", responses=_ERRORS)
    def health() -> dict[str, Any]:
        """Liveness and readiness: `status` is "loading" until the model is loaded, then "ok"
        (or "error" with `error` when loading failed)."""
        status = "error" if queue.setup_error else ("ok" if service.model is not None else "loading")
        return {
            "status": status,
            "error": queue.setup_error,
            **service.info(),
            "queue_length": queue.queue_length,
            "running": queue.running,
            "jobs": queue.counts(),
            "pid": os.getpid(),
            "uptime": time.time() - backend.started,
            "protocol": PROTOCOL_VERSION,
            "pose": backend.pose.info(),
            "mediapipe": find_mediapipe_python() is not None,
        }

    @app.get(f"{API}/version", responses=_ERRORS)
    def version() -> dict[str, Any]:
        return _version_info()

    @app.post(f"{API}/jobs/generate", status_code=202, response_model=JobOut, responses=_ERRORS)
    def submit_generate(body: GenerateIn) -> dict[str, Any]:
        """Queue a Generate Motion job; poll GET jobs/{id}, then fetch GET jobs/{id}/result."""
        job = service.check(body.model_dump())
        return queue.submit(service.work(job), "generate")

    @app.post(f"{API}/jobs/transfer", status_code=202, response_model=JobOut, responses=_ERRORS)
    def submit_transfer(body: TransferIn) -> dict[str, Any]:
        """Queue Transfer Weights: the source's vertex-group weights onto each target mesh."""
        job = backend.binding.check_transfer(body.model_dump(exclude_none=True))
        return queue.submit(backend.binding.transfer_work(job), "transfer")

    @app.post(f"{API}/jobs/bind", status_code=202, response_model=JobOut, responses=_ERRORS)
    def submit_bind(body: BindIn) -> dict[str, Any]:
        """Queue Auto-Bind: fit a template skeleton to an unrigged mesh and skin it."""
        job = backend.binding.check_bind(body.model_dump(exclude_none=True))
        return queue.submit(backend.binding.bind_work(job), "bind")

    @app.post(f"{API}/jobs/extract", status_code=202, response_model=JobOut, responses=_ERRORS)
    def submit_extract(body: ExtractIn) -> dict[str, Any]:
        """Queue Extract Motion From Video: fit the rig's motion to a video (keypoints, Movie Clip
        tracks, silhouettes); the result is the motion at `fps` and a report."""
        job = backend.extract.check(body.model_dump(exclude_none=True))
        return queue.submit(backend.extract.work(job), "extract")

    def pose_answer(result: dict[str, Any]) -> Response:
        # Serialised here rather than by FastAPI: the arrays are already base64 strings.
        return Response(json.dumps(result), media_type="application/json")

    @app.post(f"{API}/pose/project", responses=_ERRORS)
    def pose_project(body: PoseProjectIn) -> Response:
        """Project a dragged pose onto plausible poses: `targets` joints reach their points, `pins`
        stay; answers the pose (one frame), each handle's error in body sizes (targets, then pins),
        `reached` and a message when a target is out of plausible reach."""
        return pose_answer(backend.pose.project(body.model_dump()))

    @app.post(f"{API}/pose/sample", responses=_ERRORS)
    def pose_sample(body: PoseSampleIn) -> Response:
        """`count` plausible poses (one frame each), placed and turned like `pose`."""
        return pose_answer(backend.pose.sample(body.model_dump()))

    @app.post(f"{API}/pose/walk", responses=_ERRORS)
    def pose_walk(body: PoseWalkIn) -> Response:
        """In-betweens through the pose space: sum(frames) + 1 frames, the keys included."""
        return pose_answer(backend.pose.walk(body.model_dump()))

    @app.get(f"{API}/jobs", response_model=list[JobOut], responses=_ERRORS)
    def list_jobs() -> list[dict[str, Any]]:
        return queue.list()

    @app.get(f"{API}/jobs/{{job_id}}", response_model=JobOut, responses=_ERRORS)
    def job_status(
        job_id: JobId, wait: Annotated[float, Query(ge=0, le=30, allow_inf_nan=False)] = 0.0
    ) -> dict[str, Any]:
        """The job's state, progress and message; with `wait` (seconds) the answer comes as soon as
        the job has finished, or after `wait` seconds (long polling)."""
        return queue.wait(job_id, wait) if wait > 0 else queue.status(job_id)

    @app.get(f"{API}/jobs/{{job_id}}/result", responses=_ERRORS)
    def job_result(job_id: JobId, keep: Annotated[bool, Query()] = False) -> Response:
        """The result of a done job (per variant: motion arrays, contacts, metrics, report); it is
        removed once fetched unless keep=true. A failed job answers 422 with its error."""
        result = queue.take_result(job_id, remove=not keep)
        # Serialised here rather than by FastAPI: the arrays are already base64 strings.
        return Response(json.dumps({"id": job_id, **result}), media_type="application/json")

    @app.post(f"{API}/jobs/{{job_id}}/cancel", response_model=JobOut, responses=_ERRORS)
    def cancel_job(job_id: JobId) -> dict[str, Any]:
        return queue.cancel(job_id)

    @app.delete(f"{API}/jobs/{{job_id}}", response_model=JobOut, responses=_ERRORS)
    def delete_job(job_id: JobId) -> dict[str, Any]:
        return queue.delete(job_id)

    @app.post(f"{API}/shutdown", status_code=202, responses=_ERRORS)
    def shutdown(tasks: BackgroundTasks) -> dict[str, str]:
        """Graceful stop: open requests finish, queued and running jobs are cancelled."""
        tasks.add_task(backend.request_exit)  # after this response is sent
        return {"status": "shutting down"}

    original = app.openapi

    def openapi() -> dict[str, Any]:  # say in the schema how to authenticate
        schema = original()
        bearer = {"token": {"type": "http", "scheme": "bearer"}}
        schema.setdefault("components", {})["securitySchemes"] = bearer
        schema["security"] = [{"token": []}]
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


# ----------------------------------------------------------------------------- the process
def default_token_file() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    folder = Path(base) / f"kirin-{user}"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if hasattr(os, "getuid"):  # in a shared temp folder, someone else may have made it first
        info = folder.stat()
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise ValueError(
                f"Refusing to write the backend token into {folder}: it is not private to this user. "
                "Remove it, or give --token-file in a private folder."
            )
    return folder / f"backend-{os.getpid()}.token"


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (0600), atomically (a reader never sees half a token)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(handle, text.encode())
    finally:
        os.close(handle)
    os.chmod(temporary, 0o600)  # in case a stale file kept wider bits
    os.replace(temporary, path)


def _bind(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6 and host in ("::", ""):
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ValueError(f"Cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    return sock


def _connect_host(host: str) -> str:
    """The host a client on this machine connects to (a wildcard bind is reached on loopback)."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    try:
        if ipaddress.ip_address(host).version == 6:
            return f"[{host}]"
    except ValueError:
        pass
    return host


def _process_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would send CTRL_C_EVENT on Windows
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        code = ctypes.c_ulong()
        ctypes.windll.kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        ctypes.windll.kernel32.CloseHandle(handle)
        return code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]):
        super().__init__(config)
        self._on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._on_started()


class Backend:
    """One backend: the service, its job queue and the HTTP server on a bound socket."""

    def __init__(
        self,
        service: GenerationService,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        token_file: str | Path | None = None,
        url_file: str | Path | None = None,
        max_jobs: int = 256,
        parent_pid: int | None = None,
        log_level: str = "warning",
        pose: PoseService | None = None,
    ):
        self.service = service
        self.binding = BindingService()
        self.extract = ExtractService()
        # Pose Space embeds joint names with the motion model's text encoder (none while it loads).
        self.pose = pose or PoseService()
        if self.pose.encoder is None:
            self.pose.encoder = self._text_encoder
        self.token = token or secrets.token_urlsafe(32)
        self.queue = JobQueue(max_jobs, setup=service.load)
        self.started = time.time()
        self.host = host
        self.sock = _bind(host, port)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://{_connect_host(host)}:{self.port}"
        self.token_file = Path(token_file) if token_file else default_token_file()
        self.url_file = Path(url_file) if url_file else None
        self.parent_pid = parent_pid
        self.ready = threading.Event()
        self._cleaned = False
        write_private(self.token_file, self.token)
        config = uvicorn.Config(
            create_app(self),
            log_level=log_level,
            access_log=False,
            log_config=None,
            lifespan="on",
            timeout_graceful_shutdown=5,
        )
        self.server = _Server(config, self._started)
        self._thread: threading.Thread | None = None

    def _text_encoder(self) -> Any:
        model = self.service.model
        return None if model is None else getattr(model, "text_encoder", None)

    def _started(self) -> None:
        if self.url_file is not None:  # written last: its presence means "listening"
            write_private(
                self.url_file,
                json.dumps({"url": self.url, "pid": os.getpid(), "token_file": str(self.token_file)}),
            )
        if self.parent_pid:
            threading.Thread(target=self._watch_parent, name="kirin-parent-watch", daemon=True).start()
        self.ready.set()

    def _watch_parent(self) -> None:
        # The add-on stops its backend when Blender quits; this covers a Blender that crashed.
        while not self.server.should_exit:
            if not _process_alive(int(self.parent_pid or 0)):
                log.warning("parent process %s is gone: shutting down", self.parent_pid)
                self.request_exit()
                return
            time.sleep(1.0)

    def serve(self) -> None:
        """Serve until shutdown (endpoint, SIGINT/SIGTERM or the parent's end). Blocking."""
        self.queue.start()
        try:
            self.server.run(sockets=[self.sock])
        finally:
            self.cleanup()

    def start_in_thread(self, timeout: float = 30.0) -> Backend:
        """Serve on a thread (tests, benchmarks); returns once it listens."""
        self._thread = threading.Thread(target=self.serve, name="kirin-backend-http", daemon=True)
        self._thread.start()
        if not self.ready.wait(timeout):
            raise RuntimeError("The backend did not start in time.")
        return self

    def request_exit(self) -> None:
        # Jobs first: a running job stops at its next step and long polls answer before the HTTP
        # side drains its connections.
        self.queue.close()
        self.server.should_exit = True

    def stop(self, timeout: float = 15.0) -> None:
        self.request_exit()
        if self._thread is not None:
            self._thread.join(timeout)

    def cleanup(self) -> None:
        """Cancel every job, stop the worker, remove this session's token and URL files."""
        if self._cleaned:
            return
        self._cleaned = True
        self.queue.stop()
        for path, mine in ((self.token_file, self.token), (self.url_file, self.url)):
            if path is None:
                continue
            with contextlib.suppress(OSError):
                if mine in path.read_text():  # another backend may have taken the path over since
                    path.unlink()
        with contextlib.suppress(OSError):
            self.sock.close()


# ----------------------------------------------------------------------------- command line
def serve(args: argparse.Namespace) -> int:
    """`kirin serve` (arguments: kirin_addon/cli/main.py)."""
    logging.basicConfig(level=args.log_level.upper(), format="kirin serve: %(levelname)s %(message)s")
    if args.device == "cuda" and "CUDAExecutionProvider" not in cuda_providers():
        raise ValueError(
            "--device cuda: onnxruntime has no CUDA provider here (install onnxruntime-gpu "
            "with a matching CUDA), or use --device cpu/auto."
        )
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be 0..65535, got {args.port}")
    if args.threads < 0 or args.max_jobs < 1:
        raise ValueError("--threads must be 0 or more and --max-jobs 1 or more")
    service = GenerationService(args.model, device=args.device, bank=args.bank, threads=args.threads)
    if not (service.model_dir / "model.json").is_file():  # fail now rather than on the first job
        raise ValueError(f"No motion model at {service.model_dir} (model.json missing)")
    pose = PoseService(args.pose_model)  # missing: Pose Space answers 503, the rest works
    backend = Backend(
        service,
        pose=pose,
        host=args.host,
        port=args.port,
        token_file=args.token_file,
        url_file=args.url_file,
        max_jobs=args.max_jobs,
        parent_pid=args.parent_pid,
        log_level=args.log_level,
    )
    if args.host not in LOOPBACK:
        print(
            f"kirin serve: listening on {args.host}, beyond this machine: plain HTTP, the token is the "
            "only guard; use a trusted network or an SSH tunnel.",
            file=sys.stderr,
        )
    print(f"Kirin backend listening on {backend.url} (token in {backend.token_file})", flush=True)
    backend.serve()
    return 0
