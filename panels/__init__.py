"""The N-panel (View3D > Sidebar > Kirin) and the add-on preferences. Draw code only."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, IntProperty, StringProperty

ADDON_ID = __package__.rpartition(".")[0]  # "bl_ext.<repo>.kirin" when installed as an extension


class KirinPreferences(bpy.types.AddonPreferences):
    bl_idname = ADDON_ID

    backend_python: StringProperty(
        name="Backend Python", subtype="FILE_PATH",
        description="Python executable of Kirin's backend environment (.venv/bin/python of a checkout); "
        "empty: the .venv next to the extension",
    )
    backend_url: StringProperty(
        name="Backend URL", description="URL of an already running backend (e.g. a GPU machine running "
        "`kirin serve --host 0.0.0.0`); empty starts a local one",
    )
    backend_token_file: StringProperty(
        name="Token file", subtype="FILE_PATH",
        description="The running backend's token file (its --token-file), copied to this machine",
    )
    backend_device: EnumProperty(
        name="Device", default="auto", description="Where a local backend runs the model",
        items=[("auto", "Auto", "CUDA when available, else CPU"), ("cpu", "CPU", ""), ("cuda", "CUDA", "")],
    )
    backend_threads: IntProperty(name="CPU threads", default=0, min=0, max=256,
                                 description="Threads a local backend may use (0: its default)")
    backend_folders: StringProperty(
        name="Readable folders", description="More folders a local backend may read videos, keypoints and "
        "masks from, separated by ';'. Always readable: your home, the temporary folder, the .blend file's "
        "folder and the folders of the files a request names",
    )

    def draw(self, context):
        layout = self.layout
        col = layout.column(heading="Local backend")
        col.prop(self, "backend_python")
        row = col.row(align=True)
        row.prop(self, "backend_device")
        row.prop(self, "backend_threads")
        col.prop(self, "backend_folders")
        col = layout.column(heading="Remote backend")
        col.prop(self, "backend_url")
        sub = col.column()
        sub.active = bool(self.backend_url)
        sub.prop(self, "backend_token_file")


class KIRIN_UL_joint_map(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.label(text=item.name, icon="BONE_DATA")
        row.prop(item, "source", text="", emboss=True)


class KIRIN_UL_video_tracks(bpy.types.UIList):
    """Movie Clip tracks and the bone each follows (searched among the active armature's bones)."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.label(text=item.name, icon="TRACKER")
        obj = context.active_object
        arm = obj.find_armature() if obj is not None and obj.type == "MESH" else obj
        if arm is not None and arm.type == "ARMATURE":
            row.prop_search(item, "bone", arm.data, "bones", text="")
        else:
            row.prop(item, "bone", text="")


class _KirinPanel:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Kirin"


class _KirinSection(_KirinPanel):
    """A sub-panel of the Kirin panel: draws from the scene's Kirin settings."""

    bl_parent_id = "KIRIN_PT_main"

    def draw(self, context):
        self.draw_section(self.layout, context.scene.kirin, context)


class KIRIN_PT_main(_KirinPanel, bpy.types.Panel):
    bl_label = "Kirin"

    def draw(self, context):
        obj = context.active_object
        layout = self.layout
        if obj is None or obj.type not in {"ARMATURE", "MESH"}:
            layout.label(text="Select an armature and its mesh", icon="INFO")
        else:
            layout.label(text=obj.name, icon="ARMATURE_DATA" if obj.type == "ARMATURE" else "MESH_DATA")
        if obj is not None and obj.type == "ARMATURE":
            row = layout.row(align=True)
            row.prop(obj.kirin, "up_axis")
            row.prop(obj.kirin, "forward_axis")


class KIRIN_PT_generate(_KirinSection, bpy.types.Panel):
    bl_label = "Generate Motion"

    def draw_section(self, layout, settings, context):
        layout.prop(settings, "prompt", text="")
        layout.prop(settings, "reference_image")
        grid = layout.grid_flow(columns=2, align=True)
        for name in ("frames", "variants", "seed"):
            grid.prop(settings, name)
        grid.prop(context.scene.render, "fps", text="FPS")
        layout.prop(settings, "guidance", slider=True)
        row = layout.row(align=True)
        row.prop(settings, "loop", toggle=True)
        row.prop(settings, "inbetween", toggle=True)
        layout.operator("kirin.generate_motion", icon="PLAY")


class KIRIN_PT_video(_KirinSection, bpy.types.Panel):
    bl_label = "Motion From Video"
    bl_options = {"DEFAULT_CLOSED"}

    def draw_section(self, layout, settings, context):
        layout.prop(settings, "driving_video", text="")
        row = layout.row(align=True)
        row.prop(settings, "video_first")
        row.prop(settings, "video_last")
        row.prop(settings, "video_stride")
        col = layout.column(heading="Evidence")
        col.prop(settings, "video_keypoints")
        col.prop(settings, "video_mediapipe")
        col.prop(settings, "video_silhouettes")
        if settings.video_silhouettes == "MASKS":
            col.prop(settings, "video_masks")
        row = layout.row(align=True)
        row.prop(settings, "video_clip", text="")
        row.operator("kirin.list_video_tracks", text="", icon="FILE_REFRESH")
        if settings.video_clip is not None and len(settings.video_tracks):
            layout.template_list("KIRIN_UL_video_tracks", "", settings, "video_tracks", settings,
                                 "video_tracks_index", rows=3)
        row = layout.row(align=True)
        row.prop(settings, "video_epochs")
        row.prop(settings, "video_idm", toggle=True, text="IDM start")
        layout.prop(settings, "video_gait")
        layout.prop(settings, "video_facing")
        layout.operator("kirin.motion_from_video", icon="FILE_MOVIE")


class KIRIN_PT_motion_file(_KirinSection, bpy.types.Panel):
    bl_label = "Motion From File"

    def draw_section(self, layout, settings, context):
        layout.prop(settings, "motion_file", text="")
        layout.prop(settings, "clip")
        row = layout.row(align=True)
        row.prop(settings, "match_scene_fps")
        row.prop(settings, "align_rest")
        obj = context.active_object
        if obj is not None and obj.type == "ARMATURE":
            row = layout.row(align=True)
            row.operator("kirin.map_joints", icon="LINKED")
            row.operator("kirin.clear_joint_map", text="", icon="X")
            if len(obj.kirin.joint_map):
                layout.template_list("KIRIN_UL_joint_map", "", obj.kirin, "joint_map", obj.kirin,
                                     "joint_map_index", rows=4)
        layout.operator("kirin.apply_motion_file", icon="IMPORT")


class KIRIN_PT_pose_space(_KirinSection, bpy.types.Panel):
    bl_label = "Pose Space"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and (obj.type == "ARMATURE" or (obj.type == "MESH" and obj.find_armature()))

    def draw_section(self, layout, settings, context):
        obj = context.active_object
        in_pose = obj is not None and obj.type == "ARMATURE" and obj.mode == "POSE"
        col = layout.column(align=True)
        if in_pose:
            col.label(text="Drag bones with the Pose Space Drag tool", icon="TOOL_SETTINGS")
            col.label(text="(toolbar); selected bones stay put")
        else:
            col.label(text="Pose Mode: drag bones with the", icon="INFO")
            col.label(text="Pose Space Drag tool")
        layout.prop(settings, "pose_strength", slider=True)
        layout.prop(settings, "pose_keep_ranges")
        layout.operator("kirin.project_pose", icon="CON_KINEMATIC")
        row = layout.row(align=True)
        row.operator("kirin.sample_pose", icon="POSE_HLT")
        row.prop(settings, "pose_seed", text="Seed")
        row = layout.row(align=True)
        row.operator("kirin.walk_between_keys", icon="IPO_BEZIER")
        row.prop(settings, "pose_walk_method", text="")


class KIRIN_PT_binding(_KirinSection, bpy.types.Panel):
    bl_label = "Mesh Binding"
    bl_options = {"DEFAULT_CLOSED"}

    def draw_section(self, layout, settings, context):
        layout.prop(settings, "bind_family")
        layout.prop(settings, "bind_weights")
        layout.operator("kirin.auto_bind", icon="MOD_ARMATURE")
        layout.separator()
        col = layout.column(align=True)
        col.prop(settings, "weight_method", text="")
        col.prop(settings, "max_influences")
        if settings.weight_method == "ROBUST":
            col.prop(settings, "max_distance")
            col.prop(settings, "max_angle")
            col.prop(settings, "smooth_iterations")
        layout.operator("kirin.transfer_weights", icon="MOD_DATA_TRANSFER")
        row = layout.row(align=True)
        row.operator("kirin.show_transfer_mask", text="Inpainted", icon="HIDE_OFF").mask = "INPAINTED"
        row.operator("kirin.show_transfer_mask", text="Rejected").mask = "REJECTED"
        row.operator("kirin.show_transfer_mask", text="Fallback").mask = "FALLBACK"


class KIRIN_PT_nla(_KirinSection, bpy.types.Panel):
    bl_label = "Takes (NLA)"

    def draw_section(self, layout, settings, context):
        obj = context.active_object
        row = layout.row(align=True)
        row.prop(settings, "nla_track", text="")
        row.operator("kirin.bake_to_nla", icon="NLA_PUSHDOWN")
        anim = obj.animation_data if obj is not None else None
        if anim is None:
            return
        for track in anim.nla_tracks:
            row = layout.row(align=True)
            row.prop(track, "mute", text="", icon="HIDE_ON" if track.mute else "HIDE_OFF", emboss=False)
            row.label(text=track.name)
            row.operator("kirin.solo_take", text="", icon="SOLO_ON").track_name = track.name


CLASSES = (KirinPreferences, KIRIN_UL_joint_map, KIRIN_UL_video_tracks, KIRIN_PT_main, KIRIN_PT_generate,
           KIRIN_PT_video, KIRIN_PT_motion_file, KIRIN_PT_pose_space, KIRIN_PT_binding, KIRIN_PT_nla)


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister() -> None:
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
