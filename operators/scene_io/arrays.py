"""Bulk reads of bpy collections into arrays (`foreach_get`), and an object's world matrix. Matrices come
out of `foreach_get` column-major, hence the transposes."""

from __future__ import annotations

import bpy
import numpy as np


def foreach_matrices(collection, attribute: str) -> np.ndarray:
    """(N,4,4) float64: a 4x4 matrix attribute of every item of a bpy collection."""
    buf = np.empty(len(collection) * 16, dtype=np.float32)
    collection.foreach_get(attribute, buf)
    return np.swapaxes(buf.reshape(-1, 4, 4), -1, -2).astype(np.float64)


def foreach_vectors(collection, attribute: str, width: int, dtype=np.float32) -> np.ndarray:
    """(N,width) of `dtype` (N, for width 1): an attribute of every item of a bpy collection."""
    buf = np.empty(len(collection) * width, dtype=dtype)
    collection.foreach_get(attribute, buf)
    return buf.reshape(-1, width) if width > 1 else buf


def object_matrix(obj: bpy.types.Object) -> np.ndarray:
    """The object's world matrix (4,4) as float64."""
    return np.array(obj.matrix_world, dtype=np.float64)
