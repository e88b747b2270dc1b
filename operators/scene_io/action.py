"""Actions: a Motion written as a new Action (the one place that writes Actions: `write_action`), an
Action read back into a Motion, and what an Action keys (channels, frames, a fingerprint)."""

from __future__ import annotations

import hashlib
import re

import bpy
import numpy as np

from ...kirin_addon.core.motion import Motion, root_basis_location
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.rotations import (
    euler_continuity,
    euler_to_matrix,
    matrix_to_euler,
    matrix_to_quat,
    quat_continuity,
    quat_from_axis_angle,
    quat_normalize,
    quat_to_axis_angle,
    quat_to_matrix,
)
from . import SceneError

_BONE_PATH = re.compile(r'^pose\.bones\["(?P<bone>(?:[^"\\]|\\.)*)"\]\.(?P<prop>\w+)$')
_LINEAR = 1  # enum index of 'LINEAR' in FCurve keyframe interpolation


def _bone_path(name: str, prop: str) -> str:
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'pose.bones["{escaped}"].{prop}'


def _channel_values(rotations: np.ndarray, mode: str) -> tuple[str, np.ndarray]:
    """Per-bone rotation channel name and (T,C) values for the bone's rotation mode."""
    if mode == "QUATERNION":
        return "rotation_quaternion", quat_continuity(rotations, axis=0)
    if mode == "AXIS_ANGLE":
        axis, angle = quat_to_axis_angle(rotations)
        return "rotation_axis_angle", np.concatenate([angle[:, None], axis], axis=-1)
    euler = matrix_to_euler(quat_to_matrix(rotations), mode)
    return "rotation_euler", euler_continuity(euler, axis=0)


def new_action(obj: bpy.types.Object, name: str):
    """A new slotted Action assigned to obj; the previous one is kept with a fake user."""
    action = bpy.data.actions.new(name)
    slot = action.slots.new(id_type="OBJECT", name=obj.name)
    strip = action.layers.new("Kirin").strips.new(type="KEYFRAME")
    channelbag = strip.channelbag(slot, ensure=True)
    anim = obj.animation_data or obj.animation_data_create()
    if anim.action is not None:
        anim.action.use_fake_user = True
    anim.action = action
    anim.action_slot = slot
    return action, channelbag


def _add_fcurve(channelbag, path: str, index: int, group, frames: np.ndarray, values: np.ndarray) -> None:
    fcurve = channelbag.fcurves.new(path, index=index)
    fcurve.group = group
    points = fcurve.keyframe_points
    points.add(len(frames))
    points.foreach_set("co", np.column_stack([frames, values]).astype(np.float32).ravel())
    points.foreach_set("interpolation", np.full(len(frames), _LINEAR, dtype=np.int32))
    fcurve.update()


def keyed_locations(rig: Rig, motion: Motion) -> tuple[np.ndarray, np.ndarray]:
    """((T,J,3) the `location` channels an Action of `motion` keys, (J,) which bones get them);
    SceneError when the motion moves a connected bone (Blender would ignore that location). Checked
    before anything is written."""
    motion.check_rig(rig)
    locations = np.zeros((motion.frame_count, rig.joint_count, 3))
    if motion.translations is not None:
        locations[:] = motion.translations
    locations[:, rig.roots] = root_basis_location(rig, motion)
    moves = np.any(locations != 0.0, axis=0).any(axis=-1)
    moves[rig.roots] = True
    if np.any(moves & rig.connected):
        names = ", ".join(rig.names[j] for j in np.flatnonzero(moves & rig.connected)[:3])
        raise SceneError(f"The motion moves connected bones ({names}); Blender ignores their location.")
    return locations, moves


