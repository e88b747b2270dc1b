"""The per-rig inverse-dynamics model (models/video/idm.py, models/video/idm_train.py): crop geometry, the
exact inverse of its outputs, a tiny model that learns in seconds, and save/load."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.library.controllers.dispatch import generate
from kirin.kirin_addon.library.families.build import build_creature
from kirin.kirin_addon.video.synth import frame_camera, render_motion
from kirin.models.video.idm import (
    IDM,
    IDMConfig,
    IDMError,
    IDMNet,
    crop_sequence,
    default_camera,
    default_frame,
    rig_key,
    sample_crops,
    silhouette_boxes,
)
from kirin.models.video.idm_train import IDMTrainConfig, load_or_train_idm, train_idm

SIZE = (160, 120)
TINY = IDMConfig(crop=32, channels=(8, 16, 32), hidden=64)
QUICK = IDMTrainConfig(samples=600, epochs=14, batch=32, lr=3e-3, prior=False, time_limit=60.0)


@pytest.fixture(scope="module")
def creature():
    return build_creature("quadruped", 3)


@pytest.fixture(scope="module")
def video(creature):
    motion = generate(creature, "walk", frames=10, seed=1).motion
    camera = frame_camera(joint_positions(creature.rig, motion), SIZE, np.random.default_rng(2))
    return motion, camera, render_motion(creature.rig, creature.mesh, motion, camera, SIZE)


@pytest.fixture(scope="module")
def tiny(creature):
    torch.set_num_threads(1)
    return train_idm(creature.rig, creature.mesh, QUICK, TINY)


def test_crops_follow_the_mask():
    masks = np.zeros((3, 40, 60), np.float32)
    masks[0, 10:20, 30:50] = 1.0  # 20 wide, 10 high
    masks[2, 5:35, 5:15] = 1.0
    boxes, valid = silhouette_boxes(masks)
    assert valid.tolist() == [True, False, True]
    np.testing.assert_allclose(boxes[0], [30, 10, 50, 20])
    crops, centres, sides, source, size = crop_sequence(masks, 16, image_size=(120, 80))
    assert size == (120, 80) and source.tolist() == [0, 0, 2]  # the empty frame borrows a neighbour
    np.testing.assert_allclose(centres[0], [80.0, 30.0])  # mask pixels × 2 in the image
    assert sides[0] == pytest.approx(40.0 * 1.15)
    # The box fills the crop's width (minus the margin), centred; rows outside it are empty.
    assert crops[0][8, 2:14].min() > 0.9 and crops[0][0].max() == 0.0 and crops[0][:, 0].max() < 0.5
    np.testing.assert_allclose(crops[0], crops[0][:, ::-1], atol=1e-6)
    np.testing.assert_allclose(crops[1], crops[0])
    # Resampling a constant mask gives the constant; outside the mask is zero.
    ones = sample_crops(np.ones((1, 20, 20), np.float32), np.array([[10.0, 10.0]]), np.array([10.0]), 8)
    np.testing.assert_allclose(ones, 1.0)
    with pytest.raises(IDMError):
        crop_sequence(np.zeros((4, 10, 10)), 16)
    with pytest.raises(IDMError):
        crop_sequence(np.zeros((0, 10, 10)), 16)


def test_outputs_invert_exactly(creature, video):
    """`to_motion` is the exact inverse of `outputs_for`: the geometry of crops, crop cameras and
    root depth loses nothing (a perfect network would give back the filmed motion)."""
    motion, camera, clip = video
    frame = default_frame(creature.rig, creature.mesh)
    idm = IDM(IDMNet(creature.rig.joint_count, TINY), creature.rig, frame, TINY)
    _, centres, sides, _, _ = crop_sequence(clip.masks, TINY.crop)
    out = idm.outputs_for(motion, camera, centres, sides)
    back = idm.to_motion(out, camera, centres, sides, motion.fps)
    tolerance = 1e-6 * creature.rig.body_size
    np.testing.assert_allclose(joint_positions(creature.rig, back), clip.joints, atol=tolerance)
    # The root sits inside its crop.
    assert np.abs(out["root"][:, :2]).max() < 1.0


def test_tiny_idm_learns_in_seconds(creature, tiny):
    report = tiny.card["report"]
    assert report["samples"] == QUICK.samples and report["epochs"] >= 1
    assert report["seconds"] < 120
    # On held-out renders it beats the rest pose seen from the front.
    assert report["held_out_position_error"] < 0.8 * report["held_out_rest_error"]
    assert report["train_position_error"][-1] < report["train_position_error"][0]


def test_predict_gives_a_motion_on_the_rig(creature, tiny, video):
    motion, camera, clip = video
    predicted = tiny.predict(clip.masks, camera=camera, fps=motion.fps)
    assert isinstance(predicted, Motion)
    assert predicted.frame_count == motion.frame_count and predicted.joint_count == creature.rig.joint_count
    assert np.isfinite(predicted.rotations).all() and np.isfinite(predicted.root_positions).all()
    # The root is placed from the crop and the known camera: near the filmed one (body sizes).
    error = np.linalg.norm(predicted.root_positions - clip.joints[:, creature.rig.main_root], axis=-1)
    assert np.median(error) < 0.5 * creature.rig.body_size
    # No camera: a default one; masks at a lower resolution than the image work too.
    small = clip.masks[:, ::2, ::2]
    loose = tiny.predict(small, image_size=SIZE)
    assert loose.frame_count == motion.frame_count and np.isfinite(loose.root_positions).all()
    cam = default_camera(creature.rig, tiny.frame, SIZE)
    assert np.all(cam.depth(joint_positions(creature.rig, Motion.rest(creature.rig))) > 0)
    with pytest.raises(IDMError):
        tiny.predict(np.zeros((3, 20, 20)))


def test_save_load_round_trip(creature, tiny, video, tmp_path):
    _, _, clip = video
    path = tiny.save(tmp_path / "model")
    assert path.name == "idm.safetensors" and path.stat().st_size < 2_000_000
    loaded = IDM.load(tmp_path / "model", creature.rig)
    assert loaded.config == tiny.config
    np.testing.assert_allclose(loaded.frame.rotation, tiny.frame.rotation)
    assert loaded.card["report"]["samples"] == QUICK.samples
    crops = crop_sequence(clip.masks, TINY.crop)[0]
    for key, value in tiny.run(crops).items():
        np.testing.assert_allclose(loaded.run(crops)[key], value, atol=1e-6)
    other = build_creature("quadruped", 4)
    with pytest.raises(IDMError):
        IDM.load(path, other.rig)
    with pytest.raises(IDMError):
        IDM.load(tmp_path / "nothing", creature.rig)


def test_cache_is_keyed_by_rig(creature, tmp_path):
    config = IDMTrainConfig(samples=64, epochs=1, batch=32, prior=False)
    tiny_net = IDMConfig(crop=16, channels=(4, 8), hidden=16)
    first = load_or_train_idm(creature.rig, creature.mesh, config, tiny_net, cache_dir=tmp_path)
    folders = list(tmp_path.iterdir())
    assert len(folders) == 1 and folders[0].name == first.card["key"]
    again = load_or_train_idm(creature.rig, creature.mesh, config, tiny_net, cache_dir=tmp_path)
    assert again.card["key"] == first.card["key"] and list(tmp_path.iterdir()) == folders
    for a, b in zip(first.net.state_dict().values(), again.net.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert rig_key(creature.rig, creature.mesh, tiny_net) != rig_key(build_creature("quadruped", 4).rig, None,
                                                                     tiny_net)
