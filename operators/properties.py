"""Kirin's scene and object properties (what the N-panel edits)."""

from __future__ import annotations

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from ..kirin_addon.core.creature import FAMILIES

FAMILY_ITEMS = [("AUTO", "Detect", "Fit every template family and keep the best")] + [
    (f.upper(), f.title(), f"The {f} template") for f in FAMILIES
]
WEIGHT_METHODS = [
    ("ROBUST", "Robust (inpainting)", "Closest surface point within distance and normal thresholds; the "
     "rest inpainted by a Laplacian solve (Abdrashitov et al. 2023)"),
    ("NEAREST", "Nearest vertices", "Each vertex takes the weights of the 10 nearest source vertices by "
     "normalised inverse-squared distance (Kirin)"),
]
BIND_WEIGHT_ITEMS = [
    ("BLEND", "Heat + template", "Bone heat on this mesh from the fitted skeleton, pulled towards the "
     "template's transferred weights (lowest error on benchmarks/bench_autobind.py)"),
    ("HEAT", "Bone heat", "Heat diffusion from the fitted bones on this mesh (Baran & Popović 2007)"),
    ("TRANSFER", "Template transfer", "The fitted template's weights transferred by the method below"),
    ("LEARNED", "Learned", "Bone heat, the template's weights and their blend, re-weighed by a small network "
     "trained on artists' skinned characters (models/weights/bind/MODEL_CARD.md)"),
]
SMOOTH_DEFAULT = 0  # the engine's TransferConfig default
AXES = [("AUTO", "Auto", "Detect from the rig")] + [
    (f"{sign}{axis}", f"{sign}{axis}", "") for axis in "XYZ" for sign in "+-"
]


class KirinJointMapItem(bpy.types.PropertyGroup):
    """One line of a joint map: this armature's bone (name) follows a source joint."""

    source: StringProperty(name="Source joint", description="Joint of the motion file this bone follows; "
                           "empty keeps the bone at rest")


class KirinTrackBone(bpy.types.PropertyGroup):
    """One Movie Clip track (name) and the bone it follows in Extract Motion From Video."""

    bone: StringProperty(name="Bone", description="The bone whose head this track follows; empty: unused")


SILHOUETTE_ITEMS = [
    ("BACKGROUND", "Background", "Subtract the background: the moving creature is the silhouette (a fixed "
     "or slowly moving camera)"),
    ("STILLS", "Each frame alone", "Segment every frame on its own, its border as the background: a "
     "subject that never leaves its place in view, a film of photographs"),
    ("MASKS", "Mask folder", "A folder of mask images, one per video frame (white: the creature)"),
    ("NONE", "None", "Fit to keypoints and tracks only"),
]
FACING_ITEMS = [
    ("AUTO", "Auto", "Let the fit decide (a silhouette alone cannot tell the creature's front from its "
     "back)"),
    ("RIGHT", "Right", "The head points to the video's right at its first frame"),
    ("LEFT", "Left", "The head points to the video's left at its first frame"),
    ("TOWARD", "Toward the camera", "The creature comes toward the camera at the video's first frame"),
    ("AWAY", "Away from the camera", "The creature goes away from the camera at the video's first frame"),
]
WALK_METHODS = [
    ("GUIDED", "Guided", "Per-joint slerp of the keys, corrected by the pose prior (keys exact)"),
    ("LATENT", "Latent", "ViPS' walk: the keys DDIM-inverted into the prior's noise, slerped there and "
     "decoded"),
]


class KirinArmatureSettings(bpy.types.PropertyGroup):
    joint_map: CollectionProperty(type=KirinJointMapItem)
    joint_map_index: IntProperty()
    joint_map_source: StringProperty(
        name="Mapped from", description="The motion file the joint map was made for", subtype="FILE_PATH"
    )
    up_axis: EnumProperty(name="Up", items=AXES, default="AUTO", description="The rig's up axis")
    forward_axis: EnumProperty(name="Forward", items=AXES, default="AUTO",
                               description="The direction the creature faces")


