"""Frames that show a picture again (kirin_addon/video/repeats.py): a looped film of held plates, and
the keypoints labelled on one showing carried to the others."""

from __future__ import annotations

import numpy as np

from kirin.kirin_addon.video.repeats import repeated_frames, shared_with_repeats


def _plates(seed: int = 0) -> np.ndarray:
    """Three photographs, each held two frames, looped twice (12 frames), with compression noise."""
    rng = np.random.default_rng(seed)
    photos = [rng.integers(0, 255, (12, 16, 3)).repeat(4, 0).repeat(4, 1) for _ in range(3)]
    order = [0, 0, 1, 1, 2, 2] * 2
    return np.stack([np.clip(photos[k] + rng.normal(0, 2, photos[k].shape), 0, 255).astype(np.uint8)
                     for k in order])


def test_each_frame_points_at_the_first_showing_of_its_picture() -> None:
    assert repeated_frames(_plates()).tolist() == [0, 0, 2, 2, 4, 4, 0, 0, 2, 2, 4, 4]
    assert repeated_frames(_plates()[:0]).tolist() == []


def test_keypoints_labelled_once_hold_wherever_the_picture_returns() -> None:
    repeats = np.array([0, 0, 2, 2, 4, 4, 0, 0, 2, 2, 4, 4])
    points = np.full((12, 3, 2), np.nan)
    confidence = np.zeros((12, 3))
    points[1, 0], confidence[1, 0] = (5.0, 6.0), 1.0  # labelled on the second showing of picture 0
    points[8, 2], confidence[8, 2] = (7.0, 8.0), 0.5  # and on a later showing of picture 2
    shared, weights, gained = shared_with_repeats(points, confidence, repeats)
    assert gained == 6
    assert np.flatnonzero(weights[:, 0]).tolist() == [0, 1, 6, 7]
    assert np.all(shared[[0, 6, 7], 0] == (5.0, 6.0))
    assert np.flatnonzero(weights[:, 2]).tolist() == [2, 3, 8, 9] and np.all(weights[[2, 3, 9], 2] == 0.5)
    assert not weights[[4, 5, 10, 11]].any()  # picture 4 was never labelled
    # A frame with its own keypoints keeps them.
    own = confidence.copy()
    own[6, 1] = 1.0
    points[6, 1] = (1.0, 1.0)
    _, weights, _ = shared_with_repeats(points, own, repeats)
    assert weights[6, 0] == 0.0 and weights[6, 1] == 1.0
