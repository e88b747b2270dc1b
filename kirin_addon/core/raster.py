"""Triangle rasterisation in numpy: which triangle is in front at every pixel, and coverage masks.

Pixel (i, j) covers [i, i+1) × [j, j+1); its centre is inside a triangle when its barycentric weights
are all ≥ 0. `rasterize_faces` groups triangles by the size of their pixel bounding box and
rasterises a group at a time (vectorised, any size), ties going to the lower triangle index;
`coverage` is only the mask, by scanlines (work grows with rows, not area), for many images at once
and optionally supersampled. Shared by the library's pictures (library/render.py) and the synthetic
videos (video/synth.py).
"""

from __future__ import annotations

import numpy as np

_CHUNK = 1 << 22  # candidate pixels rasterised at once


def _fragments(xy: np.ndarray, triangles: np.ndarray, width: int, height: int, with_weights: bool,
               rows: np.ndarray | None = None):
    """Yield (face, pixel, w0, w1, w2) for every pixel centre inside a triangle (pixel = y·W + x),
    group by group of similar bounding-box sizes; `rows` (F,2) limits each triangle to a band of
    rows (first, last), within the image."""
    tri = np.asarray(triangles, np.int64)
    xs, ys = xy[tri, 0], xy[tri, 1]  # (F,3)
    finite = np.all(np.isfinite(xs) & np.isfinite(ys), axis=1)
    xs, ys = np.where(finite[:, None], xs, -1.0), np.where(finite[:, None], ys, -1.0)
    x0 = np.maximum(np.ceil(xs.min(1) - 0.5), 0).astype(np.int64)
    x1 = np.minimum(np.floor(xs.max(1) - 0.5), width - 1).astype(np.int64)
    first, last = (0, height - 1) if rows is None else (rows[:, 0], rows[:, 1])
    y0 = np.maximum(np.ceil(ys.min(1) - 0.5), first).astype(np.int64)
    y1 = np.minimum(np.floor(ys.max(1) - 0.5), last).astype(np.int64)
    area = (xs[:, 1] - xs[:, 0]) * (ys[:, 2] - ys[:, 0]) - (xs[:, 2] - xs[:, 0]) * (ys[:, 1] - ys[:, 0])
    keep = finite & (x0 <= x1) & (y0 <= y1) & (np.abs(area) > 1e-12)
    extent = np.maximum(x1 - x0, y1 - y0) + 1
    box = np.where(keep, 1 << np.ceil(np.log2(np.maximum(extent, 1))).astype(np.int64), 0)
    for b in np.unique(box[box > 0]):
        faces = np.flatnonzero(box == b)
        per_chunk = max(1, _CHUNK // int(b * b))
        offset = np.arange(b)
        for start in range(0, faces.size, per_chunk):
            f = faces[start:start + per_chunk]
            gx = (x0[f, None, None] + offset[None, None, :]).astype(np.float64) + 0.5  # (N,1,B)
            gy = (y0[f, None, None] + offset[None, :, None]).astype(np.float64) + 0.5  # (N,B,1)
            fx, fy = xs[f][:, :, None, None], ys[f][:, :, None, None]
            a = area[f][:, None, None]
            w0 = ((fx[:, 1] - gx) * (fy[:, 2] - gy) - (fx[:, 2] - gx) * (fy[:, 1] - gy)) / a
            w1 = ((fx[:, 2] - gx) * (fy[:, 0] - gy) - (fx[:, 0] - gx) * (fy[:, 2] - gy)) / a
            w2 = 1.0 - w0 - w1
            inside = (w0 >= 0) & (w1 >= 0) & (w2 >= 0)
            inside &= (gx - 0.5 <= x1[f, None, None]) & (gy - 0.5 <= y1[f, None, None])
            n, row, col = np.nonzero(inside)
            pixel = (y0[f][n] + row) * width + (x0[f][n] + col)
            if with_weights:
                yield f[n], pixel, w0[n, row, col], w1[n, row, col], w2[n, row, col]
            else:
                yield f[n], pixel, None, None, None


def rasterize_faces(xy: np.ndarray, depth: np.ndarray, triangles: np.ndarray,
                    size: tuple[int, int], near: float = 1e-6,
                    perspective: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Z-buffer triangles with vertices at pixels `xy` (V,2) and camera depths `depth` (V,):
    (face (H,W) int64, -1 where empty; depth (H,W), inf where empty). Triangles with a vertex
    behind `near` are skipped; ties go to the lower triangle index. Depth is interpolated
    perspective-correctly (1/z), or linearly on the screen with `perspective=False` (what the
    library's pictures were made with)."""
    width, height = size
    tri = np.asarray(triangles, np.int64)
    depth = np.asarray(depth, np.float64)
    front = np.all(depth[tri] > near, axis=1)
    faces, pixels, depths = [], [], []
    for f, pixel, w0, w1, w2 in _fragments(np.asarray(xy, np.float64), tri[front], width, height, True):
        d = depth[tri[front][f]]
        if perspective:
            z = 1.0 / (w0 / d[:, 0] + w1 / d[:, 1] + w2 / d[:, 2])
        else:
            z = w0 * d[:, 0] + w1 * d[:, 1] + w2 * d[:, 2]
        faces.append(np.flatnonzero(front)[f])
        pixels.append(pixel)
        depths.append(z)
    face_buffer = np.full(width * height, -1, np.int64)
    depth_buffer = np.full(width * height, np.inf)
    if faces:
        face, pixel, z = np.concatenate(faces), np.concatenate(pixels), np.concatenate(depths)
        order = np.lexsort((face, z, pixel))
        face, pixel, z = face[order], pixel[order], z[order]
        first = np.ones(pixel.size, dtype=bool)
        first[1:] = pixel[1:] != pixel[:-1]
        face_buffer[pixel[first]] = face[first]
        depth_buffer[pixel[first]] = z[first]
    return face_buffer.reshape(height, width), depth_buffer.reshape(height, width)


def _spans(xy: np.ndarray, triangles: np.ndarray, width: int, height: int, rows: np.ndarray) -> np.ndarray:
    """(H,W) bool coverage by scanlines: each triangle's span on every pixel row it crosses (pixel
    centres from the left crossing to the right one), filled through a running sum. Work grows with
    rows × triangles, not with area. `rows` (F,2): the first and last row each triangle may touch."""
    tri = np.asarray(triangles, np.int64)
    xs, ys = xy[tri, 0], xy[tri, 1]  # (F,3)
    finite = np.all(np.isfinite(xs) & np.isfinite(ys), axis=1)
    r0 = np.maximum(np.ceil(np.where(finite, ys.min(1), np.inf) - 0.5), rows[:, 0])
    r1 = np.minimum(np.floor(np.where(finite, ys.max(1), -np.inf) - 0.5), rows[:, 1])
    keep = finite & (r0 <= r1)
    r0, r1 = np.where(keep, r0, 0).astype(np.int64), np.where(keep, r1, -1).astype(np.int64)
    count = r1 - r0 + 1
    box = np.where(keep, 1 << np.ceil(np.log2(np.maximum(count, 1))).astype(np.int64), 0)
    stride = width + 1  # a span's end marker never spills into the next row
    starts, ends = [], []
    for b in np.unique(box[box > 0]):
        faces = np.flatnonzero(box == b)
        per_chunk = max(1, _CHUNK // int(b))
        for start in range(0, faces.size, per_chunk):
            f = faces[start:start + per_chunk]
            row = r0[f, None] + np.arange(b)[None]  # (N,B)
            yc = row + 0.5
            left = np.full(row.shape, np.inf)
            right = np.full(row.shape, -np.inf)
            for k in range(3):
                xa, ya = xs[f, k, None], ys[f, k, None]
                xb, yb = xs[f, (k + 1) % 3, None], ys[f, (k + 1) % 3, None]
                crosses = ((ya <= yc) & (yc < yb)) | ((yb <= yc) & (yc < ya))
                with np.errstate(divide="ignore", invalid="ignore"):
                    x = xa + (yc - ya) * (xb - xa) / (yb - ya)
                left = np.where(crosses, np.minimum(left, x), left)
                right = np.where(crosses, np.maximum(right, x), right)
            c0 = np.maximum(np.ceil(left - 0.5), 0)
            c1 = np.minimum(np.floor(right - 0.5), width - 1)
            ok = (row <= r1[f, None]) & (c0 <= c1)
            base = row[ok] * stride
            starts.append(base + c0[ok].astype(np.int64))
            ends.append(base + c1[ok].astype(np.int64) + 1)
    size = height * stride + 1
    diff = np.zeros(size, np.int32)
    if starts:
        diff += np.bincount(np.concatenate(starts), minlength=size).astype(np.int32)
        diff -= np.bincount(np.concatenate(ends), minlength=size).astype(np.int32)
    return np.cumsum(diff[:-1].reshape(height, stride), axis=1)[:, :width] > 0


def coverage(xy: np.ndarray, triangles: np.ndarray, size: tuple[int, int],
             supersample: int = 1) -> np.ndarray:
    """(H,W) mask of the pixels any triangle covers: bool, or float32 in [0,1] (the share of
    covered sub-pixels) when `supersample` > 1. `xy` (N,V,2) renders N images at once (N,H,W) of
    the same triangles (much faster than one by one); parts outside an image are cut off."""
    xy = np.asarray(xy, np.float64)
    single = xy.ndim == 2
    xy = xy[None] if single else xy
    count, vertices = xy.shape[:2]
    width, height = size
    s = int(supersample)
    # The images are stacked one under the other, each triangle kept to its own image's rows.
    scaled = (xy * s).copy()
    scaled[..., 1] += (np.arange(count) * height * s)[:, None]
    faces = len(triangles)
    tri = np.asarray(triangles, np.int64)[None] + (np.arange(count) * vertices)[:, None, None]
    first = np.repeat(np.arange(count) * height * s, faces)
    rows = np.stack([first, first + height * s - 1], axis=1)
    mask = _spans(scaled.reshape(-1, 2), tri.reshape(-1, 3), width * s, height * s * count, rows)
    mask = mask.reshape(count, height * s, width * s)
    if s > 1:
        mask = mask.reshape(count, height, s, width, s).mean(axis=(2, 4), dtype=np.float32)
    return mask[0] if single else mask
