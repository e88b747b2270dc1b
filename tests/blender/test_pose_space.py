"""Pose Space in Blender, headless: drag a bone (the modal step driven by synthetic events), Project
Pose, Sample Pose and Walk Between Keys against a CPU backend (the checkout's .venv Python, one
thread) running the shipped pose prior, on the procedural quadruped and on the Khronos Fox."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from kirin.kirin_addon.core.motion import Motion, forward_kinematics
from kirin.kirin_addon.core.rotations import quat_angle, quat_conjugate, quat_from_axis_angle, quat_multiply
from kirin.kirin_addon.pose.space import Skeleton
from kirin.operators.scene_io.action import (
    action_channelbag,
    action_key_frames,
    armature_actions,
    read_action,
)
from kirin.operators.scene_io.arrays import object_matrix
from kirin.operators.scene_io.pose import (
    key_pose,
    read_pose,
    read_pose_channels,
    select_bones,
    write_pose,
    write_pose_channels,
)
from kirin.operators.scene_io.rig import evaluated_pose, read_rig

from assets_support import asset_files
from blender_support import activate, bpy, headless, scene_state

ROOT = Path(__file__).resolve().parents[2]
MODULE = f"bl_ext.{headless.REPO_NAME}.kirin"
KEEP = 0.02  # body sizes: how close kept and pinned heads must stay

needs_backend = pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "python").is_file()
    or not (ROOT / "models" / "weights" / "pose" / "model.json").is_file(),
    reason="needs the checkout's .venv (the backend's environment) and the shipped pose prior",
)


def ext(name: str):
    """A module of the enabled extension (its own copy of the package, with its own backend)."""
    return sys.modules[f"{MODULE}.{name}"]


@pytest.fixture
def kirin(blender):
    prefs = bpy.context.preferences.addons[MODULE].preferences
    prefs.backend_device, prefs.backend_threads = "cpu", 1
    bpy.context.scene.render.fps = 30
    return blender


def pose_mode(arm) -> None:
    activate(arm)
    bpy.ops.object.mode_set(mode="POSE")


@pytest.fixture
def creature(kirin):
    """The procedural quadruped in Pose Mode, its bones in mixed rotation modes."""
    arm, _ = headless.builtin_creature(3)
    pose_mode(arm)
    for k, bone in enumerate(arm.pose.bones):
        bone.rotation_mode = ("QUATERNION", "XYZ", "ZXY", "AXIS_ANGLE")[k % 4]
    return arm


def basis(arm) -> np.ndarray:
    bones = arm.pose.bones
    buf = np.empty(len(bones) * 16, dtype=np.float32)
    bones.foreach_get("matrix_basis", buf)
    return buf.reshape(-1, 4, 4).astype(np.float64)


def heads(arm, rig) -> np.ndarray:
    bpy.context.view_layer.update()
    return evaluated_pose(arm, rig)[:, :3, 3]


def distort(arm, rig, seed: int, amount: float = 1.0) -> None:
    """Turn every non-root bone by a seeded random rotation of up to `amount` radians."""
    rng = np.random.default_rng(seed)
    pose = read_pose(arm, rig)
    turn = quat_from_axis_angle(rng.normal(size=(rig.joint_count, 3)),
                                rng.uniform(0.5, 1.0, rig.joint_count) * amount)
    turn[rig.parents < 0] = (1.0, 0.0, 0.0, 0.0)
    rotations = quat_multiply(pose.rotations[0], turn)[None]
    write_pose(arm, rig, Motion(pose.fps, pose.root_positions, rotations, pose.translations))


def mean_turn(a: Motion, b: Motion) -> float:
    """Mean angle (degrees) between the bones' rotations in two one-frame poses."""
    return float(np.degrees(quat_angle(quat_multiply(a.rotations[0], quat_conjugate(b.rotations[0])))).mean())


def up(arm) -> np.ndarray:
    """World +Z in armature space, of unit length there."""
    vector = np.linalg.inv(object_matrix(arm)[:3, :3]) @ np.array([0.0, 0.0, 1.0])
    return vector / np.linalg.norm(vector)


def feet(arm, rig) -> list[int]:
    """The two lowest end bones (a dragged one and a pin)."""
    ends = [int(j) for j in rig.end_effectors]
    return sorted(ends, key=lambda j: float(rig.heads[j] @ up(arm)))[:2]


