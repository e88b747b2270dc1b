"""glTF loader: every shared asset loads into a valid rig, and poses match an independent
evaluation of the node hierarchy (own GLB/accessor reading, TRS matrices and slerp)."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.core.skinning import linear_blend_skinning, skin_matrices
from kirin.kirin_addon.io.gltf import GltfError, load_gltf

from assets_support import ASSETS

GLTF_FILES = sorted(
    [p for p in ASSETS.glob("*/*") if p.suffix.lower() in (".glb", ".gltf")]
    + list(ASSETS.glob("quaternius/*/*.glb"))
) if ASSETS.is_dir() else []
FOX = ASSETS / "khronos_fox" / "Fox.glb"
CESIUM = ASSETS / "khronos_cesiumman" / "CesiumMan.glb"


def _need_assets() -> None:
    if not ASSETS.is_dir():
        pytest.skip("../shared/assets is missing")


# --------------------------------------------------------------------------- independent reference
class _Reference:
    """A deliberately plain glTF evaluator: float accessors, TRS nodes, LINEAR samplers."""

    def __init__(self, path: Path):
        data = path.read_bytes()
        json_len = struct.unpack("<I", data[12:16])[0]
        self.doc = json.loads(data[20:20 + json_len])
        bin_start = 20 + json_len + 8
        self.bin = data[bin_start:]
        self.parent = {c: i for i, n in enumerate(self.doc["nodes"]) for c in n.get("children", [])}

    def floats(self, index: int) -> np.ndarray:
        acc = self.doc["accessors"][index]
        view = self.doc["bufferViews"][acc["bufferView"]]
        width = {"SCALAR": 1, "VEC3": 3, "VEC4": 4, "MAT4": 16}[acc["type"]]
        assert acc["componentType"] == 5126 and "byteStride" not in view
        start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
        out = np.frombuffer(self.bin, "<f4", acc["count"] * width, start).astype(np.float64)
        return out.reshape(acc["count"], width)

    @staticmethod
    def trs_matrix(t, q_xyzw, s) -> np.ndarray:
        x, y, z, w = np.asarray(q_xyzw, dtype=np.float64) / np.linalg.norm(q_xyzw)
        rot = np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ])
        m = np.eye(4)
        m[:3, :3] = rot @ np.diag(s)
        m[:3, 3] = t
        return m

    @staticmethod
    def slerp(a: np.ndarray, b: np.ndarray, u: float) -> np.ndarray:
        if np.dot(a, b) < 0:
            b = -b
        angle = np.arccos(np.clip(np.dot(a, b), -1, 1))
        if angle < 1e-9:
            return a
        return (np.sin((1 - u) * angle) * a + np.sin(u * angle) * b) / np.sin(angle)

    def node_trs(self, index: int) -> list[np.ndarray]:
        node = self.doc["nodes"][index]
        return [np.array(node.get("translation", [0, 0, 0]), float),
                np.array(node.get("rotation", [0, 0, 0, 1]), float),
                np.array(node.get("scale", [1, 1, 1]), float)]

    def world(self, node: int, overrides: dict) -> np.ndarray:
        m = np.eye(4)
        while node is not None:
            fixed = self.doc["nodes"][node].get("matrix")
            if fixed is not None:
                m = np.array(fixed, float).reshape(4, 4).T @ m
            else:
                t, r, s = overrides.get(node, self.node_trs(node))
                m = self.trs_matrix(t, r, s) @ m
            node = self.parent.get(node)
        return m

    def pose_at(self, animation: int, time: float, skip_translation: set[int]) -> dict:
        overrides: dict[int, list[np.ndarray]] = {}
        anim = self.doc["animations"][animation]
        for channel in anim["channels"]:
            node, path = channel["target"]["node"], channel["target"]["path"]
            if path == "weights" or (path == "translation" and node in skip_translation):
                continue
            sampler = anim["samplers"][channel["sampler"]]
            keys = self.floats(sampler["input"])[:, 0]
            values = self.floats(sampler["output"])
            k = int(np.clip(np.searchsorted(keys, time) - 1, 0, len(keys) - 2))
            u = float(np.clip((time - keys[k]) / (keys[k + 1] - keys[k]), 0, 1))
            if path == "rotation":
                value = self.slerp(values[k], values[k + 1], u)
            else:
                value = values[k] * (1 - u) + values[k + 1] * u
            slot = ["translation", "rotation", "scale"].index(path)
            overrides.setdefault(node, self.node_trs(node))[slot] = value
        return overrides

    def clip_start(self, animation: int) -> float:
        anim = self.doc["animations"][animation]
        return min(float(self.floats(s["input"])[0, 0]) for s in anim["samplers"])


# --------------------------------------------------------------------------- all assets
@pytest.mark.parametrize("path", GLTF_FILES, ids=lambda p: str(p.relative_to(ASSETS)))
def test_every_asset_loads(path: Path) -> None:
    _need_assets()
    asset = load_gltf(path)
    rig = asset.rig
    rig.validate()
    rotations = rig.rest_rotations
    assert np.allclose(rotations @ np.swapaxes(rotations, -1, -2), np.eye(3), atol=1e-9)
    assert np.allclose(np.linalg.det(rotations), 1.0)
    # Y axis of each bone along head -> tail, like Blender.
    direction = (rig.tails - rig.heads) / rig.lengths[:, None]
    assert np.allclose(rotations[:, :, 1], direction, atol=1e-9)
    # Heads are the joint nodes' world positions (from the raw node hierarchy).
    assert np.allclose(rig.heads, asset.joint_world_rest[:, :3, 3])
    rest_motion = Motion.rest(rig, frames=2)
    assert np.allclose(joint_positions(rig, rest_motion), rig.heads[None], atol=1e-9 * rig.body_size)

    doc = json.loads(path.read_text()) if path.suffix == ".gltf" else _Reference(path).doc
    assert len(asset.clips) == len(doc.get("animations", []))
    for motion in asset.clips.values():
        motion.check_rig(rig)
        assert motion.frame_count >= 1 and np.all(np.isfinite(motion.rotations))
        assert np.all(np.isfinite(motion.root_positions))

    mesh = asset.mesh
    assert mesh is not None
    assert mesh.triangles.min() >= 0 and mesh.triangles.max() < mesh.vertex_count
    assert mesh.joint_indices.max() < rig.joint_count
    sums = mesh.joint_weights.sum(1)
    assert np.allclose(sums[sums > 0], 1.0)
    # The mesh is shown at the rest pose: moving the joints from bind to rest does that.
    moved = linear_blend_skinning(asset.bind_vertices, mesh.joint_indices, mesh.joint_weights,
                                  skin_matrices(asset.bind_matrices, asset.joint_world_rest))
    extent = np.ptp(mesh.vertices, axis=0).max()
    assert np.abs(moved - mesh.vertices).max() < 1e-5 * extent


def test_heads_match_independent_hierarchy() -> None:
    _need_assets()
    for path in (FOX, CESIUM):
        ref = _Reference(path)
        asset = load_gltf(path)
        heads = np.array([ref.world(n, {})[:3, 3] for n in asset.joint_nodes])
        assert np.allclose(asset.rig.heads, heads, atol=1e-9 * asset.rig.body_size)
        skin = ref.doc["skins"][0]
        assert asset.joint_nodes == skin["joints"]
        assert asset.rig.names == [ref.doc["nodes"][n]["name"] for n in skin["joints"]]


@pytest.mark.parametrize("path", [FOX, CESIUM], ids=["Fox", "CesiumMan"])
def test_bind_pose_skinning_is_identity(path: Path) -> None:
    _need_assets()
    asset = load_gltf(path)
    mesh = asset.mesh
    ibm = asset.inverse_bind_matrices
    ref = _Reference(path)
    stored = ref.floats(ref.doc["skins"][0]["inverseBindMatrices"]).reshape(-1, 4, 4).transpose(0, 2, 1)
    assert np.allclose(ibm, stored)
    # These two files are bound in their default pose, so skinning the bind mesh with
    # joint-at-rest · inverse bind (in the mesh node's frame) leaves it unchanged.
    mats = skin_matrices(asset.bind_matrices, asset.joint_world_rest)
    out = linear_blend_skinning(asset.bind_vertices, mesh.joint_indices, mesh.joint_weights, mats)
    extent = np.ptp(asset.bind_vertices, axis=0).max()
    assert np.abs(out - asset.bind_vertices).max() < 1e-4 * extent
    assert np.abs(mesh.vertices - asset.bind_vertices).max() < 1e-4 * extent


@pytest.mark.parametrize("path", [FOX, CESIUM], ids=["Fox", "CesiumMan"])
def test_animated_positions_match_node_hierarchy(path: Path) -> None:
    _need_assets()
    fps = 30.0
    asset = load_gltf(path, fps=fps)
    rig = asset.rig
    ref = _Reference(path)
    for index, (name, motion) in enumerate(asset.clips.items()):
        assert name == ref.doc["animations"][index].get("name", f"animation_{index}")
        positions = joint_positions(rig, motion)
        start = ref.clip_start(index)
        for frame in np.linspace(0, motion.frame_count - 1, 5).astype(int):
            pose = ref.pose_at(index, start + frame / fps, skip_translation=set())
            expected = np.array([ref.world(n, pose)[:3, 3] for n in asset.joint_nodes])
            err = np.abs(positions[frame] - expected).max()  # translations included: every joint
            assert err < 1e-5 * rig.body_size, (name, frame, err)



# --------------------------------------------------------------------------- synthetic files
def _tiny_gltf(interpolation: str = "LINEAR", embed: bool = True, tmp_path: Path | None = None) -> dict:
    """Two joints under a scaled, rotated armature node, one rotation channel, one weighted quad."""
    times = np.array([0.0, 1.0], "<f4")
    angle = np.pi / 2
    rot_keys = np.array([[0, 0, 0, 1], [0, 0, np.sin(angle / 2), np.cos(angle / 2)]], "<f4")
    if interpolation == "CUBICSPLINE":
        rot_keys = np.stack([np.zeros_like(rot_keys), rot_keys, np.zeros_like(rot_keys)], 1).reshape(-1, 4)
    positions = np.array([[0, 0, 0], [1, 0, 0], [1, 2, 0], [0, 2, 0]], "<f4")
    indices = np.array([0, 1, 2, 0, 2, 3], "<u2")
    joints = np.array([[0, 1, 0, 0]] * 4, "<u1")
    weights = np.array([[255, 0, 0, 0], [255, 0, 0, 0], [0, 255, 0, 0], [0, 255, 0, 0]], "<u1")
    blobs = [times, rot_keys, positions, indices, joints, weights]
    data, views = b"", []
    for blob in blobs:
        raw = blob.tobytes()
        views.append({"buffer": 0, "byteOffset": len(data), "byteLength": len(raw)})
        data += raw + b"\0" * (-len(raw) % 4)
    accessors = [
        {"bufferView": 0, "componentType": 5126, "count": 2, "type": "SCALAR", "min": [0], "max": [1]},
        {"bufferView": 1, "componentType": 5126, "count": len(rot_keys), "type": "VEC4"},
        {"bufferView": 2, "componentType": 5126, "count": 4, "type": "VEC3"},
        {"bufferView": 3, "componentType": 5123, "count": 6, "type": "SCALAR"},
        {"bufferView": 4, "componentType": 5121, "count": 4, "type": "VEC4"},
        {"bufferView": 5, "componentType": 5121, "count": 4, "type": "VEC4", "normalized": True},
    ]
    if embed:
        buffer = {"byteLength": len(data), "uri": "data:application/octet-stream;base64,"
                  + base64.b64encode(data).decode()}
    else:
        assert tmp_path is not None
        (tmp_path / "tiny data.bin").write_bytes(data)
        buffer = {"byteLength": len(data), "uri": "tiny%20data.bin"}
    return {
        "asset": {"version": "2.0"},
        "nodes": [
            {"name": "Armature", "children": [1, 3], "scale": [2, 2, 2],
             "rotation": [-np.sqrt(0.5), 0, 0, np.sqrt(0.5)]},
            {"name": "bone", "children": [2]},
            {"name": "bone", "translation": [0, 1, 0]},
            {"name": "mesh", "mesh": 0, "skin": 0},
        ],
        "skins": [{"joints": [1, 2]}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 2, "JOINTS_0": 4, "WEIGHTS_0": 5},
                                    "indices": 3}]}],
        "animations": [{"name": "bend",
                        "channels": [{"sampler": 0, "target": {"node": 2, "path": "rotation"}}],
                        "samplers": [{"input": 0, "output": 1, "interpolation": interpolation}]}],
        "buffers": [buffer], "bufferViews": views, "accessors": accessors,
    }


@pytest.mark.parametrize("interpolation", ["LINEAR", "STEP", "CUBICSPLINE"])
def test_tiny_file_interpolation(tmp_path: Path, interpolation: str) -> None:
    path = tmp_path / "tiny.gltf"
    path.write_text(json.dumps(_tiny_gltf(interpolation)))
    asset = load_gltf(path, fps=4)
    rig = asset.rig
    assert rig.names == ["bone", "bone.001"] and list(rig.parents) == [-1, 0]
    # Armature: scale 2, -90° about X, so the child at local +Y lands at world -Z * 2.
    assert np.allclose(rig.heads, [[0, 0, 0], [0, 0, -2]], atol=1e-7)
    motion = asset.clips["bend"]
    assert motion.frame_count == 5 and motion.fps == 4
    mid = np.degrees(2 * np.arccos(np.clip(abs(motion.rotations[2, 1, 0]), 0, 1)))
    assert mid == pytest.approx({"STEP": 0.0}.get(interpolation, 45.0), abs=1e-4)
    end = np.degrees(2 * np.arccos(np.clip(abs(motion.rotations[-1, 1, 0]), 0, 1)))
    assert end == pytest.approx(90.0, abs=1e-4)
    mesh = asset.mesh
    assert mesh.triangles.tolist() == [[0, 1, 2], [0, 2, 3]]
    # The mesh node transform is ignored for skinned meshes: joint world (scale 2, rotated) · IBM(=I);
    # the top two vertices follow joint 1, one unit further along the armature's local +Y.
    expected = np.array([[0, 0, 0], [2, 0, 0], [2, 0, -6], [0, 0, -6]])
    assert np.allclose(mesh.vertices, expected, atol=1e-6)
    assert np.allclose(mesh.joint_weights[:, 0] + mesh.joint_weights[:, 1], 1.0)


def test_external_buffer_and_errors(tmp_path: Path) -> None:
    doc = _tiny_gltf(embed=False, tmp_path=tmp_path)
    path = tmp_path / "tiny.gltf"
    path.write_text(json.dumps(doc))
    assert load_gltf(path).rig.joint_count == 2
    with pytest.raises(GltfError, match="Skin 3"):
        load_gltf(path, skin_index=3)

    sparse = json.loads(json.dumps(doc))
    sparse["accessors"][1]["sparse"] = {"count": 1}
    path.write_text(json.dumps(sparse))
    with pytest.raises(GltfError, match="sparse"):
        load_gltf(path)

    (tmp_path / "tiny data.bin").unlink()
    path.write_text(json.dumps(doc))
    with pytest.raises(GltfError, match="not found"):
        load_gltf(path)

    path.write_text("{ not json")
    with pytest.raises(GltfError):
        load_gltf(path)


def test_glb_container(tmp_path: Path) -> None:
    doc = _tiny_gltf()
    uri = doc["buffers"][0].pop("uri")
    data = base64.b64decode(uri.split(",", 1)[1])
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + struct.pack("<II", len(data), 0x004E4942) + data
    path = tmp_path / "tiny.glb"
    path.write_bytes(b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body)
    asset = load_gltf(path)
    assert asset.rig.joint_count == 2 and "bend" in asset.clips
    path.write_bytes(b"glTF" + struct.pack("<II", 2, 100) + b"\0" * 4)
    with pytest.raises(GltfError):
        load_gltf(path)


# --------------------------------------------------------------------------- skinning
def test_linear_blend_skinning_rules() -> None:
    rest = np.repeat(np.eye(4)[None], 2, 0)
    rest[1, :3, 3] = [0, 1, 0]
    pose = rest.copy()
    pose[1, :3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]  # joint 1 turns 90° about Z at its head
    mats = skin_matrices(rest, pose)
    assert np.allclose(skin_matrices(rest, rest), np.eye(4))
    vertices = np.array([[0.0, 2, 0], [0, 2, 0], [5, 5, 5]])
    indices = np.array([[1, 0], [1, 0], [0, 1]])
    weights = np.array([[1.0, 0.0], [2.0, 2.0], [0.0, 0.0]])  # unnormalised row; unweighted vertex
    out = linear_blend_skinning(vertices, indices, weights, mats)
    assert np.allclose(out[0], [-1, 1, 0])
    assert np.allclose(out[1], 0.5 * (np.array([-1, 1, 0]) + [0, 2, 0]))
    assert np.allclose(out[2], [5, 5, 5])
    frames = np.stack([mats, np.tile(np.eye(4), (2, 1, 1))])
    batched = linear_blend_skinning(vertices, indices, weights, frames)
    assert batched.shape == (2, 3, 3)
    assert np.allclose(batched[0], out) and np.allclose(batched[1], vertices)
