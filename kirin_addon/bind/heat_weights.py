"""Skin weights computed on the mesh itself from a skeleton: "bone heat" (numpy + scipy, never bpy).

Baran & Popović 2007 (Pinocchio), the method behind Blender's Automatic Weights: each bone j is a
heat source; a vertex whose nearest *visible* bone is j at distance d is coupled to it with heat
``H = c / d²``, and the weights of bone j are the equilibrium ``(−Δ + H) w_j = H p_j`` (p_j = 1 where
j is the nearest visible bone, split between ties). Here Δ is the cotangent Laplacian with the
lumped mass, ``Δ = M⁻¹ L``, so the system actually solved is the symmetric
``(−L + M H) w_j = M H p_j``: one sparse LU per connected piece (COLAMD), then one triangular solve
per bone heated on that piece. Coordinates are scaled to a unit bounding-box diagonal first; the
result does not depend on the mesh's units. c = `heat` = 2 by default: Blender uses c = 1 with a
Laplacian half of M⁻¹L (¼(cot α + cot β) / area), the same system as c = 2 here; on the Auto-Bind
benchmark c = 2 or 3 gave the lowest error, 1 and 8 about 3 % more.

Where Blender's fails (whole parts left unweighted, "Bone Heat Weighting: failed to find solution"):

- seams: imported meshes are split at UV and normal seams; they are welded first (`mesh_geometry.weld`),
  so the heat diffuses across them and duplicates get identical weights;
- pieces no bone "sees" (eyes, a detached accessory, a far piece, an inside-out shell): every
  connected piece gets heat; a piece where no vertex has a visible bone ignores visibility (each
  vertex then takes its nearest bone), so every system is non-singular and every vertex is weighted.

Which bone is "nearest". As Blender does, the distance to a bone is divided by ½ (cos + 1.001), cos
between the vertex normal and the direction from the bone's nearest point to the vertex
(`normal_falloff`): a bone straight under the surface keeps its distance, one off to the side
counts up to twice as far, one behind the surface (cos → −1) ~2000 times. Visibility: Baran and
Blender also cast the segment from the vertex to the bone against the mesh; here a bone is hidden
when the direction to it leaves through the surface at the vertex (``n · u > visibility_cos``, u
the unit direction to the bone, 0 by default: the bone must lie in the inward half-space). That
rejects what the ray test rejects most often (the inner thigh and the other leg, the chest and the
arm beside it) without a ray cast; it cannot see an occluder further away (a bone behind another
body part whose near side faces it). Normals are the welded mesh's area-weighted vertex normals; a
piece clearly inside out (signed volume negative and at least half its unsigned spread) has them
flipped.

Prior. ``prior`` (V, J) weights (the template's transferred weights in Auto-Bind) are a soft
target: ``(−L + M H + λ M) w = M H p + λ M w_prior`` with λ = `prior_weight` in units of
1 / diagonal² (for comparison, a vertex 5 % of the diagonal from its bone has H = 800 with c = 2).
PRIOR_WEIGHT (300) was the best of 10…10⁴ on the benchmark.

Finish: negatives clipped, weights below `min_weight` dropped, at most `max_influences` per vertex
(the largest), rows renormalised to sum to 1; a row left empty takes its nearest bone.

Measured (benchmarks/bench_autobind.py, best-pose error of the fitted skeleton over Blender's bone
heat on the same bones, geometric mean): Quaternius animals heat 1.02×, heat + prior 0.97×, the
robust template transfer alone 1.34×; modular humans (where Blender's leaves parts unweighted)
0.43-0.56×, 0.45-0.53×, 0.49-0.59×; dinosaurs 1.04×, 1.01×, 1.21×. None reaches the artist's
own weights (0.27× on the animals): artists blend where they like (e.g. the neck into the whole
head), which no distance rule recovers. 107k vertices, 36 bones: 2.0-2.4 s on 2 CPU cores (the
LU and the per-bone solves are ~60 % of it); with the prior (after a 0.7 s transfer) about the same.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from .mesh_geometry import WELD_TOLERANCE, cotangent_laplacian, mesh_pieces, vertex_normals, weld
from .skin_weights import finish_weights

_CHUNK = 8192  # vertices per distance block: bounds the (chunk, J) temporaries
_TIE = 1e-4  # bones within (1 + _TIE) × the nearest distance share a vertex's heat
_MIN_DISTANCE = 1e-4  # × diagonal: a vertex on a bone gets a large but finite heat
PRIOR_WEIGHT = 300.0  # λ of Auto-Bind's "blend" (heat + the transferred template weights as a prior)


@dataclass
class HeatConfig:
    heat: float = 2.0  # c in H = c / d²: 2 is Blender's (its Laplacian is half of M⁻¹L), see below
    visibility: bool = True  # reject bones behind the surface (normal test, see the module docstring)
    visibility_cos: float = 0.0  # a bone is hidden when n · (direction to it) exceeds this
    # Blender's soft normal term: distance / (½ (cos + 1.001)), cos between the normal and the
    # direction from the bone to the vertex; a bone straight below the surface keeps its distance.
    normal_falloff: bool = True
    prior_weight: float = 0.0  # λ, 1 / diagonal²: pull towards `prior` (0: no prior)
    min_weight: float = 0.01  # smaller weights are dropped before the influence limit
    max_influences: int = 4  # 0: keep all

    def validate(self) -> None:
        for name in ("heat", "prior_weight", "min_weight"):
            value = getattr(self, name)
            if not _finite(value) or value < 0:
                raise ValueError(f"{name} must be a number >= 0, got {value!r}.")
        if self.heat <= 0:
            raise ValueError(f"heat must be > 0, got {self.heat!r}.")
        if not _finite(self.visibility_cos) or not -1.0 <= self.visibility_cos <= 1.0:
            raise ValueError(f"visibility_cos must be between -1 and 1, got {self.visibility_cos!r}.")
        if self.min_weight >= 1.0:
            raise ValueError(f"min_weight must be below 1, got {self.min_weight!r}.")
        value = self.max_influences
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ValueError(f"max_influences must be an integer >= 0, got {value!r}.")


def _finite(value) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool) \
        and math.isfinite(value)


@dataclass
class HeatResult:
    weights: np.ndarray  # (V, J) float32 dense, rows sum to 1
    heated: np.ndarray  # (V,) bool: coupled to a visible nearest bone (the others are diffused)
    blind: np.ndarray  # (V,) bool: on a piece no bone was visible from, visibility ignored there
    stats: dict = field(default_factory=dict)


def segment_distances(points: np.ndarray, heads: np.ndarray, tails: np.ndarray,
                      normals: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """(P, J) distance of every point to every segment head → tail, and with `normals` (P, 3) the
    cosine between each point's normal and its direction to the segment's nearest point (0 for a
    zero normal or a point on the segment). Vectorised by matrix products, no (P, J, 3) array."""
    axis = tails - heads
    length2 = np.einsum("jk,jk->j", axis, axis)
    inv = np.where(length2 > 0, 1.0 / np.where(length2 > 0, length2, 1.0), 0.0)  # a point bone: t = 0
    head_axis = np.einsum("jk,jk->j", heads, axis)
    head2 = np.einsum("jk,jk->j", heads, heads)
    p2 = np.einsum("pk,pk->p", points, points)[:, None]
    pa = points @ axis.T - head_axis  # (p − h)·a
    t = np.clip(pa * inv, 0.0, 1.0)
    ph2 = p2 - 2.0 * (points @ heads.T) + head2  # |p − h|²
    d2 = np.maximum(ph2 - 2.0 * t * pa + t * t * length2, 0.0)
    distance = np.sqrt(d2)
    if normals is None:
        return distance, None
    toward = normals @ heads.T + t * (normals @ axis.T) - np.einsum("pk,pk->p", normals, points)[:, None]
    cosine = np.divide(toward, distance, out=np.zeros_like(toward), where=distance > 0)
    return distance, cosine


def _outward_normals(vertices: np.ndarray, triangles: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Vertex normals, flipped on pieces clearly inside out (their signed volume about their centre
    negative, and at least half the sum of the unsigned volumes of their triangles)."""
    normals = vertex_normals(vertices, triangles)
    if len(triangles) == 0:
        return normals
    a, b, c = (vertices[triangles[:, i]] for i in range(3))
    centre = np.zeros((labels.max() + 1, 3))
    counts = np.bincount(labels, minlength=len(centre))
    for k in range(3):
        centre[:, k] = np.bincount(labels, vertices[:, k], minlength=len(centre)) / np.maximum(counts, 1)
    origin = centre[labels[triangles[:, 0]]]
    volume = np.einsum("fk,fk->f", a - origin, np.cross(b - origin, c - origin))
    signed = np.bincount(labels[triangles[:, 0]], volume, minlength=len(centre))
    spread = np.bincount(labels[triangles[:, 0]], np.abs(volume), minlength=len(centre))
    # Clearly inside out only: an open sheet's volume about its centre is small against its spread
    # and has no meaningful sign.
    flip = (signed < 0) & (-signed >= 0.5 * spread)
    return normals * np.where(flip, -1.0, 1.0)[labels][:, None]


