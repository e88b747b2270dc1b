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

The closest points come from `closest_surface` (exact where certified, see there), the Laplacian
and the mesh's pieces from `mesh_geometry`, the weight formats from `skin_weights`.

Conventions: ``L`` is the libigl one (off-diagonal ½(cot α + cot β), negative semi-definite);
weights are dense (V, J) arrays in rig joint order; `skin_weights.to_sparse` / `to_dense` convert to
and from the (V, K) joint_indices / joint_weights of `skinning.SkinnedMesh`.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import splu
from scipy.spatial import cKDTree

from . import closest_surface
from .closest_surface import SurfaceIndex, barycentric
from .mesh_geometry import (
    WELD_TOLERANCE,
    check_points,
    check_triangles,
    cotangent_laplacian,
    mesh_pieces,
    unit_face_normals,
    unit_vectors,
    vertex_adjacency,
    vertex_normals,
    weld,
)
from .skin_weights import finish_weights, normalise_rows

METHODS = ("robust", "nearest")
SMOOTH_ALPHA = 0.2  # strength of one smoothing step (the paper's reference code uses 0.2)


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



# ----------------------------------------------------------------------------- validation
def _source_weights(array, vertex_count: int) -> np.ndarray:
    weights = np.asarray(array, dtype=np.float64)
    if weights.ndim != 2 or weights.shape[0] != vertex_count or weights.shape[1] == 0:
        raise ValueError(f"source_weights must be (source vertices, joints) = ({vertex_count}, J >= 1), "
                         f"got shape {weights.shape}.")
    if not np.all(np.isfinite(weights)):
        raise ValueError("source_weights contain NaN or infinite values.")
    # Negative weights mean nothing to LBS (Blender clamps them); unnormalised rows are normalised
    # like Blender's armature modifier does; all-zero rows stay zero and are never used.
    weights = normalise_rows(np.clip(weights, 0.0, None))
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
    source_vertices = check_points(source_vertices, "source_vertices")
    if len(source_vertices) == 0:
        raise ValueError("The source mesh has no vertices.")
    weights = _source_weights(source_weights, len(source_vertices))
    target_vertices = check_points(target_vertices, "target_vertices")
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
    tree = cKDTree(source_vertices[weighted])
    dist, index = tree.query(target_vertices, k=k, workers=closest_surface.KDTREE_WORKERS)
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
    source_vertices = check_points(source_vertices, "source_vertices")
    if len(source_vertices) == 0:
        raise ValueError("The source mesh is empty (no vertices).")
    source_triangles = check_triangles(source_triangles, len(source_vertices), "source_triangles")
    weights = _source_weights(source_weights, len(source_vertices))
    target_vertices = check_points(target_vertices, "target_vertices")
    target_triangles = check_triangles(target_triangles, len(target_vertices), "target_triangles")
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
        dense, flags = _robust(_Source(source_vertices, source_triangles, weights), unique,
                               welded_triangles, config, diagonal, stats, clock)
        dense, flags = dense[inverse], tuple(flag[inverse] for flag in flags)
    dense = finish_weights(dense, config.max_influences)
    clock.lap("limit")
    matched, inpainted, fallback = flags
    stats.update(matched=int(matched.sum()), inpainted=int(inpainted.sum()), fallback=int(fallback.sum()),
                 seconds=dict(clock.seconds, total=sum(clock.seconds.values())))
    return TransferResult(dense, matched, inpainted, fallback, stats)


@dataclass(frozen=True)
class _Source:
    """The checked source mesh: vertices (Vs,3), triangles (F,3) and normalised weights (Vs,J)."""

    vertices: np.ndarray
    triangles: np.ndarray
    weights: np.ndarray


def _robust(source: _Source, target_vertices: np.ndarray, target_triangles: np.ndarray,
            config: TransferConfig, diagonal: float, stats: dict,
            clock: _Clock) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The robust method on the welded target: dense (V,J) weights and the matched / inpainted /
    fallback flags; fills `stats` with its thresholds and counts."""
    source_vertices, source_triangles, weights = source.vertices, source.triangles, source.weights
    count = len(target_vertices)
    max_distance = config.max_distance * diagonal
    cos_limit = math.cos(math.radians(config.max_angle))
    stats.update(max_distance_abs=max_distance, max_angle_deg=config.max_angle, cos_max_angle=cos_limit,
                 surface_tolerance_abs=config.surface_tolerance * diagonal)
    normals = vertex_normals(target_vertices, target_triangles)
    face_normals = _match_normals(source_vertices, source_triangles)
    source_normals = vertex_normals(source_vertices, source_triangles)
    clock.lap("normals")
    index = SurfaceIndex(source_vertices, source_triangles)
    clock.lap("index")
    tie = 1e-7 * max(_diagonal(source_vertices), diagonal)
    flip = config.allow_flipped_normals
    tri, vw, dist, certified = index.query(target_vertices, normals, face_normals, flip, tie, exact=False)
    stats["closest_certified"] = int(certified.sum())
    clock.lap("closest")
    # Closest-surface weights as a sparse (V, J) blend; rows renormalised over the weighted corners
    # so an unweighted source vertex does not dilute its neighbours.
    corners = source_triangles[tri]
    blend = sp.csr_matrix((barycentric(vw).ravel(), (np.repeat(np.arange(count), 3), corners.ravel())),
                          shape=(count, len(source_vertices)))
    closest = blend @ sp.csr_matrix(weights)
    coverage = np.asarray(closest.sum(axis=1)).ravel()
    informed = coverage > 1e-6
    closest = sp.diags(np.where(informed, 1.0 / np.maximum(coverage, 1e-300), 0.0)) @ closest
    # The source normal at the closest point: its face's, or the source's interpolated vertex normal
    # there (what the paper's code uses). A point on an edge or a vertex has no single normal, and a
    # target vertex sitting on a source crease should match; either agreeing is enough.
    smooth = unit_vectors(np.einsum("qc,qcd->qd", barycentric(vw), source_normals[corners]))
    cosines = np.stack([np.einsum("ij,ij->i", face_normals[tri], normals),
                        np.einsum("ij,ij->i", smooth, normals)])
    align = np.abs(cosines).max(axis=0) if config.allow_flipped_normals else cosines.max(axis=0)
    no_normal = ~np.any(normals, axis=1) | ~np.any(face_normals[tri], axis=1)  # nothing to compare
    on_surface = (dist <= config.surface_tolerance * diagonal) if config.surface_tolerance > 0 else False
    matched = informed & (dist <= max_distance) & (no_normal | on_surface | (align >= cos_limit - 1e-12))
    clock.lap("match")
    labels = mesh_pieces(target_triangles, count)
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
    normals = unit_face_normals(vertices, triangles)
    flat = ~np.any(normals, axis=1)
    if np.any(flat):
        corner = vertex_normals(vertices, triangles)[triangles[flat]].sum(axis=1)
        normals[flat] = unit_vectors(corner)
    return normals



# ----------------------------------------------------------------------------- inpainting
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
    adjacency = vertex_adjacency(triangles, len(dense))[region]
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    has = degree > 0
    region, adjacency, degree = region[has], adjacency[has], degree[has]
    step = sp.diags(SMOOTH_ALPHA / degree) @ adjacency
    for _ in range(iterations):
        dense[region] = (1.0 - SMOOTH_ALPHA) * dense[region] + step @ dense
