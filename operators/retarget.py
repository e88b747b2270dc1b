"""Apply Motion From File: BVH / glTF / Kirin clip → retargeted NEW Action on the selected armature."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import bpy
from bpy.props import BoolProperty, StringProperty

from ..kirin_addon.core.rig import Rig
from ..kirin_addon.io.files import declared_unit, file_world_matrix, load_motion_file
from ..kirin_addon.retarget.joint_mapping import auto_map_joints
from ..kirin_addon.retarget.motion_file import (
    FileConventions,
    FileRetarget,
    read_conventions,
    retarget_file_motion,
)
from .common import NeedsArmature, target_frame
from .scene_change import SceneChange, write_failure
from .scene_io.action import keyed_locations, write_action
from .scene_io.mesh import read_armature_skin
from .scene_io.rig import armature_from_context, check_object_scale, read_rig
from .standing import standing_pose


def stored_mapping(arm: bpy.types.Object, source_path: str, source_rig, rig) -> dict | None:
    """The user's (possibly edited) joint map, if it was made for this file and this rig."""
    settings = arm.kirin
    if bpy.path.abspath(settings.joint_map_source) != bpy.path.abspath(source_path):
        return None
    mapping = {item.name: (item.source or None) for item in settings.joint_map}
    if set(mapping) != set(rig.names):
        return None
    known = set(source_rig.names)
    return {k: (v if v in known else None) for k, v in mapping.items()}


def store_mapping(arm: bpy.types.Object, mapping: dict, source_path: str) -> None:
    settings = arm.kirin
    settings.joint_map.clear()
    for target_name in (b.name for b in arm.data.bones):
        item = settings.joint_map.add()
        item.name = target_name
        item.source = mapping.get(target_name) or ""
    settings.joint_map_source = source_path


def keep_joint_map(change, arm: bpy.types.Object) -> None:
    """Record the armature's stored joint map so that `change` can put it back."""
    settings = arm.kirin
    items, source = [(item.name, item.source) for item in settings.joint_map], settings.joint_map_source

    def restore() -> None:
        settings.joint_map.clear()
        for name, bone in items:
            item = settings.joint_map.add()
            item.name, item.source = name, bone
        settings.joint_map_source = source

    change.on_undo(restore)


def file_conventions(path: str, source_rig: Rig, motion) -> FileConventions:
    """How the motion file is read: its up, forward and units from its skeleton as it moves, and a rest
    that stands (kirin_addon/retarget/motion_file.py)."""
    return read_conventions(source_rig, motion, file_world_matrix(path), unit=declared_unit(path))


class KIRIN_OT_map_joints(NeedsArmature, bpy.types.Operator):
    """Match the armature's bones to the joints of the motion file (names, topology, rest geometry);
    edit the result in the list before applying"""

    bl_idname = "kirin.map_joints"
    bl_label = "Auto-Map Joints"
    bl_options = {"REGISTER", "UNDO"}

    filepath: StringProperty(name="Motion file", subtype="FILE_PATH")

    def execute(self, context):
        path = self.filepath or context.scene.kirin.motion_file
        try:
            arm = armature_from_context(context)
            rig = read_rig(arm)
            source_rig, motion, _ = load_motion_file(bpy.path.abspath(path), context.scene.kirin.clip or None)
            conventions = file_conventions(path, source_rig, motion)
            standing = standing_pose(arm, rig)
            target = (rig.transformed(target_frame(arm, rig).matrix()) if standing is None
                      else standing.rig.transformed(standing.frame.matrix()))
            mapping = auto_map_joints(conventions.rig.transformed(conventions.frame.matrix()), target)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        store_mapping(arm, mapping, path)
        mapped = sum(v is not None for v in mapping.values())
        self.report({"INFO"}, f"Mapped {mapped} of {len(mapping)} bones to '{os.path.basename(path)}'")
        return {"FINISHED"}


def _retarget_onto_the_scene(context, arm: bpy.types.Object, rig: Rig, conventions: FileConventions,
                             mapping: dict | None, align_rest: bool) -> FileRetarget:
    """The file's clip retargeted onto the armature as the scene shows it standing: onto its rest, or
    where that lies another way up (a BVH's folded zero pose), onto the pose it stands in and brought
    back onto the rest (operators/standing.py)."""
    skin = read_armature_skin(context, arm, rig)
    standing = standing_pose(arm, rig)
    if standing is None:
        return retarget_file_motion(conventions, rig, target_frame(arm, rig), mapping=mapping,
                                    align_rest=align_rest, skin=skin)
    retargeted = retarget_file_motion(conventions, standing.rig, standing.frame, mapping=mapping,
                                      align_rest=align_rest,
                                      skin=None if skin is None else standing.skin(rig, skin))
    result = retargeted.result
    result.motion = standing.onto_rest(rig, result.motion)
    result.warnings.append(standing.warning(arm.name))
    return retargeted


