"""The video fit's starting point (kirin_addon/video/pipeline.py): the starts' poses in the canonical
frame, the estimated camera where none is given, the root path the evidence shows, and the headings a
user's "facing" rules out."""

from __future__ import annotations

import math

import numpy as np

from ..core.camera import PinholeCamera
from ..core.canonical import CanonicalFrame
from ..core.motion import Motion, world_deltas
from ..core.rig import Rig
from ..core.rotations import quat_to_matrix, yaw_matrix
from .fit_body import FitBody
from .fit_config import VideoFitConfig
from .fit_evidence import FitEvidence
from .ground import contact_row


def start_deltas(rig: Rig, frame: CanonicalFrame, starts: list[Motion], frames: int,
                 standing: Motion | None = None) -> np.ndarray:
    """(P,T,J,3,3) canonical world deltas of each start; where there is none, of the rig's `standing`
    pose (one frame) held, else of the rest pose."""
    if not starts:
        if standing is None:
            return np.broadcast_to(np.eye(3), (1, frames, rig.joint_count, 3, 3)).copy()
        held = frame.to_canonical_rotations(quat_to_matrix(world_deltas(rig, standing)))[:1]
        return np.broadcast_to(held[None], (1, frames, rig.joint_count, 3, 3)).copy()
    return np.stack([frame.to_canonical_rotations(quat_to_matrix(world_deltas(rig, start)))
                     for start in starts])


def initial_root_path(ev: FitEvidence, body: FitBody, heads: np.ndarray, tails: np.ndarray,
                      camera_c: PinholeCamera, scale: float) -> np.ndarray:
    """(T,3) canonical root path from the evidence, for a pose whose joint heads and tails (T,J,3) with
    the main root at the origin are given (kirin_addon/video/pipeline.py: global translation)."""
    frames = ev.points.shape[0]
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
            drawn = body.drawn
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


def estimate_camera(ev: FitEvidence, body: FitBody, floor: float,
                    config: VideoFitConfig) -> tuple[PinholeCamera, bool]:
    """A camera for footage without one, and whether the footage's own ground placed it (the horizon and
    the row the subject stands on: `_camera_on_the_ground`, `floor` the feet's rest height); else level
    with `camera_elevation_deg` of tilt, as far away as makes the rig's size the evidence's."""
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
    centre = np.array([width / 2.0, height / 2.0])
    grounded = _camera_on_the_ground(ev, body, floor, focal, distance, target)
    if grounded is not None:
        return grounded, True
    elevation = math.radians(config.camera_elevation_deg)
    direction = np.array([-math.cos(elevation), 0.0, math.sin(elevation)])
    return PinholeCamera.look_at(target + distance * direction, target, (0.0, 0.0, 1.0), focal, centre), False


MIN_GROUND_ANGLE_DEG = 1.0  # the contact row below the horizon by less: the camera's height is unknown


def _camera_on_the_ground(ev: FitEvidence, body: FitBody, floor: float, focal: float, distance: float,
                          target: np.ndarray) -> PinholeCamera | None:
    """The camera the footage shows (None where it does not): tilted so that the horizon lies on the
    row the video shows it on (kirin_addon/video/ground.py), and as high above the rig's floor as makes
    the silhouettes' contact row (where the feet meet the ground) the `floor` at `distance`. Level, on the
    rig's side, looking across its rest root."""
    if ev.horizon is None or ev.masks is None or not body.feet.size:
        return None
    width, height = ev.size
    contact = contact_row(ev.masks, height)
    if contact is None:
        return None
    centre = np.array([width / 2.0, height / 2.0])
    down = math.atan2(centre[1] - ev.horizon, focal)  # the view's tilt below the horizontal
    below = down + math.atan2(contact - centre[1], focal)  # the contact row's angle below the horizontal
    if below < math.radians(MIN_GROUND_ANGLE_DEG):
        return None
    eye = np.array([target[0] - distance, target[1], floor + distance * math.tan(below)])
    ahead = eye + np.array([1.0, 0.0, -math.tan(down)])
    return PinholeCamera.look_at(eye, ahead, (0.0, 0.0, 1.0), focal, centre)


_FACING_SHARE = 0.5  # of the forward axis that must point that way in the camera's frame


def facing_barred(facing: str | None, yaws: np.ndarray, trunk0: np.ndarray,
                  camera_c: PinholeCamera) -> np.ndarray:
    """(P,Y) bool: the hypotheses (start p turned to heading y) whose body at the first frame does not
    face as the user said (`facing` None: none barred; a silhouette cannot tell its front from its
    back: a bison's massive forequarters look like a bull's rump). `trunk0` (P,3,3): each start's
    trunk turn at its first frame."""
    barred = np.zeros((len(trunk0), len(yaws)), bool)
    if facing is None:
        return barred
    forward = np.einsum("yab,pbc,c->pya", yaw_matrix(yaws), trunk0, np.array([0.0, -1.0, 0.0]))
    seen = forward @ camera_c.rotation.T  # in the camera's frame: x right, z away
    x, z = seen[..., 0], seen[..., 2]
    along = {"right": x, "left": -x, "toward": -z, "away": z}[facing]
    barred = along < _FACING_SHARE
    return np.zeros_like(barred) if barred.all() else barred
