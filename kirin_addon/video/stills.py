"""Silhouettes of a subject that never leaves its place in view, each frame segmented on its own
(`still_silhouettes`): a film of photographs (Muybridge's plates, each from another camera), a subject
filling a fixed camera's view. Background subtraction finds nothing there: the per-pixel median over time
is the subject itself.

Each frame is cut by GrabCut (OpenCV, imported lazily: the backend's dependency) seeded with the frame's
border as background and the rest as probably the subject; legs that GrabCut loses against a ground of
their shades are then grown down from the mask row by row (`_grow_legs`). Monochrome footage gives
GrabCut's colour models too little to tell a grey animal from a grey sky or ground, so it is given three
other channels there: brightness, local texture (fur against a smooth sky) and height in the frame
(ground below, sky above). Masks are (T,h,w) float32 in [0,1], the longer side at most `max_side`.
"""

from __future__ import annotations

import numpy as np

from .silhouettes import MAX_COVER, MIN_COVER, MIN_PLAUSIBLE_SHARE, _resize, _target_size, checked_frames
from .video_io import VideoError

__all__ = ["still_silhouettes"]

BORDER_SHARE = 0.03  # of the shorter side: the frame's edge, taken as background
GRABCUT_ROUNDS = 5
GRABCUT_SEED = 0  # OpenCV's generator, seeded before each frame's cut
MONOCHROME_SPREAD = 6.0  # median channel spread (0–255) below which footage counts as black and white
TEXTURE_HALF = 6.0  # local standard deviation (0–255) mapped to half the texture channel's range
HEIGHT_RANGE = 150.0  # the height channel runs 0 (top) … this (bottom): a prior, weaker than brightness
GRAIN_SIGMA = 1.0  # pixels: the brightness channel's smoothing
LEG_WIDEN = 2  # pixels a leg may move sideways from one row to the next as it is grown down
LEG_REACH = 20  # pixels: the background beside a pixel, and the subject above it, are read this far
LEG_CONTRAST = 1.0  # median absolute deviations of the background a leg pixel must stand out by
HELD_FRAME = 0.5  # mean absolute difference (0–255) below which a frame repeats the previous one
SMALL_HOLE_SHARE = 0.01  # holes in a mask below this share of it are filled (an eye, a highlight)


def _cv2():
    try:
        import cv2
    except ImportError as exc:  # pragma: no cover - the backend environment has it
        raise VideoError("Segmenting each frame on its own needs OpenCV (opencv-python-headless) in the "
                         "backend's environment; run tools/setup_env.sh") from exc
    return cv2


def _monochrome(frames: np.ndarray) -> bool:
    sample = frames[:: max(1, len(frames) // 16), ::4, ::4]
    return float(np.median(sample.max(-1) - sample.min(-1))) < MONOCHROME_SPREAD


def _grey_features(image: np.ndarray) -> np.ndarray:
    """(h,w,3) float 0–255 → uint8 (brightness, texture, height) for GrabCut on black-and-white film."""
    cv2 = _cv2()
    grey = image.mean(-1).astype(np.float32)
    mean = cv2.blur(grey, (5, 5))
    spread = np.sqrt(np.maximum(cv2.blur(grey * grey, (5, 5)) - mean * mean, 0.0))
    height = np.broadcast_to(np.linspace(0.0, HEIGHT_RANGE, grey.shape[0], dtype=np.float32)[:, None],
                             grey.shape)
    # Compressed, so that the edge of a thin leg (against the sky: a large spread) reads as the fur it
    # belongs to rather than as something else.
    texture = 255.0 * spread / (spread + TEXTURE_HALF)
    # Film grain makes neighbouring pixels differ as much as subject and background do: smoothed, the
    # brightness lets GrabCut's edge term follow the outline.
    smooth = cv2.GaussianBlur(grey, (0, 0), GRAIN_SIGMA)
    return np.clip(np.dstack([smooth, texture, height]), 0, 255).astype(np.uint8)


def _largest_component(mask: np.ndarray) -> np.ndarray:
    cv2 = _cv2()
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=4)
    if count <= 1:
        return np.zeros_like(mask, dtype=bool)
    return labels == 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))


def _fill_small_holes(mask: np.ndarray) -> np.ndarray:
    """Background pockets inside the mask smaller than SMALL_HOLE_SHARE of it become subject; larger ones
    (the sky between the legs) stay."""
    cv2 = _cv2()
    count, labels, stats, _ = cv2.connectedComponentsWithStats((~mask).astype(np.uint8), connectivity=4)
    height, width = mask.shape
    out = mask.copy()
    limit = SMALL_HOLE_SHARE * mask.sum()
    for k in range(1, count):
        x, y, w, h, area = stats[k]
        inside = x > 0 and y > 0 and x + w < width and y + h < height
        if inside and area < limit:
            out[labels == k] = True
    return out


