"""Template skeletons for Auto-Bind, and the geometry the template fit shares (numpy + scipy only).

A template is one fixed, typical build of each creature family (`families.build_creature` with a
chosen seed and species, Unreal-style names: `thigh_l`, `spine_02`, readable and mirror-aware).
"Typical" is measured: of seeds 0–11 of every species (and pose) of the family, the template is
the medoid build, the one whose role landmarks (`role_chains`, centred on the pelvis, in body
sizes) lie closest on average to those of 40 others.

The fit is planned by Auto-Bind's pipeline (pipeline.py) around its optimisation (torch, it needs
autograd: `models/bind/template_fit.py`); everything here is numpy so the engine, the benchmark and
the tests can use it without torch:

- input checks (`check_mesh`) with messages a user can act on;
- area-weighted, seeded surface sampling that stays bounded on multi-million-vertex meshes;
- bounding-box diagonal, bidirectional Chamfer distance (cKDTree);
- candidate initial orientations: PCA axes of the mesh matched to the template's, under every
  sign/permutation ambiguity that keeps a proper rotation, each refined by similarity ICP;
- role correspondence between two creatures of a family whose joint counts differ, for
  measuring joint-position error against ground truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations, product

import numpy as np
from scipy.spatial import cKDTree

from ..core.creature import FAMILIES, Creature
from ..core.rig import Rig
from ..core.rotations import rotation_angle
from ..library.families.build import build_creature

TEMPLATE_NAMING = "unreal"
MIN_VERTICES = 8
_AREA_CHUNK = 500_000  # triangles per chunk: bounds the temporary memory of area sums on huge meshes


@dataclass(frozen=True)
class TemplateSpec:
    seed: int
    species: str
    pose: str | None = None


# The medoid builds (see the module docstring). The biped's medoid stands in A-pose, half-way
# between the two poses unrigged characters come in (the fit rotates the arms either way).
TEMPLATE_SPECS: dict[str, TemplateSpec] = {
    "quadruped": TemplateSpec(11, "wolf"),
    "biped": TemplateSpec(9, "human", "A"),
    "bird": TemplateSpec(10, "pigeon"),
    "hexapod": TemplateSpec(9, "beetle"),
    "spider": TemplateSpec(4, "tarantula"),
    "serpent": TemplateSpec(1, "snake"),
    "dragon": TemplateSpec(2, "dragon"),
    "fish": TemplateSpec(3, "trout"),
}


@lru_cache(maxsize=len(FAMILIES))
def template(family: str) -> Creature:
    """The template creature of `family` (cached and shared: treat it as read-only)."""
    if family not in TEMPLATE_SPECS:
        raise ValueError(f"Unknown family {family!r}; expected one of {', '.join(FAMILIES)}.")
    spec = TEMPLATE_SPECS[family]
    return build_creature(family, spec.seed, naming=TEMPLATE_NAMING, species=spec.species, pose=spec.pose)


def dense_weights(creature: Creature) -> np.ndarray:
    """(V,J) skin weights of the creature's mesh, rows summing to 1."""
    mesh = creature.mesh
    dense = np.zeros((mesh.vertex_count, creature.rig.joint_count))
    rows = np.repeat(np.arange(mesh.vertex_count), mesh.joint_indices.shape[1])
    np.add.at(dense, (rows, mesh.joint_indices.ravel()), mesh.joint_weights.ravel())
    total = dense.sum(axis=1, keepdims=True)
    if np.any(total <= 0):  # never in the families, but a vertex must follow something
        dense[total[:, 0] <= 0, creature.pelvis] = 1.0
        total = dense.sum(axis=1, keepdims=True)
    return dense / total


def mesh_edges(triangles: np.ndarray) -> np.ndarray:
    """(E,2) unique undirected edges of a triangle mesh."""
    tri = np.asarray(triangles, dtype=np.int64)
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    edges = np.sort(edges, axis=1)
    return np.unique(edges, axis=0)


