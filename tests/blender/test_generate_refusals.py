"""Generate Motion refuses what it cannot make soundly, end to end through the panel's operator and a CPU
backend: a rig whose legs cannot be found, asked to walk, gets a message that says so and the scene is
left exactly as it was — no Action, no keys, no NLA track (kirin_addon/generate/guard.py); an artist's
rig whose clip may come out broken gets a sound clip or a clear refusal, never a broken clip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kirin.kirin_addon.core.rig import RigBuilder
from kirin.kirin_addon.eval.broken import ClipShape, classify
from kirin.kirin_addon.library.procedural import capsule_mesh
from kirin.operators.scene_io.mesh import create_skinned_mesh
from kirin.operators.scene_io.rig import create_armature, evaluated_pose, read_rig

from assets_support import asset_files
from blender_support import activate, bpy, headless, light_backend, scene_state

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "python").is_file()
    or not (ROOT / "models" / "weights" / "motion" / "model.json").is_file(),
    reason="needs the checkout's .venv (the backend's environment) and the shipped motion model",
)


@pytest.fixture
def gen(blender):
    """The extension enabled, its preferences set for a light CPU backend."""
    light_backend()


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


def test_the_spider_gets_a_sound_crawl_or_a_clear_refusal_never_a_broken_clip(gen):
    """The luanti spider's crawl is made by the network (the controllers do not walk spiders on artists'
    rigs); where that clip glides on frozen legs the job is refused with the reason and nothing is
    written, and whatever is written is a clip eval/broken.py finds sound."""
    files = asset_files("luanti_spider/*.gltf")
    if not files:
        pytest.skip("../shared/assets is absent")
    arm, _ = headless.import_rig_file(str(files[0]))
    activate(arm)
    rig = read_rig(arm)
    before = scene_state()
    try:
        bpy.ops.kirin.generate_motion(prompt="a spider crawling forward", frames=48, variants=1, seed=0)
    except RuntimeError as exc:
        assert "No clip was written" in str(exc) and "broken" in str(exc)
        assert scene_state() == before
        return
    action = arm.animation_data.action
    assert action.name == "Kirin: a spider crawling forward"
    positions = np.array([evaluated_pose_at(arm, rig, frame) for frame in range(1, 49)])
    found = classify(ClipShape(positions, rig.parents, 30.0, rig.body_size, floor=None))
    assert found == [], found


def evaluated_pose_at(arm, rig, frame: int) -> np.ndarray:
    bpy.context.scene.frame_set(frame)
    return evaluated_pose(arm, rig)[:, :3, 3]
