"""glTF 2.0 reader (.glb, .gltf with external or base64 buffers): one skin as a Rig, every
animation as a Motion, and the skinned mesh (numpy only).

Coordinates are kept as glTF has them (Y up, metres); detecting the canonical frame is done
elsewhere. Choices made here:
- joints are the skin's joints in the skin's order; a joint's parent is its nearest ancestor
  node that is also a joint of the skin (none: a root). Non-joint ancestors (an "Armature" node
  with a rotation and scale, say) are part of the joints' world transforms;
- the rest is the joint nodes' world transform from their default TRS (not the bind pose of the
  inverse bind matrices, which some exporters leave different); rotations are orthonormalised,
  positions are exact;
- bone orientation: the node's world rotation turned by the shortest arc that brings its Y axis
  onto head → tail. Motions go through world deltas, so this choice never changes the animation;
- tails: the mean of the children's heads (the first child when they cancel out); leaves extend
  along parent → joint by half the parent's length;
- animations are sampled at `fps` from their first to their last key; LINEAR slerps rotations,
  STEP holds, CUBICSPLINE uses the key values only (tangents skipped, interpolated linearly).
  Translation of non-root joints and morph weights are ignored; scale only enters through the
  orthonormalised world rotations;
- the mesh is what a glTF viewer shows at the default pose (sum of weights · joint world ·
  inverse bind), so it matches the rest rig even where the file's bind pose differs from its
  default pose. As the glTF spec requires for skinned meshes, the mesh node's own transform only
  applies to vertices without weights. `bind_vertices` / `bind_matrices` keep the bind pose
  (mesh node world transform applied) for checks. The mesh gathers every mesh bound to this skin,
  to another skin with the very same joints, or rigidly parented under one of its joints.
"""

from __future__ import annotations

import base64
import json
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import numpy as np

from ..core.motion import Motion, motion_from_world_transforms
from ..core.rig import Rig
from ..core.rotations import (
    compose,
    orthonormalize,
    quat_normalize,
    quat_slerp,
    quat_to_matrix,
    rotation_between,
)
from ..core.skinning import SkinnedMesh, linear_blend_skinning
from .bvh import unique_names

_GLB_MAGIC = b"glTF"
_CHUNK_JSON = 0x4E4F534A
_CHUNK_BIN = 0x004E4942
_COMPONENTS = {5120: "<i1", 5121: "<u1", 5122: "<i2", 5123: "<u2", 5125: "<u4", 5126: "<f4"}
_NORMALIZE = {5120: 127.0, 5121: 255.0, 5122: 32767.0, 5123: 65535.0}
_WIDTHS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
_MIN_LENGTH = 1e-3  # of the body size: the shortest bone the loader will create


class GltfError(ValueError):
    """A glTF file that cannot be read; the message is user-facing."""


@dataclass
class GltfAsset:
    rig: Rig
    clips: dict[str, Motion]
    mesh: SkinnedMesh | None
    joint_nodes: list[int]  # glTF node index of each rig joint
    joint_world_rest: np.ndarray  # (J,4,4) world matrices of the joint nodes at default TRS (with scale)
    inverse_bind_matrices: np.ndarray  # (J,4,4) as stored in the skin (identity when absent)
    bind_matrices: np.ndarray  # (J,4,4) joint bind transforms in the rig frame: M_mesh · IBM⁻¹
    bind_vertices: np.ndarray | None  # (V,3) mesh in its bind pose, mesh node world transforms applied


