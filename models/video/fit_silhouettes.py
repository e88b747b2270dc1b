"""The video fit's silhouette terms (models/video/fitter.py): the masks on per-frame crops, their
distance transforms, and the soft capsule silhouette compared with them."""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn.functional as F

from ...kirin_addon.video.fit_config import VideoFitConfig


class Silhouettes:
    """The masks, and the soft capsule silhouette compared with them.

    Rendering works on a per-frame crop: a square window around the mask's bounding box (plus
    `crop_margin` of its size on each side), sampled at `silhouette_size`² pixels, so the subject
    fills the grid whatever its size in the video. The inside-the-mask term samples a distance
    transform of the whole working mask. Distances are in units of the subject's size (the crop's
    side without its margin)."""

    def __init__(self, masks: np.ndarray, image_size: tuple[int, int], config: VideoFitConfig):
        from scipy.ndimage import distance_transform_edt

        frames, h, w = masks.shape
        width, height = image_size
        self.scale = w / width  # working-mask pixels per image pixel
        self.h, self.w = h, w
        valid = masks.reshape(frames, -1).max(1) > 0.5
        self.valid = torch.as_tensor(valid)
        self.validf = self.valid.float()
        grid = int(config.silhouette_size)
        offsets = (np.arange(grid) + 0.5) / grid
        windows = np.zeros((frames, 3))  # x0, y0, side (image px)
        crops = np.zeros((frames, grid, grid), np.float32)
        outside = np.zeros((frames, h, w), np.float32)
        sizes = np.ones(frames)
        for t in np.flatnonzero(valid):
            ys, xs = np.nonzero(masks[t] > 0.5)
            x0, x1 = xs.min() / self.scale, (xs.max() + 1) / self.scale
            y0, y1 = ys.min() / self.scale, (ys.max() + 1) / self.scale
            size = max(x1 - x0, y1 - y0)
            side = size * (1 + 2 * config.crop_margin)
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            windows[t] = (cx - side / 2, cy - side / 2, side)
            sizes[t] = size
            outside[t] = distance_transform_edt(masks[t] < 0.5) / self.scale / size
        if valid.any() and not valid.all():
            # Frames without a silhouette count for nothing (validf), but their window must still be
            # a real one: a zero-sized window gives infinite sample positions (NaN gradients, and a
            # crash in grid_sample's backward pass).
            windows[~valid] = np.median(windows[valid], axis=0)
            sizes[~valid] = np.median(sizes[valid])
        # Crops: each grid pixel averages 3×3 bilinear samples of the working mask.
        sub = (np.arange(3) - 1) / 3.0 / grid
        u = (offsets[:, None] + sub[None]).ravel()  # (grid*3,) fractions of the window
        px = windows[:, None, 0] + u[None] * windows[:, None, 2]  # (T, grid*3) image x
        py = windows[:, None, 1] + u[None] * windows[:, None, 2]
        gx = torch.as_tensor(2 * px * self.scale / w - 1, dtype=torch.float32)
        gy = torch.as_tensor(2 * py * self.scale / h - 1, dtype=torch.float32)
        sample = torch.stack(torch.broadcast_tensors(gx[:, None, :], gy[:, :, None]), -1)  # (T,3g,3g,2)
        dense = F.grid_sample(torch.from_numpy(np.ascontiguousarray(masks, np.float32))[:, None], sample,
                              mode="bilinear", padding_mode="zeros", align_corners=False)
        crops = F.avg_pool2d(dense, 3)[:, 0]  # (T,g,g)
        self.masks = crops.reshape(frames, -1) * self.validf[:, None]
        cx = windows[:, None, 0] + offsets[None] * windows[:, None, 2]  # (T,g)
        cy = windows[:, None, 1] + offsets[None] * windows[:, None, 2]
        self.px = torch.as_tensor(np.repeat(cx[:, None, :], grid, 1).reshape(frames, -1), dtype=torch.float32)
        self.py = torch.as_tensor(np.repeat(cy[:, :, None], grid, 2).reshape(frames, -1), dtype=torch.float32)
        self.pixel = torch.as_tensor(windows[:, 2] / grid, dtype=torch.float32)  # image px per grid px
        self.size = torch.as_tensor(sizes, dtype=torch.float32)
        self.subject = float(np.median(sizes[valid]) * math.sqrt(2)) if valid.any() else 0.0
        self.outside = torch.from_numpy(outside)[:, None]  # (T,1,h,w)

    def restricted(self, frames: np.ndarray) -> Silhouettes:
        """The same silhouettes on a subset of frames."""
        view = copy.copy(self)
        index = torch.as_tensor(frames, dtype=torch.long)
        for name in ("valid", "validf", "masks", "px", "py", "pixel", "size", "outside"):
            setattr(view, name, getattr(self, name)[index])
        return view

    def inside_term(self, pixels: torch.Tensor) -> torch.Tensor:
        """Mean outside-distance (subject sizes) at image points (…,T,P,2); leading dims stay."""
        norm = torch.stack([2 * pixels[..., 0] * self.scale / self.w - 1,
                            2 * pixels[..., 1] * self.scale / self.h - 1], -1)
        lead = norm.shape[:-3]
        frames_count, count = norm.shape[-3], norm.shape[-2]
        norm = norm.reshape(-1, frames_count, count, 2).transpose(0, 1).reshape(frames_count, -1, 1, 2)
        sampled = F.grid_sample(self.outside, norm, mode="bilinear", padding_mode="border",
                                align_corners=False)
        sampled = sampled.reshape(frames_count, -1, count).transpose(0, 1).reshape(*lead, frames_count, count)
        return (sampled.mean(-1) * self.validf).sum(-1) / self.validf.sum().clamp(min=1.0)

    def render_terms(self, heads: torch.Tensor, tails: torch.Tensor, radii: torch.Tensor,
                     frames: torch.Tensor, sharpness: float) -> tuple[torch.Tensor, torch.Tensor]:
        """(1 − soft IoU, mask→proxy chamfer) for projected bone axes (…,F,B,2) and radii (…,F,B),
        image px."""
        px, py = self.px[frames][:, None], self.py[frames][:, None]  # (F,1,N)
        ax, ay = heads[..., 0:1], heads[..., 1:2]  # (F,B,1)
        vx, vy = tails[..., 0:1] - ax, tails[..., 1:2] - ay
        inverse = 1.0 / (vx * vx + vy * vy).clamp(min=1e-6)
        dx, dy = px - ax, py - ay  # (F,B,N)
        s = ((dx * vx + dy * vy) * inverse).clamp(0.0, 1.0)
        ex, ey = dx - s * vx, dy - s * vy
        gap = (ex * ex + ey * ey + 1e-6).sqrt() - radii[..., None]  # (F,B,N) image px
        # The nearest capsule decides (a hard union; its gradient goes to that capsule).
        nearest = gap.min(dim=-2).values  # (…,F,N)
        soft = torch.sigmoid(-nearest / (sharpness * self.pixel[frames])[:, None])
        mask = self.masks[frames]
        valid = self.validf[frames]
        inter = (soft * mask).sum(-1)
        union = (soft + mask - soft * mask).sum(-1).clamp(min=1e-6)
        iou = ((1.0 - inter / union) * valid).sum(-1) / valid.sum().clamp(min=1.0)
        outside = nearest.clamp(min=0.0) / self.size[frames][:, None]
        cover = (outside * mask).sum(-1) / mask.sum(-1).clamp(min=1e-6)
        cover = (cover * valid).sum(-1) / valid.sum().clamp(min=1.0)
        return iou, cover
