"""What a motion fitted to real footage must get right, measured without labels (issue 19).

Real video comes with no ground truth, but some things any fit of a walking or running animal must
show can be measured on the fit alone, and one on the video alone:

- **upright**: the body joint's turn from its rest orientation, read as pitch (the forward axis rising
  or falling), roll (the side axis) and tilt (the up axis from the vertical, so that a body on its back
  reads 180°). A frame is upright when pitch and roll lie within `UPRIGHT_DEG` and its up axis points
  up.
- **root path**: the body joint's step between frames in body sizes; a step over `ROOT_JUMP` is a jump
  no animal makes (a fit that flips between solutions does).
- **labelled keypoints** (`read_labels`, `labelled_pck`): points hand-labelled on a few frames (a CSV of
  frame, joint, x, y, confidence in the video's pixels), scored as PCK against the fit's projected
  joints; and the **silhouette IoU** of the fit's rendered mesh against the video's mask (`mask_iou`).
- **footfall frequency of the video** (`silhouette_stride_hz`): the spread of the silhouette's lowest
  band (the legs) rises and falls once per stride; its autocorrelation's first peak in the plausible
  band of stride periods gives the frequency. The fit's own footfall frequency is the gait measure of
  `gait.py` on its feet.

Canonical frame: +Z up, the rest pose facing −Y (kirin_addon/core/canonical.py). numpy only.
"""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

UPRIGHT_DEG = 25.0  # roll and pitch within this of the rest pose's: upright
ROOT_JUMP = 0.2  # body sizes between two frames: a jump
LEG_BAND = 0.35  # the lowest share of the silhouette's height read as legs
STRIDE_HZ = (0.5, 4.0)  # the stride frequencies the video's measure looks between
PCK_SHARE = 0.1  # a labelled point is found within this share of the frame's labelled extent

_FORWARD, _SIDE, _UP = np.array([0.0, -1.0, 0.0]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])


@dataclass
class FootageMeasures:
    frames: int
    upright_share: float  # of frames with |roll| and |pitch| ≤ UPRIGHT_DEG
    worst_tilt_deg: float  # the largest angle of the body's up axis from the vertical
    max_root_step: float  # body sizes between two frames
    root_jumps: int  # steps over ROOT_JUMP

    def as_dict(self) -> dict:
        return asdict(self)