def event(kind: str, value: str = "NOTHING", x: float = 0.0, y: float = 0.0):
    return SimpleNamespace(type=kind, value=value, mouse_region_x=x, mouse_region_y=y)


class FakeOperator:
    """What `drag_modal` needs of the operator: the session and `report`."""

    def __init__(self, session):
        self._session = session
        self.reports: list[tuple[set, str]] = []

    def report(self, level, text):
        self.reports.append((level, text))


# ----------------------------------------------------------------------------- registration
def test_operators_tool_and_panel_are_registered(kirin):
    for name in ("pose_space_drag", "project_pose", "sample_pose", "walk_between_keys"):
        op = getattr(bpy.ops.kirin, name)
        assert "Not available yet" not in op.get_rna_type().description
    assert ext("operators.pose_drag")._tool_registered
    from bl_ui.space_toolsystem_common import ToolSelectPanelHelper

    helper = ToolSelectPanelHelper._tool_class_from_space_type("VIEW_3D")
    ids = [getattr(t, "idname", None) for t in helper._tools["POSE"] if t is not None and not callable(t)]
    assert ext("operators.pose_drag").TOOL_ID in ids
    assert hasattr(bpy.types, "KIRIN_PT_pose_space")
    assert hasattr(bpy.context.scene.kirin, "pose_strength") and hasattr(bpy.context.scene.kirin, "pose_seed")


def test_event_mapping():
    from kirin.operators import pose_drag

    act = pose_drag.event_action
    assert act(event("MOUSEMOVE")) == "move"
    assert act(event("LEFTMOUSE", "RELEASE")) == "confirm"
    assert act(event("LEFTMOUSE", "PRESS")) == "confirm"
    assert act(event("RET", "PRESS")) == "confirm"
    assert act(event("ESC", "PRESS")) == "cancel"
    assert act(event("RIGHTMOUSE", "PRESS")) == "cancel"
    assert act(event("ESC", "RELEASE")) is None
    assert act(event("WHEELUPMOUSE", "PRESS")) == "pass"
    assert act(event("G", "PRESS")) is None


# ----------------------------------------------------------------------------- bad input
def test_bad_input_changes_nothing(kirin):
    def refused(operator, match, **kwargs):
        before, poses = scene_state(), {o.name: basis(o) for o in bpy.data.objects if o.type == "ARMATURE"}
        with pytest.raises(RuntimeError, match=match):
            operator(**kwargs)
        assert scene_state() == before
        for name, pose in poses.items():
            assert np.array_equal(basis(bpy.data.objects[name]), pose)

    # No armature at all.
    for op in (bpy.ops.kirin.pose_space_drag, bpy.ops.kirin.project_pose, bpy.ops.kirin.sample_pose,
               bpy.ops.kirin.walk_between_keys):
        assert not op.poll()
        refused(op, "armature")

    arm, _ = headless.builtin_creature(3)
    rig = read_rig(arm)
    activate(arm)
    # Object Mode: dragging and projecting need Pose Mode.
    refused(bpy.ops.kirin.pose_space_drag, "Pose Mode", target=(0.0, 0.0, 1.0))
    refused(bpy.ops.kirin.project_pose, "Pose Mode")
    # No action, then an action with one keyed frame.
    refused(bpy.ops.kirin.walk_between_keys, "no action")
    pose_mode(arm)
    key_pose(arm, rig, 1)
    refused(bpy.ops.kirin.walk_between_keys, "at least 2")
    # No active bone and no bone named.
    arm.data.bones.active = None
    refused(bpy.ops.kirin.pose_space_drag, "No bone to drag", target=(0.0, 0.0, 1.0))
    refused(bpy.ops.kirin.pose_space_drag, "has no bone", bone="no such bone", target=(0.0, 0.0, 1.0))
    # A script's drag without a target.
    refused(bpy.ops.kirin.pose_space_drag, "needs a target", bone=rig.names[0])