# --------------------------------------------------------------------------- input checks
def check_mesh(vertices, triangles, min_vertices: int = MIN_VERTICES) -> tuple[np.ndarray, np.ndarray]:
    """(vertices float64 (V,3), triangles int64 (F,3)) or a ValueError that says what is wrong.

    Zero-area faces, disconnected pieces, non-manifold edges and unreferenced vertices are legal
    (sampling ignores what has no area); a mesh with no surface at all is not.
    """
    try:
        verts = np.asarray(vertices, dtype=np.float64)
        tris = np.asarray(triangles)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"The mesh could not be read as arrays: {exc}") from exc
    if verts.ndim != 2 or verts.shape[1] != 3:
        raise ValueError(f"Vertices must be an array of shape (V, 3), got {verts.shape}.")
    if verts.shape[0] < min_vertices:
        raise ValueError(f"The mesh has {verts.shape[0]} vertices; binding needs at least {min_vertices}.")
    if tris.size == 0:
        raise ValueError("The mesh has no triangles (faces); Auto-Bind fits a surface, not loose points.")
    if tris.ndim != 2 or tris.shape[1] != 3:
        raise ValueError(f"Triangles must be an array of shape (F, 3), got {tris.shape}; triangulate first.")
    if not np.issubdtype(tris.dtype, np.integer):
        if not np.all(np.isfinite(tris)) or np.any(tris != np.round(tris)):
            raise ValueError("Triangle indices must be whole numbers.")
    tris = tris.astype(np.int64, copy=False)
    if tris.min() < 0 or tris.max() >= verts.shape[0]:
        raise ValueError(
            f"Triangle indices must lie in 0..{verts.shape[0] - 1}; got {tris.min()}..{tris.max()}.")
    used = np.zeros(verts.shape[0], dtype=bool)
    used[tris.ravel()] = True
    if not np.all(np.isfinite(verts).all(axis=1)[used]):
        raise ValueError("The mesh has NaN or infinite vertex coordinates.")
    if int(used.sum()) < min_vertices:
        raise ValueError(
            f"The triangles use {int(used.sum())} vertices; binding needs at least {min_vertices}.")
    return verts, tris


