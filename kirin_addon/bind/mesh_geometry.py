"""Triangle-mesh geometry the binding shares: input checks, normals, the cotangent Laplacian,
adjacency, connected pieces and welding of seams (numpy + scipy).

Conventions: ``L`` is the libigl one (off-diagonal ½(cot α + cot β), negative semi-definite).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

WELD_TOLERANCE = 1e-6  # fraction of the target's diagonal: closer vertices are one (a seam)
_SLIVER_QUALITY = 1e-3  # triangle quality below which cotangents are replaced (see _cotangents)
_SLIVER_COT = 1e-2  # the small positive cotangent a sliver gets: keeps -L PSD and the mesh connected


# ----------------------------------------------------------------------------- validation
def check_points(array, what: str) -> np.ndarray:
    try:
        points = np.asarray(array, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be numbers (an (N, 3) array): {exc}") from exc
    if points.size == 0:
        points = points.reshape(0, 3)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"{what} must be an (N, 3) array, got shape {points.shape}.")
    if not np.all(np.isfinite(points)):
        bad = int((~np.isfinite(points)).any(axis=1).sum())
        raise ValueError(f"{what} contain NaN or infinite coordinates ({bad} rows).")
    return points


def check_triangles(array, vertex_count: int, what: str) -> np.ndarray:
    triangles = np.asarray(array)
    if triangles.size == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if triangles.ndim != 2 or triangles.shape[1] != 3:
        raise ValueError(f"{what} must be an (F, 3) array of vertex indices, got shape {triangles.shape}.")
    if not np.issubdtype(triangles.dtype, np.integer):
        raise ValueError(f"{what} must be integer vertex indices, got {triangles.dtype}.")
    triangles = triangles.astype(np.int64)
    if triangles.min() < 0 or triangles.max() >= vertex_count:
        raise ValueError(f"{what} reference vertex {int(triangles.min())}..{int(triangles.max())} "
                         f"but there are only {vertex_count} vertices.")
    return triangles



# ----------------------------------------------------------------------------- normals and Laplacian
def vertex_normals(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Area-weighted unit vertex normals (V, 3); zero for isolated vertices and flat fans."""
    vertices = np.asarray(vertices, dtype=np.float64)
    triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    normals = np.zeros_like(vertices)
    if triangles.size:
        a, b, c = (vertices[triangles[:, i]] for i in range(3))
        cross = np.cross(b - a, c - a)  # |cross| = 2 area: the area weighting comes for free
        flat = triangles.ravel()
        for axis in range(3):  # bincount is several times faster than np.add.at
            normals[:, axis] = np.bincount(flat, np.repeat(cross[:, axis], 3), minlength=len(vertices))
    return unit_vectors(normals)


