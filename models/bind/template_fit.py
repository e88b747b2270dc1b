"""Template fit, the first half of Auto-Bind: fit a family's template skeleton to an unrigged mesh.

It lives in `models/` rather than the engine because it needs autograd (torch); the numpy parts
it shares with the engine (templates, surface sampling, Chamfer, PCA orientations, mirror planes,
input checks, ground-truth matching) are in `kirin_addon/bind/templates.py`.

What is fitted, jointly, by Adam on one loss:

- a similarity template → target (log scale, axis-angle rotation on top of an initial
  orientation, translation), working in the target's normalised frame (bbox centre at the
  origin, bbox diagonal 1), so a mesh in any units and orientation fits the same way;
- per-bone scales, bounded (`FitConfig.scale_bounds`) and shared by mirror pairs: a length
  scale along the bone and a width scale across it. A bone's scale acts on its segment like a
  rigid-plus-scale transform about its head, so its vertices *and* the heads of its children
  scale together (a longer thigh moves the shin, a wider chest moves the shoulders);
- per-joint rotations of the bind pose (axis-angle in the joint's own rest frame); mirror pairs
  share them, mirrored (plus a penalised asymmetric residual), so left and right legs cannot
  pair with different target legs;

through linear blend skinning of the template mesh. Loss = bidirectional Chamfer on surface
samples (both directions, squared, in units of 1 % of the target diagonal) + an edge-length term
(each template edge against its length in the *scaled rest* mesh: the pose may bend the mesh
but may not stretch it to match appearance) + small regularisers (rotation magnitude, the
asymmetric residual, scale smoothness along the tree and scale magnitude).

Orientation: the mesh's principal axes are matched to the template's under all 24 proper
sign/permutation ambiguities (each also turned ±45° about each axis), scored, the best refined
by similarity ICP (numpy). Where the mesh is mirror-symmetric (a bind pose), each start is
snapped onto its mirror plane and the similarity is locked to it (it may only pitch about the
plane normal and slide in the plane): ICP on a template of other proportions settles a few
degrees off, and legs then pair wrongly. Stages: coarse (similarity + scales) for
`orientations` distinct starts, then fine (+ joint rotations) for the best `finalists`; the
lowest final loss wins (only articulation tells a rat from a reversed rat whose long tail
plays the template's neck). Family detection (family=None) gives every family the coarse stage
from its best `detect_orientations` starts, ranks families by Chamfer, and finishes the best.

Result: the template rig with scaled bones and fitted rest orientations, mapped by the
similarity into the target's own coordinates and units: its rest matrices are the asset's bind
transforms B_j (rigid, orthonormal, positive bone lengths).

Quality: the worst of three grades (thresholds in `FitConfig`), set from
`benchmarks/bench_template_fit.py`: mean bidirectional Chamfer (fraction of the target's bbox
diagonal, fresh samples) good ≤ 1.5 % < fair ≤ 3 % < poor; mean bind-pose rotation per joint
good ≤ 20° < fair ≤ 30° < poor; mean relative stretch of template edges good ≤ 2.5 % < fair ≤
3.2 % < poor. Procedural creatures of the right family land at 0.25–0.85 %, 3–18° and 0.2–2.2 %;
a lumpy blob is covered by the bird template to 1.8 % but only bent by 35° per joint and
stretched by 3.6 %: poor.

Cost (one thread, shared 2-core machine): 3–8 s per fit with the family given, whatever the mesh
size (it is only sampled: 4.6 s for a 20k-vertex mesh, 5.5 s for 2M vertices); 10–13 s with
family detection (8 families). A loaded machine can double that.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.spatial import cKDTree

from ...kirin_addon.bind.templates import (
    Similarity,
    chamfer_distance,
    check_mesh,
    dense_weights,
    initial_alignments,
    mesh_edges,
    mirror_plane,
    sample_surface,
    snap_to_plane,
    template,
    triangle_areas,
)
from ...kirin_addon.core.creature import FAMILIES, Creature
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.rotations import rotation_angle
from .. import geometry

Progress = Callable[[float, str], None]
_DTYPE = torch.float64
_MIRROR = torch.diag(torch.tensor([-1.0, 1.0, 1.0], dtype=_DTYPE))  # canonical left/right reflection


@dataclass
class FitConfig:
    coarse_steps: int = 40  # similarity + bone scales, for each probed orientation
    fine_steps: int = 160  # + joint rotations (bind pose), for each finalist
    orientations: int = 4  # distinct ICP-refined orientations given the coarse stage
    detect_orientations: int = 2  # the same, per family, when detecting the family
    finalists: int = 2  # best coarse fits given the fine stage; the lowest final loss wins
    icp_iterations: int = 8
    lr: float = 0.02
    target_samples: int = 2500  # surface points of the target used by the loss
    template_samples: int = 800  # surface points of the template, besides its vertices
    nn_every: int = 2  # steps between nearest-neighbour searches (pairs change slowly)
    eval_samples: int = 10000  # fresh points for the reported Chamfer
    chamfer_unit: float = 0.01  # Chamfer distances are measured in this fraction of the diagonal
    edge_weight: float = 1.0
    rotation_weight: float = 0.02
    scale_smooth_weight: float = 0.05
    scale_size_weight: float = 0.005
    symmetry_weight: float = 1.0  # on the asymmetric residual of mirrored poses
    symmetric_pose: bool = True  # mirror pairs share pose parameters (plus a penalised residual)
    mirror_lock: bool = True  # lock the sagittal plane onto a mirror-symmetric target's mirror plane
    scale_bounds: tuple[float, float] = (0.5, 2.0)
    width_scales: bool = True
    families: tuple[str, ...] = FAMILIES  # tried by detection
    good: float = 0.015  # quality: mean Chamfer fraction up to `good` is good, up to `fair` fair
    fair: float = 0.03
    bend_fair: float = 20.0  # ... and mean bind-pose rotation per joint (degrees)
    bend_poor: float = 30.0
    stretch_fair: float = 0.025  # ... and mean relative stretch of the template's edges
    stretch_poor: float = 0.032
    seed: int = 0
    threads: int | None = 1  # torch intra-op threads during the fit (None: leave as is)


@dataclass
class FitResult:
    family: str
    rig: Rig  # in the TARGET's coordinates and units: rest = B_j (bind transforms)
    template_vertices: np.ndarray  # (Vt,3) the template mesh deformed by the fit, target coordinates
    template_triangles: np.ndarray  # (Ft,3)
    template_weights: np.ndarray  # (Vt,J) dense template skin weights, rows sum to 1
    chamfer: dict  # target_to_template, template_to_target, mean: fractions of the target bbox diagonal
    quality: str  # "good" / "fair" / "poor"
    transform: np.ndarray  # (4,4) similarity template-canonical → target
    scores: dict[str, float] = field(default_factory=dict)  # family → Chamfer mean fraction (probe)
    seconds: float = 0.0
    creature: Creature | None = None  # the template: roles (pelvis, limbs, ...) index `rig`'s joints
    bone_scales: np.ndarray | None = None  # (J,2) fitted length and width scale of each bone
    deformation: dict = field(default_factory=dict)  # bend (deg), edge stretch, scale range, final loss
    message: str = ""  # one line for the user: the quality and, when not good, why


# --------------------------------------------------------------------------- torch helpers
def _bounded(u: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
    """lo..hi, geometric in a sigmoid of u (u = _unbounded_one(lo, hi) gives exactly 1)."""
    return lo * (hi / lo) ** torch.sigmoid(u)


def _unbounded_one(lo: float, hi: float) -> float:
    p = math.log(1.0 / lo) / math.log(hi / lo)
    return math.log(p / (1.0 - p))


# --------------------------------------------------------------------------- the template as tensors
class _TemplateTensors:
    """Everything about one template the loss needs, precomputed once per family."""

    def __init__(self, creature: Creature, template_samples: int, seed: int) -> None:
        rig, mesh = creature.rig, creature.mesh
        self.creature = creature
        self.rig = rig
        count = rig.joint_count
        rest_rot = rig.rest_rotations
        heads = rig.heads
        parents = rig.parents
        has_parent = parents >= 0
        par = np.where(has_parent, parents, 0)
        local_rot = np.where(has_parent[:, None, None],
                             np.swapaxes(rest_rot[par], -1, -2) @ rest_rot, rest_rot)
        local_off = np.where(has_parent[:, None],
                             np.einsum("jba,jb->ja", rest_rot[par], heads - heads[par]), heads)
        t = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=_DTYPE)  # noqa: E731
        self.rest_rot, self.heads, self.lengths = t(rest_rot), t(heads), t(rig.lengths)
        self.local_rot, self.local_off = t(local_rot), t(local_off)
        self.parents = parents
        self.levels = [torch.as_tensor(level) for level in rig.levels]
        self.level_parents = [torch.as_tensor(parents[level]) for level in rig.levels]
        self.child = torch.as_tensor(np.flatnonzero(has_parent))
        self.child_parent = torch.as_tensor(parents[has_parent])

        # Skinning by dense (V,J) weights: blending J affine maps is one small matmul, forward and
        # backward (gathering per-influence matrices is several times slower under autograd).
        self.vertices = mesh.vertices
        self.triangles = mesh.triangles
        self.weights = dense_weights(creature)
        self.dense_w, self.rest_vertices = t(self.weights), t(mesh.vertices)
        _, faces, bary = sample_surface(mesh.vertices, mesh.triangles, template_samples, seed)
        self.sample_tris = torch.as_tensor(mesh.triangles[faces])
        self.sample_bary = t(bary)
        edges = mesh_edges(mesh.triangles)
        self.edge_a, self.edge_b = torch.as_tensor(edges[:, 0]), torch.as_tensor(edges[:, 1])
        self.edge_rest = t(mesh.vertices[edges[:, 0]] - mesh.vertices[edges[:, 1]])

        # Mirror pairs share scale parameters and, by default, mirrored pose parameters: the
        # right bone's local axis-angle is A @ the left one's, so the posed template stays a
        # mirror image (an asymmetric residual is allowed but penalised). With M the reflection
        # x → -x and C the roll between the mirrored left frame and the right one
        # (C = (M R_l M)^T R_r), M exp([w]) M = exp(-[M w]) gives A = -C^T M.
        cls = np.arange(count)
        pairs = rig.mirror_pairs
        mirror = np.diag([-1.0, 1.0, 1.0])
        pose_map = np.broadcast_to(np.eye(3), (count, 3, 3)).copy()
        for a, b in pairs:
            cls[b] = a
            roll = (mirror @ rest_rot[a] @ mirror).T @ rest_rot[b]
            pose_map[b] = -roll.T @ mirror
        self.pose_source = torch.as_tensor(cls)
        self.pose_map = t(pose_map)
        _, self.scale_class = np.unique(cls, return_inverse=True)
        self.scale_classes = int(self.scale_class.max()) + 1
        self.scale_class = torch.as_tensor(self.scale_class)
        self.pair_l = torch.as_tensor([a for a, _ in pairs], dtype=torch.long)
        self.pair_r = torch.as_tensor([b for _, b in pairs], dtype=torch.long)
        self.joint_count = count

    def surface_points(self, verts: torch.Tensor) -> torch.Tensor:
        """Vertices plus the fixed barycentric surface samples, under the same deformation."""
        samples = (verts[self.sample_tris] * self.sample_bary[..., None]).sum(1)
        return torch.cat([verts, samples])


class _Params(torch.nn.Module):
    """Similarity (template canonical → normalised target), bone scales, joint rotations."""

    def __init__(self, tpl: _TemplateTensors, init: Similarity, config: FitConfig) -> None:
        super().__init__()
        lo, hi = config.scale_bounds
        one = _unbounded_one(lo, hi)
        self.bounds = (lo, hi)
        self.register_buffer("rot0", torch.as_tensor(init.rotation, dtype=_DTYPE))
        self.sim_rot = torch.nn.Parameter(torch.zeros(3, dtype=_DTYPE))
        self.sim_log_scale = torch.nn.Parameter(torch.tensor(math.log(init.scale), dtype=_DTYPE))
        self.sim_trans = torch.nn.Parameter(torch.as_tensor(init.translation, dtype=_DTYPE).clone())
        # A mirror-symmetric target locks the template's sagittal plane onto its mirror plane:
        # the similarity may then only turn about the plane normal and slide within the plane.
        self.locked = init.locked if isinstance(init, _Init) else None
        self.register_buffer("trans0", torch.as_tensor(init.translation, dtype=_DTYPE).clone())
        self.u_len = torch.nn.Parameter(torch.full((tpl.scale_classes,), one, dtype=_DTYPE))
        self.u_wid = torch.nn.Parameter(torch.full((tpl.scale_classes,), one, dtype=_DTYPE),
                                        requires_grad=config.width_scales)
        self.pose_sym = torch.nn.Parameter(torch.zeros(tpl.joint_count, 3, dtype=_DTYPE))
        self.pose_asym = torch.nn.Parameter(torch.zeros(tpl.joint_count, 3, dtype=_DTYPE))
        self.symmetric = config.symmetric_pose

    def pose(self, tpl: _TemplateTensors) -> torch.Tensor:
        """(J,3) local axis-angle of each joint: mirrored shared part + penalised residual."""
        if not self.symmetric:
            return self.pose_sym + self.pose_asym
        shared = (tpl.pose_map @ self.pose_sym[tpl.pose_source][..., None])[..., 0]
        return shared + self.pose_asym

    def scales(self, tpl: _TemplateTensors) -> tuple[torch.Tensor, torch.Tensor]:
        lo, hi = self.bounds
        return _bounded(self.u_len, lo, hi)[tpl.scale_class], _bounded(self.u_wid, lo, hi)[tpl.scale_class]

    def similarity(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        rot, trans = self.sim_rot, self.sim_trans
        if self.locked is not None:
            normal = torch.as_tensor(self.locked, dtype=_DTYPE)
            rot = (rot @ normal) * normal
            trans = trans - ((trans - self.trans0) @ normal) * normal
        rotation = geometry.rotvec_to_matrix(rot[None])[0] @ self.rot0
        return rotation, torch.exp(self.sim_log_scale), trans


@dataclass
class _Posed:
    rotations: torch.Tensor  # (J,3,3) bone frames, template canonical
    heads: torch.Tensor  # (J,3)
    vertices: torch.Tensor  # (V,3) scaled + posed mesh, template canonical
    scale: torch.Tensor  # (J,3) per-bone scale along the bone's local x, y (length), z


def _fk(tpl: _TemplateTensors, scale: torch.Tensor,
        deltas: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Bone frames and heads with each child attached where its parent's scaled segment puts it."""
    count = tpl.joint_count
    rot = torch.zeros(count, 3, 3, dtype=_DTYPE)
    head = torch.zeros(count, 3, dtype=_DTYPE)
    local = tpl.local_rot @ deltas
    for depth, (level, par) in enumerate(zip(tpl.levels, tpl.level_parents, strict=True)):
        if depth == 0:  # roots: rest frame and head, the similarity carries them
            rot = rot.index_copy(0, level, local[level])
            head = head.index_copy(0, level, tpl.local_off[level])
            continue
        parent_rot = rot[par]
        offset = (parent_rot @ (scale[par] * tpl.local_off[level])[..., None])[..., 0]
        head = head.index_copy(0, level, head[par] + offset)
        rot = rot.index_copy(0, level, parent_rot @ local[level])
    return rot, head


