"""Where the ground lies in a video (kirin_addon/video/ground.py): the horizon and the contact row, on
pictures made here with known answers, and none where a picture shows no horizon."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.video.ground import contact_row, horizon_row

HEIGHT, WIDTH, HORIZON = 120, 160, 80


def _scene(count: int = 6, seed: int = 0, sky: float = 210.0) -> tuple[np.ndarray, np.ndarray]:
    """Frames (T,H,W,3) of a bright sky over a darker speckled ground (the horizon at row HORIZON) with a
    dark box standing on the ground at row 100, and its masks."""
    rng = np.random.default_rng(seed)
    y = np.arange(HEIGHT)[:, None]
    frames, masks = [], []
    for t in range(count):
        picture = np.where(y < HORIZON, sky, 140.0) + rng.normal(0, 8, (HEIGHT, WIDTH))
        mask = np.zeros((HEIGHT, WIDTH), bool)
        mask[40:100, 40 + 5 * t:100 + 5 * t] = True
        picture[mask] = 60.0
        frames.append(np.repeat(np.clip(picture, 0, 255)[..., None], 3, -1).astype(np.uint8))
        masks.append(mask)
    return np.stack(frames), np.stack(masks).astype(np.float32)


def test_the_horizon_is_where_the_sky_meets_the_ground() -> None:
    frames, masks = _scene()
    assert horizon_row(frames, masks) == pytest.approx(HORIZON, abs=2)
    # The masks may be smaller than the frames: the row is in the frames' pixels.
    small = masks[:, ::2, ::2]
    assert horizon_row(frames, small) == pytest.approx(HORIZON, abs=3)


def test_no_horizon_without_a_step_or_without_a_subject() -> None:
    frames, masks = _scene(sky=140.0)  # sky and ground alike
    assert horizon_row(frames, masks) is None
    frames, masks = _scene()
    assert horizon_row(frames, np.zeros_like(masks)) is None


def test_the_contact_row_is_where_the_subject_stands() -> None:
    _, masks = _scene()
    assert contact_row(masks, HEIGHT) == pytest.approx(100)
    assert contact_row(masks[:, ::2, ::2], HEIGHT) == pytest.approx(100, abs=2)
    assert contact_row(np.zeros_like(masks), HEIGHT) is None


def test_a_sharper_edge_below_the_feet_is_not_the_horizon() -> None:
    """The bison plates' lower border (a dark band under the track) steps more sharply than their
    horizon in half the frames: the horizon is looked for above the row the subject stands on."""
    frames, masks = _scene()
    frames[:, 106:] = 10  # a black border below the box's feet (row 100)
    assert horizon_row(frames, masks) == pytest.approx(HORIZON, abs=2)
