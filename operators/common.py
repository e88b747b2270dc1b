"""What the operators share: reaching the backend, the character a job is about, the canonical frame
the add-on detects on an armature (`target_frame`) and the poll of operators on an armature
(`NeedsArmature`). One backend job seen from the add-on, and the operator that runs it, are in
backend_task.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bpy
import numpy as np

from ..kirin_addon.backend.client import BackendClient
from ..kirin_addon.backend.process import ensure_backend, local_folders
from ..kirin_addon.backend.results import BackendError
from ..kirin_addon.core.canonical import CanonicalFrame, detect_canonical_frame
from ..kirin_addon.core.rig import Rig
from ..kirin_addon.core.skinning import SkinnedMesh
from . import scene_io
from .scene_io.arrays import object_matrix
from .scene_io.mesh import read_armature_skin
from .scene_io.rig import armature_from_context, deforming_armature, read_rig

ADDON_ID = __package__.rpartition(".")[0]  # the add-on's module ("bl_ext.<repo>.kirin" as an extension)
ROOT = Path(__file__).resolve().parents[1]
NAME_LIMIT = 63  # bytes in a Blender ID name


def preferences(context=None):
    """The add-on's preferences (None when Kirin runs as a plain package, e.g. some tests)."""
    context = context or bpy.context
    addon = context.preferences.addons.get(ADDON_ID)
    return None if addon is None else addon.preferences


def default_backend_python() -> str | None:
    """The Python of the checkout's .venv next to the extension (its backend environment)."""
    for candidate in (ROOT / ".venv" / "bin" / "python", ROOT / ".venv" / "Scripts" / "python.exe"):
        if candidate.is_file():
            return str(candidate)
    return None


def backend_options(context=None) -> dict:
    """How to reach the backend, from the preferences (or the defaults)."""
    prefs = preferences(context)
    url = (getattr(prefs, "backend_url", "") or "").strip()
    options = {
        "url": url or None,
        "token_file": bpy.path.abspath(getattr(prefs, "backend_token_file", "") or "") or None,
        "python": bpy.path.abspath(getattr(prefs, "backend_python", "") or "") or None,
        "device": getattr(prefs, "backend_device", "auto") or "auto",
        "threads": int(getattr(prefs, "backend_threads", 0) or 0),
    }
    if options["python"] is None:
        options["python"] = os.environ.get("KIRIN_BACKEND_PYTHON") or default_backend_python()
    return options


def readable_folders(context=None, files: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The folders a local backend may read request files from: the user's home and the temporary
    folder, the .blend file's folder, the preferences' "Readable folders", and the folders of `files`
    (what this request names: the user picked them)."""
    prefs = preferences(context)
    extra = [bpy.path.abspath(f.strip()) for f in (getattr(prefs, "backend_folders", "") or "").split(";")]
    named = [os.path.dirname(os.path.abspath(bpy.path.abspath(f))) for f in files if f]
    blend = [os.path.dirname(bpy.data.filepath)] if bpy.data.filepath else []
    folders = [*local_folders(), *blend, *(f for f in extra if f), *named]
    return tuple(dict.fromkeys(str(Path(f).resolve()) for f in folders if os.path.isdir(f)))


def connect(context=None, files: tuple[str, ...] = ()) -> BackendClient:
    """A client of a working backend: the URL of a running one, else the one this Blender started
    (started now on first use; a dead one is replaced, and so is one that may not read the folders of
    `files`, the files this request names)."""
    options = backend_options(context)
    if options["url"]:
        if not BackendClient(options["url"], "").is_local and not bpy.app.online_access:
            raise BackendError(
                f"The backend URL {options['url']} is on another machine and Blender's online access is "
                "off: allow it (Preferences > System > Network), or clear the URL to use a backend on this "
                "computer."
            )
        return ensure_backend(url=options["url"], token_file=options["token_file"])
    python = options["python"]
    if not python:
        raise BackendError(
            "Kirin's backend needs its own Python environment: set 'Backend Python' (the .venv/bin/python "
            "of a Kirin checkout) or a backend URL in the add-on preferences."
        )
    if not os.path.isfile(python):
        raise BackendError(f"The backend Python {python} does not exist: fix it in the add-on preferences.")
    extra = {"threads": options["threads"]} if options["threads"] else {}
    return ensure_backend(python, device=options["device"], allow_dirs=readable_folders(context, files),
                          **extra)


# ----------------------------------------------------------------------------- the armature acted on
def _axis(value: str) -> str | None:
    return None if value == "AUTO" else value


def target_frame(arm: bpy.types.Object, rig: Rig) -> CanonicalFrame:
    """The canonical frame of `rig` on the armature `arm`, as the add-on detects it: the armature's world
    matrix and the user's Up/Forward settings."""
    settings = arm.kirin
    return detect_canonical_frame(rig, world_matrix=object_matrix(arm),
                                  up=_axis(settings.up_axis), forward=_axis(settings.forward_axis))


class NeedsArmature:
    """Operators that act on the selected armature (or the armature of the selected mesh)."""

    @classmethod
    def poll(cls, context):
        try:
            armature_from_context(context)
        except scene_io.SceneError as exc:
            cls.poll_message_set(str(exc))
            return False
        return True


# ----------------------------------------------------------------------------- the character a job is about
@dataclass
class CharacterInput:
    """The selected armature as a backend job sends it: the rig in armature space, and the rig and
    its skinned mesh in the rig's canonical frame (as the add-on detects it: the armature's world
    matrix and the user's Up/Forward settings), so the backend's own detection has nothing to guess."""

    armature: str  # object name
    rig: Rig  # armature space
    canonical_rig: Rig  # what the backend gets
    to_canonical: np.ndarray  # (4,4) armature space → canonical frame
    mesh: SkinnedMesh | None  # in the canonical frame; None: the bones alone

    @classmethod
    def from_scene(cls, context, **more: Any):
        """The selected deforming armature (and its skin) read now; `more`: the subclass's fields."""
        arm, rig = deforming_armature(context)
        to_canonical = target_frame(arm, rig).matrix()
        mesh = read_armature_skin(context, arm, rig, to_canonical)
        return cls(arm.name, rig, rig.transformed(to_canonical), to_canonical, mesh, **more)

    def armature_to_write(self, during: str) -> tuple[bpy.types.Object, Rig]:
        """The armature the result goes onto, with its rig; SceneError when it is gone or its bones
        changed `during` the job ("while generating")."""
        arm = bpy.data.objects.get(self.armature)
        if arm is None or arm.type != "ARMATURE":
            raise scene_io.SceneError(f"The armature '{self.armature}' is gone: nothing was written.")
        rig = read_rig(arm)
        if rig.names != self.rig.names:
            raise scene_io.SceneError(f"The bones of '{arm.name}' changed {during}: nothing was written.")
        return arm, rig