class KIRIN_OT_apply_motion_file(NeedsArmature, bpy.types.Operator):
    """Retarget a BVH, glTF or Kirin clip onto the selected armature as a new Action
    (the current action is kept)"""

    bl_idname = "kirin.apply_motion_file"
    bl_label = "Apply Motion From File"
    bl_options = {"REGISTER", "UNDO"}

    filepath: StringProperty(name="Motion file", subtype="FILE_PATH")
    clip: StringProperty(name="Clip", description="Animation inside a glTF file (empty: the first)")
    match_scene_fps: BoolProperty(name="Match scene FPS", default=True)
    align_rest: BoolProperty(name="Align rest poses", default=True)
    set_frame_range: BoolProperty(name="Set scene frame range", default=True)
    report_file: StringProperty(
        name="Report file", subtype="FILE_PATH", options={"HIDDEN", "SKIP_SAVE"},
        description="Write how the file was read and what was made to this file, as JSON (the command "
                    "line and the benchmark read it)",
    )

    def invoke(self, context, event):
        settings = context.scene.kirin
        self.filepath = self.filepath or settings.motion_file
        self.clip = self.clip or settings.clip
        self.match_scene_fps = settings.match_scene_fps
        self.align_rest = settings.align_rest
        if not self.filepath:
            context.window_manager.fileselect_add(self)
            return {"RUNNING_MODAL"}
        return self.execute(context)

    def execute(self, context):
        started = time.perf_counter()
        path = bpy.path.abspath(self.filepath or context.scene.kirin.motion_file)
        scene = context.scene
        try:
            arm = armature_from_context(context)
            check_object_scale(arm)
            rig = read_rig(arm)
            source_rig, motion, clip_name = load_motion_file(path, self.clip or None)
            if self.match_scene_fps:
                motion = motion.resampled(scene.render.fps / scene.render.fps_base)
            conventions = file_conventions(path, source_rig, motion)
            mapping = stored_mapping(arm, self.filepath or scene.kirin.motion_file, source_rig, rig)
            retargeted = _retarget_onto_the_scene(context, arm, rig, conventions, mapping, self.align_rest)
            result = retargeted.result
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        try:
            action = self._write(context, arm, rig, result, clip_name, mapping is None)
        except Exception as exc:  # noqa: BLE001 — taken back already: say why, change nothing
            self.report({"ERROR"}, write_failure(exc))
            return {"CANCELLED"}
        for warning in result.warnings:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, f"'{action.name}': {result.motion.frame_count} frames, {result.mapped_count}/"
                    f"{rig.joint_count} bones driven, {time.perf_counter() - started:.2f} s; "
                    f"'{os.path.basename(path)}' read as {conventions.describe()}")
        if self.report_file:
            self._write_report(action, retargeted)
        return {"FINISHED"}

    def _write_report(self, action, retargeted) -> None:
        conventions, result = retargeted.conventions, retargeted.result
        report = {"action": action.name, "frames": result.motion.frame_count, "mapped": result.mapped_count,
                  "mapping": result.mapping, "up_axis": conventions.up_axis,
                  "forward_axis": conventions.forward_axis, "unit": conventions.unit,
                  "height": conventions.height, "reference_frame": conventions.reference,
                  "floor_shift": retargeted.floor_shift, "root_scale": result.root_scale,
                  "feet_aligned": retargeted.feet, "feet_held": retargeted.held,
                  "feet_lifted": retargeted.lifted,
                  "read_as": conventions.describe(), "warnings": list(result.warnings)}
        try:
            Path(bpy.path.abspath(self.report_file)).write_text(json.dumps(report))
        except OSError as exc:
            self.report({"ERROR"}, f"Cannot write the report {self.report_file}: {exc.strerror or exc}")


    def _write(self, context, arm, rig: Rig, result, clip_name: str, show_map: bool):
        """The retargeted Action (and, when no map was stored, the automatic one shown in the panel)."""
        scene = context.scene
        motion = result.motion.continuous()
        keyed_locations(rig, motion)
        with SceneChange(scene) as change:
            change.keep_animation(arm)
            action = write_action(arm, rig, motion, f"{clip_name} → {arm.name}",
                                           frame_start=scene.frame_start)
            if show_map:  # ready to edit
                keep_joint_map(change, arm)
                store_mapping(arm, result.mapping, self.filepath or scene.kirin.motion_file)
            if self.set_frame_range:  # asked for: the range becomes the clip's
                scene.frame_end = scene.frame_start + motion.frame_count - 1
        return action


class KIRIN_OT_clear_joint_map(bpy.types.Operator):
    """Forget the edited joint map; the next apply maps joints automatically"""

    bl_idname = "kirin.clear_joint_map"
    bl_label = "Clear Joint Map"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and obj.type == "ARMATURE" and len(obj.kirin.joint_map) > 0

    def execute(self, context):
        context.active_object.kirin.joint_map.clear()
        context.active_object.kirin.joint_map_source = ""
        return {"FINISHED"}


CLASSES = (KIRIN_OT_map_joints, KIRIN_OT_apply_motion_file, KIRIN_OT_clear_joint_map)
