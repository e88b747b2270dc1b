"""What every backend operator shares: reaching the backend, and one job seen from the add-on.

Two paths share every step but the waiting:
- `execute()` (scripts, the `kirin` command line, headless tests) submits the job and blocks on
  `task.wait()`;
- `invoke()` + `modal()` (a user's click) submits the job and returns at once; a window timer calls
  `task.poll()` (one short `poll_once()` request), the status bar shows the progress, Esc cancels
  the job. Nothing in the scene changes until the result is written, all in one step, so a
  cancelled or failed job leaves the scene as it was and one Undo removes a finished one.

An operator using `BackendOperator` provides `_start(context) -> BackendTask | None` (read and
check the scene, submit) and `_finish(context, task, result) -> set` (write the result).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bpy
import numpy as np

from ..kirin_addon.backend.client import BackendClient, BackendJob
from ..kirin_addon.backend.process import ensure_backend, local_folders
from ..kirin_addon.backend.results import BackendError, JobCancelledError
from ..kirin_addon.core.rig import Rig
from ..kirin_addon.core.skinning import SkinnedMesh
from . import scene_io
from .retarget import target_frame

ADDON_ID = __package__.rpartition(".")[0]  # the add-on's module ("bl_ext.<repo>.kirin" as an extension)
ROOT = Path(__file__).resolve().parents[1]


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
        arm, rig = scene_io.deforming_armature(context)
        to_canonical = target_frame(arm, rig).matrix()
        mesh = scene_io.read_armature_skin(context, arm, rig, to_canonical)
        return cls(arm.name, rig, rig.transformed(to_canonical), to_canonical, mesh, **more)

    def armature_to_write(self, during: str) -> tuple[bpy.types.Object, Rig]:
        """The armature the result goes onto, with its rig; SceneError when it is gone or its bones
        changed `during` the job ("while generating")."""
        arm = bpy.data.objects.get(self.armature)
        if arm is None or arm.type != "ARMATURE":
            raise scene_io.SceneError(f"The armature '{self.armature}' is gone: nothing was written.")
        rig = scene_io.read_rig(arm)
        if rig.names != self.rig.names:
            raise scene_io.SceneError(f"The bones of '{arm.name}' changed {during}: nothing was written.")
        return arm, rig


# ----------------------------------------------------------------------------- one job
class BackendTask:
    """One backend job seen from the add-on: poll (modal) or wait (execute), cancel. Touches no bpy
    data, so that the modal path is tested without timers."""

    def __init__(self, job: BackendJob, label: str):
        self.job = job
        self.label = label  # "generating 'a wolf trotting'", "binding 'Scan'"...
        self.started = time.perf_counter()

    def poll(self) -> Any:
        """One status request: the result once the job is done, else None. BackendError when it
        failed or the backend stopped, JobCancelledError when it was cancelled."""
        status = self.job.poll_once()
        return self.job.result() if status.finished else None

    def wait(self, timeout: float | None = None) -> Any:
        return self.job.wait(timeout=timeout)

    def cancel(self) -> None:
        try:
            self.job.cancel()
        except BackendError:
            pass  # a backend that is gone has nothing left to cancel

    @property
    def progress_text(self) -> str:
        status = self.job.status
        where = f" (queued, {status.position} ahead)" if status.state == "queued" and status.position else ""
        return f"Kirin: {self.label} {status.progress:.0%} — {status.message}{where}. Esc cancels."


def start_task(op, make: Callable[[], BackendTask]) -> BackendTask | None:
    """The task `make()` starts; a scene or backend error goes to the status bar instead (None)."""
    try:
        return make()
    except (scene_io.SceneError, BackendError) as exc:
        op.report({"ERROR"}, str(exc))
        return None


class BackendOperator:
    """The execute/invoke/modal/cancel of an operator that runs one backend job (a mixin before
    bpy.types.Operator). Subclasses define `_start`, `_finish` and a `timeout` property."""

    _task: BackendTask | None = None
    _timer = None

    def _start(self, context) -> BackendTask | None:
        raise NotImplementedError

    def _finish(self, context, task: BackendTask, result: Any) -> set[str]:
        raise NotImplementedError

    # ------------------------------------------------------------------ synchronous path
    def execute(self, context):
        task = self._start(context)
        if task is None:
            return {"CANCELLED"}
        try:
            result = task.wait(timeout=self.timeout)
        except JobCancelledError as exc:
            self.report({"WARNING"}, str(exc))
            return {"CANCELLED"}
        except BackendError as exc:
            self.report({"ERROR"}, exc.message)
            return {"CANCELLED"}
        return self._finish(context, task, result)

    # ------------------------------------------------------------------ modal path
    def invoke(self, context, event):
        if context.window is None or bpy.app.background:  # no timers headless: the synchronous path
            return self.execute(context)
        task = self._start(context)
        if task is None:
            return {"CANCELLED"}
        self._task = task
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        wm.progress_begin(0, 100)
        self._show(context, task.progress_text)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        task = self._task
        if task is None:
            return {"CANCELLED"}
        if event.type == "ESC" and event.value == "PRESS":
            task.cancel()
            self._cleanup(context)
            self.report({"WARNING"}, f"{self.bl_label} cancelled: nothing was changed.")
            return {"CANCELLED"}
        if event.type != "TIMER":  # (another timer's tick only polls a little more often)
            return {"PASS_THROUGH"}
        try:
            result = task.poll()
        except JobCancelledError as exc:
            self._cleanup(context)
            self.report({"WARNING"}, str(exc))
            return {"CANCELLED"}
        except BackendError as exc:
            self._cleanup(context)
            self.report({"ERROR"}, exc.message)
            return {"CANCELLED"}
        if result is None:
            context.window_manager.progress_update(int(100 * task.job.status.progress))
            self._show(context, task.progress_text)
            return {"PASS_THROUGH"}
        self._cleanup(context)
        return self._finish(context, task, result)

    def cancel(self, context):  # Blender ends the operator (window closed, file loaded)
        if self._task is not None:
            self._task.cancel()
        self._cleanup(context)

    def _show(self, context, text: str | None) -> None:
        if context.workspace is not None:
            context.workspace.status_text_set(text)
        if context.area is not None:
            context.area.header_text_set(text)

    def _cleanup(self, context) -> None:
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
        self._show(context, None)
        self._task = None