def _heat_sources(vertices, normals, labels, heads, tails, config: HeatConfig):
    """Per vertex: its heat H (V,), the sparse (V, B) split p over its nearest visible bone(s), the
    heated mask, the blind mask (pieces where visibility was dropped) and its nearest bone regardless
    of visibility. Distances are computed by blocks of vertices: memory O(block × bones)."""
    count, bones = len(vertices), len(heads)

    def blocks():
        for start in range(0, count, _CHUNK):
            stop = min(start + _CHUNK, count)
            dist, cosine = segment_distances(vertices[start:stop], heads, tails, normals[start:stop])
            hidden = cosine > config.visibility_cos if config.visibility else np.zeros(dist.shape, bool)
            yield start, stop, dist / (0.5 * (1.001 - cosine)) if config.normal_falloff else dist, hidden

    sighted = np.ones(count, dtype=bool)
    if config.visibility:
        for start, stop, _, hidden in blocks():
            sighted[start:stop] = ~hidden.all(axis=1)
    blind = ~(np.bincount(labels, sighted, minlength=labels.max(initial=-1) + 1) > 0)[labels]
    best = np.empty(count)
    nearest = np.empty(count, dtype=np.int64)
    rows, cols = [], []
    for start, stop, dist, hidden in blocks():
        nearest[start:stop] = dist.argmin(axis=1)
        dist[hidden & ~blind[start:stop, None]] = np.inf  # a blind piece: every bone counts there
        low = dist.min(axis=1)
        best[start:stop] = low
        r, c = np.nonzero((dist <= (low * (1.0 + _TIE) + 1e-15)[:, None]) & np.isfinite(low)[:, None])
        rows.append(r + start)
        cols.append(c)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    ties = np.bincount(rows, minlength=count)
    split = sp.csr_matrix((1.0 / ties[rows], (rows, cols)), shape=(count, bones))
    heated = np.isfinite(best)
    d = np.maximum(np.where(heated, best, 1.0), _MIN_DISTANCE)
    heat = np.where(heated, config.heat / (d * d), 0.0)
    return heat, split, heated, blind, nearest


