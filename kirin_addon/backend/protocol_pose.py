"""The wire format of Pose Space (POST /v1/pose/project, /v1/pose/sample, /v1/pose/walk): the requests
(kirin_addon/pose/request.py) as JSON and back, checked on the backend with messages that name the
field at fault. The rig and its mesh (or the `mesh_key` a previous answer gave) travel beside each
request; arrays, numbers and motions as protocol.py encodes them. numpy and the standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.motion import Motion
from ..core.rig import Rig
from ..core.skinning import SkinnedMesh
from ..generate.request import MAX_FRAMES, MAX_SEED
from ..pose.request import WALK_METHODS, PoseProjectRequest, PoseSampleRequest, PoseWalkRequest
from ..pose.space import JointLimits
from .protocol import (
    ProtocolError,
    bounded_number,
    decode_array,
    encode_array,
    mesh_to_json,
    motion_from_json,
    motion_to_json,
    rig_to_json,
    whole_number,
)

MAX_POSE_SAMPLES = 64  # poses one POST /v1/pose/sample may ask for
MAX_MESH_KEY = 128  # characters
# The status of a request whose `mesh_key` the backend does not hold (restarted, or the mesh was
# evicted): the client sends the same request again with the mesh.
UNKNOWN_MESH_KEY_STATUS = 409


# ----------------------------------------------------------------------------- the parts every request has
def _pose_rig(rig: Rig, mesh: SkinnedMesh | None, mesh_key: str | None) -> dict[str, Any]:
    """The rig part of a pose request; the mesh as itself or as the key a previous answer gave."""
    body: dict[str, Any] = {"rig": rig_to_json(rig)}
    if mesh is not None:
        body["mesh"] = mesh_to_json(mesh)
    if mesh_key is not None:
        body["mesh_key"] = str(mesh_key)
    return body


def _with_ranges(body: dict[str, Any], ranges: JointLimits | None) -> dict[str, Any]:
    """A pose request with the rig's own joint ranges (per-joint swing and twist, radians), if any."""
    if ranges is not None:
        body["ranges"] = {part: encode_array(np.asarray(getattr(ranges, part), np.float64), "float64")
                          for part in ("swing", "twist")}
    return body


