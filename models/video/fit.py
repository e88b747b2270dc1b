"""Driving video → motion on the user's own rig: Kirin's sequence-level optimisation (issue 8, part 3).

Unknowns, all in the canonical frame of the rig (core/canonical.py: +Z up, −Y forward, body size 1):

* per frame and joint, the world delta D_tj = R_world · R_rest⁻¹ as a 6D rotation (two columns);
* per frame, the main root's head position r_t — parametrised as the camera sees it: the root's
  normalised image position and log(k / depth) (`_RootPath`), so that the single-view valley
  "λ times bigger, λ times further" is the one axis log k and Adam does not crawl along it;
* one body scale k for the clip: the filmed creature is k × the rig (fitted only when the camera
  is given — with an estimated camera k = 1 fixes the gauge, the camera being placed to match);
* a fixed camera: the given `PinholeCamera` (armature space), or one estimated once (below).

Forward kinematics of world deltas is a matrix product (`rig_features.ancestor_paths`):
p_j = r + s_j + Σ_k A[j,k] · D_parent(k) · o_k, o_k the rest offset of k from its parent, s_j the
rest offset of j's root from the main root; bone tails are p_j + D_j · (tail_j − head_j). The world
the camera sees is k · p. Evidence points are joint heads.

Loss (weights in `VideoFitConfig`; the issue's 1.0 / 100 / 0.2 for projection / rotation smoothness /
increment smoothness are the defaults, and the normalisations below are what make them balance):

* projection — Geman-McClure ρ = e²/(e² + σ²) of each joint head's pixel error e, measured in units
  of the *subject's* 2D size (the median diagonal of the silhouette's bounding box, else of the
  keypoints' scaled up by the share of the rig they span) rather than the image diagonal, so the
  balance with the priors does not depend on how the subject is framed; weighted by confidence
  (NaN points weigh nothing), summed over joints and averaged over frames (more evidence, less
  smoothing). σ anneals from `robust_scale_start` to `robust_scale` over the first half of the
  steps (graduated non-convexity: a wide basin first, outliers ignored at the end).
* silhouette — a differentiable soft silhouette of a capsule proxy: each bone a capsule head → tail
  with radius the median distance to the bone of the mesh vertices it dominates (`mesh` given), else
  `radius_share` × its length; non-deforming bones are not drawn. Rendered per frame on a
  `silhouette_size`² grid over a square crop around the mask's bounding box (the subject fills the
  grid however small it is in the video): soft = σ(−min_b(d_b − ρ_b)/τ), d_b a pixel's distance to
  the projected bone axis, ρ_b the projected radius. Terms: 1 − soft IoU with the mask, plus a
  chamfer pair in subject sizes — points along every bone pulled inside the mask (its outside
  distance transform, sampled) and mask pixels pulled onto the nearest capsule. The IoU and the
  mask→proxy half are rendered every `silhouette_every` steps on `silhouette_frames` random frames.
* smoothness — mean over frames and joints of the squared frame-to-frame difference of the
  (orthonormalised) 6D rotations, and of their second differences (rotation increments); the root
  path gets a squared-acceleration term (body sizes).
* prior — squared 6D distance to the initial pose (a weak pull to the init: joints without evidence
  stay where the init had them), and a term keeping the raw 6D columns orthonormal.
* ground — the clip stands on the ground plane of the canonical frame (where the rig's feet stand
  at rest): feet below it are penalised, and each frame's lowest foot is pulled onto it through a
  Geman-McClure of scale `ground_scale` (a frame in the air costs a bounded amount). This makes the
  body scale observable with a given camera and keeps the trajectory on the ground.

Schedule. An *epoch* is `steps_per_epoch` (30) Adam steps, each on the whole sequence (every frame
and joint; the silhouette as above): 20 epochs = 600 steps. Rotations use the issue's lr 1e-3;
the root path and log-scale `lr_root` (Adam moves a coordinate by at most ~lr a step: 1e-3 would
move the root 0.6 body sizes in 600 steps). At 1e-3 a rotation coordinate moves at most ~0.6 in
600 steps (~35°) beyond what the rigid stage explains: on the tests' rearing cow, full keypoints are
within 1 px after 200 steps, and the 600 leave room for inits further off. Before the epochs a
rigid stage turns and places the initial pose per frame: for each of `init_yaws` headings, on
`rigid_frames` frames, a per-frame root rotation and translation are fitted (`rigid_steps` steps at
`lr_rigid`, keypoints and the silhouette distance transform only) and the heading with the lowest
data loss wins (a creature seen from the side fits its mirror image badly but gradient descent does
not turn a body around); the winner is refined on all frames.

Global translation, estimated separately and then combined (the issue's wording): per frame the
confidence-weighted 2D centroid of the keypoints (the silhouette's where a frame has fewer than
three), averaged over three frames, back-projected at the depth at which the evidence's 2D spread
matches the spread of the same joints of the rig in body lengths (median over the clip), then slid
along its ray to the rest height above the ground plane where the view is steep enough
(ground-aligned). This path initialises the root of every heading hypothesis; the rigid stage and
the epochs refine it with everything else.

Estimated camera (when `camera` is None): focal `config.focal` or max(W, H) pixels, principal point
at the image centre, level (no roll) with `camera_elevation_deg` of downward tilt, looking at the
rig's rest root from its side (which side does not matter: the heading search turns the body), at
the distance where the median 2D extent of the evidence matches the rig's extent. After the fit the
world is turned about the vertical and shifted along the ground, camera included (the images do not
change), so that the motion starts at the rig's rest position facing its own forward.

Output: `VideoFitResult.motion` on the user's rig in armature space (rotations through the
inverse-bind correction of `motion_from_world_deltas`, fps = evidence.fps) and `camera` in the same
armature space, such that `camera.project(joint_positions(rig, motion))` reproduces the fit — for a
given camera and a scale k ≠ 1 that is the given camera moved towards the rig's canonical origin by
1/k (the same images: the motion is on the user's rig, not on one k times bigger); `scale` = k.

Measured (2 CPU cores busy with a training job, one torch thread; procedural cow, 36 joints, 60
frames of kirin_addon/video/synth.py at 320×240, keypoints with 1 px noise, occluded ones dropped;
PCK@0.1 of the rigid stage alone → the fit; given camera / estimated camera):

  gallop   all visible keypoints     0.05 s/frame   0.88 → 0.98 / 0.86 → 0.98
  gallop   7 keypoints + silhouettes 0.21–0.23      0.87 → 0.98 / 0.88 → 0.97
  gallop   silhouettes only          0.16–0.19      0.68 → 0.71 / 0.63 → 0.70
  rear_up  all visible keypoints     0.04–0.05      0.95 → 0.96 / 0.95 → 0.97
  rear_up  7 keypoints + silhouettes 0.13           0.83 → 1.00 / 0.82 → 0.93
  rear_up  silhouettes only          0.16–0.20      0.60 → 1.00 / 0.59 → 0.95

"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from ...kirin_addon.core.camera import PinholeCamera
from ...kirin_addon.core.canonical import detect_canonical_frame
from ...kirin_addon.core.motion import Motion, joint_positions, motion_from_world_deltas, world_deltas
from ...kirin_addon.core.rig import Rig
from ...kirin_addon.core.rotations import matrix_to_6d, matrix_to_quat, quat_to_matrix
from ...kirin_addon.core.skinning import SkinnedMesh
from ..representation import canonical_rig, heading, yaw_matrix
from ..rig_features import ancestor_paths


class VideoFitError(ValueError):
    """Input the video fit cannot work with; the message is user-facing."""


@dataclass
class VideoFitConfig:
    # Schedule: `epochs` × `steps_per_epoch` full-sequence Adam steps (see the module docstring).
    epochs: int = 20
    steps_per_epoch: int = 30
    lr: float = 1e-3  # 6D rotations (the Adam lr)
    lr_root: float = 1e-2  # root translation (body sizes) and log body scale
    # Loss weights (the first three are the 1.0 / 100 / 0.2).
    projection: float = 1.0
    smooth_rotation: float = 100.0
    smooth_increment: float = 0.2
    silhouette: float = 1.0  # 1 − soft IoU
    silhouette_chamfer: float = 10.0  # both chamfer directions, in subject sizes
    smooth_root: float = 10.0  # squared root acceleration, body sizes
    prior: float = 0.01  # squared 6D distance to the initial pose
    orthonormal: float = 0.1  # keeps the raw 6D columns unit and orthogonal
    ground: float = 10.0  # feet below ground (squared, body sizes) and robust lowest-foot height
    ground_scale: float = 0.05  # body sizes: a frame whose lowest foot is higher counts as airborne
    scale_prior: float = 0.01  # squared log body scale (only when it is fitted)
    # Projection: Geman-McClure scale as a share of the subject's 2D size, annealed.
    robust_scale: float = 0.02
    robust_scale_start: float = 0.1
    # Silhouette rendering.
    mask_size: int = 256  # long side the silhouettes are area-downsampled to (at most)
    silhouette_size: int = 32  # side of the square grid of each frame's crop around the subject
    crop_margin: float = 0.15  # crop margin around the mask's bounding box, share of its size
    silhouette_sharpness: float = 0.7  # τ of the soft capsule edge, grid pixels
    silhouette_frames: int = 8  # frames rendered per step (0: all)
    silhouette_every: int = 2  # render the soft silhouette every this many steps
    radius_share: float = 0.12  # capsule radius / bone length without a mesh
    axis_samples: int = 5  # points per bone for the inside-the-mask term
    # Camera estimate (used when no camera is given).
    focal: float | None = None  # pixels; None → max(W, H)
    camera_elevation_deg: float = 10.0
    align_start: bool = True  # estimated camera: start at the rig's rest place, facing its forward
    # Rigid heading search.
    init_yaws: int = 8
    rigid_frames: int = 12  # frames the heading search runs on (evenly spaced)
    rigid_steps: int = 80  # steps of the search; half as many refine the winner on all frames
    lr_rigid: float = 0.05
    # Body scale: None → fitted exactly when a camera is given (and the rig has feet).
    fit_scale: bool | None = None
    # Canonical frame overrides (None = detect), as in the panel.
    up_axis: str | None = None
    forward_axis: str | None = None
    min_confidence: float = 1e-3  # points below this confidence are ignored
    seed: int = 0


@dataclass
class VideoFitResult:
    motion: Motion  # on the user's rig, armature space, fps = evidence.fps
    camera: PinholeCamera  # in the user's armature space
    scale: float
    reprojection_px: np.ndarray  # (T,) mean px error of joints with evidence (NaN: none that frame)
    seconds: float
    report: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------- torch helpers
def _sixd_to_matrix(d6: torch.Tensor) -> torch.Tensor:
    """Gram-Schmidt (…,6) → (…,3,3), columns b1, b2, b3 (as kirin_addon.core.rotations.sixd_to_matrix)."""
    a1, a2 = d6[..., :3], d6[..., 3:6]
    b1 = a1 / a1.norm(dim=-1, keepdim=True).clamp(min=1e-8)
    a2 = a2 - (b1 * a2).sum(-1, keepdim=True) * b1
    b2 = a2 / a2.norm(dim=-1, keepdim=True).clamp(min=1e-8)
    return torch.stack([b1, b2, torch.cross(b1, b2, dim=-1)], dim=-1)


def _geman_mcclure(sq: torch.Tensor, scale: float) -> torch.Tensor:
    return sq / (sq + scale * scale)


# ---------------------------------------------------------------------------- evidence checks
@dataclass
class _Evidence:
    size: tuple[int, int]
    fps: float
    points: np.ndarray  # (T,J,2) NaN → 0
    weights: np.ndarray  # (T,J) confidence, 0 where unknown
    masks: np.ndarray | None  # (T,h,w) float32 on the silhouette grid
    mask_scale: float  # working-mask pixels per image pixel


def _check_evidence(evidence, rig: Rig, config: VideoFitConfig) -> _Evidence:
    try:
        width, height = (int(v) for v in evidence.image_size)
        fps = float(evidence.fps)
        points = np.asarray(evidence.points, dtype=np.float64)
        confidence = np.asarray(evidence.confidence, dtype=np.float64)
        silhouettes = getattr(evidence, "silhouettes", None)
    except (AttributeError, TypeError, ValueError) as exc:
        raise VideoFitError(f"The video evidence is malformed: {exc}") from exc
    if width <= 0 or height <= 0:
        raise VideoFitError(f"The video's image size must be positive, got {width}×{height}.")
    if not (math.isfinite(fps) and fps > 0):
        raise VideoFitError(f"The video's frame rate must be positive, got {fps}.")
    if points.ndim != 3 or points.shape[-1] != 2:
        raise VideoFitError(f"Keypoints must be (frames, joints, 2), got {points.shape}.")
    frames, joints = points.shape[:2]
    if frames == 0:
        raise VideoFitError("The video evidence has zero frames.")
    if joints != rig.joint_count:
        raise VideoFitError(f"The evidence has keypoints for {joints} joints but the rig has "
                            f"{rig.joint_count}; give one column per bone (NaN where unknown).")
    if confidence.shape != (frames, joints):
        raise VideoFitError(f"Confidence must be (frames, joints) = {(frames, joints)}, "
                            f"got {confidence.shape}.")
    known = np.all(np.isfinite(points), axis=-1) & np.isfinite(confidence)
    weights = np.where(known, np.clip(np.nan_to_num(confidence), 0.0, 1.0), 0.0)
    weights[weights < config.min_confidence] = 0.0
    points = np.where(known[..., None], points, 0.0)

    masks, mask_scale = None, 1.0
    if silhouettes is not None:
        masks = np.asarray(silhouettes, dtype=np.float32)
        if masks.ndim != 3 or masks.shape[0] != frames:
            raise VideoFitError(f"Silhouettes must be (frames, height, width) with {frames} frames, "
                                f"got {masks.shape}.")
        h, w = masks.shape[1:]
        if h == 0 or w == 0:
            raise VideoFitError("The silhouettes are empty images.")
        if abs(w / h - width / height) > 0.02 * width / height + 1.0 / min(h, w):
            raise VideoFitError(f"The silhouettes ({w}×{h}) do not have the video's aspect "
                                f"({width}×{height}).")
        masks = np.clip(np.nan_to_num(masks), 0.0, 1.0)
        longest = max(h, w)
        if longest > config.mask_size:
            factor = config.mask_size / longest
            size = (max(1, round(h * factor)), max(1, round(w * factor)))
            masks = F.interpolate(torch.from_numpy(masks)[:, None], size=size, mode="area")[:, 0].numpy()
        mask_scale = masks.shape[2] / width
        if not np.any(masks.reshape(frames, -1).max(1) > 0.5):
            masks = None  # silhouettes without a subject say nothing
    if not weights.any() and masks is None:
        raise VideoFitError("The video evidence has no keypoint for any joint and no silhouette: "
                            "nothing to fit the rig to.")
    return _Evidence((width, height), fps, points, weights, masks, mask_scale)


# ---------------------------------------------------------------------------- the rig in torch
class _Body:
    """The canonical rig as tensors: FK of world deltas, capsule proxy."""

    def __init__(self, canon_rig: Rig, radii: np.ndarray, feet: np.ndarray):
        rig = canon_rig
        parents = rig.parents
        self.count = rig.joint_count
        self.main = rig.main_root
        heads, tails = rig.heads, rig.tails
        offsets = np.zeros((self.count, 3))
        has_parent = parents >= 0
        offsets[has_parent] = heads[has_parent] - heads[parents[has_parent]]
        root_of = np.arange(self.count)
        for j in rig.topological_order:
            if parents[j] >= 0:
                root_of[j] = root_of[parents[j]]
        t = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float32)  # noqa: E731
        self.parents = torch.as_tensor(np.where(has_parent, parents, np.arange(self.count)), dtype=torch.long)
        self.offsets = t(offsets)
        self.paths = t(ancestor_paths(parents))
        self.starts = t(heads[root_of] - heads[self.main])
        self.bones = t(tails - heads)
        self.radii = t(radii)
        self.drawn = torch.as_tensor(np.flatnonzero(radii > 0), dtype=torch.long)
        self.feet = torch.as_tensor(np.asarray(feet, dtype=np.int64), dtype=torch.long)
        self.foot_heights = t(heads[np.asarray(feet, dtype=np.int64), 2])
        self.rest_heads = heads
        self.rest_rotations = rig.rest_rotations

    def positions(self, deltas: torch.Tensor, root: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Heads and tails (…,J,3) of world deltas (…,J,3,3) with the main root at root (…,3)."""
        parent = deltas[..., self.parents, :, :]
        bones = (parent @ self.offsets[..., None])[..., 0]
        heads = root[..., None, :] + self.starts + self.paths @ bones
        tails = heads + (deltas @ self.bones[..., None])[..., 0]
        return heads, tails


