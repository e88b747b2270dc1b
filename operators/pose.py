"""Pose Space (ViPS) in Blender: drag a bone and the whole pose follows, staying plausible; project
the current pose onto plausible poses; sample a pose; walk the pose space between keys.

All four call the backend's pose prior synchronously (one request each; a drag sends one per mouse
move, ~20 ms). Requests travel in the rig's canonical frame as the add-on detects it (the
armature's world matrix and the user's Up/Forward settings, as Generate Motion does), and the
answers come back on the same bones; `scene_io` reads and writes the pose bones.

Nothing in the scene changes on bad input or a backend error: a drag puts back the exact pose it
started from (a bit-for-bit snapshot of the pose bones' channels), the other operators write only
once the answer is in. Each finished operator is one undo step.

The drag's per-move logic lives in `DragSession` and its modal event handling in `drag_modal`, both
usable without a window, so that headless tests drive them with synthetic events.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import bpy
import numpy as np
from bpy.props import EnumProperty, FloatProperty, FloatVectorProperty, IntProperty, StringProperty

from ..kirin_addon.backend.client import BackendClient
from ..kirin_addon.backend.results import BackendError, PoseResult
from ..kirin_addon.core.motion import Motion, MotionError, forward_kinematics, pin_frames
from ..kirin_addon.core.rig import Rig
from ..kirin_addon.core.rotations import quat_identity
from ..kirin_addon.core.skinning import SkinnedMesh
from ..kirin_addon.pose.request import PoseProjectRequest, PoseSampleRequest, PoseWalkRequest
from ..kirin_addon.pose.space import JointLimits
from . import scene_io
from .common import connect
from .properties import WALK_METHODS
from .retarget import target_frame
from .scene_change import SceneChange, write_failure

NAME_LIMIT = 63  # bytes in a Blender ID name
RANGE_FRAMES_PER_ACTION = 500  # keyed frames of each action its joint ranges are measured on
PICK_RADIUS = 40.0  # pixels: how near the mouse a bone must be to be grabbed by the drag tool
TOOL_ID = "kirin.pose_space_drag_tool"
HINT = "LMB/Enter: confirm · Esc/RMB: cancel"
# Events a drag lets through to the viewport (navigating while dragging); the rest it keeps.
NAVIGATION = {"MIDDLEMOUSE", "WHEELUPMOUSE", "WHEELDOWNMOUSE", "WHEELINMOUSE", "WHEELOUTMOUSE",
              "TRACKPADPAN", "TRACKPADZOOM", "MOUSEROTATE", "MOUSESMARTZOOM"}

ERRORS = (scene_io.SceneError, BackendError, MotionError)


# ----------------------------------------------------------------------------- reading the scene
def held_offsets(rig: Rig, pose: Motion) -> tuple[Rig, Motion]:
    """The rig with the pose's first-frame bone `location` offsets built into its rest, and the pose
    without them: the same joint positions, but the prior (which poses by rotations about rest
    offsets) sees the skeleton as the user does. glTF imports hold such offsets on most bones."""
    if pose.translations is None or not np.any(pose.translations[0]):
        return rig, pose
    moved = pose.translations[0].copy()
    moved[rig.main_root] = 0.0  # the main root's move is the motion's root position
    still = Motion(pose.fps, rig.heads[rig.main_root][None], quat_identity((1, rig.joint_count)), moved[None])
    rest = forward_kinematics(rig, still)[0]
    local = rig.rest_local.copy()
    local[:, :3, 3] += np.einsum("jab,jb->ja", local[:, :3, :3], moved)  # restlocal · T(location)
    local[rig.roots] = rest[rig.roots]
    held = Rig(list(rig.names), rig.parents.copy(), rest, rig.tails + rest[:, :3, 3] - rig.heads,
               rig.deform.copy(), rig.connected.copy(), local)
    return held, Motion(pose.fps, pose.root_positions, pose.rotations)


def pose_armature(context, pose_mode: bool) -> bpy.types.Object:
    """The armature a Pose Space operator acts on; SceneError (the status bar's message) if none."""
    obj = context.active_object
    if obj is not None and obj.type == "MESH" and not pose_mode:
        obj = obj.find_armature() or obj
    if obj is None or obj.type != "ARMATURE":
        raise scene_io.SceneError("Pose Space needs an armature: select one"
                                  + (" and enter Pose Mode." if pose_mode else "."))
    if pose_mode and obj.mode != "POSE":
        raise scene_io.SceneError(f"Pose Space works in Pose Mode: select '{obj.name}' and press Ctrl+Tab.")
    return obj


@dataclass
class PoseScene:
    """An armature read for pose requests, and the canonical frame the requests travel in."""

    armature: str
    rig: Rig  # armature space
    to_canonical: np.ndarray  # (4,4) armature space → canonical frame
    mesh: SkinnedMesh | None  # canonical frame
    fps: float

    @classmethod
    def read(cls, context, arm: bpy.types.Object, with_mesh: bool = True) -> PoseScene:
        scene_io.check_object_scale(arm)
        rig = scene_io.read_rig(arm)
        matrix = target_frame(arm, rig).matrix()
        mesh = scene_io.read_armature_skin(context, arm, rig, matrix) if with_mesh else None
        render = context.scene.render
        return cls(arm.name, rig, matrix, mesh, render.fps / render.fps_base)

    def object(self) -> bpy.types.Object:
        arm = bpy.data.objects.get(self.armature)
        if arm is None or arm.type != "ARMATURE":
            raise scene_io.SceneError(f"The armature '{self.armature}' is gone: nothing was changed.")
        return arm

    def request(self, motion: Motion) -> tuple[Rig, Motion]:
        """What the backend gets for a pose (or keys) on this rig: rig and motion in the canonical
        frame, the bones' `location` offsets folded into the rig (`held_offsets`)."""
        rig, motion = held_offsets(self.rig, motion)
        return rig.transformed(self.to_canonical), motion.transformed(self.to_canonical)

    def ranged_request(self, arm: bpy.types.Object, motion: Motion,
                       keep_ranges: bool) -> tuple[Rig, Motion, JointLimits | None, int]:
        """`request`, and the joint ranges of the armature's actions on the request's rig
        (`rig_ranges`) with how many actions they come from: (None, 0) unless `keep_ranges`."""
        rig, moved = self.request(motion)
        return (rig, moved, *rig_ranges(arm, self.rig, rig, keep_ranges))

    def from_answer(self, motion: Motion, keep: Motion | None = None) -> Motion:
        """An answer back in armature space; bones the prior does not move by location (it poses by
        rotations) keep the `location` they had in `keep`."""
        out = motion.transformed(np.linalg.inv(self.to_canonical))
        if out.translations is None and keep is not None and keep.translations is not None:
            moved = np.repeat(keep.translations[:1], out.frame_count, axis=0)
            out = Motion(out.fps, out.root_positions, out.rotations, moved)
        return out

    def point(self, point: np.ndarray) -> np.ndarray:
        """An armature-space point in the canonical frame."""
        m = self.to_canonical
        return np.asarray(point, np.float64) @ m[:3, :3].T + m[:3, 3]


# armature name → (what its ranges were measured from, the ranges, how many actions)
_ranges_cache: dict[str, tuple[tuple, JointLimits | None, int]] = {}


def rig_ranges(arm: bpy.types.Object, rig: Rig, request_rig: Rig,
               wanted: bool = True) -> tuple[JointLimits | None, int]:
    """The joint ranges the armature's own actions show, measured on the rig as a request sends it,
    and how many actions they come from; (None, 0) for an armature whose actions turn no bone, or
    when not `wanted`. Each action is read at its keys (at most RANGE_FRAMES_PER_ACTION) and tells
    the ranges only of the bones it turns: a bone no action turns keeps every angle. Reading the
    curves is slow (≈ 0.4 s for 18 clips): the answer is kept until a key or the rig changes."""
    if not wanted:
        return None, 0
    actions = scene_io.armature_actions(arm)
    source = (tuple(rig.names), scene_io.actions_fingerprint(actions, arm),
              request_rig.heads.tobytes(), request_rig.tails.tobytes())
    cached = _ranges_cache.get(arm.name)
    if cached is not None and cached[0] == source:
        return cached[1], cached[2]
    swing, twist = np.zeros(rig.joint_count), np.zeros(rig.joint_count)
    turned, used = np.zeros(rig.joint_count, dtype=bool), 0
    for action in actions:
        keyed = scene_io.keyed_rotations(action, arm, rig)
        keys = scene_io.action_key_frames(action, arm)
        if not keyed.any() or not len(keys):
            continue
        keys = keys[np.linspace(0, len(keys) - 1, min(len(keys), RANGE_FRAMES_PER_ACTION)).astype(np.int64)]
        rotations = scene_io.read_action(arm, rig, action, frames=keys).rotations
        limits = JointLimits.from_motion(request_rig, Motion(30.0, np.zeros((len(keys), 3)), rotations))
        swing = np.where(keyed, np.maximum(swing, limits.swing), swing)
        twist = np.where(keyed, np.maximum(twist, limits.twist), twist)
        turned |= keyed
        used += 1
    ranges = JointLimits(np.where(turned, swing, np.pi), np.where(turned, twist, np.pi)) if used else None
    _ranges_cache[arm.name] = (source, ranges, used)
    return ranges, used


def heads(context, arm: bpy.types.Object, rig: Rig) -> np.ndarray:
    """(J,3) armature-space bone heads as the user sees them (evaluated)."""
    context.view_layer.update()
    return scene_io.evaluated_pose(arm, rig)[:, :3, 3]


def percent(error: np.ndarray | None) -> str:
    if error is None or len(error) == 0:
        return ""
    return f"{100.0 * float(np.max(error)):.1f} % of body size"


# ----------------------------------------------------------------------------- the drag
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
        self.snapshot = scene_io.read_pose_channels(arm)  # the exact pose to go back to
        self.pose = scene_io.read_pose(arm, rig, self.scene.fps)
        self.request_rig, self.request_pose, self.ranges, self.range_actions = self.scene.ranged_request(
            arm, self.pose, keep_ranges)
        self.start_heads = heads(context, arm, rig)
        self.head = self.start_heads[self.joint].copy()  # armature space
        pinned = scene_io.selected_bones(arm, rig)
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

        world = scene_io.object_matrix(arm)
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
            scene_io.write_pose(arm, scene.rig, scene.from_answer(result.motion, self.pose))
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
            scene_io.write_pose_channels(arm, self.snapshot)

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
            world = scene_io.object_matrix(session.scene.object())
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
    pose = scene_io.evaluated_pose(arm, rig)
    world = scene_io.object_matrix(arm)
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
    hidden = scene_io.hidden_bones(arm, rig)
    distance[~visible.all(axis=1) | hidden] = np.inf
    best = int(np.argmin(distance))
    return rig.names[best] if distance[best] <= radius else None


class AnyModeArmature:
    """Operators on the active armature (or the armature of the active mesh), any mode."""

    pose_mode = False

    @classmethod
    def poll(cls, context):
        try:
            pose_armature(context, pose_mode=cls.pose_mode)
        except scene_io.SceneError as exc:
            cls.poll_message_set(str(exc))
            return False
        return True


class PoseModeArmature(AnyModeArmature):
    """Operators on the active armature in Pose Mode."""

    pose_mode = True


def _strength(op, context) -> float | None:
    value = op.strength if op.properties.is_property_set("strength") else context.scene.kirin.pose_strength
    return float(value) if value > 0 else None


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
        rig = scene_io.read_rig(arm)
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
        return DragSession(context, arm, bone, connect(context), _strength(self, context),
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
        world = scene_io.object_matrix(session.scene.object())
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


# ----------------------------------------------------------------------------- the other operators
def _report_change(op, what: str, result: PoseResult, seconds: float) -> None:
    text = f"{what} in {seconds * 1000:.0f} ms"
    if result.handle_error is not None and len(result.handle_error):
        text += f", the kept bones within {percent(result.handle_error)}"
    if not result.reached:
        op.report({"WARNING"}, f"{text}: {result.message or 'out of plausible reach'}")
    else:
        op.report({"INFO"}, text)


class KIRIN_OT_project_pose(PoseModeArmature, bpy.types.Operator):
    """Make the current pose plausible while keeping what you placed: the selected bones' heads stay
    where they are (all end bones when none is selected), the rest follows the pose prior"""

    bl_idname = "kirin.project_pose"
    bl_label = "Project Pose"
    bl_options = {"REGISTER", "UNDO"}

    strength: FloatProperty(name="Strength", default=0.0, min=0.0, max=1.0,
                            description="How far the pose prior may move the pose (0: the panel's value)")

    def execute(self, context):
        started = time.perf_counter()
        try:
            arm = pose_armature(context, pose_mode=True)
            scene = PoseScene.read(context, arm)
            rig = scene.rig
            pose = scene_io.read_pose(arm, rig, scene.fps)
            chosen = scene_io.selected_bones(arm, rig)
            joints = np.flatnonzero(chosen) if chosen.any() else np.asarray(rig.end_effectors)
            if joints.size == 0:
                raise scene_io.SceneError(f"'{arm.name}' has no bones to keep: select the bones you placed.")
            now = heads(context, arm, rig)
            targets = {int(j): scene.point(now[j]) for j in joints}
            request_rig, request_pose, ranges, _ = scene.ranged_request(
                arm, pose, context.scene.kirin.pose_keep_ranges)
            request = PoseProjectRequest(request_pose, targets, strength=_strength(self, context),
                                         relative=False, ranges=ranges)
            result = connect(context).project_pose(request_rig, request, scene.mesh)
            write_answer(context, arm, rig, scene.from_answer(result.motion, pose), key=False)
        except Exception as exc:  # noqa: BLE001 — the pose is back as it was: say why
            self.report({"ERROR"}, write_failure(exc))
            return {"CANCELLED"}
        _report_change(self, f"Pose projected keeping {len(joints)} bone(s)", result,
                       time.perf_counter() - started)
        return {"FINISHED"}


class KIRIN_OT_sample_pose(AnyModeArmature, bpy.types.Operator):
    """Set the armature to a plausible pose drawn from the pose prior (standing and facing as now);
    keys it when Auto-Keying is on"""

    bl_idname = "kirin.sample_pose"
    bl_label = "Sample Pose"
    bl_options = {"REGISTER", "UNDO"}

    seed: IntProperty(name="Seed", default=0, min=0, description="Which pose (the panel's seed when unset)")

    def execute(self, context):
        started = time.perf_counter()
        seed = self.seed if self.properties.is_property_set("seed") else context.scene.kirin.pose_seed
        try:
            arm = pose_armature(context, pose_mode=False)
            scene = PoseScene.read(context, arm)
            rig = scene.rig
            pose = scene_io.read_pose(arm, rig, scene.fps)
            request_rig, request_pose, ranges, _ = scene.ranged_request(
                arm, pose, context.scene.kirin.pose_keep_ranges)
            request = PoseSampleRequest(request_pose, count=1, seed=int(seed), ranges=ranges)
            result = connect(context).sample_poses(request_rig, request, scene.mesh)
            keyed = context.scene.tool_settings.use_keyframe_insert_auto
            write_answer(context, arm, rig, scene.from_answer(result.motion, pose), key=keyed)
        except Exception as exc:  # noqa: BLE001 — the pose is back as it was: say why
            self.report({"ERROR"}, write_failure(exc))
            return {"CANCELLED"}
        _report_change(self, f"Pose #{seed} sampled" + (" and keyed" if keyed else ""), result,
                       time.perf_counter() - started)
        return {"FINISHED"}


def write_answer(context, arm: bpy.types.Object, rig, pose: Motion, key: bool) -> None:
    """Put the backend's pose on the armature (and key it at the current frame when Auto-Keying is on);
    a failure part-way puts the pose and the keys back."""
    frame = context.scene.frame_current
    with SceneChange(context.scene) as change:
        change.keep_pose(arm)
        change.keep_animation(arm)
        if key:
            change.keep_keys(arm, frame)
        scene_io.write_pose(arm, rig, pose)
        if key:
            scene_io.key_pose(arm, rig, frame)


def walk_name(action_name: str) -> str:
    suffix = " (pose walk)"
    room = NAME_LIMIT - len(suffix.encode())
    return action_name.encode()[:room].decode(errors="ignore") + suffix


class KIRIN_OT_walk_between_keys(AnyModeArmature, bpy.types.Operator):
    """In-betweens through the pose space: a new Action that walks from each keyed pose to the next
    (the selected keyframes, else all), every frame keyed; the old action is kept"""

    bl_idname = "kirin.walk_between_keys"
    bl_label = "Walk Between Keys"
    bl_options = {"REGISTER", "UNDO"}

    method: EnumProperty(name="Walk", items=WALK_METHODS, default="GUIDED",
                         options={"SKIP_SAVE"}, description="Unset: the panel's choice")

    def execute(self, context):
        started = time.perf_counter()
        try:
            arm = pose_armature(context, pose_mode=False)
            anim = arm.animation_data
            action = anim.action if anim is not None else None
            if action is None:
                raise scene_io.SceneError(f"Walk Between Keys needs keyframes: '{arm.name}' has no action.")
            keys, which = scene_io.action_key_frames(action, arm, selected=True), "selected keyframes"
            if keys.size == 0:
                keys, which = scene_io.action_key_frames(action, arm), "keyframes"
            if keys.size < 2:
                hint = " (select two or more, or none to use all)" if which.startswith("selected") else ""
                raise scene_io.SceneError(f"Walk Between Keys needs at least 2 keyed frames: '{action.name}' "
                                          f"has {keys.size} frame(s) with {which}{hint}.")
            scene = PoseScene.read(context, arm)
            rig = scene.rig
            first, last = int(keys[0]), int(keys[-1])
            span = scene_io.read_action(arm, rig, action, fps=scene.fps, frame_range=(first, last))
            offsets = keys - first
            poses = Motion(span.fps, span.root_positions[offsets], span.rotations[offsets],
                           None if span.translations is None else span.translations[offsets])
            method = self.method if self.properties.is_property_set("method") else \
                context.scene.kirin.pose_walk_method
            request_rig, request_keys, ranges, _ = scene.ranged_request(
                arm, poses, context.scene.kirin.pose_keep_ranges)
            request = PoseWalkRequest(request_keys, np.diff(keys).tolist(), method.lower(), ranges)
            result = connect(context).walk_poses(request_rig, request, scene.mesh)
            walked = scene.from_answer(result.motion)
            # The keys exactly as keyed (the prior brings them back only up to its precision).
            keep = Motion(walked.fps, walked.root_positions.copy(), walked.rotations.copy(),
                          np.zeros(walked.rotations.shape[:2] + (3,)) if walked.translations is None
                          else walked.translations.copy())
            keep.root_positions[offsets] = poses.root_positions
            keep.rotations[offsets] = poses.rotations
            if poses.translations is not None:
                keep.translations[offsets] = poses.translations
            walked, change = pin_frames(walked, keep, offsets)
            scene_io.keyed_locations(rig, walked)
            with SceneChange(context.scene) as undo:
                undo.keep_animation(arm)
                new = scene_io.write_action(arm, rig, walked, walk_name(action.name), frame_start=first)
        except Exception as exc:  # noqa: BLE001 — the scene is back as it was: say why
            self.report({"ERROR"}, write_failure(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"'{new.name}': {walked.frame_count} frames through {keys.size} {which} in "
                    f"{time.perf_counter() - started:.1f} s (keys met within {change['degrees']:.1f}°); "
                    f"'{action.name}' is kept")
        return {"FINISHED"}


# ----------------------------------------------------------------------------- the tool
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


CLASSES = (KIRIN_OT_pose_space_drag, KIRIN_OT_project_pose, KIRIN_OT_sample_pose, KIRIN_OT_walk_between_keys)