def body_tilt(body: np.ndarray, rest: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pitch, roll, tilt) in degrees per frame of a body joint whose (T,3,3) world rotations are `body`
    and whose rest rotation is `rest` (3,3): the elevation of its forward axis and of its side axis,
    and the angle of its up axis from the vertical (0–180°: on its back reads 180°). A turn about the
    vertical is none of these."""
    delta = np.asarray(body, np.float64) @ np.asarray(rest, np.float64).T
    forward, side, up = delta @ _FORWARD, delta @ _SIDE, delta @ _UP
    pitch = np.degrees(np.arcsin(np.clip(forward[:, 2], -1.0, 1.0)))
    roll = np.degrees(np.arcsin(np.clip(side[:, 2], -1.0, 1.0)))
    tilt = np.degrees(np.arccos(np.clip(up[:, 2], -1.0, 1.0)))
    return pitch, roll, tilt


def measure_fit(body: np.ndarray, rest: np.ndarray, root: np.ndarray, body_size: float) -> FootageMeasures:
    """The label-free measures of a fit: (T,3,3) body rotations, its rest rotation, (T,3) body
    positions, the body size (the same units). Upright: |pitch| and |roll| within UPRIGHT_DEG and the
    up axis above the horizontal."""
    pitch, roll, tilt = body_tilt(body, rest)
    upright = (np.abs(pitch) <= UPRIGHT_DEG) & (np.abs(roll) <= UPRIGHT_DEG) & (tilt < 90.0)
    steps = np.linalg.norm(np.diff(np.asarray(root, np.float64), axis=0), axis=1) / max(body_size, 1e-12)
    return FootageMeasures(
        frames=len(tilt),
        upright_share=float(np.mean(upright)) if len(tilt) else 0.0,
        worst_tilt_deg=float(tilt.max()) if len(tilt) else 0.0,
        max_root_step=float(steps.max()) if len(steps) else 0.0,
        root_jumps=int(np.sum(steps > ROOT_JUMP)),
    )


def leg_spread(masks: np.ndarray) -> np.ndarray:
    """(T,) the horizontal spread (standard deviation of x, in pixels) of each (H,W) mask's lowest
    LEG_BAND of its height; NaN where a mask is empty."""
    out = np.full(len(masks), np.nan)
    for t, mask in enumerate(np.asarray(masks, bool)):
        rows = np.flatnonzero(mask.any(axis=1))
        if rows.size < 2:
            continue
        top, bottom = rows[0], rows[-1]
        band = mask[int(bottom - LEG_BAND * (bottom - top)):bottom + 1]
        xs = np.nonzero(band)[1]
        if xs.size:
            out[t] = float(xs.std())
    return out


def silhouette_stride_hz(masks: np.ndarray, fps: float) -> float | None:
    """The stride frequency a sequence of (T,H,W) silhouettes shows: the first autocorrelation peak of
    the legs' spread (`leg_spread`) between the periods of STRIDE_HZ; None without one."""
    spread = leg_spread(masks)
    valid = np.isfinite(spread)
    if valid.sum() < 8:
        return None
    signal = np.interp(np.arange(len(spread)), np.flatnonzero(valid), spread[valid])
    signal = signal - signal.mean()
    if not np.any(signal):
        return None
    lags = np.arange(len(signal))
    full = np.correlate(signal, signal, mode="full")[len(signal) - 1:]
    auto = full / (full[0] * (len(signal) - lags) / len(signal))  # unbiased, 1 at lag 0
    shortest, longest = int(np.floor(fps / STRIDE_HZ[1])), int(np.ceil(fps / STRIDE_HZ[0]))
    longest = min(longest, len(signal) // 2)
    best = None
    for lag in range(max(shortest, 2), longest):
        if auto[lag] > auto[lag - 1] and auto[lag] >= auto[lag + 1] and auto[lag] > 0.2:
            best = lag
            break
    if best is None:
        return None
    left, centre, right = auto[best - 1], auto[best], auto[best + 1]  # a parabola through the peak
    curve = left - 2 * centre + right
    offset = 0.5 * (left - right) / curve if curve < 0 else 0.0
    return float(fps / (best + offset))


@dataclass
class Labels:
    """Hand-labelled 2D points: `points[frame][joint]` = (x, y, confidence), video pixels (x right, y
    down, origin the top-left corner), frames 0-based video frames."""

    points: dict[int, dict[str, tuple[float, float, float]]]

    @property
    def frames(self) -> list[int]:
        return sorted(self.points)

    def joints(self) -> list[str]:
        return sorted({joint for frame in self.points.values() for joint in frame})

    def subset(self, frames) -> Labels:
        keep = set(int(f) for f in frames)
        return Labels({f: dict(p) for f, p in self.points.items() if f in keep})


def read_labels(path: Path) -> Labels:
    """Labels from a CSV with the header frame, joint, x, y[, confidence] ('#' lines are comments)."""
    rows = [line for line in Path(path).read_text().splitlines() if line.strip() and not line.startswith("#")]
    points: dict[int, dict[str, tuple[float, float, float]]] = {}
    for row in csv.DictReader(rows):
        confidence = float(row.get("confidence") or 1.0)
        points.setdefault(int(row["frame"]), {})[row["joint"].strip()] = \
            (float(row["x"]), float(row["y"]), confidence)
    return Labels(points)


def labelled_pck(predicted: dict[int, dict[str, np.ndarray]], labels: Labels,
                 share: float = PCK_SHARE) -> tuple[float, int]:
    """(the share of labelled points whose predicted pixel lies within `share` × the larger side of the
    frame's labelled points' bounding box, how many were scored). `predicted[frame][joint]` (2,) pixels;
    a labelled joint with no prediction counts as missed."""
    hits, count = 0, 0
    for frame, truth in labels.points.items():
        xy = np.array([p[:2] for p in truth.values()])
        reach = share * float(np.ptp(xy, axis=0).max()) if len(xy) > 1 else 0.0
        found = predicted.get(frame, {})
        for joint, (x, y, _) in truth.items():
            count += 1
            guess = found.get(joint)
            if guess is None or not np.all(np.isfinite(guess)):
                continue
            hits += int(np.hypot(*(np.asarray(guess, np.float64) - (x, y))) <= reach)
    return (hits / count if count else 0.0), count


def mask_iou(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union of two boolean masks of one size (1 when both are empty)."""
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    union = np.count_nonzero(a | b)
    return float(np.count_nonzero(a & b) / union) if union else 1.0
