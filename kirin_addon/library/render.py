"""A small numpy rasteriser: shaded images of skinned meshes without Blender.

Used for the library's reference images (image conditioning) and for quick looks at data. Flat
Lambert shading with a key and a fill light, a z-buffer, perspective camera. Not fast for big
meshes, but a few thousand triangles at 224×224 take tens of milliseconds.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np


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
    zbuf = np.full((size, size), np.inf)

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

    visible = np.all(depth[tri] > 1e-3, axis=1)
    # Small triangles (most of them at this size) are rasterised all at once; the rest one by one.
    small = _rasterize_small(_Projected(px, py, depth), tri, visible, zbuf, image, colors)
    for f in np.flatnonzero(visible & ~small):
        i, j, k = tri[f]
        xs = np.array([px[i], px[j], px[k]])
        ys = np.array([py[i], py[j], py[k]])
        x0, x1 = max(int(np.floor(xs.min())), 0), min(int(np.ceil(xs.max())), size - 1)
        y0, y1 = max(int(np.floor(ys.min())), 0), min(int(np.ceil(ys.max())), size - 1)
        if x0 > x1 or y0 > y1:
            continue
        area = (xs[1] - xs[0]) * (ys[2] - ys[0]) - (xs[2] - xs[0]) * (ys[1] - ys[0])
        if abs(area) < 1e-12:
            continue
        gx, gy = np.meshgrid(np.arange(x0, x1 + 1) + 0.5, np.arange(y0, y1 + 1) + 0.5)
        w0 = ((xs[1] - gx) * (ys[2] - gy) - (xs[2] - gx) * (ys[1] - gy)) / area
        w1 = ((xs[2] - gx) * (ys[0] - gy) - (xs[0] - gx) * (ys[2] - gy)) / area
        w2 = 1.0 - w0 - w1
        inside = (w0 >= 0) & (w1 >= 0) & (w2 >= 0)
        if not inside.any():
            continue
        z = w0 * depth[i] + w1 * depth[j] + w2 * depth[k]
        region = zbuf[y0:y1 + 1, x0:x1 + 1]
        closer = inside & (z < region)
        region[closer] = z[closer]
        image[y0:y1 + 1, x0:x1 + 1][closer] = colors[f]
    return (np.clip(image, 0, 1) * 255 + 0.5).astype(np.uint8)


@dataclass(frozen=True)
class _Projected:
    """Vertices on the image: pixel coordinates and depth in front of the camera."""

    px: np.ndarray  # (V,)
    py: np.ndarray  # (V,)
    depth: np.ndarray  # (V,)


def _rasterize_small(vertices: _Projected, tri: np.ndarray, visible: np.ndarray, zbuf: np.ndarray,
                     image: np.ndarray, colors: np.ndarray, box: int = 8) -> np.ndarray:
    """Z-buffer (into the square `zbuf` and `image`) the visible triangles whose pixel bounding box fits
    in box×box, vectorised; returns which triangles were drawn. Ties in depth go to the lower triangle
    index, as in the loop."""
    px, py, depth = vertices.px, vertices.py, vertices.depth
    size = zbuf.shape[0]
    xs, ys = px[tri], py[tri]  # (F,3)
    x0 = np.maximum(np.floor(xs.min(1)).astype(np.int64), 0)
    x1 = np.minimum(np.ceil(xs.max(1)).astype(np.int64), size - 1)
    y0 = np.maximum(np.floor(ys.min(1)).astype(np.int64), 0)
    y1 = np.minimum(np.ceil(ys.max(1)).astype(np.int64), size - 1)
    area = (xs[:, 1] - xs[:, 0]) * (ys[:, 2] - ys[:, 0]) - (xs[:, 2] - xs[:, 0]) * (ys[:, 1] - ys[:, 0])
    degenerate = (x0 > x1) | (y0 > y1) | (np.abs(area) < 1e-12)
    fits = (x1 - x0 < box) & (y1 - y0 < box)
    chosen = visible & fits & ~degenerate
    done = visible & (fits | degenerate)  # degenerate triangles draw nothing either way
    faces = np.flatnonzero(chosen)
    if faces.size == 0:
        return done
    offset = np.arange(box)
    gx = (x0[faces, None, None] + offset[None, None, :]) + 0.5  # (N,1,B)
    gy = (y0[faces, None, None] + offset[None, :, None]) + 0.5  # (N,B,1)
    fx, fy, a = xs[faces][:, :, None, None], ys[faces][:, :, None, None], area[faces][:, None, None]
    w0 = ((fx[:, 1] - gx) * (fy[:, 2] - gy) - (fx[:, 2] - gx) * (fy[:, 1] - gy)) / a
    w1 = ((fx[:, 2] - gx) * (fy[:, 0] - gy) - (fx[:, 0] - gx) * (fy[:, 2] - gy)) / a
    w2 = 1.0 - w0 - w1
    in_box = (gx - 0.5 <= x1[faces, None, None]) & (gy - 0.5 <= y1[faces, None, None])
    inside = (w0 >= 0) & (w1 >= 0) & (w2 >= 0) & in_box
    d = depth[tri[faces]]  # (N,3)
    z = w0 * d[:, 0, None, None] + w1 * d[:, 1, None, None] + w2 * d[:, 2, None, None]
    n, row, col = np.nonzero(inside)
    pixel = (y0[faces][n] + row) * size + (x0[faces][n] + col)
    depth_at = z[n, row, col]
    flat = zbuf.reshape(-1)
    # Nearest first, then the lower triangle index; the first candidate per pixel wins if it beats
    # what is already in the z-buffer.
    order = np.lexsort((faces[n], depth_at, pixel))
    pixel, depth_at, winner = pixel[order], depth_at[order], faces[n][order]
    first = np.ones(pixel.size, dtype=bool)
    first[1:] = pixel[1:] != pixel[:-1]
    pixel, depth_at, winner = pixel[first], depth_at[first], winner[first]
    closer = depth_at < flat[pixel]
    flat[pixel[closer]] = depth_at[closer]
    image.reshape(-1, 3)[pixel[closer]] = colors[winner[closer]]
    return done


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
