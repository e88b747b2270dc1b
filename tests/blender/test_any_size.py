"""Issue 31's any size, in Blender: Generate Motion on a 256-bone armature (the built biped with five
three-bone fingers a hand, twist bones and a face: benchmarks/big_rig.py) by construction and by the
motion network (which sees its bones that matter and carries the rest), through the add-on's own
backend; the fingers come along with the hands. One bone more is refused and nothing is written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kirin.benchmarks.big_rig import big_creature
from kirin.kirin_addon.core.canonical import canonical_rig
from kirin.kirin_addon.core.rig_reduction import reduce_rig
from kirin.operators.scene_io.mesh import create_skinned_mesh
from kirin.operators.scene_io.rig import create_armature, evaluated_pose, read_rig

from blender_support import activate, bpy, light_backend, reported, scene_state

ROOT = Path(__file__).resolve().parents[2]
FRAMES = 24

pytestmark = pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "python").is_file()
    or not (ROOT / "models" / "weights" / "motion" / "model.json").is_file(),
    reason="needs the checkout's .venv (the backend's environment) and the shipped motion model",
)


@pytest.fixture
def big(blender):
    light_backend()
    creature = big_creature("biped", 1)
    arm = create_armature(creature.rig, "Big Robot")
    create_skinned_mesh(creature.mesh, arm, creature.rig, "Big Robot Body")
    activate(arm)
    return creature, arm


def poses(arm, rig, frames) -> np.ndarray:
    out = []
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        out.append(evaluated_pose(arm, rig))
    return np.stack(out)


@pytest.mark.parametrize("prompt, path", [("a robot walking forward", "constructed"),
                                          ("a robot waves its right hand", "network")])
def test_a_256_bone_armature_generates_with_its_fingers(big, prompt, path):
    creature, arm = big
    rig = read_rig(arm)
    assert rig.joint_count == 256
    run = reported(bpy.ops.kirin.generate_motion, prompt=prompt, frames=FRAMES, variants=1, seed=0)
    assert arm.animation_data.action.name == f"Kirin: {prompt}"
    made = run["variants"][0]
    assert made["frames"] == FRAMES
    assert (made.get("path") == "constructed") == (path == "constructed"), made
    pose = poses(arm, rig, range(1, FRAMES + 1, 4))
    assert np.ptp(pose[:, :, :3, 3], axis=0).max() > 0.02 * rig.body_size  # it moves
    # Every added bone stays on its parent where the rest has it (fingers come along with the hands);
    # construction holds them at rest, and so does the network those it does not see (the face).
    def blender_index(joints) -> np.ndarray:  # Blender keeps the bones in its own order
        return np.array([rig.names.index(creature.rig.names[j]) for j in joints])

    def relative(joints) -> np.ndarray:
        parents = rig.parents[joints]
        posed = np.linalg.inv(pose[:, parents]) @ pose[:, joints]
        return posed - (np.linalg.inv(rig.rest[parents]) @ rig.rest[joints])[None]

    added = blender_index(range(25, 256))
    assert np.abs(relative(added)[..., :3, 3]).max() < 1e-4 * rig.body_size
    seen = reduce_rig(rig, keep=canonical_rig(rig).feet).keep  # what the network saw of the rig
    held = added if path == "constructed" else np.setdiff1d(blender_index(creature.extras["face"]), seen)
    assert held.size >= 150
    assert np.abs(relative(held)).max() < 1e-4


def test_257_bones_are_refused_and_nothing_changes(blender):
    creature = big_creature("biped", 1, total=257)
    rig = creature.rig
    rig.validate = lambda *a, **k: None  # build it anyway: users can have such rigs
    arm = create_armature(rig, "Bigger Robot")
    activate(arm)
    before = scene_state()
    with pytest.raises(RuntimeError, match="257 bones; Kirin handles at most 256"):
        bpy.ops.kirin.generate_motion(prompt="a robot walking forward", frames=FRAMES)
    assert scene_state() == before
