"""Rotations, batched over leading axes (numpy only).

Conventions: quaternions are (w, x, y, z) and act on column vectors; matrices are 3x3 or 4x4,
`M @ v`. A 6D rotation is the first two *columns* of the matrix, concatenated (Zhou et al.).
Every function accepts arrays of any leading shape.
"""

from __future__ import annotations

from itertools import permutations, product

import numpy as np

_EPS = 1e-12

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def quat_identity(shape: tuple[int, ...] = ()) -> np.ndarray:
    q = np.zeros((*shape, 4))
    q[..., 0] = 1.0
    return q


def quat_normalize(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return q / np.maximum(np.linalg.norm(q, axis=-1, keepdims=True), _EPS)


def quat_conjugate(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return q * np.array([1.0, -1.0, -1.0, -1.0])


quat_inverse = quat_conjugate  # unit quaternions only


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors v (...,3) by unit quaternions q (...,4)."""
    q = np.asarray(q, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    vx, vy, vz = v[..., 0], v[..., 1], v[..., 2]
    # v + 2w(u×v) + 2u×(u×v), written out: np.cross is slow on small batched arrays.
    tx, ty, tz = 2.0 * (y * vz - z * vy), 2.0 * (z * vx - x * vz), 2.0 * (x * vy - y * vx)
    return np.stack([vx + w * tx + (y * tz - z * ty),
                     vy + w * ty + (z * tx - x * tz),
                     vz + w * tz + (x * ty - y * tx)], axis=-1)


def quat_from_axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    axis = np.asarray(axis, dtype=np.float64)
    axis = axis / np.maximum(np.linalg.norm(axis, axis=-1, keepdims=True), _EPS)
    half = 0.5 * np.asarray(angle, dtype=np.float64)[..., None]
    return np.concatenate([np.cos(half), np.sin(half) * axis], axis=-1)


def quat_about(axis: np.ndarray, angle: np.ndarray | float) -> np.ndarray:
    """Quaternions (…,4) for rotations by `angle` (…) about one fixed axis (3,)."""
    angle = np.asarray(angle, dtype=np.float64)
    return quat_from_axis_angle(np.broadcast_to(np.asarray(axis, dtype=np.float64), (*angle.shape, 3)), angle)


def quat_to_axis_angle(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = quat_positive_w(quat_normalize(q))
    s = np.linalg.norm(q[..., 1:], axis=-1)
    angle = 2.0 * np.arctan2(s, q[..., 0])
    axis = np.where(s[..., None] > _EPS, q[..., 1:] / np.maximum(s, _EPS)[..., None], [1.0, 0.0, 0.0])
    return axis, angle


def quat_angle(q: np.ndarray) -> np.ndarray:
    """Rotation angle in [0, pi] of unit quaternions."""
    q = np.asarray(q, dtype=np.float64)
    return 2.0 * np.arctan2(np.linalg.norm(q[..., 1:], axis=-1), np.abs(q[..., 0]))


def quat_positive_w(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return np.where(q[..., :1] < 0.0, -q, q)


def quat_continuity(q: np.ndarray, axis: int = 0) -> np.ndarray:
    """Flip signs along `axis` (time) so consecutive quaternions lie in the same hemisphere."""
    q = np.moveaxis(np.array(q, dtype=np.float64), axis, 0)
    if q.shape[0] > 1:
        dots = np.sum(q[1:] * q[:-1], axis=-1)
        flips = np.cumsum(dots < 0.0, axis=0) % 2
        q[1:] = np.where(flips[..., None] == 1, -q[1:], q[1:])
    return np.moveaxis(q, 0, axis)


def quat_slerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)[..., None]
    dot = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(dot < 0.0, -b, b)
    dot = np.clip(np.abs(dot), -1.0, 1.0)
    theta = np.arccos(dot)
    sin_theta = np.sin(theta)
    small = sin_theta < 1e-6
    safe = np.where(small, 1.0, sin_theta)
    wa = np.where(small, 1.0 - t, np.sin((1.0 - t) * theta) / safe)
    wb = np.where(small, t, np.sin(t * theta) / safe)
    return quat_normalize(wa * a + wb * b)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    q = quat_normalize(q)
    w, x, y, z = np.moveaxis(q, -1, 0)
    m = np.stack(
        [
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ],
        axis=-1,
    )
    return m.reshape(*q.shape[:-1], 3, 3)


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Rotation matrices (...,3,3) to unit quaternions with w >= 0 (robust branch per element)."""
    m = np.asarray(m, dtype=np.float64)[..., :3, :3]
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    # Four candidate solutions; choose the numerically largest diagonal term for each element.
    cands = np.stack(
        [
            np.stack([1 + m00 + m11 + m22, m21 - m12, m02 - m20, m10 - m01], axis=-1),
            np.stack([m21 - m12, 1 + m00 - m11 - m22, m01 + m10, m02 + m20], axis=-1),
            np.stack([m02 - m20, m01 + m10, 1 - m00 + m11 - m22, m12 + m21], axis=-1),
            np.stack([m10 - m01, m02 + m20, m12 + m21, 1 - m00 - m11 + m22], axis=-1),
        ],
        axis=-2,
    )
    diag = np.stack([m00 + m11 + m22, m00, m11, m22], axis=-1)
    best = np.argmax(diag, axis=-1)
    q = np.take_along_axis(cands, best[..., None, None], axis=-2)[..., 0, :]
    return quat_positive_w(quat_normalize(q))


def matrix_to_6d(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    return np.concatenate([m[..., :3, 0], m[..., :3, 1]], axis=-1)


def sixd_to_matrix(d6: np.ndarray) -> np.ndarray:
    """Gram-Schmidt on the two stored columns; any 6-vector gives a proper rotation."""
    d6 = np.asarray(d6, dtype=np.float64)
    a1, a2 = d6[..., :3], d6[..., 3:6]
    b1 = a1 / np.maximum(np.linalg.norm(a1, axis=-1, keepdims=True), _EPS)
    a2 = a2 - np.sum(b1 * a2, axis=-1, keepdims=True) * b1
    b2 = a2 / np.maximum(np.linalg.norm(a2, axis=-1, keepdims=True), _EPS)
    b3 = np.cross(b1, b2)
    return np.stack([b1, b2, b3], axis=-1)


def quat_to_6d(q: np.ndarray) -> np.ndarray:
    return matrix_to_6d(quat_to_matrix(q))


def sixd_to_quat(d6: np.ndarray) -> np.ndarray:
    return matrix_to_quat(sixd_to_matrix(d6))


def _axis_matrix(axis: str, angle: np.ndarray) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    one, zero = np.ones_like(angle), np.zeros_like(angle)
    rows = {
        "X": [one, zero, zero, zero, c, -s, zero, s, c],
        "Y": [c, zero, s, zero, one, zero, -s, zero, c],
        "Z": [c, -s, zero, s, c, zero, zero, zero, one],
    }[axis]
    return np.stack(rows, axis=-1).reshape(*np.shape(angle), 3, 3)


def euler_to_matrix(angles: np.ndarray, order: str = "XYZ") -> np.ndarray:
    """Blender convention: order 'XYZ' applies X first, i.e. M = Rz @ Ry @ Rx."""
    angles = np.asarray(angles, dtype=np.float64)
    m = np.broadcast_to(np.eye(3), (*angles.shape[:-1], 3, 3))
    for axis in order:
        m = _axis_matrix(axis, angles[..., "XYZ".index(axis)]) @ m
    return m


def matrix_to_euler(m: np.ndarray, order: str = "XYZ") -> np.ndarray:
    """Inverse of euler_to_matrix; angles returned in XYZ slots, as Blender stores them."""
    m = np.asarray(m, dtype=np.float64)[..., :3, :3]
    i, j, k = ("XYZ".index(a) for a in order)
    # M = R_k R_j R_i; parity of (i, j, k) decides the signs.
    sign = 1.0 if (j - i) % 3 == 1 else -1.0
    sj = np.clip(-sign * m[..., k, i], -1.0, 1.0)
    aj = np.arcsin(sj)
    cj = np.cos(aj)
    gimbal = cj < 1e-9
    ai = np.arctan2(sign * m[..., k, j], m[..., k, k])
    ak = np.arctan2(sign * m[..., j, i], m[..., i, i])
    ai_g = np.arctan2(-sign * m[..., j, k], m[..., j, j])
    ai = np.where(gimbal, ai_g, ai)
    ak = np.where(gimbal, 0.0, ak)
    out = np.empty((*m.shape[:-2], 3))
    out[..., i], out[..., j], out[..., k] = ai, aj, ak
    return out


def euler_continuity(angles: np.ndarray, axis: int = 0) -> np.ndarray:
    """Unwrap each Euler channel along time so keyframes never jump by 2*pi."""
    return np.unwrap(np.asarray(angles, dtype=np.float64), axis=axis)


def rotation_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shortest-arc quaternion taking direction a onto direction b (batched)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a = a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), _EPS)
    b = b / np.maximum(np.linalg.norm(b, axis=-1, keepdims=True), _EPS)
    dot = np.sum(a * b, axis=-1, keepdims=True)
    cross = np.cross(a, b)
    q = np.concatenate([1.0 + dot, cross], axis=-1)
    # Opposite directions: rotate by pi about any axis perpendicular to a.
    anti = (1.0 + dot[..., 0]) < 1e-9
    if np.any(anti):
        helper = np.where(np.abs(a[..., :1]) < 0.9, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
        perp = np.cross(a, helper)
        perp /= np.maximum(np.linalg.norm(perp, axis=-1, keepdims=True), _EPS)
        q = np.where(anti[..., None], np.concatenate([np.zeros_like(dot), perp], axis=-1), q)
    return quat_normalize(q)



def rotation_angle(a: np.ndarray, b: np.ndarray) -> float:
    """Angle (radians) of the rotation taking rotation matrix a (3,3) to b."""
    return float(np.arccos(np.clip(0.5 * (np.trace(a.T @ b) - 1.0), -1.0, 1.0)))

def compose(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """4x4 transforms from rotation matrices (...,3,3) and translations (...,3)."""
    rotation = np.asarray(rotation, dtype=np.float64)
    out = np.zeros((*rotation.shape[:-2], 4, 4))
    out[..., :3, :3] = rotation
    out[..., :3, 3] = translation
    out[..., 3, 3] = 1.0
    return out


def invert_rigid(m: np.ndarray) -> np.ndarray:
    """Inverse of rigid 4x4 transforms (rotation + translation)."""
    m = np.asarray(m, dtype=np.float64)
    r_t = np.swapaxes(m[..., :3, :3], -1, -2)
    return compose(r_t, -np.einsum("...ij,...j->...i", r_t, m[..., :3, 3]))


def axis_rotations() -> list[np.ndarray]:
    """The 24 proper rotations that map coordinate axes onto coordinate axes (signed permutations
    with determinant +1): every way an axis-aligned rig can be turned."""
    out = []
    for perm in permutations(range(3)):
        for signs in product((1.0, -1.0), repeat=3):
            matrix = np.zeros((3, 3))
            matrix[np.arange(3), perm] = signs
            if np.linalg.det(matrix) > 0:
                out.append(matrix)
    return out


def orthonormalize(m: np.ndarray) -> np.ndarray:
    """Nearest proper rotation to each 3x3 (strips scale/shear from imported matrices)."""
    u, _, vt = np.linalg.svd(np.asarray(m, dtype=np.float64)[..., :3, :3])
    r = u @ vt
    det = np.linalg.det(r)
    u[..., :, 2] *= np.where(det < 0, -1.0, 1.0)[..., None]
    return u @ vt


def rotvec_to_matrix(rotvec: np.ndarray) -> np.ndarray:
    """Rotation vectors (…,3) (axis × angle) as matrices (…,3,3), Rodrigues' formula."""
    rotvec = np.asarray(rotvec, dtype=np.float64)
    angle = np.linalg.norm(rotvec, axis=-1)[..., None, None]
    x, y, z = rotvec[..., 0], rotvec[..., 1], rotvec[..., 2]
    zero = np.zeros_like(x)
    skew = np.stack([zero, -z, y, z, zero, -x, -y, x, zero], axis=-1).reshape(rotvec.shape[:-1] + (3, 3))
    small = angle < 1e-8
    safe = np.where(small, 1.0, angle)
    a = np.where(small, 1.0, np.sin(safe) / safe)
    b = np.where(small, 0.5, (1.0 - np.cos(safe)) / safe**2)
    return np.eye(3) + a * skew + b * (skew @ skew)


def swing_twist_angles(rotation: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Swing and signed twist angles (radians) of rotations (…,3,3) about unit `axis` (…,3): the
    twist turns about the axis, the swing tilts it (swing · twist = rotation)."""
    axis = np.asarray(axis, dtype=np.float64)
    twist = twist_angle(matrix_to_quat(rotation), axis)
    turned = np.einsum("...ab,...b->...a", rotation, axis)
    swing = np.arccos(np.clip(np.sum(turned * axis, axis=-1), -1.0, 1.0))
    return swing, twist


def twist_angle(q: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """Signed twist angle (radians, in [−π, π)) of unit quaternions (…,4) about unit `axis` (…,3)."""
    along = np.sum(q[..., 1:] * axis, axis=-1)
    twist = 2.0 * np.arctan2(along, q[..., 0])
    return (twist + np.pi) % (2.0 * np.pi) - np.pi


def yaw_matrix(yaw: np.ndarray) -> np.ndarray:
    """Turns about +Z by `yaw` (…) radians as (…,3,3) float64 matrices."""
    c, s = np.cos(yaw), np.sin(yaw)
    out = np.zeros(np.shape(yaw) + (3, 3))
    out[..., 0, 0], out[..., 0, 1], out[..., 1, 0], out[..., 1, 1] = c, -s, s, c
    out[..., 2, 2] = 1.0
    return out


_CANONICAL_FORWARD = np.array([0.0, -1.0, 0.0])  # core/canonical.py: +Z up, −Y forward


def heading(root_deltas: np.ndarray) -> np.ndarray:
    """(T,) unwrapped yaw that turns −Y onto the root's forward, held where the root points straight up."""
    forward = root_deltas @ _CANONICAL_FORWARD
    flat = np.linalg.norm(forward[:, :2], axis=-1)
    yaw = np.arctan2(forward[:, 0], -forward[:, 1])  # Rz(yaw)·(0,−1,0) = (sin yaw, −cos yaw, 0)
    good = flat > 0.2
    if not good.any():
        return np.zeros(len(yaw))
    index = np.where(good, np.arange(len(yaw)), 0)
    np.maximum.accumulate(index, out=index)
    index[: np.argmax(good)] = np.argmax(good)
    return np.unwrap(yaw[index])
