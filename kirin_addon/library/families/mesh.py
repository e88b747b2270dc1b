"""The creature's skinned mesh: closed tubes with elliptic sections and rounded caps around each part,
framed by parallel transport, skinned along their joints with smooth blends across each joint."""

from __future__ import annotations

import numpy as np

from ...core.skinning import SkinnedMesh
from .builder import Tube, X, Y

_CAP_ANGLES = np.radians([60.0, 30.0])  # rings of a rounded end cap, from the pole side


def _transport(centres: np.ndarray, tangents: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Rotation-minimising frame (double reflection): u vectors that follow the tube without twist."""
    t0 = tangents[0]
    u = up - np.dot(up, t0) * t0
    if np.linalg.norm(u) < 1e-6:
        u = np.cross(t0, X if abs(t0[0]) < 0.9 else Y)
    u = u / np.linalg.norm(u)
    c, t = centres.tolist(), tangents.tolist()
    out = [u.tolist()]
    r = out[0]
    for i in range(len(c) - 1):  # plain floats: much faster than numpy on 3-vectors
        v1 = [c[i + 1][k] - c[i][k] for k in range(3)]
        c1 = v1[0] * v1[0] + v1[1] * v1[1] + v1[2] * v1[2]
        if c1 > 1e-30:
            f = 2.0 * (v1[0] * r[0] + v1[1] * r[1] + v1[2] * r[2]) / c1
            r_l = [r[k] - f * v1[k] for k in range(3)]
            f = 2.0 * (v1[0] * t[i][0] + v1[1] * t[i][1] + v1[2] * t[i][2]) / c1
            v2 = [t[i + 1][k] - (t[i][k] - f * v1[k]) for k in range(3)]
            c2 = v2[0] * v2[0] + v2[1] * v2[1] + v2[2] * v2[2]
            if c2 > 1e-30:
                f = 2.0 * (v2[0] * r_l[0] + v2[1] * r_l[1] + v2[2] * r_l[2]) / c2
                r_l = [r_l[k] - f * v2[k] for k in range(3)]
            r = r_l
        out.append(r)
    u = np.array(out)
    u -= np.sum(u * tangents, axis=1, keepdims=True) * tangents
    return u / np.linalg.norm(u, axis=1, keepdims=True)


def _smooth(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _chain_weights(s: np.ndarray, cum: np.ndarray, joints: list[int], parent: int,
                   blend: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Each station to its segment's joint, shading half-way into the neighbour across a joint."""
    run_joint, run_start, run_end = [], [], []
    for k, j in enumerate(joints):
        if run_joint and run_joint[-1] == j:
            run_end[-1] = cum[k + 1]
        else:
            run_joint.append(j)
            run_start.append(cum[k])
            run_end.append(cum[k + 1])
    rj, r0, r1 = np.array(run_joint), np.array(run_start), np.array(run_end)
    r = np.clip(np.searchsorted(r0, s, side="right") - 1, 0, len(rj) - 1)
    t = (s - r0[r]) / np.maximum(r1[r] - r0[r], 1e-12)
    own = rj[r]
    prev = np.where(r > 0, rj[np.maximum(r - 1, 0)], parent)
    nxt = np.where(r < len(rj) - 1, rj[np.minimum(r + 1, len(rj) - 1)], -1)
    w_prev = np.where(prev >= 0, 0.5 * _smooth(1.0 - t / blend), 0.0)
    w_next = np.where(nxt >= 0, 0.5 * _smooth((t - (1.0 - blend)) / blend), 0.0)
    idx = np.stack([own, np.where(prev >= 0, prev, own), np.where(nxt >= 0, nxt, own), own], axis=1)
    wts = np.stack([1.0 - w_prev - w_next, w_prev, w_next, np.zeros_like(t)], axis=1)
    return idx, wts


def _nearest_weights(centres: np.ndarray, segments) -> tuple[np.ndarray, np.ndarray]:
    """Inverse-distance weights to the three nearest bone segments (for shapes that don't follow bones)."""
    dist = []
    for _, a, b in segments:
        ab = b - a
        t = np.clip((centres - a) @ ab / max(float(ab @ ab), 1e-30), 0.0, 1.0)
        dist.append(np.linalg.norm(centres - (a + t[:, None] * ab), axis=1))
    dist = np.stack(dist, axis=1)
    scale = 0.05 * max(float(np.linalg.norm(b - a)) for _, a, b in segments)
    w = 1.0 / (dist + scale) ** 3
    order = np.argsort(-w, axis=1)[:, :3]
    top = np.take_along_axis(w, order, axis=1)
    joints = np.array([j for j, _, _ in segments])[order]
    top /= top.sum(axis=1, keepdims=True)
    pad = np.zeros((len(centres), 4 - top.shape[1]))
    return (np.concatenate([joints, np.repeat(joints[:, :1], pad.shape[1], axis=1)], axis=1),
            np.concatenate([top, pad], axis=1))


def _part_mesh(part: Tube, size: float) -> tuple[np.ndarray, ...]:
    pts, n = part.points, len(part.points)
    seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    step = float(np.clip(1.2 * part.radii.mean(), size / 90.0, size / 22.0))
    counts = np.maximum(1, np.ceil(seg / step - 1e-9).astype(int))
    s = np.concatenate([cum[k] + seg[k] * np.arange(m) / m for k, m in enumerate(counts)] + [cum[-1:]])
    centres = np.stack([np.interp(s, cum, pts[:, d]) for d in range(3)], axis=1)
    ab = np.stack([np.interp(s, cum, part.radii[:, d]) for d in range(2)], axis=1)
    if part.profile is not None:
        xs, factors = part.profile
        x = s / cum[-1]
        ab = ab * np.stack([np.interp(x, xs, factors[:, 0]), np.interp(x, xs, factors[:, 1])], axis=1)
    shift = np.interp(s, cum, np.broadcast_to(np.asarray(part.shift, dtype=np.float64), (n,)))
    tangents = np.gradient(centres, s, axis=0)
    tangents /= np.linalg.norm(tangents, axis=1, keepdims=True)
    u = _transport(centres, tangents, part.up)
    v = np.cross(tangents, u)
    if part.nearest is not None:
        idx, wts = _nearest_weights(centres, part.nearest)
    else:
        idx, wts = _chain_weights(s, cum, part.joints, part.parent)
    centres = centres + (shift * ab[:, 0])[:, None] * u

    # End caps: two shrinking rings and a pole at each end, with that end's frame and weights.
    sin, cos = np.sin(_CAP_ANGLES), np.cos(_CAP_ANGLES)
    h0, h1 = part.caps[0] * ab[0].mean(), part.caps[1] * ab[-1].mean()
    ring_c = np.concatenate([centres[0] - np.outer(h0 * sin, tangents[0]), centres,
                             centres[-1] + np.outer(h1 * sin[::-1], tangents[-1])])
    ring_ab = np.concatenate([np.outer(cos, ab[0]), ab, np.outer(cos[::-1], ab[-1])])
    take = np.concatenate([[0, 0], np.arange(len(s)), [len(s) - 1] * 2])
    ring_u, ring_v = u[take], v[take]
    rings, sides = len(take), part.sides
    angle = part.phase + 2.0 * np.pi * np.arange(sides) / sides
    verts = (ring_c[:, None] + (ring_ab[:, 0:1] * np.cos(angle))[..., None] * ring_u[:, None]
             + (ring_ab[:, 1:2] * np.sin(angle))[..., None] * ring_v[:, None]).reshape(-1, 3)
    poles = np.stack([centres[0] - h0 * tangents[0], centres[-1] + h1 * tangents[-1]])
    verts = np.concatenate([verts, poles])

    # Quads between rings wind so normals point out (u, v, tangent is right-handed); poles fan.
    r = np.arange(rings - 1)[:, None] * sides
    k = np.arange(sides)[None, :]
    a, b = (r + k).ravel(), (r + (k + 1) % sides).ravel()
    last = (rings - 1) * sides
    k = k.ravel()
    start, end = rings * sides, rings * sides + 1
    tris = np.concatenate([
        np.stack([a, b, b + sides], axis=1), np.stack([a, b + sides, a + sides], axis=1),
        np.stack([np.full(sides, start), (k + 1) % sides, k], axis=1),
        np.stack([np.full(sides, end), last + k, last + (k + 1) % sides], axis=1)])
    vidx = np.concatenate([np.repeat(idx[take], sides, axis=0), idx[[0, -1]]])
    vwts = np.concatenate([np.repeat(wts[take], sides, axis=0), wts[[0, -1]]])
    return verts, tris, vidx, vwts


def skinned_mesh(parts: list[Tube], size: float, ground: bool) -> SkinnedMesh:
    verts, tris, idx, wts = [], [], [], []
    offset = 0
    for part in parts:
        v, t, i, w = _part_mesh(part, size)
        verts.append(v)
        tris.append(t + offset)
        idx.append(i)
        wts.append(w)
        offset += len(v)
    vertices = np.concatenate(verts)
    if ground:  # flatten soles and bellies on the floor instead of sinking through it
        vertices[:, 2] = np.maximum(vertices[:, 2], 0.0)
    return SkinnedMesh(vertices, np.concatenate(tris), np.concatenate(idx), np.concatenate(wts))
