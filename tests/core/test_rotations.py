import numpy as np
import pytest

from kirin.kirin_addon.core import rotations as rot


@pytest.fixture
def rng():
    return np.random.default_rng(1)


def random_quats(rng, *shape):
    return rot.quat_normalize(rng.normal(size=(*shape, 4)))


def test_quaternion_matrix_round_trip(rng):
    q = random_quats(rng, 500)
    back = rot.matrix_to_quat(rot.quat_to_matrix(q))
    assert np.allclose(np.abs(np.sum(back * q, -1)), 1.0, atol=1e-12)
    assert np.all(back[:, 0] >= 0)


def test_multiply_matches_matrix_product_and_rotate(rng):
    a, b = random_quats(rng, 100), random_quats(rng, 100)
    v = rng.normal(size=(100, 3))
    product = rot.quat_to_matrix(a) @ rot.quat_to_matrix(b)
    assert np.allclose(rot.quat_to_matrix(rot.quat_multiply(a, b)), product)
    assert np.allclose(rot.quat_rotate(a, v), np.einsum("nij,nj->ni", rot.quat_to_matrix(a), v))
    ident = rot.quat_multiply(a, rot.quat_inverse(a))
    assert np.allclose(ident, rot.quat_identity((100,)), atol=1e-12)


def test_six_d_round_trip_and_projection(rng):
    m = rot.quat_to_matrix(random_quats(rng, 7, 3))
    assert np.allclose(rot.sixd_to_matrix(rot.matrix_to_6d(m)), m, atol=1e-12)
    noisy = rot.sixd_to_matrix(rng.normal(size=(50, 6)))
    assert np.allclose(noisy @ np.swapaxes(noisy, -1, -2), np.eye(3), atol=1e-12)
    assert np.allclose(np.linalg.det(noisy), 1.0)


@pytest.mark.parametrize("order", rot.EULER_ORDERS)
def test_euler_round_trip_every_order(order, rng):
    m = rot.quat_to_matrix(random_quats(rng, 200))
    back = rot.euler_to_matrix(rot.matrix_to_euler(m, order), order)
    assert np.allclose(back, m, atol=1e-10)


def test_euler_matches_blender_convention():
    # Blender: XYZ Euler applies X, then Y, then Z (M = Rz Ry Rx).
    angles = np.array([0.3, -0.2, 1.1])
    m = rot.euler_to_matrix(angles, "XYZ")
    rx = rot.quat_to_matrix(rot.quat_from_axis_angle([1, 0, 0], 0.3))
    ry = rot.quat_to_matrix(rot.quat_from_axis_angle([0, 1, 0], -0.2))
    rz = rot.quat_to_matrix(rot.quat_from_axis_angle([0, 0, 1], 1.1))
    assert np.allclose(m, rz @ ry @ rx)


def test_quaternion_sign_continuity(rng):
    start, end = random_quats(rng, 1).repeat(50, 0), random_quats(rng, 1).repeat(50, 0)
    q = rot.quat_slerp(start, end, np.linspace(0, 1, 50))
    flipped = q * np.where(rng.random(50) < 0.5, -1.0, 1.0)[:, None]
    fixed = rot.quat_continuity(flipped)
    assert np.all(np.sum(fixed[1:] * fixed[:-1], -1) > 0)
    assert np.allclose(rot.quat_to_matrix(fixed), rot.quat_to_matrix(q))


def test_rotation_between_including_opposite(rng):
    a = rng.normal(size=(100, 3))
    b = rng.normal(size=(100, 3))
    b[0] = -a[0]
    q = rot.rotation_between(a, b)
    got = rot.quat_rotate(q, a / np.linalg.norm(a, axis=-1, keepdims=True))
    assert np.allclose(got, b / np.linalg.norm(b, axis=-1, keepdims=True), atol=1e-9)


def test_euler_continuity_unwraps():
    angles = np.array([[3.0, 0, 0], [-3.1, 0, 0], [-2.9, 0, 0]])
    out = rot.euler_continuity(angles)
    assert np.all(np.abs(np.diff(out[:, 0])) < 0.5)