# ----------------------------------------------------------------------------- the operators
@needs_backend
def test_project_pose_keeps_selected_heads_and_moves_only_implausible_poses(creature):
    """A plausible pose (one the prior samples) is nearly a fixed point of the projection; a pose
    of random turns is moved a lot: the prior tells them apart. The selected heads stay put."""
    arm = creature
    rig = read_rig(arm)
    kept = feet(arm, rig)
    chosen = np.zeros(rig.joint_count, dtype=bool)
    chosen[kept] = True
    select_bones(arm, rig, chosen)
    changes = {}
    for case in ("plausible", "random turns"):
        if case == "plausible":
            assert bpy.ops.kirin.sample_pose(seed=0) == {"FINISHED"}
        else:
            distort(arm, rig, seed=0)
        before_pose, before_heads = read_pose(arm, rig), heads(arm, rig)
        assert bpy.ops.kirin.project_pose() == {"FINISHED"}
        after_heads = heads(arm, rig)
        error = np.linalg.norm(after_heads[kept] - before_heads[kept], axis=-1) / rig.body_size
        assert error.max() < KEEP, (case, error)
        changes[case] = mean_turn(before_pose, read_pose(arm, rig))
        # Bones keep their lengths (rotations only).
        child = np.flatnonzero(rig.parents >= 0)
        lengths = np.linalg.norm(after_heads[child] - after_heads[rig.parents[child]], axis=-1)
        rest = np.linalg.norm(rig.heads[child] - rig.heads[rig.parents[child]], axis=-1)
        assert np.allclose(lengths, rest, atol=1e-4 * rig.body_size)
    assert changes["random turns"] > 15.0, changes
    assert changes["random turns"] > 3.0 * changes["plausible"], changes


@needs_backend
def test_sample_pose_changes_the_pose_is_undoable_and_keys_with_auto_keying(creature):
    name = creature.name
    bpy.ops.ed.undo_push(message="before Sample Pose")
    arm = bpy.data.objects[name]
    before = basis(arm)
    assert bpy.ops.kirin.sample_pose("EXEC_DEFAULT", True, seed=1) == {"FINISHED"}  # True: push undo
    first = basis(arm)
    assert np.abs(first - before).max() > 1e-2
    assert np.isfinite(first).all()
    bpy.ops.ed.undo()
    arm = bpy.data.objects[name]  # undo reloads the data: references from before are stale
    assert np.abs(basis(arm) - before).max() < 1e-6

    bpy.context.scene.kirin.pose_seed = 2  # the panel's seed when the operator's is unset
    assert bpy.ops.kirin.sample_pose() == {"FINISHED"}
    assert np.abs(basis(arm) - first).max() > 1e-2  # another seed, another pose

    bpy.context.scene.tool_settings.use_keyframe_insert_auto = True
    bpy.context.scene.frame_set(7)
    assert bpy.ops.kirin.sample_pose(seed=3) == {"FINISHED"}
    action = arm.animation_data.action
    assert action is not None
    assert action_key_frames(action, arm).tolist() == [7]
    posed = basis(arm)
    bpy.context.scene.frame_set(1)
    bpy.context.scene.frame_set(7)
    assert np.abs(basis(arm) - posed).max() < 1e-5  # the keys hold the sampled pose


