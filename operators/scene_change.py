"""One operator's writes to the scene, all or nothing.

An operator that changes the scene builds what it can first, then writes inside a `SceneChange`:

    with SceneChange(context.scene) as change:
        change.keep_animation(arm)
        change.keep_pose(arm)
        ...write...

Each `keep_*` records how to put one part of the scene back; if anything inside the block raises, the
change is taken back in reverse order and every datablock made inside it (actions, objects, armatures,
meshes) is removed, so the scene is as it was and the error goes on to the operator, which reports it
and returns CANCELLED (no undo step: there is nothing to undo). On success nothing is touched and the
operator's FINISHED pushes exactly one undo step. The scene's frame range and current frame are always
kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import bpy

from ..kirin_addon.backend.results import BackendError
from . import scene_io
from .scene_io.action import action_channelbag
from .scene_io.mesh import read_vertex_groups, write_vertex_groups
from .scene_io.pose import read_pose_channels, write_pose_channels

log = logging.getLogger("kirin")

# The datablocks an operator may create, and how each is removed.
_CREATED = ("actions", "objects", "armatures", "meshes")


class SceneChange:
    """An undo log of one operator's writes (see the module docstring)."""

    def __init__(self, scene: bpy.types.Scene):
        self._undo: list[Callable[[], None]] = []
        self._before = {kind: {block.as_pointer() for block in getattr(bpy.data, kind)} for kind in _CREATED}
        start, end, current = scene.frame_start, scene.frame_end, scene.frame_current
        self.on_undo(lambda: _set_frames(scene, start, end, current))

    def __enter__(self) -> SceneChange:
        return self

    def __exit__(self, kind, error, trace) -> bool:
        if error is not None:
            self.take_back()
        return False

    def on_undo(self, undo: Callable[[], None]) -> None:
        self._undo.append(undo)

    # ------------------------------------------------------------------ what can be kept
    def keep_animation(self, obj: bpy.types.Object) -> None:
        """The object's active action and slot, its NLA tracks' mute flags (new tracks are removed), and
        the fake-user flag of every action (a new active action gives the old one a fake user)."""
        anim = obj.animation_data
        had = anim is not None
        action = anim.action if had else None
        slot = getattr(anim, "action_slot", None) if had else None
        tracks = [(track.as_pointer(), track.mute) for track in anim.nla_tracks] if had else []
        fake = {a.as_pointer(): a.use_fake_user for a in bpy.data.actions}
        self.on_undo(lambda: _restore_animation(obj, had, action, slot, tracks, fake))

    def keep_pose(self, obj: bpy.types.Object) -> None:
        """Every pose bone's transform channels, bit for bit."""
        channels = read_pose_channels(obj)
        self.on_undo(lambda: write_pose_channels(obj, channels))

    def keep_vertex_groups(self, obj: bpy.types.Object) -> None:
        """The mesh's vertex groups: names, order, weights and the active one."""
        if not len(obj.vertex_groups):
            self.on_undo(lambda: obj.vertex_groups.clear())
            return
        names, indices, weights = read_vertex_groups(obj)
        locks = [group.lock_weight for group in obj.vertex_groups]
        active = obj.vertex_groups.active_index
        self.on_undo(lambda: _restore_vertex_groups(obj, names, indices, weights, locks, active))

    def keep_modifiers(self, obj: bpy.types.Object) -> None:
        """The object's modifiers: new ones are removed."""
        before = {modifier.name for modifier in obj.modifiers}
        self.on_undo(lambda: [obj.modifiers.remove(m) for m in list(obj.modifiers) if m.name not in before])

    def keep_parent(self, obj: bpy.types.Object) -> None:
        """The object's parent and where it is."""
        parent, inverse, world = obj.parent, obj.matrix_parent_inverse.copy(), obj.matrix_world.copy()

        def restore() -> None:
            obj.parent = parent
            obj.matrix_parent_inverse = inverse
            obj.matrix_world = world

        self.on_undo(restore)

    def keep_keys(self, obj: bpy.types.Object, frame: float) -> None:
        """The active action's keys at `frame` (new keys there and new F-curves are removed, changed
        ones put back); no action yet: the one keying makes is removed with the other new datablocks."""
        anim = obj.animation_data
        bag = action_channelbag(anim.action, obj) if anim is not None else None
        if bag is None:
            return
        keys = {curve.as_pointer(): _key_at(curve, frame) for curve in bag.fcurves}
        self.on_undo(lambda: _restore_keys(bag, frame, keys))

    # ------------------------------------------------------------------ taking it back
    def take_back(self) -> None:
        """Undo every recorded write (newest first), then remove the datablocks made since the start."""
        for undo in reversed(self._undo):
            try:
                undo()
            except Exception:  # noqa: BLE001 — one part that cannot be put back must not stop the others
                log.exception("Kirin could not put one part of the scene back")
        self._undo.clear()
        for kind in _CREATED:
            blocks = getattr(bpy.data, kind)
            for block in [b for b in blocks if b.as_pointer() not in self._before[kind]]:
                blocks.remove(block)