def _grow_legs(grey: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mask grown downwards, row by row, into pixels under its lower edge (a leg going on into the
    ground) that stand out from the background beside them and look like the subject above them.

    GrabCut loses a leg where the ground behind it has the leg's shades somewhere (a speckled field):
    its colour models are global. Row by row, a pixel just below the mask (LEG_WIDEN pixels to either
    side) joins it when it differs from the median of the free pixels within LEG_REACH of it by more
    than LEG_CONTRAST of their spread and is nearer the shade of the mask just above it."""
    cv2 = _cv2()
    height, width = mask.shape
    out = mask.copy()
    values = cv2.GaussianBlur(grey.astype(np.float32), (0, 0), GRAIN_SIGMA)
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        return out
    widen = np.ones((1, 2 * LEG_WIDEN + 1), np.uint8)
    for r in range(rows[0] + 1, height):
        above = out[r - 1]
        candidates = (cv2.dilate(above.astype(np.uint8)[None], widen)[0] > 0) & ~out[r]
        if not candidates.any():
            continue
        free = ~out[r]
        top = max(0, r - LEG_REACH)
        for x in np.flatnonzero(candidates):
            lo, hi = max(0, x - LEG_REACH), min(width, x + LEG_REACH + 1)
            beside = values[r, lo:hi][free[lo:hi]]
            inside = values[top:r, lo:hi][out[top:r, lo:hi]]
            if beside.size < 5 or inside.size < 3:
                continue
            background = float(np.median(beside))
            spread = float(np.median(np.abs(beside - background))) + 2.0
            subject = float(np.median(inside))
            value = float(values[r, x])
            apart = abs(value - background)
            out[r, x] = apart > LEG_CONTRAST * spread and abs(value - subject) < apart
    return out


def _segment(features: np.ndarray) -> np.ndarray:
    """One frame's subject: GrabCut from the border as background, then its largest component."""
    cv2 = _cv2()
    # GrabCut starts its colour models from OpenCV's global random generator: seeded for each frame, a
    # frame's mask does not depend on what was cut before it in this process (a second run, another video).
    cv2.setRNGSeed(GRABCUT_SEED)
    height, width = features.shape[:2]
    border = max(2, int(round(BORDER_SHARE * min(height, width))))
    seeds = np.full((height, width), cv2.GC_PR_FGD, np.uint8)
    seeds[:border], seeds[-border:] = cv2.GC_BGD, cv2.GC_BGD
    seeds[:, :border], seeds[:, -border:] = cv2.GC_BGD, cv2.GC_BGD
    background, foreground = np.zeros((1, 65)), np.zeros((1, 65))
    cv2.grabCut(np.ascontiguousarray(features), seeds, None, background, foreground, GRABCUT_ROUNDS,
                cv2.GC_INIT_WITH_MASK)
    subject = (seeds == cv2.GC_FGD) | (seeds == cv2.GC_PR_FGD)
    return _fill_small_holes(_largest_component(subject))


def still_silhouettes(frames: np.ndarray, max_side: int = 256) -> np.ndarray:
    """Silhouettes of the subject of each frame on its own: (T,h,w) float32 in [0,1].

    Each frame is segmented by GrabCut from its border (background) inwards: the subject must not fill
    the frame's edge. A frame that repeats the previous one (a held plate) reuses its mask. A mask that
    covers less than MIN_COVER or more than MAX_COVER of its frame is dropped (no evidence there; the fit
    bridges it). Raises VideoError for zero frames, a frame stack of the wrong shape, or when fewer than
    MIN_PLAUSIBLE_SHARE of the frames keep a subject.
    """
    frames = checked_frames(frames)
    count, height, width = frames.shape[:3]
    w, h = _target_size(width, height, max_side)
    monochrome = _monochrome(frames)
    masks = np.zeros((count, h, w), np.float32)
    previous = None
    for t in range(count):
        image = _resize(frames[t:t + 1], h, w)[0]
        if previous is not None and float(np.abs(image - previous).mean()) < HELD_FRAME:
            masks[t] = masks[t - 1]
            continue
        features = _grey_features(image) if monochrome else np.clip(image, 0, 255).astype(np.uint8)
        masks[t] = _largest_component(_grow_legs(image.mean(-1), _segment(features)))
        previous = image
    cover = masks.mean((1, 2))
    plausible = (cover >= MIN_COVER) & (cover <= MAX_COVER)
    masks[~plausible] = 0.0
    if plausible.sum() < max(1, MIN_PLAUSIBLE_SHARE * count):
        raise VideoError(f"Found no subject inside the frames' borders ({int(plausible.sum())} of {count} "
                         "frames show one): segmenting each frame on its own needs a subject that does not "
                         "fill the frame's edge; try background subtraction, a mask sequence or keypoints")
    return masks
