"""What the denoiser knows about a rig: per-joint geometry, graph structure, names and skin.

All geometry is in the canonical frame (one body size = 1), so the same creature authored in
centimetres, Y-up or with other bone rolls gives the same features. Names are embedded with the
text encoder (as AnyTop embeds them with T5) after splitting them into words, so "mixamorig:LeftUpLeg",
"thigh.L" and "Bone.012" reach the network as text, not as ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .rig import Rig, side_of
from .skinning import SkinnedMesh

GEOMETRY = 18  # per-joint geometric features (see `joint_geometry`)
SKIN = 14  # pooled mesh features (see `skin_features`), zeros and has_mesh = 0 without a mesh
MAX_HOPS = 12  # hop distances beyond this share one attention bias
EDGE_TYPES = 6  # self, parent, child, sibling, other, padding


@dataclass
class RigFeatures:
    geometry: np.ndarray  # (J,GEOMETRY) float32
    skin: np.ndarray  # (J,SKIN) float32
    hops: np.ndarray  # (J,J) int64, clipped to MAX_HOPS
    edges: np.ndarray  # (J,J) int64 edge types
    names: list[str]  # names as words, for the text encoder
    feet: np.ndarray  # (J,) bool foot candidates

    @property
    def joint_count(self) -> int:
        return self.geometry.shape[0]


def name_words(name: str) -> str:
    """'mixamorig:LeftUpLeg' → 'left up leg'; 'thigh.L' → 'thigh left'; 'Bone.012' → 'bone 12'."""
    name = re.sub(r"^(mixamorig\d*|def|org|mch|ctrl)[:_\-.]", "", name, flags=re.IGNORECASE)
    name = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w]
    side = {
        "l": "left",
        "r": "right",
        "lf": "left front",
        "rf": "right front",
        "lh": "left hind",
        "rh": "right hind",
    }
    out = []
    for w in words:
        low = w.lower()
        if low.isdigit():
            out.append(str(int(low)))
        else:
            out.append(side.get(low, low))
    return " ".join(out) or "joint"


def joint_geometry(rig: Rig, feet: np.ndarray) -> np.ndarray:
    """(J,GEOMETRY): rest head relative to the root's ground point, offset from the parent, unit
    bone direction and length, depth, child count, flags (root, foot, end effector), side, and
    height above the lowest joint — everything a model needs to place a joint in the body."""
    heads = rig.heads
    root = rig.main_root
    ground = np.array([heads[root, 0], heads[root, 1], 0.0])
    parents = rig.parents
    offset = np.where((parents >= 0)[:, None], heads - heads[np.maximum(parents, 0)], 0.0)
    bone = rig.tails - heads
    length = np.linalg.norm(bone, axis=-1)
    direction = bone / np.maximum(length, 1e-9)[:, None]
    children = np.array([len(c) for c in rig.children], dtype=np.float64)
    is_foot = np.zeros(rig.joint_count)
    is_foot[feet] = 1.0
    is_end = np.zeros(rig.joint_count)
    is_end[rig.end_effectors] = 1.0
    side = np.array([side_of(n) for n in rig.names], dtype=np.float64)
    geometric_side = np.sign(np.round(heads[:, 0] - heads[root, 0], 3))
    out = np.concatenate(
        [
            heads - ground,
            offset,
            direction,
            length[:, None],
            rig.depth[:, None] / 10.0,
            np.minimum(children, 6)[:, None] / 3.0,
            (parents < 0)[:, None].astype(np.float64),
            is_foot[:, None],
            is_end[:, None],
            np.where(side != 0, side, geometric_side)[:, None],
            (heads[:, 2] - heads[:, 2].min())[:, None],
            np.linalg.norm(offset, axis=-1)[:, None],
        ],
        axis=1,
    )
    assert out.shape[1] == GEOMETRY
    return out.astype(np.float32)


def skin_features(rig: Rig, mesh: SkinnedMesh | None, to_canonical: np.ndarray | None = None) -> np.ndarray:
    """(J,SKIN) mesh geometry pooled to joints by normalised skin weights (MotionDreamer).

    Per joint: weight mass (share of the mesh it moves), weighted mean vertex offset from its head
    (3), weighted covariance of those offsets (6: xx yy zz xy xz yz), RMS distance, mean
    surface normal (2 of 3 stored implicitly by extent), and a has-mesh flag — how thick a limb is
    and which way its flesh lies, which a bare skeleton does not say.
    """
    out = np.zeros((rig.joint_count, SKIN), dtype=np.float64)
    if mesh is None or mesh.vertex_count == 0:
        return out.astype(np.float32)
    vertices = np.asarray(mesh.vertices, dtype=np.float64)
    if to_canonical is not None:
        vertices = vertices @ to_canonical[:3, :3].T + to_canonical[:3, 3]
    weights = np.zeros((mesh.vertex_count, rig.joint_count))
    rows = np.repeat(np.arange(mesh.vertex_count), mesh.joint_indices.shape[1])
    np.add.at(weights, (rows, mesh.joint_indices.reshape(-1)), mesh.joint_weights.reshape(-1))
    mass = weights.sum(axis=0)
    share = mass / max(mass.sum(), 1e-12)
    norm = weights / np.maximum(mass, 1e-12)[None]
    offsets = vertices[:, None, :] - rig.heads[None]  # (V,J,3)
    mean = np.einsum("vj,vjc->jc", norm, offsets)
    centred = offsets - mean[None]
    cov = np.einsum("vj,vja,vjb->jab", norm, centred, centred)
    rms = np.sqrt(np.einsum("vj,vjc->j", norm, offsets**2))
    extent = np.sqrt(np.maximum(np.linalg.eigvalsh(cov), 0.0))  # (J,3) ascending
    out[:, 0] = share * 10.0
    out[:, 1:4] = mean
    out[:, 4:7] = cov[:, [0, 1, 2], [0, 1, 2]]
    out[:, 7:10] = cov[:, [0, 0, 1], [1, 2, 2]]
    out[:, 10] = rms
    out[:, 11:13] = extent[:, 1:]
    out[:, 13] = 1.0
    out[mass <= 0, :13] = 0.0
    return out.astype(np.float32)


def rig_features(
    rig: Rig, feet: np.ndarray, mesh: SkinnedMesh | None = None, to_canonical: np.ndarray | None = None
) -> RigFeatures:
    """Features of a canonical rig; `mesh` (in the original armature space) is brought over by
    `to_canonical` (4x4) when given."""
    is_foot = np.zeros(rig.joint_count, dtype=bool)
    is_foot[feet] = True
    return RigFeatures(
        geometry=joint_geometry(rig, feet),
        skin=skin_features(rig, mesh, to_canonical),
        hops=np.minimum(rig.hop_distance, MAX_HOPS).astype(np.int64),
        edges=np.asarray(rig.edge_types, dtype=np.int64),
        names=[name_words(n) for n in rig.names],
        feet=is_foot,
    )