def _set_frames(scene: bpy.types.Scene, start: int, end: int, current: int) -> None:
    scene.frame_start, scene.frame_end = start, end
    if scene.frame_current != current:
        scene.frame_set(current)


def _restore_animation(obj, had: bool, action, slot, tracks: list[tuple[int, bool]], fake: dict) -> None:
    anim = obj.animation_data
    if not had:
        if anim is not None:
            obj.animation_data_clear()
        return
    if anim is None:
        anim = obj.animation_data_create()
    mute = dict(tracks)
    for track in list(anim.nla_tracks):
        if track.as_pointer() not in mute:
            anim.nla_tracks.remove(track)
        else:
            track.mute = mute[track.as_pointer()]
    anim.action = action
    if action is not None and slot is not None and hasattr(anim, "action_slot"):
        anim.action_slot = slot
    for block in bpy.data.actions:
        if block.as_pointer() in fake:
            block.use_fake_user = fake[block.as_pointer()]


_KEY_FIELDS = ("co", "handle_left", "handle_right")


def _key_at(curve, frame: float) -> tuple | None:
    """(index, co, handles, interpolation) of the curve's key at `frame`, None when it has none."""
    for index, point in enumerate(curve.keyframe_points):
        if abs(point.co[0] - frame) < 1e-4:
            return index, *(tuple(getattr(point, name)) for name in _KEY_FIELDS), point.interpolation
    return None


def _restore_keys(bag, frame: float, keys: dict[int, tuple | None]) -> None:
    for curve in list(bag.fcurves):
        if curve.as_pointer() not in keys:
            bag.fcurves.remove(curve)
            continue
        before, now = keys[curve.as_pointer()], _key_at(curve, frame)
        if now is not None and before is None:
            curve.keyframe_points.remove(curve.keyframe_points[now[0]])
        elif now is not None:
            point = curve.keyframe_points[now[0]]
            for name, value in zip(_KEY_FIELDS, before[1:4], strict=True):
                setattr(point, name, value)
            point.interpolation = before[4]
        curve.update()


def _restore_vertex_groups(obj, names: list[str], indices, weights, locks: list[bool], active: int) -> None:
    obj.vertex_groups.clear()
    write_vertex_groups(obj, names, indices, weights)
    for group, lock in zip(obj.vertex_groups, locks, strict=True):
        group.lock_weight = lock
    obj.vertex_groups.active_index = active


def show_frames(scene, start: int, frames: int) -> None:
    """Make the scene's frame range hold `frames` frames from `start`: it grows, never shrinks."""
    scene.frame_end = max(scene.frame_end, start + frames - 1)


def write_failure(error: Exception) -> str:
    """What the user reads when an operation failed (the scene was put back as it was): the message of
    an error meant for users (bad input, the backend's answer), else what broke."""
    if isinstance(error, (scene_io.SceneError, ValueError, BackendError)):
        return str(error)
    return f"Writing the result failed ({type(error).__name__}: {error}); the scene is unchanged."
