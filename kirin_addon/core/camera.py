"""A pinhole camera in OpenCV convention (numpy only), shared by video extraction and rendering.

`x_cam = rotation · x + translation`; the camera looks down +Z of its own frame, x to the right of
the image, y down. A point projects to the pixel `center + focal · (x_cam, y_cam) / z_cam`.

Pixel coordinates are continuous with the origin at the top-left *corner* of the image: pixel
(i, j) covers [i, i+1) × [j, j+1) and its centre is (i + 0.5, j + 0.5). This is the convention of
`render.rasterize`, whose principal point is (size/2, size/2): a vertex projected to (u, v) lands
in pixel (floor(u), floor(v)). The evidence of a driving video (`points`, pixels, x right, y down)
uses the same convention.

`render.Camera` (position, target, vertical field of view, up; looks down −Z, y up) converts with
`PinholeCamera.from_render_camera`; its field of view spans the larger side of the image (what
`rasterize` does for its square images and Blender's "Auto" sensor fit does for any aspect).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The OpenCV camera frame from render.Camera's (right, up, backward) rows.
_FLIP = np.diag([1.0, -1.0, -1.0])


@dataclass
class PinholeCamera:
    focal: float  # pixels
    center: np.ndarray  # (2,) principal point, pixels
    rotation: np.ndarray  # (3,3) world→camera
    translation: np.ndarray  # (3,) world→camera (x_cam = R·x + t; camera looks down +Z, x right, y down)

    def __post_init__(self) -> None:
        self.focal = float(self.focal)
        self.center = np.asarray(self.center, dtype=np.float64).reshape(2)
        self.rotation = np.asarray(self.rotation, dtype=np.float64).reshape(3, 3)
        self.translation = np.asarray(self.translation, dtype=np.float64).reshape(3)
        if not (np.isfinite(self.focal) and self.focal > 0):
            raise ValueError(f"The camera's focal length must be positive, got {self.focal}.")
        if not (np.all(np.isfinite(self.rotation)) and np.all(np.isfinite(self.translation))
                and np.all(np.isfinite(self.center))):
            raise ValueError("The camera contains NaN or infinite values.")
        if not np.allclose(self.rotation @ self.rotation.T, np.eye(3), atol=1e-6) \
                or np.linalg.det(self.rotation) < 0:
            raise ValueError("The camera rotation must be a proper rotation matrix.")

    # ----------------------------------------------------------------- geometry
    @property
    def position(self) -> np.ndarray:
        """(3,) the camera centre in world coordinates."""
        return -self.rotation.T @ self.translation

    @property
    def forward(self) -> np.ndarray:
        """(3,) the viewing direction in world coordinates."""
        return self.rotation[2].copy()

    def to_camera(self, points: np.ndarray) -> np.ndarray:
        """(...,3) world points in the camera frame."""
        return np.asarray(points, dtype=np.float64) @ self.rotation.T + self.translation

    def depth(self, points: np.ndarray) -> np.ndarray:
        """(...) distance of world points along the viewing direction (negative behind the camera)."""
        return self.to_camera(points)[..., 2]

    def project(self, points: np.ndarray) -> np.ndarray:
        """(...,3) world points → (...,2) pixels. Points on the camera plane give inf; points
        behind the camera project mirrored, as the algebra says: check `depth` where it matters."""
        cam = self.to_camera(points)
        z = cam[..., 2:3]
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.center + self.focal * cam[..., :2] / z

    def backproject(self, pixels: np.ndarray, depth: np.ndarray | float) -> np.ndarray:
        """(...,2) pixels at the given depth(s) (...) → (...,3) world points."""
        pixels = np.asarray(pixels, dtype=np.float64)
        depth = np.asarray(depth, dtype=np.float64)[..., None]
        ray = np.concatenate([(pixels - self.center) / self.focal, np.ones(pixels.shape[:-1] + (1,))], -1)
        return (ray * depth - self.translation) @ self.rotation

    def transformed(self, matrix: np.ndarray) -> PinholeCamera:
        """The camera that sees `matrix · x` (a similarity: rotation × uniform scale + translation)
        exactly as this camera sees `x`: same pixels, depths multiplied by the scale."""
        matrix = np.asarray(matrix, dtype=np.float64)
        linear = matrix[:3, :3]
        scale = float(np.cbrt(np.linalg.det(linear)))
        rotation = linear / scale
        new_rotation = self.rotation @ rotation.T
        # x' = s R x + m  ⇒  x = Rᵀ (x' − m) / s;  s·x_cam = R_c Rᵀ x' + (s t − R_c Rᵀ m)
        new_translation = scale * self.translation - new_rotation @ matrix[:3, 3]
        return PinholeCamera(self.focal, self.center.copy(), new_rotation, new_translation)

    # ----------------------------------------------------------------- constructors
    @classmethod
    def look_at(cls, position, target, up=(0.0, 0.0, 1.0), focal: float | None = None,
                center=None) -> PinholeCamera:
        """A camera at `position` looking at `target`, with `up` pointing up in the image
        (`focal` in pixels and `center` (2,) in pixels are required)."""
        if focal is None or center is None:
            raise ValueError("PinholeCamera.look_at needs a focal length and a principal point (pixels).")
        position = np.asarray(position, dtype=np.float64).reshape(3)
        forward = np.asarray(target, dtype=np.float64).reshape(3) - position
        norm = np.linalg.norm(forward)
        if norm <= 1e-12:
            raise ValueError("The camera's position and target coincide.")
        forward = forward / norm
        right = np.cross(forward, np.asarray(up, dtype=np.float64))
        if np.linalg.norm(right) <= 1e-9:
            raise ValueError("The camera's up vector is parallel to its viewing direction.")
        right /= np.linalg.norm(right)
        down = np.cross(forward, right)
        rotation = np.stack([right, down, forward])
        return cls(focal, center, rotation, -rotation @ position)

    @classmethod
    def from_render_camera(cls, camera, size: int | tuple[int, int]) -> PinholeCamera:
        """The same camera as `render.Camera` for an image of `size` pixels (int: square, or
        (W, H)): focal from the field of view over the larger side, principal point at the
        image centre."""
        width, height = (int(size), int(size)) if np.ndim(size) == 0 else (int(size[0]), int(size[1]))
        focal = 0.5 * max(width, height) / np.tan(np.radians(camera.fov_deg) / 2)
        rotation = _FLIP @ camera.view()
        position = np.asarray(camera.position, dtype=np.float64)
        return cls(focal, np.array([width / 2.0, height / 2.0]), rotation, -rotation @ position)
