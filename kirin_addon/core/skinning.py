"""Skinned meshes and linear blend skinning (numpy only).

Skin matrices follow Blender's armature modifier: a vertex bound to joint j moves by
`pose_j · rest_j⁻¹`, and its weights are divided by their sum (so unnormalised weights still
give a rigid result); vertices with no weight at all stay where they are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class SkinnedMesh:
    vertices: np.ndarray  # (V,3) float64, same frame as the rig's rest
    triangles: np.ndarray  # (F,3) int64
    joint_indices: np.ndarray  # (V,K) int64, rig joint order
    joint_weights: np.ndarray  # (V,K) float64, rows sum to 1 (or 0 for unweighted vertices)

    def __post_init__(self) -> None:
        self.vertices = np.asarray(self.vertices, dtype=np.float64).reshape(-1, 3)
        self.triangles = np.asarray(self.triangles, dtype=np.int64).reshape(-1, 3)
        self.joint_indices = np.asarray(self.joint_indices, dtype=np.int64)
        self.joint_weights = np.asarray(self.joint_weights, dtype=np.float64)
        count = self.vertices.shape[0]
        if self.joint_indices.shape != self.joint_weights.shape or self.joint_indices.shape[:1] != (count,):
            raise ValueError(
                f"Skin weights must be (vertices, K) for both indices and weights, got "
                f"{self.joint_indices.shape} and {self.joint_weights.shape} for {count} vertices."
            )

    @property
    def vertex_count(self) -> int:
        return self.vertices.shape[0]

    def dominant_joints(self) -> np.ndarray:
        """(V,) the joint each vertex follows most."""
        return self.joint_indices[np.arange(self.vertex_count), np.argmax(self.joint_weights, axis=1)]

    @property
    def weighted(self) -> np.ndarray:
        """(V,) bool: the vertices some joint moves."""
        return self.joint_weights.sum(axis=1) > 0

    def transformed(self, matrix: np.ndarray) -> SkinnedMesh:
        """The same skin with its vertices moved by an affine `matrix` (4,4) (into another frame)."""
        matrix = np.asarray(matrix, dtype=np.float64)
        return SkinnedMesh(self.vertices @ matrix[:3, :3].T + matrix[:3, 3], self.triangles,
                           self.joint_indices, self.joint_weights)


def save_mesh(path: str | os.PathLike, mesh: SkinnedMesh) -> None:
    """Write a skinned mesh as a compressed .npz of plain arrays (loads without pickle)."""
    with open(path, "wb") as handle:
        np.savez_compressed(handle, vertices=mesh.vertices.astype(np.float32), triangles=mesh.triangles,
                            joint_indices=mesh.joint_indices.astype(np.int32),
                            joint_weights=mesh.joint_weights.astype(np.float32))


def load_mesh(path: str | os.PathLike) -> SkinnedMesh:
    try:
        with np.load(Path(path), allow_pickle=False) as data:
            return SkinnedMesh(data["vertices"], data["triangles"], data["joint_indices"],
                               data["joint_weights"])
    except (OSError, KeyError, ValueError) as exc:
        raise ValueError(f"Cannot read the mesh file {path}: {exc}") from exc


def skin_matrices(rest: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """(..., J, 4, 4) `pose · rest⁻¹`; a general inverse because imported rests may carry scale."""
    rest = np.asarray(rest, dtype=np.float64)
    pose = np.asarray(pose, dtype=np.float64)
    return pose @ np.linalg.inv(rest)


def linear_blend_skinning(
    vertices: np.ndarray,
    joint_indices: np.ndarray,
    joint_weights: np.ndarray,
    skin_matrices: np.ndarray,
) -> np.ndarray:
    """Deformed vertices: (V,3) for skin matrices (J,4,4), or (T,V,3) for (T,J,4,4)."""
    vertices = np.asarray(vertices, dtype=np.float64)
    joint_indices = np.asarray(joint_indices, dtype=np.int64)
    weights = np.asarray(joint_weights, dtype=np.float64)
    mats = np.asarray(skin_matrices, dtype=np.float64)
    total = weights.sum(axis=-1, keepdims=True)
    unweighted = total[..., 0] <= 0.0
    weights = np.where(unweighted[:, None], 0.0, weights / np.where(total > 0.0, total, 1.0))
    # Blend the matrices first (one (V,3,4) per frame) rather than transforming K copies of the mesh.
    blended = np.einsum("vk,...vkij->...vij", weights, mats[..., joint_indices, :3, :])
    homogeneous = np.concatenate([vertices, np.ones((vertices.shape[0], 1))], axis=-1)
    out = np.einsum("...vij,vj->...vi", blended, homogeneous)
    return np.where(unweighted[:, None], vertices, out)
