"""Bake to NLA: push the active action into a named track; older takes stay as muted tracks."""

from __future__ import annotations

import bpy
from bpy.props import StringProperty

from . import scene_io

TAKE_MARK = "kirin_take"  # custom property on the Actions of baked takes (NLA tracks hold no ID props)


def is_take(track) -> bool:
    return any(strip.action is not None and strip.action.get(TAKE_MARK) for strip in track.strips)


def push_action_to_track(obj: bpy.types.Object, track_name: str):
    """Move obj's active action into a new NLA track; earlier Kirin takes are muted, not deleted."""
    anim = obj.animation_data
    if anim is None or anim.action is None:
        raise scene_io.SceneError(f"'{obj.name}' has no active action to bake.")
    action, slot = anim.action, anim.action_slot
    start, end = action.frame_range
    for track in anim.nla_tracks:
        if is_take(track):
            track.mute = True
    track = anim.nla_tracks.new()
    existing = {t.name for t in anim.nla_tracks if t != track}
    name, n = track_name or "Kirin", 1
    while name in existing:
        name, n = f"{track_name}.{n:03d}", n + 1
    track.name = name
    action[TAKE_MARK] = True
    strip = track.strips.new(action.name, int(start), action)
    # A strip of a multi-slot action gets no slot and plays nothing: set it and the range explicitly.
    if slot is not None and strip.action_slot != slot:
        strip.action_slot = slot
    strip.action_frame_start, strip.action_frame_end = start, end
    strip.frame_end = strip.frame_start + (end - start)
    action.use_fake_user = True
    anim.action = None  # same as Push Down
    return track, strip


def solo_track(obj: bpy.types.Object, track_name: str) -> None:
    """Play one Kirin take: unmute it and mute the other takes."""
    anim = obj.animation_data
    if anim is None or track_name not in anim.nla_tracks:
        raise scene_io.SceneError(f"'{obj.name}' has no NLA track named '{track_name}'.")
    for track in anim.nla_tracks:
        if is_take(track) or track.name == track_name:
            track.mute = track.name != track_name


class KIRIN_OT_bake_to_nla(bpy.types.Operator):
    """Push the active action into a new NLA track; earlier takes are kept as muted tracks"""

    bl_idname = "kirin.bake_to_nla"
    bl_label = "Bake to NLA"
    bl_options = {"REGISTER", "UNDO"}

    track_name: StringProperty(name="Track", default="")

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != "ARMATURE":
            cls.poll_message_set("Select an armature first.")
            return False
        if obj.animation_data is None or obj.animation_data.action is None:
            cls.poll_message_set("The armature has no active action to bake.")
            return False
        return True

    def execute(self, context):
        obj = context.active_object
        try:
            track, strip = push_action_to_track(obj, self.track_name or context.scene.kirin.nla_track)
        except scene_io.SceneError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Baked '{strip.name}' into track '{track.name}'")
        return {"FINISHED"}


class KIRIN_OT_solo_take(bpy.types.Operator):
    """Play only this take: unmute its track and mute the other Kirin takes"""

    bl_idname = "kirin.solo_take"
    bl_label = "Solo Take"
    bl_options = {"REGISTER", "UNDO"}

    track_name: StringProperty(name="Track")

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        ok = obj is not None and obj.animation_data is not None and len(obj.animation_data.nla_tracks) > 0
        if not ok:
            cls.poll_message_set("The active object has no NLA tracks.")
        return ok

    def execute(self, context):
        try:
            solo_track(context.active_object, self.track_name)
        except scene_io.SceneError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        return {"FINISHED"}


CLASSES = (KIRIN_OT_bake_to_nla, KIRIN_OT_solo_take)