def triangle_areas(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(F,) triangle areas, computed in chunks so a 4M-triangle mesh needs no gigabyte temporaries."""
    areas = np.empty(len(triangles))
    for start in range(0, len(triangles), _AREA_CHUNK):
        tri = triangles[start:start + _AREA_CHUNK]
        a = vertices[tri[:, 0]]
        cross = np.cross(vertices[tri[:, 1]] - a, vertices[tri[:, 2]] - a)
        areas[start:start + len(tri)] = 0.5 * np.sqrt(np.einsum("ij,ij->i", cross, cross))
    return areas


def sample_surface(vertices: np.ndarray, triangles: np.ndarray, count: int, seed: int = 0,
                   areas: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`count` points uniformly on the surface (area-weighted faces, uniform barycentrics).

    Returns (points (N,3), face index (N,), barycentric weights (N,3)); deterministic by seed.
    Raises ValueError when the mesh has no area at all.
    """
    vertices = np.asarray(vertices, dtype=np.float64)
    triangles = np.asarray(triangles, dtype=np.int64)
    areas = triangle_areas(vertices, triangles) if areas is None else areas
    total = float(areas.sum())
    if not np.isfinite(total) or total <= 0.0:
        raise ValueError("Every face of the mesh has zero area; there is no surface to fit.")
    rng = np.random.default_rng(seed)
    # Inverse-CDF draw: O(F) once, no per-face probability array copy (rng.choice copies p).
    cdf = np.cumsum(areas)
    faces = np.searchsorted(cdf, rng.random(count) * cdf[-1], side="right")
    faces = np.minimum(faces, len(triangles) - 1)
    r1, r2 = np.sqrt(rng.random(count)), rng.random(count)
    bary = np.stack([1.0 - r1, r1 * (1.0 - r2), r1 * r2], axis=1)
    points = np.einsum("nk,nkd->nd", bary, vertices[triangles[faces]])
    return points, faces, bary


def bbox_diagonal(points: np.ndarray) -> float:
    points = np.asarray(points, dtype=np.float64)
    return float(np.linalg.norm(points.max(axis=0) - points.min(axis=0)))


def chamfer_distance(target: np.ndarray, template_points: np.ndarray, diagonal: float | None = None) -> dict:
    """Bidirectional Chamfer distance: mean nearest-neighbour distance each way, and their mean.

    Keys `target_to_template`, `template_to_target`, `mean` are fractions of `diagonal` (the
    target's bounding-box diagonal unless given); the same keys with `_abs` are in target units.
    """
    target = np.asarray(target, dtype=np.float64)
    template_points = np.asarray(template_points, dtype=np.float64)
    diagonal = bbox_diagonal(target) if diagonal is None else float(diagonal)
    t2s = float(np.mean(cKDTree(template_points).query(target)[0]))
    s2t = float(np.mean(cKDTree(target).query(template_points)[0]))
    out = {"target_to_template_abs": t2s, "template_to_target_abs": s2t, "mean_abs": 0.5 * (t2s + s2t)}
    scale = max(diagonal, 1e-300)
    out.update({key[:-4]: value / scale for key, value in list(out.items())})
    return out


# --------------------------------------------------------------------------- initial orientation
def principal_axes(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centroid, axes (3,3) as columns by decreasing variance, variances (3,))."""
    points = np.asarray(points, dtype=np.float64)
    centre = points.mean(axis=0)
    cov = np.cov((points - centre).T)
    variances, axes = np.linalg.eigh(cov)
    order = np.argsort(variances)[::-1]
    return centre, axes[:, order], variances[order]


def _signed_permutations() -> list[np.ndarray]:
    out = []
    for perm in permutations(range(3)):
        for signs in product((1.0, -1.0), repeat=3):
            matrix = np.zeros((3, 3))
            matrix[np.arange(3), perm] = signs
            out.append(matrix)
    return out


def candidate_rotations(target_points: np.ndarray, template_points: np.ndarray) -> list[np.ndarray]:
    """The 24 proper rotations mapping the template's principal axes onto the target's.

    Principal axes are known only up to sign, and their order is unreliable where variances are
    close (a dog about as tall as it is long), so every signed permutation is a candidate: of the
    48, the 24 whose composition with both eigenbases has determinant +1.
    """
    _, target_axes, _ = principal_axes(target_points)
    _, template_axes, _ = principal_axes(template_points)
    out = []
    for perm in _signed_permutations():
        rotation = target_axes @ perm @ template_axes.T
        if np.linalg.det(rotation) > 0:
            out.append(rotation)
    return out


def umeyama(source: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """Least-squares similarity (rotation, scale, translation) with target ≈ s R source + t."""
    mu_s, mu_t = source.mean(axis=0), target.mean(axis=0)
    xs, xt = source - mu_s, target - mu_t
    cov = xt.T @ xs / len(source)
    u, sing, vt = np.linalg.svd(cov)
    fix = np.diag([1.0, 1.0, np.sign(np.linalg.det(u @ vt)) or 1.0])
    rotation = u @ fix @ vt
    var = float(np.mean(np.sum(xs * xs, axis=1)))
    scale = float(np.sum(sing * np.diag(fix)) / max(var, 1e-300))
    return rotation, scale, mu_t - scale * rotation @ mu_s


@dataclass
class Similarity:
    rotation: np.ndarray  # (3,3)
    scale: float
    translation: np.ndarray  # (3,)
    chamfer: float = np.inf  # mean bidirectional NN distance after refinement (target units)

    def apply(self, points: np.ndarray) -> np.ndarray:
        return self.scale * points @ self.rotation.T + self.translation

    @property
    def matrix(self) -> np.ndarray:
        out = np.eye(4)
        out[:3, :3] = self.scale * self.rotation
        out[:3, 3] = self.translation
        return out


def similarity_icp(source: np.ndarray, target: np.ndarray, init: Similarity, iterations: int = 10,
                   target_tree: cKDTree | None = None) -> Similarity:
    """Refine a similarity by ICP with correspondences both ways (both keep the scale honest:
    one way alone lets it shrink onto a part or grow around the whole)."""
    tree = cKDTree(target) if target_tree is None else target_tree
    current = Similarity(init.rotation, init.scale, init.translation)
    for _ in range(iterations + 1):
        moved = current.apply(source)
        d_s, i_s = tree.query(moved)
        d_t, i_t = cKDTree(moved).query(target)
        current.chamfer = 0.5 * float(d_s.mean() + d_t.mean())
        if _ == iterations:
            break
        src = np.concatenate([source, source[i_t]])
        dst = np.concatenate([target[i_s], target])
        current = Similarity(*umeyama(src, dst))
    return current


def _turns(angle: float) -> list[np.ndarray]:
    """Identity and ±angle about each coordinate axis."""
    out = [np.eye(3)]
    c, s = np.cos(angle), np.sin(angle)
    for axis in range(3):
        for sign in (1.0, -1.0):
            m = np.eye(3)
            i, j = [k for k in range(3) if k != axis]
            m[i, i] = m[j, j] = c
            m[i, j], m[j, i] = -sign * s, sign * s
            out.append(m)
    return out


def initial_alignments(target_points: np.ndarray, template_points: np.ndarray, iterations: int = 10,
                       keep: int | None = None, refine: int = 16, distinct: float = np.radians(25.0),
                       ) -> list[Similarity]:
    """Candidate similarities template → target, best (lowest Chamfer) first, pairwise distinct.

    Starts: the 24 PCA candidates (`candidate_rotations`), each also turned by ±45° about each
    template axis (PCA axes of a sprawling spider or a long-tailed rat need not be its body axes),
    scaled and centred onto the target. All 168 are scored by one Chamfer evaluation, the best
    `refine` are refined by similarity ICP, and near-duplicates (within `distinct` of a better
    one: ICP funnels starts into the same minimum) are dropped. The mesh can come in any
    orientation and scale.
    """
    centre_t, _, var_t = principal_axes(target_points)
    centre_s, _, var_s = principal_axes(template_points)
    scale = float(np.sqrt(var_t.sum() / max(var_s.sum(), 1e-300)))
    tree = cKDTree(target_points)
    # Scoring 168 starts: ~300 points a side, distances capped (far points cost a KD-tree most).
    few_t = target_points[:: max(1, len(target_points) // 300)]
    few_s = template_points[:: max(1, len(template_points) // 300)]
    few_tree = cKDTree(few_t)
    cap = 0.25 * bbox_diagonal(target_points)
    starts = []
    for rotation in candidate_rotations(target_points, template_points):
        for turn in _turns(np.pi / 4):
            rot = rotation @ turn
            start = Similarity(rot, scale, centre_t - scale * rot @ centre_s)
            moved = start.apply(few_s)
            there = few_tree.query(moved, distance_upper_bound=cap)[0]
            back = cKDTree(moved).query(few_t, distance_upper_bound=cap)[0]
            start.chamfer = 0.5 * float(np.minimum(there, cap).mean() + np.minimum(back, cap).mean())
            starts.append(start)
    starts.sort(key=lambda s: s.chamfer)
    refined = [similarity_icp(template_points, target_points, s, iterations, tree) for s in starts[:refine]]
    refined.sort(key=lambda s: s.chamfer)
    out: list[Similarity] = []
    for cand in refined:
        if all(rotation_angle(cand.rotation, o.rotation) > distinct for o in out):
            out.append(cand)
    return out if keep is None else out[:keep]


@dataclass
class MirrorPlane:
    normal: np.ndarray  # (3,) unit normal
    offset: float  # the plane is {x : x · normal = offset}
    residual: float  # trimmed mean distance from reflected points to the surface samples
    baseline: float  # the same for unreflected points (sampling noise: what a perfect mirror gives)

    @property
    def symmetric(self) -> bool:
        """Mirror-symmetric within sampling noise (a bind-pose creature, not a posed one)."""
        return self.residual <= 1.5 * self.baseline

    def reflect(self, points: np.ndarray) -> np.ndarray:
        return points - 2.0 * (points @ self.normal - self.offset)[:, None] * self.normal


def _trimmed_mean(dist: np.ndarray, keep: float = 0.9) -> float:
    """Mean of the smallest `keep` fraction: parts with no mirror image (a raised paw) do not count."""
    return float(np.mean(np.sort(dist)[: max(1, int(keep * len(dist)))]))


def mirror_plane(points: np.ndarray, reference: np.ndarray, normal: np.ndarray,
                 cone: float = np.radians(30.0), reference_tree: cKDTree | None = None) -> MirrorPlane:
    """The best mirror plane of a surface with its normal within `cone` of a guess.

    A symmetric surface's area centroid lies on its mirror plane, so only the normal is searched:
    a grid over the cone (6° steps, then 1.5° around the best), each scored by how far the
    reflected `points` land from the surface (`reference`, a denser sampling), trimmed mean.
    Direct search, because symmetric ICP drifts on sprawling shapes (an insect's legs).
    """
    tree = cKDTree(reference) if reference_tree is None else reference_tree
    normal = np.asarray(normal, dtype=np.float64) / np.linalg.norm(normal)
    centre = reference.mean(axis=0)
    helper = np.eye(3)[int(np.argmin(np.abs(normal)))]
    cap = 0.05 * bbox_diagonal(reference)  # far misses are all equally bad, and slow to look up

    def score(n: np.ndarray) -> float:
        plane = MirrorPlane(n, float(centre @ n), 0.0, 0.0)
        dist = tree.query(plane.reflect(points), distance_upper_bound=cap)[0]
        return _trimmed_mean(np.minimum(dist, cap))

    best, best_score = normal, score(normal)
    for step, reach, around in ((np.radians(6.0), cone, normal), (np.radians(1.5), np.radians(6.0), None)):
        base = best if around is None else around
        bu = np.cross(base, helper)
        bu /= np.linalg.norm(bu)
        bv = np.cross(base, bu)
        grid = np.arange(-reach, reach + 1e-9, step)
        for a in grid:
            for b in grid:
                if a * a + b * b > reach * reach + 1e-12 or (a == 0 and b == 0):
                    continue
                n = base + np.tan(a) * bu + np.tan(b) * bv
                n /= np.linalg.norm(n)
                value = score(n)
                if value < best_score:
                    best, best_score = n, value
    baseline = _trimmed_mean(tree.query(points)[0])
    return MirrorPlane(best, float(centre @ best), best_score, baseline)


def snap_to_plane(similarity: Similarity, plane: MirrorPlane) -> Similarity:
    """Turn (about the target centre of the template's origin) and shift a similarity so that the
    template's sagittal plane x = 0 lands on `plane`."""
    current = similarity.rotation[:, 0]
    axis = np.cross(current, plane.normal)
    sin, cos = float(np.linalg.norm(axis)), float(current @ plane.normal)
    turn = np.eye(3)
    if sin > 1e-12:
        k = axis / sin
        skew = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
        turn = np.eye(3) + sin * skew + (1 - cos) * skew @ skew
    shift = plane.offset - similarity.translation @ plane.normal
    translation = similarity.translation + shift * plane.normal
    return Similarity(turn @ similarity.rotation, similarity.scale, translation, similarity.chamfer)


# --------------------------------------------------------------------------- role correspondence
_LIMB_KINDS = ("leg", "arm", "wing", "fin")


def _limb_anchor(creature: Creature, chain: list[int]) -> int:
    """Index in a limb chain that corresponds across builds: the foot, else the root."""
    for limb in creature.limbs:
        if limb.joints == chain and limb.foot >= 0:
            return limb.joints.index(limb.foot)
    return 0


def role_chains(creature: Creature) -> dict[str, list[int]]:
    """The creature's joints grouped into ordered chains keyed by role, comparable across builds.

    Keys: `trunk` (pelvis then spine), `neck`, `head`, `jaw`, `tail`, one per limb
    (`kind:position:side:k`, k counting same-keyed limbs front to back) and one per chain of each
    extra (`name:side:k`, e.g. each ear, antenna, abdomen).
    """
    chains: dict[str, list[int]] = {"trunk": [creature.pelvis, *creature.spine]}
    for key, joints in (("neck", creature.neck), ("tail", creature.tail)):
        if joints:
            chains[key] = list(joints)
    for key, joint in (("head", creature.head), ("jaw", creature.jaw)):
        if joint >= 0:
            chains[key] = [joint]
    counts: dict[str, int] = {}
    for limb in creature.limbs:
        base = f"{limb.kind}:{limb.position}:{limb.side}"
        counts[base] = counts.get(base, 0) + 1
        chains[f"{base}:{counts[base]}"] = list(limb.joints)
    heads = creature.rig.heads
    for name, joints in creature.extras.items():
        members = set(joints)
        sub: list[list[int]] = []
        for j in joints:  # split the flat list where a joint's parent is not in it
            if sub and creature.rig.parents[j] in members and creature.rig.parents[j] in sub[-1]:
                sub[-1].append(j)
            else:
                sub.append([j])
        per_side: dict[int, int] = {}
        for chain in sub:
            side = int(np.sign(np.round(heads[chain[0], 0] / max(creature.rig.body_size, 1e-12), 3)))
            per_side[side] = per_side.get(side, 0) + 1
            chains[f"{name}:{side}:{per_side[side]}"] = chain
    return chains


def _chain_fractions(rig: Rig, chain: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(arc-length fraction of each head along the chain's polyline, polyline points)."""
    points = np.concatenate([rig.heads[chain], rig.tails[chain[-1:]]])
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    return cum[:-1] / max(cum[-1], 1e-300), points


def _at_fraction(points: np.ndarray, fraction: np.ndarray) -> np.ndarray:
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    s = fraction * cum[-1]
    return np.stack([np.interp(s, cum, points[:, d]) for d in range(3)], axis=1)


def corresponding_points(creature: Creature, rig: Rig, other: Creature,
                         other_rig: Rig | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Where each of `creature`'s joints (posed as `rig`) lies on `other` (posed as `other_rig`).

    Chains are matched by role key (`role_chains`). Limbs match joint to joint, aligned on the
    foot (`Limb.foot`; the root for limbs that never touch the ground): builds of a family differ
    by an optional girdle bone at the root of a leg (a quadruped's scapula) or an extra bone at
    the tip (a biped's toe end, a dragon's second wing finger), and a joint with no counterpart
    is left out. Chains with equal joint counts match
    joint to joint. Other chains (spine, neck, tail, extras) place each joint at its own
    arc-length fraction along the other chain's polyline (heads, then the last tail), so a 5-bone
    spine compares with a 3-bone one. Returns (joint indices of `creature` (M,), their matched
    positions on `other` (M,3)); joints whose role the other creature lacks are left out.
    """
    other_rig = other.rig if other_rig is None else other_rig
    mine, theirs = role_chains(creature), role_chains(other)
    limbs = {key for key in mine if key.count(":") == 3 and key.split(":")[0] in _LIMB_KINDS}
    joints, positions = [], []
    for key, chain in mine.items():
        if key not in theirs:
            continue
        target = theirs[key]
        if key in limbs:
            mine_at, theirs_at = _limb_anchor(creature, chain), _limb_anchor(other, target)
            pairs = [(j, target[k - mine_at + theirs_at]) for k, j in enumerate(chain)
                     if 0 <= k - mine_at + theirs_at < len(target)]
            joints.extend(a for a, _ in pairs)
            positions.append(other_rig.heads[[b for _, b in pairs]])
            continue
        if len(target) == len(chain):
            joints.extend(chain)
            positions.append(other_rig.heads[target])
            continue
        fraction, _ = _chain_fractions(rig, chain)
        _, polyline = _chain_fractions(other_rig, target)
        joints.extend(chain)
        positions.append(_at_fraction(polyline, fraction))
    if not joints:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 3))
    return np.asarray(joints, dtype=np.int64), np.concatenate(positions)


def _distance_to_bones(points: np.ndarray, rig: Rig) -> np.ndarray:
    """(N,) distance from each point to the nearest bone segment (head–tail) of `rig`."""
    a, b = rig.heads[None], rig.tails[None]
    ab = b - a
    t = np.clip(np.sum((points[:, None] - a) * ab, axis=-1) / np.maximum(np.sum(ab * ab, axis=-1), 1e-300),
                0.0, 1.0)
    return np.linalg.norm(points[:, None] - (a + t[..., None] * ab), axis=-1).min(axis=1)


def joint_position_error(creature: Creature, rig: Rig, truth: Creature, truth_rig: Rig | None = None) -> dict:
    """Joint-position error of a fitted `rig` (joints of `creature`) against a ground-truth creature.

    Returns mean / median / max distance to the role-matched joint (`corresponding_points`) in
    the truth's units and as fractions of the truth's body size (`Rig.body_size`), how many
    joints were matched, and `to_bones_fraction`: the mean distance from every fitted joint to
    the nearest true bone, which tells a skeleton off the body from one slid along it (where a
    serpent's vent or a tail's root is, a uniform tube does not show).
    """
    truth_rig = truth.rig if truth_rig is None else truth_rig
    joints, positions = corresponding_points(creature, rig, truth, truth_rig)
    dist = np.linalg.norm(rig.heads[joints] - positions, axis=1)
    size = max(truth_rig.body_size, 1e-300)
    return {
        "mean": float(dist.mean()), "median": float(np.median(dist)), "max": float(dist.max()),
        "mean_fraction": float(dist.mean() / size), "max_fraction": float(dist.max() / size),
        "matched": int(len(joints)), "joints": int(rig.joint_count),
        "to_bones_fraction": float(_distance_to_bones(rig.heads, truth_rig).mean() / size),
    }
