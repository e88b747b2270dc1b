"""Skin weight transfer from a skinned source mesh to any target mesh (numpy + scipy, never bpy).

Two methods:

- ``"nearest"`` (Kirin's mesh binding): each target vertex takes the weights of its k = 10 nearest
  weighted source vertices, blended by normalised inverse squared distance; a vertex that
  coincides with a source vertex takes that vertex's weights exactly.
- ``"robust"`` (Abdrashitov et al. 2023, "Robust Skin Weights Transfer via Weight Inpainting"):
  each target vertex finds the closest point on the source *surface* and takes the barycentric
  blend of that triangle's weights when the point is close enough (``max_distance``, a fraction
  of the target's bounding-box diagonal) and the target vertex normal agrees with the source's
  normal there within ``max_angle``: the face normal, or the source's interpolated vertex normal
  (the paper's code), since a point on an edge or a vertex has no single normal. Among faces at the
  same distance (a vertex on a crease) the best-aligned one is taken. The other vertices are
  inpainted: minimise ``trace(Wᵀ Q W)`` with ``Q = -L + L M⁻¹ L`` (cotangent Laplacian L, lumped
  mass M, on the target) with the matched rows fixed: ``Q_uu W_u = −Q_uk W_k``, factorised once
  per independent block of unknowns with every joint that is non-zero there as a right-hand side.
  A connected piece of the target with no match at all takes the closest-surface weights
  regardless of the thresholds (flagged ``fallback``).

Both end the same way: negative weights clipped, at most ``max_influences`` per vertex (the
largest), rows renormalised to sum to 1.

Closest points. Every source triangle is covered by sample points (its centroid, or the centroids
of a regular n×n split for large triangles) so that every point of the triangle lies within its
sample's cover ``h`` of one of them. The 12 nearest samples of a query name candidate triangles;
those whose bound (sample distance − its cover) can beat the nearest sample's triangle are tested
exactly (Ericson's region tests, vectorised). A query is certified when its best distance is at
most (distance of the 12th sample − the largest cover): no other triangle can be closer.
`closest_points` is exact: uncertified queries retry with 64 and 256 samples, then a ball query of
radius (best + largest cover), which is exhaustive. `transfer_weights` stops after the first pass
for speed (that certification is expensive on meshes whose triangle sizes vary: a third to a half
of the queries of a typical creature are not certified at 12, though nearly all are right); its
closest points are exact where certified and otherwise the best of the candidates, off by
little where off at all: 3 of 400 queries around the quadruped by up to 1e-4 body sizes, 0.3% of
the benchmark's 100k by up to 6e-5 of the diagonal. A big triangle's interior always has samples
nearby, so it is never missed.

Conventions: ``L`` is the libigl one (off-diagonal ½(cot α + cot β), negative semi-definite);
weights are dense (V, J) arrays in rig joint order; `to_sparse` / `to_dense` convert to and from
the (V, K) joint_indices / joint_weights of `skinning.SkinnedMesh`.
"""

from __future__ import annotations

import itertools
import math
import numbers
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import splu
from scipy.spatial import cKDTree

METHODS = ("robust", "nearest")
KDTREE_WORKERS = -1  # threads for the k-nearest queries (scipy's `workers`; -1: every core)
WELD_TOLERANCE = 1e-6  # fraction of the target's diagonal: closer vertices are one (a seam)
SMOOTH_ALPHA = 0.2  # strength of one smoothing step (the paper's reference code uses 0.2)
_CHUNK = 16384  # queries per closest-point block: bounds the (Q, k, 12) candidate arrays
_PASSES = (12, 64, 256)  # k-nearest samples per certification pass, before the exhaustive ball query
_SAMPLE_BUDGET = 16.0  # at most this many samples per triangle on average (see _SurfaceIndex._samples)
_SLIVER_QUALITY = 1e-3  # triangle quality below which cotangents are replaced (see _cotangents)
_SLIVER_COT = 1e-2  # the small positive cotangent a sliver gets: keeps -L PSD and the mesh connected


