"""The add-on's side of the backend over HTTP, one call per feature and the jobs they start: standard
library (+ numpy, which Blender bundles) only (starting and stopping the process: process.py).

    client = process.ensure_backend("/path/to/kirin/.venv/bin/python")   # starts it, or reuses it
    job = client.generate(rig, GenerateRequest("a wolf trotting forward", frames=120, variants=3))
    while not job.poll_once().finished:   # a modal operator: one poll_once per timer tick
        ...
    result = job.result()                 # or, headless: result = job.wait()
    result.variants[0].motion             # a kirin_addon.core.motion.Motion on the rig
    dragged = client.project_pose(rig, pose, {paw: target}, pins=[foot], mesh=mesh, mesh_key=key)
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
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..core.motion import Motion
from ..core.rig import Rig
from ..core.skinning import SkinnedMesh
from ..generate.request import GenerateRequest
from ..pose.space import JointLimits
from .protocol import (
    API,
    UNKNOWN_MESH_KEY_STATUS,
    bind_request,
    extract_request,
    generate_to_json,
    pose_project_request,
    pose_sample_request,
    pose_walk_request,
    transfer_request,
)
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
        poll. A reference image given by path is sent as that path to a backend on this machine and
        as the file's bytes to one elsewhere."""
        image = request.image
        if isinstance(image, str | os.PathLike):
            if self.is_local:
                image = str(Path(image).resolve())
            else:
                try:
                    image = Path(image).read_bytes()
                except OSError as exc:
                    raise BackendError(
                        f"Cannot read the reference image {image}: {exc.strerror or exc}"
                    ) from None
        status = self.submit(generate_to_json(rig, replace(request, image=image), mesh))
        return GenerationJob(self, str(status["id"]), rig.joint_count, int(request.frames),
                             int(request.variants), JobStatus.from_json(status))

    def transfer_weights(
        self,
        source_vertices: np.ndarray,
        source_triangles: np.ndarray,
        groups: Sequence[str],
        joint_indices: np.ndarray,
        joint_weights: np.ndarray,
        targets: Sequence[tuple[str, np.ndarray, np.ndarray]],
        **options: Any,
    ) -> BackendJob:
        """Queue Transfer Weights (all meshes in one space); the job's result is a TransferResult."""
        body = transfer_request(source_vertices, source_triangles, groups, joint_indices, joint_weights,
                                targets, **options)
        sizes = [(str(name), int(np.asarray(v).shape[0])) for name, v, _ in targets]
        status = self.request("POST", "/jobs/transfer", body)
        return BackendJob(self, str(status["id"]), lambda payload: decode_transfer(payload, sizes),
                          JobStatus.from_json(status), "Transfer Weights")

    def auto_bind(
        self, vertices: np.ndarray, triangles: np.ndarray, family: str | None = None,
        weights: str | None = None, **options: Any
    ) -> BackendJob:
        """Queue Auto-Bind of an unrigged mesh (`weights`: "transfer", "heat" or "blend"; None: the
        backend's default); the job's result is a BindResult."""
        body = bind_request(vertices, triangles, family=family, weights=weights, **options)
        count = int(np.asarray(vertices).shape[0])
        status = self.request("POST", "/jobs/bind", body)
        return BackendJob(self, str(status["id"]), lambda payload: decode_bind(payload, count),
                          JobStatus.from_json(status), "Auto-Bind")

    def extract_motion(
        self,
        rig: Rig,
        video: str | os.PathLike,
        *,
        mesh: SkinnedMesh | None = None,
        start: int = 0,
        stop: int | None = None,
        stride: int = 1,
        keypoints: str | os.PathLike | None = None,
        tracks: dict[str, np.ndarray] | None = None,
        silhouettes: str = "background",
        fps: float | None = None,
        epochs: int | None = None,
        idm: bool = False,
        mediapipe: bool = False,
    ) -> BackendJob:
        """Queue Extract Motion From Video on `rig` (armature space); the job's result is an
        ExtractResult at `fps` (None: the video's). The backend reads the video, keypoints file and mask
        folder itself: on this machine they go as absolute paths, to a backend elsewhere as given (a
        path that machine can read). `tracks`: bone → (N,2) pixels per video frame from 0, NaN untracked."""

        def where(path: str | os.PathLike) -> str:
            return str(Path(path).expanduser().resolve()) if self.is_local else str(path)

        masks = silhouettes if silhouettes in ("background", "none") else where(silhouettes)
        body = extract_request(
            rig, where(video), mesh=mesh, start=start, stop=stop, stride=stride,
            keypoints_path=None if keypoints is None else where(keypoints), tracks=tracks,
            silhouettes=masks, fps=fps, epochs=epochs, idm=idm, mediapipe=mediapipe,
        )
        status = self.request("POST", "/jobs/extract", body)
        joints = rig.joint_count
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
        pose: Motion,
        targets: dict[int, np.ndarray],
        pins: Sequence[int] = (),
        mesh: SkinnedMesh | None = None,
        mesh_key: str | None = None,
        strength: float | None = None,
        timeout: float = 10.0,
        relative: bool = True,
        ranges: JointLimits | None = None,
    ) -> PoseResult:
        """Project a dragged pose onto plausible poses: `pose` is the current pose (one frame on
        `rig`), `targets` joint index → armature-space point, `pins` joints kept where they are;
        `relative` False projects the pose itself (Project Pose) instead of the edit of it (a drag);
        `ranges` the rig's own joint ranges (`JointLimits.from_motion` of its actions) to keep to.
        The result has one frame; `handle_error` one value per target (in order), then per pin that
        is not a target; `reached` False with a message when a target is out of plausible reach."""
        joints = [int(j) for j in targets]
        handles = len(joints) + len([p for p in dict.fromkeys(int(p) for p in pins) if p not in joints])

        def build(m: SkinnedMesh | None, k: str | None) -> dict[str, Any]:
            return pose_project_request(
                rig, pose, targets, pins, mesh=m, mesh_key=k, strength=strength, relative=relative,
                ranges=ranges,
            )

        payload = self._pose("/pose/project", build, mesh, mesh_key, timeout)
        return decode_pose(payload, rig.joint_count, 1, handles, "pose projection")

    def sample_poses(
        self,
        rig: Rig,
        pose: Motion,
        count: int = 1,
        seed: int = 0,
        mesh: SkinnedMesh | None = None,
        mesh_key: str | None = None,
        timeout: float = 30.0,
        ranges: JointLimits | None = None,
    ) -> PoseResult:
        """`count` plausible poses (one frame each), standing and facing like `pose` (one frame),
        inside the rig's own joint `ranges` when given."""

        def build(m: SkinnedMesh | None, k: str | None) -> dict[str, Any]:
            return pose_sample_request(rig, pose, count, seed, mesh=m, mesh_key=k, ranges=ranges)

        payload = self._pose("/pose/sample", build, mesh, mesh_key, timeout)
        return decode_pose(payload, rig.joint_count, int(count), None, "pose sample")

    def walk_poses(
        self,
        rig: Rig,
        keys: Motion,
        frames: Sequence[int],
        mesh: SkinnedMesh | None = None,
        mesh_key: str | None = None,
        timeout: float = 60.0,
        method: str = "guided",
        ranges: JointLimits | None = None,
    ) -> PoseResult:
        """In-betweens through the pose space: `keys` (K frames) with frames[i] frames from key i to
        key i+1; the result has sum(frames) + 1 frames, the keys at 0, frames[0], ... `method`:
        "guided" or "latent" (ViPS' walk through DDIM-inverted keys); `ranges` the rig's own joint
        ranges the in-betweens keep to."""
        frames = [int(f) for f in frames]

        def build(m: SkinnedMesh | None, k: str | None) -> dict[str, Any]:
            return pose_walk_request(rig, keys, frames, mesh=m, mesh_key=k, method=method, ranges=ranges)

        payload = self._pose("/pose/walk", build, mesh, mesh_key, timeout)
        return decode_pose(payload, rig.joint_count, sum(frames) + 1, None, "pose walk")

    def status(self, job_id: str, wait: float = 0.0, timeout: float = 10.0) -> JobStatus:
        """The job's status; with `wait` > 0 the backend answers once the job finished or after
        `wait` seconds (long polling)."""
        suffix = f"?wait={min(max(wait, 0.0), 30.0):.3f}" if wait > 0 else ""
        path = f"/jobs/{urllib.parse.quote(job_id)}{suffix}"
        return JobStatus.from_json(self.request("GET", path, timeout=timeout + max(wait, 0.0)))

    def result(self, job_id: str, keep: bool = False) -> dict[str, Any]:
        """The raw result body (removed on the backend unless `keep`)."""
        suffix = "?keep=true" if keep else ""
        return self.request("GET", f"/jobs/{urllib.parse.quote(job_id)}/result{suffix}")

    def cancel(self, job_id: str) -> JobStatus:
        return JobStatus.from_json(self.request("POST", f"/jobs/{urllib.parse.quote(job_id)}/cancel", {}))

    def delete(self, job_id: str) -> JobStatus:
        return JobStatus.from_json(self.request("DELETE", f"/jobs/{urllib.parse.quote(job_id)}"))

    def jobs(self) -> list[JobStatus]:
        return [JobStatus.from_json(j) for j in self.request("GET", "/jobs")]

    def shutdown(self) -> None:
        self.request("POST", "/shutdown", {}, timeout=10.0)


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

    @property
    def finished(self) -> bool:
        return self.status.finished

    def poll_once(self, wait: float = 0.0, timeout: float = 5.0) -> JobStatus:
        """One status request. `wait` 0 (a modal operator's timer) answers at once; `wait` > 0
        blocks up to that long, returning as soon as the job finishes."""
        self.status = self.client.status(self.id, wait=wait, timeout=timeout)
        return self.status

    def result(self) -> Any:
        """The decoded result of a done job (fetched once, then kept here); a failed job raises
        BackendError with its message, a cancelled one JobCancelledError."""
        if self._result is not None:
            return self._result
        if self.status.state == "failed":
            # Fetching a failed job's result answers its error and removes it from the backend.
            try:
                self.client.result(self.id)
            except BackendError as exc:
                raise BackendError(
                    exc.message if exc.status == 422 else (self.status.error or exc.message), exc.status
                ) from None
            raise BackendError(self.status.error or f"{self.title} failed.")
        if self.status.state == "cancelled":
            raise JobCancelledError(f"{self.title} was cancelled.")
        try:
            payload = self.client.result(self.id)
        except BackendError as exc:
            if exc.status == 409 and "cancelled" in exc.message:
                raise JobCancelledError(f"{self.title} was cancelled.", 409) from None
            raise
        self._result = self.decode(payload)
        self.status = JobStatus("done", 1.0, "done")
        return self._result

    def wait(
        self,
        timeout: float | None = None,
        on_progress: Callable[[JobStatus], None] | None = None,
        interval: float = 0.5,
    ) -> Any:
        """Block until the job ends and return its result; on timeout the job is cancelled. Long
        polls of `interval` seconds: the end is seen at once, progress every `interval`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = interval if deadline is None else min(interval, max(deadline - time.monotonic(), 0.0))
            status = self.poll_once(wait=left)
            if on_progress is not None:
                on_progress(status)
            if status.finished:
                return self.result()
            if deadline is not None and time.monotonic() >= deadline:
                with contextlib.suppress(BackendError):
                    self.cancel()
                raise BackendError(f"{self.title} did not finish within {timeout:.0f} s (cancelled).")

    def cancel(self) -> JobStatus:
        self.status = self.client.cancel(self.id)
        return self.status


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