def unit_vectors(vectors: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.divide(vectors, length, out=np.zeros_like(vectors), where=length > 1e-300)


def unit_face_normals(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    a = vertices[triangles[:, 0]]
    return unit_vectors(np.cross(vertices[triangles[:, 1]] - a, vertices[triangles[:, 2]] - a))


def _cotangents(vertices: np.ndarray, triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-triangle cotangents at the three corners (F, 3) and areas (F,).

    Slivers (quality 4√3·area / Σ edge² below _SLIVER_QUALITY, zero-area faces included) get a
    small positive cotangent at every corner instead of their huge ±cot: each triangle's
    contribution stays positive semi-definite (so -L does), finite, and keeps the mesh connected.
    """
    p = [vertices[triangles[:, i]] for i in range(3)]
    edges = [p[2] - p[1], p[0] - p[2], p[1] - p[0]]  # edge i is opposite corner i
    double_area = np.linalg.norm(np.cross(edges[0], edges[1]), axis=1)
    squared = np.stack([np.einsum("ij,ij->i", e, e) for e in edges], axis=1)
    quality = 2.0 * math.sqrt(3.0) * double_area / np.maximum(squared.sum(axis=1), 1e-300)
    good = quality >= _SLIVER_QUALITY
    cots = np.full((len(triangles), 3), _SLIVER_COT)
    safe = np.where(good, double_area, 1.0)
    for i in range(3):  # corner i sits between edges i+1 and i+2 (pointing away from it: −e, +e)
        dot = -np.einsum("ij,ij->i", edges[(i + 1) % 3], edges[(i + 2) % 3])
        cots[:, i] = np.where(good, dot / safe, _SLIVER_COT)
    return np.nan_to_num(cots, nan=_SLIVER_COT, posinf=_SLIVER_COT, neginf=_SLIVER_COT), 0.5 * double_area


def cotangent_laplacian(vertices: np.ndarray, triangles: np.ndarray) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """(L, M): cotangent Laplacian (libigl sign: ½(cot α + cot β) off the diagonal, rows sum to 0)
    and the lumped (barycentric, area/3) mass matrix, both (V, V) csr.

    Robust to bad meshes: slivers and zero-area faces get a small positive weight (see
    `_cotangents`), non-manifold edges simply sum their faces' terms, and a vertex without area
    (isolated, or only in zero-area faces) gets a tiny positive mass so M stays invertible.
    """
    vertices = np.asarray(vertices, dtype=np.float64)
    triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    count = len(vertices)
    if triangles.size == 0:
        empty = sp.csr_matrix((count, count))
        return empty, sp.identity(count, format="csr")
    cots, areas = _cotangents(vertices, triangles)
    rows, cols, values = [], [], []
    for i in range(3):  # the cotangent at corner i weighs the opposite edge (j, k)
        j, k = triangles[:, (i + 1) % 3], triangles[:, (i + 2) % 3]
        rows += [j, k]
        cols += [k, j]
        values += [0.5 * cots[:, i]] * 2
    off = sp.coo_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(count, count)).tocsr()
    laplacian = (off - sp.diags(np.asarray(off.sum(axis=1)).ravel())).tocsr()
    mass = np.bincount(triangles.ravel(), np.repeat(areas / 3.0, 3), minlength=count)
    floor = 1e-6 * (mass[mass > 0].mean() if np.any(mass > 0) else 1.0)
    return laplacian, sp.diags(np.maximum(mass, floor)).tocsr()



# ----------------------------------------------------------------------------- connectivity
def vertex_adjacency(triangles: np.ndarray, count: int) -> sp.csr_matrix:
    """Symmetric 0/1 vertex adjacency from the triangles' edges (duplicates merged)."""
    edges = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    edges = edges[edges[:, 0] != edges[:, 1]]
    rows, cols = np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]]
    graph = sp.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(count, count)).tocsr()
    graph.data[:] = 1.0
    return graph


def mesh_pieces(triangles: np.ndarray, count: int) -> np.ndarray:
    """Connected component of each vertex; an isolated vertex is a piece of its own."""
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    # Two edges per triangle reach all three corners; undirected search needs no symmetric copy.
    rows, cols = np.r_[triangles[:, 0], triangles[:, 0]], np.r_[triangles[:, 1], triangles[:, 2]]
    graph = sp.csr_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(count, count))
    return connected_components(graph, directed=False)[1]


def weld(vertices: np.ndarray, triangles: np.ndarray, tolerance: float) -> tuple[np.ndarray, ...]:
    """Merge vertices closer than `tolerance`: (unique vertices, triangles on them, inverse) with
    `unique[inverse]` ≈ `vertices`; triangles that collapse stay (zero-area faces are handled)."""
    if len(vertices) == 0:
        return vertices, triangles, np.zeros(0, dtype=np.int64)
    pairs = cKDTree(vertices).query_pairs(max(tolerance, 0.0), output_type="ndarray")
    if len(pairs) == 0:
        return vertices, triangles, np.arange(len(vertices))
    graph = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(vertices),) * 2)
    _, labels = connected_components(graph, directed=False)
    # One representative per group (its first vertex), numbered in order of first appearance.
    first = np.full(labels.max() + 1, len(vertices))
    np.minimum.at(first, labels, np.arange(len(vertices)))
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    inverse = rank[labels]
    return vertices[first[order]], inverse[triangles], inverse
