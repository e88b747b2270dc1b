"""Motion metrics: foot contact, skating, penetration, jitter, bone length, drift, gait, filters.

Every later feature and benchmark measures motion with this module, so the definitions live here.

Conventions for every function:

- `positions` are (T,J,3) joint head positions in metres (armature space of the rig, canonical
  frame: +Z up). Functions take positions rather than (rig, motion) so that any source works
  (forward kinematics, generated joint positions, mesh vertices); `positions_of` turns a rig and a
  Motion into them, and `report.evaluate_motion` does everything from a rig and a Motion.
- `up` is the up axis (default +Z, normalised here). *Height* is the component along `up`;
  *horizontal* is the component perpendicular to it.
- *Body size* is `Rig.body_size` (largest side of the rest bounding box) when a rig is at hand,
  else `estimate_body_size(positions)`. Defaults are given in body sizes so that they suit a mouse
  and a dragon alike; "relative" (`*_rel`) values are divided by it.
- "Per frame" quantities are between consecutive frames; multiply by fps for per second.
- Values that cannot be measured (too few frames, nothing finite) are NaN; `report.MotionReport.as_dict`
  writes them as null.

numpy only: this runs inside Blender, which has no scipy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.motion import Motion, joint_positions
from ..core.rig import Rig

Z_UP = np.array([0.0, 0.0, 1.0])

# Defaults, in body sizes (B) and seconds.
CONTACT_HEIGHT = 0.03  # B above the ground: a foot joint sits a little above the sole
CONTACT_SPEED = 0.2  # B/s horizontal: a planted foot barely moves
CONTACT_RELEASE = 1.5  # hysteresis: a contact ends only past 1.5x the thresholds
CONTACT_MIN_DURATION = 0.05  # s: shorter contacts and gaps are flicker
SKATE_SPEED = 0.25  # B/s: a contact step faster than this counts as skating (skate ratio)
STATIC_DISPLACEMENT = 0.0015  # of the clip's bounding-box diagonal (ViPS)
STATIC_FRACTION = 0.9  # of the frame steps (ViPS)
BROKEN_DISTANCE = 4.0  # B from the root: no joint of a sane pose is this far
BROKEN_BONE_ERROR = 0.1  # relative bone-length deviation
BROKEN_JUMP = 0.5  # B per frame: change of a joint's per-frame displacement
DEGENERATE_BONE = 1e-6  # B: shorter bones are zero-length


# ----------------------------------------------------------------------------- helpers
def unit_up(up: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """The normalised up axis (+Z when None)."""
    vector = Z_UP if up is None else np.asarray(up, dtype=np.float64).reshape(3)
    norm = float(np.linalg.norm(vector))
    if not norm > 0.0 or not np.isfinite(norm):
        raise ValueError("up must be a finite non-zero vector")
    return vector / norm


def split_height(points: np.ndarray, up: Sequence[float] | np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(height (...,), horizontal (...,3)) of points: along `up`, and perpendicular to it."""
    axis = unit_up(up)
    points = np.asarray(points, dtype=np.float64)
    height = points @ axis
    return height, points - height[..., None] * axis