# ----------------------------------------------------------------------------- configuration
@dataclass
class TransferConfig:
    method: str = "robust"
    max_distance: float = 0.05  # fraction of the target's bounding-box diagonal
    max_angle: float = 30.0  # degrees
    # A vertex this close to the source surface (fraction of the target's diagonal) lies on it: its
    # normal is not tested, since there a normal disagreement is only a difference of tessellation
    # (a decimated or remeshed copy of the same surface). 0: the paper's rule, normals always tested.
    surface_tolerance: float = 0.005
    allow_flipped_normals: bool = False
    k: int = 10  # neighbours for "nearest"
    # Smoothing steps on inpainted vertices and their 1-ring. 0 by default: the biharmonic
    # inpainting is already smooth inside, and 0 keeps every matched vertex's weights exactly the
    # source's; raise it (the paper's code uses 10) to soften seams at the matched border.
    smooth_iterations: int = 0
    max_influences: int = 4  # 0: keep all

    def validate(self) -> None:
        """Raise ValueError with a user-facing message for a setting that cannot work."""
        if self.method not in METHODS:
            raise ValueError(f"Unknown weight transfer method {self.method!r}; expected one of {METHODS}.")
        if not _is_number(self.max_distance) or math.isnan(self.max_distance) or self.max_distance < 0:
            raise ValueError(f"max_distance must be a number >= 0 (a fraction of the target's size), "
                             f"got {self.max_distance!r}.")
        if not _is_number(self.surface_tolerance) or not 0.0 <= self.surface_tolerance <= 1.0:
            raise ValueError(f"surface_tolerance must be a fraction of the target's size between 0 and 1, "
                             f"got {self.surface_tolerance!r}.")
        if not _is_number(self.max_angle) or not 0.0 <= self.max_angle <= 180.0:
            raise ValueError(f"max_angle must be in degrees between 0 and 180, got {self.max_angle!r}.")
        for name, low in (("k", 1), ("smooth_iterations", 0), ("max_influences", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
        if not isinstance(self.allow_flipped_normals, bool | np.bool_):
            raise ValueError(f"allow_flipped_normals must be True or False, "
                             f"got {self.allow_flipped_normals!r}.")


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


@dataclass
class TransferResult:
    weights: np.ndarray  # (V, J) float32 dense, rows sum to 1
    matched: np.ndarray  # (V,) bool: took the source surface's weights directly
    inpainted: np.ndarray  # (V,) bool: solved by the Laplacian inpainting (robust only)
    fallback: np.ndarray  # (V,) bool: a piece with no match, closest-surface weights regardless
    stats: dict = field(default_factory=dict)  # counts, seconds per stage, method, absolute thresholds


# ----------------------------------------------------------------------------- weight formats
def to_dense(joint_indices: np.ndarray, joint_weights: np.ndarray, joints: int) -> np.ndarray:
    """(V, K) joint indices and weights → (V, J) dense weights; repeated joints add up.

    Slots with zero weight may hold any index (Blender pads with 0); a weighted slot whose index is
    outside 0..joints-1 raises ValueError.
    """
    indices = np.asarray(joint_indices)
    weights = np.asarray(joint_weights, dtype=np.float64)
    if indices.shape != weights.shape or indices.ndim != 2:
        raise ValueError(f"joint_indices and joint_weights must both be (vertices, K), "
                         f"got {indices.shape} and {weights.shape}.")
    if not np.issubdtype(indices.dtype, np.integer) and indices.size:
        raise ValueError("joint_indices must be integers.")
    indices = indices.astype(np.int64)
    used = weights != 0.0
    if np.any(used & ((indices < 0) | (indices >= joints))):
        raise ValueError(f"A weighted joint index is outside 0..{joints - 1}.")
    dense = np.zeros((indices.shape[0], int(joints)))
    rows = np.broadcast_to(np.arange(indices.shape[0])[:, None], indices.shape)
    np.add.at(dense, (rows[used], indices[used]), weights[used])
    return dense


def limit_influences(weights: np.ndarray, max_influences: int) -> np.ndarray:
    """Clip negatives, keep the `max_influences` largest per row (0: all), renormalise rows to 1.

    Rows with nothing left stay zero. Floating inputs keep their dtype.
    """
    array = np.asarray(weights)
    dtype = array.dtype if np.issubdtype(array.dtype, np.floating) else np.float64
    out = np.clip(array.astype(np.float64, copy=True), 0.0, None)
    if out.ndim != 2:
        raise ValueError(f"weights must be (vertices, joints), got {out.shape}.")
    if max_influences < 0:
        raise ValueError(f"max_influences must be >= 0, got {max_influences}.")
    _limit_rows_inplace(out, max_influences)
    return _normalise_rows(out).astype(dtype, copy=False)


def to_sparse(weights: np.ndarray, max_influences: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """(V, J) dense → (V, K) int64 joint indices and float64 weights, largest first, rows sum to 1.

    K is `max_influences`, or the largest count of non-zero weights in a row when it is 0; empty
    slots hold joint 0 with weight 0 (as Blender pads).
    """
    limited = limit_influences(np.asarray(weights, dtype=np.float64), max_influences)
    count = int(max((limited > 0).sum(axis=1).max(initial=0), 1)) if max_influences == 0 else max_influences
    count = min(count, limited.shape[1]) if limited.shape[1] else 0
    order = np.argsort(-limited, axis=1, kind="stable")[:, :count]
    values = np.take_along_axis(limited, order, axis=1)
    indices = np.where(values > 0, order, 0).astype(np.int64)
    if count < max_influences:  # fewer joints than slots: pad to the K asked for
        pad = max_influences - count
        indices = np.pad(indices, ((0, 0), (0, pad)))
        values = np.pad(values, ((0, 0), (0, pad)))
    return indices, values


def _limit_rows_inplace(weights: np.ndarray, max_influences: int) -> None:
    """Zero all but the largest `max_influences` entries of each row that has more (argpartition)."""
    if max_influences <= 0 or weights.shape[1] <= max_influences:
        return
    rows = np.flatnonzero((weights > 0).sum(axis=1) > max_influences)
    if rows.size == 0:
        return
    block = weights[rows]
    drop = np.argpartition(-block, max_influences - 1, axis=1)[:, max_influences:]
    np.put_along_axis(block, drop, 0.0, axis=1)
    weights[rows] = block


def _normalise_rows(weights: np.ndarray) -> np.ndarray:
    total = weights.sum(axis=1, keepdims=True)
    return np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)


# ----------------------------------------------------------------------------- geometry
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
    return _unit(normals)


def _unit(vectors: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.divide(vectors, length, out=np.zeros_like(vectors), where=length > 1e-300)


def _face_normals(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    a = vertices[triangles[:, 0]]
    return _unit(np.cross(vertices[triangles[:, 1]] - a, vertices[triangles[:, 2]] - a))


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


def _adjacency(triangles: np.ndarray, count: int) -> sp.csr_matrix:
    """Symmetric 0/1 vertex adjacency from the triangles' edges (duplicates merged)."""
    edges = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    edges = edges[edges[:, 0] != edges[:, 1]]
    rows, cols = np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]]
    graph = sp.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(count, count)).tocsr()
    graph.data[:] = 1.0
    return graph


# ----------------------------------------------------------------------------- closest points
def _closest_on_triangles(points: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact closest points of `points` (..., 3) on triangles `data` (..., 12) = [a, ab, ac, ab·ab,
    ab·ac, ac·ac]: returns (v, w, distance) with closest = a + v·ab + w·ac.

    Ericson, Real-Time Collision Detection §5.1.5, vectorised: every region is evaluated and the
    first matching one (vertex a, b, edge ab, vertex c, edge ac, edge bc, face) wins. The dot
    products against b and c are derived from ab·ap and ac·ap (bp = ap − ab, cp = ap − ac), so
    each pair costs two 3-vector dots. Degenerate triangles fall through to a clipped point that
    still lies on the triangle.
    """
    a, ab, ac = data[..., 0:3], data[..., 3:6], data[..., 6:9]
    e00, e01, e11 = data[..., 9], data[..., 10], data[..., 11]
    ap = points - a
    d1 = np.einsum("...i,...i->...", ab, ap)
    d2 = np.einsum("...i,...i->...", ac, ap)
    d3, d4 = d1 - e00, d2 - e01  # ab·bp, ac·bp
    d5, d6 = d1 - e01, d2 - e11  # ab·cp, ac·cp
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    va = d3 * d6 - d5 * d4
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = va + vb + vc
        v = np.where(denom > 0, vb / denom, 0.0)  # face region
        w = np.where(denom > 0, vc / denom, 0.0)
        bc_edge = (va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0)
        t = _safe_ratio(d4 - d3, (d4 - d3) + (d5 - d6))
        v, w = np.where(bc_edge, 1.0 - t, v), np.where(bc_edge, t, w)
        ac_edge = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
        t = _safe_ratio(d2, d2 - d6)
        v, w = np.where(ac_edge, 0.0, v), np.where(ac_edge, t, w)
        at_c = (d6 >= 0) & (d5 <= d6)
        v, w = np.where(at_c, 0.0, v), np.where(at_c, 1.0, w)
        ab_edge = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
        t = _safe_ratio(d1, d1 - d3)
        v, w = np.where(ab_edge, t, v), np.where(ab_edge, 0.0, w)
        at_b = (d3 >= 0) & (d4 <= d3)
        v, w = np.where(at_b, 1.0, v), np.where(at_b, 0.0, w)
        at_a = (d1 <= 0) & (d2 <= 0)
        v, w = np.where(at_a, 0.0, v), np.where(at_a, 0.0, w)
    # Keep (v, w) in the triangle even where rounding or a degenerate face pushed it out.
    v, w = np.clip(v, 0.0, 1.0), np.clip(w, 0.0, 1.0)
    over = v + w > 1.0
    scale = np.where(over, 1.0 / np.maximum(v + w, 1e-300), 1.0)
    v, w = v * scale, w * scale
    offset = ap - v[..., None] * ab - w[..., None] * ac
    return v, w, np.sqrt(np.einsum("...i,...i->...", offset, offset))


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.clip(np.divide(num, den, out=np.zeros_like(num), where=den > 0), 0.0, 1.0)


def _split_pattern(n: int) -> np.ndarray:
    """(n², 2) (v, w) centroids of the n×n regular split of a triangle (n² similar sub-triangles)."""
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    up = (i + j <= n - 1).ravel()
    down = (i + j <= n - 2).ravel()
    i, j = i.ravel(), j.ravel()
    ups = np.stack([(i[up] + 1 / 3) / n, (j[up] + 1 / 3) / n], axis=1)
    downs = np.stack([(i[down] + 2 / 3) / n, (j[down] + 2 / 3) / n], axis=1)
    return np.concatenate([ups, downs])


@dataclass
class _Found:
    """Candidate (query row, triangle) pairs with their exact closest points."""

    rows: np.ndarray
    tri: np.ndarray
    v: np.ndarray
    w: np.ndarray
    d: np.ndarray
    least: np.ndarray = field(default=None)  # type: ignore[assignment]  # per row, set by select

    def select(self, size: int, normals: np.ndarray | None, face_normals: np.ndarray | None, flip: bool,
               tie: float) -> np.ndarray:
        """Index of each row's winner: the smallest distance or, with normals, among the candidates
        within `tie` of it the one whose face normal agrees best with the query's normal."""
        self.least = np.full(size, np.inf)
        np.minimum.at(self.least, self.rows, self.d)
        near = np.flatnonzero(self.d <= self.least[self.rows] + tie)
        winner = np.empty(size, dtype=np.int64)
        alone = np.bincount(self.rows[near], minlength=size)[self.rows[near]] == 1
        winner[self.rows[near[alone]]] = near[alone]  # most rows: one candidate at the best distance
        near = near[~alone]
        if near.size:
            if normals is None or face_normals is None:
                score = -self.d[near]
            else:
                score = np.einsum("pc,pc->p", face_normals[self.tri[near]], normals[self.rows[near]])
                score = np.abs(score) if flip else score
            order = near[np.lexsort((self.d[near], -score, self.rows[near]))]
            rows = self.rows[order]
            first = np.r_[True, rows[1:] != rows[:-1]]
            winner[rows[first]] = order[first]
        return winner


class _SurfaceIndex:
    """Exact closest-point queries on a triangle soup (see the module docstring)."""

    def __init__(self, vertices: np.ndarray, triangles: np.ndarray, budget: float = _SAMPLE_BUDGET) -> None:
        a = vertices[triangles[:, 0]]
        ab = vertices[triangles[:, 1]] - a
        ac = vertices[triangles[:, 2]] - a
        dots = np.stack([np.einsum("ij,ij->i", ab, ab), np.einsum("ij,ij->i", ab, ac),
                         np.einsum("ij,ij->i", ac, ac)], axis=1)
        self.data = np.ascontiguousarray(np.concatenate([a, ab, ac, dots], axis=1))
        samples, self.owner, self.sample_cover = self._samples(a, ab, ac, budget)
        self.cover = float(self.sample_cover.max())
        self.tree = cKDTree(samples)
        self.count = len(samples)

    @staticmethod
    def _samples(a: np.ndarray, ab: np.ndarray, ac: np.ndarray,
                 budget: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sample points, their triangle, and each sample's cover: every point of a triangle is
        within its samples' cover of one of them.

        A triangle's centroid is within R (its farthest corner) of all its points; a triangle with
        R > h0 is split n×n (n = ⌈R/h0⌉) into similar sub-triangles whose centroids are within R/n.
        h0 is the smallest radius for which the samples fit in `budget` per triangle: uniform covers
        make the k-nearest-sample bound tight, the budget bounds the tree.
        """
        centre = (ab + ac) / 3.0
        radius = np.sqrt(np.max(np.stack([np.einsum("ij,ij->i", d, d) for d in (centre, centre - ab,
                                                                                centre - ac)]), axis=0))
        limit = budget * len(a) + 1000
        positive = np.sort(radius[radius > 0])
        h0 = float(positive[-1]) if positive.size else 1.0
        for h in np.quantile(positive, np.linspace(0.0, 1.0, 41)) if positive.size else ():
            if h > 0 and (np.ceil(radius / h) ** 2).clip(1).sum() <= limit:
                h0 = float(h)
                break
        splits = np.maximum(np.ceil(radius / h0).astype(np.int64), 1)
        points, owners = [], []
        for n in np.unique(splits):
            members = np.flatnonzero(splits == n)
            pattern = _split_pattern(int(n))
            points.append((a[members, None] + pattern[None, :, :1] * ab[members, None]
                           + pattern[None, :, 1:] * ac[members, None]).reshape(-1, 3))
            owners.append(np.repeat(members, len(pattern)))
        owner = np.concatenate(owners)
        # Slack for rounding in the samples and the distances (relative to the surface's size).
        scale = float(np.abs(a).max() + np.abs(ab).max() + np.abs(ac).max())
        cover = (radius / splits)[owner] * (1 + 1e-9) + 1e-12 * scale
        return np.concatenate(points), owner, cover

    def query(self, points: np.ndarray, normals: np.ndarray | None = None,
              face_normals: np.ndarray | None = None, flip: bool = False, tie: float = 0.0,
              exact: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(triangle, (v, w), distance, certified) of the closest surface point of each query.

        With `normals`, among candidates within `tie` of the best distance the one whose face
        normal agrees best with the query's normal wins (a vertex on a crease touches all of its
        faces at distance 0; the angle test should see the face that fits). `exact=False` stops
        after the first pass: the answer is the best of the candidates from the 12 nearest
        samples, and `certified` says where that is provably the closest point.
        """
        count = len(points)
        tri = np.zeros(count, dtype=np.int64)
        vw = np.zeros((count, 2))
        dist = np.full(count, np.inf)
        certified = np.zeros(count, dtype=bool)
        pending = np.arange(count)
        self.passes = []
        for k in _PASSES if exact else _PASSES[:1]:
            if pending.size == 0:
                break
            for start in range(0, pending.size, _CHUNK):
                block = pending[start:start + _CHUNK]
                certified[block] = self._pass(points, block, min(k, self.count), tri, vw, dist, normals,
                                              face_normals, flip, tie)
            self.passes.append(int(pending.size))
            pending = pending[~certified[pending]]
        if exact and pending.size:
            self.passes.append(int(pending.size))
            self._exhaustive(points, pending, tri, vw, dist, normals, face_normals, flip, tie)
            certified[pending] = True
        return tri, vw, dist, certified

    def _pass(self, points, block, k, tri, vw, dist, normals, face_normals, flip, tie) -> np.ndarray:
        """k nearest samples → candidate triangles; only those whose lower bound (sample distance −
        its cover) can beat the nearest sample's triangle are tested exactly. Returns certified."""
        size = len(block)
        query = points[block]
        sample_dist, sample = self.tree.query(query, k=k, workers=KDTREE_WORKERS)
        sample_dist, sample = sample_dist.reshape(size, k), sample.reshape(size, k)
        candidates = self.owner[sample]
        first_v, first_w, first_d = _closest_on_triangles(query, self.data[candidates[:, 0]])
        keep = sample_dist - self.sample_cover[sample] <= first_d[:, None] + tie
        keep &= candidates != candidates[:, :1]
        # One exact test per distinct kept triangle: sort each row, blank repeats.
        unique = np.sort(np.where(keep, candidates, -1), axis=1)
        unique[:, 1:][unique[:, 1:] == unique[:, :-1]] = -1
        rows, cols = np.nonzero(unique >= 0)
        pair_tri = unique[rows, cols]
        v, w, d = _closest_on_triangles(query[rows], self.data[pair_tri])
        rows = np.r_[np.arange(size), rows]
        found = _Found(rows, np.r_[candidates[:, 0], pair_tri], np.r_[first_v, v], np.r_[first_w, w],
                       np.r_[first_d, d])
        best = found.select(size, None if normals is None else normals[block], face_normals, flip, tie)
        tri[block], dist[block] = found.tri[best], found.d[best]
        vw[block] = np.stack([found.v[best], found.w[best]], axis=1)
        if k >= self.count:
            return np.ones(size, dtype=bool)
        return found.least <= sample_dist[:, -1] - self.cover

    def _exhaustive(self, points, pending, tri, vw, dist, normals, face_normals, flip, tie) -> None:
        """Ball query of radius (best so far + h): every triangle that could be closer has a sample
        inside, so the answer is exact. Only for the queries the k-passes could not certify."""
        for start in range(0, pending.size, 2048):
            block = pending[start:start + 2048]
            size = len(block)
            lists = self.tree.query_ball_point(points[block], dist[block] + self.cover, return_sorted=False)
            lengths = np.fromiter(map(len, lists), dtype=np.int64, count=size)
            flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=int(lengths.sum()))
            pairs = np.stack([np.repeat(np.arange(size), lengths), self.owner[flat]], axis=1)
            pairs = np.unique(pairs, axis=0)
            v, w, d = _closest_on_triangles(points[block][pairs[:, 0]], self.data[pairs[:, 1]])
            # Keep the k-pass answer in the running: rounding must never make the result worse.
            found = _Found(np.r_[np.arange(size), pairs[:, 0]], np.r_[tri[block], pairs[:, 1]],
                           np.r_[vw[block, 0], v], np.r_[vw[block, 1], w], np.r_[dist[block], d])
            best = found.select(size, None if normals is None else normals[block], face_normals, flip, tie)
            tri[block], dist[block] = found.tri[best], found.d[best]
            vw[block] = np.stack([found.v[best], found.w[best]], axis=1)


def closest_points(vertices: np.ndarray, triangles: np.ndarray,
                   queries: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact closest point on the triangle mesh for each query.

    Returns (triangle index (Q,) int64, barycentric coordinates (Q, 3) for the triangle's three
    vertices in order, distance (Q,)).
    """
    vertices = _points(vertices, "vertices")
    triangles = _triangles(triangles, len(vertices), "triangles")
    queries = _points(queries, "queries")
    if triangles.shape[0] == 0:
        raise ValueError("closest_points needs at least one triangle.")
    tri, vw, dist, _ = _SurfaceIndex(vertices, triangles).query(queries)
    return tri, _barycentric(vw), dist


def _barycentric(vw: np.ndarray) -> np.ndarray:
    return np.stack([np.maximum(1.0 - vw[:, 0] - vw[:, 1], 0.0), vw[:, 0], vw[:, 1]], axis=1)


# ----------------------------------------------------------------------------- validation
def _points(array, what: str) -> np.ndarray:
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


def _triangles(array, vertex_count: int, what: str) -> np.ndarray:
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


def _source_weights(array, vertex_count: int) -> np.ndarray:
    weights = np.asarray(array, dtype=np.float64)
    if weights.ndim != 2 or weights.shape[0] != vertex_count or weights.shape[1] == 0:
        raise ValueError(f"source_weights must be (source vertices, joints) = ({vertex_count}, J >= 1), "
                         f"got shape {weights.shape}.")
    if not np.all(np.isfinite(weights)):
        raise ValueError("source_weights contain NaN or infinite values.")
    # Negative weights mean nothing to LBS (Blender clamps them); unnormalised rows are normalised
    # like Blender's armature modifier does; all-zero rows stay zero and are never used.
    weights = _normalise_rows(np.clip(weights, 0.0, None))
    if not np.any(weights > 0):
        raise ValueError("The source mesh has no skin weights: bind or paint it first.")
    return weights


def _diagonal(points: np.ndarray) -> float:
    return float(np.linalg.norm(points.max(axis=0) - points.min(axis=0))) if len(points) else 0.0


# ----------------------------------------------------------------------------- nearest vertices
def nearest_vertex_weights(source_vertices: np.ndarray, source_weights: np.ndarray,
                           target_vertices: np.ndarray, k: int = 10) -> np.ndarray:
    """(V, J) weights from the k nearest weighted source vertices, normalised inverse-squared
    distance blend (Kirin's binding); a target vertex on a source vertex copies its weights."""
    source_vertices = _points(source_vertices, "source_vertices")
    if len(source_vertices) == 0:
        raise ValueError("The source mesh has no vertices.")
    weights = _source_weights(source_weights, len(source_vertices))
    target_vertices = _points(target_vertices, "target_vertices")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}.")
    blend = _nearest_blend(source_vertices, weights, target_vertices, k)
    return np.asarray((blend @ sp.csr_matrix(weights)).todense())


def _nearest_blend(source_vertices: np.ndarray, weights: np.ndarray, target_vertices: np.ndarray,
                   k: int) -> sp.csr_matrix:
    """(V, Vs) sparse blend matrix of the nearest-vertex rule (rows sum to 1)."""
    weighted = np.flatnonzero(weights.sum(axis=1) > 0)  # unweighted source vertices never vote
    k = min(k, weighted.size)
    count = len(target_vertices)
    if count == 0:
        return sp.csr_matrix((0, len(source_vertices)))
    dist, index = cKDTree(source_vertices[weighted]).query(target_vertices, k=k, workers=KDTREE_WORKERS)
    dist, index = dist.reshape(count, k), index.reshape(count, k)
    exact = dist[:, 0] <= 1e-9 * max(_diagonal(source_vertices), 1e-300)  # guards the 1/d² too
    inverse = 1.0 / np.maximum(dist, 1e-150) ** 2
    inverse[exact] = 0.0
    inverse[exact, 0] = 1.0
    inverse /= inverse.sum(axis=1, keepdims=True)
    rows = np.repeat(np.arange(count), k)
    shape = (count, len(source_vertices))
    return sp.csr_matrix((inverse.ravel(), (rows, weighted[index.ravel()])), shape=shape)


# ----------------------------------------------------------------------------- transfer
class _Clock:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - self.last
        self.last = now


def transfer_weights(source_vertices: np.ndarray, source_triangles: np.ndarray, source_weights: np.ndarray,
                     target_vertices: np.ndarray, target_triangles: np.ndarray,
                     config: TransferConfig | None = None) -> TransferResult:
    """Transfer dense source skin weights (Vs, J) to the target mesh (see the module docstring).

    `target_triangles` may be empty (a point cloud): no normals, so no angle test, and no
    Laplacian, so each vertex is its own piece (matched or fallback). Source rows are normalised
    first (negatives clipped); all-zero rows (unweighted vertices) carry no information: a target
    vertex whose closest point only sees those is not matched (inpainted instead), and the nearest
    rule skips them. With "nearest", every vertex counts as matched. Raises ValueError with a
    user-facing message for bad shapes, NaN/inf coordinates, out-of-range triangle indices, an
    empty source, a source without weights, a robust transfer from a source without faces, or a
    bad config.
    """
    config = config or TransferConfig()
    config.validate()
    clock = _Clock()
    source_vertices = _points(source_vertices, "source_vertices")
    if len(source_vertices) == 0:
        raise ValueError("The source mesh is empty (no vertices).")
    source_triangles = _triangles(source_triangles, len(source_vertices), "source_triangles")
    weights = _source_weights(source_weights, len(source_vertices))
    target_vertices = _points(target_vertices, "target_vertices")
    target_triangles = _triangles(target_triangles, len(target_vertices), "target_triangles")
    if config.method == "robust" and len(source_triangles) == 0:
        raise ValueError("The source mesh has no faces; the robust transfer needs a surface "
                         "(use method='nearest' for a point cloud).")
    count, joints = len(target_vertices), weights.shape[1]
    diagonal = _diagonal(target_vertices)
    stats = {"method": config.method, "vertices": count, "joints": joints,
             "source_vertices": len(source_vertices), "source_triangles": len(source_triangles),
             "target_triangles": len(target_triangles), "config": asdict(config),
             "target_diagonal": diagonal}
    clock.lap("validate")
    if config.method == "nearest":
        blend = _nearest_blend(source_vertices, weights, target_vertices, config.k)
        dense = (blend @ sp.csr_matrix(weights)).astype(np.float32).toarray()
        clock.lap("nearest")
        flags = np.ones(count, dtype=bool), np.zeros(count, dtype=bool), np.zeros(count, dtype=bool)
    else:
        # Imported meshes are split at UV and normal seams; welded, a seam no longer cuts the mesh
        # into pieces the inpainting cannot cross (10-46 % of a glTF character fell back unwelded).
        unique, welded_triangles, inverse = weld(target_vertices, target_triangles, WELD_TOLERANCE * diagonal)
        stats["welded_vertices"] = count - len(unique)
        clock.lap("weld")
        dense, flags = _robust(source_vertices, source_triangles, weights, unique,
                               welded_triangles, config, diagonal, stats, clock)
        dense, flags = dense[inverse], tuple(flag[inverse] for flag in flags)
    dense = _finish(dense, config.max_influences)
    clock.lap("limit")
    matched, inpainted, fallback = flags
    stats.update(matched=int(matched.sum()), inpainted=int(inpainted.sum()), fallback=int(fallback.sum()),
                 seconds=dict(clock.seconds, total=sum(clock.seconds.values())))
    return TransferResult(dense, matched, inpainted, fallback, stats)


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


def _finish(dense: np.ndarray, max_influences: int) -> np.ndarray:
    """Clip, limit and renormalise in place on the (V, J) float32 array (no float64 copy of it)."""
    np.clip(dense, 0.0, None, out=dense)
    _limit_rows_inplace(dense, max_influences)
    total = dense.sum(axis=1, dtype=np.float64, keepdims=True)
    np.divide(dense, total, out=dense, where=total > 0)
    return dense


def _robust(source_vertices, source_triangles, weights, target_vertices, target_triangles,
            config: TransferConfig, diagonal: float, stats: dict, clock: _Clock):
    count = len(target_vertices)
    max_distance = config.max_distance * diagonal
    cos_limit = math.cos(math.radians(config.max_angle))
    stats.update(max_distance_abs=max_distance, max_angle_deg=config.max_angle, cos_max_angle=cos_limit,
                 surface_tolerance_abs=config.surface_tolerance * diagonal)
    normals = vertex_normals(target_vertices, target_triangles)
    face_normals = _match_normals(source_vertices, source_triangles)
    source_normals = vertex_normals(source_vertices, source_triangles)
    clock.lap("normals")
    index = _SurfaceIndex(source_vertices, source_triangles)
    clock.lap("index")
    tie = 1e-7 * max(_diagonal(source_vertices), diagonal)
    flip = config.allow_flipped_normals
    tri, vw, dist, certified = index.query(target_vertices, normals, face_normals, flip, tie, exact=False)
    stats["closest_certified"] = int(certified.sum())
    clock.lap("closest")
    # Closest-surface weights as a sparse (V, J) blend; rows renormalised over the weighted corners
    # so an unweighted source vertex does not dilute its neighbours.
    corners = source_triangles[tri]
    blend = sp.csr_matrix((_barycentric(vw).ravel(), (np.repeat(np.arange(count), 3), corners.ravel())),
                          shape=(count, len(source_vertices)))
    closest = blend @ sp.csr_matrix(weights)
    coverage = np.asarray(closest.sum(axis=1)).ravel()
    informed = coverage > 1e-6
    closest = sp.diags(np.where(informed, 1.0 / np.maximum(coverage, 1e-300), 0.0)) @ closest
    # The source normal at the closest point: its face's, or the source's interpolated vertex normal
    # there (what the paper's code uses). A point on an edge or a vertex has no single normal, and a
    # target vertex sitting on a source crease should match; either agreeing is enough.
    smooth = _unit(np.einsum("qc,qcd->qd", _barycentric(vw), source_normals[corners]))
    cosines = np.stack([np.einsum("ij,ij->i", face_normals[tri], normals),
                        np.einsum("ij,ij->i", smooth, normals)])
    align = np.abs(cosines).max(axis=0) if config.allow_flipped_normals else cosines.max(axis=0)
    no_normal = ~np.any(normals, axis=1) | ~np.any(face_normals[tri], axis=1)  # nothing to compare
    on_surface = (dist <= config.surface_tolerance * diagonal) if config.surface_tolerance > 0 else False
    matched = informed & (dist <= max_distance) & (no_normal | on_surface | (align >= cos_limit - 1e-12))
    clock.lap("match")
    labels = _pieces(target_triangles, count)
    has_match = np.bincount(labels, weights=matched, minlength=labels.max(initial=-1) + 1) > 0
    fallback = ~has_match[labels]
    unknown = ~matched & ~fallback
    stats["pieces"] = int(has_match.size)
    stats["pieces_without_match"] = int((~has_match).sum())
    clock.lap("pieces")
    dense = closest.astype(np.float32).toarray()
    inpainted = np.zeros(count, dtype=bool)
    if np.any(unknown):
        solved = _inpaint(target_vertices, target_triangles, closest, matched, unknown, diagonal, clock)
        dense[unknown] = solved
        inpainted = unknown.copy()
        if config.smooth_iterations:
            _smooth(dense, target_triangles, inpainted, config.smooth_iterations)
            clock.lap("smooth")
    # Safety net: a row left empty (a fallback onto unweighted source vertices, a degenerate solve)
    # takes the nearest weighted source vertices' weights and is flagged fallback.
    empty = ~(np.clip(dense, 0.0, None).sum(axis=1) > 1e-6)
    if np.any(empty):
        rescue = _nearest_blend(source_vertices, weights, target_vertices[empty], config.k)
        dense[empty] = (rescue @ sp.csr_matrix(weights)).astype(np.float32).toarray()
        fallback |= empty
        matched &= ~empty
        inpainted &= ~empty
    stats["certify_cover"] = index.cover
    return dense, (matched, inpainted, fallback)


def _match_normals(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Unit face normals; a zero-area face borrows the mean of its corners' vertex normals."""
    normals = _face_normals(vertices, triangles)
    flat = ~np.any(normals, axis=1)
    if np.any(flat):
        corner = vertex_normals(vertices, triangles)[triangles[flat]].sum(axis=1)
        normals[flat] = _unit(corner)
    return normals


def _pieces(triangles: np.ndarray, count: int) -> np.ndarray:
    """Connected component of each vertex; an isolated vertex is a piece of its own."""
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    # Two edges per triangle reach all three corners; undirected search needs no symmetric copy.
    rows, cols = np.r_[triangles[:, 0], triangles[:, 0]], np.r_[triangles[:, 1], triangles[:, 2]]
    graph = sp.csr_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(count, count))
    return connected_components(graph, directed=False)[1]


def _inpaint(vertices: np.ndarray, triangles: np.ndarray, closest: sp.csr_matrix, matched: np.ndarray,
             unknown: np.ndarray, diagonal: float, clock: _Clock) -> np.ndarray:
    """Solve Q_uu W_u = −Q_uk W_k for the unknown rows (dense (U, J) float32).

    Only the rows of Q for the unknowns are built, from the triangles within two rings of them.
    Coordinates are scaled to a unit diagonal so the balance of −L against L M⁻¹ L does not depend
    on the mesh's units. A tiny mass-weighted pull towards the closest-surface weights keeps the
    system positive definite (a piece barely constrained, a sliver-only region) without changing
    the result measurably.
    """
    ring1 = _grow(unknown, triangles)
    near = ring1[triangles].any(axis=1)
    scaled = (vertices - vertices.min(axis=0)) / max(diagonal, 1e-300)
    laplacian, mass = cotangent_laplacian(scaled, triangles[near])
    clock.lap("laplacian")
    rows = np.flatnonzero(unknown)
    m = mass.diagonal()
    lap_u = laplacian[rows]
    q_u = (-lap_u + lap_u @ sp.diags(1.0 / m) @ laplacian).tocsc()
    known = sp.diags(matched.astype(np.float64)) @ closest
    rhs = (-(q_u @ known)).tocsr()
    prior = closest[rows].tocsr()
    active = np.unique(np.r_[rhs.indices, prior.indices]) if rhs.nnz or prior.nnz else np.zeros(0, np.int64)
    q_uu = q_u[:, rows]
    q_uu = ((q_uu + q_uu.T) * 0.5).tocsc()  # symmetric in exact arithmetic; make it so in floats
    m_u = m[rows]
    delta = 1e-9 * float(np.abs(q_uu.diagonal()).mean()) / float(m_u.mean())
    system = (q_uu + sp.diags(delta * m_u)).tocsr()
    b = rhs[:, active].toarray() + delta * m_u[:, None] * prior[:, active].toarray()
    clock.lap("assemble")
    solution = np.zeros((rows.size, closest.shape[1]), dtype=np.float32)
    if active.size:
        solution[:, active] = _solve_blocks(system, b)
    clock.lap("solve")
    return solution


def _solve_blocks(system: sp.csr_matrix, b: np.ndarray) -> np.ndarray:
    """Solve `system` x = b, one sparse LU per independent block (its connected components) and,
    in each, only the right-hand sides that are not zero there.

    The same solution as one factorisation of the whole matrix with every joint as a right-hand
    side, but a hole in the target touches a handful of joints, not all of them: SuperLU's
    triangular solves cost (factor size) × (right-hand sides), which dominated otherwise.
    """
    count, labels = connected_components(system, directed=False)
    order = np.argsort(labels, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(labels, minlength=count))]
    blocked = system[order][:, order].tocsr()
    rhs = b[order]
    out = np.zeros_like(b)
    sizes = np.diff(bounds)
    single = order[bounds[:-1][sizes == 1]]  # lone unknowns: a 1x1 system each
    out[single] = b[single] / system.diagonal()[single][:, None]
    for block in np.flatnonzero(sizes > 1):
        start, stop = bounds[block], bounds[block + 1]
        part = rhs[start:stop]
        used = np.flatnonzero(np.any(part != 0.0, axis=0))
        if used.size:
            # The system is symmetric positive definite: no pivoting, a symmetric minimum-degree
            # ordering (30% sparser factors, twice as fast as the default COLAMD with pivoting).
            lu = splu(blocked[start:stop, start:stop].tocsc(), permc_spec="MMD_AT_PLUS_A",
                      diag_pivot_thresh=0.0, options={"SymmetricMode": True})
            out[order[start:stop, None], used] = lu.solve(np.asfortranarray(part[:, used]))
    return out


def _grow(mask: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """The mask plus every vertex sharing a triangle with it (one ring)."""
    grown = mask.copy()
    touching = mask[triangles].any(axis=1)
    grown[triangles[touching].ravel()] = True
    return grown


def _smooth(dense: np.ndarray, triangles: np.ndarray, inpainted: np.ndarray, iterations: int) -> None:
    """A few uniform Laplacian smoothing steps on the inpainted vertices and their one ring
    (the paper's optional post-process), in place."""
    region = np.flatnonzero(_grow(inpainted, triangles))
    adjacency = _adjacency(triangles, len(dense))[region]
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    has = degree > 0
    region, adjacency, degree = region[has], adjacency[has], degree[has]
    step = sp.diags(SMOOTH_ALPHA / degree) @ adjacency
    for _ in range(iterations):
        dense[region] = (1.0 - SMOOTH_ALPHA) * dense[region] + step @ dense
