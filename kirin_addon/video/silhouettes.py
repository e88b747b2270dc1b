"""Silhouettes of the subject of a driving video: background subtraction for a static or moving
camera (`background_silhouettes`) or the user's own mask sequence (`mask_silhouettes`).

Masks are (T,h,w) float32 in [0,1] with the video's aspect. numpy and scipy only; PyAV (for mask
images) is imported lazily. Bad input raises `VideoError` with a message for the status bar.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .video_io import VideoError

__all__ = ["background_silhouettes", "mask_silhouettes"]

# ------------------------------------------------------------------------------ image helpers


def _resize(images: np.ndarray, height: int, width: int) -> np.ndarray:
    """(T,H,W[,C]) → (T,height,width[,C]) float32: box average by the whole shrink factor, then
    bilinear sampling at pixel centres (area-like when shrinking, bilinear when growing)."""
    images = np.asarray(images)
    src_h, src_w = images.shape[1:3]
    if (src_h, src_w) == (height, width):
        return images.astype(np.float32, copy=False)
    k = max(1, min(src_h // height, src_w // width))
    if k > 1:
        # Rows, then columns, summed slice by slice: several times faster than mean over strided axes.
        count, hh, ww, tail = images.shape[0], src_h // k * k, src_w // k * k, images.shape[3:]
        rows = images[:, :hh].reshape(count, hh // k, k, -1)
        summed = rows[:, :, 0].astype(np.float32)
        for i in range(1, k):
            summed += rows[:, :, i]
        cols = summed.reshape(count, hh // k, src_w, *tail)[:, :, :ww]
        cols = cols.reshape(count, hh // k, ww // k, k, *tail)
        images = cols[:, :, :, 0].copy()
        for j in range(1, k):
            images += cols[:, :, :, j]
        images *= 1.0 / (k * k)
    else:
        images = images.astype(np.float32, copy=False)
    grid_h, grid_w = images.shape[1:3]
    if (grid_h * k, grid_w * k, grid_h, grid_w) == (src_h, src_w, height, width):
        return images  # the box average is exactly the grid: bilinear sampling would be the identity

    def taps(n_out, n_src, n_grid):
        centre = (np.arange(n_out) + 0.5) * n_src / n_out - 0.5  # source pixel coordinates
        pos = np.clip((centre + 0.5) / k - 0.5, 0, n_grid - 1)  # on the box-averaged grid
        lo = np.floor(pos).astype(int)
        hi = np.minimum(lo + 1, n_grid - 1)
        return lo, hi, (pos - lo).astype(np.float32)

    lo, hi, a = taps(height, src_h, grid_h)
    shape = (1, -1) + (1,) * (images.ndim - 2)
    images = images[:, lo] * (1 - a.reshape(shape)) + images[:, hi] * a.reshape(shape)
    lo, hi, a = taps(width, src_w, grid_w)
    shape = (1, 1, -1) + (1,) * (images.ndim - 3)
    return images[:, :, lo] * (1 - a.reshape(shape)) + images[:, :, hi] * a.reshape(shape)


def _target_size(width: int, height: int, max_side: int | None) -> tuple[int, int]:
    if max_side is None or max(width, height) <= max_side:
        return width, height
    scale = max_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _otsu(values: np.ndarray, bins: int = 256) -> float:
    hi = float(values.max())
    if hi <= 0:
        return 0.0
    hist, edges = np.histogram(values, bins=bins, range=(0.0, hi))
    centres = (edges[:-1] + edges[1:]) / 2
    w0 = np.cumsum(hist).astype(np.float64)
    w1 = w0[-1] - w0
    m0 = np.cumsum(hist * centres)
    mean0 = m0 / np.maximum(w0, 1)
    mean1 = (m0[-1] - m0) / np.maximum(w1, 1)
    between = w0 * w1 * (mean0 - mean1) ** 2
    return float(edges[int(np.argmax(between[:-1])) + 1])


def _erode(masks: np.ndarray) -> np.ndarray:
    """Binary erosion of each (h,w) image of a (T,h,w) stack by the 4-neighbour cross, the edge
    replicated (no border artefacts); numpy shifts: far faster than scipy on small images."""
    out = masks.copy()
    out[:, 1:] &= masks[:, :-1]
    out[:, :-1] &= masks[:, 1:]
    out[:, :, 1:] &= masks[:, :, :-1]
    out[:, :, :-1] &= masks[:, :, 1:]
    return out


def _dilate(masks: np.ndarray) -> np.ndarray:
    return ~_erode(~masks)


def _clean_masks(masks: np.ndarray, min_area: int) -> np.ndarray:
    """(T,h,w) raw foreground masks → each opened, closed (twice), hole-filled and reduced to its largest
    4-connected component (none where that is smaller than `min_area` pixels). One scipy call per step for
    the whole stack, each image on its own (no connectivity across frames)."""
    from scipy import ndimage

    masks = _dilate(_erode(masks))
    masks = _erode(_erode(_dilate(_dilate(masks))))
    flat = np.zeros((3, 3, 3), bool)
    flat[1] = ndimage.generate_binary_structure(2, 1)
    # Holes: background components that touch no image edge (labelling beats binary_fill_holes here).
    gaps, count = ndimage.label(~masks, structure=flat)
    outside = np.zeros(count + 1, bool)
    for edge in (gaps[:, 0], gaps[:, -1], gaps[:, :, 0], gaps[:, :, -1]):
        outside[edge.ravel()] = True
    outside[0] = True
    masks |= ~outside[gaps]
    labels, count = ndimage.label(masks, structure=flat)
    if count == 0:
        return masks
    sizes = np.bincount(labels.ravel())[1:]
    frames = np.array([where[0].start for where in ndimage.find_objects(labels)])
    # Per frame the largest component (the first of equal ones): sorted by frame, then size descending.
    order = np.lexsort((-sizes, frames))
    first = order[np.r_[True, frames[order][1:] != frames[order][:-1]]]
    keep = np.zeros(count + 1, bool)
    keep[first[sizes[first] >= min_area] + 1] = True
    return keep[labels]


# ------------------------------------------------------------------------------ silhouettes

MIN_COLOUR_DISTANCE = 20.0  # RGB distance (0–255 units) below which a pixel is never foreground
NOISE_FACTOR = 4.0  # ... nor below this many times the typical background difference
MIN_COVER, MAX_COVER = 0.001, 0.9  # a plausible silhouette covers this fraction of the frame
MIN_PLAUSIBLE_SHARE = 0.2  # of the frames must keep a plausible silhouette, else "no moving subject"
# A moving camera (hand-held, panning):
STILL_CAMERA_PX = 0.75  # image drift (pixels at the mask size) below which the camera counts as static
MOTION_SIDE = 128  # longest side of the grey frames the camera motion is measured on
WINDOW_FRAMES = 30  # a frame's background: aligned frames at most this far away (in frames of the clip)
WINDOW_SAMPLES = 9  # ... about this many of them, spread evenly over those that still agree with it
ALIGN_TOLERANCE = 8.0  # median grey difference (0–255) up to which a shifted frame agrees with another
KEY_TOLERANCE = 4.0  # ... and up to which the camera motion is still measured against the same key frame
BLOCK_FRAMES = 6  # consecutive frames that share one aligned background (its median is the cost)
MIN_BACKGROUND_SAMPLES = 3  # a pixel seen by fewer aligned frames has no background: never foreground
MIN_VALID_SHARE = 0.5  # a frame whose background covers less of its view gets no silhouette


def _tukey(n: int, alpha: float = 0.25) -> np.ndarray:
    """A window flat in the middle and tapered at the ends: unlike Hann it weighs the background at the
    edges of the view as much as the subject in the middle."""
    x = np.linspace(0.0, 1.0, n)
    window = np.ones(n)
    edge = np.minimum(x, 1 - x) < alpha / 2
    window[edge] = 0.5 * (1 - np.cos(2 * np.pi / alpha * np.minimum(x, 1 - x)[edge]))
    return window


def _phase_candidates(later: np.ndarray, earlier: np.ndarray, count: int = 3) -> list[tuple[int, int]]:
    """Whole-pixel translations (dy, dx) that may carry `earlier` onto `later`, both rfft2 spectra of
    windowed (gh, gw) grey images: the highest peaks of their phase correlation, strongest first."""
    gh, gw = later.shape[0], (later.shape[1] - 1) * 2
    cross = later * np.conj(earlier)
    magnitude = np.abs(cross)
    # Whitened (phase only); the relative floor keeps a flat frame's round-off from making a peak.
    cross /= magnitude + 1e-6 * magnitude.max() + 1e-20
    corr = np.fft.irfft2(cross, s=(gh, gw)).ravel()
    top = np.argpartition(corr, -4 * count)[-4 * count:]
    peaks: list[tuple[int, int]] = []
    for index in top[np.argsort(-corr[top])]:
        y, x = divmod(int(index), gw)
        y, x = (y if y < gh // 2 else y - gh), (x if x < gw // 2 else x - gw)
        if all(abs(y - py) > 1 or abs(x - px) > 1 for py, px in peaks):  # not a shoulder of a higher peak
            peaks.append((y, x))
            if len(peaks) == count:
                break
    return peaks


def _mismatch(later: np.ndarray, earlier: np.ndarray, dy: int, dx: int) -> float:
    """Median absolute difference of `later` and `earlier` moved by (dy, dx) whole pixels, over their
    overlap (inf below a quarter of the view): small when most of the picture agrees."""
    height, width = later.shape
    if abs(dy) * 2 > height or abs(dx) * 2 > width:
        return math.inf
    a = later[max(0, dy):height + min(0, dy):2, max(0, dx):width + min(0, dx):2]  # every 4th pixel will do
    b = earlier[max(0, -dy):height + min(0, -dy):2, max(0, -dx):width + min(0, -dx):2]
    diff = np.abs(a - b).ravel()
    return float(np.partition(diff, diff.size // 2)[diff.size // 2])


def _best_shift(later: np.ndarray, earlier: np.ndarray, candidates) -> tuple[np.ndarray, float]:
    """The translation (dy, dx) carrying `earlier` onto `later` under which most of the picture agrees,
    and its `_mismatch`: the best of no motion and `candidates`, then downhill in whole pixels (phase
    peaks can be off on smooth or repetitive texture), then a parabola through the neighbours for
    sub-pixel."""
    known: dict[tuple[int, int], float] = {}

    def cost(spot: tuple[int, int]) -> float:
        if spot not in known:
            known[spot] = _mismatch(later, earlier, *spot)
        return known[spot]

    # On a tie (a flat picture) the first wins: no motion, then the candidates in their order.
    best = min([(0, 0)] + [(int(round(y)), int(round(x))) for y, x in candidates], key=cost)
    for _ in range(32):
        y, x = best
        step = min(((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)), key=cost)
        if cost(step) >= cost(best):
            break
        best = step
    y, x = best
    shift = np.array(best, dtype=float)
    sides = ((cost((y - 1, x)), cost((y + 1, x))), (cost((y, x - 1)), cost((y, x + 1))))
    for axis, (before, after) in enumerate(sides):
        curve = before - 2 * cost(best) + after
        if math.isfinite(curve) and curve > 0:
            shift[axis] += float(np.clip(0.5 * (before - after) / curve, -0.5, 0.5))
    return shift, cost(best)


def _camera_path(small: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, int]:
    """Where the scene sits in each frame: path (T,2), (dy, dx) in pixels of `small` (T,h,w,3) — frame t
    shows at pixel p what frame s shows at p + path[s] - path[t] — and the grey frames (T,gh,gw) it was
    measured on, `scale` times smaller (None when too small to measure: then the path is zero).

    Each frame's translation against a key frame, on grey frames downscaled to MOTION_SIDE: of no motion,
    the previous frame's and the highest peaks of their phase correlation, the one under which most of the
    picture agrees (the lowest median difference) — the background's while it covers most of the view,
    not a sharp-edged subject's, which dominates the phase. Measured against a key frame rather than the
    previous frame, so that a static camera stays exactly still (no drift summed over thousands of steps);
    once a frame no longer agrees with the key (KEY_TOLERANCE) it is measured against the previous frame
    and becomes the key, unless it agrees with neither (ALIGN_TOLERANCE) and the previous frame did. A
    hand-held camera's turn and zoom are small from one frame to the next, not over seconds: hence the
    short windows of `_aligned_distance`.
    """
    count, height, width = small.shape[:3]
    k = max(1, math.ceil(max(height, width) / MOTION_SIDE))
    gh, gw = height // k, width // k
    if min(gh, gw) < 8:
        return np.zeros((count, 2)), None, k
    window = np.outer(_tukey(gh), _tukey(gw))
    grey = np.empty((count, gh, gw), np.float32)
    path = np.zeros((count, 2))
    key, relative, lost = 0, np.zeros(2), False
    for s in range(0, count, 32):  # in chunks: the spectra of a long clip need not all be in memory
        chunk = small[s:s + 32, :gh * k, :gw * k]
        part = grey[s:s + 32]
        part[:] = (chunk[..., 0] + chunk[..., 1] + chunk[..., 2]).reshape(-1, gh, k, gw, k).sum((2, 4))
        part *= 1 / (3 * k * k)
        spectra = np.fft.rfft2((part - part.mean((1, 2), keepdims=True)) * window)
        if s == 0:
            key_spectrum = previous = spectra[0]
        for t in range(max(s, 1), s + len(part)):
            spectrum = spectra[t - s]
            candidates = [relative, *_phase_candidates(spectrum, key_spectrum)]
            shift, error = _best_shift(grey[t], grey[key], candidates)
            if error <= KEY_TOLERANCE and abs(shift[0]) * 4 <= gh and abs(shift[1]) * 4 <= gw:
                path[t], relative = path[key] + shift * k, shift
            else:
                if key != t - 1:
                    candidates = _phase_candidates(spectrum, previous)
                    shift, error = _best_shift(grey[t], grey[t - 1], candidates)
                    path[t] = path[t - 1] + shift * k
                else:
                    path[t] = path[key] + shift * k
                # A frame unlike the previous one too is an odd one out (a flash, something passing the
                # lens): it says nothing about the camera, and the key stays — unless the previous frame
                # was odd as well (a cut: start afresh from here).
                if error <= ALIGN_TOLERANCE or lost:
                    key, key_spectrum, relative, lost = t, spectrum, np.zeros(2), False
                else:
                    path[t], lost = path[t - 1], True
            previous = spectrum
    return path, grey, k


def _sample(image: np.ndarray, y0: float, x0: float, out_h: int, out_w: int):
    """Bilinear `image`[y0 + i, x0 + j] for the (out_h, out_w) output grid, only inside the image: the
    values of the valid rectangle and its rows and columns (slices of the output grid)."""

    def axis(start: float, n: int, size: int):
        base = math.floor(start)
        frac = start - base
        first = max(0, -base)
        last = min(n, size - base - (1 if frac > 0 else 0))
        return base, frac, first, max(first, last)

    by, fy, i0, i1 = axis(y0, out_h, image.shape[0])
    bx, fx, j0, j1 = axis(x0, out_w, image.shape[1])
    rows, cols = slice(i0, i1), slice(j0, j1)
    if i1 == i0 or j1 == j0:
        return image[:0, :0], rows, cols
    part = image[by + i0:by + i1 + (fy > 0), bx + j0:bx + j1 + (fx > 0)]
    if fy > 0:
        part = part[:-1] * (1 - fy) + part[1:] * fy
    if fx > 0:
        part = part[:, :-1] * (1 - fx) + part[:, 1:] * fx
    return part, rows, cols


def _rgb_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distance of (...,3) colours, channel by channel (a sum over a last axis of 3 is slow)."""
    diff = a - b
    out = diff[..., 0] ** 2
    out += diff[..., 1] ** 2
    out += diff[..., 2] ** 2
    return np.sqrt(out, out=out)


