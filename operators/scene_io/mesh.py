"""Meshes and their skin: surfaces and vertex groups read (a rig's skin as one SkinnedMesh), vertex
groups and masks written, the evaluated (deformed) vertices, and a new skinned mesh built."""

from __future__ import annotations

import bpy
import numpy as np

from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.skinning import SkinnedMesh
from . import SceneError
from .arrays import foreach_vectors, object_matrix


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
    co = foreach_vectors(mesh.vertices, "co", 3).astype(np.float64)
    matrix = object_matrix(mesh_obj) if to_space is None else to_space @ object_matrix(mesh_obj)
    vertices = co @ matrix[:3, :3].T + matrix[:3, 3]
    mesh.calc_loop_triangles()
    triangles = foreach_vectors(mesh.loop_triangles, "vertices", 3, dtype=np.int32).astype(np.int64)
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
    return mesh.transformed(matrix)


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


def evaluated_mesh_vertices(mesh_obj: bpy.types.Object, arm_obj: bpy.types.Object) -> np.ndarray:
    """Deformed vertices of the evaluated mesh, in the armature's space."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = mesh_obj.evaluated_get(depsgraph)
    data = evaluated.data
    co = foreach_vectors(data.vertices, "co", 3).astype(np.float64)
    to_armature = np.linalg.inv(object_matrix(arm_obj)) @ object_matrix(mesh_obj)
    return co @ to_armature[:3, :3].T + to_armature[:3, 3]


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
