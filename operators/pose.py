"""Pose Space (ViPS) in Blender: drag a bone and the whole pose follows, staying plausible; project
the current pose onto plausible poses; sample a pose; walk the pose space between keys.

All four call the backend's pose prior synchronously (one request each; a drag sends one per mouse
move, ~20 ms). Requests travel in the rig's canonical frame as the add-on detects it (the
armature's world matrix and the user's Up/Forward settings, as Generate Motion does), and the
answers come back on the same bones; `scene_io` reads and writes the pose bones.

Nothing in the scene changes on bad input or a backend error: a drag puts back the exact pose it
started from (a bit-for-bit snapshot of the pose bones' channels), the other operators write only
once the answer is in. Each finished operator is one undo step.

This module holds Project Pose, Sample Pose and Walk Between Keys; pose_drag.py the drag (its session,
its modal step and the toolbar tool); pose_scene.py what they share (the armature read for pose
requests, the canonical frame, the joint ranges of its actions, the polls).
"""

from __future__ import annotations

import time

import bpy
import numpy as np
from bpy.props import EnumProperty, FloatProperty, IntProperty

from ..kirin_addon.backend.results import PoseResult
from ..kirin_addon.core.motion import Motion, pin_frames
from ..kirin_addon.pose.request import PoseProjectRequest, PoseSampleRequest, PoseWalkRequest
from . import scene_io
from .common import NAME_LIMIT, connect
from .pose_drag import KIRIN_OT_pose_space_drag
from .pose_scene import (
    AnyModeArmature,
    PoseModeArmature,
    PoseScene,
    heads,
    percent,
    pose_armature,
    pose_strength,
)
from .properties import WALK_METHODS
from .scene_change import SceneChange, write_failure
from .scene_io.action import action_key_frames, keyed_locations, read_action, write_action
from .scene_io.pose import key_pose, read_pose, selected_bones, write_pose


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
            pose = read_pose(arm, rig, scene.fps)
            chosen = selected_bones(arm, rig)
            joints = np.flatnonzero(chosen) if chosen.any() else np.asarray(rig.end_effectors)
            if joints.size == 0:
                raise scene_io.SceneError(f"'{arm.name}' has no bones to keep: select the bones you placed.")
            now = heads(context, arm, rig)
            targets = {int(j): scene.point(now[j]) for j in joints}
            request_rig, request_pose, ranges, _ = scene.ranged_request(
                arm, pose, context.scene.kirin.pose_keep_ranges)
            request = PoseProjectRequest(request_pose, targets, strength=pose_strength(self, context),
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
            pose = read_pose(arm, rig, scene.fps)
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
        write_pose(arm, rig, pose)
        if key:
            key_pose(arm, rig, frame)


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
            keys, which = action_key_frames(action, arm, selected=True), "selected keyframes"
            if keys.size == 0:
                keys, which = action_key_frames(action, arm), "keyframes"
            if keys.size < 2:
                hint = " (select two or more, or none to use all)" if which.startswith("selected") else ""
                raise scene_io.SceneError(f"Walk Between Keys needs at least 2 keyed frames: '{action.name}' "
                                          f"has {keys.size} frame(s) with {which}{hint}.")
            scene = PoseScene.read(context, arm)
            rig = scene.rig
            first, last = int(keys[0]), int(keys[-1])
            span = read_action(arm, rig, action, fps=scene.fps, frame_range=(first, last))
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
            keyed_locations(rig, walked)
            with SceneChange(context.scene) as undo:
                undo.keep_animation(arm)
                new = write_action(arm, rig, walked, walk_name(action.name), frame_start=first)
        except Exception as exc:  # noqa: BLE001 — the scene is back as it was: say why
            self.report({"ERROR"}, write_failure(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"'{new.name}': {walked.frame_count} frames through {keys.size} {which} in "
                    f"{time.perf_counter() - started:.1f} s (keys met within {change['degrees']:.1f}°); "
                    f"'{action.name}' is kept")
        return {"FINISHED"}


CLASSES = (KIRIN_OT_pose_space_drag, KIRIN_OT_project_pose, KIRIN_OT_sample_pose, KIRIN_OT_walk_between_keys)
