"""Thin operators: read the scene, call the engine, write the result (through scene_io)."""

from __future__ import annotations

import bpy

from . import binding, generate, motion_file, nla, pose_space, properties, video

CLASSES = (*motion_file.CLASSES, *nla.CLASSES, *generate.CLASSES, *binding.CLASSES, *pose_space.CLASSES,
           *video.CLASSES)


def register() -> None:
    properties.register()
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    pose_space.register_tool()


def unregister() -> None:
    from ..kirin_addon.backend.client import stop_backend

    stop_backend()  # the backend this Blender started ends with the add-on (and with Blender: atexit)
    pose_space.unregister_tool()
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
    properties.unregister()
