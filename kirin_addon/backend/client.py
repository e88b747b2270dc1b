"""The add-on's side of the backend: standard library (+ numpy, which Blender bundles) only.

    client = ensure_backend("/path/to/kirin/.venv/bin/python")   # starts it, or reuses it
    job = client.generate(rig, "a wolf trotting forward", frames=120, variants=3)
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

import atexit
import contextlib
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.motion import Motion
from ..core.rig import Rig
from ..core.skinning import SkinnedMesh
from ..pose.space import JointLimits
from .protocol import (
    API,
    PROTOCOL_VERSION,
    UNKNOWN_MESH_KEY_STATUS,
    ProtocolError,
    bind_request,
    decode_array,
    extract_request,
    generate_request,
    motion_from_json,
    pose_project_request,
    pose_sample_request,
    pose_walk_request,
    rig_from_json,
    transfer_request,
    weights_from_json,
)

SERVE_MODULE = "kirin.kirin_addon.cli"  # `python -m SERVE_MODULE serve ...` in the backend's environment
STOPPED = "The Kirin backend stopped"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


class BackendError(RuntimeError):
    """A backend request that failed; `message` is user-facing, `status` the HTTP status if any."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.status = status


class BackendStopped(BackendError):
    """The backend process ended, or nothing answers at its address."""


class JobCancelledError(BackendError):
    """The job was cancelled (by the user or by a backend shutting down)."""


# ----------------------------------------------------------------------------- results
@dataclass
class JobStatus:
    state: str  # queued, running, done, failed, cancelled
    progress: float  # 0..1
    message: str
    error: str | None = None
    position: int | None = None  # jobs ahead in the queue

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "cancelled")

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> JobStatus:
        return cls(
            str(obj.get("state", "")),
            float(obj.get("progress") or 0.0),
            str(obj.get("message") or ""),
            obj.get("error"),
            obj.get("position"),
        )


@dataclass
class GeneratedVariant:
    motion: Motion  # on the request's rig, armature space, `frames` frames at `fps`
    seed: int
    contacts: np.ndarray  # (T,F) planted feet
    feet: list[str]
    metrics: dict[str, float | None]  # foot_skating, jitter, penetration, bone_length_error
    report: dict[str, Any]  # the model's own report (clean-up, retrieval, seconds)
    within_bounds: bool | None = None  # metrics within the model's per-clip bounds (None: no bounds)


@dataclass
class GenerationResult:
    variants: list[GeneratedVariant]
    frames: int
    fps: float
    device: str
    backend: str
    seconds_model: float
    seconds_job: float
    info: dict[str, Any] = field(default_factory=dict)  # everything else the backend said


def decode_result(payload: dict[str, Any], joints: int, frames: int, variants: int) -> GenerationResult:
    """A result body, checked against what was asked for (a wrong shape is a BackendError)."""
    try:
        items = payload["variants"]
        if not isinstance(items, list) or len(items) != variants:
            raise ProtocolError(
                f"expected {variants} variants, got {len(items) if isinstance(items, list) else 0}"
            )
        out = []
        for i, item in enumerate(items):
            motion = motion_from_json(item["motion"], joints, frames, what=f"variants[{i}].motion")
            feet = [str(f) for f in item.get("feet", [])]
            contacts = decode_array(
                item["contacts"], f"variants[{i}].contacts", (frames, len(feet)), kind="bool"
            )
            out.append(
                GeneratedVariant(
                    motion,
                    int(item["seed"]),
                    contacts,
                    feet,
                    dict(item.get("metrics", {})),
                    dict(item.get("report", {})),
                    None if item.get("within_bounds") is None else bool(item["within_bounds"]),
                )
            )
        info = {k: v for k, v in payload.items() if k != "variants"}
        return GenerationResult(
            out,
            int(payload["frames"]),
            float(payload["fps"]),
            str(payload.get("device")),
            str(payload.get("backend")),
            float(payload.get("seconds_model") or 0.0),
            float(payload.get("seconds_job") or 0.0),
            info,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"The Kirin backend sent a result this add-on cannot read: {exc}") from exc


# ----------------------------------------------------------------------------- the client
@dataclass
class WeightSet:
    """Skin weights of one mesh from the backend: (V,K) group indices and weights, and which vertices
    took the source surface's weights, were inpainted, or fell back to the nearest surface."""

    joint_indices: np.ndarray
    joint_weights: np.ndarray
    matched: np.ndarray
    inpainted: np.ndarray
    fallback: np.ndarray
    stats: dict[str, Any]