def _sorted_layers(layers: list[np.ndarray]) -> list[np.ndarray]:
    """The layers (equal shapes) sorted element-wise, smallest first: an odd-even transposition network of
    np.minimum/np.maximum, several times faster than np.sort across a short first axis."""
    layers = list(layers)
    n = len(layers)
    for rank in range(n):
        for i in range(rank % 2, n - 1, 2):
            low = np.minimum(layers[i], layers[i + 1])
            np.maximum(layers[i], layers[i + 1], out=layers[i + 1])
            layers[i] = low
    return layers


def _background_window(centre: int, offsets: np.ndarray, grey: np.ndarray, scale: int) -> list[int]:
    """The frames whose aligned median makes the background of frame `centre` (itself included): about
    WINDOW_SAMPLES, spread evenly over the span (within WINDOW_FRAMES) where frames still agree with it
    once shifted by `offsets` (frame s shows at p what `centre` shows at p + offsets[s]), each agreeing
    itself. The span adapts to the stride and to the camera: short where it turns or zooms."""
    count = len(grey)
    known: dict[int, bool] = {}

    def agrees(s: int) -> bool:
        if s not in known:
            dy, dx = (int(round(v / scale)) for v in offsets[s])
            known[s] = _mismatch(grey[centre], grey[s], dy, dx) <= ALIGN_TOLERANCE
        return known[s]

    # The span: the farthest agreeing of a few frames at growing distances on each side.
    steps = np.unique(np.geomspace(1, WINDOW_FRAMES, 8).round().astype(int))
    first = min([centre] + [centre - d for d in steps if centre - d >= 0 and agrees(centre - d)])
    last = max([centre] + [centre + d for d in steps if centre + d < count and agrees(centre + d)])
    spread = np.unique(np.r_[np.linspace(first, last, WINDOW_SAMPLES).round().astype(int), centre])
    return [int(s) for s in spread if agrees(int(s))]


