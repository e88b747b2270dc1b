"""Synthetic videos of a rig's motion with a known camera (numpy only).

What the video-extraction benchmark and the inverse-dynamics model (models/video/idm.py) need: the
skinned mesh of a motion rendered through a pinhole camera over a static background, with the
ground truth a detector would be asked for — the subject's mask, every joint's projection and
whether it can be seen.

- Triangles are rasterised by kirin_addon/core/raster.py (`rasterize_faces`: which triangle is in
  front at every pixel, depth perspective-correct; `coverage`: masks only, for the inverse-dynamics
  model's thousands of training silhouettes).
- `render_motion` skins the mesh at every frame (linear blend skinning), shades it flat (Lambert,
  key + fill light, two-sided) over a plain or textured static background, and projects the joints.
  A joint is visible when it projects into the image and either nothing covers it, the surface in
  front of it is within `VISIBLE_DEPTH` body sizes, or that surface is skinned to the joint or a
  neighbour (its parent or a child) — a far leg behind the body is hidden, a shoulder under its
  own skin is not.
- `frame_camera` places a camera that keeps a whole motion in view (optionally re-aimed and zoomed
  so that its projection fills a given share of the image).

Cameras are kirin_addon/core/camera.py's `PinholeCamera` (pixels x right, y down, pixel (i, j) covers
[i, i+1) × [j, j+1)); rendering only calls `project` and `depth`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.camera import PinholeCamera
from ..core.motion import Motion, forward_kinematics
from ..core.raster import rasterize_faces
from ..core.rig import Rig
from ..core.skinning import SkinnedMesh, linear_blend_skinning, skin_matrices

VISIBLE_DEPTH = 0.05  # body sizes: a joint this close behind the visible surface counts as seen
BODY_COLOR = (0.78, 0.5, 0.3)
_KEY = np.array([0.4, -0.6, 0.7]) / np.linalg.norm([0.4, -0.6, 0.7])
_FILL = np.array([-0.6, 0.3, 0.3]) / np.linalg.norm([-0.6, 0.3, 0.3])


@dataclass
class SyntheticVideo:
    frames: np.ndarray  # (T,H,W,3) uint8
    masks: np.ndarray  # (T,H,W) bool: the subject
    keypoints: np.ndarray  # (T,J,2) pixels, x right, y down
    visibility: np.ndarray  # (T,J) bool
    joints: np.ndarray  # (T,J,3) world joint heads (ground truth)
    camera: PinholeCamera
    fps: float

    @property
    def size(self) -> tuple[int, int]:
        """(W, H)"""
        return int(self.frames.shape[2]), int(self.frames.shape[1])


# ----------------------------------------------------------------------------- cameras
@dataclass(frozen=True)
class Framing:
    """How tightly `frame_camera` frames its points: the narrower side's field of view `fov_deg`
    (35–55° at random when None), the bounding sphere × `margin` fitting it, and `fill` (e.g. 0.9;
    None: the sphere's framing): re-aim at the points' projected bounding box and zoom until that box
    fills this share of the image's width or height, whichever comes first."""

    fov_deg: float | None = None
    margin: float = 1.15
    fill: float | None = None


def frame_camera(
    positions: np.ndarray,
    size: tuple[int, int],
    rng: np.random.Generator | None = None,
    up=(0.0, 0.0, 1.0),
    azimuth: float | None = None,
    elevation: float | None = None,
    direction: np.ndarray | None = None,
    framing: Framing | None = None,
) -> PinholeCamera:
    """A camera that keeps every point of `positions` (…,3; e.g. a motion's joints, or its mesh)
    in a (W,H) image: it looks at their bounding-box centre from `azimuth` (radians about `up`,
    random when None) and `elevation` (radians above the ground plane, 5–30° when None), far enough
    that the bounding sphere fits the image as `framing` says (`Framing`). `direction` (3,), from the
    subject towards the camera, overrides azimuth and elevation."""
    framing = framing or Framing()
    fov_deg, margin, fill = framing.fov_deg, framing.margin, framing.fill
    rng = np.random.default_rng(0) if rng is None else rng
    points = np.asarray(positions, np.float64).reshape(-1, 3)
    lo, hi = points.min(axis=0), points.max(axis=0)
    centre = (lo + hi) / 2
    radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-6)
    up = np.asarray(up, np.float64) / np.linalg.norm(up)
    e1 = np.cross(up, np.eye(3)[np.argmin(np.abs(up))])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(up, e1)
    azimuth = rng.uniform(0.0, 2 * np.pi) if azimuth is None else float(azimuth)
    elevation = np.radians(rng.uniform(5.0, 30.0)) if elevation is None else float(elevation)
    fov = np.radians(rng.uniform(35.0, 55.0) if fov_deg is None else float(fov_deg))
    if direction is None:
        direction = np.cos(elevation) * (np.cos(azimuth) * e1 + np.sin(azimuth) * e2) + np.sin(elevation) * up
    direction = np.asarray(direction, np.float64) / np.linalg.norm(direction)
    distance = radius * margin / np.sin(fov / 2)
    width, height = size
    focal = 0.5 * min(width, height) / np.tan(fov / 2)
    position = centre + direction * distance
    camera = PinholeCamera.look_at(position, centre, up, focal, (width / 2.0, height / 2.0))
    if fill is None:
        return camera
    for _ in range(3):
        pixels = camera.project(points)
        lo2, hi2 = pixels.min(axis=0), pixels.max(axis=0)
        target = camera.backproject((lo2 + hi2) / 2, float(np.median(camera.depth(points))))
        camera = PinholeCamera.look_at(position, target, up, camera.focal, camera.center)
        pixels = camera.project(points)
        extent = np.maximum(pixels.max(axis=0) - pixels.min(axis=0), 1e-6)
        zoom = float(min(fill * width / extent[0], fill * height / extent[1]))
        camera = PinholeCamera(camera.focal * zoom, camera.center, camera.rotation, camera.translation)
    return camera