def _skin(tpl: _TemplateTensors, rot: torch.Tensor, head: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """LBS: vertex v of bone j goes to head'_j + R'_j S_j R0_j^T (v - head_j), blended by weight."""
    linear = (rot * scale[:, None, :]) @ tpl.rest_rot.transpose(-1, -2)  # (J,3,3)
    offset = head - (linear @ tpl.heads[..., None])[..., 0]
    count = linear.shape[0]
    blended = tpl.dense_w @ torch.cat([linear.reshape(count, 9), offset], dim=1)  # (V,12)
    verts = tpl.rest_vertices
    return (blended[:, :9].reshape(-1, 3, 3) @ verts[..., None])[..., 0] + blended[:, 9:]


def _pose(tpl: _TemplateTensors, params: _Params, with_pose: bool) -> _Posed:
    length, width = params.scales(tpl)
    scale = torch.stack([width, length, width], dim=-1)  # bone-local: y along the bone
    if with_pose:
        deltas = geometry.rotvec_to_matrix(params.pose(tpl))
    else:
        deltas = torch.eye(3, dtype=_DTYPE).expand(tpl.joint_count, 3, 3)
    rot, head = _fk(tpl, scale, deltas)
    return _Posed(rot, head, _skin(tpl, rot, head, scale), scale)


def _scaled_edges(tpl: _TemplateTensors, scale: torch.Tensor) -> torch.Tensor:
    """(E,) edge lengths of the template scaled but not posed: each edge vector under the mean
    of its two vertices' blended bone scalings R0_j S_j R0_j^T (exact away from blend zones)."""
    linear = (tpl.rest_rot * scale[:, None, :]) @ tpl.rest_rot.transpose(-1, -2)
    per_vertex = (tpl.dense_w @ linear.reshape(-1, 9)).reshape(-1, 3, 3)
    a, b = tpl.edge_a, tpl.edge_b
    mean = 0.5 * (per_vertex[a] + per_vertex[b])
    return (mean @ tpl.edge_rest[..., None])[..., 0].norm(dim=-1)


# --------------------------------------------------------------------------- the optimisation
class _Fitter:
    """One template against one (normalised) target: probe, coarse and fine stages."""

    def __init__(self, tpl: _TemplateTensors, target: np.ndarray, target_tree: cKDTree, config: FitConfig,
                 init: Similarity) -> None:
        self.tpl, self.config = tpl, config
        self.target = target
        self.target_t = torch.as_tensor(target, dtype=_DTYPE)
        self.tree = target_tree
        self.params = _Params(tpl, init, config)
        self.steps_done = {"coarse": 0, "fine": 0}
        self.last_chamfer = math.inf
        self.last_loss = math.inf
        self._pairs: tuple | None = None  # nearest-neighbour pairs, refreshed every nn_every steps
        self._pairs_age = 0

    def _points(self, posed: _Posed) -> torch.Tensor:
        rotation, scale, trans = self.params.similarity()
        return scale * self.tpl.surface_points(posed.vertices) @ rotation.T + trans

    def loss(self, fine: bool, refresh: bool = False) -> tuple[torch.Tensor, float]:
        cfg, tpl, params = self.config, self.tpl, self.params
        posed = _pose(tpl, params, with_pose=fine)
        points = self._points(posed)
        if self._pairs is None or self._pairs_age >= cfg.nn_every or refresh:
            moved = points.detach().numpy()
            d1, i1 = self.tree.query(moved)  # template → target
            d2, i2 = cKDTree(moved).query(self.target)  # target → template
            self._pairs = (torch.as_tensor(i1), torch.as_tensor(i2), 0.5 * float(d1.mean() + d2.mean()))
            self._pairs_age = 0
        self._pairs_age += 1
        i1, i2, chamfer = self._pairs
        unit2 = cfg.chamfer_unit ** 2
        s2t = ((points - self.target_t[i1]) ** 2).sum(-1).mean()
        t2s = ((points[i2] - self.target_t) ** 2).sum(-1).mean()
        loss = (s2t + t2s) / unit2
        # Edges: no stretching beyond what the bone scales themselves do.
        if fine:
            a, b = tpl.edge_a, tpl.edge_b
            now = (posed.vertices[a] - posed.vertices[b]).norm(dim=-1)
            ref = _scaled_edges(tpl, posed.scale)
            loss = loss + cfg.edge_weight * (((now - ref) / (ref.detach() + 1e-9)) ** 2).mean() / 0.01
            loss = loss + cfg.rotation_weight * (params.pose(tpl) ** 2).sum(-1).mean()
            if params.symmetric:
                loss = loss + cfg.symmetry_weight * (params.pose_asym ** 2).sum(-1).mean()
            elif len(tpl.pair_l):
                delta = posed.rotations @ tpl.rest_rot.transpose(-1, -2)
                mirrored = _MIRROR @ delta[tpl.pair_l] @ _MIRROR
                loss = loss + cfg.symmetry_weight * ((delta[tpl.pair_r] - mirrored) ** 2).sum((-1, -2)).mean()
        log_scale = torch.log(posed.scale[:, 1:])  # (J,2): length, width
        smooth = ((log_scale[tpl.child] - log_scale[tpl.child_parent]) ** 2).sum(-1).mean()
        size = (log_scale ** 2).sum(-1).mean()
        loss = loss + cfg.scale_smooth_weight * smooth / 0.01 + cfg.scale_size_weight * size / 0.01
        return loss, chamfer

    def run(self, stage: str, steps: int, progress: Callable[[int], None] | None = None) -> float:
        """Adam with a cosine decay; the fine stage eases the joint rotations in (warm-up) and
        moves the similarity and scales at half speed, so adding articulation does not jolt
        what the coarse stage found."""
        fine = stage == "fine"
        params, lr = self.params, self.config.lr
        for tensor in (params.pose_sym, params.pose_asym):
            tensor.requires_grad_(fine)
        slow = 0.5 if fine else 1.0
        groups = [
            {"params": [params.sim_rot, params.sim_log_scale], "lr": lr * 0.5 * slow},
            {"params": [params.sim_trans], "lr": lr * 0.25 * slow},
            {"params": [p for p in (params.u_len, params.u_wid) if p.requires_grad], "lr": lr * 2 * slow},
        ]
        if fine:
            groups.append({"params": [params.pose_sym, params.pose_asym], "lr": lr * 2})
        optimiser = torch.optim.Adam(groups)
        base = [g["lr"] for g in groups]
        warm = 10
        for step in range(steps):
            decay = 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * step / max(steps, 1)))
            for k, (group, rate) in enumerate(zip(optimiser.param_groups, base, strict=True)):
                group["lr"] = rate * decay * (min(1.0, (step + 1) / warm) if k == 3 else 1.0)
            optimiser.zero_grad(set_to_none=True)
            loss, self.last_chamfer = self.loss(fine)
            self.last_loss = float(loss.detach())
            loss.backward()
            optimiser.step()
            if progress is not None:
                progress(1)
        self.steps_done[stage] += steps
        return self.last_chamfer

    def final_loss(self) -> float:
        with torch.no_grad():
            loss, self.last_chamfer = self.loss(self.steps_done["fine"] > 0, refresh=True)
        return float(loss)

    def evaluate(self) -> tuple[_Posed, torch.Tensor]:
        with torch.no_grad():
            posed = _pose(self.tpl, self.params, with_pose=self.steps_done["fine"] > 0)
            return posed, self._points(posed)


