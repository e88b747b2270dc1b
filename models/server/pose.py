"""What the backend runs for Pose Space: the pose prior (ViPS, models/pose/sampler.py), loaded on first
use and given to the engine's pipeline (kirin_addon/pose/pipeline.py), and the three synchronous
operations the add-on's pose tools call — project a dragged pose, sample plausible poses, walk the
pose space between keyposes.

A drag sends one projection per mouse move, so none of this is a job: the request is decoded and
checked by protocol_pose.py (a clear 4xx naming the field), the rig's prepared form comes from a small
cache (joint-name embeddings and skin features are the costly part) and the answer is the work itself.
A mesh is sent once: every answer carries the `mesh_key` it is held under, and later requests may
send the key instead of the mesh; a key this backend does not hold (restarted, or the mesh was
evicted) answers UNKNOWN_MESH_KEY_STATUS with a message asking for the mesh again.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...kirin_addon.backend.protocol import (
    ProtocolError,
    encode_array,
    mesh_from_json,
    motion_to_json,
    rig_from_json,
)
from ...kirin_addon.backend.protocol_pose import (
    MAX_MESH_KEY,
    UNKNOWN_MESH_KEY_STATUS,
    pose_project_from_json,
    pose_sample_from_json,
    pose_walk_from_json,
)
from ...kirin_addon.core.motion import Motion
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.skinning import SkinnedMesh
from ...kirin_addon.pose.pipeline import PosePipeline, ProjectOptions
from ...kirin_addon.pose.posed import Pose, PosedRig, pose_from_motion, pose_to_motion, target_to_canonical
from .generate import rig_key
from .jobs import JobError

POSE_RIG_CACHE = 8  # prepared rigs kept (per rig, mesh and whether names were embedded)
POSE_MESH_CACHE = 4  # meshes kept by mesh_key
POSE_BACKENDS = ("auto", "onnx", "torch")


def default_pose_model() -> Path:
    from ..pose.sampler import DEFAULT_POSE_MODEL

    return DEFAULT_POSE_MODEL


def mesh_key(mesh: SkinnedMesh) -> str:
    """The key a mesh is cached under: a hash of its (decoded) arrays."""
    digest = hashlib.sha256(b"kirin-pose-mesh")
    for array in (mesh.vertices, mesh.triangles, mesh.joint_indices, mesh.joint_weights):
        values = np.ascontiguousarray(array)
        digest.update(str(values.shape).encode())
        digest.update(values.tobytes())
    return digest.hexdigest()


class PoseService:
    """The pose prior, loaded on first use, its pipeline and the project / sample / walk operations.

    `encoder` returns the text encoder the motion model already holds (for joint-name embeddings),
    or None while there is none (the prior then runs without names, as it was trained to a fifth
    of the time; such rigs are cached apart and prepared again once the encoder is there)."""

    def __init__(
        self,
        model_dir: str | Path | None = None,
        backend: str = "auto",
        encoder: Callable[[], Any] | None = None,
    ):
        if backend not in POSE_BACKENDS:
            raise ValueError(f"Unknown pose prior backend {backend!r} (one of {', '.join(POSE_BACKENDS)}).")
        self.model_dir = Path(model_dir) if model_dir is not None else default_pose_model()
        self.backend_request = backend
        self.encoder = encoder
        self.model: Any = None  # the PosePrior once loaded
        self._pipeline: Any = None  # the PosePipeline given the loaded prior
        self.backend: str | None = None  # "onnxruntime" or "torch" once loaded
        self.load_seconds: float | None = None
        self._load_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._rigs: OrderedDict[tuple, Any] = OrderedDict()
        self._meshes: OrderedDict[str, SkinnedMesh] = OrderedDict()

    # ------------------------------------------------------------------ model
    @property
    def available(self) -> bool:
        return (self.model_dir / "model.json").is_file()

    def prior(self) -> Any:
        """The loaded PosePrior (loaded now on first use); 503 when there is none."""
        if self.model is not None:
            return self.model
        with self._load_lock:
            if self.model is None:
                if not self.available:
                    raise JobError(
                        f"Pose Space is not available: no pose prior at {self.model_dir} (model.json "
                        "missing). Train one (kirin pose train) or point the backend at its folder.",
                        503,
                    )
                from ..pose.sampler import PosePrior

                started = time.perf_counter()
                try:
                    model = PosePrior.load(self.model_dir, backend=self.backend_request)
                except (ValueError, OSError, KeyError, TypeError, RuntimeError) as exc:
                    raise JobError(
                        f"Pose Space is not available: cannot load the pose prior at {self.model_dir}: {exc}",
                        503,
                    ) from None
                self.backend = "onnxruntime" if type(model.net).__name__ == "OnnxDenoiser" else "torch"
                self.load_seconds = time.perf_counter() - started
                self._pipeline = PosePipeline(model)
                self.model = model
        return self.model

    def pipeline(self) -> PosePipeline:
        """Pose Space's pipeline given the loaded prior (loaded now on first use); 503 when there is none."""
        self.prior()
        return self._pipeline  # set with the model

    def info(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "loaded": self.model is not None,
            "model": str(self.model_dir),
            "backend": self.backend,
            "backend_requested": self.backend_request,
            "load_seconds": self.load_seconds,
            "rigs_cached": len(self._rigs),
        }

    # ------------------------------------------------------------------ rig, mesh, cache
    def _rig_and_mesh(self, body: dict[str, Any]) -> tuple[Rig, SkinnedMesh | None, str | None]:
        rig = rig_from_json(body.get("rig"))
        if body.get("mesh") is not None:
            mesh = mesh_from_json(body["mesh"], rig.joint_count)
            key = mesh_key(mesh)
            with self._cache_lock:
                self._meshes[key] = mesh
                self._meshes.move_to_end(key)
                while len(self._meshes) > POSE_MESH_CACHE:
                    self._meshes.popitem(last=False)
            return rig, mesh, key
        key = body.get("mesh_key")
        if key is None:
            return rig, None, None
        if not isinstance(key, str) or not key or len(key) > MAX_MESH_KEY:
            raise ProtocolError("mesh_key: expected the mesh_key a previous pose answer gave.")
        with self._cache_lock:
            mesh = self._meshes.get(key)
            if mesh is not None:
                self._meshes.move_to_end(key)
        if mesh is None:
            raise JobError(
                "mesh_key: the backend does not hold this mesh (it was restarted or has let it go); "
                "send the mesh again.",
                UNKNOWN_MESH_KEY_STATUS,
            )
        if mesh.joint_indices.size and int(mesh.joint_indices.max()) >= rig.joint_count:
            raise ProtocolError(
                f"mesh_key: that mesh is skinned to bones this rig ({rig.joint_count} bones) does not "
                "have; send the mesh again."
            )
        return rig, mesh, key

    def _names(self, rig: Rig) -> np.ndarray | None:
        """Joint-name embeddings by the motion model's text encoder (as its `encode_rig` embeds them)."""
        encoder = None if self.encoder is None else self.encoder()
        if encoder is None:
            return None
        from ...kirin_addon.core.rig_features import name_words

        return np.asarray(encoder.encode_sentences([name_words(n) for n in rig.names]), np.float32)

    def prepared(self, rig: Rig, mesh: SkinnedMesh | None, key: str | None) -> PosedRig:
        """The rig's PosedRig, cached per rig, mesh and whether names were embedded."""
        pipeline = self.pipeline()
        named = self.encoder is not None and self.encoder() is not None
        cache_key = (rig_key(rig, None), key, named)
        with self._cache_lock:
            if cache_key in self._rigs:
                self._rigs.move_to_end(cache_key)
                return self._rigs[cache_key]
        posed = pipeline.prepare(rig, mesh, self._names(rig) if named else None)
        with self._cache_lock:
            self._rigs[cache_key] = posed
            while len(self._rigs) > POSE_RIG_CACHE:
                self._rigs.popitem(last=False)
        return posed

    # ------------------------------------------------------------------ operations (HTTP thread)
    def project(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST /v1/pose/project: the plausible pose nearest the current one whose `targets` joints
        reach their (armature-space) points with `pins` kept where they are."""
        started = time.perf_counter()
        rig, mesh, key = self._rig_and_mesh(body)
        request = pose_project_from_json(body, rig)
        posed = self.prepared(rig, mesh, key)
        pose = pose_from_motion(posed, request.pose)
        canonical = {j: target_to_canonical(posed, p) for j, p in request.targets.items()}
        result = self.pipeline().project(posed, pose, canonical, pins=request.pins, ranges=request.ranges,
                                         options=ProjectOptions(request.strength, relative=request.relative))
        motion = pose_to_motion(posed, [result.pose], request.pose.fps)
        return self._answer(
            motion, started, key, request.handles, result.handle_error, result.reached, result.message
        )

    def sample(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST /v1/pose/sample: `count` plausible poses, placed and turned like `pose`."""
        started = time.perf_counter()
        rig, mesh, key = self._rig_and_mesh(body)
        request = pose_sample_from_json(body, rig)
        posed = self.prepared(rig, mesh, key)
        pose = pose_from_motion(posed, request.pose)
        deltas = self.pipeline().sample(posed, request.count, seed=request.seed, ranges=request.ranges)
        poses = [Pose(d, pose.root.copy(), pose.yaw, pose.carried) for d in deltas]  # fingers as they were
        return self._answer(pose_to_motion(posed, poses, request.pose.fps), started, key)

    def walk(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST /v1/pose/walk: in-betweens through the pose space, the keys included."""
        started = time.perf_counter()
        rig, mesh, key = self._rig_and_mesh(body)
        request = pose_walk_from_json(body, rig)
        keys = request.keys
        posed = self.prepared(rig, mesh, key)
        poses = [pose_from_motion(posed, keys, k) for k in range(keys.frame_count)]
        walked = self.pipeline().walk(posed, poses, request.frames, method=request.method,
                                      ranges=request.ranges)
        return self._answer(pose_to_motion(posed, walked, keys.fps), started, key)

    def _answer(
        self,
        motion: Motion,
        started: float,
        key: str | None,
        handles: list[int] | None = None,
        handle_error: np.ndarray | None = None,
        reached: bool = True,
        message: str = "",
    ) -> dict[str, Any]:
        if not (np.all(np.isfinite(motion.rotations)) and np.all(np.isfinite(motion.root_positions))):
            raise JobError("The pose prior produced a pose with NaN values (a bug in the backend).", 500)
        return {
            "motion": motion_to_json(motion, "float64"),
            "frames": motion.frame_count,
            "joints": motion.joint_count,
            "handles": list(handles or []),
            "handle_error": None if handle_error is None else encode_array(handle_error, "float64"),
            "reached": bool(reached),
            "message": str(message),
            "seconds": time.perf_counter() - started,
            "mesh_key": key,
            "backend": self.backend,
        }
