"""The add-on's side of the backend over HTTP, one call per feature and the jobs they start: standard
library (+ numpy, which Blender bundles) only (starting and stopping the process: process.py).

    client = process.ensure_backend("/path/to/kirin/.venv/bin/python")   # starts it, or reuses it
    job = client.generate(rig, GenerateRequest("a wolf trotting forward", frames=120, variants=3))
    while not job.poll_once().finished:   # a modal operator: one poll_once per timer tick
        ...
    result = job.result()                 # or, headless: result = job.wait()
    result.variants[0].motion             # a kirin_addon.core.motion.Motion on the rig
    dragged = client.project_pose(rig, PoseProjectRequest(pose, {paw: target}, pins=[foot]), mesh, key)
    key = dragged.mesh_key                # Pose Space answers at once; the key spares resending the mesh

Every failure is a `BackendError` whose message can go to Blender's status bar as is; a backend
that died or cannot be reached is a `BackendStopped` ("The Kirin backend stopped ...").
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..bind.request import BindRequest, TransferRequest
from ..core.rig import Rig
from ..core.skinning import SkinnedMesh
from ..generate.request import GenerateRequest
from ..pose.request import PoseProjectRequest, PoseSampleRequest, PoseWalkRequest
from ..video.request import SILHOUETTE_SOURCES, ExtractRequest
from .protocol import API, MAX_IMAGE_BYTES, generate_to_json
from .protocol_bind import bind_to_json, transfer_to_json
from .protocol_pose import (
    UNKNOWN_MESH_KEY_STATUS,
    pose_project_to_json,
    pose_sample_to_json,
    pose_walk_to_json,
)
from .protocol_video import extract_to_json
from .results import (
    BackendError,
    BackendStopped,
    GenerationResult,
    JobCancelledError,
    JobStatus,
    PoseResult,
    decode_bind,
    decode_extract,
    decode_pose,
    decode_result,
    decode_transfer,
)

STOPPED = "The Kirin backend stopped"
FORGET_TIMEOUT = 2.0  # seconds a job's deletion may take (it is given up on: nothing waits for it)


class StartedProcess(Protocol):
    """What the client asks of a backend process this add-on started (process.BackendProcess)."""

    popen: subprocess.Popen

    @property
    def alive(self) -> bool: ...

    def exit_description(self) -> str: ...

    def log_excerpt(self, chars: int = 1500) -> str: ...


class BackendClient:
    """HTTP client of one backend (`url`, `token`). `process` is set when this add-on started it,
    so that a dead process is told apart from an unreachable address."""

    def __init__(
        self, url: str, token: str, *, timeout: float = 120.0, process: StartedProcess | None = None
    ):
        self.url = url.rstrip("/")
        self.token = token.strip()
        self.timeout = timeout
        self.process = process
        # No proxies: the backend is on loopback or a box on the local network, and a desktop's
        # HTTP(S)_PROXY would otherwise be asked for 127.0.0.1.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @property
    def is_local(self) -> bool:
        return urllib.parse.urlsplit(self.url).hostname in ("127.0.0.1", "localhost", "::1")

    # ------------------------------------------------------------------ transport
    def request(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + API + path, data=data, method=method, headers=headers)
        try:
            with self._opener.open(req, timeout=self.timeout if timeout is None else timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise self._http_error(exc) from None
        except (
            urllib.error.URLError,
            ConnectionError,
            http.client.HTTPException,
            TimeoutError,
            OSError,
        ) as exc:
            raise self._unreachable(exc) from None
        try:
            return json.loads(payload) if payload else None
        except ValueError:
            raise BackendError(f"The Kirin backend at {self.url} sent something that is not JSON.") from None

    def _http_error(self, exc: urllib.error.HTTPError) -> BackendError:
        try:
            body = json.loads(exc.read() or b"{}")
            message = body.get("error") or body.get("detail") or exc.reason
        except (ValueError, OSError, AttributeError):
            message = exc.reason
        if exc.code == 401:
            message = f"The Kirin backend refused the request: no token ({message})"
        elif exc.code == 403:
            message = f"The Kirin backend refused the token: {message}"
        return BackendError(str(message), exc.code)

    def _unreachable(self, exc: BaseException) -> BackendError:
        reason = getattr(exc, "reason", exc)
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.popen.wait(0.5)  # a killed process may take a moment to be reaped
        if self.process is not None and not self.process.alive:
            return BackendStopped(
                f"{STOPPED} ({self.process.exit_description()}). "
                f"Generate again to start a new one.{self.process.log_excerpt()}"
            )
        if isinstance(reason, TimeoutError):
            return BackendError(f"The Kirin backend at {self.url} did not answer in time.")
        return BackendStopped(
            f"{STOPPED}: nothing answers at {self.url} ({reason}). "
            "Generate again to start a new one, or check the backend URL in the preferences."
        )

    # ------------------------------------------------------------------ endpoints
    def health(self, timeout: float = 5.0) -> dict[str, Any]:
        return self.request("GET", "/health", timeout=timeout)

    def version(self) -> dict[str, Any]:
        return self.request("GET", "/version", timeout=10.0)

    def wait_ready(self, timeout: float = 120.0, interval: float = 0.1) -> dict[str, Any]:
        """Block until the model is loaded (health "ok"); BackendError when loading failed."""
        deadline = time.monotonic() + timeout
        while True:
            health = self.health()
            if health.get("status") == "ok":
                return health
            if health.get("status") == "error":
                raise BackendError(f"The Kirin backend could not load its model: {health.get('error')}")
            if time.monotonic() > deadline:
                raise BackendError(f"The Kirin backend did not load its model within {timeout:.0f} s.")
            time.sleep(interval)

    def submit(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST a generate request body (protocol.generate_to_json); the job's status."""
        return self.request("POST", "/jobs/generate", body)

    def generate(self, rig: Rig, request: GenerateRequest, mesh: SkinnedMesh | None = None) -> GenerationJob:
        """Queue Generate Motion on `rig` (and its skinned `mesh`); returns at once with the job to
        poll. A reference image given by path travels as the file's bytes: the backend reads no file
        outside the folders it was allowed, on this machine or elsewhere."""
        image = request.image
        if isinstance(image, str | os.PathLike):
            image = _image_bytes(Path(image))
        status = self.submit(generate_to_json(rig, replace(request, image=image), mesh))
        return GenerationJob(self, str(status["id"]), rig.joint_count, int(request.frames),
                             int(request.variants), JobStatus.from_json(status))

    def transfer_weights(self, request: TransferRequest) -> BackendJob:
        """Queue Transfer Weights (all meshes in one space); the job's result is a TransferResult."""
        body = transfer_to_json(request)
        sizes = [(str(name), int(np.asarray(v).shape[0])) for name, v, _ in request.targets]
        status = self.request("POST", "/jobs/transfer", body)
        return BackendJob(self, str(status["id"]), lambda payload: decode_transfer(payload, sizes),
                          JobStatus.from_json(status), "Transfer Weights")

    def auto_bind(self, request: BindRequest) -> BackendJob:
        """Queue Auto-Bind of an unrigged mesh; the job's result is a BindResult."""
        body = bind_to_json(request)
        count = int(np.asarray(request.vertices).shape[0])
        status = self.request("POST", "/jobs/bind", body)
        return BackendJob(self, str(status["id"]), lambda payload: decode_bind(payload, count),
                          JobStatus.from_json(status), "Auto-Bind")

    def extract_motion(
        self, rig: Rig, request: ExtractRequest, mesh: SkinnedMesh | None = None
    ) -> BackendJob:
        """Queue Extract Motion From Video on `rig` (armature space; its skinned `mesh`, None: a capsule
        proxy); the job's result is an ExtractResult at the request's `fps` (None: the video's). The
        backend reads the video, keypoints file and mask folder itself: on this machine they go as
        absolute paths, to a backend elsewhere as given (a path that machine can read)."""

        def where(path: str | os.PathLike) -> str:
            return str(Path(path).expanduser().resolve()) if self.is_local else str(path)

        silhouettes = request.silhouettes
        sent = replace(
            request,
            video=where(request.video),
            keypoints=None if request.keypoints is None else where(request.keypoints),
            silhouettes=silhouettes if silhouettes in SILHOUETTE_SOURCES else where(silhouettes),
        )
        status = self.request("POST", "/jobs/extract", extract_to_json(rig, sent, mesh))
        joints, fps = rig.joint_count, request.fps
        return BackendJob(self, str(status["id"]), lambda payload: decode_extract(payload, joints, fps),
                          JobStatus.from_json(status), "Extract Motion From Video")

    # ------------------------------------------------------------------ Pose Space (synchronous)
    def _pose(
        self,
        path: str,
        build: Callable[[SkinnedMesh | None, str | None], dict[str, Any]],
        mesh: SkinnedMesh | None,
        mesh_key: str | None,
        timeout: float,
    ) -> Any:
        """POST a pose request. With `mesh_key` the mesh is not sent; if the backend no longer holds
        that key and `mesh` was given, the request is sent again with the mesh."""
        try:
            return self.request("POST", path, build(None if mesh_key else mesh, mesh_key or None), timeout)
        except BackendError as exc:
            if not mesh_key or mesh is None or exc.status != UNKNOWN_MESH_KEY_STATUS:
                raise
        return self.request("POST", path, build(mesh, None), timeout)

    def project_pose(
        self,
        rig: Rig,
        request: PoseProjectRequest,
        mesh: SkinnedMesh | None = None,
        mesh_key: str | None = None,
        timeout: float = 10.0,
    ) -> PoseResult:
        """Project a dragged pose onto plausible poses (the request on `rig`; its skinned `mesh`, or the
        `mesh_key` a previous answer gave for it). The result has one frame; `handle_error` one value
        per target (in order), then per pin that is not a target; `reached` False with a message when
        a target is out of plausible reach."""

        def build(m: SkinnedMesh | None, k: str | None) -> dict[str, Any]:
            return pose_project_to_json(rig, request, m, k)

        payload = self._pose("/pose/project", build, mesh, mesh_key, timeout)
        return decode_pose(payload, rig.joint_count, 1, len(request.handles), "pose projection")

    def sample_poses(
        self,
        rig: Rig,
        request: PoseSampleRequest,
        mesh: SkinnedMesh | None = None,
        mesh_key: str | None = None,
        timeout: float = 30.0,
    ) -> PoseResult:
        """`request.count` plausible poses (one frame each), standing and facing like its pose."""

        def build(m: SkinnedMesh | None, k: str | None) -> dict[str, Any]:
            return pose_sample_to_json(rig, request, m, k)

        payload = self._pose("/pose/sample", build, mesh, mesh_key, timeout)
        return decode_pose(payload, rig.joint_count, int(request.count), None, "pose sample")

    def walk_poses(
        self,
        rig: Rig,
        request: PoseWalkRequest,
        mesh: SkinnedMesh | None = None,
        mesh_key: str | None = None,
        timeout: float = 60.0,
    ) -> PoseResult:
        """In-betweens through the pose space: sum(request.frames) + 1 frames, the keys at 0,
        frames[0], ..."""
        request = replace(request, frames=[int(f) for f in request.frames])

        def build(m: SkinnedMesh | None, k: str | None) -> dict[str, Any]:
            return pose_walk_to_json(rig, request, m, k)

        payload = self._pose("/pose/walk", build, mesh, mesh_key, timeout)
        return decode_pose(payload, rig.joint_count, sum(request.frames) + 1, None, "pose walk")

    def status(self, job_id: str, wait: float = 0.0, timeout: float = 10.0) -> JobStatus:
        """The job's status; with `wait` > 0 the backend answers once the job finished or after
        `wait` seconds (long polling)."""
        suffix = f"?wait={min(max(wait, 0.0), 30.0):.3f}" if wait > 0 else ""
        path = f"/jobs/{urllib.parse.quote(job_id)}{suffix}"
        return JobStatus.from_json(self.request("GET", path, timeout=timeout + max(wait, 0.0)))

    def result(self, job_id: str) -> dict[str, Any]:
        """The raw result body (kept on the backend until deleted or expired: it may be fetched again)."""
        return self.request("GET", f"/jobs/{urllib.parse.quote(job_id)}/result")

    def cancel(self, job_id: str) -> JobStatus:
        """Cancel the job and keep it on the backend (its status can still be asked for)."""
        return JobStatus.from_json(self.request("POST", f"/jobs/{urllib.parse.quote(job_id)}/cancel", {}))

    def delete(self, job_id: str, timeout: float | None = None) -> JobStatus:
        """Cancel the job if it has not finished and remove it from the backend, its result too."""
        path = f"/jobs/{urllib.parse.quote(job_id)}"
        return JobStatus.from_json(self.request("DELETE", path, timeout=timeout))

    def jobs(self) -> list[JobStatus]:
        return [JobStatus.from_json(j) for j in self.request("GET", "/jobs")]

    def shutdown(self) -> None:
        self.request("POST", "/shutdown", {}, timeout=10.0)


