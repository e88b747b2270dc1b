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
    images = np.asarray(images, dtype=np.float32)
    src_h, src_w = images.shape[1:3]
    if (src_h, src_w) == (height, width):
        return images
    k = max(1, min(src_h // height, src_w // width))
    if k > 1:
        hh, ww = src_h // k * k, src_w // k * k
        tail = images.shape[3:]
        images = images[:, :hh, :ww].reshape(images.shape[0], hh // k, k, ww // k, k, *tail).mean((2, 4))
    grid_h, grid_w = images.shape[1:3]

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


def _padded(op, mask: np.ndarray, structure: np.ndarray, pad: int) -> np.ndarray:
    """A scipy morphology op without its border artefacts: pad by replicating the edge."""
    big = np.pad(mask, pad, mode="edge")
    return op(big, structure=structure)[pad:-pad, pad:-pad]


def _clean_mask(mask: np.ndarray, min_area: int) -> np.ndarray:
    from scipy import ndimage

    disk = ndimage.generate_binary_structure(2, 1)
    mask = _padded(ndimage.binary_opening, mask, disk, 2)
    mask = _padded(lambda m, structure: ndimage.binary_closing(m, structure=structure, iterations=2),
                   mask, disk, 3)
    mask = ndimage.binary_fill_holes(mask)
    labels, count = ndimage.label(mask)
    if count == 0:
        return mask
    sizes = np.bincount(labels.ravel())[1:]
    best = int(np.argmax(sizes))
    if sizes[best] < min_area:
        return np.zeros_like(mask)
    return labels == best + 1


# ------------------------------------------------------------------------------ silhouettes

MIN_COLOUR_DISTANCE = 20.0  # RGB distance (0–255 units) below which a pixel is never foreground
NOISE_FACTOR = 4.0  # ... nor below this many times the typical background difference
MIN_COVER, MAX_COVER = 0.001, 0.9  # a plausible silhouette covers this fraction of the frame
MIN_PLAUSIBLE_SHARE = 0.2  # of the frames must keep a plausible silhouette, else "no moving subject"


def background_silhouettes(frames: np.ndarray, max_side: int = 256, threshold: float | None = None, *,
                           soft_edge: float = 0.0) -> np.ndarray:
    """Silhouettes of the moving subject in a static-camera video: (T,h,w) float32 in [0,1], the
    longer side at most `max_side` (the video's aspect).

    The background is the per-pixel temporal median (of at most 64 evenly spread frames); a pixel is
    foreground where its RGB distance to it exceeds `threshold` (0–255 units; default: Otsu on the
    distance histogram, at least MIN_COLOUR_DISTANCE and NOISE_FACTOR × the median distance).
    Each mask is opened, closed, hole-filled and reduced to its largest connected component;
    `soft_edge` > 0 blurs the edges by a Gaussian of that many pixels. A frame whose mask is empty,
    covers nearly everything or changed almost everywhere (the camera moved, the subject fills the
    view) gets an empty mask — no silhouette evidence there, the fit bridges it. Raises VideoError
    ("no moving subject") when fewer than MIN_PLAUSIBLE_SHARE of the frames (at least 3) keep a mask:
    a static video, a hand-held or panning camera throughout, a subject that never moves.
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
    sample = np.unique(np.linspace(0, count - 1, min(count, 64)).round().astype(int))
    background = np.median(small[sample], axis=0)
    distance = np.sqrt(((small - background) ** 2).sum(-1))  # (T,h,w)
    if threshold is None:
        noise = float(np.median(distance))
        threshold = max(_otsu(distance[::max(1, count // 32)]), MIN_COLOUR_DISTANCE, NOISE_FACTOR * noise)
    min_area = max(4, int(MIN_COVER * h * w))
    masks = np.stack([_clean_mask(d > threshold, min_area) for d in distance])
    cover = masks.mean((1, 2))
    # Most of a static-camera frame is background, so its median change is noise; a frame whose median
    # pixel changed by more than MIN_COLOUR_DISTANCE changed everywhere (camera motion, a cut, lighting).
    busy = np.median(distance.reshape(count, -1), axis=1) > MIN_COLOUR_DISTANCE
    plausible = (cover >= MIN_COVER) & (cover <= MAX_COVER) & ~busy
    if plausible.sum() < max(3, MIN_PLAUSIBLE_SHARE * count):
        full = int(((cover > MAX_COVER) | busy).sum())
        empty = int(((cover < MIN_COVER) & ~busy).sum())
        raise VideoError(f"Found no moving subject in the video ({empty} of {count} frames show nothing "
                         f"moving, {full} change almost everywhere); background subtraction needs a static "
                         "camera and a subject that moves; give a mask sequence, tracks or keypoints instead")
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
        from .render import read_png

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
    evidence = Evidence2D(image_size=(int(image_size[0]), int(image_size[1])), fps=float(fps),
                          points=points, confidence=conf, silhouettes=silhouettes)
    return evidence.validate(joint_count)
