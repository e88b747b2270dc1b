"""What the backend says about a keypoints file it cannot use, without quoting the file.

kirin_addon/video/keypoints.py names the row at fault and quotes the value it could not read (useful
in a local tool, but a backend that answers the network must never send a file's contents back). Here
its message becomes the file's name, the row's place (line, entry) and the kind of problem, told in
the backend's own words; a message this table does not know becomes a generic one.
"""

from __future__ import annotations

import re

from ...core.rig import Rig

# A phrase of keypoints.py's message → the problem in words that quote nothing from the file.
PROBLEMS: tuple[tuple[str, str], ...] = (
    ("match no bone of the rig", "its joint names match no bone of the rig (names match case-insensitively)"),
    ("x and y must be numbers", "x or y is not a number (give confidence 0 where a joint is not seen)"),
    ("is not a number", "a value that must be a number is not one"),
    ("frame must be a whole number", "a frame is not a whole number ≥ 0"),
    ("is beyond the video", "a frame is beyond the video's end"),
    ("joint must be a bone name", "a joint is not a bone name"),
    ("confidence must lie in", "a confidence is outside [0, 1]"),
    ("two keypoints for joint", "one joint has two keypoints at one frame"),
    ("missing x or y", "a joint has no x or y"),
    ("expected [x, y]", "a joint's value is not [x, y] or [x, y, confidence]"),
    ("expected an object with frame", "an entry is not an object with frame, joint, x, y"),
    ("the header must name the columns", "the header must name the columns frame, joint, x, y (and "
                                         "optionally confidence)"),
    ("the header has", "a line has more or fewer values than the header has columns"),
    ("is empty", "it is empty"),
    ("holds no keypoints", "it holds no keypoints"),
    ("is not valid JSON", "it is not valid JSON"),
    ("Cannot read keypoint file", "it cannot be read as UTF-8 text"),
    ("missing", "an entry lacks frame, joint, x or y"),
)
FORMATS = ("a CSV with the header frame,joint,x,y[,confidence], or JSON records "
           "{frame, joint, x, y, confidence}")
_PLACE = re.compile(r"\b(line \d+|entry \d+|frames\[\d+\])")


def keypoint_file_error(name: str, error: Exception, rig: Rig) -> str:
    """The user-facing message for keypoints file `name` that raised `error`: where and what, never
    the file's values."""
    text = str(error)
    place = _PLACE.search(text)
    where = f" ({place.group(1)})" if place else ""
    problem = next((words for phrase, words in PROBLEMS if phrase in text), None)
    if problem is None:
        return f"The keypoints file {name} cannot be used{where}: expected {FORMATS}."
    message = f"The keypoints file {name} cannot be used{where}: {problem}."
    if "match no bone" in text:
        bones = ", ".join(rig.names[:6]) + (" …" if len(rig.names) > 6 else "")
        message += f" The rig's bones are, e.g.: {bones}."
    return message
