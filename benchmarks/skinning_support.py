"""Blender-side pieces the skinning benchmarks share (bench_weight_transfer, bench_autobind).

Finding character files, weight arrays (dense ⇄ sparse, cut to K influences), weight-less mesh
objects, Blender's two re-skinning tools (Data Transfer, Automatic Weights) and Kirin's transfer
with the same output form, poses sampled from a character's clips (or random ones), and the
error statistics. Import it as `kirin.benchmarks.skinning_support` (benchmarks/ is a namespace
folder of the editable `kirin` package), after bpy.

Pitfalls these helpers encode, found by bench_weight_transfer:
- the glTF importer leaves the first clip playing: re-skin with `pose_position = "REST"`;
- `foreach_set` on pose bones does not tag the depsgraph: `arm.update_tag()` + `view_layer.update()`;
- a channel one clip keys leaks into the next clip: reset the pose between clips;
- NLA tracks would mix in: `use_nla = False`.
"""

from __future__ import annotations

from pathlib import Path

from kirin.kirin_addon.io.scratch import private_blender_resources

private_blender_resources("kirin-bench-")

import bpy  # noqa: E402
import numpy as np  # noqa: E402

from kirin.kirin_addon.core.rotations import quat_from_axis_angle  # noqa: E402
from kirin.kirin_addon.core.skinning import SkinnedMesh  # noqa: E402
from kirin.operators import scene_io  # noqa: E402
from kirin.operators.headless.library import armature_actions  # noqa: E402
from kirin.operators.scene_io.mesh import read_skinned_mesh  # noqa: E402
from kirin.operators.scene_io.rig import evaluated_pose  # noqa: E402

MAX_INFLUENCES = 4
RANDOM_POSE_DEGREES = 35.0

Weights = tuple[np.ndarray, np.ndarray]  # (V,K) joint indices, (V,K) weights


# --------------------------------------------------------------------------- character files
def find_characters(assets: Path, globs: tuple[str, ...], only: list[str] | None = None) -> list[Path]:
    """Character files; `only` keeps those whose name (e.g. 'animals_pack/Fox') contains or whose
    stem equals one of the given words (case-insensitive)."""
    files = sorted({p for pattern in globs for p in assets.glob(pattern)})
    if only:
        files = [p for p in files if matches(character_name(p), p.stem, only)]
    return files


def matches(name: str, stem: str, only: list[str]) -> bool:
    words = [w.lower() for w in only]
    return any(w == stem.lower() or w in name.lower() for w in words)