def positions_of(rig: Rig, motion: Motion) -> np.ndarray:
    """(T,J,3) joint head positions of a motion on its rig (forward kinematics)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return joint_positions(rig, motion)


def as_positions(positions: np.ndarray) -> np.ndarray:
    """(T,J,3) float64 positions; ValueError for any other shape."""
    positions = np.asarray(positions, dtype=np.float64)
    if positions.ndim != 3 or positions.shape[-1] != 3:
        raise ValueError(f"positions must be (frames, joints, 3), got {positions.shape}")
    return positions


def positions_and_fps(rig: Rig, source: Motion | np.ndarray,
                      fps: float | None = None) -> tuple[np.ndarray, float]:
    """Positions and fps from a Motion or a (T,J,3) array (whose fps must be given)."""
    if isinstance(source, Motion):
        return positions_of(rig, source), float(source.fps)
    positions = as_positions(source)
    if positions.shape[1] != rig.joint_count:
        raise ValueError(f"positions have {positions.shape[1]} joints but the rig has {rig.joint_count}")
    return positions, float(fps) if fps is not None else float("nan")


def finite_min(values: np.ndarray) -> float:
    """The smallest finite value, NaN when there is none."""
    finite = values[np.isfinite(values)]
    return float(finite.min()) if finite.size else float("nan")


def _finite_max(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else 0.0


def _ratio(value: float, scale: float) -> float:
    """value / scale, NaN where the scale is not a positive number."""
    return float(value) / scale if scale > 0.0 and np.isfinite(scale) else float("nan")


def _mean(values: np.ndarray, empty: float = float("nan")) -> float:
    return float(np.mean(values)) if np.size(values) else empty


def estimate_body_size(positions: np.ndarray) -> float:
    """Body size from positions alone: median over frames of the largest side of the joints' box.

    Close to `Rig.body_size` (which also counts bone tails, so is slightly larger). NaN when no
    frame is finite.
    """
    positions = as_positions(positions)
    finite = np.all(np.isfinite(positions), axis=(1, 2))
    if not np.any(finite):
        return float("nan")
    frames = positions[finite]
    return float(np.median(np.max(frames.max(axis=1) - frames.min(axis=1), axis=-1)))


def _body_size(positions: np.ndarray, body_size: float | None) -> float:
    return estimate_body_size(positions) if body_size is None else float(body_size)


def run_lengths(column: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run-length encoding of a 1-D bool array: starts, ends (exclusive), values."""
    if column.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=bool)
    change = np.flatnonzero(column[1:] != column[:-1]) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [column.size]])
    return starts, ends, column[starts]


def _debounce(mask: np.ndarray, frames: int) -> np.ndarray:
    """Fill interior gaps shorter than `frames`, then drop contact runs shorter than `frames`."""
    out = mask.copy()
    if frames <= 1:
        return out
    for f in range(out.shape[1]):
        column = out[:, f]
        starts, ends, values = run_lengths(column)
        for s, e, v in zip(starts, ends, values, strict=True):
            interior = s > 0 and e < column.size
            if not v and interior and e - s < frames:
                column[s:e] = True
        starts, ends, values = run_lengths(column)
        for s, e, v in zip(starts, ends, values, strict=True):
            if v and e - s < frames:
                column[s:e] = False
    return out


def _hysteresis(enter: np.ndarray, stay: np.ndarray) -> np.ndarray:
    """Contact starts where `enter` holds and lasts while `stay` holds ((T,F) bools)."""
    state = np.zeros(enter.shape[1:], dtype=bool)
    out = np.zeros_like(enter)
    for t in range(enter.shape[0]):
        state = enter[t] | (state & stay[t])
        out[t] = state
    return out


# ----------------------------------------------------------------------------- contacts
@dataclass(frozen=True)
class Ground:
    """What a clip's feet are measured against: the up axis (None: +Z), the floor's height along it
    (a scalar, or one per foot; None: the lowest finite foot height of the clip, see `foot_heights`)
    and the body size that scales the defaults (None: `estimate_body_size` of the positions)."""

    up: Sequence[float] | np.ndarray | None = None
    floor: float | np.ndarray | None = None
    body_size: float | None = None


def foot_heights(positions: np.ndarray, feet: Sequence[int] | np.ndarray, *,
                 up: Sequence[float] | np.ndarray | None = None,
                 floor: float | np.ndarray | None = None) -> np.ndarray:
    """(T,F) height of each foot joint above the ground, in metres.

    The ground is `floor` (a height along `up`; a scalar, or one per foot for feet whose joints sit
    at different heights when standing), else the lowest finite foot height over the clip.
    """
    positions = as_positions(positions)
    feet = np.asarray(feet, dtype=np.int64).reshape(-1)
    height, _ = split_height(positions[:, feet], up)
    ground = finite_min(height) if floor is None else np.asarray(floor, dtype=np.float64)
    return height - ground


