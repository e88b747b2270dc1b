"""The one place that converts between bpy data and engine arrays.

Every bulk read and write goes through `foreach_get` / `foreach_set`. Matrices come out of
`foreach_get` column-major, hence the transposes.
"""

from __future__ import annotations

import hashlib
import re

import bpy
import numpy as np

from ..kirin_addon.core.motion import Motion, root_basis_location
from ..kirin_addon.core.rig import Rig, RigError
from ..kirin_addon.core.rotations import (
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
from ..kirin_addon.core.skinning import SkinnedMesh

_BONE_PATH = re.compile(r'^pose\.bones\["(?P<bone>(?:[^"\\]|\\.)*)"\]\.(?P<prop>\w+)$')
_LINEAR = 1  # enum index of 'LINEAR' in FCurve keyframe interpolation


class SceneError(ValueError):
    """Bad input from the scene; operators report the message and change nothing."""


def _matrices(collection, attribute: str) -> np.ndarray:
    buf = np.empty(len(collection) * 16, dtype=np.float32)
    collection.foreach_get(attribute, buf)
    return np.swapaxes(buf.reshape(-1, 4, 4), -1, -2).astype(np.float64)


def _vectors(collection, attribute: str, width: int, dtype=np.float32) -> np.ndarray:
    buf = np.empty(len(collection) * width, dtype=dtype)
    collection.foreach_get(attribute, buf)
    return buf.reshape(-1, width) if width > 1 else buf


def object_matrix(obj: bpy.types.Object) -> np.ndarray:
    return np.array(obj.matrix_world, dtype=np.float64)


def check_object_scale(obj: bpy.types.Object, tolerance: float = 1e-4) -> None:
    """Non-uniform (or negative) object scale shears bones: ask the user to apply it first."""
    scale = np.array(obj.matrix_world.to_scale(), dtype=np.float64)
    if np.any(scale <= 0) or np.ptp(scale) > tolerance * np.max(np.abs(scale)):
        raise SceneError(
            f"'{obj.name}' has non-uniform or negative scale {tuple(np.round(scale, 4))}: "
            "apply it first (Object > Apply > Scale)."
        )


def armature_from_context(context) -> bpy.types.Object:
    obj = context.active_object
    if obj is not None and obj.type == "MESH":
        arm = obj.find_armature()
        if arm is None:
            raise SceneError(f"The mesh '{obj.name}' is not bound to an armature: select the armature.")
        bones = {b.name for b in arm.data.bones}
        if not any(group.name in bones for group in obj.vertex_groups):
            raise SceneError(f"The mesh '{obj.name}' has no vertex weights for the bones of '{arm.name}': "
                             "bind or paint weights first.")
        return arm
    if obj is None or obj.type != "ARMATURE":
        raise SceneError("Select an armature (or a mesh bound to one) first.")
    return obj


def deforming_armature(context) -> tuple[bpy.types.Object, Rig]:
    """The armature a job works on and its rig: unscaled, with deform bones (SceneError otherwise)."""
    arm = armature_from_context(context)
    check_object_scale(arm)
    rig = read_rig(arm)
    if not np.any(rig.deform):
        raise SceneError(
            f"The armature '{arm.name}' has no deform bones: mark the bones that move the mesh as Deform."
        )
    return arm, rig


def read_rig(obj: bpy.types.Object) -> Rig:
    """Armature object → Rig (armature space), validated."""
    if obj is None or obj.type != "ARMATURE":
        raise SceneError("Select an armature first.")
    bones = obj.data.bones
    if len(bones) == 0:
        raise SceneError(f"The armature '{obj.name}' has no bones.")
    names = [b.name for b in bones]
    index = {n: i for i, n in enumerate(names)}
    parents = np.array([index[b.parent.name] if b.parent else -1 for b in bones], dtype=np.int64)
    rest = _matrices(bones, "matrix_local")
    tails = _vectors(bones, "tail_local", 3).astype(np.float64)
    deform = _vectors(bones, "use_deform", 1, dtype=bool)
    connected = _vectors(bones, "use_connect", 1, dtype=bool)
    # Blender's own parent-relative rest (bone_mat, head relative to the parent's tail) keeps FK
    # bit-compatible with its pose evaluation, which matters for tiny bones on big rigs.
    bone_mat = np.swapaxes(_vectors(bones, "matrix", 9).reshape(-1, 3, 3), -1, -2).astype(np.float64)
    local_head = _vectors(bones, "head", 3).astype(np.float64)
    lengths = _vectors(bones, "length", 1).astype(np.float64)
    local = np.zeros((len(names), 4, 4))
    local[:, :3, :3] = bone_mat
    local[:, :3, 3] = local_head
    local[:, 3, 3] = 1.0
    has_parent = parents >= 0
    local[has_parent, 1, 3] += lengths[parents[has_parent]]
    local[~has_parent] = rest[~has_parent]
    rig = Rig(names, parents, rest, tails, deform, connected, local)
    try:
        rig.validate()
    except RigError as exc:
        raise SceneError(f"'{obj.name}': {exc}") from exc
    return rig


def read_surface(
    mesh_obj: bpy.types.Object, to_space: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The mesh's own vertices (no modifiers: weights belong to these) in world space, or in the
    space `to_space` (4x4 world → space) maps to, and its triangles."""
    if mesh_obj is None or mesh_obj.type != "MESH":
        raise SceneError("Select a mesh object.")
    mesh = mesh_obj.data
    if len(mesh.vertices) == 0:
        raise SceneError(f"The mesh '{mesh_obj.name}' has no vertices.")
    co = _vectors(mesh.vertices, "co", 3).astype(np.float64)
    matrix = object_matrix(mesh_obj) if to_space is None else to_space @ object_matrix(mesh_obj)
    vertices = co @ matrix[:3, :3].T + matrix[:3, 3]
    mesh.calc_loop_triangles()
    triangles = _vectors(mesh.loop_triangles, "vertices", 3, dtype=np.int32).astype(np.int64)
    return vertices, triangles


def read_vertex_groups(mesh_obj: bpy.types.Object) -> tuple[list[str], np.ndarray, np.ndarray]:
    """All vertex groups of a mesh: their names and (V,K) group indices and weights (K: the most
    groups one vertex is in; unused slots weigh 0)."""
    mesh = mesh_obj.data
    count = len(mesh.vertices)
    names = [g.name for g in mesh_obj.vertex_groups]
    # Group indices are positions in vertex_groups; vertex groups are not exposed to foreach_get,
    # so one pass over the vertices is the floor.
    per_vertex = [v.groups for v in mesh.vertices]
    sizes = np.fromiter((len(g) for g in per_vertex), dtype=np.int64, count=count)
    flat = [(g.group, g.weight) for groups in per_vertex for g in groups]
    width = int(max(sizes.max(initial=0), 1))
    indices = np.zeros((count, width), dtype=np.int64)
    weights = np.zeros((count, width))
    if flat:
        pairs = np.asarray(flat, dtype=np.float64)
        rows = np.repeat(np.arange(count), sizes)
        cols = np.arange(len(flat)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        indices[rows, cols] = pairs[:, 0].astype(np.int64)
        weights[rows, cols] = pairs[:, 1]
    return names, indices, weights


def read_skinned_mesh(mesh_obj: bpy.types.Object, arm_obj: bpy.types.Object, rig: Rig) -> SkinnedMesh:
    """Mesh vertices in the armature's space, triangles, and per-vertex (joint, weight) lists."""
    if mesh_obj is None or mesh_obj.type != "MESH":
        raise SceneError("Select a mesh object.")
    vertices, triangles = read_surface(mesh_obj, np.linalg.inv(object_matrix(arm_obj)))
    names, groups, weights = read_vertex_groups(mesh_obj)
    if not np.any(weights > 0):
        raise SceneError(f"The mesh '{mesh_obj.name}' has no vertex weights: bind or paint weights first.")
    # Blender's armature modifier ignores groups of non-deforming bones; so do we.
    joint_index = {n: i for i, n in enumerate(rig.names) if rig.deform[i]}
    group_to_joint = np.array([joint_index.get(n, -1) for n in names] or [-1], dtype=np.int64)
    joints = group_to_joint[groups]
    weights = np.where(joints >= 0, weights, 0.0)
    if not np.any(weights > 0):
        raise SceneError(f"No vertex group of '{mesh_obj.name}' matches a bone of '{arm_obj.name}'.")
    return SkinnedMesh(vertices, triangles, np.maximum(joints, 0), weights)


def read_armature_skin(context, arm_obj: bpy.types.Object, rig: Rig,
                       matrix: np.ndarray | None = None) -> SkinnedMesh | None:
    """The armature's skin: every mesh bound to it with weights, as one (a robot's hands, feet and head
    are often meshes of their own: the skin that meets the floor is all of them); the active mesh, else
    the largest selected, else the largest comes first. None when no mesh is bound with weights (the
    bones alone then). `matrix` (4,4) moves its vertices (armature space → the canonical frame)."""
    meshes = [o for o in context.scene.objects if o.type == "MESH" and o.find_armature() == arm_obj]
    carried = sorted((o for o in context.scene.objects if o.type == "MESH" and o.parent == arm_obj
                      and o.parent_type == "BONE" and o.parent_bone in rig.names and o not in meshes
                      and len(o.data.vertices)), key=lambda o: o.name)
    if not meshes and not carried:
        return None
    active = context.active_object
    selected = [o for o in meshes if o.select_get()]
    parts = []
    if meshes:
        body = active if active in meshes else max(selected or meshes, key=lambda o: len(o.data.vertices))
        for obj in [body] + sorted((o for o in meshes if o is not body), key=lambda o: o.name):
            try:
                parts.append(read_skinned_mesh(obj, arm_obj, rig))
            except SceneError:
                continue  # an unweighted child mesh
    parts += [read_bone_carried_mesh(obj, arm_obj, rig) for obj in carried]
    if not parts:
        return None
    mesh = parts[0] if len(parts) == 1 else _joined(parts)
    if matrix is None:
        return mesh
    return SkinnedMesh(mesh.vertices @ matrix[:3, :3].T + matrix[:3, 3], mesh.triangles, mesh.joint_indices,
                       mesh.joint_weights)


def read_bone_carried_mesh(mesh_obj: bpy.types.Object, arm_obj: bpy.types.Object, rig: Rig) -> SkinnedMesh:
    """A mesh parented to a bone (it moves rigidly with it: a robot's plates), as skin of weight 1 on
    that bone, its vertices where they are at rest in the armature's space (the bone's pose now undone)."""
    bone = arm_obj.pose.bones[mesh_obj.parent_bone]
    undo_pose = np.array(bone.bone.matrix_local, dtype=np.float64) @ np.linalg.inv(np.array(bone.matrix))
    vertices, triangles = read_surface(mesh_obj, undo_pose @ np.linalg.inv(object_matrix(arm_obj)))
    joint = rig.names.index(mesh_obj.parent_bone)
    count = len(vertices)
    return SkinnedMesh(vertices, triangles, np.full((count, 1), joint), np.ones((count, 1)))


def _joined(parts: list[SkinnedMesh]) -> SkinnedMesh:
    """Skinned meshes as one: vertices in order, triangles renumbered, weight slots padded to the widest."""
    width = max(p.joint_indices.shape[1] for p in parts)
    starts = np.cumsum([0] + [p.vertex_count for p in parts[:-1]])

    def padded(values: np.ndarray) -> np.ndarray:
        return np.pad(values, ((0, 0), (0, width - values.shape[1])))

    return SkinnedMesh(np.concatenate([p.vertices for p in parts]),
                       np.concatenate([p.triangles + s for p, s in zip(parts, starts, strict=True)]),
                       np.concatenate([padded(p.joint_indices) for p in parts]),
                       np.concatenate([padded(p.joint_weights) for p in parts]))


def write_vertex_groups(obj: bpy.types.Object, names: list[str], indices: np.ndarray, weights: np.ndarray,
                        only: list[int] | None = None) -> None:
    """Vertex groups `names[j]` from (V,K) group indices and weights, each replacing any group of that
    name (so a re-run never leaves old weights behind); `only` limits which of `names` are written
    (default: every name, even one no vertex uses, so that the set of groups is predictable)."""
    count = indices.shape[0]
    rows = np.repeat(np.arange(count), indices.shape[1])
    joints = np.asarray(indices).ravel()
    flat = np.asarray(weights).ravel()
    keep = flat > 0
    flat = flat[keep].astype(np.float32)
    # One vg.add per (group, distinct weight) is ~10x faster than one per vertex: sort once, split.
    order = np.lexsort((flat, joints[keep]))
    rows, joints, flat = rows[keep][order], joints[keep][order], flat[order]
    groups = {}
    for j in range(len(names)) if only is None else only:
        old = obj.vertex_groups.get(names[j])
        if old is not None:
            obj.vertex_groups.remove(old)
        groups[j] = obj.vertex_groups.new(name=names[j])
    starts = np.flatnonzero(np.r_[True, (np.diff(joints) != 0) | (np.diff(flat) != 0)]) if len(rows) else []
    ends = np.r_[starts[1:], len(rows)] if len(rows) else []
    for start, end in zip(list(starts), list(ends), strict=True):
        group = groups.get(int(joints[start]))
        if group is not None:
            group.add(rows[start:end].tolist(), float(flat[start]), "REPLACE")


def write_mask_group(obj: bpy.types.Object, name: str, mask: np.ndarray) -> bool:
    """A vertex group of weight 1 on the masked vertices (Weight Paint shows them); an empty mask
    removes the group instead. True when the group exists afterwards."""
    old = obj.vertex_groups.get(name)
    if old is not None:
        obj.vertex_groups.remove(old)
    chosen = np.flatnonzero(mask)
    if chosen.size == 0:
        return False
    obj.vertex_groups.new(name=name).add(chosen.tolist(), 1.0, "REPLACE")
    return True


def evaluated_pose(obj: bpy.types.Object, rig: Rig) -> np.ndarray:
    """(J,4,4) armature-space pose matrices of the evaluated armature, in rig joint order."""
    pose_bones = obj.pose.bones
    matrices = _matrices(pose_bones, "matrix")
    order = [pose_bones.find(n) for n in rig.names]
    return matrices[order]


def evaluated_mesh_vertices(mesh_obj: bpy.types.Object, arm_obj: bpy.types.Object) -> np.ndarray:
    """Deformed vertices of the evaluated mesh, in the armature's space."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = mesh_obj.evaluated_get(depsgraph)
    data = evaluated.data
    co = _vectors(data.vertices, "co", 3).astype(np.float64)
    to_armature = np.linalg.inv(object_matrix(arm_obj)) @ object_matrix(mesh_obj)
    return co @ to_armature[:3, :3].T + to_armature[:3, 3]


# --------------------------------------------------------------------------- Actions
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
    return _motion_from_basis(rig, rotations, locations, scene_fps)


def _motion_from_basis(rig: Rig, rotations: np.ndarray, locations: np.ndarray, fps: float) -> Motion:
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



# --------------------------------------------------------------------------- the current pose
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
    return {name: _vectors(pose_bones, name, width).copy() for name, width in POSE_CHANNELS}


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
    basis = _matrices(obj.pose.bones, "matrix_basis")[order]
    linear = basis[:, :3, :3]
    scale = np.linalg.norm(linear, axis=-2, keepdims=True)  # matrix_basis = T·R·S: columns carry S
    rotations = matrix_to_quat(linear / np.where(scale > 1e-12, scale, 1.0))
    locations = basis[:, :3, 3].copy()
    scene = bpy.context.scene
    fps = fps or scene.render.fps / scene.render.fps_base
    return _motion_from_basis(rig, rotations[None], locations[None], fps)


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
        return _vectors(pose_bones, "select", 1, dtype=bool)[pose_order(obj, rig)]
    return _vectors(obj.data.bones, "select", 1, dtype=bool).copy()


def hidden_bones(obj: bpy.types.Object, rig: Rig) -> np.ndarray:
    """(J,) bool: bones hidden in pose mode (rig order; the pose bone's flag on 5.0, the bone's too)."""
    hidden = _vectors(obj.data.bones, "hide", 1, dtype=bool).copy()
    pose_bones = obj.pose.bones
    if len(pose_bones) and hasattr(pose_bones[0], "hide"):
        hidden |= _vectors(pose_bones, "hide", 1, dtype=bool)[pose_order(obj, rig)]
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


# --------------------------------------------------------------------------- building objects
def create_armature(rig: Rig, name: str, collection=None) -> bpy.types.Object:
    """A new armature object whose bones have exactly the rig's rest transforms."""
    rig.validate()
    collection = collection or bpy.context.scene.collection
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    collection.objects.link(obj)
    view_layer = bpy.context.view_layer
    previous = view_layer.objects.active
    view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        bones = []
        for j, bone_name in enumerate(rig.names):
            bone = data.edit_bones.new(bone_name)
            head = rig.heads[j]
            bone.head = head
            bone.tail = head + rig.rest[j, :3, 1] * rig.lengths[j]
            bone.align_roll(rig.rest[j, :3, 2])  # roll so the bone's Z axis matches the rest frame
            bone.use_deform = bool(rig.deform[j])
            bones.append(bone)
        for j, parent in enumerate(rig.parents):
            if parent >= 0:
                bones[j].parent = bones[parent]
                bones[j].use_connect = bool(rig.connected[j])
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
        view_layer.objects.active = previous if previous is not None else obj
    return obj


def create_skinned_mesh(mesh: SkinnedMesh, arm_obj: bpy.types.Object, rig: Rig, name: str,
                        collection=None) -> bpy.types.Object:
    """A mesh object parented to the armature with an Armature modifier and vertex groups."""
    collection = collection or bpy.context.scene.collection
    data = bpy.data.meshes.new(name)
    count = len(mesh.vertices)
    data.vertices.add(count)
    data.vertices.foreach_set("co", mesh.vertices.astype(np.float32).ravel())
    tri_count = len(mesh.triangles)
    data.loops.add(tri_count * 3)
    data.loops.foreach_set("vertex_index", mesh.triangles.astype(np.int32).ravel())
    data.polygons.add(tri_count)
    data.polygons.foreach_set("loop_start", np.arange(0, tri_count * 3, 3, dtype=np.int32))
    data.polygons.foreach_set("loop_total", np.full(tri_count, 3, dtype=np.int32))
    data.update(calc_edges=True)
    obj = bpy.data.objects.new(name, data)
    collection.objects.link(obj)
    obj.parent = arm_obj
    obj.matrix_world = arm_obj.matrix_world
    used = sorted(set(mesh.joint_indices[mesh.joint_weights > 0].tolist()))
    write_vertex_groups(obj, list(rig.names), mesh.joint_indices, mesh.joint_weights, only=used)
    modifier = obj.modifiers.new("Armature", "ARMATURE")
    modifier.object = arm_obj
    return obj


# --------------------------------------------------------------------------- Movie Clip tracks (video)
def movie_clip_tracks(clip) -> list:
    """Every track of a Movie Clip: the camera's, then each tracked object's (first of a name wins)."""
    seen, out = set(), []
    for tracking_object in clip.tracking.objects:
        for track in tracking_object.tracks:
            if track.name not in seen:
                seen.add(track.name)
                out.append(track)
    return out


def read_movie_clip_tracks(
    clip, names: list[str] | None = None
) -> tuple[dict[str, np.ndarray], tuple[int, int]]:
    """Marker positions of a Movie Clip's tracks in pixels of its footage: track name → (N,2) (x right,
    y down from the top-left corner), one row per video frame from frame 0, NaN where the track has no
    marker or a disabled one; and the footage's (width, height). `names` limits the tracks read (a
    name the clip does not have is a SceneError). Markers are stored in clip frames (1 = the clip's
    first frame), shown at video frame `frame - 1 + frame_offset`."""
    if clip is None:
        raise SceneError("Choose a Movie Clip.")
    width, height = (int(v) for v in clip.size)
    if width <= 0 or height <= 0:
        raise SceneError(f"The Movie Clip '{clip.name}' cannot be read (no frames): check its file.")
    tracks = {t.name: t for t in movie_clip_tracks(clip)}
    if names is not None:
        missing = [n for n in names if n not in tracks]
        if missing:
            raise SceneError(
                f"The Movie Clip '{clip.name}' has no track named {', '.join(map(repr, missing))}."
            )
        tracks = {n: tracks[n] for n in names}
    offset = int(clip.frame_offset)
    length = max(int(clip.frame_duration) + offset, 1)
    out: dict[str, np.ndarray] = {}
    for name, track in tracks.items():
        markers = track.markers
        count = len(markers)
        frames = _vectors(markers, "frame", 1, dtype=np.int32).astype(np.int64) - 1 + offset
        co = _vectors(markers, "co", 2).astype(np.float64)
        muted = _vectors(markers, "mute", 1, dtype=bool)
        keep = (~muted) & (frames >= 0) if count else np.zeros(0, bool)
        frames, co = frames[keep], co[keep]
        points = np.full((max(length, int(frames.max(initial=-1)) + 1), 2), np.nan)
        points[frames, 0] = co[:, 0] * width
        points[frames, 1] = (1.0 - co[:, 1]) * height
        out[name] = points
    return out, (width, height)