def character_name(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


# --------------------------------------------------------------------------- weight arrays
def dense_weights(mesh: SkinnedMesh, joints: int) -> np.ndarray:
    """(V,J) weights, rows normalised like Blender's armature modifier (unweighted rows stay 0)."""
    dense = np.zeros((mesh.vertex_count, joints))
    rows = np.repeat(np.arange(mesh.vertex_count), mesh.joint_indices.shape[1])
    np.add.at(dense, (rows, mesh.joint_indices.ravel()), mesh.joint_weights.ravel())
    total = dense.sum(axis=1, keepdims=True)
    return np.divide(dense, total, out=np.zeros_like(dense), where=total > 0)


def sparse_weights(dense: np.ndarray) -> Weights:
    """(V,K) indices/weights holding every non-zero entry of dense (V,J) weights."""
    width = max(int((dense > 0).sum(axis=1).max()), 1)
    indices = np.argsort(-dense, axis=1, kind="stable")[:, :width]
    return indices, np.take_along_axis(dense, indices, axis=1)


def cut(weights: Weights, count: int = MAX_INFLUENCES) -> Weights:
    """The largest `count` influences of sparse weights (sorted largest first), renormalised."""
    indices, values = weights[0][:, :count], weights[1][:, :count]
    total = values.sum(axis=1, keepdims=True)
    return indices, np.divide(values, total, out=np.zeros_like(values), where=total > 0)


def concatenate(weights: list[Weights]) -> Weights:
    """Per-part sparse weights stacked into one (V,K) pair, padded with weight-0 slots."""
    width = max(w[0].shape[1] for w in weights)
    pad = [((0, 0), (0, width - w[0].shape[1])) for w in weights]
    return (np.concatenate([np.pad(w[0], p) for w, p in zip(weights, pad, strict=True)]),
            np.concatenate([np.pad(w[1], p) for w, p in zip(weights, pad, strict=True)]))


def unweighted(weights: Weights) -> int:
    return int(np.count_nonzero(weights[1].sum(axis=1) <= 0))


def influences(weights: Weights) -> int:
    return int((weights[1] > 0).sum(axis=1).max(initial=0))


# --------------------------------------------------------------------------- bpy objects
def read_array(collection, attribute: str, width: int, dtype) -> np.ndarray:
    buf = np.empty(len(collection) * width, dtype=dtype)
    collection.foreach_get(attribute, buf)
    return buf.reshape(-1, width)


def mesh_object(vertices: np.ndarray, triangles: np.ndarray, name: str, matrix) -> bpy.types.Object:
    """A weight-less triangle mesh object with the given local vertices and world matrix."""
    data = bpy.data.meshes.new(name)
    data.vertices.add(len(vertices))
    data.vertices.foreach_set("co", vertices.astype(np.float32).ravel())
    count = len(triangles)
    data.loops.add(count * 3)
    data.loops.foreach_set("vertex_index", triangles.astype(np.int32).ravel())
    data.polygons.add(count)
    data.polygons.foreach_set("loop_start", np.arange(0, count * 3, 3, dtype=np.int32))
    data.polygons.foreach_set("loop_total", np.full(count, 3, dtype=np.int32))
    data.update(calc_edges=True)
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    obj.matrix_world = matrix
    return obj


def merge_by_distance(data: bpy.types.Mesh, distance: float) -> int:
    """Mesh > Clean Up > Merge by Distance on mesh data; returns the vertex count left. Imported
    meshes are split at UV seams and hard edges; bone heat needs them welded."""
    import bmesh  # only importable once bpy is

    bm = bmesh.new()
    bm.from_mesh(data)
    bmesh.ops.remove_doubles(bm, verts=bm.verts, dist=distance)
    count = len(bm.verts)
    bm.to_mesh(data)
    bm.free()
    return count


# --------------------------------------------------------------------------- re-skinning tools
def read_weights(obj: bpy.types.Object, arm: bpy.types.Object, rig) -> Weights:
    """Vertex groups → (V,K) joints/weights; an object with no weight at all gives empty rows."""
    try:
        mesh = read_skinned_mesh(obj, arm, rig)
    except scene_io.SceneError:
        count = len(obj.data.vertices)
        return np.zeros((count, 1), dtype=np.int64), np.zeros((count, 1))
    return mesh.joint_indices, mesh.joint_weights


def data_transfer(target: bpy.types.Object, source_obj: bpy.types.Object, arm: bpy.types.Object,
                  rig) -> Weights:
    """Blender's Data Transfer modifier: all vertex groups by name, nearest face interpolated."""
    modifier = target.modifiers.new("DataTransfer", "DATA_TRANSFER")
    modifier.object = source_obj
    modifier.use_vert_data = True
    modifier.data_types_verts = {"VGROUP_WEIGHTS"}
    modifier.vert_mapping = "POLYINTERP_NEAREST"
    modifier.layers_vgroup_select_src = "ALL"
    modifier.layers_vgroup_select_dst = "NAME"
    with bpy.context.temp_override(object=target, active_object=target, selected_objects=[target],
                                   selected_editable_objects=[target]):
        # The modifier only writes into groups that exist: create them first ("Generate Data Layers").
        bpy.ops.object.datalayout_transfer(modifier=modifier.name)
        bpy.ops.object.modifier_apply(modifier=modifier.name)
    return read_weights(target, arm, rig)


def bone_heat(targets: list[bpy.types.Object], arm: bpy.types.Object, rig) -> list[Weights]:
    """Blender's Automatic Weights: all parts and then the armature selected, Ctrl+P > With
    Automatic Weights (one heat solve per object, as for a user)."""
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    for target in targets:
        target.select_set(True)
    arm.select_set(True)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.parent_set(type="ARMATURE_AUTO")
    return [read_weights(target, arm, rig) for target in targets]


def kirin_transfer(src_vertices: np.ndarray, src_triangles: np.ndarray, src_weights: np.ndarray,
                   dst_vertices: np.ndarray, dst_triangles: np.ndarray, method: str) -> tuple[Weights, dict]:
    """Kirin's transfer ("robust", "robust-uncut" or "10-NN") of dense (Vs,J) weights, cut to
    MAX_INFLUENCES (uncut: every influence kept, as Blender's tools keep them), and the result's own
    counts (matched / inpainted / fallback)."""
    from kirin.kirin_addon.bind.skin_weights import to_sparse
    from kirin.kirin_addon.bind.weight_transfer import TransferConfig, transfer_weights

    limit = 0 if method.endswith("uncut") else MAX_INFLUENCES
    if method.startswith("robust"):
        config = TransferConfig(method="robust", max_influences=limit)
    else:
        config = TransferConfig(method="nearest", k=10, max_influences=limit)
    result = transfer_weights(src_vertices, src_triangles, src_weights, dst_vertices, dst_triangles, config)
    indices, weights = to_sparse(result.weights, max_influences=limit)
    indices, weights = np.asarray(indices), np.asarray(weights, dtype=np.float64)
    weights = np.where(indices >= 0, weights, 0.0)  # in case padding is marked with −1
    counts = {key: int(np.count_nonzero(getattr(result, key))) for key in ("matched", "inpainted", "fallback")
              if getattr(result, key, None) is not None}
    return (np.maximum(indices, 0), weights), counts


def have_kirin_transfer() -> bool:
    try:
        import kirin.kirin_addon.bind.weight_transfer  # noqa: F401
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------- poses
def reset_pose(arm: bpy.types.Object) -> None:
    """Rest basis on every bone, so a channel one clip keys does not leak into the next clip."""
    bones = arm.pose.bones
    count = len(bones)
    bones.foreach_set("location", np.zeros(count * 3, dtype=np.float32))
    bones.foreach_set("scale", np.ones(count * 3, dtype=np.float32))
    bones.foreach_set("rotation_quaternion", np.tile(np.float32([1, 0, 0, 0]), count))
    bones.foreach_set("rotation_euler", np.zeros(count * 3, dtype=np.float32))
    bones.foreach_set("rotation_axis_angle", np.tile(np.float32([0, 0, 1, 0]), count))


def clip_frames(actions: list, frames: int) -> list[tuple[object, float]]:
    """`frames` (action, frame) samples spread evenly over the clips laid end to end."""
    ranges = [tuple(a.frame_range) for a in actions]
    lengths = np.array([max(end - start, 1.0) for start, end in ranges])
    edges = np.concatenate([[0.0], np.cumsum(lengths)])
    samples = []
    for u in (np.arange(frames) + 0.5) / frames * edges[-1]:
        k = int(np.searchsorted(edges, u, side="right") - 1)
        start, end = ranges[k]
        samples.append((actions[k], min(start + (u - edges[k]), end)))
    return samples


def clip_poses(arm: bpy.types.Object, rig, actions: list, frames: int) -> np.ndarray:
    """(T,J,4,4) pose matrices Blender evaluates at frames sampled over the authored clips."""
    anim = arm.animation_data
    anim.use_nla = False  # only the assigned action plays
    scene = bpy.context.scene
    poses = []
    for action, frame in clip_frames(actions, frames):
        if anim.action != action:
            reset_pose(arm)
            anim.action = action
            slot = next((s for s in action.slots if s.target_id_type == "OBJECT"), None)
            if slot is not None:
                anim.action_slot = slot
        scene.frame_set(int(np.floor(frame)), subframe=float(frame - np.floor(frame)))
        poses.append(evaluated_pose(arm, rig))
    return np.stack(poses)


def random_poses(arm: bpy.types.Object, rig, frames: int, rng: np.random.Generator) -> np.ndarray:
    """(T,J,4,4) Blender-evaluated poses with a random local rotation of up to 35° on every bone."""
    bones = arm.pose.bones
    count = len(bones)
    bones.foreach_set("rotation_mode", np.zeros(count, dtype=np.int32))  # enum 0 = QUATERNION
    reset_pose(arm)
    limit = np.radians(RANDOM_POSE_DEGREES)
    poses = []
    for _ in range(frames):
        rotation = quat_from_axis_angle(rng.normal(size=(count, 3)), rng.uniform(-limit, limit, count))
        bones.foreach_set("rotation_quaternion", rotation.astype(np.float32).ravel())
        arm.update_tag()  # foreach_set does not tag the depsgraph
        bpy.context.view_layer.update()
        poses.append(evaluated_pose(arm, rig))
    return np.stack(poses)


def character_poses(arm: bpy.types.Object, rig, frames: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """Poses from the armature's authored clips, or random ones when it has none."""
    actions = armature_actions(arm)
    if actions:
        return clip_poses(arm, rig, actions, frames), f"{len(actions)} clips"
    return random_poses(arm, rig, frames, rng), f"random ±{RANDOM_POSE_DEGREES:.0f}°"


# --------------------------------------------------------------------------- errors
def error_stats(deformed: np.ndarray, truth: np.ndarray, diagonal: float) -> dict[str, float]:
    """Mean / p95 / max of the per-vertex, per-frame error in % of the bounding-box diagonal."""
    error = np.linalg.norm(deformed - truth, axis=-1).ravel() / diagonal * 100.0
    return {"mean": float(error.mean()), "p95": float(np.percentile(error, 95)), "max": float(error.max())}