@needs_backend
def test_walk_between_keys_makes_a_new_action_through_the_keys(creature):
    arm = creature
    rig = read_rig(arm)
    keyed = (1, 9, 21)
    key_poses = []
    for k, frame in enumerate(keyed):
        bpy.context.scene.frame_set(frame)
        distort(arm, rig, seed=10 + k, amount=0.5)
        key_pose(arm, rig, frame)
        key_poses.append(basis(arm))
    mine = arm.animation_data.action
    mine.name = "Mine"
    bag = action_channelbag(mine, arm)
    original = {(f.data_path, f.array_index): [tuple(p.co) for p in f.keyframe_points] for f in bag.fcurves}

    ranges, actions = ext("operators.pose_scene").rig_ranges(arm, rig, rig)
    assert actions == 1
    assert bpy.ops.kirin.walk_between_keys() == {"FINISHED"}
    walked = arm.animation_data.action
    assert walked != mine and walked.name == "Mine (pose walk)"
    # Every in-between keeps to the ranges of the armature's actions (here: its three keys).
    assert outside(ranges, rig, read_action(arm, rig, walked)).max() < 0.01
    assert mine.use_fake_user
    bag = action_channelbag(mine, arm)
    assert {(f.data_path, f.array_index): [tuple(p.co) for p in f.keyframe_points] for f in bag.fcurves} \
        == original  # the user's action is untouched
    assert action_key_frames(walked, arm).tolist() == list(range(keyed[0], keyed[-1] + 1))
    assert tuple(walked.frame_range) == (float(keyed[0]), float(keyed[-1]))
    for frame, pose in zip(keyed, key_poses, strict=True):
        bpy.context.scene.frame_set(frame)
        assert np.abs(basis(arm) - pose).max() < 1e-4, frame
    bpy.context.scene.frame_set(5)
    between = heads(arm, rig)
    assert np.isfinite(between).all()

    # The latent walk (ViPS: the keys DDIM-inverted, slerped in the prior's noise), chosen in the panel.
    arm.animation_data.action = mine
    arm.animation_data.action_slot = mine.slots[0]
    bpy.context.scene.kirin.pose_walk_method = "LATENT"
    try:
        assert bpy.ops.kirin.walk_between_keys() == {"FINISHED"}
    finally:
        bpy.context.scene.kirin.pose_walk_method = "GUIDED"
    assert arm.animation_data.action not in (mine, walked)
    for frame, pose in zip(keyed, key_poses, strict=True):
        bpy.context.scene.frame_set(frame)
        assert np.abs(basis(arm) - pose).max() < 1e-4, frame
    bpy.context.scene.frame_set(5)
    latent = heads(arm, rig)
    assert np.isfinite(latent).all() and np.abs(latent - between).max() > 1e-4  # another way through

    # Selected keyframes only: the walk spans the selected ones; one selected frame is not enough.
    arm.animation_data.action = mine
    arm.animation_data.action_slot = mine.slots[0]
    bag = action_channelbag(mine, arm)

    def select(frames):
        for fcurve in bag.fcurves:
            for point in fcurve.keyframe_points:
                point.select_control_point = point.co[0] in frames

    select((9.0,))
    before = scene_state()
    with pytest.raises(RuntimeError, match="select two or more"):
        bpy.ops.kirin.walk_between_keys()
    assert scene_state() == before
    select((9.0, 21.0))
    assert bpy.ops.kirin.walk_between_keys() == {"FINISHED"}
    assert action_key_frames(arm.animation_data.action, arm).tolist() == list(range(9, 22))


@needs_backend
def test_drag_moves_the_bone_keeps_pins_and_escape_restores_exactly(creature):
    arm = creature
    rig = read_rig(arm)
    pose_space, backend_ops = ext("operators.pose_drag"), ext("operators.common")
    dragged, pinned = feet(arm, rig)
    chosen = np.zeros(rig.joint_count, dtype=bool)
    chosen[[dragged, pinned]] = True
    select_bones(arm, rig, chosen)
    start_heads, start_basis = heads(arm, rig), basis(arm)
    start_channels = read_pose_channels(arm)
    size = rig.body_size
    direction = up(arm)

    session = pose_space.DragSession(bpy.context, arm, rig.names[dragged], backend_ops.connect(), None)
    assert session.pins == [pinned]
    # The view: 100 pixels move the head 0.15 body sizes along `direction`.
    session.to_target = lambda x, y: start_heads[dragged] + direction * 0.15 * size * x / 100.0
    op = FakeOperator(session)
    for x in (20.0, 60.0, 100.0):
        assert pose_space.drag_modal(op, bpy.context, event("MOUSEMOVE", x=x)) == {"RUNNING_MODAL"}
    assert session.moves == 3 and session.mesh_key is not None  # the mesh went once, then its key
    target = start_heads[dragged] + direction * 0.15 * size
    now = heads(arm, rig)
    assert np.linalg.norm(now[dragged] - target) < 0.5 * np.linalg.norm(start_heads[dragged] - target)
    assert np.linalg.norm(now[pinned] - start_heads[pinned]) / size < KEEP
    assert "Pose Space Drag" in session.status() and "% of body size" in session.status()
    assert pose_space.drag_modal(op, bpy.context, event("WHEELUPMOUSE", "PRESS")) == {"PASS_THROUGH"}

    assert pose_space.drag_modal(op, bpy.context, event("ESC", "PRESS")) == {"CANCELLED"}
    assert np.abs(basis(arm) - start_basis).max() < 1e-6
    after = read_pose_channels(arm)
    assert all(np.array_equal(after[k], start_channels[k]) for k in start_channels)

    # Confirmed with LMB: the dragged pose stays.
    session = pose_space.DragSession(bpy.context, arm, rig.names[dragged], backend_ops.connect(), None)
    session.to_target = lambda x, y: start_heads[dragged] + direction * 0.1 * size * x / 100.0
    op = FakeOperator(session)
    assert pose_space.drag_modal(op, bpy.context, event("MOUSEMOVE", x=100.0)) == {"RUNNING_MODAL"}
    moved = basis(arm)
    assert pose_space.drag_modal(op, bpy.context, event("LEFTMOUSE", "RELEASE")) == {"FINISHED"}
    assert np.array_equal(basis(arm), moved) and np.abs(moved - start_basis).max() > 1e-3
    assert op._session is None
    assert op.bone == rig.names[dragged] and len(op.target) == 3  # what Redo runs again

    # A backend error mid-drag: the pose goes back, the message says why.
    write_pose_channels(arm, start_channels)
    session = pose_space.DragSession(bpy.context, arm, rig.names[dragged], backend_ops.connect(), None)
    session.to_target = lambda x, y: start_heads[dragged] + direction * 0.1 * size * x / 100.0
    op = FakeOperator(session)
    assert pose_space.drag_modal(op, bpy.context, event("MOUSEMOVE", x=50.0)) == {"RUNNING_MODAL"}

    class Dead:
        def project_pose(self, *args, **kwargs):
            raise ext("kirin_addon.backend.results").BackendError("The Kirin backend stopped.")

    session.client = Dead()
    assert pose_space.drag_modal(op, bpy.context, event("MOUSEMOVE", x=80.0)) == {"CANCELLED"}
    assert np.abs(basis(arm) - start_basis).max() < 1e-6
    assert op.reports and "ERROR" in op.reports[-1][0] and "backend stopped" in op.reports[-1][1]

    # The scripted drag (execute): the head goes towards a world-space target, one undo step.
    world = object_matrix(arm)
    goal = world[:3, :3] @ (start_heads[dragged] + direction * 0.1 * size) + world[:3, 3]
    assert bpy.ops.kirin.pose_space_drag(bone=rig.names[dragged], target=tuple(goal)) == {"FINISHED"}
    reached = world[:3, :3] @ heads(arm, rig)[dragged] + world[:3, 3]
    assert np.linalg.norm(reached - goal) < 0.5 * 0.1 * size * np.linalg.norm(world[:3, 0])


