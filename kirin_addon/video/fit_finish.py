"""The video fit mapped back (kirin_addon/video/pipeline.py): the canonical fit turned to start at the
rig's rest place, as a motion of the user's rig with its camera, the follower branches where the legs
carried them, and the pixel error that is left."""

from __future__ import annotations

import numpy as np

from ..core.camera import PinholeCamera
from ..core.canonical import CanonicalFrame
from ..core.motion import Motion, motion_from_world_deltas, motion_from_world_transforms
from ..core.rig import Rig
from ..core.rotations import heading, matrix_to_quat, yaw_matrix
from .fit_body import FitBody
from .fit_evidence import FitEvidence
from .fit_protocol import BodyModel


def align_start(body: FitBody, deltas: np.ndarray, root: np.ndarray,
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


def on_user_rig(rig: Rig, frame: CanonicalFrame, deltas_c: np.ndarray, root_c: np.ndarray,
                camera_fit: PinholeCamera, fps: float) -> tuple[Motion, PinholeCamera]:
    """The fitted canonical deltas and root path as a motion of the user's rig, and the camera in
    its armature space."""
    deltas_arm = frame.from_canonical_rotations(deltas_c)
    root_arm = frame.from_canonical_points(root_c)
    motion = motion_from_world_deltas(rig, matrix_to_quat(deltas_arm), root_arm, fps)
    return motion, camera_fit.transformed(frame.inverse_matrix())


def with_followers(rig: Rig, frame: CanonicalFrame, model: BodyModel, tops: tuple[int, ...],
                   deltas_c: np.ndarray, root_c: np.ndarray, motion: Motion) -> Motion:
    """The fitted motion with the follower branches where the fit carried them: their tops take the
    translations that put them there on the user's rig (no other joint moves off its parent)."""
    heads, _ = model.pose(deltas_c, root_c)
    world = np.zeros(deltas_c.shape[:2] + (4, 4))
    world[..., :3, :3] = frame.from_canonical_rotations(deltas_c) @ rig.rest_rotations[None]
    world[..., :3, 3] = frame.from_canonical_points(heads)
    world[..., 3, 3] = 1.0
    placed = motion_from_world_transforms(rig, world, motion.fps, tolerance=0.0)
    moved = np.zeros((motion.frame_count, rig.joint_count, 3))
    if placed.translations is not None:
        moved[:, list(tops)] = placed.translations[:, list(tops)]
    return Motion(motion.fps, motion.root_positions, motion.rotations, moved)


def reprojection_px(projected: np.ndarray, ev: FitEvidence) -> np.ndarray:
    """(T,) mean pixel error of the joints with evidence (NaN for a frame with none)."""
    error = np.linalg.norm(projected - ev.points, axis=-1)
    seen = ev.weights > 0
    with np.errstate(invalid="ignore"):
        return np.where(seen.any(1), (error * seen).sum(1) / np.maximum(seen.sum(1), 1), np.nan)