def _image_bytes(path: Path) -> bytes:
    """A reference image file's bytes, refused past the size a request may carry."""
    try:
        size = path.stat().st_size
        if size > MAX_IMAGE_BYTES:
            raise BackendError(f"The reference image {path.name} is {size / 2**20:.0f} MiB; at most "
                               f"{MAX_IMAGE_BYTES // 2**20} MiB.")
        return path.read_bytes()
    except OSError as exc:
        raise BackendError(f"Cannot read the reference image {path}: {exc.strerror or exc}") from None


class BackendJob:
    """One backend job. `poll_once()` is one short request and never blocks for long (a modal
    operator calls it on a timer); `wait()` blocks (scripts, headless runs). `decode` turns the
    result body into the job's result object; `title` names the job in messages."""

    title = "The job"

    def __init__(
        self,
        client: BackendClient,
        job_id: str,
        decode: Callable[[dict[str, Any]], Any],
        status: JobStatus | None = None,
        title: str | None = None,
    ):
        self.client = client
        self.id = job_id
        self.decode = decode
        self.title = title or self.title
        self.status = status or JobStatus("queued", 0.0, "queued")
        self._result: Any = None
        self._forgotten = False  # deleted on the backend (fetched, cancelled or given up)
        self._given_up: BackendError | None = None  # the poll error that ended this job

    @property
    def finished(self) -> bool:
        return self.status.finished

    def poll_once(self, wait: float = 0.0, timeout: float = 5.0) -> JobStatus:
        """One status request. `wait` 0 (a modal operator's timer) answers at once; `wait` > 0
        blocks up to that long, returning as soon as the job finishes. A job this client cancelled
        answers "cancelled" without asking; a poll that fails gives the job up (it is deleted on the
        backend, when the backend still answers) and raises, then and at every later poll."""
        if self._given_up is not None:
            raise self._given_up
        if self._forgotten:
            return self.status
        try:
            self.status = self.client.status(self.id, wait=wait, timeout=timeout)
        except BackendError as exc:
            self._given_up = exc
            self._forget()
            raise
        return self.status

    def result(self) -> Any:
        """The decoded result of a done job (fetched once, then kept here, and deleted on the
        backend); a failed job raises BackendError with its message, a cancelled one
        JobCancelledError."""
        if self._result is not None:
            return self._result
        if self.status.state == "cancelled":
            self._forget()
            raise JobCancelledError(f"{self.title} was cancelled.")
        if self.status.state == "failed":
            error = self._failure()
            self._forget()
            raise error
        try:
            payload = self.client.result(self.id)
        except BackendError as exc:
            if exc.status == 409 and "cancelled" not in exc.message:
                raise  # not finished yet: the job goes on
            self._forget()
            if exc.status == 409:
                raise JobCancelledError(f"{self.title} was cancelled.", 409) from None
            raise
        try:
            self._result = self.decode(payload)
        finally:
            self._forget()
        self.status = JobStatus("done", 1.0, "done")
        return self._result

    def _failure(self) -> BackendError:
        """A failed job's error, as its result answers it (a 422 with the message)."""
        try:
            self.client.result(self.id)
        except BackendError as exc:
            return BackendError(
                exc.message if exc.status == 422 else (self.status.error or exc.message), exc.status
            )
        return BackendError(self.status.error or f"{self.title} failed.")

    def wait(
        self,
        timeout: float | None = None,
        on_progress: Callable[[JobStatus], None] | None = None,
        interval: float = 0.5,
    ) -> Any:
        """Block until the job ends and return its result; on timeout the job is cancelled (and
        deleted). Long polls of `interval` seconds: the end is seen at once, progress every `interval`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = interval if deadline is None else min(interval, max(deadline - time.monotonic(), 0.0))
            status = self.poll_once(wait=left)
            if on_progress is not None:
                on_progress(status)
            if status.finished:
                return self.result()
            if deadline is not None and time.monotonic() >= deadline:
                self.cancel()
                raise BackendError(f"{self.title} did not finish within {timeout:.0f} s (cancelled).")

    def cancel(self) -> JobStatus:
        """Cancel the job and delete it on the backend (Esc, a time-out): nothing of it stays there.
        From then on this job is "cancelled"; a backend that is gone has nothing left to cancel."""
        if not self.status.finished:
            self.status = JobStatus("cancelled", self.status.progress, "cancelled")
        self._forget()
        return self.status

    def _forget(self) -> None:
        """Delete the job on the backend, once; a backend that does not answer has nothing to keep."""
        if self._forgotten:
            return
        self._forgotten = True
        with contextlib.suppress(BackendError):
            self.client.delete(self.id, timeout=FORGET_TIMEOUT)


class GenerationJob(BackendJob):
    """A generate job; its result is a GenerationResult checked against what was asked for."""

    title = "Generate Motion"

    def __init__(
        self,
        client: BackendClient,
        job_id: str,
        joints: int,
        frames: int,
        variants: int,
        status: JobStatus | None = None,
    ):
        self.joints, self.frames, self.variants = joints, frames, variants
        super().__init__(client, job_id, self._decode, status)

    def _decode(self, payload: dict[str, Any]) -> GenerationResult:
        return decode_result(payload, self.joints, self.frames, self.variants)
