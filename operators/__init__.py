"""Thin operators: read the scene, call the engine, write the result (through scene_io/)."""

from __future__ import annotations

import bpy

from . import bind, generate, nla, pose, pose_drag, properties, retarget, video

CLASSES = (*retarget.CLASSES, *nla.CLASSES, *generate.CLASSES, *bind.CLASSES, *pose.CLASSES, *video.CLASSES)


def register() -> None:
    properties.register()
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    pose_drag.register_tool()


def unregister() -> None:
    from ..kirin_addon.backend.process import stop_backend

    stop_backend()  # the backend this Blender started ends with the add-on (and with Blender: atexit)
    pose_drag.unregister_tool()
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
    properties.unregister()