def _aligned_distance(small: np.ndarray, path: np.ndarray, grey: np.ndarray,
                      scale: int) -> tuple[np.ndarray, np.ndarray]:
    """RGB distance of each frame to its own background, for a moving camera: (T,h,w) distances, 0 where
    the frame has no background, and (T,h,w) where it has one.

    Each block of BLOCK_FRAMES frames shares a background canvas in the coordinates of its middle frame:
    the per-pixel median of up to WINDOW_SAMPLES frames within WINDOW_FRAMES, each shifted (sub-pixel)
    onto it by the camera path (`_camera_path`, measured on `grey`, `scale` times smaller), of those that
    then agree with it (a median grey difference within ALIGN_TOLERANCE: not yet turned or zoomed away);
    each frame of the block then reads its background off the canvas.
    """
    count, height, width = small.shape[:3]
    distance = np.zeros((count, height, width), np.float32)
    valid = np.zeros((count, height, width), bool)
    for start in range(0, count, BLOCK_FRAMES):
        block = range(start, min(count, start + BLOCK_FRAMES))
        centre = (block[0] + block[-1]) // 2
        offsets = path[centre] - path  # frame s shows at p what the middle frame shows at p + offsets[s]
        window = _background_window(centre, offsets, grey, scale)
        if len(window) < MIN_BACKGROUND_SAMPLES:
            continue  # the view changes faster than a background can be gathered: no silhouettes here
        top = math.floor(min(offsets[t, 0] for t in block))
        left = math.floor(min(offsets[t, 1] for t in block))
        canvas_h = math.ceil(max(offsets[t, 0] for t in block)) + height + 1 - top
        canvas_w = math.ceil(max(offsets[t, 1] for t in block)) + width + 1 - left
        # Missing samples are +inf: sorted, they come last, and the median is taken over the others.
        layers = []
        seen = np.zeros((canvas_h, canvas_w), np.int32)
        for s in window:
            layer = np.full((canvas_h, canvas_w, 3), np.inf, np.float32)
            part, rows, cols = _sample(small[s], top - offsets[s, 0], left - offsets[s, 1],
                                       canvas_h, canvas_w)
            layer[rows, cols] = part
            seen[rows, cols] += 1
            layers.append(layer)
        middle = np.maximum(seen - 1, 0) // 2
        background = np.choose(middle[:, :, None], _sorted_layers(layers))
        known = (seen >= MIN_BACKGROUND_SAMPLES).astype(np.float32)
        background[known == 0] = 0.0
        for t in block:
            y0, x0 = offsets[t, 0] - top, offsets[t, 1] - left
            back, rows, cols = _sample(background, y0, x0, height, width)
            ok, _, _ = _sample(known, y0, x0, height, width)
            ok = ok > 0.999  # every bilinear tap has a background
            distance[t, rows, cols] = np.where(ok, _rgb_distance(small[t, rows, cols], back), 0.0)
            valid[t, rows, cols] = ok
    return distance, valid