class _Document:
    """The JSON of a .gltf/.glb with its buffers, and typed accessor reads."""

    def __init__(self, path: Path):
        data = path.read_bytes()
        binary = None
        if data[:4] == _GLB_MAGIC:
            self.json, binary = self._split_glb(data)
        else:
            try:
                self.json = json.loads(data.decode("utf-8-sig"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise GltfError(f"Not a glTF file (invalid JSON: {exc}).") from exc
        if not isinstance(self.json, dict) or "asset" not in self.json:
            raise GltfError("Not a glTF file (no 'asset' entry).")
        version = str(self.json["asset"].get("version", ""))
        if not version.startswith("2"):
            raise GltfError(f"Only glTF 2.0 is supported, this file is version '{version}'.")
        buffers = self.json.get("buffers", [])
        self.buffers = [self._load_buffer(i, b, path, binary) for i, b in enumerate(buffers)]
        self.nodes: list[dict] = self.json.get("nodes", [])
        self._accessors: dict[int, np.ndarray] = {}
        self.parent = {}
        for index, node in enumerate(self.nodes):
            for child in node.get("children", []):
                self.parent[child] = index

    @staticmethod
    def _split_glb(data: bytes) -> tuple[dict, bytes | None]:
        if len(data) < 20:
            raise GltfError("Truncated .glb file.")
        _, version, length = struct.unpack_from("<4sII", data, 0)
        if version != 2:
            raise GltfError(f"Only glTF 2.0 binaries are supported (version {version}).")
        end = min(length, len(data))
        offset, document, binary = 12, None, None
        while offset + 8 <= end:
            size, kind = struct.unpack_from("<II", data, offset)
            offset += 8
            chunk = data[offset:offset + size]
            if len(chunk) < size:
                raise GltfError("Truncated .glb chunk.")
            if kind == _CHUNK_JSON and document is None:
                try:
                    document = json.loads(chunk.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise GltfError(f"Invalid JSON chunk in .glb: {exc}") from exc
            elif kind == _CHUNK_BIN and binary is None:
                binary = chunk
            offset += size
        if document is None:
            raise GltfError("The .glb file has no JSON chunk.")
        return document, binary

    @staticmethod
    def _load_buffer(index: int, buffer: dict, path: Path, binary: bytes | None) -> bytes:
        uri = buffer.get("uri")
        if uri is None:
            if index != 0 or binary is None:
                raise GltfError(f"Buffer {index} has no data (no uri and no GLB binary chunk).")
            data = binary
        elif uri.startswith("data:"):
            header, _, payload = uri.partition(",")
            if not header.endswith(";base64"):
                raise GltfError(f"Buffer {index}: only base64 data URIs are supported.")
            data = base64.b64decode(payload)
        else:
            file = path.parent / unquote(uri)
            if not file.is_file():
                raise GltfError(f"Buffer {index}: external file '{uri}' not found next to {path.name}.")
            data = file.read_bytes()
        if len(data) < int(buffer.get("byteLength", 0)):
            raise GltfError(f"Buffer {index} is shorter than its declared byteLength.")
        return data

    def accessor(self, index: int) -> np.ndarray:
        """(count, width) read-only array: float64 for float or normalized data, int64 otherwise."""
        # Samplers often share their key times: read each accessor once.
        if index not in self._accessors:
            array = self._read_accessor(index)
            array.setflags(write=False)
            self._accessors[index] = array
        return self._accessors[index]

    def _read_accessor(self, index: int) -> np.ndarray:
        acc = self.json["accessors"][index]
        if "sparse" in acc:
            raise GltfError(f"Accessor {index} is sparse; sparse accessors are not supported.")
        component = acc["componentType"]
        if component not in _COMPONENTS:
            raise GltfError(f"Accessor {index} has an unknown component type {component}.")
        dtype = np.dtype(_COMPONENTS[component])
        width = _WIDTHS[acc["type"]]
        count = int(acc["count"])
        if acc["type"] in ("MAT2", "MAT3") and dtype.itemsize < 4:
            # Such matrices have padded columns; no skinning/animation data uses them.
            raise GltfError(f"Accessor {index}: {acc['type']} with 1- or 2-byte components is not supported.")
        if "bufferView" not in acc:
            raw = np.zeros((count, width), dtype=dtype)
        else:
            view = self.json["bufferViews"][acc["bufferView"]]
            buffer = self.buffers[view["buffer"]]
            element = width * dtype.itemsize
            stride = int(view.get("byteStride") or element)
            start = int(view.get("byteOffset", 0)) + int(acc.get("byteOffset", 0))
            view_end = int(view.get("byteOffset", 0)) + int(view["byteLength"])
            if count and (start + stride * (count - 1) + element > min(view_end, len(buffer))):
                raise GltfError(f"Accessor {index} reads past the end of its buffer view.")
            raw = np.ndarray((count, width), dtype=dtype, buffer=buffer, offset=start,
                             strides=(stride, dtype.itemsize)).copy()
        if acc.get("normalized") and component in _NORMALIZE:
            return np.maximum(raw.astype(np.float64) / _NORMALIZE[component], -1.0)
        return raw.astype(np.float64 if dtype.kind == "f" else np.int64)

    # ------------------------------------------------------------------ nodes
    def default_trs(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        node = self.nodes[index]
        t = np.asarray(node.get("translation", [0.0, 0.0, 0.0]), dtype=np.float64)
        x, y, z, w = node.get("rotation", [0.0, 0.0, 0.0, 1.0])
        s = np.asarray(node.get("scale", [1.0, 1.0, 1.0]), dtype=np.float64)
        return t, quat_normalize(np.array([w, x, y, z], dtype=np.float64)), s

    def local_matrix(self, index: int) -> np.ndarray:
        node = self.nodes[index]
        if "matrix" in node:
            return np.asarray(node["matrix"], dtype=np.float64).reshape(4, 4).T  # column-major
        t, r, s = self.default_trs(index)
        return compose(quat_to_matrix(r) * s, t)

    def ancestors_first(self, indices: list[int]) -> list[int]:
        """The given nodes and all their ancestors, parents before children."""
        order: list[int] = []
        seen: set[int] = set()
        for start in indices:
            chain = []
            node: int | None = start
            while node is not None and node not in seen:
                chain.append(node)
                seen.add(node)
                node = self.parent.get(node)
                if len(chain) > len(self.nodes):
                    raise GltfError("The node hierarchy has a cycle.")
            order.extend(reversed(chain))
        return order

    def world_matrices(self, indices: list[int]) -> dict[int, np.ndarray]:
        world: dict[int, np.ndarray] = {}
        for node in self.ancestors_first(indices):
            parent = self.parent.get(node)
            local = self.local_matrix(node)
            world[node] = local if parent is None else world[parent] @ local
        return world


def _triangles(indices: np.ndarray, mode: int) -> np.ndarray:
    if mode == 4:
        return indices[: indices.size // 3 * 3].reshape(-1, 3)
    count = max(indices.size - 2, 0)
    k = np.arange(count)
    if mode == 5:  # strip: every other triangle flips to keep the winding
        odd = k % 2 == 1
        a = np.where(odd, indices[k + 1], indices[k])
        b = np.where(odd, indices[k], indices[k + 1])
        return np.stack([a, b, indices[k + 2]], axis=-1)
    return np.stack([np.full(count, indices[0] if indices.size else 0), indices[k + 1], indices[k + 2]],
                    axis=-1)  # fan


def _sample(doc: _Document, sampler: dict, times: np.ndarray, rotation: bool) -> np.ndarray:
    """Values of one animation sampler at `times` ((T,4) w,x,y,z for rotations)."""
    keys = doc.accessor(sampler["input"])[:, 0]
    values = doc.accessor(sampler["output"])
    interpolation = sampler.get("interpolation", "LINEAR")
    if interpolation == "CUBICSPLINE":
        if values.shape[0] != 3 * keys.size:
            raise GltfError("A CUBICSPLINE sampler's output must hold 3 values per key.")
        values = values[1::3]  # (in-tangent, value, out-tangent) per key: keep the value
    if values.shape[0] != keys.size or keys.size == 0:
        raise GltfError("An animation sampler has mismatched input and output counts.")
    if rotation:
        values = quat_normalize(values[:, [3, 0, 1, 2]])
    if keys.size == 1:
        return np.repeat(values[:1], times.size, axis=0)
    after = np.searchsorted(keys, times, side="right") - 1
    if interpolation == "STEP":
        return values[np.clip(after, 0, keys.size - 1)]
    lo = np.clip(after, 0, keys.size - 2)
    span = keys[lo + 1] - keys[lo]
    frac = np.clip((times - keys[lo]) / np.where(span > 0, span, 1.0), 0.0, 1.0)
    if rotation:
        return quat_slerp(values[lo], values[lo + 1], frac)
    return values[lo] + (values[lo + 1] - values[lo]) * frac[:, None]


def _skin_parents(doc: _Document, joint_nodes: list[int]) -> np.ndarray:
    lookup = {node: k for k, node in enumerate(joint_nodes)}
    parents = np.full(len(joint_nodes), -1, dtype=np.int64)
    for k, node in enumerate(joint_nodes):
        ancestor = doc.parent.get(node)
        steps = 0
        while ancestor is not None and ancestor not in lookup:
            ancestor = doc.parent.get(ancestor)
            steps += 1
            if steps > len(doc.nodes):
                raise GltfError("The node hierarchy has a cycle.")
        if ancestor is not None:
            parents[k] = lookup[ancestor]
    return parents


def _build_rig(names: list[str], parents: np.ndarray, world_rest: np.ndarray) -> tuple[Rig, np.ndarray]:
    """The rig and the orthonormal world rotations W_rest of the joint nodes."""
    heads = world_rest[:, :3, 3]
    node_rot = orthonormalize(world_rest[:, :3, :3])
    count = len(names)
    size = float(np.max(heads.max(0) - heads.min(0))) if count > 1 else 0.0
    size = size if size > 0 else max(float(np.abs(heads).max()), 1.0)
    eps = 1e-5 * size
    shape = Rig(names, parents, np.repeat(np.eye(4)[None], count, 0), heads.copy())
    tails = heads.copy()
    for j in shape.topological_order:
        offsets = [heads[c] - heads[j] for c in shape.children[j]]
        offsets = [o for o in offsets if np.linalg.norm(o) > eps]
        p = parents[j]
        if offsets:
            vector = np.mean(offsets, axis=0)
            if np.linalg.norm(vector) <= 0.1 * max(np.linalg.norm(o) for o in offsets):
                vector = offsets[0]  # children that cancel out (left/right legs only): use the first
        elif p >= 0 and np.linalg.norm(heads[j] - heads[p]) > eps:
            direction = heads[j] - heads[p]
            parent_length = max(np.linalg.norm(tails[p] - heads[p]), np.linalg.norm(direction))
            vector = direction / np.linalg.norm(direction) * 0.5 * parent_length
        elif p >= 0 and np.linalg.norm(tails[p] - heads[p]) > eps:
            vector = 0.5 * (tails[p] - heads[p])
        else:
            vector = node_rot[j][:, 1] * 0.05 * size  # a lone joint: along its own Y axis
        length = np.linalg.norm(vector)
        if length < _MIN_LENGTH * size:
            vector = vector / length * _MIN_LENGTH * size
        tails[j] = heads[j] + vector
    direction = tails - heads
    turn = quat_to_matrix(rotation_between(node_rot[:, :, 1], direction))
    rest = compose(turn @ node_rot, heads)
    return Rig(names, parents, rest, tails), node_rot


def _clip(doc: _Document, animation: dict, rig: Rig, joint_nodes: list[int], rest_rot: np.ndarray,
          fps: float) -> Motion:
    channels = []
    relevant = set(doc.ancestors_first(joint_nodes))
    start, end = np.inf, -np.inf
    for channel in animation.get("channels", []):
        sampler = animation["samplers"][channel["sampler"]]
        keys = doc.accessor(sampler["input"])
        if keys.size == 0:
            raise GltfError(f"Animation '{animation.get('name', '')}' has a sampler without keys.")
        # Every channel (morph weights too) sets the clip's time span, as in the authoring tool.
        start, end = min(start, float(keys[0, 0])), max(end, float(keys[-1, 0]))
        target = channel.get("target", {})
        node, path = target.get("node"), target.get("path")
        if node is None or path not in ("translation", "rotation", "scale"):
            continue  # morph weights and extension pointers do not move joints
        channels.append((node, path, sampler))
    if not np.isfinite(start):
        start = end = 0.0
    frames = int(np.ceil((end - start) * fps - 1e-6)) + 1
    times = start + np.arange(frames) / fps

    trs = {}
    for node, path, sampler in channels:
        if node not in relevant:
            continue
        if node not in trs:
            trs[node] = [np.repeat(v[None], frames, 0) for v in doc.default_trs(node)]
        slot = ("translation", "rotation", "scale").index(path)
        trs[node][slot] = _sample(doc, sampler, times, rotation=path == "rotation")

    world: dict[int, np.ndarray] = {}
    for node in doc.ancestors_first(joint_nodes):
        if node in trs and "matrix" not in doc.nodes[node]:  # matrix nodes cannot be animated
            t, r, s = trs[node]
            local = compose(quat_to_matrix(r) * s[:, None, :], t)
        else:
            local = np.broadcast_to(doc.local_matrix(node), (frames, 4, 4))
        parent = doc.parent.get(node)
        world[node] = local if parent is None else world[parent] @ local
    joint_world = np.stack([world[n] for n in joint_nodes], axis=1)  # (T,J,4,4)
    # Bone frames differ from node frames by the fixed turn chosen in _build_rig.
    node_to_bone = np.swapaxes(rest_rot, -1, -2) @ rig.rest_rotations
    bones = compose(orthonormalize(joint_world[..., :3, :3]) @ node_to_bone[None], joint_world[..., :3, 3])
    # Translations of joints below the root (the usual hip bob) become Motion.translations.
    return motion_from_world_transforms(rig, bones, fps, tolerance=1e-7)


def _primitives(doc: _Document, node: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """(positions, triangles, joint indices, weights) of each triangle primitive of a mesh node."""
    for primitive in doc.json["meshes"][doc.nodes[node]["mesh"]]["primitives"]:
        mode = primitive.get("mode", 4)
        attributes = primitive.get("attributes", {})
        if mode not in (4, 5, 6) or "POSITION" not in attributes:
            continue  # points and lines have no surface to skin
        positions = doc.accessor(attributes["POSITION"])[:, :3]
        count = positions.shape[0]
        indices = doc.accessor(primitive["indices"]).ravel() if "indices" in primitive else np.arange(count)
        triangles = _triangles(indices.astype(np.int64), mode)
        if triangles.size and (triangles.max() >= count or triangles.min() < 0):
            raise GltfError(f"Mesh of node {node} has triangle indices beyond its vertices.")
        joints, weights = [], []
        for set_index in (0, 1):
            if f"JOINTS_{set_index}" in attributes and f"WEIGHTS_{set_index}" in attributes:
                joints.append(doc.accessor(attributes[f"JOINTS_{set_index}"]))
                weights.append(doc.accessor(attributes[f"WEIGHTS_{set_index}"]))
        if joints:
            joint_idx = np.concatenate(joints, axis=1).astype(np.int64)
            joint_w = np.clip(np.concatenate(weights, axis=1), 0.0, None)
        else:
            joint_idx = np.zeros((count, 1), dtype=np.int64)
            joint_w = np.zeros((count, 1))
        yield positions, triangles, joint_idx, joint_w


def _transform(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    return points @ matrix[:3, :3].T + matrix[:3, 3]


def _skinned_mesh(doc: _Document, joint_nodes: list[int], joint_world_rest: np.ndarray,
                  bind_matrices: np.ndarray) -> tuple[SkinnedMesh | None, np.ndarray | None]:
    """(mesh at the default pose, the same mesh in the bind pose) for one skin.

    Besides the meshes bound to this skin, it takes the meshes of skins with the very same joint
    list (characters split into body/head/legs meshes) and rigid meshes parented under a joint
    (weight 1 on that joint), so the mesh is the whole character.
    """
    skins = doc.json["skins"]
    same = {s for s, skin in enumerate(skins) if [int(n) for n in skin.get("joints", [])] == joint_nodes}
    lookup = {node: k for k, node in enumerate(joint_nodes)}
    skinned, rigid = [], []
    for index, node in enumerate(doc.nodes):
        if "mesh" not in node:
            continue
        if node.get("skin") in same:
            skinned.append(index)
        elif "skin" not in node:
            ancestor = doc.parent.get(index)
            for _ in range(len(doc.nodes)):
                if ancestor is None or ancestor in lookup:
                    break
                ancestor = doc.parent.get(ancestor)
            if ancestor is not None and ancestor in lookup:
                rigid.append((index, lookup[ancestor]))
    node_world = doc.world_matrices(skinned + [n for n, _ in rigid])
    count = len(joint_nodes)
    parts = []
    for node in skinned:
        matrix = node_world[node]
        skin = skins[doc.nodes[node]["skin"]]
        inverse_bind = _inverse_bind_matrices(doc, skin, count)
        for positions, triangles, joint_idx, joint_w in _primitives(doc, node):
            if np.any((joint_w > 0) & ((joint_idx >= count) | (joint_idx < 0))):
                raise GltfError(f"Mesh of node {node} refers to joints the skin does not have.")
            joint_idx = np.where(joint_w > 0, joint_idx, 0)
            total = joint_w.sum(axis=1, keepdims=True)
            joint_w = np.where(total > 0, joint_w / np.where(total > 0, total, 1.0), 0.0)
            bind = _transform(matrix, positions)
            shown = linear_blend_skinning(positions, joint_idx, joint_w, joint_world_rest @ inverse_bind)
            shown = np.where(total > 0, shown, bind)  # unweighted vertices follow the mesh node
            parts.append((shown, bind, triangles, joint_idx, joint_w))
    for node, joint in rigid:
        # A rigid part follows its joint; its bind pose is where the joint's bind carries it.
        to_bind = bind_matrices[joint] @ np.linalg.inv(joint_world_rest[joint])
        for positions, triangles, _, _ in _primitives(doc, node):
            shown = _transform(node_world[node], positions)
            ones = np.ones((shown.shape[0], 1))
            parts.append((shown, _transform(to_bind, shown), triangles, ones.astype(np.int64) * joint, ones))
    if not parts:
        return None, None
    width = max(p[3].shape[1] for p in parts)
    offsets = np.cumsum([0] + [p[0].shape[0] for p in parts])

    def padded(array: np.ndarray) -> np.ndarray:
        return np.pad(array, ((0, 0), (0, width - array.shape[1])))

    mesh = SkinnedMesh(
        vertices=np.concatenate([p[0] for p in parts]),
        triangles=np.concatenate([p[2] + o for p, o in zip(parts, offsets, strict=False)]),
        joint_indices=np.concatenate([padded(p[3]) for p in parts]),
        joint_weights=np.concatenate([padded(p[4]) for p in parts]),
    )
    return mesh, np.concatenate([p[1] for p in parts])


def _inverse_bind_matrices(doc: _Document, skin: dict, count: int) -> np.ndarray:
    if "inverseBindMatrices" not in skin:
        return np.repeat(np.eye(4)[None], count, axis=0)
    matrices = doc.accessor(skin["inverseBindMatrices"]).reshape(-1, 4, 4).transpose(0, 2, 1)
    if matrices.shape[0] < count:
        raise GltfError("A skin has fewer inverse bind matrices than joints.")
    return matrices[:count].copy()


def load_gltf(path: str | os.PathLike, skin_index: int = 0, fps: float = 30.0) -> GltfAsset:
    """Read one skin of a .glb/.gltf file with all its animations (sampled at `fps`)."""
    if not fps > 0:
        raise GltfError("fps must be positive.")
    doc = _Document(Path(path))
    skins = doc.json.get("skins", [])
    if not skins:
        raise GltfError("The file has no skin (no armature to animate).")
    if not 0 <= skin_index < len(skins):
        raise GltfError(f"Skin {skin_index} does not exist; the file has {len(skins)} skin(s).")
    skin = skins[skin_index]
    joint_nodes = [int(n) for n in skin.get("joints", [])]
    if not joint_nodes:
        raise GltfError(f"Skin {skin_index} has no joints.")
    if len(set(joint_nodes)) != len(joint_nodes):
        raise GltfError(f"Skin {skin_index} lists a joint twice.")
    count = len(joint_nodes)
    inverse_bind = _inverse_bind_matrices(doc, skin, count)

    world = doc.world_matrices(joint_nodes)
    joint_world_rest = np.stack([world[n] for n in joint_nodes])
    names = unique_names([doc.nodes[n].get("name") or f"joint_{k}" for k, n in enumerate(joint_nodes)])
    rig, rest_rot = _build_rig(names, _skin_parents(doc, joint_nodes), joint_world_rest)

    # The bind pose in the rig frame, through the (first) mesh node bound to this very skin.
    bound = [i for i, n in enumerate(doc.nodes) if "mesh" in n and n.get("skin") == skin_index]
    mesh_world = doc.world_matrices(bound[:1])[bound[0]] if bound else np.eye(4)
    bind_matrices = mesh_world @ np.linalg.inv(inverse_bind)
    mesh, bind_vertices = _skinned_mesh(doc, joint_nodes, joint_world_rest, bind_matrices)
    if mesh is not None and np.any(mesh.joint_weights > 0):
        # Joints that no vertex follows (IK targets, pole targets, roots) are not deforming.
        weighted = np.zeros(count, dtype=bool)
        weighted[np.unique(mesh.joint_indices[mesh.joint_weights > 0])] = True
        rig.deform = weighted

    animations = doc.json.get("animations", [])
    clip_names = unique_names([a.get("name") or f"animation_{i}" for i, a in enumerate(animations)])
    clips = {name: _clip(doc, animation, rig, joint_nodes, rest_rot, fps)
             for name, animation in zip(clip_names, animations, strict=True)}
    return GltfAsset(rig, clips, mesh, joint_nodes, joint_world_rest, inverse_bind, bind_matrices,
                     bind_vertices)
