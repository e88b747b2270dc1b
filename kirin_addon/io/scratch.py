"""Scratch folders that leave nothing behind: made on demand, removed when the process exits.

Headless runs, tests and benchmarks give Blender a private user-resources folder (so that nothing is
written into the user's own config) and register Kirin as a local extension from a folder holding one
link to the checkout. Before, each run left such a folder in the temp dir (thousands after a day of
tests).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

_FOLDERS: dict[str, Path] = {}


def scratch_folder(prefix: str) -> Path:
    """This process's temporary folder for `prefix` (the same one on every call), removed at exit. A
    link inside it is removed, never followed."""
    folder = _FOLDERS.get(prefix)
    if folder is None or not folder.is_dir():
        folder = Path(tempfile.mkdtemp(prefix=prefix))
        _FOLDERS[prefix] = folder
    return folder


def remove_scratch_folders() -> None:
    """Remove this process's scratch folders now (a process that leaves through os._exit skips atexit)."""
    while _FOLDERS:
        shutil.rmtree(_FOLDERS.popitem()[1], ignore_errors=True)


atexit.register(remove_scratch_folders)


def private_blender_resources(prefix: str = "kirin-blender-") -> None:
    """Point Blender's user resources at a scratch folder, unless the caller chose one; call it before
    bpy is imported."""
    if "BLENDER_USER_RESOURCES" not in os.environ:
        os.environ["BLENDER_USER_RESOURCES"] = str(scratch_folder(prefix))