def _stationary_speed(points: np.ndarray, fps: float, up: Sequence[float] | np.ndarray | None) -> np.ndarray:
    """(T,F) horizontal speed (m/s), the smaller of the backward and forward differences.

    The smaller one so that the first and last frames of a plant, which stay put towards one
    neighbour, still count as stationary (a central difference would cut each plant short).
    """
    _, horizontal = split_height(points, up)
    count = points.shape[0]
    if count < 2:
        return np.zeros(points.shape[:2])
    step = np.linalg.norm(np.diff(horizontal, axis=0), axis=-1) * fps
    backward = np.concatenate([step[:1], step])
    forward = np.concatenate([step, step[-1:]])
    return np.fmin(backward, forward)


def foot_contacts(
    positions: np.ndarray,
    feet: Sequence[int] | np.ndarray,
    fps: float,
    height_threshold: float | None = None,
    speed_threshold: float | None = None,
    *,
    ground: Ground | None = None,
    release: float = CONTACT_RELEASE,
    min_duration: float = CONTACT_MIN_DURATION,
) -> np.ndarray:
    """(T,F) bool: foot f is on the ground at frame t.

    A contact starts when the foot is below `height_threshold` metres above the `ground` (see
    `Ground`, `foot_heights`; default CONTACT_HEIGHT body sizes) and its horizontal speed is below
    `speed_threshold` m/s (default CONTACT_SPEED body sizes per second; pass `inf` to ignore speed).
    Speed is the smaller of the backward and forward frame differences. Hysteresis: the contact
    lasts until height or speed exceeds `release` times its threshold. Then gaps between contacts
    shorter than `min_duration` seconds are filled, and contacts shorter than it are dropped.
    """
    positions = as_positions(positions)
    feet = np.asarray(feet, dtype=np.int64).reshape(-1)
    ground = ground or Ground()
    count = positions.shape[0]
    if feet.size == 0 or count == 0:
        return np.zeros((count, feet.size), dtype=bool)
    size = _body_size(positions, ground.body_size)
    max_height = CONTACT_HEIGHT * size if height_threshold is None else float(height_threshold)
    max_speed = CONTACT_SPEED * size if speed_threshold is None else float(speed_threshold)
    height = foot_heights(positions, feet, up=ground.up, floor=ground.floor)
    speed = _stationary_speed(positions[:, feet], fps, ground.up)
    with np.errstate(invalid="ignore"):
        enter = (height < max_height) & (speed < max_speed)
        stay = (height < release * max_height) & (speed < release * max_speed)
    contacts = _hysteresis(enter, stay)
    return _debounce(contacts, max(1, int(round(min_duration * fps))))


# ----------------------------------------------------------------------------- skating
@dataclass
class SkatingStats:
    """Horizontal sliding of feet while on the ground.

    A *contact step* is a pair of consecutive frames (t, t+1) with the foot in contact at both;
    its displacement is the horizontal distance the foot moved between them. With no contact step
    at all there is no skating: every value is 0.
    """

    mean: float  # m per frame: mean displacement over contact steps (all feet pooled)
    max: float  # m per frame: largest displacement of a contact step
    mean_rel: float  # body sizes per frame
    max_rel: float  # body sizes per frame
    mean_speed: float  # m/s: mean * fps, comparable across frame rates
    weighted: float  # m per frame: mean over contact steps of displacement * (2 - 2^(h/H)), clipped to [0,1]
    ratio: float  # fraction of contact steps faster than the skate speed
    contact_steps: int