# --------------------------------------------------------------------------- public API
@dataclass
class _Target:
    points: np.ndarray  # (N,3) normalised samples for the loss
    eval_points: np.ndarray  # (M,3) normalised samples for the reported Chamfer
    centre: np.ndarray
    diagonal: float
    tree: cKDTree
    eval_tree: cKDTree


def _prepare_target(vertices, triangles, config: FitConfig) -> _Target:
    verts, tris = check_mesh(vertices, triangles)
    used = np.zeros(len(verts), dtype=bool)
    used[tris.ravel()] = True
    lo = np.min(verts, axis=0, where=used[:, None], initial=np.inf)  # no copy of a huge mesh
    hi = np.max(verts, axis=0, where=used[:, None], initial=-np.inf)
    diagonal = float(np.linalg.norm(hi - lo))
    if not np.isfinite(diagonal) or diagonal <= 0.0:
        raise ValueError("The mesh has no extent: all its vertices are at one point.")
    centre = 0.5 * (lo + hi)
    areas = triangle_areas(verts, tris)
    total = config.target_samples + config.eval_samples
    points, _, _ = sample_surface(verts, tris, total, config.seed, areas)
    points = (points - centre) / diagonal
    loss_points = points[: config.target_samples]
    eval_points = points[config.target_samples:]
    return _Target(loss_points, eval_points, centre, diagonal, cKDTree(loss_points), cKDTree(eval_points))


