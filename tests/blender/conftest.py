"""Blender-side fixtures: a factory-fresh scene with the extension enabled like a user does."""

from __future__ import annotations

import pytest

pytest.importorskip("bpy")

from blender_support import bpy, headless  # noqa: E402


@pytest.fixture
def blender():
    """Empty factory scene with Kirin enabled; disabled again afterwards (bpy 4.5 can hang at exit
    while classes are still registered)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    module = headless.enable_extension()
    yield bpy
    headless.disable_extension(module)
