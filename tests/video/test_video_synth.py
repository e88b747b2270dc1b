"""Synthetic videos with ground truth (kirin_addon/video/synth.py): the rasteriser, keypoints that
land on the rendered subject, and joint visibility."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core.camera import PinholeCamera
from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.core.raster import coverage, rasterize_faces
from kirin.kirin_addon.core.rig import RigBuilder
from kirin.kirin_addon.core.skinning import SkinnedMesh
from kirin.kirin_addon.library.controllers.dispatch import generate
from kirin.kirin_addon.library.families.build import build_creature
from kirin.kirin_addon.video.synth import SyntheticVideo, frame_camera, render_motion, skinned_vertices

SIZE = (160, 120)


@pytest.fixture(scope="module")
def walk():
    creature = build_creature("quadruped", 3)
    motion = generate(creature, "walk", frames=8, seed=0).motion
    camera = frame_camera(joint_positions(creature.rig, motion), SIZE, np.random.default_rng(4))
    return creature, motion, camera, render_motion(creature.rig, creature.mesh, motion, camera, SIZE)


def test_video_has_the_shapes_and_ground_truth(walk):
    creature, motion, camera, video = walk
    frames, joints = motion.frame_count, creature.rig.joint_count
    assert isinstance(video, SyntheticVideo)
    assert video.frames.shape == (frames, SIZE[1], SIZE[0], 3) and video.frames.dtype == np.uint8
    assert video.masks.shape == (frames, SIZE[1], SIZE[0]) and video.masks.dtype == bool
    assert video.keypoints.shape == (frames, joints, 2) and video.visibility.shape == (frames, joints)
    assert video.size == SIZE and video.fps == motion.fps
    np.testing.assert_allclose(video.joints, joint_positions(creature.rig, motion))
    np.testing.assert_allclose(video.keypoints, camera.project(video.joints))
    # A static background: off the subject every frame is the same picture.
    off = ~video.masks.any(axis=0)
    assert off.mean() > 0.5
    assert np.array_equal(video.frames[0][off], video.frames[-1][off])
    assert 0.02 < video.masks.mean() < 0.6


def test_frame_camera_keeps_the_motion_in_view(walk):
    _, _, _, video = walk
    x, y = video.keypoints[..., 0], video.keypoints[..., 1]
    assert (x > 0).all() and (x < SIZE[0]).all() and (y > 0).all() and (y < SIZE[1]).all()


def test_keypoints_land_on_the_rendered_subject(walk):
    creature, _, _, video = walk
    # Joints lie inside the body: a visible joint's pixel (or a neighbour) is on the mask.
    px = np.floor(video.keypoints).astype(int)
    hits = []
    for t in range(len(px)):
        mask = video.masks[t]
        for j in np.flatnonzero(video.visibility[t] & creature.rig.deform):
            x, y = px[t, j]
            hits.append(mask[max(y - 1, 0):y + 2, max(x - 1, 0):x + 2].any())
    assert np.mean(hits) > 0.95
    # The subject's colour is where the mask is, the background where it is not.
    frame, mask = video.frames[0].astype(float), video.masks[0]
    assert np.abs(frame[mask].mean(0) - frame[~mask].mean(0)).max() > 20


def test_mask_is_the_coverage_of_the_posed_mesh(walk):
    creature, motion, camera, video = walk
    vertices, _ = skinned_vertices(creature.rig, creature.mesh, motion)
    xy = camera.project(vertices[2])
    face, depth = rasterize_faces(xy, camera.depth(vertices[2]), creature.mesh.triangles, SIZE)
    assert np.array_equal(face >= 0, video.masks[2])
    assert np.array_equal(coverage(xy, creature.mesh.triangles, SIZE), video.masks[2])
    assert np.isinf(depth[face < 0]).all() and (depth[face >= 0] > 0).all()
    # Several images at once, and supersampled soft masks, agree with the single ones.
    batch = coverage(np.stack([camera.project(v) for v in vertices[:3]]), creature.mesh.triangles, SIZE)
    assert np.array_equal(batch, video.masks[:3])
    soft = coverage(xy, creature.mesh.triangles, SIZE, supersample=2)
    assert soft.dtype == np.float32 and abs(soft.sum() - video.masks[2].sum()) < 0.1 * video.masks[2].sum()


def test_rasteriser_keeps_the_nearest_triangle():
    # Two overlapping squares in the image, the second nearer: it wins where they overlap.
    xy = np.array([[10, 10], [50, 10], [50, 50], [10, 50], [30, 30], [70, 30], [70, 70], [30, 70]], float)
    depth = np.array([5.0] * 4 + [2.0] * 4)
    triangles = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]])
    face, z = rasterize_faces(xy, depth, triangles, (80, 80))
    assert face[40, 40] in (2, 3) and z[40, 40] == pytest.approx(2.0)
    assert face[20, 20] in (0, 1) and z[20, 20] == pytest.approx(5.0)
    assert face[75, 5] == -1
    # Area: the union of the squares, 40² + 40² − 20².
    assert (face >= 0).sum() == 40 * 40 * 2 - 20 * 20


def _two_blocks() -> tuple:
    """Two separate one-bone rigs in a row along +Y, each inside a box skinned to it: a big box
    around 'front' at the origin and a slim one around 'back' three units behind it."""
    builder = RigBuilder()
    builder.add("front", None, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    builder.add("back", None, (0.0, 3.0, 0.0), (0.0, 3.0, 1.0))
    rig = builder.build()
    rig.deform[:] = True
    vertices, triangles, joints = [], [], []
    for joint, (cx, cy), half in ((0, (0.0, 0.0), 0.8), (1, (0.0, 3.0), 0.1)):
        base = len(vertices)
        for dz in (-0.5, 1.5):
            for dx, dy in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                vertices.append((cx + dx * half, cy + dy * half, dz))
                joints.append([joint])
        quads = [(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
        for a, b, c, d in quads:
            triangles += [(base + a, base + b, base + c), (base + a, base + c, base + d)]
    mesh = SkinnedMesh(np.array(vertices), np.array(triangles), np.array(joints), np.ones((len(vertices), 1)))
    return rig, mesh


def test_visibility_hides_joints_behind_the_body():
    rig, mesh = _two_blocks()
    motion = Motion.rest(rig, frames=1)
    size = (120, 120)
    # From the front (−Y) the big box hides the joint behind it; the own joint shows.
    front = PinholeCamera.look_at((0.0, -8.0, 0.0), (0.0, 1.5, 0.0), focal=150.0, center=(60.0, 60.0))
    video = render_motion(rig, mesh, motion, front, size)
    assert video.visibility[0].tolist() == [True, False]
    # From the side both show.
    side = PinholeCamera.look_at((10.0, 1.5, 0.0), (0.0, 1.5, 0.0), focal=150.0, center=(60.0, 60.0))
    video = render_motion(rig, mesh, motion, side, size)
    assert video.visibility[0].tolist() == [True, True]
    # A joint outside the image is not visible.
    away = PinholeCamera.look_at((10.0, 1.5, 0.0), (0.0, 1.5, 6.0), focal=150.0, center=(60.0, 60.0))
    video = render_motion(rig, mesh, motion, away, size)
    assert not video.visibility[0].any()


def test_backgrounds():
    rig, mesh = _two_blocks()
    camera = PinholeCamera.look_at((10.0, 1.5, 0.0), (0.0, 1.5, 0.0), focal=150.0, center=(40.0, 30.0))
    plain = render_motion(rig, mesh, Motion.rest(rig), camera, (80, 60), background="plain")
    textured = render_motion(rig, mesh, Motion.rest(rig), camera, (80, 60), background="textured")
    assert len(np.unique(plain.frames[0][~plain.masks[0]].reshape(-1, 3), axis=0)) == 1
    assert len(np.unique(textured.frames[0][~textured.masks[0]].reshape(-1, 3), axis=0)) > 10
    with pytest.raises(ValueError):
        render_motion(rig, mesh, Motion.rest(rig), camera, (80, 60), background="sky")
