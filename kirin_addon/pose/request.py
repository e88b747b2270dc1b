"""What the Pose Space requests ask the pose prior for, defined once for every layer that carries them:
the add-on's pose tools build them, the client sends them (kirin_addon/backend/protocol_pose.py encodes
them, and decodes and checks them on the backend, naming the field at fault) and the backend's service
answers them.

Three small requests, one per operation: project a (dragged) pose onto plausible poses, sample
plausible poses, walk the pose space between keyposes. The rig, its skinned mesh (or the key a
previous answer gave for it) travel beside the request. numpy and the standard library only: it is
imported inside Blender.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.motion import Motion
from .space import JointLimits

# How a walk goes from key to key: "guided" (slerp + the prior's correction) or "latent" (ViPS' walk
# through DDIM-inverted keys, pipeline.py).
WALK_METHODS = ("guided", "latent")


@dataclass
class PoseProjectRequest:
    """Project a pose onto plausible poses: `pose` is the current pose (one frame on the rig),
    `targets` joint index → armature-space point for the joints to move, `pins` the joints kept
    where they are. `strength` is how far the prior may move the edit, in (0, 1] (None: the
    backend's default); `relative` takes the prior's correction relative to the current pose (a
    drag) or, False, projects the pose as it is (Project Pose). `ranges`: the rig's own joint ranges
    to keep to (per-joint swing and twist limits, as `JointLimits.from_motion` measures them on the
    rig's actions; None: none)."""

    pose: Motion
    targets: dict[int, np.ndarray | Sequence[float]]
    pins: Sequence[int] = ()
    strength: float | None = None
    relative: bool = True
    ranges: JointLimits | None = None

    @property
    def handles(self) -> list[int]:
        """The joints the answer reports an error for: each target in order, then each pin that is
        not a target."""
        joints = [int(j) for j in self.targets]
        return joints + [p for p in dict.fromkeys(int(p) for p in self.pins) if p not in joints]


@dataclass
class PoseSampleRequest:
    """`count` plausible poses placed and turned like `pose` (one frame on the rig), drawn with
    `seed`, inside the rig's own joint `ranges` when given."""

    pose: Motion
    count: int = 1
    seed: int = 0
    ranges: JointLimits | None = None


@dataclass
class PoseWalkRequest:
    """In-betweens through the pose space: `keys` (K keyposes on the rig) with frames[i] frames from
    key i to key i+1 (K − 1 numbers), walked by `method` (one of WALK_METHODS) inside the rig's own
    joint `ranges` when given; the answer has sum(frames) + 1 frames, the keys at 0, frames[0], ..."""

    keys: Motion
    frames: Sequence[int]
    method: str = "guided"
    ranges: JointLimits | None = None
