"""A small numpy rasteriser: shaded images of skinned meshes without Blender.

Used for the library's reference images (image conditioning) and for quick looks at data. Flat
Lambert shading with a key and a fill light, a perspective camera; the z-buffer is core/raster.py's.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.raster import rasterize_faces


@dataclass(frozen=True)
class Camera:
    position: np.ndarray  # (3,)
    target: np.ndarray  # (3,)
    fov_deg: float = 35.0
    up: tuple[float, float, float] = (0.0, 0.0, 1.0)

    def view(self) -> np.ndarray:
        """(3,3) rows = camera right, up, backward (the camera looks down −Z)."""
        back = self.position - self.target
        back = back / np.linalg.norm(back)
        right = np.cross(np.asarray(self.up, dtype=np.float64), back)
        right /= np.linalg.norm(right)
        return np.stack([right, np.cross(back, right), back])


def three_quarter_camera(points: np.ndarray, rng: np.random.Generator, fov_deg: float = 35.0) -> Camera:
    """A random three-quarter view of points in the canonical frame (facing −Y): the camera sits
    in front and to one side, a little above, far enough to frame everything."""
    lo, hi = points.min(0), points.max(0)
    centre = (lo + hi) / 2
    radius = float(np.linalg.norm(hi - lo)) / 2 or 1.0
    azimuth = np.radians(rng.uniform(25, 65) * rng.choice([-1.0, 1.0]))
    elevation = np.radians(rng.uniform(10, 30))
    direction = np.array([np.sin(azimuth) * np.cos(elevation), -np.cos(azimuth) * np.cos(elevation),
                          np.sin(elevation)])
    distance = radius / np.tan(np.radians(fov_deg) / 2) * 1.15
    return Camera(centre + direction * distance, centre, fov_deg)


def rasterize(vertices: np.ndarray, triangles: np.ndarray, camera: Camera, size: int = 224,
              color: tuple[float, float, float] = (0.75, 0.62, 0.48),
              background: tuple[float, float, float] = (0.16, 0.17, 0.2)) -> np.ndarray:
    """(size, size, 3) uint8 image of the mesh."""
    view = camera.view()
    cam = (np.asarray(vertices, dtype=np.float64) - camera.position) @ view.T
    depth = -cam[:, 2]
    focal = 0.5 * size / np.tan(np.radians(camera.fov_deg) / 2)
    safe = np.maximum(depth, 1e-6)
    px = size / 2 + focal * cam[:, 0] / safe
    py = size / 2 - focal * cam[:, 1] / safe
    image = np.empty((size, size, 3))
    image[:] = background

    tri = np.asarray(triangles, dtype=np.int64)
    a, b, c = (np.asarray(vertices)[tri[:, k]] for k in range(3))
    normals = np.cross(b - a, c - a)
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    to_camera = camera.position - (a + b + c) / 3
    facing = np.sum(normals * to_camera, axis=1) >= 0
    normals = np.where(facing[:, None], normals, -normals)  # two-sided: meshes need not be closed
    key = np.array([0.4, -0.6, 0.7]) / np.linalg.norm([0.4, -0.6, 0.7])
    fill = np.array([-0.6, 0.3, 0.3]) / np.linalg.norm([-0.6, 0.3, 0.3])
    shade = 0.25 + 0.65 * np.clip(normals @ key, 0, 1) + 0.2 * np.clip(normals @ fill, 0, 1)
    colors = np.clip(shade[:, None] * np.asarray(color), 0, 1)

    # Triangles behind 1e-3 are skipped; depth interpolated on the screen, as these pictures always were.
    pixels = np.stack([px, py], axis=1)
    face, _ = rasterize_faces(pixels, depth, tri, (size, size), near=1e-3, perspective=False)
    covered = face >= 0
    image[covered] = colors[face[covered]]
    return (np.clip(image, 0, 1) * 255 + 0.5).astype(np.uint8)


def write_png(path: str | Path, image: np.ndarray) -> None:
    """Write an (H,W,3) uint8 image as PNG with the standard library only (`kirin data preview` writes
    its frames inside Blender, where Pillow is not available)."""
    image = np.ascontiguousarray(image, dtype=np.uint8)
    height, width, _ = image.shape
    raw = b"".join(b"\x00" + image[row].tobytes() for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")
    Path(path).write_bytes(png)


def read_png(path: str | Path) -> np.ndarray:
    """Read back an 8-bit RGB PNG written by write_png (filter type 0 rows only).

    By hand with the standard library because it runs inside Blender too (`kirin data preview` reads
    its frames' size there), where only numpy is sure to be there; elsewhere use Pillow."""
    data = Path(path).read_bytes()
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length = struct.unpack(">I", data[pos:pos + 4])[0]
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    rows = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + width * 3)
    return rows[:, 1:].reshape(height, width, 3).copy()