def foot_skating(
    positions: np.ndarray,
    feet: Sequence[int] | np.ndarray,
    fps: float,
    contacts: np.ndarray | None = None,
    *,
    ground: Ground | None = None,
    height_threshold: float | None = None,
    skate_speed: float | None = None,
) -> SkatingStats:
    """Foot skating: how far feet slide horizontally per frame while in contact.

    `contacts` (T,F) default to height alone: foot height above the `ground` (see `foot_heights`) below
    `height_threshold` H (default CONTACT_HEIGHT body sizes). Speed is left out on purpose: a
    skating foot is fast, so speed-gated contacts would hide exactly what is measured here.
    `weighted` is the height-weighted skate of the literature, weight 2 - 2^(h/H) with h the mean
    foot height of the step: full weight on the ground, none at H. `ratio` counts steps faster than
    `skate_speed` m/s (default SKATE_SPEED body sizes per second).
    """
    positions = as_positions(positions)
    feet = np.asarray(feet, dtype=np.int64).reshape(-1)
    ground = ground or Ground()
    up, floor = ground.up, ground.floor
    size = _body_size(positions, ground.body_size)
    limit = CONTACT_HEIGHT * size if height_threshold is None else float(height_threshold)
    fast = SKATE_SPEED * size if skate_speed is None else float(skate_speed)
    height = foot_heights(positions, feet, up=up, floor=floor)
    if contacts is None:
        with np.errstate(invalid="ignore"):
            contacts = height < limit
    contacts = np.asarray(contacts, dtype=bool)
    if positions.shape[0] < 2 or feet.size == 0:
        return SkatingStats(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    _, horizontal = split_height(positions[:, feet], up)
    step = np.linalg.norm(np.diff(horizontal, axis=0), axis=-1)  # (T-1,F)
    in_contact = contacts[1:] & contacts[:-1]
    sliding = step[in_contact]
    if sliding.size == 0:
        return SkatingStats(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
    mid_height = np.clip(0.5 * (height[1:] + height[:-1])[in_contact], 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.clip(2.0 - np.exp2(mid_height / limit), 0.0, 1.0) if limit > 0 else np.zeros_like(sliding)
    mean = float(np.mean(sliding))
    peak = float(np.max(sliding))
    return SkatingStats(
        mean=mean,
        max=peak,
        mean_rel=_ratio(mean, size),
        max_rel=_ratio(peak, size),
        mean_speed=mean * fps,
        weighted=float(np.mean(sliding * weight)),
        ratio=float(np.mean(sliding > fast / fps)),
        contact_steps=int(sliding.size),
    )


# ----------------------------------------------------------------------------- penetration
@dataclass
class PenetrationStats:
    """How far the body goes below the floor. Depth of a frame = max(0, floor - lowest point)."""

    mean_depth: float  # m: mean over frames of the frame's depth (0 for frames above the floor)
    max_depth: float  # m: deepest point over the clip
    mean_depth_rel: float  # body sizes
    max_depth_rel: float  # body sizes
    frame_fraction: float  # fraction of frames with a point more than `tolerance` below the floor


def ground_penetration(
    points: np.ndarray,
    *,
    up: Sequence[float] | np.ndarray | None = None,
    floor: float = 0.0,
    body_size: float | None = None,
    tolerance: float = 0.0,
) -> PenetrationStats:
    """Ground penetration of (T,N,3) points: joint positions, or skinned mesh vertices.

    `floor` is the ground height along `up` (canonical frame: z = 0). `body_size` defaults to the
    estimate from the points. Non-finite points are ignored.
    """
    points = as_positions(points)
    size = _body_size(points, body_size)
    height, _ = split_height(points, up)
    height = np.where(np.isfinite(height), height, np.inf)
    if height.size == 0:
        return PenetrationStats(0.0, 0.0, 0.0, 0.0, 0.0)
    lowest = height.min(axis=1)
    depth = np.clip(floor - lowest, 0.0, None)
    mean, peak = float(np.mean(depth)), float(np.max(depth))
    return PenetrationStats(mean, peak, _ratio(mean, size), _ratio(peak, size),
                            float(np.mean(depth > tolerance)))


# ----------------------------------------------------------------------------- jitter
@dataclass
class JitterStats:
    """Jerk (third time derivative of position) magnitude, by third finite differences * fps³."""

    mean_jerk: float  # m/s³, mean over joints and frames
    max_jerk: float  # m/s³
    mean_jerk_rel: float  # body sizes / s³
    max_jerk_rel: float  # body sizes / s³


def jitter(positions: np.ndarray, fps: float, *, body_size: float | None = None,
           joints: Sequence[int] | np.ndarray | None = None) -> JitterStats:
    """Jitter of (T,J,3) positions (all joints, or `joints`). NaN with fewer than 4 frames."""
    positions = as_positions(positions)
    size = _body_size(positions, body_size)
    if joints is not None:
        positions = positions[:, np.asarray(joints, dtype=np.int64)]
    if positions.shape[0] < 4 or positions.shape[1] == 0:
        nan = float("nan")
        return JitterStats(nan, nan, nan, nan)
    jerk = np.linalg.norm(np.diff(positions, n=3, axis=0), axis=-1) * fps**3
    mean, peak = float(np.mean(jerk)), float(np.max(jerk))
    return JitterStats(mean, peak, _ratio(mean, size), _ratio(peak, size))


# ----------------------------------------------------------------------------- bone lengths
def bone_length_errors(positions: np.ndarray, parents: Sequence[int] | np.ndarray,
                       rest_heads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(T,B) relative errors |L_t - L_0| / L_0 and the (B,) child joints they belong to.

    L is the head-to-head distance |head_child - head_parent|; bones whose rest distance is zero
    (a child whose head sits on its parent's head) have no relative error and are left out.
    """
    positions = as_positions(positions)
    parents = np.asarray(parents, dtype=np.int64)
    rest_heads = np.asarray(rest_heads, dtype=np.float64)
    child = np.flatnonzero(parents >= 0)
    rest = np.linalg.norm(rest_heads[child] - rest_heads[parents[child]], axis=-1)
    scale = max(float(np.max(np.ptp(rest_heads, axis=0))) if rest_heads.size else 0.0, 1e-300)
    keep = rest > 1e-9 * scale
    child, rest = child[keep], rest[keep]
    current = np.linalg.norm(positions[:, child] - positions[:, parents[child]], axis=-1)
    return np.abs(current - rest) / rest, child


@dataclass
class BoneLengthStats:
    """Deviation of head-to-head bone lengths from rest, relative to the rest length."""

    max_error: float  # max over bones and frames of |L - L0| / L0
    mean_error: float  # mean over bones and frames
    worst_joint: str  # child joint of the worst bone ("" when there is none)


def bone_length_error(rig: Rig, source: Motion | np.ndarray,
                      free: Sequence[int] | np.ndarray | None = None) -> BoneLengthStats:
    """Bone-length error of a Motion (0 up to rounding: FK is rigid) or of (T,J,3) positions. `free`:
    joints whose offset from their parent the motion moves on purpose (a body riding on a floor-level
    root bone, a foot control): their links are left out."""
    positions, _ = positions_and_fps(rig, source, 1.0)
    errors, child = bone_length_errors(positions, rig.parents, rig.heads)
    if free is not None and len(free):
        keep = ~np.isin(child, np.asarray(free, dtype=np.int64))
        errors, child = errors[:, keep], child[keep]
    if errors.size == 0:
        return BoneLengthStats(0.0, 0.0, "")
    per_bone = np.where(np.isfinite(errors), errors, -np.inf).max(axis=0)
    worst = int(np.argmax(per_bone))
    if not np.isfinite(per_bone[worst]):
        return BoneLengthStats(float("nan"), float("nan"), "")
    return BoneLengthStats(float(per_bone[worst]), float(np.mean(errors)), rig.names[int(child[worst])])


# ----------------------------------------------------------------------------- root drift
@dataclass
class DriftStats:
    """Horizontal travel of the root (for in-place clips, everything here should be ~0)."""

    net: float  # m: horizontal distance from the first to the last frame
    max_excursion: float  # m: largest horizontal distance from the first frame
    path_length: float  # m: summed horizontal distance between consecutive frames
    net_rel: float  # body sizes (NaN without a body size)
    max_excursion_rel: float
    path_length_rel: float


def root_drift(root_positions: np.ndarray, *, up: Sequence[float] | np.ndarray | None = None,
               body_size: float | None = None) -> DriftStats:
    """Drift of a (T,3) root trajectory (e.g. `Motion.root_positions` or positions[:, rig.main_root])."""
    root = np.asarray(root_positions, dtype=np.float64).reshape(-1, 3)
    size = float("nan") if body_size is None else float(body_size)
    if root.shape[0] == 0:
        return DriftStats(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    _, horizontal = split_height(root, up)
    offset = np.linalg.norm(horizontal - horizontal[0], axis=-1)
    path = float(np.sum(np.linalg.norm(np.diff(horizontal, axis=0), axis=-1)))
    net, excursion = float(offset[-1]), float(np.max(offset))
    return DriftStats(net, excursion, path, _ratio(net, size), _ratio(excursion, size), _ratio(path, size))


# ----------------------------------------------------------------------------- gait
def stride_frequency(signals: np.ndarray, fps: float, *, min_cycles: float = 1.5) -> float:
    """Dominant frequency (Hz) of (T,F) periodic signals, e.g. contact flags or foot heights.

    Power spectra of the Hann-windowed, mean-removed signals are summed over columns (not the
    signals: feet in antiphase would cancel), zero-padded for a fine grid, and the peak is refined
    by a parabola through its neighbours. The search starts at `min_cycles` per clip, since a
    period longer than the clip cannot be told. NaN when nothing varies or the clip is too short.
    """
    signals = np.asarray(signals, dtype=np.float64)
    if signals.ndim == 1:
        signals = signals[:, None]
    count = signals.shape[0]
    if count < 4:
        return float("nan")
    usable = np.all(np.isfinite(signals), axis=0) & (np.ptp(signals, axis=0) > 0)
    if not np.any(usable):
        return float("nan")
    window = np.hanning(count + 2)[1:-1]  # no zero end samples: every frame counts
    x = signals[:, usable]
    x = (x - (window @ x) / window.sum()) * window[:, None]  # weighted mean: no DC leaks in
    size = 1 << int(np.ceil(np.log2(max(32 * count, 4096))))
    power = np.sum(np.abs(np.fft.rfft(x, n=size, axis=0)) ** 2, axis=1)
    freqs = np.fft.rfftfreq(size, 1.0 / fps)
    band = np.flatnonzero((freqs >= min_cycles * fps / count) & (freqs < 0.5 * fps))
    if band.size == 0:
        return float("nan")
    k = int(band[np.argmax(power[band])])
    if 0 < k < power.size - 1:
        a, b, c = power[k - 1], power[k], power[k + 1]
        denom = a - 2 * b + c
        shift = 0.5 * (a - c) / denom if denom < 0 else 0.0
        return float(freqs[k] + shift * (freqs[1] - freqs[0]))
    return float(freqs[k])


def duty_factors(contacts: np.ndarray) -> np.ndarray:
    """(F,) fraction of the gait cycle each foot is in contact.

    Measured over whole cycles, from the first touchdown (a no-contact → contact change) to the
    last, when a foot has at least two; otherwise over the whole clip (biased by a partial cycle).
    """
    contacts = np.asarray(contacts, dtype=bool)
    out = np.zeros(contacts.shape[1])
    for f in range(contacts.shape[1]):
        column = contacts[:, f]
        touchdowns = np.flatnonzero(column[1:] & ~column[:-1]) + 1
        if touchdowns.size >= 2:
            column = column[touchdowns[0]:touchdowns[-1]]
        out[f] = float(np.mean(column)) if column.size else 0.0
    return out


def stride_lengths(positions: np.ndarray, feet: Sequence[int] | np.ndarray, contacts: np.ndarray, *,
                   up: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """Horizontal distances (m) between consecutive footprints of the same foot, all feet pooled.

    A footprint is the mean horizontal position of the foot over one contact.
    """
    positions = as_positions(positions)
    feet = np.asarray(feet, dtype=np.int64).reshape(-1)
    _, horizontal = split_height(positions[:, feet], up)
    out: list[float] = []
    for f in range(feet.size):
        starts, ends, values = run_lengths(np.asarray(contacts[:, f], dtype=bool))
        prints = [horizontal[s:e, f].mean(axis=0) for s, e, v in zip(starts, ends, values, strict=True) if v]
        out += [float(np.linalg.norm(b - a)) for a, b in zip(prints, prints[1:], strict=False)]
    return np.asarray(out)


@dataclass
class GaitStats:
    """Gait cycle: stride frequency, duty factor, stride length."""

    frequency: float  # Hz: strides (full cycles of one foot) per second; NaN if not periodic
    period: float  # s: 1 / frequency
    duty_factor: float  # mean over feet of the fraction of the cycle in contact
    duty_factors: list[float]  # per foot
    stride_length: float  # m: median distance between consecutive footprints of a foot
    stride_length_rel: float  # leg lengths (NaN without one)
    source: str  # what the frequency came from: "contacts", "heights" or "none"


def gait_stats(
    positions: np.ndarray,
    feet: Sequence[int] | np.ndarray,
    fps: float,
    contacts: np.ndarray | None = None,
    *,
    ground: Ground | None = None,
    leg_length: float | None = None,
    root: int | None = None,
) -> GaitStats:
    """Stride frequency, duty factor and stride length of a clip.

    The frequency comes from the contact flags (`foot_contacts` on the `ground` when not given); where no foot
    both touches and leaves the ground, from the feet's vertical motion instead. Stride length is
    the median footprint spacing (`stride_lengths`); with fewer than two contacts of any foot, the
    root's horizontal path length per second divided by the frequency (`root` joint, else the
    centroid of all joints).
    """
    positions = as_positions(positions)
    feet = np.asarray(feet, dtype=np.int64).reshape(-1)
    ground = ground or Ground()
    up = ground.up
    if contacts is None:
        contacts = foot_contacts(positions, feet, fps, ground=ground)
    contacts = np.asarray(contacts, dtype=bool)
    varies = contacts.shape[0] > 0 and bool(np.any(contacts.any(axis=0) & ~contacts.all(axis=0)))
    source = "none"
    frequency = float("nan")
    if varies:
        frequency, source = stride_frequency(contacts, fps), "contacts"
    elif feet.size:
        frequency = stride_frequency(foot_heights(positions, feet, up=up, floor=0.0), fps)
        source = "heights" if np.isfinite(frequency) else "none"
    duty = duty_factors(contacts) if feet.size else np.zeros(0)
    spacing = stride_lengths(positions, feet, contacts, up=up) if feet.size else np.zeros(0)
    if spacing.size:
        length = float(np.median(spacing))
    elif np.isfinite(frequency) and frequency > 0 and positions.shape[0] > 1:
        track = positions[:, root] if root is not None else positions.mean(axis=1)
        path = root_drift(track, up=up).path_length
        length = path / ((positions.shape[0] - 1) / fps) / frequency
    else:
        length = float("nan")
    leg = float("nan") if leg_length is None else float(leg_length)
    return GaitStats(
        frequency=frequency,
        period=1.0 / frequency if frequency > 0 else float("nan"),
        duty_factor=_mean(duty, 0.0),
        duty_factors=[float(d) for d in duty],
        stride_length=length,
        stride_length_rel=_ratio(length, leg),
        source=source,
    )


# ----------------------------------------------------------------------------- clip filters
def is_static_clip(positions: np.ndarray, threshold: float = STATIC_DISPLACEMENT,
                   fraction: float = STATIC_FRACTION) -> bool:
    """ViPS' static-clip filter.

    Static when the RMS over joints of the displacement between consecutive frames,
    sqrt(mean_j |x[t+1,j] - x[t,j]|²), is below `threshold` times the diagonal of the clip's
    bounding box (all joints, all frames) in at least `fraction` of the frame steps. A clip of one
    frame is static; one with non-finite values is not.
    """
    positions = as_positions(positions)
    if positions.shape[0] < 2:
        return True
    if not np.all(np.isfinite(positions)):
        return False
    flat = positions.reshape(-1, 3)
    diagonal = float(np.linalg.norm(flat.max(axis=0) - flat.min(axis=0)))
    if diagonal == 0.0:
        return True
    rms = np.sqrt(np.mean(np.sum(np.diff(positions, axis=0) ** 2, axis=-1), axis=1))
    return bool(np.mean(rms < threshold * diagonal) >= fraction)


def broken_reasons(
    rig: Rig,
    source: Motion | np.ndarray,
    *,
    max_distance: float = BROKEN_DISTANCE,
    bone_tolerance: float = BROKEN_BONE_ERROR,
    max_jump: float = BROKEN_JUMP,
    min_bone: float = DEGENERATE_BONE,
) -> list[str]:
    """Why a clip on a rig is unusable (empty list: it is fine). Limits are in body sizes B.

    - degenerate rig: non-finite rest, zero body size, or bones shorter than `min_bone` B;
    - non-finite values in the motion or the positions;
    - exploding: a joint farther than `max_distance` B from the main root;
    - bone-length error (`bone_length_error`) above `bone_tolerance`;
    - teleport: a joint whose per-frame displacement changes by more than `max_jump` B from one
      frame to the next (with two frames: moves more than that). The change, not the displacement
      itself, so that fast but smooth travel is not a jump.
    """
    reasons: list[str] = []
    size = rig.body_size
    if not (np.all(np.isfinite(rig.rest)) and np.all(np.isfinite(rig.tails))):
        reasons.append("degenerate rig: non-finite rest pose")
    if not (size > 0.0 and np.isfinite(size)):
        return reasons + ["degenerate rig: zero body size"]
    short = np.flatnonzero(~(rig.lengths > min_bone * size))
    if short.size:
        reasons.append("degenerate rig: zero-length bones " + ", ".join(rig.names[j] for j in short[:5]))
    if isinstance(source, Motion):
        if source.joint_count != rig.joint_count:
            return reasons + [f"motion has {source.joint_count} joints, rig has {rig.joint_count}"]
        if not (np.all(np.isfinite(source.rotations)) and np.all(np.isfinite(source.root_positions))):
            reasons.append("non-finite values in the motion")
    positions, _ = positions_and_fps(rig, source, 1.0)
    finite = np.isfinite(positions)
    if not np.all(finite):
        reasons.append("non-finite joint positions")
    with np.errstate(invalid="ignore", over="ignore"):
        distance = np.linalg.norm(positions - positions[:, rig.main_root:rig.main_root + 1], axis=-1)
        far = _finite_max(distance)
        if far > max_distance * size:
            reasons.append(f"exploding: a joint is {far / size:.3g} body sizes from the root")
        errors = bone_length_error(rig, positions)
        if errors.max_error > bone_tolerance:
            reasons.append(f"bone length off by {errors.max_error:.1%} ({errors.worst_joint})")
        steps = np.diff(positions, axis=0)
        change = np.diff(steps, axis=0) if positions.shape[0] > 2 else steps
        jump = _finite_max(np.linalg.norm(change, axis=-1))
        if jump > max_jump * size:
            reasons.append(f"teleport: a joint jumps {jump / size:.3g} body sizes in a frame")
    return reasons


def is_broken_clip(rig: Rig, source: Motion | np.ndarray, **limits: float) -> bool:
    """True when `broken_reasons` finds anything (same keyword limits)."""
    return bool(broken_reasons(rig, source, **limits))
