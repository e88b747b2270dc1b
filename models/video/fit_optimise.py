"""The video fit's optimisation (models/video/fitter.py): the rigid heading search, the full epochs over
every rotation, the root path and the body scale, and the Adam they step with."""

from __future__ import annotations

import numpy as np
import torch

from ...kirin_addon.video.fit_config import VideoFitConfig, report_progress
from .. import geometry
from .fit_body import upright_penalty
from .fit_problem import Problem


class RootPath:
    """The root path as the camera sees it: per frame the root's normalised image position (a, b)
    and log(k / depth), plus the clip's log body scale k. Projections depend on (a, b, k/depth)
    only, so the depth-scale valley of a single view — a creature λ times bigger, λ times further —
    is the one axis log k, which the ground term decides; Adam would crawl along it diagonally in
    world coordinates."""

    def __init__(self, problem: Problem, root: torch.Tensor, fit_scale: bool):
        cam = root @ problem.rotation.T + problem.translation  # k = 1 at the start
        depth = cam[:, 2:3].clamp(min=1e-3)
        self.image = (cam[:, :2] / depth).clone().requires_grad_(True)
        self.inverse_depth = (-depth.log()).clone().requires_grad_(True)
        self.log_scale = torch.zeros((), requires_grad=fit_scale)
        self.problem = problem

    def world(self) -> torch.Tensor:
        """(T,3) canonical root positions of the unscaled rig (the camera sees k times them)."""
        depth = self.log_scale.exp() / self.inverse_depth.exp()
        cam = torch.cat([self.image, torch.ones_like(depth)], -1) * depth
        return (cam - self.problem.translation) @ self.problem.rotation / self.log_scale.exp()