def _capsule_radii(rig_c: Rig, frame, mesh: SkinnedMesh | None, share: float) -> np.ndarray:
    """(J,) capsule radius per bone in canonical units (0: not drawn)."""
    lengths = rig_c.lengths
    radii = share * lengths
    if mesh is not None and mesh.vertex_count:
        vertices = frame.to_canonical_points(mesh.vertices)
        weights = np.asarray(mesh.joint_weights, dtype=np.float64)
        owner = np.take_along_axis(mesh.joint_indices, np.argmax(weights, axis=1)[:, None], 1)[:, 0]
        weighted = weights.max(axis=1) > 0
        a, b = rig_c.heads[owner], rig_c.tails[owner]
        ab = b - a
        s = np.clip(np.sum((vertices - a) * ab, -1) / np.maximum(np.sum(ab * ab, -1), 1e-12), 0.0, 1.0)
        distance = np.linalg.norm(vertices - (a + s[:, None] * ab), axis=-1)
        for j in range(rig_c.joint_count):
            mine = distance[(owner == j) & weighted]
            if mine.size >= 4:
                radii[j] = float(np.median(mine))
    radii = np.where(rig_c.deform, radii, 0.0)
    return radii


# ---------------------------------------------------------------------------- silhouettes
class _Silhouettes:
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

    def restricted(self, frames: np.ndarray) -> _Silhouettes:
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