# ----------------------------------------------------------------------------- rendering
def background_image(size: tuple[int, int], kind: str = "textured", seed: int = 0) -> np.ndarray:
    """(H,W,3) float in [0,1]: "plain" (one grey-blue) or "textured" (a soft checkerboard over smooth
    noise in muted greens and greys, far from the body colour)."""
    width, height = size
    if kind == "plain":
        return np.broadcast_to(np.array([0.42, 0.45, 0.5]), (height, width, 3)).copy()
    if kind != "textured":
        raise ValueError(f"Unknown background {kind!r} (plain or textured).")
    rng = np.random.default_rng(seed)
    coarse = rng.uniform(0.0, 1.0, (height // 16 + 2, width // 16 + 2))
    ys, xs = np.mgrid[0:height, 0:width] / 16.0
    i, j = ys.astype(np.int64), xs.astype(np.int64)
    fy, fx = ys - i, xs - j
    noise = (coarse[i, j] * (1 - fy) * (1 - fx) + coarse[i + 1, j] * fy * (1 - fx)
             + coarse[i, j + 1] * (1 - fy) * fx + coarse[i + 1, j + 1] * fy * fx)
    checker = ((ys * 16 // 24 + xs * 16 // 24) % 2).astype(np.float64)
    shade = 0.35 + 0.15 * noise + 0.08 * checker
    return np.stack([shade * 0.85, shade * 1.1, shade * 0.95], axis=-1).clip(0.0, 1.0)


def _face_joints(mesh: SkinnedMesh, joint_count: int) -> np.ndarray:
    """(F,) the joint that weighs most on each triangle (-1: unweighted)."""
    dense = np.zeros((mesh.vertex_count, joint_count))
    rows = np.repeat(np.arange(mesh.vertex_count), mesh.joint_indices.shape[1])
    np.add.at(dense, (rows, mesh.joint_indices.reshape(-1)), mesh.joint_weights.reshape(-1))
    per_face = dense[mesh.triangles].sum(axis=1)
    return np.where(per_face.max(axis=1) > 0, per_face.argmax(axis=1), -1)


def skinned_vertices(rig: Rig, mesh: SkinnedMesh, motion: Motion) -> tuple[np.ndarray, np.ndarray]:
    """(T,V,3) posed mesh and (T,J,4,4) joint world matrices of a motion."""
    pose = forward_kinematics(rig, motion)
    vertices = linear_blend_skinning(mesh.vertices, mesh.joint_indices, mesh.joint_weights,
                                     skin_matrices(rig.rest, pose))
    return vertices, pose


def render_motion(
    rig: Rig,
    mesh: SkinnedMesh,
    motion: Motion,
    camera: PinholeCamera,
    size: tuple[int, int],
    background: str = "textured",
    color: tuple[float, float, float] = BODY_COLOR,
    seed: int = 0,
) -> SyntheticVideo:
    """Render a motion of `rig` (its skinned `mesh` in the rig's armature space) through `camera`
    into (W,H) frames, with masks, joint keypoints and their visibility."""
    width, height = int(size[0]), int(size[1])
    vertices, pose = skinned_vertices(rig, mesh, motion)
    joints = pose[..., :3, 3]
    neighbours = np.eye(rig.joint_count, dtype=bool)
    has_parent = rig.parents >= 0
    neighbours[np.flatnonzero(has_parent), rig.parents[has_parent]] = True
    neighbours[rig.parents[has_parent], np.flatnonzero(has_parent)] = True
    face_joint = _face_joints(mesh, rig.joint_count)
    back = background_image((width, height), background, seed)
    tri = mesh.triangles
    camera_position = camera.position
    frames = np.empty((motion.frame_count, height, width, 3), np.uint8)
    masks = np.empty((motion.frame_count, height, width), bool)
    keypoints = camera.project(joints)
    visibility = np.zeros(joints.shape[:2], bool)
    tolerance = VISIBLE_DEPTH * rig.body_size
    for t in range(motion.frame_count):
        v = vertices[t]
        face, zbuf = rasterize_faces(camera.project(v), camera.depth(v), tri, (width, height))
        covered = face >= 0
        a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
        normals = np.cross(b - a, c - a)
        normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
        to_camera = camera_position - (a + b + c) / 3
        normals = np.where((np.sum(normals * to_camera, axis=1) >= 0)[:, None], normals, -normals)
        shade = 0.3 + 0.6 * np.clip(normals @ _KEY, 0, 1) + 0.2 * np.clip(normals @ _FILL, 0, 1)
        colors = np.clip(shade[:, None] * np.asarray(color), 0, 1)
        image = back.copy()
        image[covered] = colors[face[covered]]
        frames[t] = (image * 255 + 0.5).astype(np.uint8)
        masks[t] = covered
        # Visibility of the joints.
        px = np.floor(keypoints[t]).astype(np.int64)
        z = camera.depth(joints[t])
        inside = (px[:, 0] >= 0) & (px[:, 0] < width) & (px[:, 1] >= 0) & (px[:, 1] < height) & (z > 0)
        xi, yi = np.clip(px[:, 0], 0, width - 1), np.clip(px[:, 1], 0, height - 1)
        front = face[yi, xi]
        near_surface = z <= zbuf[yi, xi] + tolerance
        owner = np.where(front >= 0, face_joint[np.maximum(front, 0)], -1)
        own_skin = (owner >= 0) & neighbours[np.arange(rig.joint_count), np.maximum(owner, 0)]
        visibility[t] = inside & ((front < 0) | near_surface | own_skin)
    return SyntheticVideo(frames, masks, keypoints, visibility, joints, camera, float(motion.fps))