def ranges_from_json(obj: Any, count: int) -> JointLimits | None:
    """The rig's own joint ranges of a pose request, checked (None when it sends none)."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise ProtocolError("ranges: expected {swing: (J,) array, twist: (J,) array} in radians.")
    limits = [decode_array(obj.get(part), f"ranges.{part}", (count,)) for part in ("swing", "twist")]
    for part, values in zip(("swing", "twist"), limits, strict=True):
        if values.min(initial=0.0) < 0.0 or values.max(initial=0.0) > np.pi:
            raise ProtocolError(f"ranges.{part}: every joint's range is between 0 and π radians.")
    return JointLimits(*limits)


def _one_pose(obj: Any, rig: Rig, what: str) -> Motion:
    motion = motion_from_json(obj, rig.joint_count, what=what)
    if motion.frame_count != 1:
        raise ProtocolError(f"{what}: expected one frame (the current pose), got {motion.frame_count}.")
    return motion


def _joints(obj: Any, count: int, what: str) -> list[int]:
    """A list of distinct joint indices of a `count`-joint rig."""
    if not isinstance(obj, list) or not all(isinstance(j, int) and not isinstance(j, bool) for j in obj):
        raise ProtocolError(f"{what}: expected a list of joint indices.")
    for joint in obj:
        if not 0 <= joint < count:
            raise ProtocolError(f"{what}: joint {joint} is not in the rig (indices 0..{count - 1}).")
    if len(set(obj)) != len(obj) and what != "pins":
        raise ProtocolError(f"{what}: a joint appears twice.")
    return list(obj)


# ----------------------------------------------------------------------------- project
def pose_project_to_json(
    rig: Rig, request: PoseProjectRequest, mesh: SkinnedMesh | None = None, mesh_key: str | None = None
) -> dict[str, Any]:
    """The JSON body of POST /v1/pose/project: the request on `rig`, with its mesh or the key of it."""
    joints = [int(j) for j in request.targets]
    points = np.zeros((0, 3))
    if joints:
        try:
            points = np.array([np.asarray(p, np.float64).reshape(-1) for p in request.targets.values()],
                              np.float64)
        except (TypeError, ValueError):
            raise ProtocolError("targets: expected one (x, y, z) point per joint.") from None
    body = {
        **_pose_rig(rig, mesh, mesh_key),
        "pose": motion_to_json(request.pose, "float64"),
        "targets": {"joints": joints, "points": encode_array(points, "float64")},
        "pins": [int(j) for j in request.pins],
        "relative": bool(request.relative),
    }
    if request.strength is not None:
        body["strength"] = float(request.strength)
    return _with_ranges(body, request.ranges)


def pose_project_from_json(body: dict[str, Any], rig: Rig) -> PoseProjectRequest:
    """A projection's JSON body on `rig` (decoded beside it), checked; its pins distinct and none of
    them a target."""
    count = rig.joint_count
    pose = _one_pose(body.get("pose"), rig, "pose")
    targets = body.get("targets")
    if not isinstance(targets, dict):
        raise ProtocolError("targets: expected {joints: [joint indices], points: (H,3) array}.")
    joints = _joints(targets.get("joints"), count, "targets.joints")
    if not joints:
        raise ProtocolError("targets.joints: give at least one joint to move.")
    points = decode_array(targets.get("points"), "targets.points", (len(joints), 3))
    pins = [p for p in dict.fromkeys(_joints(body.get("pins") or [], count, "pins")) if p not in joints]
    strength = body.get("strength")
    strength = None if strength is None else bounded_number(strength, "strength", 0.0, 1.0)
    relative = body.get("relative", True)
    if not isinstance(relative, bool):
        raise ProtocolError("relative: expected true (a drag: relative to the pose) or false.")
    ranges = ranges_from_json(body.get("ranges"), count)
    return PoseProjectRequest(pose, dict(zip(joints, points, strict=True)), pins, strength, relative, ranges)


# ----------------------------------------------------------------------------- sample
def pose_sample_to_json(
    rig: Rig, request: PoseSampleRequest, mesh: SkinnedMesh | None = None, mesh_key: str | None = None
) -> dict[str, Any]:
    """The JSON body of POST /v1/pose/sample: the request on `rig`, with its mesh or the key of it."""
    body = {
        **_pose_rig(rig, mesh, mesh_key),
        "pose": motion_to_json(request.pose, "float64"),
        "count": int(request.count),
        "seed": int(request.seed),
    }
    return _with_ranges(body, request.ranges)


def pose_sample_from_json(body: dict[str, Any], rig: Rig) -> PoseSampleRequest:
    """A sample request's JSON body on `rig` (decoded beside it), checked."""
    pose = _one_pose(body.get("pose"), rig, "pose")
    count = whole_number(body.get("count", 1), "count", 1, MAX_POSE_SAMPLES)
    seed = whole_number(body.get("seed", 0), "seed", 0, MAX_SEED)
    return PoseSampleRequest(pose, count, seed, ranges_from_json(body.get("ranges"), rig.joint_count))


# ----------------------------------------------------------------------------- walk
def pose_walk_to_json(
    rig: Rig, request: PoseWalkRequest, mesh: SkinnedMesh | None = None, mesh_key: str | None = None
) -> dict[str, Any]:
    """The JSON body of POST /v1/pose/walk: the request on `rig`, with its mesh or the key of it."""
    body = {
        **_pose_rig(rig, mesh, mesh_key),
        "keys": motion_to_json(request.keys, "float64"),
        "frames": [int(f) for f in request.frames],
        "method": request.method,
    }
    return _with_ranges(body, request.ranges)


def _walk_frames(frames: Any, gaps: int) -> Sequence[int]:
    """The frame count from each key to the next: `gaps` whole numbers, each 1 or more, the walk at
    most MAX_FRAMES long."""
    if (
        not isinstance(frames, list)
        or len(frames) != gaps
        or not all(isinstance(f, int) and not isinstance(f, bool) for f in frames)
    ):
        raise ProtocolError(f"frames: expected {gaps} whole number(s), the frames from each key to the next.")
    if min(frames) < 1:
        raise ProtocolError(f"frames: each gap between keys is 1 frame or more, got {min(frames)}.")
    total = sum(frames) + 1
    if total > MAX_FRAMES:
        raise ProtocolError(f"frames: the walk would be {total} frames long; at most {MAX_FRAMES}.")
    return frames


def pose_walk_from_json(body: dict[str, Any], rig: Rig) -> PoseWalkRequest:
    """A walk request's JSON body on `rig` (decoded beside it), checked."""
    keys = motion_from_json(body.get("keys"), rig.joint_count, what="keys")
    if keys.frame_count < 2:
        raise ProtocolError(f"keys: a walk needs two or more keyposes, got {keys.frame_count}.")
    frames = _walk_frames(body.get("frames"), keys.frame_count - 1)
    method = body.get("method", "guided")
    if method not in WALK_METHODS:
        raise ProtocolError(f"method: 'guided' or 'latent', got {method!r}.")
    return PoseWalkRequest(keys, frames, method, ranges_from_json(body.get("ranges"), rig.joint_count))
