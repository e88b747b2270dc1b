"""2D evidence from a driving video (issue 8): keypoints, tracks and silhouettes, in pixels.

Whatever the user can give is gathered into one `Evidence2D` for the sequence optimisation:

- keypoints from a file written by any external detector (`load_keypoints`, JSON or CSV);
- Blender Movie Clip tracks assigned to bones (`tracks_evidence`; the operator converts the
  markers to pixel arrays);
- silhouettes: background subtraction for a static camera (`background_silhouettes`) or the user's
  own mask sequence (`mask_silhouettes`).

Pixels: x to the right, y down, origin at the top-left corner of the video's top-left pixel (a pixel
centre is at +0.5). Unknown points are NaN with confidence 0. Engine layer: numpy and scipy only;
PyAV (for mask images) is imported lazily. Bad input raises `VideoError` with a message for the
status bar.

MediaPipe pose for humanoid rigs (the optional extra of the issue) is not here: mediapipe is not
installed in these environments.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .video_io import VideoError

# ------------------------------------------------------------------------------ the container


@dataclass
class Evidence2D:
    image_size: tuple[int, int]  # (W,H) pixels of the video
    fps: float
    points: np.ndarray  # (T,J,2) pixels, x right, y down, NaN where unknown
    confidence: np.ndarray  # (T,J) in [0,1], 0 where unknown
    silhouettes: np.ndarray | None = None  # (T,h,w) float32 in [0,1], same aspect as the video
    silhouettes_dropped: int = 0  # frames whose silhouette `combine` dropped: the points contradict it

    @property
    def frame_count(self) -> int:
        return int(self.points.shape[0])

    def validate(self, joint_count: int) -> Evidence2D:
        """Check shapes and values against a rig of `joint_count` joints; VideoError if wrong.
        Returns self so calls chain."""
        try:
            width, height = (int(v) for v in self.image_size)
        except (TypeError, ValueError) as exc:
            raise VideoError(f"Evidence image size must be (width, height), got {self.image_size!r}") from exc
        if width <= 0 or height <= 0:
            raise VideoError(f"Evidence image size must be positive, got {width}×{height}")
        if not (np.isfinite(self.fps) and self.fps > 0):
            raise VideoError(f"Evidence frame rate must be positive, got {self.fps}")
        points, conf = np.asarray(self.points), np.asarray(self.confidence)
        if points.ndim != 3 or points.shape[2] != 2:
            raise VideoError(f"Evidence points must have shape (frames, joints, 2), got {points.shape}")
        if points.shape[0] == 0:
            raise VideoError("The evidence has zero frames")
        if points.shape[1] != joint_count:
            raise VideoError(f"Evidence has {points.shape[1]} joints but the rig has {joint_count}")
        if conf.shape != points.shape[:2]:
            raise VideoError(f"Evidence confidence must have shape {points.shape[:2]}, got {conf.shape}")
        if np.isnan(conf).any():
            raise VideoError("Evidence confidence contains NaN (use 0 where a joint is unknown)")
        if (conf < 0).any() or (conf > 1).any():
            raise VideoError("Evidence confidence must lie in [0, 1] "
                             f"(found {conf.min():.3g}…{conf.max():.3g})")
        bad = (conf > 0) & ~np.isfinite(points).all(-1)
        if bad.any():
            t, j = np.argwhere(bad)[0]
            raise VideoError(f"Evidence point of joint {j} at frame {t} is not a number but has "
                             f"confidence {conf[t, j]:.3g}")
        has_silhouette = False
        if self.silhouettes is not None:
            sil = np.asarray(self.silhouettes)
            if sil.ndim != 3 or sil.shape[0] != points.shape[0] or min(sil.shape[1:], default=0) == 0:
                raise VideoError(f"Silhouettes must have shape ({points.shape[0]}, h, w), got {sil.shape}")
            h, w = sil.shape[1:]
            if abs(h - w * height / width) > 1.0:
                raise VideoError(f"Silhouettes ({w}×{h}) do not have the video's aspect ({width}×{height})")
            if not np.isfinite(sil).all() or sil.min() < 0 or sil.max() > 1:
                raise VideoError("Silhouette values must lie in [0, 1]")
            has_silhouette = bool(sil.max() > 0)
        if not (conf > 0).any() and not has_silhouette:
            raise VideoError("No evidence at all: no keypoint, track or silhouette in any frame")
        return self


# ------------------------------------------------------------------------------ keypoint files


def _joint_lookup(joint_names, aliases):
    names = [str(n) for n in joint_names]
    exact = {n: i for i, n in enumerate(names)}
    folded: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        folded.setdefault(n.casefold(), []).append(i)

    def bone(name: str) -> int | None:
        if name in exact:
            return exact[name]
        hits = folded.get(name.casefold(), [])
        if len(hits) > 1:
            raise VideoError(f"Joint name '{name}' matches several bones that differ only in case: "
                             + ", ".join(names[i] for i in hits))
        return hits[0] if hits else None

    alias_map: dict[str, int] = {}
    for key, target in (aliases or {}).items():
        index = bone(str(target))
        if index is None:
            raise VideoError(f"Alias '{key}' → '{target}': the rig has no bone named '{target}'")
        alias_map[str(key).casefold()] = index

    def resolve(name: str) -> int | None:
        index = alias_map.get(name.casefold())
        return index if index is not None else bone(name)

    return resolve, names


def _records_from_json(data, where: str):
    """(location, frame, joint, x, y, confidence) from the JSON layouts `load_keypoints` documents."""
    if isinstance(data, dict) and "keypoints" in data:
        data = data["keypoints"]
    if isinstance(data, list):
        for n, row in enumerate(data):
            loc = f"{where} entry {n}"
            if not isinstance(row, dict):
                raise VideoError(f"{loc}: expected an object with frame, joint, x, y, got {row!r:.60}")
            missing = [k for k in ("frame", "joint", "x", "y") if k not in row]
            if missing:
                raise VideoError(f"{loc}: missing {', '.join(missing)}")
            yield loc, row["frame"], row["joint"], row["x"], row["y"], row.get("confidence", row.get("score"))
        return
    if isinstance(data, dict) and isinstance(data.get("frames"), list):
        for n, entry in enumerate(data["frames"]):
            loc = f"{where} frames[{n}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("joints"), dict):
                raise VideoError(f"{loc}: expected "
                                 "{\"frame\": F, \"joints\": {name: [x, y, confidence]}}")
            frame = entry.get("frame", n)
            for joint, value in entry["joints"].items():
                if isinstance(value, dict):
                    if "x" not in value or "y" not in value:
                        raise VideoError(f"{loc} joint '{joint}': missing x or y")
                    x, y, c = value["x"], value["y"], value.get("confidence", value.get("score"))
                elif isinstance(value, (list, tuple)) and len(value) in (2, 3):
                    x, y, c = value[0], value[1], (value[2] if len(value) == 3 else None)
                else:
                    raise VideoError(f"{loc} joint '{joint}': expected [x, y] or [x, y, confidence], "
                                     f"got {value!r:.60}")
                yield loc, frame, joint, x, y, c
        return
    raise VideoError(f"{where}: expected a list of {{frame, joint, x, y, confidence}} records, "
                     "{\"keypoints\": [...]} or {\"frames\": [{\"frame\", \"joints\"}]}")


def _records_from_csv(text: str, where: str):
    rows = csv.reader(text.splitlines())
    header = None
    for line_no, row in enumerate(rows, start=1):
        if not row or all(not cell.strip() for cell in row) or row[0].lstrip().startswith("#"):
            continue
        if header is None:
            header = [cell.strip().casefold() for cell in row]
            if "score" in header and "confidence" not in header:
                header[header.index("score")] = "confidence"
            missing = [k for k in ("frame", "joint", "x", "y") if k not in header]
            if missing:
                raise VideoError(f"{where} line {line_no}: the header must name the columns frame, joint, "
                                 f"x, y (and optionally confidence); missing {', '.join(missing)}")
            cols = {k: header.index(k) for k in ("frame", "joint", "x", "y")}
            conf_col = header.index("confidence") if "confidence" in header else None
            continue
        if len(row) < len(header):
            raise VideoError(f"{where} line {line_no}: {len(row)} values, "
                             f"the header has {len(header)} columns")
        c = row[conf_col].strip() if conf_col is not None else None
        yield (f"{where} line {line_no}", row[cols["frame"]].strip(), row[cols["joint"]].strip(),
               row[cols["x"]].strip(), row[cols["y"]].strip(), c if c != "" else None)
    if header is None:
        raise VideoError(f"{where} is empty: expected a header frame,joint,x,y,confidence "
                         "and one row per keypoint")


def _number(value, what: str, loc: str) -> float:
    if value is None or value == "":
        return math.nan
    if isinstance(value, bool):
        raise VideoError(f"{loc}: {what} is not a number ({value!r})")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise VideoError(f"{loc}: {what} is not a number ({value!r:.40})") from None


def load_keypoints(path: str | Path, joint_names, frame_count: int | None = None,
                   aliases: dict[str, str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Keypoints from an external detector: points (T,J,2) in pixels (NaN where absent) and
    confidence (T,J) (0 where absent), J = len(joint_names), T = frame_count or the last frame + 1.

    Formats (chosen by the suffix; otherwise by the first character):

    - CSV with a header row naming the columns `frame,joint,x,y[,confidence]` in any order (`score`
      is accepted for confidence; without the column every confidence is 1); blank lines and lines
      starting with `#` are skipped.
    - JSON, any of
      `[{"frame": 0, "joint": "head", "x": 312.5, "y": 80.0, "confidence": 0.9}, ...]`,
      `{"keypoints": [ the same records ]}`, or
      `{"frames": [{"frame": 0, "joints": {"head": [312.5, 80.0, 0.9], "tail": {"x": .., "y": ..}}}]}`
      (confidence optional → 1; a frame entry without "frame" is numbered by its position).

    Frames are whole numbers from 0 (the video's first frame, before any stride); pixels have x to
    the right and y down. Joint names match the rig's bone names case-insensitively, or through
    `aliases` {name in the file: bone name}. A row with confidence 0 may leave x, y empty. Unknown
    joints, frames past `frame_count`, bad numbers, confidences outside [0, 1] and duplicate
    (frame, joint) rows raise VideoError naming the file and row.
    """
    path = Path(path)
    if not path.is_file():
        raise VideoError(f"Keypoint file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise VideoError(f"Cannot read keypoint file {path.name}: {exc}") from exc
    suffix = path.suffix.casefold()
    is_json = suffix == ".json" or (suffix != ".csv" and text.lstrip()[:1] in ("[", "{"))
    where = path.name
    if is_json:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise VideoError(f"{where} is not valid JSON: {exc}") from exc
        records = _records_from_json(data, where)
    else:
        records = _records_from_csv(text, where)

    resolve, names = _joint_lookup(joint_names, aliases)
    rows: list[tuple[int, int, float, float, float]] = []
    unknown: dict[str, None] = {}
    for loc, frame, joint, x, y, c in records:
        frame_f = _number(frame, "frame", loc)
        if not math.isfinite(frame_f) or frame_f != int(frame_f) or frame_f < 0:
            raise VideoError(f"{loc}: frame must be a whole number ≥ 0, got {frame!r}")
        frame_i = int(frame_f)
        if frame_count is not None and frame_i >= frame_count:
            raise VideoError(f"{loc}: frame {frame_i} is beyond the video ({frame_count} frames, "
                             f"0–{frame_count - 1})")
        if not isinstance(joint, str) or not joint.strip():
            raise VideoError(f"{loc}: joint must be a bone name, got {joint!r}")
        index = resolve(joint.strip())
        if index is None:
            unknown.setdefault(joint.strip(), None)
            continue
        xf, yf = _number(x, "x", loc), _number(y, "y", loc)
        cf = 1.0 if c is None else _number(c, "confidence", loc)
        if not (0.0 <= cf <= 1.0):
            raise VideoError(f"{loc}: confidence must lie in [0, 1], got {c!r}")
        if cf > 0 and not (math.isfinite(xf) and math.isfinite(yf)):
            raise VideoError(f"{loc}: x and y must be numbers (got {x!r}, {y!r}); give confidence 0 "
                             "for a joint that is not visible")
        rows.append((frame_i, index, xf, yf, cf))
    if unknown:
        shown = ", ".join(f"'{n}'" for n in list(unknown)[:8]) + (" …" if len(unknown) > 8 else "")
        valid = ", ".join(names[:10]) + (" …" if len(names) > 10 else "")
        raise VideoError(f"{where}: {len(unknown)} joint name(s) match no bone of the rig: {shown}. "
                         f"Bones are, e.g.: {valid} "
                         "(names match case-insensitively; use aliases to map others)")
    if not rows:
        raise VideoError(f"{where} holds no keypoints")
    count = frame_count if frame_count is not None else max(r[0] for r in rows) + 1
    points = np.full((count, len(names), 2), np.nan)
    conf = np.zeros((count, len(names)))
    seen = np.zeros((count, len(names)), dtype=bool)
    for frame_i, index, xf, yf, cf in rows:
        if seen[frame_i, index]:
            raise VideoError(f"{where}: two keypoints for joint '{names[index]}' at frame {frame_i}")
        seen[frame_i, index] = True
        points[frame_i, index] = xf, yf
        conf[frame_i, index] = cf
    return points, conf


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

    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise VideoError(f"Frames must have shape (T, H, W, 3), got {frames.shape}")
    count, height, width = frames.shape[:3]
    if count == 0:
        raise VideoError("The video has zero frames")
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


# ------------------------------------------------------------------------------ tracks and combining


def tracks_evidence(tracks: dict[int, np.ndarray], frame_count: int, joint_count: int,
                    confidence: float | dict[int, float | np.ndarray] = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Movie Clip tracks (already pixel arrays (T,2), NaN where a track has no marker) assigned to
    joint indices → points (T,J,2) and confidence (T,J). `confidence` is one value for all tracks or
    {joint: value or (T,) array}. A track shorter than `frame_count` is padded with NaN."""
    if frame_count <= 0:
        raise VideoError("Tracks need a video with at least one frame")
    points = np.full((frame_count, joint_count, 2), np.nan)
    conf = np.zeros((frame_count, joint_count))
    for joint, track in tracks.items():
        if not (0 <= int(joint) < joint_count) or int(joint) != joint:
            raise VideoError(f"A track is assigned to joint {joint}, "
                             f"but the rig has joints 0–{joint_count - 1}")
        joint = int(joint)
        track = np.asarray(track, dtype=np.float64)
        if track.ndim != 2 or track.shape[1] != 2:
            raise VideoError(f"The track of joint {joint} must have shape (frames, 2), got {track.shape}")
        if track.shape[0] > frame_count:
            raise VideoError(f"The track of joint {joint} has {track.shape[0]} frames, the video "
                             f"{frame_count}")
        value = confidence.get(joint, 1.0) if isinstance(confidence, dict) else confidence
        value = np.broadcast_to(np.asarray(value, dtype=np.float64), (frame_count,))[:track.shape[0]]
        if np.isnan(value).any() or (value < 0).any() or (value > 1).any():
            raise VideoError(f"Track confidence of joint {joint} must lie in [0, 1]")
        known = np.isfinite(track).all(1)
        points[:track.shape[0]][known, joint] = track[known]
        conf[:track.shape[0]][known, joint] = value[known]
    return points, conf


def combine(image_size: tuple[int, int], fps: float, joint_count: int, *,
            keypoints: tuple[np.ndarray, np.ndarray] | None = None,
            tracks: tuple[np.ndarray, np.ndarray] | None = None,
            silhouettes: np.ndarray | None = None) -> Evidence2D:
    """Gather the evidence into one validated Evidence2D.

    `keypoints` and `tracks` are (points (T,J,2), confidence (T,J)) pairs. Where a track has a marker
    (confidence > 0) for a joint in a frame it wins over the file's keypoint — a tracked marker is
    placed by the user; elsewhere the keypoint is kept. All sources must have the same frame count.
    A frame's silhouette that most of its confident points fall outside is dropped
    (`drop_contradicted_silhouettes`).
    """
    counts = {}
    for name, pair in (("keypoints", keypoints), ("tracks", tracks)):
        if pair is not None:
            counts[name] = np.asarray(pair[0]).shape[0]
    if silhouettes is not None:
        silhouettes = np.asarray(silhouettes, dtype=np.float32)
        counts["silhouettes"] = silhouettes.shape[0]
    if not counts:
        raise VideoError("No evidence given: add keypoints, tracks or silhouettes")
    if len(set(counts.values())) > 1:
        raise VideoError("The evidence sources cover different numbers of frames: "
                         + ", ".join(f"{k} {v}" for k, v in counts.items()))
    count = next(iter(counts.values()))
    points = np.full((count, joint_count, 2), np.nan)
    conf = np.zeros((count, joint_count))
    for name, pair in (("keypoints", keypoints), ("tracks", tracks)):  # later sources win
        if pair is None:
            continue
        p, c = np.asarray(pair[0], dtype=np.float64), np.asarray(pair[1], dtype=np.float64)
        if p.shape != (count, joint_count, 2) or c.shape != (count, joint_count):
            raise VideoError(f"The {name} have shapes {p.shape} and {c.shape}; expected "
                             f"({count}, {joint_count}, 2) and ({count}, {joint_count})")
        use = c > 0
        points[use] = p[use]
        conf[use] = c[use]
    dropped = 0
    if silhouettes is not None:
        silhouettes, dropped = drop_contradicted_silhouettes(silhouettes, points, conf, image_size)
    evidence = Evidence2D(image_size=(int(image_size[0]), int(image_size[1])), fps=float(fps), points=points,
                          confidence=conf, silhouettes=silhouettes, silhouettes_dropped=dropped)
    return evidence.validate(joint_count)


MIN_CHECK_POINTS = 4  # confident points a frame needs before they may overrule its silhouette
CHECK_CONFIDENCE = 0.5
MIN_POINTS_INSIDE = 0.5  # share of them that must lie in (or near) the silhouette
INSIDE_MARGIN = 0.03  # of the mask's longer side: joints near the outline still count as inside


def drop_contradicted_silhouettes(silhouettes: np.ndarray, points: np.ndarray, confidence: np.ndarray,
                                  image_size: tuple[int, int]) -> tuple[np.ndarray, int]:
    """Silhouettes without the frames where most confident points (keypoints, tracks: joint heads, inside
    the body) fall outside the mask: background subtraction found only part of the subject there (a
    subject that walks towards or away from the camera stays in the median background) or something
    else, and the fit would pull the body onto that. Returns the masks (cleared there) and how many."""
    from scipy import ndimage

    silhouettes = np.array(silhouettes, dtype=np.float32)
    frames, h, w = silhouettes.shape
    scale = np.array([w / image_size[0], h / image_size[1]])
    margin = max(1, int(round(INSIDE_MARGIN * max(h, w))))
    dropped = 0
    for t in range(frames):
        sure = confidence[t] >= CHECK_CONFIDENCE
        if sure.sum() < MIN_CHECK_POINTS or not silhouettes[t].any():
            continue
        near = ndimage.binary_dilation(silhouettes[t] >= 0.5, iterations=margin)
        xy = np.floor(points[t, sure] * scale).astype(np.int64)
        seen = (xy[:, 0] >= 0) & (xy[:, 0] < w) & (xy[:, 1] >= 0) & (xy[:, 1] < h)
        inside = np.zeros(len(xy), bool)
        inside[seen] = near[xy[seen, 1], xy[seen, 0]]
        if inside.mean() < MIN_POINTS_INSIDE:
            silhouettes[t] = 0.0
            dropped += 1
    return silhouettes, dropped