def _solve_pieces(system: sp.csr_matrix, coupling: np.ndarray, split: sp.csr_matrix, labels: np.ndarray,
                  pull: np.ndarray | None, target: np.ndarray | None) -> np.ndarray:
    """Solve `system` W = diag(coupling) split (+ diag(pull) target), (V, B) float32: one sparse LU
    per connected piece (`labels`: the system couples nothing across pieces) and in each only the
    bones with a right-hand side there (the others are 0 there).

    COLAMD ordering and one triangular solve per bone: on 100k vertices SuperLU's symmetric MMD
    ordering took 3-4× longer to factorise, and its multi-column solve was slower than a loop."""
    out = np.zeros(split.shape, dtype=np.float32)
    order = np.argsort(labels, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(labels))]
    diagonal = system.diagonal()
    for piece in range(len(bounds) - 1):
        rows = order[bounds[piece]:bounds[piece + 1]]
        part = coupling[rows, None] * split[rows].toarray()
        if pull is not None:
            part += pull[rows, None] * target[rows]
        used = np.flatnonzero(np.any(part != 0.0, axis=0))
        if used.size == 0:
            continue
        if rows.size == 1:
            out[rows[:, None], used] = part[:, used] / diagonal[rows][:, None]
            continue
        lu = splu(system[rows][:, rows].tocsc(), permc_spec="COLAMD")
        for j in used:
            out[rows, j] = lu.solve(np.ascontiguousarray(part[:, j]))
    return out