# ---------------------------------------------------------------------------- the fit
class _Problem:
    """Everything the loss needs, in torch, canonical frame."""

    def __init__(self, body: _Body, ev: _Evidence, camera_c: PinholeCamera, config: VideoFitConfig):
        self.body, self.ev, self.config = body, ev, config
        self.rotation = torch.as_tensor(camera_c.rotation, dtype=torch.float32)
        self.translation = torch.as_tensor(camera_c.translation, dtype=torch.float32)
        self.focal = float(camera_c.focal)
        self.center = torch.as_tensor(camera_c.center, dtype=torch.float32)
        self.points = torch.as_tensor(ev.points, dtype=torch.float32)
        self.weights = torch.as_tensor(ev.weights, dtype=torch.float32)
        self.weight_sum = float(ev.weights.sum())
        self.sil = _Silhouettes(ev.masks, ev.size, config) if ev.masks is not None else None
        self.subject = _subject_size(ev, body, self.sil)
        samples = torch.linspace(0.0, 1.0, max(config.axis_samples, 2))
        self.samples = samples
        self.frames = ev.points.shape[0]

    def restricted(self, frames: np.ndarray) -> _Problem:
        """The same problem on a subset of frames (for the heading search)."""
        view = copy.copy(self)
        index = torch.as_tensor(frames, dtype=torch.long)
        view.points, view.weights = self.points[index], self.weights[index]
        view.weight_sum = float(view.weights.sum())
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
            # Summed over joints, averaged over frames: more evidence weighs more against the priors.
            terms["projection"] = (_geman_mcclure(sq, sigma) * self.weights).sum((-1, -2)) / self.frames
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
            # Robust: frames in the air (a jump, a gallop's flight) cost a bounded amount.
            contact = _geman_mcclure(low ** 2, config.ground_scale).mean(-1)
            terms["ground"] = below + config.ground_scale ** 2 * contact
        return terms