_TEMPLATE_CACHE: dict[tuple[str, int, int], _TemplateTensors] = {}


def _template_tensors(family: str, config: FitConfig) -> _TemplateTensors:
    key = (family, config.template_samples, config.seed)
    if key not in _TEMPLATE_CACHE:
        _TEMPLATE_CACHE[key] = _TemplateTensors(template(family), config.template_samples, config.seed)
    return _TEMPLATE_CACHE[key]


@dataclass
class _Init(Similarity):
    locked: np.ndarray | None = None  # normal of the target's mirror plane the template is locked to


def _initial(family: str, target: _Target, config: FitConfig, keep: int) -> list[_Init]:
    """`keep` distinct starting similarities: ICP-refined PCA orientations, each snapped onto the
    target's mirror plane near its sagittal plane where the target is mirror-symmetric (ICP on
    a template of other proportions tends to settle a few degrees off, legs then pair wrongly)."""
    tpl = _template_tensors(family, config)
    rng = np.random.default_rng(config.seed)
    sub_t = target.points[rng.permutation(len(target.points))[:600]]
    tpl_points = tpl.vertices[rng.permutation(len(tpl.vertices))[:600]]
    out: list[_Init] = []
    for cand in initial_alignments(sub_t, tpl_points, config.icp_iterations, keep=2 * keep):
        init = _Init(cand.rotation, cand.scale, cand.translation, cand.chamfer)
        if config.mirror_lock:
            plane = mirror_plane(sub_t[:400], target.eval_points, cand.rotation[:, 0],
                                 reference_tree=target.eval_tree)
            if plane.symmetric:
                snapped = snap_to_plane(cand, plane)
                init = _Init(snapped.rotation, snapped.scale, snapped.translation, cand.chamfer, plane.normal)
        if all(rotation_angle(init.rotation, o.rotation) > np.radians(10.0)
               or np.linalg.norm(init.translation - o.translation) > 0.05 for o in out):
            out.append(init)
        if len(out) == keep:
            break
    return out


