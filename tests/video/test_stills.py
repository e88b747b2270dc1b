"""Each frame segmented on its own (kirin_addon/video/stills.py): pictures made here with a known subject —
a grey film of an animal against a sky and a textured ground, and a colour one — and the errors."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.eval.footage import mask_iou
from kirin.kirin_addon.video.stills import still_silhouettes
from kirin.kirin_addon.video.video_io import VideoError

pytest.importorskip("cv2")

HEIGHT, WIDTH = 120, 160


def _animal(shift: int) -> np.ndarray:
    """(H,W) bool: a body (ellipse), a head and four legs reaching the ground line, moved `shift` px."""
    y, x = np.mgrid[:HEIGHT, :WIDTH]
    body = ((x - 80 - shift) / 38.0) ** 2 + ((y - 55) / 20.0) ** 2 <= 1
    head = ((x - 122 - shift) / 12.0) ** 2 + ((y - 45) / 10.0) ** 2 <= 1
    legs = np.zeros_like(body)
    for left in (50, 63, 94, 107):
        legs |= (x >= left + shift) & (x < left + shift + 8) & (y >= 60) & (y < 98)
    return body | head | legs


def _film(grey: bool, shifts=(0, 4, 8), seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Frames (T,H,W,3) uint8 and their subjects (T,H,W): a light sky over a speckled ground (a horizon
    at 70 % of the height), the animal textured like fur; held twice each like a film of plates."""
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(seed)

    def grain(spread: float) -> np.ndarray:  # film grain and fur: blotches a few pixels across
        noise = gaussian_filter(rng.normal(0, 1, (HEIGHT, WIDTH)), 1.5)
        return spread * noise / noise.std()

    frames, truth = [], []
    for shift in shifts:
        y = np.mgrid[:HEIGHT, :WIDTH][0]
        sky = 200 + 20 * y / HEIGHT
        ground = 120 + grain(30)
        picture = np.where(y < 0.7 * HEIGHT, sky, ground)
        subject = _animal(shift)
        fur = 90 + grain(20)
        picture = np.where(subject, fur, picture)
        colour = np.stack([picture] * 3, -1)
        if not grey:  # a brown animal on green grass under a blue sky
            tint = np.where(subject[..., None], [1.2, 0.8, 0.5], np.where((y < 0.7 * HEIGHT)[..., None],
                                                                          [0.7, 0.85, 1.1], [0.6, 1.0, 0.5]))
            colour = colour * tint
        image = np.clip(colour, 0, 255).astype(np.uint8)
        frames += [image, image]
        truth += [subject, subject]
    return np.stack(frames), np.stack(truth)


@pytest.mark.parametrize("grey", [True, False])
def test_each_frame_finds_its_subject(grey: bool) -> None:
    frames, truth = _film(grey)
    masks = still_silhouettes(frames)
    assert masks.shape == truth.shape and masks.dtype == np.float32
    found = masks > 0.5
    scores = [mask_iou(m, t) for m, t in zip(found, truth, strict=True)]
    precision = (found & truth).sum((1, 2)) / found.sum((1, 2))
    # At most a fifth of a mask is sky or ground (the sky enclosed under the belly is taken in part), and
    # the lower legs against a ground of their own shade are lost: the known limits, seen on the bison
    # film too.
    assert precision.min() > 0.8 and min(scores) > 0.65, (precision, scores)
    # A held plate has the same mask as the frame it repeats.
    assert np.array_equal(masks[0], masks[1]) and not np.array_equal(masks[1], masks[2])


def test_the_masks_shrink_to_the_longest_side() -> None:
    frames, _ = _film(True, shifts=(0,))
    assert still_silhouettes(frames, max_side=80).shape == (2, 60, 80)


def test_bad_input_is_refused_with_a_clear_message() -> None:
    with pytest.raises(VideoError, match="zero frames"):
        still_silhouettes(np.zeros((0, 10, 10, 3), np.uint8))
    with pytest.raises(VideoError, match="shape"):
        still_silhouettes(np.zeros((3, 10, 10), np.uint8))
    # A flat picture has no subject inside its borders.
    with pytest.raises(VideoError, match="no subject"):
        still_silhouettes(np.full((4, HEIGHT, WIDTH, 3), 128, np.uint8))


def test_a_frame_is_cut_alike_whatever_was_cut_before() -> None:
    """GrabCut draws from OpenCV's global generator: a second run in the same backend (the same video
    again, or with keypoints added) must get the same masks, and a frame the same mask in any clip."""
    import cv2

    frames, _ = _film(True, shifts=(0, 4, 8, 12))
    first = still_silhouettes(frames)
    cv2.setRNGSeed(12345)
    cv2.randu(np.zeros((64, 64)), 0, 1)  # what any other OpenCV user in the process may do
    assert np.array_equal(still_silhouettes(frames), first)
    assert np.array_equal(still_silhouettes(frames[4:]), first[4:])
