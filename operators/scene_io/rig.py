"""The armature an operator acts on: found from the selection, checked, read as a Rig (armature space);
its evaluated pose; and a new armature built from a Rig."""

from __future__ import annotations

import bpy
import numpy as np

from ...kirin_addon.core.rig import Rig, RigError
from . import SceneError
from .arrays import foreach_matrices, foreach_vectors


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
    rest = foreach_matrices(bones, "matrix_local")
    tails = foreach_vectors(bones, "tail_local", 3).astype(np.float64)
    deform = foreach_vectors(bones, "use_deform", 1, dtype=bool)
    connected = foreach_vectors(bones, "use_connect", 1, dtype=bool)
    # Blender's own parent-relative rest (bone_mat, head relative to the parent's tail) keeps FK
    # bit-compatible with its pose evaluation, which matters for tiny bones on big rigs.
    bone_mat = np.swapaxes(foreach_vectors(bones, "matrix", 9).reshape(-1, 3, 3), -1, -2).astype(np.float64)
    local_head = foreach_vectors(bones, "head", 3).astype(np.float64)
    lengths = foreach_vectors(bones, "length", 1).astype(np.float64)
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


def evaluated_pose(obj: bpy.types.Object, rig: Rig) -> np.ndarray:
    """(J,4,4) armature-space pose matrices of the evaluated armature, in rig joint order."""
    pose_bones = obj.pose.bones
    matrices = foreach_matrices(pose_bones, "matrix")
    order = [pose_bones.find(n) for n in rig.names]
    return matrices[order]


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
