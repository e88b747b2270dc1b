"""The template fit's optimisation, the torch half of Auto-Bind's first step (it needs autograd): one
family's template fitted from one start to a normalised target — the `TemplateFitter` that
kirin_addon/bind/pipeline.py is given; the pipeline plans the target, the starts, the families tried
and their ranking, and maps the finished fit back. The numpy parts the fit shares with the engine
(templates, surface sampling, Chamfer, mirror planes) are in kirin_addon/bind/templates.py.

What is fitted, jointly, by Adam on one loss:

- a similarity template → target (log scale, axis-angle rotation on top of the start's
  orientation, translation), in the target's normalised frame (bbox centre at the origin, bbox
  diagonal 1); a start locked to the target's mirror plane may only pitch about the plane normal
  and slide in the plane;
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
asymmetric residual, scale smoothness along the tree and scale magnitude). Stages: coarse
(similarity + scales), then fine (+ joint rotations).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from scipy.spatial import cKDTree

from ...kirin_addon.bind.fit_protocol import FitConfig, FitStart, FitTarget, FittedTemplate
from ...kirin_addon.bind.templates import Similarity, dense_weights, mesh_edges, sample_surface, template
from ...kirin_addon.core.creature import Creature
from .. import geometry

_DTYPE = torch.float64
_MIRROR = torch.diag(torch.tensor([-1.0, 1.0, 1.0], dtype=_DTYPE))  # canonical left/right reflection


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
        self.rest_rot, self.heads = t(rest_rot), t(heads)
        self.local_rot, self.local_off = t(local_rot), t(local_off)
        self.parents = parents
        self.levels = [torch.as_tensor(level) for level in rig.levels]
        self.level_parents = [torch.as_tensor(parents[level]) for level in rig.levels]
        self.child = torch.as_tensor(np.flatnonzero(has_parent))
        self.child_parent = torch.as_tensor(parents[has_parent])

        # Skinning by dense (V,J) weights: blending J affine maps is one small matmul, forward and
        # backward (gathering per-influence matrices is several times slower under autograd).
        self.dense_w, self.rest_vertices = t(dense_weights(creature)), t(mesh.vertices)
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
        self.locked = init.locked if isinstance(init, FitStart) else None
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

    def run(self, stage: str, steps: int, tick: Callable[[int], None] | None = None) -> float:
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
            if tick is not None:
                tick(1)
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

    def surface_points(self) -> np.ndarray:
        """(N,3) the template's vertices and surface samples where the run stands, normalised target."""
        return self.evaluate()[1].numpy()

    def fitted(self) -> FittedTemplate:
        posed, _ = self.evaluate()
        with torch.no_grad():
            rotation, scale, trans = self.params.similarity()
            return FittedTemplate(rotation.numpy(), float(scale), trans.numpy(), posed.rotations.numpy(),
                                  posed.heads.numpy(), posed.scale.numpy(), posed.vertices.numpy())

    def deformation(self) -> dict:
        """How far the template had to be bent and stretched: a blob can be covered by a template
        bent out of shape at every joint, but not by one that stays itself."""
        tpl, params, fine = self.tpl, self.params, self.steps_done["fine"] > 0
        with torch.no_grad():
            posed = _pose(tpl, params, with_pose=fine)
            now = (posed.vertices[tpl.edge_a] - posed.vertices[tpl.edge_b]).norm(dim=-1)
            ref = _scaled_edges(tpl, posed.scale)
            stretch = float(((now - ref).abs() / ref.clamp_min(1e-12)).mean())
            bend = np.degrees(params.pose(tpl).norm(dim=-1).numpy()) if fine else np.zeros(1)
            scales = posed.scale[:, 1:].numpy()
        return {"bend_mean_deg": float(bend.mean()), "bend_max_deg": float(bend.max()),
                "edge_stretch": stretch, "scale_min": float(scales.min()), "scale_max": float(scales.max()),
                "loss": self.final_loss()}


# --------------------------------------------------------------------------- the fitter
_TEMPLATE_CACHE: dict[tuple[str, int, int], _TemplateTensors] = {}


def _template_tensors(family: str, config: FitConfig) -> _TemplateTensors:
    key = (family, config.template_samples, config.seed)
    if key not in _TEMPLATE_CACHE:
        _TEMPLATE_CACHE[key] = _TemplateTensors(template(family), config.template_samples, config.seed)
    return _TEMPLATE_CACHE[key]



class TorchTemplateFitter:
    """The template fit's optimiser (`TemplateFitter`): runs of `_Fitter`, torch's intra-op threads set
    to `config.threads` for a whole fit."""

    @contextmanager
    def session(self, config: FitConfig) -> Iterator[None]:
        threads = torch.get_num_threads()
        if config.threads:
            torch.set_num_threads(config.threads)
        try:
            yield
        finally:
            torch.set_num_threads(threads)

    def start(self, family: str, target: FitTarget, start: FitStart, config: FitConfig) -> _Fitter:
        """A run of `family`'s template (its tensors cached per family, samples and seed) from `start`."""
        return _Fitter(_template_tensors(family, config), target.points, target.tree, config, start)
