"""The armature's current pose: its pose bones' channels read and written (bit for bit), as a one-frame
Motion; the pose selection; and a key of the pose (Auto-Keying)."""

from __future__ import annotations

import bpy
import numpy as np

from ...kirin_addon.core.motion import Motion, root_basis_location
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.rotations import (
    matrix_to_euler,
    matrix_to_quat,
    quat_normalize,
    quat_to_axis_angle,
    quat_to_matrix,
)
from . import SceneError
from .action import motion_from_basis
from .arrays import foreach_matrices, foreach_vectors

# Every transform channel of a pose bone, as stored: a snapshot of these is the pose, exactly.
POSE_CHANNELS = (("location", 3), ("rotation_quaternion", 4), ("rotation_euler", 3),
                 ("rotation_axis_angle", 4), ("scale", 3))
_EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def pose_order(obj: bpy.types.Object, rig: Rig) -> np.ndarray:
    """Index in `obj.pose.bones` of each rig joint (the rig follows `obj.data.bones`)."""
    pose_bones = obj.pose.bones
    order = np.array([pose_bones.find(n) for n in rig.names], dtype=np.int64)
    if len(pose_bones) != rig.joint_count or np.any(order < 0):
        raise SceneError(f"The bones of '{obj.name}' changed: run the operation again.")
    return order


def read_pose_channels(obj: bpy.types.Object) -> dict[str, np.ndarray]:
    """Every pose bone's transform channels as Blender stores them (float32, pose-bone order): a
    snapshot that `write_pose_channels` puts back bit for bit."""
    pose_bones = obj.pose.bones
    return {name: foreach_vectors(pose_bones, name, width).copy() for name, width in POSE_CHANNELS}


def write_pose_channels(obj: bpy.types.Object, channels: dict[str, np.ndarray]) -> None:
    """Set the pose bones' channels (a `read_pose_channels` snapshot, possibly edited) and tag the
    armature for re-evaluation (foreach_set alone does not)."""
    pose_bones = obj.pose.bones
    for name, _width in POSE_CHANNELS:
        if name in channels:
            pose_bones.foreach_set(name, np.ascontiguousarray(channels[name], dtype=np.float32).ravel())
    obj.update_tag()


def read_pose(obj: bpy.types.Object, rig: Rig, fps: float | None = None) -> Motion:
    """The armature's current pose (its pose bones' basis, before constraints) as a one-frame Motion."""
    order = pose_order(obj, rig)
    basis = foreach_matrices(obj.pose.bones, "matrix_basis")[order]
    linear = basis[:, :3, :3]
    scale = np.linalg.norm(linear, axis=-2, keepdims=True)  # matrix_basis = T·R·S: columns carry S
    rotations = matrix_to_quat(linear / np.where(scale > 1e-12, scale, 1.0))
    locations = basis[:, :3, 3].copy()
    scene = bpy.context.scene
    fps = fps or scene.render.fps / scene.render.fps_base
    return motion_from_basis(rig, rotations[None], locations[None], fps)