def _candidates(family: str, target: _Target, config: FitConfig, keep: int,
                tick: Callable[[int], None]) -> list[_Fitter]:
    """Fitters from `keep` distinct initial similarities after the coarse stage each, lowest
    loss first."""
    tpl = _template_tensors(family, config)
    out = []
    for init in _initial(family, target, config, keep):
        fitter = _Fitter(tpl, target.points, target.tree, config, init)
        fitter.run("coarse", config.coarse_steps, tick)
        out.append(fitter)
    return sorted(out, key=lambda f: f.last_loss)


_QUALITY = ("good", "fair", "poor")


def _deformation(fitter: _Fitter) -> dict:
    """How far the template had to be bent and stretched: a blob can be covered by a template
    bent out of shape at every joint, but not by one that stays itself."""
    tpl, params = fitter.tpl, fitter.params
    with torch.no_grad():
        posed = _pose(tpl, params, with_pose=fitter.steps_done["fine"] > 0)
        now = (posed.vertices[tpl.edge_a] - posed.vertices[tpl.edge_b]).norm(dim=-1)
        ref = _scaled_edges(tpl, posed.scale)
        stretch = float(((now - ref).abs() / ref.clamp_min(1e-12)).mean())
        bend = np.degrees(params.pose(tpl).norm(dim=-1).numpy()) if fitter.steps_done["fine"] else np.zeros(1)
        scales = posed.scale[:, 1:].numpy()
    return {"bend_mean_deg": float(bend.mean()), "bend_max_deg": float(bend.max()), "edge_stretch": stretch,
            "scale_min": float(scales.min()), "scale_max": float(scales.max()), "loss": fitter.final_loss()}


