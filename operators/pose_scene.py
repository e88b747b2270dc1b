"""What the Pose Space operators share: the armature read for pose requests and the canonical frame the
requests travel in (`PoseScene`), the bones' `location` offsets folded into the rig (`held_offsets`), the
joint ranges its own actions show (`rig_ranges`), and the polls of operators on an armature.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np

from ..kirin_addon.core.motion import Motion, forward_kinematics
from ..kirin_addon.core.rig import Rig
from ..kirin_addon.core.rotations import quat_identity
from ..kirin_addon.core.skinning import SkinnedMesh
from ..kirin_addon.pose.space import JointLimits
from . import scene_io
from .common import target_frame
from .scene_io.action import (
    action_key_frames,
    actions_fingerprint,
    armature_actions,
    keyed_rotations,
    read_action,
)
from .scene_io.mesh import read_armature_skin
from .scene_io.rig import check_object_scale, evaluated_pose, read_rig

RANGE_FRAMES_PER_ACTION = 500  # keyed frames of each action its joint ranges are measured on


def held_offsets(rig: Rig, pose: Motion) -> tuple[Rig, Motion]:
    """The rig with the pose's first-frame bone `location` offsets built into its rest, and the pose
    without them: the same joint positions, but the prior (which poses by rotations about rest
    offsets) sees the skeleton as the user does. glTF imports hold such offsets on most bones."""
    if pose.translations is None or not np.any(pose.translations[0]):
        return rig, pose
    moved = pose.translations[0].copy()
    moved[rig.main_root] = 0.0  # the main root's move is the motion's root position
    still = Motion(pose.fps, rig.heads[rig.main_root][None], quat_identity((1, rig.joint_count)), moved[None])
    rest = forward_kinematics(rig, still)[0]
    local = rig.rest_local.copy()
    local[:, :3, 3] += np.einsum("jab,jb->ja", local[:, :3, :3], moved)  # restlocal · T(location)
    local[rig.roots] = rest[rig.roots]
    held = Rig(list(rig.names), rig.parents.copy(), rest, rig.tails + rest[:, :3, 3] - rig.heads,
               rig.deform.copy(), rig.connected.copy(), local)
    return held, Motion(pose.fps, pose.root_positions, pose.rotations)


def pose_armature(context, pose_mode: bool) -> bpy.types.Object:
    """The armature a Pose Space operator acts on; SceneError (the status bar's message) if none."""
    obj = context.active_object
    if obj is not None and obj.type == "MESH" and not pose_mode:
        obj = obj.find_armature() or obj
    if obj is None or obj.type != "ARMATURE":
        raise scene_io.SceneError("Pose Space needs an armature: select one"
                                  + (" and enter Pose Mode." if pose_mode else "."))
    if pose_mode and obj.mode != "POSE":
        raise scene_io.SceneError(f"Pose Space works in Pose Mode: select '{obj.name}' and press Ctrl+Tab.")
    return obj


@dataclass
class PoseScene:
    """An armature read for pose requests, and the canonical frame the requests travel in."""

    armature: str
    rig: Rig  # armature space
    to_canonical: np.ndarray  # (4,4) armature space → canonical frame
    mesh: SkinnedMesh | None  # canonical frame
    fps: float

    @classmethod
    def read(cls, context, arm: bpy.types.Object, with_mesh: bool = True) -> PoseScene:
        check_object_scale(arm)
        rig = read_rig(arm)
        matrix = target_frame(arm, rig).matrix()
        mesh = read_armature_skin(context, arm, rig, matrix) if with_mesh else None
        render = context.scene.render
        return cls(arm.name, rig, matrix, mesh, render.fps / render.fps_base)

    def object(self) -> bpy.types.Object:
        arm = bpy.data.objects.get(self.armature)
        if arm is None or arm.type != "ARMATURE":
            raise scene_io.SceneError(f"The armature '{self.armature}' is gone: nothing was changed.")
        return arm

    def request(self, motion: Motion) -> tuple[Rig, Motion]:
        """What the backend gets for a pose (or keys) on this rig: rig and motion in the canonical
        frame, the bones' `location` offsets folded into the rig (`held_offsets`)."""
        rig, motion = held_offsets(self.rig, motion)
        return rig.transformed(self.to_canonical), motion.transformed(self.to_canonical)

    def ranged_request(self, arm: bpy.types.Object, motion: Motion,
                       keep_ranges: bool) -> tuple[Rig, Motion, JointLimits | None, int]:
        """`request`, and the joint ranges of the armature's actions on the request's rig
        (`rig_ranges`) with how many actions they come from: (None, 0) unless `keep_ranges`."""
        rig, moved = self.request(motion)
        return (rig, moved, *rig_ranges(arm, self.rig, rig, keep_ranges))

    def from_answer(self, motion: Motion, keep: Motion | None = None) -> Motion:
        """An answer back in armature space; bones the prior does not move by location (it poses by
        rotations) keep the `location` they had in `keep`."""
        out = motion.transformed(np.linalg.inv(self.to_canonical))
        if out.translations is None and keep is not None and keep.translations is not None:
            moved = np.repeat(keep.translations[:1], out.frame_count, axis=0)
            out = Motion(out.fps, out.root_positions, out.rotations, moved)
        return out

    def point(self, point: np.ndarray) -> np.ndarray:
        """An armature-space point in the canonical frame."""
        m = self.to_canonical
        return np.asarray(point, np.float64) @ m[:3, :3].T + m[:3, 3]


# armature name → (what its ranges were measured from, the ranges, how many actions)
_ranges_cache: dict[str, tuple[tuple, JointLimits | None, int]] = {}


def rig_ranges(arm: bpy.types.Object, rig: Rig, request_rig: Rig,
               wanted: bool = True) -> tuple[JointLimits | None, int]:
    """The joint ranges the armature's own actions show, measured on the rig as a request sends it,
    and how many actions they come from; (None, 0) for an armature whose actions turn no bone, or
    when not `wanted`. Each action is read at its keys (at most RANGE_FRAMES_PER_ACTION) and tells
    the ranges only of the bones it turns: a bone no action turns keeps every angle. Reading the
    curves is slow (≈ 0.4 s for 18 clips): the answer is kept until a key or the rig changes."""
    if not wanted:
        return None, 0
    actions = armature_actions(arm)
    source = (tuple(rig.names), actions_fingerprint(actions, arm),
              request_rig.heads.tobytes(), request_rig.tails.tobytes())
    cached = _ranges_cache.get(arm.name)
    if cached is not None and cached[0] == source:
        return cached[1], cached[2]
    swing, twist = np.zeros(rig.joint_count), np.zeros(rig.joint_count)
    turned, used = np.zeros(rig.joint_count, dtype=bool), 0
    for action in actions:
        keyed = keyed_rotations(action, arm, rig)
        keys = action_key_frames(action, arm)
        if not keyed.any() or not len(keys):
            continue
        keys = keys[np.linspace(0, len(keys) - 1, min(len(keys), RANGE_FRAMES_PER_ACTION)).astype(np.int64)]
        rotations = read_action(arm, rig, action, frames=keys).rotations
        limits = JointLimits.from_motion(request_rig, Motion(30.0, np.zeros((len(keys), 3)), rotations))
        swing = np.where(keyed, np.maximum(swing, limits.swing), swing)
        twist = np.where(keyed, np.maximum(twist, limits.twist), twist)
        turned |= keyed
        used += 1
    ranges = JointLimits(np.where(turned, swing, np.pi), np.where(turned, twist, np.pi)) if used else None
    _ranges_cache[arm.name] = (source, ranges, used)
    return ranges, used


def heads(context, arm: bpy.types.Object, rig: Rig) -> np.ndarray:
    """(J,3) armature-space bone heads as the user sees them (evaluated)."""
    context.view_layer.update()
    return evaluated_pose(arm, rig)[:, :3, 3]


def percent(error: np.ndarray | None) -> str:
    if error is None or len(error) == 0:
        return ""
    return f"{100.0 * float(np.max(error)):.1f} % of body size"


class AnyModeArmature:
    """Operators on the active armature (or the armature of the active mesh), any mode."""

    pose_mode = False

    @classmethod
    def poll(cls, context):
        try:
            pose_armature(context, pose_mode=cls.pose_mode)
        except scene_io.SceneError as exc:
            cls.poll_message_set(str(exc))
            return False
        return True


class PoseModeArmature(AnyModeArmature):
    """Operators on the active armature in Pose Mode."""

    pose_mode = True


def pose_strength(op, context) -> float | None:
    """The operator's Strength, else the panel's (None: 0, the prior's own)."""
    value = op.strength if op.properties.is_property_set("strength") else context.scene.kirin.pose_strength
    return float(value) if value > 0 else None
