"""The video fit's data terms (models/video/fitter.py): keypoint projection, silhouettes and ground, in
torch, in the canonical frame, batched over heading hypotheses."""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

from ...kirin_addon.core.camera import PinholeCamera
from ...kirin_addon.video.fit_config import VideoFitConfig
from ...kirin_addon.video.fit_evidence import FitEvidence
from .fit_body import Body
from .fit_silhouettes import Silhouettes


def geman_mcclure(sq: torch.Tensor, scale: float) -> torch.Tensor:
    return sq / (sq + scale * scale)


class Problem:
    """Everything the loss needs, in torch, canonical frame."""

    def __init__(self, body: Body, ev: FitEvidence, camera_c: PinholeCamera, config: VideoFitConfig):
        self.body, self.ev, self.config = body, ev, config
        self.rotation = torch.as_tensor(camera_c.rotation, dtype=torch.float32)
        self.translation = torch.as_tensor(camera_c.translation, dtype=torch.float32)
        self.focal = float(camera_c.focal)
        self.center = torch.as_tensor(camera_c.center, dtype=torch.float32)
        self.points = torch.as_tensor(ev.points, dtype=torch.float32)
        self.weights = torch.as_tensor(ev.weights, dtype=torch.float32)
        self.weight_sum = float(ev.weights.sum())
        self.keyed_frames = max(1, int(np.count_nonzero(ev.weights.sum(-1) > 0)))
        self.sil = Silhouettes(ev.masks, ev.size, config) if ev.masks is not None else None
        self.subject = subject_size(ev, body, self.sil)
        samples = torch.linspace(0.0, 1.0, max(config.axis_samples, 2))
        self.samples = samples
        self.frames = ev.points.shape[0]

    def restricted(self, frames: np.ndarray) -> Problem:
        """The same problem on a subset of frames (for the heading search)."""
        view = copy.copy(self)
        index = torch.as_tensor(frames, dtype=torch.long)
        view.points, view.weights = self.points[index], self.weights[index]
        view.weight_sum = float(view.weights.sum())
        view.keyed_frames = max(1, int(torch.count_nonzero(view.weights.sum(-1) > 0)))
        view.sil = None if self.sil is None else self.sil.restricted(frames)
        view.frames = len(frames)
        return view

    def project(self, world: torch.Tensor, log_scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Pixels (…,2) and depths (…) of canonical points scaled by the body scale."""
        cam = torch.einsum("xy,...y->...x", self.rotation, world * log_scale.exp()) + self.translation
        z = cam[..., 2]
        zc = z.clamp(min=1e-3)
        return self.center + self.focal * cam[..., :2] / zc[..., None], z

    def data_terms(self, heads, tails, log_scale, sigma: float, render: bool | str,
                   rng: torch.Generator | None):
        """Projection, silhouette and ground terms (…-batched over leading dims of heads). `render`:
        False, True (a random subset of `silhouette_frames` frames) or "all"."""
        terms: dict[str, torch.Tensor] = {}
        config = self.config
        if self.weight_sum > 0:
            pix, _ = self.project(heads, log_scale)
            sq = ((pix - self.points) ** 2).sum(-1) / (self.subject ** 2)
            # Summed over joints, averaged over the frames that have keypoints: more points in a frame
            # weigh more against the priors, and a few labelled frames weigh as much per frame as many.
            terms["projection"] = (geman_mcclure(sq, sigma) * self.weights).sum((-1, -2)) / self.keyed_frames
        if self.sil is not None:
            drawn = self.body.drawn
            a, b = heads[..., drawn, :], tails[..., drawn, :]
            s = self.samples
            along = a[..., None, :] + (b - a)[..., None, :] * s[:, None]  # (…,T,B,S,3)
            pix, _ = self.project(along.flatten(-3, -2), log_scale)
            terms["chamfer"] = self.sil.inside_term(pix)
            if render:
                count = 0 if render == "all" else config.silhouette_frames
                frames = torch.arange(self.frames)
                if 0 < count < self.frames:
                    frames = torch.randperm(self.frames, generator=rng)[:count]
                ha, za = self.project(a[..., frames, :, :], log_scale)
                hb, zb = self.project(b[..., frames, :, :], log_scale)
                depth = (0.5 * (za + zb)).clamp(min=1e-3)
                radii = self.focal * self.body.radii[drawn] * log_scale.exp() / depth
                iou, cover = self.sil.render_terms(ha, hb, radii, frames, config.silhouette_sharpness)
                terms["silhouette"] = iou
                terms["chamfer"] = terms["chamfer"] + cover
        if self.body.feet.numel():
            # Heights above each foot's rest height (a toe joint's head sits above the sole).
            z = heads[..., self.body.feet, 2] * log_scale.exp() - self.body.foot_heights  # (…,T,F)
            # Soft minimum over the feet (…,T), between the lowest and the mean: equal heights give it.
            low = -0.02 * (torch.logsumexp(-z / 0.02, dim=-1) - math.log(z.shape[-1]))
            below = (z.clamp(max=0.0) ** 2).mean((-1, -2))
            # Robust: frames in the air (a jump, a gallop's flight) cost a bounded amount...
            contact = geman_mcclure(low ** 2, config.ground_scale).mean(-1)
            # ... but most of the clip has a foot on the ground: the lower half of the frames' lowest-foot
            # heights is pulled down in full (a whole clip floating above the floor is no flight).
            lower = torch.sort(low, dim=-1).values[..., :max(1, low.shape[-1] // 2)]
            settled = (lower.clamp(min=0.0) ** 2).mean(-1)
            terms["ground"] = below + config.ground_scale ** 2 * contact + config.settled * settled
        return terms


def subject_size(ev: FitEvidence, body: Body, sil: Silhouettes | None) -> float:
    """The subject's size in the image (px): the median diagonal of the silhouette's bounding box,
    else of the keypoints' — scaled by how much of the rig's rest extent the keypointed joints span
    (sparse keypoints span less than the body) — else a third of the image diagonal."""
    if sil is not None and sil.subject > 0:
        return sil.subject
    diagonals = []
    for t in range(ev.points.shape[0]):
        seen = ev.weights[t] > 0
        if np.count_nonzero(seen) >= 2:
            p = ev.points[t, seen]
            diagonals.append(float(np.linalg.norm(p.max(0) - p.min(0))))
    seen = np.flatnonzero(ev.weights.sum(0) > 0)
    rest = body.rest_heads
    full = float(np.linalg.norm(rest.max(0) - rest.min(0)))
    part = float(np.linalg.norm(rest[seen].max(0) - rest[seen].min(0))) if seen.size >= 2 else 0.0
    if diagonals and part > 0.05 * full and np.median(diagonals) > 1.0:
        return float(np.median(diagonals)) * full / part
    return math.hypot(*ev.size) / 3.0