def write_pose(obj: bpy.types.Object, rig: Rig, motion: Motion, frame: int = 0) -> None:
    """Put frame `frame` of a Motion on the pose bones: each bone's rotation in its own rotation mode
    (continuous with the value it had: no sign or 2π flips), `location` of the roots and of the
    bones the motion moves; scale and the channels of other rotation modes are left as they are."""
    motion.check_rig(rig)
    order = pose_order(obj, rig)
    pose_bones = obj.pose.bones
    channels = read_pose_channels(obj)
    one = motion.sliced(frame, frame + 1)
    rotations = quat_normalize(one.rotations[0])
    locations = np.zeros((rig.joint_count, 3)) if one.translations is None else one.translations[0].copy()
    locations[rig.roots] = root_basis_location(rig, one)[0]
    free = ~rig.connected  # Blender ignores the location of connected bones: keep what they hold
    channels["location"][order[free]] = locations[free]
    modes = np.array([pose_bones[int(k)].rotation_mode for k in order])
    chosen = np.flatnonzero(modes == "QUATERNION")
    if chosen.size:
        old = channels["rotation_quaternion"][order[chosen]].astype(np.float64)
        new = rotations[chosen]
        flip = np.sum(old * new, axis=-1) < 0.0
        channels["rotation_quaternion"][order[chosen]] = np.where(flip[:, None], -new, new)
    chosen = np.flatnonzero(modes == "AXIS_ANGLE")
    if chosen.size:
        axis, angle = quat_to_axis_angle(rotations[chosen])
        channels["rotation_axis_angle"][order[chosen]] = np.concatenate([angle[:, None], axis], axis=-1)
    for mode in _EULER_ORDERS:
        chosen = np.flatnonzero(modes == mode)
        if chosen.size == 0:
            continue
        old = channels["rotation_euler"][order[chosen]].astype(np.float64)
        euler = matrix_to_euler(quat_to_matrix(rotations[chosen]), mode)
        euler += 2.0 * np.pi * np.round((old - euler) / (2.0 * np.pi))  # the turn nearest the old value
        channels["rotation_euler"][order[chosen]] = euler
    write_pose_channels(obj, channels)


def selected_bones(obj: bpy.types.Object, rig: Rig) -> np.ndarray:
    """(J,) bool: which bones are selected in pose mode (rig order). Blender 5.0 keeps pose
    selection on the pose bone, 4.x on the bone."""
    pose_bones = obj.pose.bones
    if len(pose_bones) and hasattr(pose_bones[0], "select"):
        return foreach_vectors(pose_bones, "select", 1, dtype=bool)[pose_order(obj, rig)]
    return foreach_vectors(obj.data.bones, "select", 1, dtype=bool).copy()


def hidden_bones(obj: bpy.types.Object, rig: Rig) -> np.ndarray:
    """(J,) bool: bones hidden in pose mode (rig order; the pose bone's flag on 5.0, the bone's too)."""
    hidden = foreach_vectors(obj.data.bones, "hide", 1, dtype=bool).copy()
    pose_bones = obj.pose.bones
    if len(pose_bones) and hasattr(pose_bones[0], "hide"):
        hidden |= foreach_vectors(pose_bones, "hide", 1, dtype=bool)[pose_order(obj, rig)]
    return hidden


def select_bones(obj: bpy.types.Object, rig: Rig, selected: np.ndarray) -> None:
    """Set the pose selection (rig order) on Blender 4.x and 5.x."""
    pose_bones = obj.pose.bones
    flags = np.asarray(selected, dtype=bool)
    if len(pose_bones) and hasattr(pose_bones[0], "select"):
        buf = np.zeros(len(pose_bones), dtype=bool)
        buf[pose_order(obj, rig)] = flags
        pose_bones.foreach_set("select", buf)
    else:
        obj.data.bones.foreach_set("select", flags)
    obj.update_tag()


def key_pose(obj: bpy.types.Object, rig: Rig, frame: float) -> None:
    """Key the current pose at `frame` in the active action (made if there is none): each bone's
    rotation channel for its rotation mode, and `location` on the roots and on bones moved from
    their rest place. One key per channel: this is Auto-Keying a pose, not writing an animation
    (that is write_action's, in bulk)."""
    pose_bones = obj.pose.bones
    order = pose_order(obj, rig)
    moved = np.any(read_pose_channels(obj)["location"][order] != 0.0, axis=-1) & ~rig.connected
    moved[rig.roots] = True
    props = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}
    for j, name in enumerate(rig.names):
        bone = pose_bones[name]
        bone.keyframe_insert(props.get(bone.rotation_mode, "rotation_euler"), frame=frame, group=name)
        if moved[j]:
            bone.keyframe_insert("location", frame=frame, group=name)
