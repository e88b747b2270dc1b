"""Helpers for Blender-side tests (bpy from PyPI, headless)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from kirin.kirin_addon.io.scratch import private_blender_resources

# Keep Blender from writing into the home folder (must be set before bpy is imported).
private_blender_resources("kirin-blender-user-")

import bpy  # noqa: E402

from kirin.kirin_addon.core import rotations as rot  # noqa: E402
from kirin.kirin_addon.core.motion import Motion, motion_from_world_deltas  # noqa: E402
from kirin.operators import scene_io  # noqa: E402
from kirin.operators.headless import common as headless  # noqa: E402
from kirin.operators.scene_io.mesh import read_vertex_groups  # noqa: E402
from kirin.operators.scene_io.pose import read_pose_channels  # noqa: E402

activate = headless.activate


def light_backend(fps: int = 30) -> None:
    """The enabled extension's preferences set for a light CPU backend (one thread), the scene at `fps`."""
    prefs = bpy.context.preferences.addons[f"bl_ext.{headless.REPO_NAME}.kirin"].preferences
    prefs.backend_device, prefs.backend_threads = "cpu", 1
    bpy.context.scene.render.fps = fps


def reported(operator, *args, **options) -> dict:
    """Run a backend operator (`bpy.ops.kirin.…`, `args` as bpy.ops takes them) to its end; the report of
    what it made, which it writes to the file it is given (operators/backend_task.py)."""
    with tempfile.TemporaryDirectory(prefix="kirin-report-") as folder:
        path = Path(folder) / "report.json"
        assert operator(*args, report_file=str(path), **options) == {"FINISHED"}
        return json.loads(path.read_text())


def scene_state() -> dict:
    """A fingerprint of what the user's scene holds, to prove that bad input or a failed write changed
    nothing: every datablock an operator may make, each object's animation (active action and slot, NLA
    tracks, their mute flags and strips), pose channels, parent, place, modifiers and vertex groups with
    their weights, every action's keys and fake-user flag, and the scene's frame range."""
    scene = bpy.context.scene
    scene.frame_set(scene.frame_current)  # the pose as the animation puts it, not a stale one
    objects = {name: _object_state(obj) for name, obj in bpy.data.objects.items()}
    return {
        "actions": {a.name: (a.use_fake_user, _keys(a)) for a in bpy.data.actions},
        "blocks": {kind: sorted(getattr(bpy.data, kind).keys()) for kind in ("armatures", "meshes")},
        "objects": objects,
        "frames": (scene.frame_start, scene.frame_end, scene.frame_current),
        "frame_end": scene.frame_end,
    }


def _object_state(obj) -> tuple:
    anim = obj.animation_data
    tracks = ()
    if anim is not None:
        tracks = tuple((t.name, t.mute, tuple((s.name, s.action.name if s.action else None, s.frame_start,
                                               s.frame_end) for s in t.strips)) for t in anim.nla_tracks)
    slot = getattr(anim, "action_slot", None) if anim else None
    pose = None
    if obj.type == "ARMATURE" and obj.pose is not None:
        pose = tuple(np.round(v, 7).tobytes() for v in read_pose_channels(obj).values())
    groups = ()
    if obj.type == "MESH":
        names, indices, weights = read_vertex_groups(obj)
        groups = (tuple(names), indices.tobytes(), np.round(weights, 7).tobytes(),
                  tuple(g.lock_weight for g in obj.vertex_groups), obj.vertex_groups.active_index)
    return (
        anim is not None,
        anim.action.name if anim and anim.action else None,
        slot.identifier if slot is not None else None,
        tracks,
        tuple(round(v, 6) for row in obj.matrix_world for v in row),
        obj.parent.name if obj.parent else None,
        tuple((m.name, m.type, getattr(getattr(m, "object", None), "name", None)) for m in obj.modifiers),
        groups,
        pose,
    )


def _keys(action) -> bytes:
    """Every key of every F-curve of an action (paths, indices, points), as bytes."""
    curves = []
    for layer in action.layers:
        for strip in layer.strips:
            for bag in strip.channelbags:
                curves.extend(bag.fcurves)
    parts = []
    for curve in sorted(curves, key=lambda c: (c.data_path, c.array_index)):
        points = np.zeros(2 * len(curve.keyframe_points), dtype=np.float32)
        curve.keyframe_points.foreach_get("co", points)
        parts.append(f"{curve.data_path}[{curve.array_index}]".encode() + points.tobytes())
    return b"|".join(parts)


def random_world_motion(rig, frames: int, seed: int, amount: float = 0.9) -> Motion:
    """Random world-space rotations per joint and a random root path (a rig-independent motion)."""
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=(frames, rig.joint_count, 3))
    angle = rng.uniform(-amount, amount, size=(frames, rig.joint_count))
    deltas = rot.quat_from_axis_angle(axis, angle)
    root = rig.heads[rig.main_root] + rng.normal(scale=0.3 * rig.body_size, size=(frames, 3))
    return motion_from_world_deltas(rig, deltas, root, 30.0)


__all__ = ["activate", "bpy", "headless", "random_world_motion", "reported", "scene_io", "scene_state"]
