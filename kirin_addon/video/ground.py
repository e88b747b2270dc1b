"""Where the ground lies in a driving video, from its own pixels and silhouettes: the horizon (the row
where the background changes from sky to ground) and the contact row (where the subject's silhouette
meets the ground). With the creature's size they give the camera's tilt and height (kirin_addon/
video/fit_start.py): a film whose horizon sits below the middle of the frame was shot looking up a little,
and the hooves stand that far below it.

Rows are in the pixels of the frames given (y down from the top edge). numpy only.
"""

from __future__ import annotations

import numpy as np

from .silhouettes import _resize

HORIZON_BAND = (0.1, 0.95)  # of the height: where a horizon is looked for
STEP_ROWS = 0.02  # of the height: the band on either side of a row that its step compares (a sharp edge)
MIN_BACKGROUND = 0.3  # of a row's pixels must be background for the row to be read
MIN_STEP = 12.0  # brightness (0–255) between the bands: a weaker step is no horizon
MAX_SPREAD = 0.04  # of the height: the frames' horizons must agree this well
MIN_FRAMES = 0.5  # of the frames with a silhouette must show a horizon


def _row_step(profile: np.ndarray, valid: np.ndarray, band: int, lowest: int) -> tuple[int, float] | None:
    """(row, step) of the strongest brightness step of a background row profile above row `lowest`:
    the mean of the `band` valid rows above against the mean of those below."""
    height = len(profile)
    best: tuple[int, float] | None = None
    lo, hi = int(HORIZON_BAND[0] * height), min(int(HORIZON_BAND[1] * height), lowest)
    for row in range(max(lo, band), min(hi, height - band)):
        above, below = slice(row - band, row), slice(row, row + band)
        if valid[above].sum() < band // 2 or valid[below].sum() < band // 2:
            continue
        step = abs(float(profile[above][valid[above]].mean()) - float(profile[below][valid[below]].mean()))
        if best is None or step > best[1]:
            best = (row, step)
    return best


def horizon_row(frames: np.ndarray, masks: np.ndarray) -> float | None:
    """The horizon's row in the video's pixels: in each frame (T,H,W,3) the strongest step between the
    background's brightness above and below a row (the silhouette (T,h,w) left out), where it is at
    least MIN_STEP; None unless most frames show one and they agree within MAX_SPREAD of the height
    (a hand-held camera, an indoor scene, a frame without sky).

    The horizon is looked for above the row the subject stands on (`contact_row`): a camera above the
    ground sees it there, and below the feet lie the track's own edges (the bison plates' lower border
    steps as sharply as their horizon does)."""
    frames = np.asarray(frames)
    count, height, width = frames.shape[:3]
    masks = np.asarray(masks) > 0.5
    h, w = masks.shape[1:]
    band = max(2, int(round(STEP_ROWS * h)))
    standing = contact_row(masks, h)
    lowest = h if standing is None else int(np.floor(standing))
    found, seen = [], 0
    for t in range(count):
        if not masks[t].any():
            continue
        seen += 1
        grey = _resize(frames[t:t + 1], h, w)[0].mean(-1)  # area-averaged onto the masks' grid
        free = ~masks[t]
        share = free.mean(1)
        profile = np.where(share > 0, (grey * free).sum(1) / np.maximum(free.sum(1), 1), 0.0)
        step = _row_step(profile, share >= MIN_BACKGROUND, band, lowest)
        if step is not None and step[1] >= MIN_STEP:
            found.append(step[0] * height / h)
    if seen == 0 or len(found) < MIN_FRAMES * seen:
        return None
    found = np.array(found)
    centre = float(np.median(found))
    if float(np.median(np.abs(found - centre))) > MAX_SPREAD * height:
        return None
    return centre


def contact_row(masks: np.ndarray, image_height: int) -> float | None:
    """The row where the subject meets the ground, in the video's pixels: the median over the frames of
    the lowest row of each silhouette (T,h,w) (the feet most of the time; a gallop's flight is the
    minority); None without silhouettes."""
    masks = np.asarray(masks) > 0.5
    lowest = [np.flatnonzero(m.any(1))[-1] + 1 for m in masks if m.any()]
    if not lowest:
        return None
    return float(np.median(lowest)) * image_height / masks.shape[1]