def heat_weights(vertices: np.ndarray, triangles: np.ndarray, heads: np.ndarray, tails: np.ndarray,
                 bones: np.ndarray | None = None, prior: np.ndarray | None = None,
                 config: HeatConfig | None = None) -> HeatResult:
    """Bone-heat weights (V, J) of a mesh for the segments heads → tails (J, 3), in the mesh's space.

    `bones` (J,) bool: the bones that deform (the others get no weight; default all). `prior` (V, J):
    weights to pull towards (used when `config.prior_weight` > 0). Raises ValueError for bad shapes,
    non-finite coordinates, no deforming bone or a bad config.
    """
    config = config or HeatConfig()
    config.validate()
    started = time.perf_counter()
    seconds: dict[str, float] = {}

    def lap(stage: str) -> None:
        nonlocal started
        now = time.perf_counter()
        seconds[stage] = now - started
        started = now

    vertices, triangles, heads, tails, bones = _checked(vertices, triangles, heads, tails, bones)
    joints = len(heads)
    use_prior = prior is not None and config.prior_weight > 0
    if prior is not None:
        prior = np.asarray(prior, dtype=np.float64)
        if prior.shape != (len(vertices), joints) or not np.isfinite(prior).all():
            raise ValueError(f"prior must be ({len(vertices)}, {joints}) finite weights, got {prior.shape}.")

    # Unit diagonal, centred: λ and the distances mean the same on any mesh, matrix products stay exact.
    low, high = vertices.min(axis=0), vertices.max(axis=0)
    diagonal = float(np.linalg.norm(high - low)) or 1.0
    centre = 0.5 * (low + high)
    scaled = (vertices - centre) / diagonal
    unique, welded, inverse = weld(scaled, triangles, WELD_TOLERANCE)
    labels = mesh_pieces(welded, len(unique))
    normals = _outward_normals(unique, welded, labels)
    lap("weld")
    active = np.flatnonzero(bones)
    sources = [(ends[active] - centre) / diagonal for ends in (heads, tails)]
    heat, split, heated, blind, nearest = _heat_sources(unique, normals, labels, *sources, config)
    lap("heat")
    laplacian, mass = cotangent_laplacian(unique, welded)
    m = mass.diagonal()
    coupling = m * heat
    diagonal_terms = coupling.copy()
    pull = target = None
    if use_prior:
        target = _welded_prior(prior[:, active], inverse, len(unique))
        pull = config.prior_weight * m
        diagonal_terms += pull
    system = (-laplacian + sp.diags(diagonal_terms)).tocsr()
    lap("assemble")
    solution = _solve_pieces(system, coupling, split, labels, pull, target)
    lap("solve")
    if config.min_weight > 0:
        solution[solution < config.min_weight] = 0.0
    dense = np.zeros((len(unique), joints), dtype=np.float32)
    dense[:, active] = finish_weights(solution, config.max_influences)
    empty = ~(dense.sum(axis=1) > 0)
    if np.any(empty):  # a degenerate row: its nearest bone
        dense[empty, active[nearest[empty]]] = 1.0
    weights = dense[inverse]
    lap("finish")
    stats = {"vertices": int(len(vertices)), "welded_vertices": int(len(vertices) - len(unique)),
             "bones": int(active.size), "pieces": int(labels.max(initial=-1) + 1),
             "blind_pieces": int(np.unique(labels[blind]).size), "heated": int(heated[inverse].sum()),
             "rescued": int(empty.sum()), "prior_weight": float(config.prior_weight) if use_prior else 0.0,
             "diagonal": diagonal, "seconds": dict(seconds, total=sum(seconds.values()))}
    return HeatResult(weights, heated[inverse], blind[inverse], stats)



def _checked(vertices, triangles, heads, tails, bones) -> tuple[np.ndarray, ...]:
    """The mesh (vertices, triangles) and the segments (heads, tails, deforming flags) as arrays;
    ValueError for bad shapes, non-finite coordinates, bad indices or no deforming bone."""
    vertices = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    heads = np.asarray(heads, dtype=np.float64).reshape(-1, 3)
    tails = np.asarray(tails, dtype=np.float64).reshape(-1, 3)
    joints = len(heads)
    if tails.shape != heads.shape:
        raise ValueError(f"heads and tails must both be (bones, 3), got {heads.shape} and {tails.shape}.")
    bones = np.ones(joints, dtype=bool) if bones is None else np.asarray(bones, dtype=bool).reshape(-1)
    if bones.shape != (joints,):
        raise ValueError(f"bones must be ({joints},) flags, got {bones.shape}.")
    if not bones.any():
        raise ValueError("No deforming bone to compute skin weights from.")
    if len(vertices) == 0:
        raise ValueError("The mesh is empty (no vertices).")
    if not (np.isfinite(vertices).all() and np.isfinite(heads).all() and np.isfinite(tails).all()):
        raise ValueError("The mesh or the skeleton has NaN or infinite coordinates.")
    if triangles.size and (triangles.min() < 0 or triangles.max() >= len(vertices)):
        raise ValueError(f"A triangle index is outside 0..{len(vertices) - 1}.")
    return vertices, triangles, heads, tails, bones


def _welded_prior(prior: np.ndarray, inverse: np.ndarray, count: int) -> np.ndarray:
    """The prior (V, J) on the `count` welded vertices: the mean of each one's duplicates, rows normalised."""
    counts = np.bincount(inverse, minlength=count).astype(np.float64)
    gather = sp.csr_matrix((1.0 / counts[inverse], (inverse, np.arange(len(inverse)))),
                           shape=(count, len(inverse)))
    target = np.clip(gather @ prior, 0.0, None)
    total = target.sum(axis=1, keepdims=True)
    return np.divide(target, total, out=np.zeros_like(target), where=total > 0)


def rig_heat_weights(vertices: np.ndarray, triangles: np.ndarray, rig, prior: np.ndarray | None = None,
                     config: HeatConfig | None = None) -> HeatResult:
    """`heat_weights` for a `Rig` (its deform bones, head → tail at rest), in the rig's joint order."""
    return heat_weights(vertices, triangles, rig.heads, rig.tails, rig.deform, prior, config)