def full_fit(problem: Problem, start_deltas: torch.Tensor, start_root: torch.Tensor, fit_scale: bool,
              config: VideoFitConfig, progress, generator) -> tuple[np.ndarray, np.ndarray, float, dict]:
    """The epochs: every rotation, the root path and the body scale (see the module docstring)."""
    body, frames = problem.body, start_deltas.shape[0]
    init6 = start_deltas[..., :2].transpose(-1, -2).flatten(-2)
    rot6 = init6.clone().requires_grad_(True)
    path = RootPath(problem, start_root, fit_scale)
    groups = [{"params": [rot6], "lr": config.lr},
              {"params": [path.image, path.inverse_depth], "lr": config.lr_root}]
    if fit_scale:
        groups.append({"params": [path.log_scale], "lr": config.lr_root})
    optimiser = Adam(groups)
    total = max(config.epochs * config.steps_per_epoch, 0)
    anneal = max(total // 2, 1)
    ratio = config.robust_scale / config.robust_scale_start
    losses: dict[str, float] = {}
    for step in range(total):
        sigma = config.robust_scale_start * ratio ** min(step / anneal, 1.0)
        optimiser.zero_grad()
        deltas = geometry.sixd_to_matrix(rot6)
        root = path.world()
        heads, tails = body.positions(deltas, root)
        render = step % max(config.silhouette_every, 1) == 0 or step == total - 1
        terms = problem.data_terms(heads, tails, path.log_scale, sigma, render=render, rng=generator)
        unit6 = deltas[..., :2].transpose(-1, -2).flatten(-2)
        zero = unit6.sum() * 0
        terms["smooth_rotation"] = diff_sq(unit6, 1, dim=0).mean() if frames > 1 else zero
        terms["smooth_increment"] = diff_sq(unit6, 2, dim=0).mean() if frames > 2 else zero
        terms["smooth_root"] = diff_sq(root, 2).mean() if frames > 2 else zero
        terms["prior"] = ((unit6 - init6) ** 2).sum(-1).mean()
        terms["upright"] = upright_penalty(deltas[:, body.trunk], config.upright_deg).mean()
        a1, a2 = rot6[..., :3], rot6[..., 3:]
        terms["orthonormal"] = ((a1.norm(dim=-1) - 1) ** 2 + (a2.norm(dim=-1) - 1) ** 2
                                + (a1 * a2).sum(-1) ** 2).mean()
        if fit_scale:
            terms["scale_prior"] = path.log_scale ** 2
        loss = sum(term_weight(config, k) * v for k, v in terms.items())
        loss.backward()
        optimiser.step()
        if (step + 1) % max(config.steps_per_epoch, 1) == 0:
            report_progress(progress, 0.15 + 0.8 * (step + 1) / total)
        if step == total - 1:
            losses = {k: float(v.detach()) for k, v in terms.items()}
    with torch.no_grad():
        deltas = geometry.sixd_to_matrix(rot6).numpy().astype(np.float64)
        root = path.world().numpy().astype(np.float64)
        scale = float(path.log_scale.exp())
    return deltas, root, scale, losses


def rigid_fit(problem: Problem, rel_heads: torch.Tensor, rel_tails: torch.Tensor, turns6: np.ndarray,
               roots: np.ndarray, config: VideoFitConfig, steps: int,
               score: bool = True) -> tuple[torch.Tensor | None, np.ndarray, np.ndarray]:
    """Fit per-frame rigid turns (H,T,6) and root paths (H,T,3) of a fixed pose (heads and tails
    (T,J,3) about the main root, or (H,T,J,3): a pose per hypothesis) for H hypotheses at once; returns
    each one's data loss and the fitted parameters."""
    turns = torch.tensor(turns6, dtype=torch.float32, requires_grad=True)
    path = torch.tensor(roots, dtype=torch.float32, requires_grad=True)
    optimiser = Adam([{"params": [turns, path], "lr": config.lr_rigid}])
    log_scale = torch.zeros(())
    frames = path.shape[1]
    shared = rel_heads.dim() == 3  # one pose for every hypothesis
    product = "htxy,tjy->htjx" if shared else "htxy,htjy->htjx"

    def pose(turns: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        g = geometry.sixd_to_matrix(turns)
        move = lambda points: torch.einsum(product, g, points) + path[:, :, None]  # noqa: E731
        return move(rel_heads), move(rel_tails)

    for _ in range(steps):
        optimiser.zero_grad()
        heads, tails = pose(turns)
        terms = problem.data_terms(heads, tails, log_scale, config.robust_scale_start, render=False, rng=None)
        # Starts from zeros: the frames drawn may hold no evidence at all (a detector that found nothing).
        loss = sum((term_weight(config, k) * v for k, v in terms.items()), torch.zeros(path.shape[0]))
        turned = geometry.sixd_to_matrix(turns)
        loss = loss + config.upright * upright_penalty(turned, config.upright_deg).mean(-1)
        if frames > 2:
            unit = turned[..., :2].flatten(-2)
            loss = loss + config.smooth_rotation * diff_sq(unit, 1).mean(-1) \
                + config.smooth_root * diff_sq(path, 2).mean(-1)
        loss.sum().backward()
        optimiser.step()
    fitted = turns.detach().numpy().astype(np.float64), path.detach().numpy().astype(np.float64)
    if not score:
        return None, *fitted
    with torch.no_grad():
        heads, tails = pose(turns)
        # The score also compares the rendered silhouettes (a heading's mirror image has the bone
        # axes inside the mask too, but not the same outline).
        terms = problem.data_terms(heads, tails, log_scale, config.robust_scale, render="all", rng=None)
        loss = sum((term_weight(config, k) * v for k, v in terms.items() if k != "ground"),
                   torch.zeros(path.shape[0]))
    return loss, *fitted


class Adam:
    """Adam (Kingma & Ba) over parameter groups: torch.optim's, without its import-time cost (it
    loads torch._dynamo, seconds on a cold start)."""

    def __init__(self, groups: list[dict], betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.groups, self.betas, self.eps, self.count = groups, betas, eps, 0
        self.state = [[(torch.zeros_like(p), torch.zeros_like(p)) for p in g["params"]] for g in groups]

    def zero_grad(self) -> None:
        for group in self.groups:
            for p in group["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.count += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1 ** self.count, 1 - b2 ** self.count
        for group, state in zip(self.groups, self.state, strict=True):
            for p, (m, v) in zip(group["params"], state, strict=True):
                if p.grad is None:
                    continue
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                p.addcdiv_(m, (v / c2).sqrt_().add_(self.eps), value=-group["lr"] / c1)


def term_weight(config: VideoFitConfig, term: str) -> float:
    return {"chamfer": config.silhouette_chamfer}.get(term, getattr(config, term, 1.0))


def diff_sq(x: torch.Tensor, order: int, dim: int = -2) -> torch.Tensor:
    """Squared norm (over the last axis) of the order-th difference along the frame axis `dim`."""
    d = x
    for _ in range(order):
        d = d.diff(dim=dim)
    return (d ** 2).sum(-1)
