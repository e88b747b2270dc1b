"""Pose Space Drag: drag a bone and the whole pose follows, staying plausible (one projection per mouse
move, ~20 ms); the selected bones stay where they are; Esc puts back the exact pose it started from.

The drag's per-move logic lives in `DragSession` and its modal event handling in `drag_modal`, both
usable without a window, so that headless tests drive them with synthetic events. The toolbar tool
(`KIRIN_TL_pose_space_drag`) starts the operator on a click-drag in Pose Mode.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import bpy
import numpy as np
from bpy.props import FloatProperty, FloatVectorProperty, StringProperty

from ..kirin_addon.backend.client import BackendClient
from ..kirin_addon.backend.results import BackendError, PoseResult
from ..kirin_addon.core.motion import MotionError
from ..kirin_addon.core.rig import Rig
from ..kirin_addon.pose.request import PoseProjectRequest
from . import scene_io
from .common import connect
from .pose_scene import PoseModeArmature, PoseScene, heads, percent, pose_armature, pose_strength
from .scene_change import write_failure
from .scene_io.arrays import object_matrix
from .scene_io.pose import (
    hidden_bones,
    read_pose,
    read_pose_channels,
    selected_bones,
    write_pose,
    write_pose_channels,
)
from .scene_io.rig import evaluated_pose, read_rig

PICK_RADIUS = 40.0  # pixels: how near the mouse a bone must be to be grabbed by the drag tool
TOOL_ID = "kirin.pose_space_drag_tool"
HINT = "LMB/Enter: confirm · Esc/RMB: cancel"
# Events a drag lets through to the viewport (navigating while dragging); the rest it keeps.
NAVIGATION = {"MIDDLEMOUSE", "WHEELUPMOUSE", "WHEELDOWNMOUSE", "WHEELINMOUSE", "WHEELOUTMOUSE",
              "TRACKPADPAN", "TRACKPADZOOM", "MOUSEROTATE", "MOUSESMARTZOOM"}

ERRORS = (scene_io.SceneError, BackendError, MotionError)


class DragSession:
    """One drag of one bone: the pose it started from (restored exactly on cancel), the pins, and one
    projection per move. Touches bpy only through scene_io, so that tests drive it headless."""

    def __init__(self, context, arm: bpy.types.Object, bone: str, client: BackendClient,
                 strength: float | None = None, keep_ranges: bool = True):
        self.scene = PoseScene.read(context, arm)
        rig = self.scene.rig
        if bone not in rig.names:
            raise scene_io.SceneError(f"'{arm.name}' has no bone '{bone}'.")
        self.client = client
        self.bone = bone
        self.joint = rig.index(bone)
        self.strength = strength
        self.snapshot = read_pose_channels(arm)  # the exact pose to go back to
        self.pose = read_pose(arm, rig, self.scene.fps)
        self.request_rig, self.request_pose, self.ranges, self.range_actions = self.scene.ranged_request(
            arm, self.pose, keep_ranges)
        self.start_heads = heads(context, arm, rig)
        self.head = self.start_heads[self.joint].copy()  # armature space
        pinned = selected_bones(arm, rig)
        pinned[self.joint] = False
        self.pins = [int(j) for j in np.flatnonzero(pinned)]
        self.mesh_key: str | None = None
        self.last: PoseResult | None = None
        self.target: np.ndarray | None = None
        self.busy = False
        self.moves = self.skipped = 0
        self.seconds = 0.0
        # Mouse position (region pixels) → armature-space target; set by the operator from the view.
        self.to_target: Callable[[float, float], np.ndarray | None] | None = None

    # ------------------------------------------------------------------ the view
    def follow_view(self, arm: bpy.types.Object, region, rv3d, mouse: tuple[float, float]) -> None:
        """Targets from the mouse: the head moves in the view plane through it, by as much as the
        mouse moved since the click (so the bone does not jump to the cursor)."""
        from bpy_extras import view3d_utils

        world = object_matrix(arm)
        to_armature = np.linalg.inv(world)
        head_world = world[:3, :3] @ self.head + world[:3, 3]

        def in_plane(x: float, y: float) -> np.ndarray | None:
            point = view3d_utils.region_2d_to_location_3d(region, rv3d, (x, y), tuple(head_world))
            return None if point is None else np.array(point, dtype=np.float64)

        start = in_plane(*mouse)

        def to_target(x: float, y: float) -> np.ndarray | None:
            point = in_plane(x, y)
            if point is None or start is None:
                return None
            moved = head_world + point - start
            return to_armature[:3, :3] @ moved + to_armature[:3, 3]

        self.to_target = to_target

    # ------------------------------------------------------------------ one move
    def move(self, target: np.ndarray) -> PoseResult | None:
        """Project the starting pose with the dragged head at `target` (armature space), the pins
        where they are, and write the answer to the pose bones. None when a request is still in
        flight (the move is skipped: the next one carries the newer target)."""
        if self.busy:
            self.skipped += 1
            return None
        self.busy = True
        started = time.perf_counter()
        try:
            scene = self.scene
            request = PoseProjectRequest(self.request_pose, {self.joint: scene.point(target)}, self.pins,
                                         self.strength, ranges=self.ranges)
            result = self.client.project_pose(self.request_rig, request, scene.mesh, self.mesh_key)
            self.mesh_key = result.mesh_key or self.mesh_key
            arm = scene.object()
            write_pose(arm, scene.rig, scene.from_answer(result.motion, self.pose))
        finally:
            self.busy = False
        self.seconds += time.perf_counter() - started
        self.moves += 1
        self.last = result
        self.target = np.asarray(target, np.float64)
        return result

    def move_mouse(self, x: float, y: float) -> PoseResult | None:
        if self.to_target is None:
            return None
        target = self.to_target(x, y)
        return None if target is None else self.move(target)

    def restore(self) -> None:
        """The pose exactly as it was before the drag."""
        arm = bpy.data.objects.get(self.scene.armature)
        if arm is not None and arm.type == "ARMATURE" and len(arm.pose.bones) == len(self.snapshot["scale"]):
            write_pose_channels(arm, self.snapshot)

    def status(self) -> str:
        text = f"Pose Space Drag '{self.bone}'"
        if self.pins:
            text += f", {len(self.pins)} pinned"
        if self.range_actions:
            text += f", within the ranges of {self.range_actions} action(s)"
        result = self.last
        if result is not None:
            error = None if result.handle_error is None else result.handle_error[:1]
            text += f": {percent(error)} from the target"
            if not result.reached and result.message:
                text += f" — {result.message}"
        return f"{text}. {HINT}"


def event_action(event) -> str | None:
    """What a drag does with an event: 'move', 'confirm', 'cancel', 'pass' (view navigation) or
    None (swallowed)."""
    kind, value = event.type, event.value
    if kind == "MOUSEMOVE":
        return "move"
    if kind == "LEFTMOUSE" and value in {"PRESS", "RELEASE"}:
        return "confirm"  # released: the end of the tool's click-drag; pressed: a drag started by a key
    if kind in {"RET", "NUMPAD_ENTER", "SPACE"} and value == "PRESS":
        return "confirm"
    if kind in {"ESC", "RIGHTMOUSE"} and value == "PRESS":
        return "cancel"
    if kind in NAVIGATION or kind.startswith("NDOF"):
        return "pass"
    return None


def _show(context, text: str | None) -> None:
    if context is None:
        return
    workspace = getattr(context, "workspace", None)
    if workspace is not None:
        workspace.status_text_set(text)
    area = getattr(context, "area", None)
    if area is not None:
        area.header_text_set(text)
        area.tag_redraw()


def finish_report(session: DragSession) -> tuple[set[str], str]:
    result = session.last
    if result is None:
        return {"INFO"}, f"'{session.bone}' was not moved."
    error = None if result.handle_error is None else result.handle_error[:1]
    text = f"'{session.bone}' dragged, {percent(error)} from the target"
    if not result.reached:
        return {"WARNING"}, f"{text}: {result.message or 'out of plausible reach'}"
    return {"INFO"}, text


def drag_modal(op, context, event) -> set[str]:
    """The drag operator's modal step (also driven by tests with synthetic events): `op` has
    `_session` and `report`."""
    session: DragSession | None = op._session
    if session is None:
        return {"CANCELLED"}
    action = event_action(event)
    if action == "pass":
        return {"PASS_THROUGH"}
    if action == "cancel":
        session.restore()
        _show(context, None)
        op._session = None
        op.report({"INFO"}, f"Pose Space Drag cancelled: '{session.bone}' is back where it was.")
        return {"CANCELLED"}
    if action == "confirm":
        _show(context, None)
        op._session = None
        if session.target is not None:  # what Redo (Adjust Last Operation) runs again: the scripted drag
            world = object_matrix(session.scene.object())
            op.bone = session.bone
            op.target = tuple(world[:3, :3] @ session.target + world[:3, 3])
        level, text = finish_report(session)
        op.report(level, text)
        return {"FINISHED"}
    if action == "move":
        try:
            session.move_mouse(event.mouse_region_x, event.mouse_region_y)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the pose goes back and the drag ends
            session.restore()
            _show(context, None)
            op._session = None
            op.report({"ERROR"}, f"Pose Space Drag stopped, the pose is as it was: {exc}")
            if not isinstance(exc, ERRORS):
                raise
            return {"CANCELLED"}
        _show(context, session.status())
    return {"RUNNING_MODAL"}


def bone_under_mouse(context, arm: bpy.types.Object, rig: Rig, mouse: tuple[float, float],
                     radius: float = PICK_RADIUS) -> str | None:
    """The visible bone whose drawn segment (head to tail) passes nearest the mouse, within `radius`
    pixels; None if none does."""
    region, rv3d = context.region, context.region_data
    if region is None or rv3d is None:
        return None
    pose = evaluated_pose(arm, rig)
    world = object_matrix(arm)
    tails_local = np.einsum("jab,b->ja", pose[:, :3, :3], np.array([0.0, 1.0, 0.0])) * rig.lengths[:, None]
    ends = np.stack([pose[:, :3, 3], pose[:, :3, 3] + tails_local], axis=1)  # (J,2,3) armature space
    ends = ends @ world[:3, :3].T + world[:3, 3]
    homogeneous = np.concatenate([ends, np.ones(ends.shape[:2] + (1,))], axis=-1)
    clip = homogeneous @ np.array(rv3d.perspective_matrix).T
    visible = clip[..., 3] > 1e-9
    screen = clip[..., :2] / np.where(visible, clip[..., 3], 1.0)[..., None]
    screen = (screen + 1.0) * 0.5 * np.array([region.width, region.height])
    a, b = screen[:, 0], screen[:, 1]
    d = b - a
    p = np.asarray(mouse, np.float64)
    s = np.clip(np.sum((p - a) * d, -1) / np.maximum(np.sum(d * d, -1), 1e-12), 0.0, 1.0)
    distance = np.linalg.norm(a + s[:, None] * d - p, axis=-1)
    hidden = hidden_bones(arm, rig)
    distance[~visible.all(axis=1) | hidden] = np.inf
    best = int(np.argmin(distance))
    return rig.names[best] if distance[best] <= radius else None


class KIRIN_OT_pose_space_drag(PoseModeArmature, bpy.types.Operator):
    """Drag a bone: the whole pose follows and stays plausible (Kirin's pose prior); other selected
    bones stay where they are. LMB/Enter confirms, Esc/RMB puts the pose back"""

    bl_idname = "kirin.pose_space_drag"
    bl_label = "Pose Space Drag"
    bl_options = {"REGISTER", "UNDO", "BLOCKING"}

    bone: StringProperty(name="Bone", description="The bone to drag (empty: the bone under the mouse, "
                         "else the active bone)", options={"SKIP_SAVE"})
    target: FloatVectorProperty(name="Target", subtype="TRANSLATION", size=3, options={"SKIP_SAVE"},
                                description="Where the bone's head should go (world space; scripts)")
    strength: FloatProperty(name="Strength", default=0.0, min=0.0, max=1.0, options={"SKIP_SAVE"},
                            description="How far the pose prior may move the edit (0: the panel's value)")

    _session: DragSession | None = None

    def _begin(self, context, mouse: tuple[float, float] | None) -> DragSession:
        arm = pose_armature(context, pose_mode=True)
        rig = read_rig(arm)
        bone = self.bone
        if not bone and mouse is not None:
            bone = bone_under_mouse(context, arm, rig, mouse) or ""
        if not bone:
            active = arm.data.bones.active
            if active is None:
                raise scene_io.SceneError("No bone to drag: click on a bone, or make one active.")
            bone = active.name
        if bone not in rig.names:
            raise scene_io.SceneError(f"'{arm.name}' has no bone '{bone}'.")
        return DragSession(context, arm, bone, connect(context), pose_strength(self, context),
                           context.scene.kirin.pose_keep_ranges)

    def execute(self, context):
        """The scripted drag: the bone's head to `target` (world space) in one projection."""
        if not self.properties.is_property_set("target"):
            self.report({"ERROR"}, "Pose Space Drag needs a target (world space) when run from a script; "
                        "in the viewport, drag a bone with the Pose Space Drag tool.")
            return {"CANCELLED"}
        try:
            session = self._begin(context, None)
        except ERRORS as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        world = object_matrix(session.scene.object())
        inverse = np.linalg.inv(world)
        target = inverse[:3, :3] @ np.array(self.target, np.float64) + inverse[:3, 3]
        try:
            session.move(target)
        except Exception as exc:  # noqa: BLE001 — whatever failed, the pose goes back
            session.restore()
            self.report({"ERROR"}, f"Pose Space Drag failed, the pose is as it was: {write_failure(exc)}")
            return {"CANCELLED"}
        level, text = finish_report(session)
        self.report(level, text)
        return {"FINISHED"}

    def invoke(self, context, event):
        if bpy.app.background or context.window is None or context.region_data is None:
            return self.execute(context)
        mouse = (event.mouse_region_x, event.mouse_region_y)
        try:
            session = self._begin(context, mouse)
        except ERRORS as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        session.follow_view(session.scene.object(), context.region, context.region_data, mouse)
        self._session = session
        context.window_manager.modal_handler_add(self)
        _show(context, session.status())
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        return drag_modal(self, context, event)

    def cancel(self, context):  # Blender ends the operator (window closed, file loaded)
        if self._session is not None:
            self._session.restore()
            self._session = None
        _show(context, None)


class KIRIN_TL_pose_space_drag(bpy.types.WorkSpaceTool):
    bl_space_type = "VIEW_3D"
    bl_context_mode = "POSE"
    bl_idname = TOOL_ID
    bl_label = "Pose Space Drag"
    bl_description = ("Drag a bone and the whole pose follows, staying plausible (Kirin's pose prior); "
                      "click to select bones, selected bones stay put")
    bl_icon = "ops.pose.breakdowner"
    bl_widget = None
    bl_keymap = (
        ("kirin.pose_space_drag", {"type": "LEFTMOUSE", "value": "CLICK_DRAG"}, None),
        ("view3d.select", {"type": "LEFTMOUSE", "value": "CLICK"}, {"properties": [("deselect_all", True)]}),
        ("view3d.select", {"type": "LEFTMOUSE", "value": "CLICK", "shift": True},
         {"properties": [("toggle", True)]}),
    )

    def draw_settings(context, layout, tool):
        layout.prop(context.scene.kirin, "pose_strength")
        layout.prop(context.scene.kirin, "pose_keep_ranges")


_tool_registered = False


def register_tool() -> bool:
    """Add the drag tool to Pose Mode's toolbar; a failure (an unusual Blender build, no window
    manager) is printed and leaves the operators working."""
    global _tool_registered
    if _tool_registered:
        return True
    try:
        try:
            bpy.utils.register_tool(KIRIN_TL_pose_space_drag, after={"builtin.transform"}, separator=True)
        except (KeyError, ValueError, StopIteration):
            bpy.utils.register_tool(KIRIN_TL_pose_space_drag, separator=True)
        _tool_registered = True
    except Exception as exc:  # noqa: BLE001 - never let the toolbar stop the add-on from loading
        print(f"Kirin: the Pose Space Drag tool is not in the toolbar: {exc}")
    return _tool_registered


def unregister_tool() -> None:
    global _tool_registered
    if not _tool_registered:
        return
    try:
        bpy.utils.unregister_tool(KIRIN_TL_pose_space_drag)
    except Exception as exc:  # noqa: BLE001
        print(f"Kirin: could not remove the Pose Space Drag tool: {exc}")
    _tool_registered = False