def background_silhouettes(frames: np.ndarray, max_side: int = 256, threshold: float | None = None, *,
                           soft_edge: float = 0.0) -> np.ndarray:
    """Silhouettes of the moving subject, for a static or a slowly moving (hand-held, panning) camera:
    (T,h,w) float32 in [0,1], the longer side at most `max_side` (the video's aspect).

    The camera's image motion is measured first (`_camera_path`: a translation per frame, from phase
    correlation checked against the pixels). A static camera's background is the per-pixel temporal median
    of the clip (at most 64 evenly spread frames), as ever. A moving camera's is, for each frame, the median
    of about WINDOW_SAMPLES frames within WINDOW_FRAMES of it, each shifted onto it, of those that still
    agree with it once shifted (`_aligned_distance`: a turn or zoom ends the window); pixels that fewer than
    MIN_BACKGROUND_SAMPLES of them see are never foreground. A pixel is foreground where its RGB distance to
    the background exceeds `threshold` (0–255 units; default: Otsu on the distance histogram, at least
    MIN_COLOUR_DISTANCE and NOISE_FACTOR × the median distance). Each mask is opened, closed, hole-filled
    and reduced to its largest connected component; `soft_edge` > 0 blurs the edges by a Gaussian of that
    many pixels.

    A frame whose mask is empty or covers nearly everything, that changed almost everywhere (a cut, a turn
    or zoom the translation cannot follow, a subject in front of the lens) or whose background covers less
    than MIN_VALID_SHARE of it gets an empty mask — no silhouette evidence there, the fit bridges it.

    Only what moves against the background is found: with a moving camera the window is a few seconds at
    most, and a subject that stays put for as long merges into its background (only its moving parts are
    found); a subject that fills most of the view becomes the background the alignment follows. Raises
    VideoError ("no moving subject") when fewer than MIN_PLAUSIBLE_SHARE of the frames (at least 3) keep a
    mask: a still scene, a camera whose view changes faster than a background can be gathered, a subject
    that never moves.
    """
    from scipy import ndimage

    frames = checked_frames(frames)
    count, height, width = frames.shape[:3]
    if count < 3:
        raise VideoError(f"Background subtraction needs a few frames to find a moving subject; got {count}: "
                         "no moving subject can be told from the background")
    w, h = _target_size(width, height, max_side)
    small = np.empty((count, h, w, 3), dtype=np.float32)
    for s in range(0, count, 16):
        small[s:s + 16] = _resize(frames[s:s + 16], h, w)
    path, grey, scale = _camera_path(small)
    if grey is None or np.ptp(path, axis=0).max() < STILL_CAMERA_PX:
        sample = np.unique(np.linspace(0, count - 1, min(count, 64)).round().astype(int))
        background = np.median(small[sample], axis=0)
        distance = _rgb_distance(small, background)  # (T,h,w)
        valid = np.ones(distance.shape, bool)
    else:
        distance, valid = _aligned_distance(small, path, grey, scale)
    del small
    seen = valid.mean((1, 2))
    if threshold is None:
        sampled = distance[::max(1, count // 32)][valid[::max(1, count // 32)]]
        noise = float(np.median(sampled)) if sampled.size else 0.0
        threshold = max(_otsu(sampled) if sampled.size else 0.0, MIN_COLOUR_DISTANCE, NOISE_FACTOR * noise)
    min_area = max(4, int(MIN_COVER * h * w))
    masks = np.concatenate([_clean_masks(distance[s:s + 128] > threshold, min_area)  # chunks: int32 labels
                            for s in range(0, count, 128)])
    cover = masks.mean((1, 2))
    # Most of a frame is background, so its median change is noise; a frame whose median pixel changed by
    # more than MIN_COLOUR_DISTANCE changed everywhere (camera motion the alignment missed, a cut, lighting).
    typical = np.array([np.median(d[v]) if s >= MIN_VALID_SHARE else np.inf
                        for d, v, s in zip(distance, valid, seen, strict=True)])
    busy = typical > MIN_COLOUR_DISTANCE
    plausible = (cover >= MIN_COVER) & (cover <= MAX_COVER) & ~busy
    if plausible.sum() < max(3, MIN_PLAUSIBLE_SHARE * count):
        full = int(((cover > MAX_COVER) | busy).sum())
        empty = int(((cover < MIN_COVER) & ~busy).sum())
        raise VideoError(f"Found no moving subject in the video ({empty} of {count} frames show nothing "
                         f"moving, {full} change almost everywhere); background subtraction needs a subject "
                         "that moves against a background the camera keeps in view; give a mask sequence, "
                         "tracks or keypoints instead")
    result = np.where(plausible[:, None, None], masks, False).astype(np.float32)
    if soft_edge > 0:
        result = np.clip(ndimage.gaussian_filter(result, sigma=(0, soft_edge, soft_edge)), 0, 1)
    return result


def checked_frames(frames) -> np.ndarray:
    """The frames as an array (T,H,W,3), T ≥ 1; VideoError for another shape or none at all."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise VideoError(f"Frames must have shape (T, H, W, 3), got {frames.shape}")
    if frames.shape[0] == 0:
        raise VideoError("The video has zero frames")
    return frames


def _read_mask_image(path: Path) -> np.ndarray:
    """One mask image as float32 (H,W) in [0,1]: its alpha where it has transparency, else the
    brightest channel (white = subject)."""
    if not path.is_file():
        raise VideoError(f"Mask image not found: {path}")
    try:
        import av
    except ImportError:  # pragma: no cover - the backend has PyAV; the engine's own PNGs still read
        from ..library.render import read_png

        try:
            return read_png(path).max(-1).astype(np.float32) / 255
        except Exception as exc:
            raise VideoError(f"Cannot read mask image {path.name} without PyAV: {exc}") from exc
    try:
        with av.open(str(path)) as container:
            frame = next(container.decode(video=0))
            rgba = frame.to_ndarray(format="rgba")
    except (av.FFmpegError, StopIteration, OSError, IndexError) as exc:
        raise VideoError(f"Cannot read mask image {path.name}: not an image FFmpeg understands") from exc
    alpha = rgba[..., 3]
    channel = alpha if alpha.min() < 255 else rgba[..., :3].max(-1)
    return channel.astype(np.float32) / 255


def mask_silhouettes(masks_or_paths, size: tuple[int, int] | None = None) -> np.ndarray:
    """The user's own mask sequence as silhouettes (T,h,w) float32 in [0,1].

    Accepts an array (T,h,w) or (T,h,w,C) (bool, uint8 0–255 or float 0–1; with channels, the alpha
    of RGBA where it has transparency, else the brightest channel), a list of image paths (PNG or
    anything FFmpeg reads; one per frame, all the same size), a folder of PNGs (sorted by name), or
    one video file of masks. White (or opaque) is the subject. `size` = (w, h) resamples them.
    """
    if isinstance(masks_or_paths, (str, Path)):
        source = Path(masks_or_paths)
        if source.is_dir():
            files = sorted(source.glob("*.png")) or sorted(source.glob("*.PNG"))
            if not files:
                raise VideoError(f"No PNG mask images in folder {source}")
            masks_or_paths = files
        else:
            from .video_io import read_video

            masks_or_paths = read_video(source).frames
    if isinstance(masks_or_paths, (list, tuple)) and masks_or_paths and \
            isinstance(masks_or_paths[0], (str, Path)):
        images = [_read_mask_image(Path(p)) for p in masks_or_paths]
        shapes = {im.shape for im in images}
        if len(shapes) > 1 and size is None:
            first = images[0].shape
            odd = next(i for i, im in enumerate(images) if im.shape != first)
            raise VideoError(f"Mask images differ in size: {Path(masks_or_paths[0]).name} is "
                             f"{first[1]}×{first[0]}, {Path(masks_or_paths[odd]).name} "
                             f"{images[odd].shape[1]}×{images[odd].shape[0]}")
        if size is not None:
            images = [_resize(im[None], int(size[1]), int(size[0]))[0] for im in images]
        masks = np.stack(images)
    else:
        masks = np.asarray(masks_or_paths)
        if masks.ndim == 0 or masks.shape[0] == 0:
            raise VideoError("The mask sequence has zero frames")
        if masks.ndim < 3:
            raise VideoError(f"Masks must be a sequence of images (T, h, w), got shape {masks.shape}")
        if masks.ndim == 4:
            if masks.shape[-1] == 4 and (masks[..., 3] < masks[..., 3].max()).any():
                masks = masks[..., 3]
            else:
                masks = masks[..., :3].max(-1) if masks.shape[-1] >= 3 else masks[..., 0]
        elif masks.ndim != 3:
            raise VideoError(f"Masks must have shape (T, h, w) or (T, h, w, C), got {masks.shape}")
        if masks.dtype == np.bool_:
            masks = masks.astype(np.float32)
        elif masks.dtype == np.uint8:
            masks = masks.astype(np.float32) / 255
        else:
            masks = masks.astype(np.float32)
            if not np.isfinite(masks).all():
                raise VideoError("Mask values must be finite numbers")
            if masks.min() < 0 or masks.max() > 1:
                if masks.min() >= 0 and masks.max() <= 255:
                    masks = masks / 255
                else:
                    raise VideoError(f"Mask values must lie in [0, 1] or [0, 255], found "
                                     f"{masks.min():.3g}…{masks.max():.3g}")
        if size is not None:
            masks = _resize(masks, int(size[1]), int(size[0]))
    if masks.shape[0] == 0:
        raise VideoError("The mask sequence has zero frames")
    return np.clip(masks, 0, 1).astype(np.float32)