def _quality(chamfer: float, deformation: dict, config: FitConfig) -> tuple[str, str]:
    """(quality, message): the worst of three grades, with the reason for the worst."""
    grades = [
        (0 if chamfer <= config.good else 1 if chamfer <= config.fair else 2,
         f"the surfaces are {100 * chamfer:.1f} % of the mesh size apart"),
        (0 if deformation["bend_mean_deg"] <= config.bend_fair
         else 1 if deformation["bend_mean_deg"] <= config.bend_poor else 2,
         f"the template had to bend {deformation['bend_mean_deg']:.0f}° per joint on average"),
        (0 if deformation["edge_stretch"] <= config.stretch_fair
         else 1 if deformation["edge_stretch"] <= config.stretch_poor else 2,
         f"the template's surface had to stretch {100 * deformation['edge_stretch']:.1f} %"),
    ]
    grade, reason = max(grades, key=lambda item: item[0])
    return _QUALITY[grade], reason


def _result(fitter: _Fitter, target: _Target, family: str, scores: dict[str, float], config: FitConfig,
            start: float) -> FitResult:
    tpl = fitter.tpl
    posed, _ = fitter.evaluate()
    with torch.no_grad():
        rotation, scale, trans = fitter.params.similarity()
        rotation, scale, trans = rotation.numpy(), float(scale), trans.numpy()
    # Normalised target frame → target: x = diagonal * x_n + centre.
    d, c = target.diagonal, target.centre
    to_target = lambda p: d * (scale * p @ rotation.T + trans) + c  # noqa: E731
    bone_rot = posed.rotations.numpy()
    heads = posed.heads.numpy()
    lengths = posed.scale[:, 1].numpy() * tpl.lengths.numpy()
    tails = heads + bone_rot[:, :, 1] * lengths[:, None]
    rest = np.zeros((tpl.joint_count, 4, 4))
    rest[:, :3, :3] = rotation @ bone_rot
    rest[:, :3, 3] = to_target(heads)
    rest[:, 3, 3] = 1.0
    rig = Rig(list(tpl.rig.names), tpl.rig.parents.copy(), rest, to_target(tails), tpl.rig.deform.copy())
    verts = to_target(posed.vertices.numpy())
    # Reported Chamfer: fresh target samples against a dense sampling of the fitted template.
    dense, _, _ = sample_surface(verts, tpl.triangles, config.eval_samples, config.seed + 1)
    chamfer = chamfer_distance(target.eval_points * d + c, np.concatenate([verts, dense]), d)
    transform = np.eye(4)
    transform[:3, :3] = d * scale * rotation
    transform[:3, 3] = d * trans + c
    deformation = _deformation(fitter)
    quality, reason = _quality(chamfer["mean"], deformation, config)
    message = {"good": f"The {family} template fits the mesh closely.",
               "fair": f"The {family} template fits the mesh roughly ({reason}); check the skeleton before "
                       "binding.",
               "poor": f"The mesh does not look like a {family} in a bind pose ({reason}): the fitted "
                       "skeleton is unreliable."}[quality]
    return FitResult(family=family, rig=rig, template_vertices=verts,
                     template_triangles=tpl.triangles.copy(), template_weights=tpl.weights.copy(),
                     chamfer=chamfer, quality=quality, transform=transform, scores=scores,
                     seconds=time.perf_counter() - start, creature=tpl.creature,
                     bone_scales=posed.scale[:, 1:].numpy().copy(), deformation=deformation,
                     message=message)