def write_action(obj: bpy.types.Object, rig: Rig, motion: Motion, name: str, frame_start: int = 1):
    """Write a Motion as a NEW Action on the armature: rotations for every bone, location on roots and on
    the bones the motion moves, and the rest value of any other location or scale that another action
    of the armature keys. The channels no action animates keep what the user's pose has."""
    pose_bones = obj.pose.bones
    if [pb.name for pb in pose_bones] != rig.names and set(pb.name for pb in pose_bones) != set(rig.names):
        raise SceneError(f"The motion was made for another rig than '{obj.name}'.")
    locations, moves = keyed_locations(rig, motion)
    elsewhere = set().union(*(keyed_channels(a, obj) for a in armature_actions(obj)))
    action, channelbag = new_action(obj, name)
    frames = frame_start + np.arange(motion.frame_count, dtype=np.float64)
    for j, bone_name in enumerate(rig.names):
        pose_bone = pose_bones[bone_name]
        group = channelbag.groups.new(bone_name)
        prop, values = _channel_values(motion.rotations[:, j], pose_bone.rotation_mode)
        for c in range(values.shape[1]):
            _add_fcurve(channelbag, _bone_path(bone_name, prop), c, group, frames, values[:, c])
        if moves[j]:
            for c in range(3):
                _add_fcurve(channelbag, _bone_path(bone_name, "location"), c, group, frames,
                            locations[:, j, c])
        # A channel another clip animates is keyed at rest (one key holds): else the take would play
        # with whatever that clip left there (an imported walk's scales, a run's leg offsets).
        still = [("location", 0.0)] if not moves[j] and not rig.connected[j] else []
        for still_prop, value in still + [("scale", 1.0)]:
            if (bone_name, still_prop) in elsewhere:
                for c in range(3):
                    _add_fcurve(channelbag, _bone_path(bone_name, still_prop), c, group, frames[:1],
                                np.array([value]))
    action.frame_range = (frames[0], frames[-1]) if len(frames) > 1 else (frames[0], frames[0] + 1)
    return action


def action_channelbag(action, obj: bpy.types.Object):
    """The channelbag animating obj in action (first slot for obj, else the first slot)."""
    if action is None or len(action.slots) == 0:
        return None
    slot = next((s for s in action.slots if s.target_id_type == "OBJECT"), action.slots[0])
    for layer in action.layers:
        for strip in layer.strips:
            bag = strip.channelbag(slot)
            if bag is not None:
                return bag
    return None


def action_key_frames(action, obj: bpy.types.Object, selected: bool = False) -> np.ndarray:
    """The frames (sorted, unique, rounded to whole frames) where the action keys obj's bones; only
    the selected keyframes' frames with `selected`."""
    bag = action_channelbag(action, obj)
    found = [np.empty(0)]
    for fcurve in (bag.fcurves if bag is not None else ()):
        if _BONE_PATH.match(fcurve.data_path) is None:
            continue
        points = fcurve.keyframe_points
        co = np.empty(len(points) * 2, dtype=np.float32)
        points.foreach_get("co", co)
        frames = co[0::2]
        if selected:
            chosen = np.empty(len(points), dtype=bool)
            points.foreach_get("select_control_point", chosen)
            frames = frames[chosen]
        found.append(frames)
    return np.unique(np.round(np.concatenate(found)).astype(np.int64))


def _unescape(name: str) -> str:
    return name.replace('\\"', '"').replace("\\\\", "\\")


def armature_actions(obj: bpy.types.Object) -> list:
    """Every action in the file that keys bones of this armature (by bone name)."""
    names = {bone.name for bone in obj.pose.bones}
    found = []
    for action in bpy.data.actions:
        bag = action_channelbag(action, obj)
        for fcurve in (bag.fcurves if bag is not None else ()):
            match = _BONE_PATH.match(fcurve.data_path)
            if match is not None and _unescape(match["bone"]) in names:
                found.append(action)
                break
    return found


def keyed_channels(action, obj: bpy.types.Object) -> set[tuple[str, str]]:
    """(bone name, property) of every bone channel the action keys ("location", "rotation_euler"…)."""
    bag = action_channelbag(action, obj)
    out = set()
    for fcurve in (bag.fcurves if bag is not None else ()):
        match = _BONE_PATH.match(fcurve.data_path)
        if match is not None:
            out.add((_unescape(match["bone"]), match["prop"]))
    return out


def keyed_rotations(action, obj: bpy.types.Object, rig: Rig) -> np.ndarray:
    """(J,) bool: the bones whose rotation the action keys (in any rotation mode)."""
    names = {bone for bone, prop in keyed_channels(action, obj) if prop.startswith("rotation_")}
    return np.array([name in names for name in rig.names], dtype=bool)