class KirinSceneSettings(bpy.types.PropertyGroup):
    prompt: StringProperty(name="Prompt", description="What the creature should do",
                           default="a wolf trotting forward, then sitting down")
    reference_image: StringProperty(name="Reference image", subtype="FILE_PATH")
    driving_video: StringProperty(name="Driving video", subtype="FILE_PATH",
                                  description="Video of a creature moving (empty: the Movie Clip's file)")
    video_first: IntProperty(name="First", default=1, min=1,
                             description="First video frame used (1: the first)")
    video_last: IntProperty(name="Last", default=0, min=0,
                            description="Last video frame used (0: to the end)")
    video_stride: IntProperty(name="Stride", default=1, min=1, max=1000, description="Use every n-th frame")
    video_keypoints: StringProperty(name="Keypoints", subtype="FILE_PATH",
                                    description="Optional JSON/CSV file of 2D keypoints (frame, joint, x, y, "
                                    "confidence) from any detector; joints named like the bones")
    video_silhouettes: EnumProperty(name="Silhouettes", items=SILHOUETTE_ITEMS, default="BACKGROUND")
    video_masks: StringProperty(name="Masks", subtype="DIR_PATH", description="Folder of mask images")
    video_clip: PointerProperty(name="Movie Clip", type=bpy.types.MovieClip,
                                description="A Movie Clip of the video whose tracks follow bones")
    video_tracks: CollectionProperty(type=KirinTrackBone)
    video_tracks_index: IntProperty()
    video_epochs: IntProperty(name="Epochs", default=20, min=1, max=1000,
                              description="Passes of the sequence fit (more: slower, closer)")
    video_idm: BoolProperty(name="Inverse-dynamics start", default=False,
                            description="Start the fit from the rig's inverse-dynamics model, when the "
                            "backend has one")
    video_gait: StringProperty(name="Gait", default="auto",
                               description="The gait the fit starts from, at the stride the silhouettes "
                               "show: auto (the rig's nearest), none, or words naming one (\"gallop\")")
    video_facing: EnumProperty(name="Facing", items=FACING_ITEMS, default="AUTO",
                               description="Where the creature's head points in the video's first frame")
    video_mediapipe: BoolProperty(name="MediaPipe Pose", default=False,
                                  description="Humanoid rigs: find the person's joints in the video with "
                                  "MediaPipe Pose (in the backend's own MediaPipe environment)")
    frames: IntProperty(name="Frames", default=120, min=8, max=2000)
    fps: IntProperty(name="FPS", default=30, min=1, max=240)
    seed: IntProperty(name="Seed", default=0, min=0)
    variants: IntProperty(name="Variants", default=1, min=1, max=8)
    guidance: FloatProperty(name="Guidance", default=2.5, min=0.0, max=10.0,
                            description="How closely the motion follows the prompt (0: the model's default)")
    loop: BoolProperty(name="Loop", default=False,
                       description="Make the motion loop (the last frame meets the first)")
    inbetween: BoolProperty(name="In-between keys", default=False,
                            description="Keep the active action's keyframes in the frame range and fill in "
                            "the frames between them")

    motion_file: StringProperty(name="Motion file", subtype="FILE_PATH",
                                description="BVH, glTF/GLB or Kirin .npz clip to apply")
    clip: StringProperty(name="Clip", description="Animation name inside a glTF file (empty: the first)")
    match_scene_fps: BoolProperty(name="Match scene FPS", default=True,
                                  description="Resample the motion to the scene frame rate")
    align_rest: BoolProperty(name="Align rest poses", default=True,
                             description="Turn bones onto the source's rest directions (T-pose onto A-pose)")
    bind_family: EnumProperty(name="Template", items=FAMILY_ITEMS, default="AUTO",
                              description="Template skeleton family for Auto-Bind")
    bind_weights: EnumProperty(name="Weights", items=BIND_WEIGHT_ITEMS, default="BLEND",
                               description="How Auto-Bind skins the mesh")
    weight_method: EnumProperty(name="Method", items=WEIGHT_METHODS, default="ROBUST",
                                description="How skin weights are transferred")
    max_influences: IntProperty(name="Max influences", default=4, min=0, max=64,
                                description="Bones per vertex kept (0: all)")
    max_distance: FloatProperty(name="Max distance", default=0.05, min=0.0001, max=1.0,
                                description="Farthest a vertex may be from the source surface to take its "
                                "weights, as a share of the mesh's bounding-box diagonal (robust)")
    max_angle: FloatProperty(name="Max angle", default=30.0, min=0.0, max=180.0,
                             description="Largest angle between the vertex normal and the source surface's "
                             "(degrees, robust)")
    smooth_iterations: IntProperty(name="Smoothing", default=SMOOTH_DEFAULT, min=0, max=100,
                                   description="Smoothing passes over inpainted weights (robust)")
    nla_track: StringProperty(name="Track", default="Kirin", description="Name of the NLA track to bake into")
    pose_strength: FloatProperty(name="Strength", default=0.0, min=0.0, max=1.0,
                                 description="How far the pose prior may move a dragged or projected pose "
                                 "from your edit towards a plausible one (0: the model's default)")
    pose_keep_ranges: BoolProperty(name="Keep to the rig's ranges", default=True,
                                   description="Dragged and projected poses keep every joint within the "
                                   "angles the armature's own actions reach (when it has any)")
    pose_seed: IntProperty(name="Seed", default=0, min=0, description="Which pose Sample Pose draws")
    pose_walk_method: EnumProperty(name="Walk", items=WALK_METHODS, default="GUIDED",
                                   description="How Walk Between Keys goes through the pose space")


CLASSES = (KirinJointMapItem, KirinTrackBone, KirinArmatureSettings, KirinSceneSettings)


def register() -> None:
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Scene.kirin = PointerProperty(type=KirinSceneSettings)
    bpy.types.Object.kirin = PointerProperty(type=KirinArmatureSettings)


def unregister() -> None:
    del bpy.types.Object.kirin
    del bpy.types.Scene.kirin
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
