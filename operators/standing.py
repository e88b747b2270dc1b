"""The pose a rig stands in when its rest pose lies another way up than the scene shows it.

A CMU BVH's zero pose is folded (its feet above its head); its take stands. A glTF whose bind pose lies
on its side (Quaternius' Triceratops) is stood up by its nodes' pose, which the import leaves on the
bones. Motion is then made or retargeted for the rig posed as the scene shows it standing, and brought
back onto the real rest: the same armature-space poses (kirin_addon/generate/reference_pose.py). The
operators that write motion for the selected rig (Generate Motion, Apply Motion From File) stand on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import bpy
import numpy as np

from ..kirin_addon.core.canonical import CanonicalFrame
from ..kirin_addon.core.motion import Motion, forward_kinematics, motion_from_world_transforms
from ..kirin_addon.core.rig import Rig, posed_rig
from ..kirin_addon.core.skinning import SkinnedMesh, linear_blend_skinning, skin_matrices
from ..kirin_addon.core.standing import Stance, choose_standing_pose, sampled_frames
from ..kirin_addon.generate.reference_pose import standing_score
from .common import target_frame
from .scene_io.arrays import object_matrix
from .scene_io.rig import evaluated_pose

# Blender's scene is +Z up: a pose the scene shows standing stands along it.
WORLD_UP = "+Z"


@dataclass
class StandingPose:
    """The rig posed as the scene shows it standing (armature space), used as the rest motion is made for."""

    rig: Rig
    frame: CanonicalFrame  # its canonical frame
    rest_up: str  # the world axis the real rest stands along
    scene_frame: int | None  # the animation's frame it was read at; None: the current pose

    def warning(self, armature: str) -> str:
        shown, where = (("its current pose", "its current pose") if self.scene_frame is None
                        else ("its animation", f"its pose at frame {self.scene_frame}"))
        return (f"The rest pose of '{armature}' lies {self.rest_up} up where {shown} stands "
                f"{self.frame.up_axis} up: the motion was made from {where}.")

    def skin(self, rest: Rig, mesh: SkinnedMesh) -> SkinnedMesh:
        """The skin bound to `rest` (armature space) deformed into this pose: bound to it as its rest."""
        vertices = linear_blend_skinning(mesh.vertices, mesh.joint_indices, mesh.joint_weights,
                                         skin_matrices(rest.rest, self.rig.rest))
        return SkinnedMesh(vertices, mesh.triangles, mesh.joint_indices, mesh.joint_weights)

    def onto_rest(self, rest: Rig, motion: Motion) -> Motion:
        """A motion made for this pose as the motion of `rest` with the same armature-space poses."""
        world = forward_kinematics(self.rig, motion)
        moved = motion_from_world_transforms(rest, world, motion.fps, tolerance=1e-6)
        if moved.translations is not None:  # a connected bone cannot leave its parent: that is rounding
            translations = moved.translations.copy()
            translations[:, rest.connected] = 0.0
            moved = Motion(moved.fps, moved.root_positions, moved.rotations, translations)
        return moved


def standing_pose(arm: bpy.types.Object, rig: Rig, stance: Stance | None = None) -> StandingPose | None:
    """The pose to move from where the rest lies another way up than the scene's +Z: with an action, its
    sampled pose that stands up the scene's +Z, of the tallest the most neutral by `stance` (Generate
    Motion: the feet side by side), else the one with the strongest cues (Apply Motion From File: as it
    reads the file's skeleton, so that a take onto its own skeleton stands on the same pose on both
    sides; kirin_addon/core/standing.py); without one, the current pose where it stands up +Z on legs
    that pair up (a flyer's pose may read so). None where the user set the rig's Up, where the rest
    stands up +Z or as most of the animation does (a moment lying down is not that), or where no pose
    qualifies (a death clip lies on its side: not the pose to walk from). The scene's frame is put
    back."""
    if arm.kirin.up_axis != "AUTO":
        return None
    rest_up = target_frame(arm, rig).up_axis
    if rest_up == WORLD_UP:
        return None
    anim = arm.animation_data
    if anim is None or anim.action is None:
        poses, frames = [evaluated_pose(arm, rig)], [None]
    else:
        frames = sampled_frames(*(int(round(v)) for v in anim.action.frame_range))
        poses = _poses_at(arm, rig, frames)
    choice = choose_standing_pose(rig, np.array(poses), object_matrix(arm), up=WORLD_UP, stance=stance)
    if choice.sample is None:
        return None
    posed = posed_rig(rig, poses[choice.sample])
    frame = target_frame(arm, posed)
    if frame.up_axis != WORLD_UP:
        return None
    if frames[choice.sample] is None and standing_score(posed.transformed(frame.matrix())) is None:
        return None  # a pose alone, not an animation standing: on legs that pair up only
    return StandingPose(posed, frame, rest_up, frames[choice.sample])


def _poses_at(arm: bpy.types.Object, rig: Rig, frames: list[int]) -> list[np.ndarray]:
    """The evaluated pose (J,4,4) at each scene frame; the scene's frame is put back."""
    scene = bpy.context.scene
    current = scene.frame_current
    poses = []
    try:
        for number in frames:
            scene.frame_set(number)
            poses.append(evaluated_pose(arm, rig))
    finally:
        scene.frame_set(current)
    return poses