@dataclass
class TransferResult:
    groups: list[str]
    targets: dict[str, WeightSet]  # by target name, in request order
    method: str
    seconds: float


@dataclass
class BindResult:
    family: str
    rig: Rig  # the fitted skeleton in the mesh's space (world space in the add-on): rest = bind B_j
    weights: WeightSet  # over the rig's joints
    quality: str  # good / fair / poor
    chamfer: dict[str, Any]
    scores: dict[str, Any]
    method: str
    seconds: float


def decode_weight_set(obj: Any, count: int, groups: int, what: str) -> WeightSet:
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what}: expected an object.")
    indices, weights = weights_from_json(obj, count, groups, what)
    masks = [decode_array(obj.get(k), f"{what}.{k}", (count,), kind="bool")
             for k in ("matched", "inpainted", "fallback")]
    return WeightSet(indices, weights, *masks, dict(obj.get("stats") or {}))


def decode_transfer(payload: dict[str, Any], targets: Sequence[tuple[str, int]]) -> TransferResult:
    """A transfer result, checked against the (name, vertex count) of each target sent."""
    try:
        groups = [str(g) for g in payload["groups"]]
        items = payload["targets"]
        if not isinstance(items, list) or len(items) != len(targets):
            raise ProtocolError(f"expected {len(targets)} targets")
        out = {}
        for item, (name, count) in zip(items, targets, strict=True):
            out[name] = decode_weight_set(item, count, len(groups), f"targets[{name}]")
        return TransferResult(groups, out, str(payload.get("method")), float(payload.get("seconds") or 0.0))
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"The backend sent a transfer result Kirin cannot read: {exc}") from None


def decode_bind(payload: dict[str, Any], count: int) -> BindResult:
    try:
        rig = rig_from_json(payload["rig"], "rig")
        weights = decode_weight_set(payload["weights"], count, rig.joint_count, "weights")
        return BindResult(str(payload["family"]), rig, weights, str(payload.get("quality")),
                          dict(payload.get("chamfer") or {}), dict(payload.get("scores") or {}),
                          str(payload.get("method")), float(payload.get("seconds") or 0.0))
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"The backend sent an Auto-Bind result Kirin cannot read: {exc}") from None


@dataclass
class PoseResult:
    """The answer of a Pose Space request (synchronous: no job)."""

    motion: Motion  # one frame per pose, on the request's rig (local rotations as Blender keys them)
    handle_error: np.ndarray | None  # (H,) body sizes: each target in order, then each pin; None: no handles
    reached: bool  # every handle within tolerance (always True for sample and walk)
    message: str  # why not, for the status bar ("" when reached)
    seconds: float  # server-side compute
    mesh_key: str | None  # send this instead of the mesh next time (None: no mesh)


def decode_pose(payload: Any, joints: int, frames: int, handles: int | None, what: str) -> PoseResult:
    """A pose answer, checked against what was asked for: `frames` poses of `joints` joints and, for a
    projection, one error per handle."""
    try:
        if not isinstance(payload, dict):
            raise ProtocolError("expected an object")
        motion = motion_from_json(payload["motion"], joints, frames, what="motion")
        error = None
        if handles is not None:
            error = decode_array(payload["handle_error"], "handle_error", (handles,))
        reached, message = payload.get("reached", True), payload.get("message") or ""
        key = payload.get("mesh_key")
        if not isinstance(reached, bool):
            raise ProtocolError("reached: expected true or false")
        if not isinstance(message, str) or (key is not None and not isinstance(key, str)):
            raise ProtocolError("message and mesh_key: expected text")
        return PoseResult(motion, error, reached, message, float(payload.get("seconds") or 0.0), key)
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"The backend sent a {what} result Kirin cannot read: {exc}") from None


@dataclass
class ExtractResult:
    """A motion extracted from a driving video."""

    motion: Motion  # on the request's rig, armature space, at the requested fps (the scene's)
    report: dict[str, Any]  # frames, frame rates, evidence used, reprojection error, timings, the fit's own
    reprojection_px: np.ndarray | None = None  # (T,) per clip frame (before resampling)
    camera: Any = None  # the fitted camera as the backend describes it
    seconds: float = 0.0


