import numpy as np

from kirin.kirin_addon.library.procedural import build_biped, capsule_mesh
from kirin.kirin_addon.library.render import Camera, rasterize, read_png, three_quarter_camera, write_png


def quad(z: float, half: float):
    v = np.array([[-half, -half, z], [half, -half, z], [half, half, z], [-half, half, z]], float)
    return v, np.array([[0, 1, 2], [0, 2, 3]])


def test_z_buffer_keeps_the_nearest_surface():
    near_v, near_t = quad(1.0, 0.5)
    far_v, far_t = quad(0.0, 1.0)
    camera = Camera(np.array([0.0, 0.0, 5.0]), np.zeros(3), up=(0.0, 1.0, 0.0))
    both = rasterize(np.r_[far_v, near_v], np.r_[far_t, near_t + 4], camera, size=64, color=(1, 1, 1))
    far_only = rasterize(far_v, far_t, camera, size=64, color=(1, 1, 1))
    background = rasterize(np.zeros((0, 3)), np.zeros((0, 3), int), camera, size=64)
    assert (both[32, 32] == far_only[32, 32]).all()  # same normal → same shade at the centre
    covered = np.any(far_only != background, axis=-1).mean()
    assert 0.05 < covered < 0.6


def test_character_image_is_framed_and_png_round_trips(tmp_path):
    mesh = capsule_mesh(build_biped())
    camera = three_quarter_camera(mesh.vertices, np.random.default_rng(3))
    image = rasterize(mesh.vertices, mesh.triangles, camera)
    background = rasterize(np.zeros((0, 3)), np.zeros((0, 3), int), camera)
    mask = np.any(image != background, axis=-1)
    assert image.shape == (224, 224, 3) and 0.05 < mask.mean() < 0.7
    rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    assert rows[0] > 0 and rows[-1] < 223 and cols[0] > 0 and cols[-1] < 223  # nothing cut off
    path = tmp_path / "ref.png"
    write_png(path, image)
    assert np.array_equal(read_png(path), image)
    from PIL import Image  # a standard decoder reads the file the same (Blender-side reader aside)

    assert np.array_equal(np.asarray(Image.open(path).convert("RGB")), image)
    same_camera = three_quarter_camera(mesh.vertices, np.random.default_rng(3))
    again = rasterize(mesh.vertices, mesh.triangles, same_camera)
    assert np.array_equal(again, image)
