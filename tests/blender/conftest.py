"""Blender-side fixtures: a factory-fresh scene with the extension enabled like a user does."""

from __future__ import annotations

import os
import tempfile

import pytest

# Keep Blender from writing into the home folder (must be set before bpy is imported).
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="kirin-blender-user-"))

bpy = pytest.importorskip("bpy")

from kirin.operators import headless, scene_io  # noqa: E402


@pytest.fixture
def blender():
    """Empty factory scene with Kirin enabled; disabled again afterwards (bpy 4.5 can hang at exit
    while classes are still registered)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    module = headless.enable_extension()
    yield bpy
    headless.disable_extension(module)


def activate(obj) -> None:
    headless.activate(obj)


def scene_state() -> dict:
    """A fingerprint of what the user's scene holds, to prove bad input changed nothing."""
    objects = {}
    for obj in bpy.data.objects:
        anim = obj.animation_data
        objects[obj.name] = (
            anim.action.name if anim and anim.action else None,
            len(anim.nla_tracks) if anim else 0,
        )
    return {
        "actions": sorted(a.name for a in bpy.data.actions),
        "objects": objects,
        "frame_end": bpy.context.scene.frame_end,
    }


__all__ = ["activate", "blender", "bpy", "scene_io", "scene_state"]