def fit_template(vertices, triangles, family: str | None = None, config: FitConfig | None = None,
                 progress: Progress | None = None) -> FitResult:
    """Fit a template skeleton to a mesh (any orientation, scale, position); see the module docstring.

    `family` None detects it: every family in `config.families` gets a short coarse fit from its
    best orientations, the lowest Chamfer wins and its fit is finished. Raises ValueError for a
    mesh that cannot be fitted at all (no triangles, NaN, too few vertices, no area); a mesh
    that fits badly gives a result of quality "poor" instead.
    """
    config = config or FitConfig()
    start = time.perf_counter()
    if family is not None and family not in FAMILIES:
        raise ValueError(f"Unknown family {family!r}; expected one of {', '.join(FAMILIES)}.")
    report = progress or (lambda fraction, message: None)
    threads = torch.get_num_threads()
    if config.threads:
        torch.set_num_threads(config.threads)
    try:
        report(0.0, "Sampling the mesh")
        target = _prepare_target(vertices, triangles, config)
        families = [family] if family is not None else list(config.families)
        keep = config.orientations if family is not None else config.detect_orientations
        finalists = max(1, config.finalists)
        total = len(families) * keep * config.coarse_steps + finalists * config.fine_steps
        done = [0]

        def tick(steps: int) -> None:
            done[0] += steps
            if done[0] % 25 == 0:
                report(min(done[0] / max(total, 1), 0.99), "Fitting the template")

        scores: dict[str, float] = {}
        candidates: dict[str, list[_Fitter]] = {}
        for name in families:
            report(min(done[0] / max(total, 1), 0.99), f"Trying the {name} template")
            candidates[name] = _candidates(name, target, config, keep, tick)
            scores[name] = min(_probe_score(f, target) for f in candidates[name])
        best = min(scores, key=scores.get)
        # A rigid-plus-scales fit can prefer a reversed body (a rat's long tail taken for the
        # template's neck) that only articulation shows to be worse: the finalists are ranked
        # after the full fine stage.
        finished = []
        for fitter in candidates[best][:finalists]:
            fitter.run("fine", config.fine_steps, tick)
            finished.append((fitter.final_loss(), fitter))
        fitter = min(finished, key=lambda item: item[0])[1]
        result = _result(fitter, target, best, scores, config, start)
        report(1.0, result.message)
        return result
    finally:
        torch.set_num_threads(threads)


def _probe_score(fitter: _Fitter, target: _Target) -> float:
    """Mean bidirectional Chamfer (fraction of the diagonal) of a probe, on the loss samples."""
    _, points = fitter.evaluate()
    points = points.numpy()
    return 0.5 * float(target.tree.query(points)[0].mean() + cKDTree(points).query(target.points)[0].mean())