# ----------------------------------------------------------------------------- a real rig
@needs_backend
def test_fox_project_and_drag(kirin):
    files = asset_files("khronos_fox/*.glb")
    if not files:
        pytest.skip("../shared/assets is absent")
    arm, _ = headless.import_rig_file(str(files[0]))
    if arm.animation_data is not None:
        arm.animation_data.action = None  # the file's clips would override the pose
    pose_mode(arm)
    rig = read_rig(arm)
    size = rig.body_size
    distort(arm, rig, seed=3, amount=0.6)
    # glTF imports keep bone `location` offsets in the pose: requests fold them into the rig.
    pose = read_pose(arm, rig)
    assert pose.translations is not None
    held, bare = ext("operators.pose_scene").held_offsets(rig, pose)
    assert bare.translations is None
    assert np.abs(forward_kinematics(held, bare) - forward_kinematics(rig, pose)).max() < 1e-9 * size
    kept = feet(arm, rig)
    chosen = np.zeros(rig.joint_count, dtype=bool)
    chosen[kept] = True
    select_bones(arm, rig, chosen)
    before = heads(arm, rig)
    assert bpy.ops.kirin.project_pose() == {"FINISHED"}
    after = heads(arm, rig)
    assert np.linalg.norm(after[kept] - before[kept], axis=-1).max() / size < KEEP

    start_basis = basis(arm)
    pose_space, backend_ops = ext("operators.pose_drag"), ext("operators.common")
    dragged, pinned = kept
    session = pose_space.DragSession(bpy.context, arm, rig.names[dragged], backend_ops.connect(), None)
    target = after[dragged] + up(arm) * 0.1 * size
    session.to_target = lambda x, y: target
    op = FakeOperator(session)
    assert pose_space.drag_modal(op, bpy.context, event("MOUSEMOVE", x=1.0)) == {"RUNNING_MODAL"}
    now = heads(arm, rig)
    assert np.linalg.norm(now[dragged] - target) < 0.5 * np.linalg.norm(after[dragged] - target)
    assert np.linalg.norm(now[pinned] - after[pinned]) / size < KEEP
    assert pose_space.drag_modal(op, bpy.context, event("RIGHTMOUSE", "PRESS")) == {"CANCELLED"}
    assert np.abs(basis(arm) - start_basis).max() < 1e-6



