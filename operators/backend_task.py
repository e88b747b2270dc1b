"""One backend job seen from the add-on, and the operator that runs it.

Two paths share every step but the waiting:
- `execute()` (scripts, the `kirin` command line, headless tests) submits the job and blocks on
  `task.wait()`;
- `invoke()` + `modal()` (a user's click) submits the job and returns at once; a window timer calls
  `task.poll()` (one short `poll_once()` request), the status bar shows the progress, Esc cancels
  the job. Nothing in the scene changes until the result is written, all in one step, so a
  cancelled or failed job leaves the scene as it was and one Undo removes a finished one.

An operator using `BackendOperator` provides `_start(context) -> BackendTask | None` (read and
check the scene, submit) and `_write(context, task, result) -> Written` (write the result; what it
made). `BackendOperator._finish` is the one end of both paths: it writes, says what was made, and
hands the report to a caller that named a `report_file` (the `kirin` command line: `bpy.ops` answers
only {'FINISHED'}, and the command line runs another copy of this package than the enabled
extension's, so the report travels as a JSON file the caller names and reads).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bpy
from bpy.props import StringProperty

from ..kirin_addon.backend.client import BackendJob
from ..kirin_addon.backend.results import BackendError, JobCancelledError
from . import scene_io
from .scene_change import write_failure


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


@dataclass
class Written:
    """What an operator's write made: its report (plain JSON values: what the `kirin` command line
    prints and saves) and what the status bar says, in order: (level, text), level "INFO" or
    "WARNING"."""

    report: dict[str, Any]
    messages: list[tuple[str, str]] = field(default_factory=list)

    def say(self, level: str, text: str) -> None:
        self.messages.append((level, text))


class BackendOperator:
    """The execute/invoke/modal/cancel of an operator that runs one backend job (a mixin before
    bpy.types.Operator). Subclasses define `_start`, `_write` and a `timeout` property."""

    report_file: StringProperty(
        name="Report file", subtype="FILE_PATH", options={"HIDDEN", "SKIP_SAVE"},
        description="Write what the run made to this file, as JSON (the command line reads it)",
    )

    _task: BackendTask | None = None
    _timer = None

    def _start(self, context) -> BackendTask | None:
        """Read and check the scene and submit the job (None: refused, reported); each backend operator
        defines it."""
        raise NotImplementedError

    def _write(self, context, task: BackendTask, result: Any) -> Written:
        """Write the result to the scene, all or nothing; raise (the change taken back) when it fails.
        Each backend operator defines it."""
        raise NotImplementedError

    def _finish(self, context, task: BackendTask, result: Any) -> set[str]:
        """The end of both paths: write the result, say what was made, hand over the report."""
        try:
            written = self._write(context, task, result)
        except Exception as exc:  # noqa: BLE001 — taken back already: say why, change nothing
            self.report({"ERROR"}, write_failure(exc))
            return {"CANCELLED"}
        for level, text in written.messages:
            self.report({level}, text)
        if self.report_file:
            try:
                Path(bpy.path.abspath(self.report_file)).write_text(json.dumps(written.report))
            except OSError as exc:
                self.report({"ERROR"}, f"Cannot write the report {self.report_file}: {exc.strerror or exc}")
        return {"FINISHED"}

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
