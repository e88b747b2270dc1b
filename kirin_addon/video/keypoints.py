"""Keypoints from a file written by any external detector (`load_keypoints`, JSON or CSV), in pixels.

Pixels: x to the right, y down, origin at the top-left corner of the video's top-left pixel. Unknown
points are NaN with confidence 0. Bad input raises `VideoError` naming the file and row and what is
wrong there, never quoting the file (the backend sends these messages back over the network).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from .video_io import VideoError

__all__ = ["load_keypoints"]


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
                raise VideoError(f"{loc}: expected an object with frame, joint, x, y")
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
                        raise VideoError(f"{loc}: a joint has no x or y")
                    x, y, c = value["x"], value["y"], value.get("confidence", value.get("score"))
                elif isinstance(value, (list, tuple)) and len(value) in (2, 3):
                    x, y, c = value[0], value[1], (value[2] if len(value) == 3 else None)
                else:
                    raise VideoError(f"{loc}: a joint's value is not [x, y] or [x, y, confidence]")
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
        raise VideoError(f"{loc}: {what} is not a number")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise VideoError(f"{loc}: {what} is not a number") from None


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
    records, where = _read_records(path)
    resolve, names = _joint_lookup(joint_names, aliases)
    rows: list[tuple[int, int, float, float, float]] = []
    unknown: dict[str, None] = {}
    for loc, frame, joint, x, y, c in records:
        frame_f = _number(frame, "frame", loc)
        if not math.isfinite(frame_f) or frame_f != int(frame_f) or frame_f < 0:
            raise VideoError(f"{loc}: frame must be a whole number ≥ 0")
        frame_i = int(frame_f)
        if frame_count is not None and frame_i >= frame_count:
            raise VideoError(f"{loc}: the frame is beyond the video's {frame_count} frames "
                             f"(0–{frame_count - 1})")
        if not isinstance(joint, str) or not joint.strip():
            raise VideoError(f"{loc}: joint must be a bone name")
        index = resolve(joint.strip())
        if index is None:
            unknown.setdefault(joint.strip(), loc)
            continue
        xf, yf = _number(x, "x", loc), _number(y, "y", loc)
        cf = 1.0 if c is None else _number(c, "confidence", loc)
        if not (0.0 <= cf <= 1.0):
            raise VideoError(f"{loc}: confidence must lie in [0, 1]")
        if cf > 0 and not (math.isfinite(xf) and math.isfinite(yf)):
            raise VideoError(f"{loc}: x and y must be numbers; give confidence 0 for a joint that is not "
                             "visible")
        rows.append((frame_i, index, xf, yf, cf))
    if unknown:  # where, not what: an error never quotes the file (a backend may answer the network)
        first = next(iter(unknown.values())).removeprefix(where).strip()
        valid = ", ".join(names[:10]) + (" …" if len(names) > 10 else "")
        raise VideoError(f"{where}: {len(unknown)} joint name(s) match no bone of the rig (the first at "
                         f"{first}). Bones are, e.g.: {valid} "
                         "(names match case-insensitively; use aliases to map others)")
    if not rows:
        raise VideoError(f"{where} holds no keypoints")
    return _keypoint_arrays(rows, names, frame_count, where)


def _read_records(path: Path):
    """The file's (location, frame, joint, x, y, confidence) records (a lazy iterator: row errors
    come while iterating) and the name that error messages give the file."""
    if not path.is_file():
        raise VideoError(f"Keypoint file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or "unreadable")
        raise VideoError(f"Cannot read keypoint file {path.name}: {reason}") from exc
    suffix = path.suffix.casefold()
    is_json = suffix == ".json" or (suffix != ".csv" and text.lstrip()[:1] in ("[", "{"))
    where = path.name
    if not is_json:
        return _records_from_csv(text, where), where
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise VideoError(f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg})") from exc
    return _records_from_json(data, where), where


def _keypoint_arrays(rows: list[tuple[int, int, float, float, float]], names: list[str],
                     frame_count: int | None, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Points (T,J,2) and confidence (T,J) from checked (frame, joint, x, y, confidence) rows."""
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
