"""Helpers for Blender-side tests (bpy from PyPI, headless)."""

from __future__ import annotations

import os
import tempfile

import numpy as np

# Keep Blender from writing into the home folder (must be set before bpy is imported).
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="kirin-blender-user-"))

import bpy  # noqa: E402

from kirin.kirin_addon.core import rotations as rot  # noqa: E402
from kirin.kirin_addon.core.motion import Motion, motion_from_world_deltas  # noqa: E402
from kirin.operators import scene_io  # noqa: E402
from kirin.operators.headless import common as headless

activate = headless.activate


def scene_state() -> dict:
    """A fingerprint of what the user's scene holds, to prove bad input changed nothing."""
    objects = {}
    for obj in bpy.data.objects:
        anim = obj.animation_data
        objects[obj.name] = (
            anim.action.name if anim and anim.action else None,
            len(anim.nla_tracks) if anim else 0,
            tuple(round(v, 6) for v in obj.matrix_world.col[3]),
            obj.parent.name if obj.parent else None,
            tuple((m.type, getattr(getattr(m, "object", None), "name", None)) for m in obj.modifiers),
            tuple(g.name for g in getattr(obj, "vertex_groups", ())),
        )
    return {
        "actions": sorted(a.name for a in bpy.data.actions),
        "objects": objects,
        "frame_end": bpy.context.scene.frame_end,
    }


def random_world_motion(rig, frames: int, seed: int, amount: float = 0.9) -> Motion:
    """Random world-space rotations per joint and a random root path (a rig-independent motion)."""
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=(frames, rig.joint_count, 3))
    angle = rng.uniform(-amount, amount, size=(frames, rig.joint_count))
    deltas = rot.quat_from_axis_angle(axis, angle)
    root = rig.heads[rig.main_root] + rng.normal(scale=0.3 * rig.body_size, size=(frames, 3))
    return motion_from_world_deltas(rig, deltas, root, 30.0)


__all__ = ["activate", "bpy", "headless", "random_world_motion", "scene_io", "scene_state"]
