"""Generate Motion refuses what it cannot make soundly, end to end through the panel's operator and a CPU
backend: a rig whose legs cannot be found, asked to walk, gets a message that says so and the scene is
left exactly as it was — no Action, no keys, no NLA track (kirin_addon/generate/guard.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kirin.kirin_addon.core.rig import RigBuilder
from kirin.kirin_addon.library.procedural import capsule_mesh
from kirin.operators.scene_io.mesh import create_skinned_mesh
from kirin.operators.scene_io.rig import create_armature

from blender_support import activate, bpy, headless, scene_state

ROOT = Path(__file__).resolve().parents[2]
MODULE = f"bl_ext.{headless.REPO_NAME}.kirin"

pytestmark = pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "python").is_file()
    or not (ROOT / "models" / "weights" / "motion" / "model.json").is_file(),
    reason="needs the checkout's .venv (the backend's environment) and the shipped motion model",
)


@pytest.fixture
def gen(blender):
    """The extension enabled, its preferences set for a light CPU backend."""
    prefs = bpy.context.preferences.addons[MODULE].preferences
    prefs.backend_device = "cpu"
    prefs.backend_threads = 1
    bpy.context.scene.render.fps = 30


def blob():
    """A legless creature: a post of three bones standing on the floor inside a fat skinned body."""
    b = RigBuilder()
    b.add("Root", None, (0, 0, 0), (0, 0, 0.5))
    b.add("Body", "Root", (0, 0, 0.5), (0, 0, 1.2))
    b.add("Head", "Body", (0, 0, 1.2), (0, -0.2, 1.6))
    rig = b.build()
    arm = create_armature(rig, "Blob")
    create_skinned_mesh(capsule_mesh(rig, radius_scale=0.25), arm, rig, "Blob body")
    return arm


def test_a_rig_without_legs_asked_to_walk_gets_a_clear_message_and_nothing_is_written(gen):
    arm = blob()
    activate(arm)
    before = scene_state()
    actions = {a.name for a in bpy.data.actions}
    with pytest.raises(RuntimeError, match="found no legs") as refused:
        bpy.ops.kirin.generate_motion(prompt="a blob walking forward", frames=24, variants=1, seed=0)
    assert "'a blob walking forward'" in str(refused.value) and "A walk needs legs" in str(refused.value)
    assert scene_state() == before
    assert {a.name for a in bpy.data.actions} == actions  # no Action made, none keyed
    assert arm.animation_data is None or (arm.animation_data.action is None
                                          and len(arm.animation_data.nla_tracks) == 0)