def _subject_size(ev: _Evidence, body: _Body, sil: _Silhouettes | None) -> float:
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


def _initial_root_path(problem: _Problem, body: _Body, deltas0: np.ndarray, camera_c: PinholeCamera,
                       scale: float) -> np.ndarray:
    """(T,3) canonical root path from the evidence (see the module docstring)."""
    ev = problem.ev
    frames = ev.points.shape[0]
    with torch.no_grad():
        heads, tails = body.positions(torch.as_tensor(deltas0, dtype=torch.float32),
                                      torch.zeros(frames, 3))
    heads, tails = heads.numpy().astype(np.float64), tails.numpy().astype(np.float64)
    centre2d = np.full((frames, 2), np.nan)
    spread2d = np.full(frames, np.nan)
    offset3d = np.zeros((frames, 3))
    spread3d = np.full(frames, np.nan)
    for t in range(frames):
        w = ev.weights[t]
        if np.count_nonzero(w) >= 3:
            c = (w[:, None] * ev.points[t]).sum(0) / w.sum()
            centre2d[t] = c
            spread2d[t] = np.sqrt((w * ((ev.points[t] - c) ** 2).sum(-1)).sum() / w.sum())
            c3 = (w[:, None] * heads[t]).sum(0) / w.sum()
            offset3d[t] = c3
            spread3d[t] = np.sqrt((w * ((heads[t] - c3) ** 2).sum(-1)).sum() / w.sum() * 2.0 / 3.0)
        elif ev.masks is not None and ev.masks[t].max() > 0.5:
            m = ev.masks[t]
            ys, xs = np.nonzero(m > 0.5)
            pix = (np.stack([xs, ys], -1) + 0.5) / ev.mask_scale
            c = pix.mean(0)
            centre2d[t] = c
            spread2d[t] = np.sqrt(((pix - c) ** 2).sum(-1).mean())
            drawn = body.drawn.numpy()
            axis = np.concatenate([heads[t, drawn], tails[t, drawn]])
            c3 = axis.mean(0)
            offset3d[t] = c3
            spread3d[t] = np.sqrt(((axis - c3) ** 2).sum(-1).mean() * 2.0 / 3.0)
    good = np.isfinite(spread2d) & (spread2d > 1e-6)
    if not good.any():
        root = np.repeat(body.rest_heads[body.main][None], frames, 0)
        return root
    depth = float(np.median(camera_c.focal * scale * spread3d[good] / spread2d[good]))
    index = np.arange(frames)
    for k in range(2):
        centre2d[:, k] = np.interp(index, index[good], centre2d[good, k])
    for k in range(3):
        offset3d[:, k] = np.interp(index, index[good], offset3d[good, k])
    # Averaged: the centroid path under a short moving average, at the clip's median depth.
    if frames >= 3:
        padded = np.pad(centre2d, ((1, 1), (0, 0)), mode="edge")
        centre2d = (padded[:-2] + padded[1:-1] + padded[2:]) / 3.0
    world = camera_c.backproject(centre2d, np.full(frames, depth)) / scale
    # Ground-aligned: slide along each pixel's ray to the rest height of the centroid, where the
    # ray is steep enough for that to move the depth by less than 30 %.
    height = (body.rest_heads[body.main, 2] + offset3d[:, 2]) * scale
    eye = camera_c.position
    ray = world * scale - eye
    lift = ray[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = (height - eye[2]) / lift
    ok = np.isfinite(factor) & (np.abs(factor - 1.0) < 0.3)
    world[ok] = (eye + factor[ok, None] * ray[ok]) / scale
    return world - offset3d


def _estimate_camera(ev: _Evidence, body: _Body, config: VideoFitConfig) -> PinholeCamera:
    width, height = ev.size
    focal = float(config.focal) if config.focal else float(max(width, height))
    extents = []
    for t in range(ev.points.shape[0]):
        if ev.masks is not None and ev.masks[t].max() > 0.5:
            ys, xs = np.nonzero(ev.masks[t] > 0.5)
            extents.append(max(xs.max() - xs.min() + 1, ys.max() - ys.min() + 1) / ev.mask_scale)
        elif np.count_nonzero(ev.weights[t]) >= 2:
            p = ev.points[t][ev.weights[t] > 0]
            extents.append(float(np.max(p.max(0) - p.min(0))))
    if ev.masks is not None:
        body_extent = 1.0  # the body size, by the canonical frame's definition
    else:
        seen = np.flatnonzero(ev.weights.sum(0) > 0)
        rest = body.rest_heads[seen]
        body_extent = float(np.max(rest.max(0) - rest.min(0))) if seen.size >= 2 else 1.0
    extent = float(np.median(extents)) if extents else 0.5 * max(width, height)
    distance = focal * max(body_extent, 1e-3) / max(extent, 1.0)
    target = body.rest_heads[body.main].copy()
    elevation = math.radians(config.camera_elevation_deg)
    direction = np.array([-math.cos(elevation), 0.0, math.sin(elevation)])
    return PinholeCamera.look_at(target + distance * direction, target, (0.0, 0.0, 1.0), focal,
                                 np.array([width / 2.0, height / 2.0]))


def _report_progress(progress: Callable[[float], None] | None, value: float) -> None:
    if progress is not None:
        progress(float(min(max(value, 0.0), 1.0)))


def fit_motion(rig: Rig, evidence, mesh: SkinnedMesh | None = None, config: VideoFitConfig | None = None,
               init: Motion | None = None, camera: PinholeCamera | None = None,
               progress: Callable[[float], None] | None = None) -> VideoFitResult:
    """Fit a motion of `rig` to 2D evidence of a video (see the module docstring).

    `evidence`: an `Evidence2D` (image_size (W,H), fps, points (T,J,2) px with NaN where unknown,
    confidence (T,J), silhouettes (T,h,w) or None), one keypoint column per rig joint (its head).
    `init`: a starting motion on the rig (same frame count; e.g. the inverse-dynamics model's
    prediction); rest pose otherwise. `camera`: the video's camera in armature space; estimated
    when None. `progress(fraction)` is called as the fit goes; an exception it raises stops the
    fit and propagates."""
    started = time.perf_counter()
    config = config or VideoFitConfig()
    rig.validate()
    ev = _check_evidence(evidence, rig, config)
    frames = ev.points.shape[0]
    if init is not None:
        init.check_rig(rig)
        if init.frame_count != frames:
            raise VideoFitError(f"The initial motion has {init.frame_count} frames but the video evidence "
                                f"has {frames}.")
    frame = detect_canonical_frame(rig, up=config.up_axis, forward=config.forward_axis,
                                   mesh_vertices=None if mesh is None else mesh.vertices)
    canon = canonical_rig(rig, frame)
    radii = _capsule_radii(canon.rig, frame, mesh, config.radius_share)
    body = _Body(canon.rig, radii, canon.feet)
    generator = torch.Generator().manual_seed(config.seed)
    _report_progress(progress, 0.0)

    # Initial pose (canonical world deltas) and camera.
    if init is not None:
        deltas_arm = quat_to_matrix(world_deltas(rig, init))
        deltas0 = frame.to_canonical_rotations(deltas_arm)
    else:
        deltas0 = np.broadcast_to(np.eye(3), (frames, rig.joint_count, 3, 3)).copy()
    estimated = camera is None
    camera_c = _estimate_camera(ev, body, config) if estimated else camera.transformed(frame.matrix())
    fit_scale = (not estimated) if config.fit_scale is None else bool(config.fit_scale)
    fit_scale = fit_scale and body.feet.numel() > 0
    problem = _Problem(body, ev, camera_c, config)

    # Rigid stage: per-frame root rotation + translation for each initial heading, on a subset of
    # frames; the best heading is then refined on all frames.
    yaws = np.arange(max(config.init_yaws, 1)) * (2 * np.pi / max(config.init_yaws, 1))
    d0 = torch.as_tensor(deltas0, dtype=torch.float32)
    with torch.no_grad():  # the initial pose about its main root: the rigid stage only turns it
        rel_heads, rel_tails = body.positions(d0, torch.zeros(frames, 3))
    paths = []
    for h, yaw in enumerate(yaws):
        turned = (torch.as_tensor(yaw_matrix(yaw), dtype=torch.float32) @ d0).numpy().astype(np.float64)
        if init is not None and h == 0 and not estimated:  # the init's path is in the given camera's world
            paths.append(frame.to_canonical_points(init.root_positions))
        else:
            paths.append(_initial_root_path(problem, body, turned, camera_c, 1.0))
    subset = np.unique(np.linspace(0, frames - 1, min(frames, config.rigid_frames)).round().astype(np.int64))
    turns = np.broadcast_to(yaw_matrix(yaws)[:, None], (len(yaws), len(subset), 3, 3))
    search = problem.restricted(subset)
    score, turns6, roots = _rigid_fit(search, rel_heads[subset], rel_tails[subset], matrix_to_6d(turns),
                                      np.stack(paths)[:, subset], config, config.rigid_steps)
    best = int(torch.argmin(score))
    _report_progress(progress, 0.08)
    # The winner on every frame: the subset's rotations and root path interpolated, then refined.
    index = np.arange(frames)
    turn_all = np.stack([np.interp(index, subset, turns6[best, :, k]) for k in range(6)], -1)
    root_all = np.stack([np.interp(index, subset, roots[best, :, k]) for k in range(3)], -1)
    _, turns6, roots = _rigid_fit(problem, rel_heads, rel_tails, turn_all[None], root_all[None], config,
                                  config.rigid_steps // 2, score=False)
    with torch.no_grad():
        start_deltas = _sixd_to_matrix(torch.as_tensor(turns6[0], dtype=torch.float32))[:, None] @ d0
        start_root = torch.as_tensor(roots[0], dtype=torch.float32)
    _report_progress(progress, 0.15)

    # Full stage: all rotations, root path, body scale.
    deltas_c, root_c, scale, losses = _full_fit(problem, start_deltas, start_root, fit_scale, config,
                                                progress, generator)

    # Back to the user's rig.
    camera_fit = PinholeCamera(camera_c.focal, camera_c.center, camera_c.rotation,
                               camera_c.translation / scale)
    if estimated and config.align_start:
        deltas_c, root_c, camera_fit = _align_start(body, deltas_c, root_c, camera_fit)
    deltas_arm = frame.from_canonical_rotations(deltas_c)
    root_arm = frame.from_canonical_points(root_c)
    motion = motion_from_world_deltas(rig, matrix_to_quat(deltas_arm), root_arm, ev.fps)
    camera_arm = camera_fit.transformed(frame.inverse_matrix())
    projected = camera_arm.project(joint_positions(rig, motion))
    error = np.linalg.norm(projected - ev.points, axis=-1)
    seen = ev.weights > 0
    with np.errstate(invalid="ignore"):
        reprojection = np.where(seen.any(1), (error * seen).sum(1) / np.maximum(seen.sum(1), 1), np.nan)
    seconds = time.perf_counter() - started
    report = {
        "frames": frames,
        "joints": rig.joint_count,
        "joints_with_evidence": int(np.count_nonzero(seen.any(0))),
        "silhouettes": ev.masks is not None,
        "camera_estimated": estimated,
        "scale_fitted": fit_scale,
        "heading_deg": float(np.degrees(yaws[best])),
        "steps": config.epochs * config.steps_per_epoch,
        "rigid_steps": config.rigid_steps,
        "losses": losses,
        "reprojection_px": float(np.nanmean(reprojection)) if np.isfinite(reprojection).any() else None,
        "seconds_per_frame": seconds / frames,
    }
    _report_progress(progress, 1.0)
    return VideoFitResult(motion, camera_arm, scale, reprojection, seconds, report)


class _RootPath:
    """The root path as the camera sees it: per frame the root's normalised image position (a, b)
    and log(k / depth), plus the clip's log body scale k. Projections depend on (a, b, k/depth)
    only, so the depth-scale valley of a single view — a creature λ times bigger, λ times further —
    is the one axis log k, which the ground term decides; Adam would crawl along it diagonally in
    world coordinates."""

    def __init__(self, problem: _Problem, root: torch.Tensor, fit_scale: bool):
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


def _full_fit(problem: _Problem, start_deltas: torch.Tensor, start_root: torch.Tensor, fit_scale: bool,
              config: VideoFitConfig, progress, generator) -> tuple[np.ndarray, np.ndarray, float, dict]:
    """The epochs: every rotation, the root path and the body scale (see the module docstring)."""
    body, frames = problem.body, start_deltas.shape[0]
    init6 = start_deltas[..., :2].transpose(-1, -2).flatten(-2)
    rot6 = init6.clone().requires_grad_(True)
    path = _RootPath(problem, start_root, fit_scale)
    groups = [{"params": [rot6], "lr": config.lr},
              {"params": [path.image, path.inverse_depth], "lr": config.lr_root}]
    if fit_scale:
        groups.append({"params": [path.log_scale], "lr": config.lr_root})
    optimiser = _Adam(groups)
    total = max(config.epochs * config.steps_per_epoch, 0)
    anneal = max(total // 2, 1)
    ratio = config.robust_scale / config.robust_scale_start
    losses: dict[str, float] = {}
    for step in range(total):
        sigma = config.robust_scale_start * ratio ** min(step / anneal, 1.0)
        optimiser.zero_grad()
        deltas = _sixd_to_matrix(rot6)
        root = path.world()
        heads, tails = body.positions(deltas, root)
        render = step % max(config.silhouette_every, 1) == 0 or step == total - 1
        terms = problem.data_terms(heads, tails, path.log_scale, sigma, render=render, rng=generator)
        unit6 = deltas[..., :2].transpose(-1, -2).flatten(-2)
        zero = unit6.sum() * 0
        terms["smooth_rotation"] = _diff_sq(unit6, 1, dim=0).mean() if frames > 1 else zero
        terms["smooth_increment"] = _diff_sq(unit6, 2, dim=0).mean() if frames > 2 else zero
        terms["smooth_root"] = _diff_sq(root, 2).mean() if frames > 2 else zero
        terms["prior"] = ((unit6 - init6) ** 2).sum(-1).mean()
        a1, a2 = rot6[..., :3], rot6[..., 3:]
        terms["orthonormal"] = ((a1.norm(dim=-1) - 1) ** 2 + (a2.norm(dim=-1) - 1) ** 2
                                + (a1 * a2).sum(-1) ** 2).mean()
        if fit_scale:
            terms["scale_prior"] = path.log_scale ** 2
        loss = sum(_weight(config, k) * v for k, v in terms.items())
        loss.backward()
        optimiser.step()
        if (step + 1) % max(config.steps_per_epoch, 1) == 0:
            _report_progress(progress, 0.15 + 0.8 * (step + 1) / total)
        if step == total - 1:
            losses = {k: float(v.detach()) for k, v in terms.items()}
    with torch.no_grad():
        deltas = _sixd_to_matrix(rot6).numpy().astype(np.float64)
        root = path.world().numpy().astype(np.float64)
        scale = float(path.log_scale.exp())
    return deltas, root, scale, losses


def _rigid_fit(problem: _Problem, rel_heads: torch.Tensor, rel_tails: torch.Tensor, turns6: np.ndarray,
               roots: np.ndarray, config: VideoFitConfig, steps: int,
               score: bool = True) -> tuple[torch.Tensor | None, np.ndarray, np.ndarray]:
    """Fit per-frame rigid turns (H,T,6) and root paths (H,T,3) of a fixed pose (heads and tails
    (T,J,3) about the main root) for H hypotheses at once; returns each one's data loss and the
    fitted parameters."""
    turns = torch.tensor(turns6, dtype=torch.float32, requires_grad=True)
    path = torch.tensor(roots, dtype=torch.float32, requires_grad=True)
    optimiser = _Adam([{"params": [turns, path], "lr": config.lr_rigid}])
    log_scale = torch.zeros(())
    frames = path.shape[1]

    def pose(turns: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        g = _sixd_to_matrix(turns)
        move = lambda points: torch.einsum("htxy,tjy->htjx", g, points) + path[:, :, None]  # noqa: E731
        return move(rel_heads), move(rel_tails)

    for _ in range(steps):
        optimiser.zero_grad()
        heads, tails = pose(turns)
        terms = problem.data_terms(heads, tails, log_scale, config.robust_scale_start, render=False, rng=None)
        # Starts from zeros: the frames drawn may hold no evidence at all (a detector that found nothing).
        loss = sum((_weight(config, k) * v for k, v in terms.items()), torch.zeros(path.shape[0]))
        if frames > 2:
            unit = _sixd_to_matrix(turns)[..., :2].flatten(-2)
            loss = loss + config.smooth_rotation * _diff_sq(unit, 1).mean(-1) \
                + config.smooth_root * _diff_sq(path, 2).mean(-1)
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
        loss = sum((_weight(config, k) * v for k, v in terms.items() if k != "ground"),
                   torch.zeros(path.shape[0]))
    return loss, *fitted


class _Adam:
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


def _weight(config: VideoFitConfig, term: str) -> float:
    return {"chamfer": config.silhouette_chamfer}.get(term, getattr(config, term, 1.0))


def _diff_sq(x: torch.Tensor, order: int, dim: int = -2) -> torch.Tensor:
    """Squared norm (over the last axis) of the order-th difference along the frame axis `dim`."""
    d = x
    for _ in range(order):
        d = d.diff(dim=dim)
    return (d ** 2).sum(-1)


def _align_start(body: _Body, deltas: np.ndarray, root: np.ndarray,
                 camera: PinholeCamera) -> tuple[np.ndarray, np.ndarray, PinholeCamera]:
    """Turn about the vertical and shift along the ground, camera included, so that frame 0 has the
    root at its rest ground position facing the rig's forward (−Y)."""
    yaw0 = float(heading(deltas[:, body.main])[0])
    turn = yaw_matrix(-yaw0)
    similarity = np.eye(4)
    similarity[:3, :3] = turn
    moved = root[0] @ turn.T
    similarity[:2, 3] = body.rest_heads[body.main, :2] - moved[:2]
    deltas = turn @ deltas  # the body turns, its rest does not
    root = root @ turn.T + similarity[:3, 3]
    return deltas, root, camera.transformed(similarity)