def decode_extract(payload: dict[str, Any], joints: int, fps: float | None) -> ExtractResult:
    """An extraction result, checked against the rig sent (joints) and the frame rate asked for."""
    try:
        frames = payload["frames"]
        if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
            raise ProtocolError(f"frames: expected a positive whole number, got {frames!r}")
        motion = motion_from_json(payload["motion"], joints, frames, what="motion")
        if fps is not None and abs(motion.fps - float(fps)) > 1e-6:
            raise ProtocolError(f"motion.fps: asked for {fps}, got {motion.fps}")
        report = payload.get("report") or {}
        if not isinstance(report, dict):
            raise ProtocolError("report: expected an object")
        error = None
        if payload.get("reprojection_px") is not None:
            error = decode_array(payload["reprojection_px"], "reprojection_px", (None,), finite=False)
        seconds = float(payload.get("seconds") or 0.0)
        return ExtractResult(motion, report, error, payload.get("camera"), seconds)
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"The backend sent a video extraction result Kirin cannot read: {exc}") from None


class BackendClient:
    """HTTP client of one backend (`url`, `token`). `process` is set when this add-on started it,
    so that a dead process is told apart from an unreachable address."""

    def __init__(
        self, url: str, token: str, *, timeout: float = 120.0, process: BackendProcess | None = None
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
        """POST a generate request body (protocol.generate_request); the job's status."""
        return self.request("POST", "/jobs/generate", body)

    def generate(
        self,
        rig: Rig,
        prompt: str | None,
        *,
        mesh: SkinnedMesh | None = None,
        image: str | None = None,
        frames: int = 120,
        fps: float | None = None,
        seed: int = 0,
        variants: int = 1,
        guidance: float | None = None,
        keep: Motion | None = None,
        keep_frames: Sequence[int] | np.ndarray | None = None,
        loop: bool = False,
    ) -> GenerationJob:
        """Queue Generate Motion on `rig`; returns at once with the job to poll. A reference image
        is sent by path to a backend on this machine and as its bytes to one elsewhere."""
        image_path = image_data = None
        if image is not None:
            if self.is_local:
                image_path = str(Path(image).resolve())
            else:
                try:
                    image_data = Path(image).read_bytes()
                except OSError as exc:
                    raise BackendError(
                        f"Cannot read the reference image {image}: {exc.strerror or exc}"
                    ) from None
        body = generate_request(
            rig,
            prompt,
            mesh=mesh,
            image_path=image_path,
            image_data=image_data,
            frames=frames,
            fps=fps,
            seed=seed,
            variants=variants,
            guidance=guidance,
            keep=keep,
            keep_frames=keep_frames,
            loop=loop,
        )
        status = self.submit(body)
        return GenerationJob(
            self, str(status["id"]), rig.joint_count, int(frames), int(variants), JobStatus.from_json(status)
        )

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


# ----------------------------------------------------------------------------- the process
class BackendProcess:
    """A backend this add-on started: its process, address, token and log."""

    def __init__(self, popen: subprocess.Popen, url: str, token: str, folder: Path, key: tuple = ()):
        self.popen = popen
        self.url = url
        self.token = token
        self.folder = folder  # private (0700): token file, URL file, log
        self.key = key
        self.client = BackendClient(url, token, process=self)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def exit_description(self) -> str:
        code = self.popen.poll()
        if code is None:
            return "still running"
        if code < 0:
            return f"killed by signal {-code}"
        return f"exit code {code}"

    @property
    def log_file(self) -> Path:
        return self.folder / "backend.log"

    def log_excerpt(self, chars: int = 1500) -> str:
        try:
            text = self.log_file.read_text(errors="replace")[-chars:].strip()
        except OSError:
            return ""
        return f"\nBackend log ({self.log_file}):\n{text}" if text else ""

    def stop(self, timeout: float = 10.0) -> None:
        """Graceful shutdown, then terminate, then kill; removes the private folder."""
        if self.alive:
            with contextlib.suppress(BackendError):
                self.client.shutdown()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.terminate()
                try:
                    self.popen.wait(5.0)
                except subprocess.TimeoutExpired:
                    self.popen.kill()
                    self.popen.wait(5.0)
        else:
            self.popen.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _child_env(env: dict[str, str] | None) -> dict[str, str]:
    if env is not None:
        return dict(env)
    out = dict(os.environ)
    # Blender's own Python settings must not leak into another interpreter.
    for name in ("PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONEXECUTABLE"):
        out.pop(name, None)
    out["PYTHONUNBUFFERED"] = "1"
    return out


def start_backend(
    python_executable: str | os.PathLike | None = None,
    *,
    device: str = "auto",
    host: str = "127.0.0.1",
    port: int = 0,
    threads: int = 0,
    extra_args: Sequence[str] = (),
    command: Sequence[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
    wait_model: bool = False,
    cwd: str | None = None,
) -> BackendProcess:
    """Launch `python -m kirin.kirin_addon.cli serve` (or `command`, e.g. the `kirin` entry point)
    with a private token file, and wait until it answers (and, with `wait_model`, until its model
    is loaded). The backend ends itself when this process ends."""
    folder = Path(tempfile.mkdtemp(prefix="kirin-backend-"))  # 0700
    token_file, url_file, log_file = folder / "token", folder / "url.json", folder / "backend.log"
    base = list(command) if command else [str(python_executable or sys.executable), "-m", SERVE_MODULE]
    args = base + [
        "serve",
        "--host",
        host,
        "--port",
        str(port),
        "--token-file",
        str(token_file),
        "--url-file",
        str(url_file),
        "--device",
        device,
        "--parent-pid",
        str(os.getpid()),
    ]
    if threads:
        args += ["--threads", str(threads)]
    args += list(extra_args)
    flags = getattr(subprocess, "CREATE_NO_WINDOW", 0) if os.name == "nt" else 0
    with open(log_file, "wb") as log:
        try:
            popen = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_child_env(env),
                cwd=cwd,
                creationflags=flags,
            )
        except OSError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise BackendError(
                f"Cannot start the Kirin backend with {base[0]}: {exc.strerror or exc}. "
                "Set the backend's Python in the add-on preferences."
            ) from None
    process = BackendProcess(popen, "", "", folder)
    deadline = time.monotonic() + timeout
    try:
        while not url_file.exists():  # written once the server listens (after the token file)
            if not process.alive:
                raise BackendStopped(
                    f"{STOPPED} while starting ({process.exit_description()}).{process.log_excerpt()}"
                )
            if time.monotonic() > deadline:
                raise BackendError(
                    f"The Kirin backend did not start within {timeout:.0f} s.{process.log_excerpt()}"
                )
            time.sleep(0.05)
        process.url = json.loads(url_file.read_text())["url"]
        process.token = token_file.read_text().strip()
        process.client = BackendClient(process.url, process.token, process=process)
        health = process.client.health()
        if health.get("protocol") != PROTOCOL_VERSION:
            raise BackendError(
                f"The Kirin backend speaks protocol {health.get('protocol')}; this add-on "
                f"speaks {PROTOCOL_VERSION}: update one of them."
            )
        if wait_model:
            process.client.wait_ready(max(deadline - time.monotonic(), 1.0))
    except BaseException:
        _discard(process)
        raise
    return process


def _discard(process: BackendProcess) -> None:
    if process.alive:
        process.popen.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.popen.wait(5.0)
    shutil.rmtree(process.folder, ignore_errors=True)


# ----------------------------------------------------------------------------- one backend per add-on
_current: BackendProcess | None = None
_current_lock = threading.Lock()
_atexit_registered = False


def ensure_backend(
    python_executable: str | os.PathLike | None = None,
    *,
    url: str | None = None,
    token: str | None = None,
    token_file: str | os.PathLike | None = None,
    device: str = "auto",
    timeout: float = 120.0,
    **options: Any,
) -> BackendClient:
    """A client of a working backend. With `url` (a running backend, maybe a GPU box elsewhere) it
    only checks that one answers; otherwise it reuses the backend this process started if it is
    alive and answers, else starts a new one (stopped when this process exits, or by `stop_backend`)."""
    global _current, _atexit_registered
    if url:
        if token is None:
            if token_file is None:
                raise BackendError("Connecting to a running Kirin backend needs its token (or token file).")
            try:
                token = Path(token_file).read_text().strip()
            except OSError as exc:
                raise BackendError(
                    f"Cannot read the backend token file {token_file}: {exc.strerror}"
                ) from None
        client = BackendClient(url, token)
        client.health()
        return client
    key = (str(python_executable or sys.executable), device, tuple(sorted(options.items())))
    with _current_lock:
        if _current is not None:
            if _current.alive and _current.key == key:
                try:
                    _current.client.health()
                    return _current.client
                except BackendError:
                    pass
            _current.stop(timeout=5.0)
            _current = None
        _current = start_backend(python_executable, device=device, timeout=timeout, **options)
        _current.key = key
        if not _atexit_registered:
            atexit.register(stop_backend)
            _atexit_registered = True
        return _current.client


def current_backend() -> BackendProcess | None:
    return _current


def stop_backend() -> None:
    """Stop the backend this process started (Blender quitting, the add-on unregistering)."""
    global _current
    with _current_lock:
        if _current is not None:
            _current.stop()
            _current = None