def actions_fingerprint(actions: list, obj: bpy.types.Object) -> str:
    """A digest of the actions' keys (curve, frame, value): it changes when any key does."""
    digest = hashlib.sha256()
    for action in actions:
        digest.update(action.name.encode())
        bag = action_channelbag(action, obj)
        for fcurve in (bag.fcurves if bag is not None else ()):
            points = fcurve.keyframe_points
            values = np.empty(len(points) * 2, dtype=np.float32)
            points.foreach_get("co", values)
            digest.update(f"{fcurve.data_path}[{fcurve.array_index}]".encode())
            digest.update(values.tobytes())
    return digest.hexdigest()


def read_action(obj: bpy.types.Object, rig: Rig, action, fps: float | None = None,
                frame_range: tuple[int, int] | None = None, frames: np.ndarray | None = None) -> Motion:
    """Sample an existing Action on the armature into a Motion (rotations; root location), over
    its frame range, the given (first, last) frames or at the given `frames`."""
    bag = action_channelbag(action, obj)
    if bag is None or len(bag.fcurves) == 0:
        raise SceneError(f"The action '{action.name}' has no animation for '{obj.name}'.")
    if frames is None:
        start, end = frame_range or (int(round(v)) for v in action.frame_range)
        frames = np.arange(start, max(end, start) + 1, dtype=np.float64)
    frames = np.asarray(frames, dtype=np.float64)
    channels: dict[tuple[str, str], dict[int, np.ndarray]] = {}
    for fcurve in bag.fcurves:
        match = _BONE_PATH.match(fcurve.data_path)
        if match is None:
            continue
        key = (_unescape(match["bone"]), match["prop"])
        channels.setdefault(key, {})[fcurve.array_index] = np.array([fcurve.evaluate(f) for f in frames])

    count = len(frames)
    rotations = np.zeros((count, rig.joint_count, 4))
    rotations[..., 0] = 1.0
    for j, bone_name in enumerate(rig.names):
        mode = obj.pose.bones[bone_name].rotation_mode
        if mode == "QUATERNION":
            got = channels.get((bone_name, "rotation_quaternion"))
            if got:
                rotations[:, j] = np.stack([got.get(c, np.full(count, float(c == 0))) for c in range(4)], -1)
        elif mode == "AXIS_ANGLE":
            got = channels.get((bone_name, "rotation_axis_angle"))
            if got:
                values = np.stack([got.get(c, np.full(count, float(c == 2))) for c in range(4)], -1)
                rotations[:, j] = quat_from_axis_angle(values[:, 1:], values[:, 0])
        else:
            got = channels.get((bone_name, "rotation_euler"))
            if got:
                euler = np.stack([got.get(c, np.zeros(count)) for c in range(3)], -1)
                rotations[:, j] = matrix_to_quat(euler_to_matrix(euler, mode))
    locations = np.zeros((count, rig.joint_count, 3))
    for j, bone_name in enumerate(rig.names):
        got = channels.get((bone_name, "location"), {})
        for c, values in got.items():
            locations[:, j, c] = values
    scene_fps = fps or (bpy.context.scene.render.fps / bpy.context.scene.render.fps_base)
    return motion_from_basis(rig, rotations, locations, scene_fps)


def motion_from_basis(rig: Rig, rotations: np.ndarray, locations: np.ndarray, fps: float) -> Motion:
    """A Motion from Blender's per-bone basis: (T,J,4) rotations and (T,J,3) `location` channels."""
    locations = np.array(locations, dtype=np.float64)
    main = rig.main_root
    offset = locations[:, main] @ rig.rest[main, :3, :3].T
    root_positions = rig.heads[main] + offset
    # Other roots' location holds the main root's offset (in their frame) plus their own move.
    roots = rig.roots
    locations[:, roots] -= np.einsum("rba,tb->tra", rig.rest[roots, :3, :3], offset)
    locations[:, main] = 0.0
    locations[:, rig.connected] = 0.0  # Blender ignores the location of connected bones
    translations = locations if np.any(np.abs(locations) > 1e-12) else None
    return Motion(fps, root_positions, quat_normalize(rotations), translations)
