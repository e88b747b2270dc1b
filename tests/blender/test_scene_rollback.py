"""A write that fails part-way changes nothing (issue 18): every operator that writes a result writes it
inside a `SceneChange`, and a failure at any step puts the scene back as it was, byte for byte — the
actions, NLA tracks, pose, vertex groups, modifiers, parent and frame range (`scene_state`)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kirin.kirin_addon.backend.results import BindResult, ExtractResult, TransferResult, WeightSet
from kirin.kirin_addon.core.camera import PinholeCamera
from kirin.kirin_addon.core.motion import Motion
from kirin.kirin_addon.library.procedural import build_biped, capsule_mesh
from kirin.operators import bind, generate, nla, pose, scene_change, video
from kirin.operators.scene_change import SceneChange
from kirin.operators.scene_io.action import keyed_locations, read_action, write_action
from kirin.operators.scene_io.rig import read_rig

from blender_support import activate, bpy, headless, random_world_motion, scene_io, scene_state


class Broke(RuntimeError):
    """The failure a test injects."""


def fail_on_call(monkeypatch, module, name: str, call: int) -> None:
    """`module.name` works until its `call`-th call, which does the work and then raises."""
    real, calls = getattr(module, name), []

    def wrapped(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(1)
        if len(calls) == call:
            raise Broke(f"{name} broke")
        return out

    monkeypatch.setattr(module, name, wrapped)


@pytest.fixture
def scene(blender):
    """The built-in creature with a user's pose and animation: a location on an unkeyed bone, an active
    action, an NLA take, frames 1–250."""
    arm, meshes = headless.builtin_creature(0)
    activate(arm)
    rig = read_rig(arm)
    write_action(arm, rig, random_world_motion(rig, 12, seed=1), "user take")
    nla.push_action_to_track(arm, "Kirin user take")
    write_action(arm, rig, random_world_motion(rig, 12, seed=2), "user walk")
    free = next(b for b in arm.data.bones if not b.use_connect and b.parent is not None)
    arm.pose.bones[free.name].location = (0.05, 0.0, 0.0)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 250
    return SimpleNamespace(arm=arm, rig=rig, mesh=meshes[0], free=free.name)


def generation_task(scene, variants: int, frames: int = 10):
    request = SimpleNamespace(armature=scene.arm.name, rig=scene.rig, frame_start=1, warnings=[],
                              generation=SimpleNamespace(prompt="a dog walking", image=None, frames=frames,
                                                         variants=variants, loop=False),
                              armature_to_write=lambda during: (scene.arm, scene.rig))
    motions = [random_world_motion(scene.rig, frames, seed=10 + k) for k in range(variants)]
    task = SimpleNamespace(request=request, motions=lambda result: motions)
    result = SimpleNamespace(variants=[SimpleNamespace(seed=k) for k in range(variants)])
    return task, result


def test_a_generate_that_fails_part_way_leaves_the_scene_as_it_was(scene, monkeypatch) -> None:
    """Three variants: the two takes are pushed into NLA tracks (the user's take muted), then the first
    variant's write breaks. Before, "#2" and "#3" stayed in new tracks and the user's take stayed muted."""
    task, result = generation_task(scene, variants=3)
    before = scene_state()
    fail_on_call(monkeypatch, generate, "write_action", 3)
    with pytest.raises(Broke):
        generate.write_results(bpy.context, task, result)
    assert scene_state() == before


def test_a_generate_that_works_keeps_the_users_pose_and_frame_range(scene) -> None:
    """The unkeyed location on a free bone stays (it was reset to 0), and the scene's 250 frames stay
    (they shrank to the clip's 10)."""
    task, result = generation_task(scene, variants=2)
    actions = generate.write_results(bpy.context, task, result)
    assert [a.name for a in actions] == ["Kirin: a dog walking", "Kirin: a dog walking #2"]
    assert tuple(scene.arm.pose.bones[scene.free].location) == pytest.approx((0.05, 0.0, 0.0))
    assert bpy.context.scene.frame_end == 250


def test_a_motion_that_cannot_be_keyed_is_refused_before_anything_is_written(scene) -> None:
    """A variant that moves a connected bone is found before the first action is made."""
    task, result = generation_task(scene, variants=2)
    motions = task.motions(result)
    connected = int(np.flatnonzero(scene.rig.connected)[0])
    moved = np.zeros(motions[1].rotations.shape[:2] + (3,))
    moved[:, connected] = 0.01
    motions[1] = Motion(motions[1].fps, motions[1].root_positions, motions[1].rotations, moved)
    before = scene_state()
    with pytest.raises(scene_io.SceneError, match="connected"):
        generate.write_results(bpy.context, task, result)
    assert scene_state() == before


def test_keys_on_a_connected_bones_location_are_read_as_blender_plays_them(scene) -> None:
    """Blender ignores the location of a connected bone: an action keying one reads as if it did not (the
    issue's in-betweening on such keys answered "moves connected bones" and left an empty action)."""
    rig, arm = scene.rig, scene.arm
    connected = next(b.name for b in arm.data.bones if b.use_connect)
    action = arm.animation_data.action
    for frame in (1, 8):
        arm.pose.bones[connected].location = (0.02 * frame, 0.0, 0.0)
        arm.pose.bones[connected].keyframe_insert("location", frame=frame)
    keep = read_action(arm, rig, action)
    assert keep.translations is None or not np.any(keep.translations[:, rig.names.index(connected)])
    keyed_locations(rig, keep)  # writable as it is


def test_a_video_result_that_fails_part_way_leaves_the_scene_as_it_was(scene, monkeypatch) -> None:
    extraction = SimpleNamespace(video="/clips/bird.mp4", start=0, stop=None, stride=1)
    request = SimpleNamespace(armature=scene.arm.name, rig=scene.rig, frame_start=1, extraction=extraction,
                              armature_to_write=lambda during: (scene.arm, scene.rig))
    motion = random_world_motion(scene.rig, 300, seed=4)
    camera = PinholeCamera.look_at((0.0, -5.0, 1.0), (0.0, 0.0, 1.0), (0.0, 0.0, 1.0), 500.0, (320.0, 240.0))
    task = SimpleNamespace(request=request, motion=lambda result: motion, camera=lambda result: camera)
    before = scene_state()
    fail_on_call(monkeypatch, video, "show_frames", 1)
    with pytest.raises(Broke):
        video.write_result(bpy.context, task, ExtractResult(motion, {}))
    assert scene_state() == before


def test_a_keyed_pose_that_fails_part_way_leaves_pose_and_keys_as_they_were(scene, monkeypatch) -> None:
    """Auto-Keying a sampled pose: the keys go into the user's action at the current frame, then the
    write breaks; the pose and every key come back (new keys at that frame removed, old ones restored)."""
    bpy.context.scene.frame_set(5)
    answer = random_world_motion(scene.rig, 1, seed=7)
    before = scene_state()
    fail_on_call(monkeypatch, pose, "key_pose", 1)
    with pytest.raises(Broke):
        pose.write_answer(bpy.context, scene.arm, scene.rig, answer, key=True)
    assert scene_state() == before


def _weights(vertices: int, joints: int, seed: int) -> WeightSet:
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, joints, size=(vertices, 2))
    weights = np.full((vertices, 2), 0.5)
    mask = np.zeros(vertices, dtype=bool)
    return WeightSet(indices, weights, ~mask, mask, mask, {})


def test_a_bind_that_fails_part_way_leaves_the_meshes_as_they_were(blender, monkeypatch) -> None:
    """The new armature, the pieces' groups, modifiers and parents: all gone again, the first piece's
    too when the second one fails."""
    rig = build_biped()
    skin = capsule_mesh(rig)
    pieces = [_plain_mesh(skin, name) for name in ("scan", "scan eyes")]
    pieces[0].vertex_groups.new(name="user group").add([0, 1, 2], 0.25, "REPLACE")
    count = len(pieces[0].data.vertices)
    result = BindResult("biped", rig, _weights(2 * count, rig.joint_count, 0), "good", {}, {}, "test", 0.0)
    request = bind.BindInput([p.name for p in pieces], [count, count],
                             SimpleNamespace(vertices=np.zeros((2 * count, 3))))
    before = scene_state()
    fail_on_call(monkeypatch, bind, "write_masks", 2)
    with pytest.raises(Broke):
        bind.write_bind(bpy.context, request, result)
    assert scene_state() == before


def test_a_transfer_that_fails_on_its_second_mesh_leaves_both_as_they_were(blender, monkeypatch) -> None:
    rig = build_biped()
    skin = capsule_mesh(rig)
    meshes = [_plain_mesh(skin, f"target {k}") for k in range(2)]
    meshes[0].vertex_groups.new(name=rig.names[0]).add([0, 1], 1.0, "REPLACE")  # replaced by the transfer
    count = len(meshes[0].data.vertices)
    result = TransferResult(list(rig.names), {m.name: _weights(count, rig.joint_count, k)
                                              for k, m in enumerate(meshes)}, "test", 0.0)
    request = bind.TransferInput("source", list(rig.names), [m.name for m in meshes])
    before = scene_state()
    fail_on_call(monkeypatch, bind, "write_masks", 2)
    with pytest.raises(Broke):
        bind.write_transfer(bpy.context, request, result)
    assert scene_state() == before


def _plain_mesh(skin, name: str = "scan") -> bpy.types.Object:
    data = bpy.data.meshes.new(name)
    data.from_pydata(skin.vertices.tolist(), [], skin.triangles.tolist())
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def test_a_change_that_works_is_kept(scene) -> None:
    with SceneChange(bpy.context.scene) as change:
        change.keep_animation(scene.arm)
        write_action(scene.arm, scene.rig, random_world_motion(scene.rig, 4, seed=3), "kept")
    assert scene.arm.animation_data.action.name == "kept"


def test_the_message_of_a_failed_write(blender) -> None:
    assert scene_change.write_failure(scene_io.SceneError("The armature is gone.")) == "The armature is gone."
    text = scene_change.write_failure(KeyError("bone"))
    assert "KeyError" in text and "unchanged" in text


def test_a_take_plays_the_same_whichever_clip_played_before(scene) -> None:
    """Another clip of the rig keys a bone's scale and a free bone's location: the new take keys them at
    rest (before, it played with what that clip left there); channels no clip animates keep the pose."""
    arm = scene.arm
    other = arm.animation_data.action
    bone = arm.pose.bones[scene.free]
    bone.scale = (1.3, 1.3, 1.3)
    bone.keyframe_insert("scale", frame=1)
    bone.keyframe_insert("location", frame=1)
    bpy.context.scene.frame_set(1)  # the other clip leaves its scale and location on the pose
    task, result = generation_task(scene, variants=1)
    generate.write_results(bpy.context, task, result)
    bpy.context.scene.frame_set(3)
    assert tuple(bone.scale) == pytest.approx((1.0, 1.0, 1.0))
    assert tuple(bone.location) == pytest.approx((0.0, 0.0, 0.0))
    assert arm.animation_data.action is not other