def outside(limits, rig, motion: Motion) -> np.ndarray:
    """(F,J) radians past `limits` of every joint in every frame of `motion` (its rotations)."""
    bare = Motion(motion.fps, motion.root_positions, motion.rotations)
    deltas = forward_kinematics(rig, bare)[..., :3, :3] @ np.swapaxes(rig.rest_rotations, -1, -2)
    return limits.excess(Skeleton.from_rig(rig), deltas)


@needs_backend
def test_fox_drag_keeps_to_the_ranges_of_its_actions(kirin):
    """The Fox's three clips are its actions: a drag reads their joint ranges (the panel's "Keep to
    the rig's ranges") and keeps the dragged pose inside them far better than without."""
    files = asset_files("khronos_fox/*.glb")
    if not files:
        pytest.skip("../shared/assets is absent")
    arm, _ = headless.import_rig_file(str(files[0]))
    rig = read_rig(arm)
    actions = armature_actions(arm)
    assert len(actions) == 3
    pose_space, backend_ops = ext("operators.pose_drag"), ext("operators.common")
    walk = next(a for a in actions if "Walk" in a.name)
    motion = read_action(arm, rig, walk, frames=action_key_frames(walk, arm))
    arm.animation_data.action = None  # the pose is ours to set
    pose_mode(arm)
    dragged = feet(arm, rig)[0]
    excess = {True: 0.0, False: 0.0}
    for frame in (3, 9):
        write_pose(arm, rig, motion.sliced(frame, frame + 1))
        start = heads(arm, rig)
        for keep in (True, False):
            session = pose_space.DragSession(bpy.context, arm, rig.names[dragged], backend_ops.connect(),
                                             None, keep_ranges=keep)
            request = session.request_rig
            ranges = ext("operators.pose_scene").rig_ranges(arm, rig, request)[0]
            if keep:
                assert session.range_actions == 3 and "within the ranges of 3 action(s)" in session.status()
                assert np.allclose(session.ranges.swing, ranges.swing)
                assert not outside(ranges, request, motion).any()  # they hold every frame of the walk
            else:
                assert session.ranges is None and session.range_actions == 0
            assert session.move(start[dragged] + up(arm) * 0.25 * rig.body_size) is not None
            excess[keep] += float(outside(ranges, request, read_pose(arm, rig)).sum())
            session.restore()
    assert excess[True] < 0.8 * excess[False], excess

    # The ranges follow the keys: one key turned far widens its bone's range.
    before = ext("operators.pose_scene").rig_ranges(arm, rig, request)[0]
    bag = action_channelbag(walk, arm)
    curve = next(c for c in bag.fcurves if c.data_path.endswith("rotation_quaternion") and c.array_index == 1)
    bone = rig.index(curve.data_path.split('"')[1])
    curve.keyframe_points[0].co[1] += 0.8
    curve.update()
    after = ext("operators.pose_scene").rig_ranges(arm, rig, request)[0]
    assert after.swing[bone] + after.twist[bone] > before.swing[bone] + before.twist[bone] + 0.1


def test_ranges_come_only_from_the_bones_an_action_turns(creature):
    arm = creature
    rig = read_rig(arm)
    pose_space = ext("operators.pose_scene")
    assert pose_space.rig_ranges(arm, rig, rig) == (None, 0)  # no action: the prior alone
    joint = int(np.flatnonzero(rig.parents >= 0)[0])
    bone = arm.pose.bones[rig.names[joint]]
    bone.rotation_mode = "QUATERNION"
    for frame, angle in ((1, 0.0), (10, 0.6)):
        bone.rotation_quaternion = (np.cos(angle / 2), np.sin(angle / 2), 0.0, 0.0)  # about the bone's X
        bone.keyframe_insert("rotation_quaternion", frame=frame)
    ranges, actions = pose_space.rig_ranges(arm, rig, rig)
    assert actions == 1
    assert ranges.swing[joint] == pytest.approx(0.6 + np.radians(5.0), abs=0.01)  # swung 0.6 rad, + margin
    assert ranges.twist[joint] == pytest.approx(np.radians(5.0), abs=0.01)
    others = np.arange(rig.joint_count) != joint
    assert (ranges.swing[others] == np.pi).all() and (ranges.twist[others] == np.pi).all()
