"""The label-free measures of a fit to real footage (kirin_addon/eval/footage.py), on constructed
motions and silhouettes with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core.rotations import quat_from_axis_angle, quat_to_matrix
from kirin.kirin_addon.eval.footage import body_tilt, measure_fit, silhouette_stride_hz


def _turned(axis, degrees) -> np.ndarray:
    angles = np.radians(np.asarray(degrees, np.float64))
    return quat_to_matrix(quat_from_axis_angle(np.broadcast_to(axis, angles.shape + (3,)), angles))


def test_tilt_reads_pitch_roll_and_a_body_on_its_back() -> None:
    rest = np.eye(3)
    pitch, roll, tilt = body_tilt(_turned([1.0, 0.0, 0.0], [0.0, 20.0, -40.0]), rest)  # about the side axis
    assert np.allclose(np.abs(pitch), [0.0, 20.0, 40.0], atol=1e-6) and np.allclose(roll, 0.0, atol=1e-6)
    assert np.sign(pitch[1]) != np.sign(pitch[2]) and np.allclose(tilt, [0.0, 20.0, 40.0], atol=1e-6)
    pitch, roll, tilt = body_tilt(_turned([0.0, -1.0, 0.0], [30.0, 180.0]), rest)  # about the forward axis
    assert np.abs(roll[0]) == pytest.approx(30.0) and np.allclose(pitch, 0.0, atol=1e-6)
    assert np.allclose(tilt, [30.0, 180.0], atol=1e-6)  # on its back
    # A turn about the vertical (heading) is no tilt, whatever the rest orientation.
    base = _turned([0.0, 0.0, 1.0], [37.0])[0]
    pitch, roll, tilt = body_tilt(_turned([0.0, 0.0, 1.0], [0.0, 90.0, 200.0]) @ base, base)
    assert np.allclose([pitch, roll, tilt], 0.0, atol=1e-6)


def test_upright_share_and_root_jumps() -> None:
    tilts = np.r_[np.zeros(18), 60.0, 170.0]  # two frames tumbling
    body = _turned([1.0, 0.0, 0.0], tilts)
    root = np.c_[np.linspace(0, 1.9, 20), np.zeros(20), np.ones(20)]
    root[10:] += [0.5, 0.0, 0.0]  # one jump of 0.6 body sizes
    measures = measure_fit(body, np.eye(3), root, body_size=1.0)
    assert measures.upright_share == pytest.approx(0.9)
    assert measures.worst_tilt_deg == pytest.approx(170.0)
    assert measures.root_jumps == 1 and measures.max_root_step == pytest.approx(0.6)


def _galloping_masks(hz: float, fps: float, frames: int) -> np.ndarray:
    """A body block over two legs whose spread opens and closes `hz` times a second."""
    masks = np.zeros((frames, 60, 120), bool)
    for t in range(frames):
        spread = 20 + 15 * np.cos(2 * np.pi * hz * t / fps)
        masks[t, 10:35, 30:90] = True
        for x in (60 - spread, 60 + spread):
            masks[t, 35:55, int(x) - 3:int(x) + 3] = True
    return masks


@pytest.mark.parametrize("hz", [1.1, 2.3])
def test_the_videos_stride_frequency_from_the_legs_of_its_silhouettes(hz: float) -> None:
    assert silhouette_stride_hz(_galloping_masks(hz, 30.0, 120), 30.0) == pytest.approx(hz, rel=0.05)


def test_no_stride_in_a_still_or_empty_video() -> None:
    still = _galloping_masks(0.0, 30.0, 60)
    assert silhouette_stride_hz(still, 30.0) is None
    assert silhouette_stride_hz(np.zeros((60, 20, 20), bool), 30.0) is None
