"""Auto-Bind and Transfer Weights end to end, headless: the add-on sends meshes to a CPU backend
(the checkout's .venv Python, one thread) and writes armatures, vertex groups and modifiers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kirin.operators.headless import bind as headless_bind
from kirin.operators.scene_io.mesh import evaluated_mesh_vertices, read_surface, read_vertex_groups

from blender_support import activate, bpy, headless, reported, scene_state

ROOT = Path(__file__).resolve().parents[2]
MODULE = f"bl_ext.{headless.REPO_NAME}.kirin"
MASKS = ("Kirin Rejected", "Kirin Inpainted", "Kirin Fallback")

pytestmark = pytest.mark.skipif(
    not (ROOT / ".venv" / "bin" / "python").is_file(), reason="needs the checkout's .venv (the backend)"
)


def ext(name: str):
    return sys.modules[f"{MODULE}.{name}"]


@pytest.fixture
def kirin(blender):
    prefs = bpy.context.preferences.addons[MODULE].preferences
    prefs.backend_device, prefs.backend_threads = "cpu", 1
    return blender


@pytest.fixture
def creature(kirin):
    arm, meshes = headless.builtin_creature(3)
    return arm, meshes[0]


def posed_vertices(arm, body, seed: int = 0, amount: float = 0.5) -> np.ndarray:
    """The evaluated mesh with every bone turned by a seeded random rotation (world space)."""
    rng = np.random.default_rng(seed)
    for bone in arm.pose.bones:
        bone.rotation_mode = "XYZ"
        bone.rotation_euler = rng.uniform(-amount, amount, 3)
    bpy.context.view_layer.update()
    out = evaluated_mesh_vertices(body, arm) @ np.array(arm.matrix_world)[:3, :3].T
    for bone in arm.pose.bones:
        bone.rotation_euler = (0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    return out


def remeshed_copy(body, name: str = "Remeshed") -> bpy.types.Object:
    """An unweighted copy of `body` whose vertices are new: subdivided once (simple), so every new
    vertex lies on the original surface and most coincide with no original one."""
    data = body.data.copy()
    copy = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(copy)
    copy.matrix_world = body.matrix_world
    copy.vertex_groups.clear()
    modifier = copy.modifiers.new("Subdivide", "SUBSURF")
    modifier.subdivision_type, modifier.levels = "SIMPLE", 1
    activate(copy)
    bpy.ops.object.modifier_apply(modifier=modifier.name)
    return copy


# ----------------------------------------------------------------------------- Transfer Weights
def test_transfer_weights_reskins_a_remeshed_copy(creature):
    arm, body = creature
    target = remeshed_copy(body)
    assert len(target.data.vertices) > len(body.data.vertices)
    target.select_set(True)
    body.select_set(True)
    bpy.context.view_layer.objects.active = body
    report = reported(bpy.ops.kirin.transfer_weights)
    assert report["source"] == body.name and list(report["targets"]) == [target.name]
    assert report["targets"][target.name]["vertices"] == len(target.data.vertices)

    bones = {b.name for b in arm.data.bones}
    groups = {g.name for g in target.vertex_groups}
    assert groups - set(MASKS) <= bones
    assert len(groups & bones) >= len({g.name for g in body.vertex_groups}) - 2
    assert any(m.type == "ARMATURE" and m.object == arm for m in target.modifiers)
    # Same surface: where the copy has the original's vertices (a subdivision keeps them first), it
    # deforms like the original under the same pose.
    source_posed = posed_vertices(arm, body, seed=1)
    target_posed = posed_vertices(arm, target, seed=1)
    corner = target_posed[: len(body.data.vertices)]  # subdivision keeps the original vertices first
    diagonal = np.linalg.norm(np.ptp(read_surface(body)[0], axis=0))
    error = np.linalg.norm(corner - source_posed, axis=-1) / diagonal
    assert error.mean() < 0.002 and error.max() < 0.02, (error.mean(), error.max())


def test_transfer_weights_bad_input_changes_nothing(creature):
    arm, body = creature
    target = remeshed_copy(body)
    bare = bpy.data.objects.new("Bare", bpy.data.meshes.new("Bare"))
    bpy.context.scene.collection.objects.link(bare)
    before = scene_state()
    activate(body)  # no target selected
    with pytest.raises(RuntimeError, match="Select the meshes to re-skin"):
        bpy.ops.kirin.transfer_weights()
    activate(target)  # the source has no weights
    body.select_set(True)
    with pytest.raises(RuntimeError, match="no vertex weights"):
        bpy.ops.kirin.transfer_weights()
    activate(bare)  # an empty source mesh
    target.select_set(True)
    with pytest.raises(RuntimeError, match="'Bare' has no vertex weights"):
        bpy.ops.kirin.transfer_weights()
    assert scene_state() == before


# ----------------------------------------------------------------------------- Auto-Bind
def unrigged(body) -> bpy.types.Object:
    """`body` with its rig taken away (what a sculpt or a scan is)."""
    headless_bind.strip_rig([body])
    return body


def test_auto_bind_makes_a_rig_that_keeps_the_rest_shape_and_moves_the_mesh(creature):
    _, body = creature
    body = unrigged(body)
    rest = read_surface(body)[0]
    activate(body)
    report = reported(bpy.ops.kirin.auto_bind, family="QUADRUPED")
    arm = bpy.data.objects[report["armature"]]
    assert arm.type == "ARMATURE" and body.parent == arm and report["family"] == "quadruped"
    assert report["quality"] in ("good", "fair")
    assert report["method"] == "heat+robust"  # the panel's default: bone heat pulled to the template's
    assert any(m.type == "ARMATURE" and m.object == arm for m in body.modifiers)
    bones = {b.name for b in arm.data.bones}
    assert {g.name for g in body.vertex_groups} - set(MASKS) <= bones
    # At rest the bound mesh is exactly where it was; posed, it moves.
    bpy.context.view_layer.update()
    at_rest = evaluated_mesh_vertices(body, arm)
    assert np.abs(at_rest - rest).max() < 1e-5 * np.ptp(rest, axis=0).max()
    posed = posed_vertices(arm, body, seed=2)
    assert np.abs(posed - rest).max() > 0.01 * np.ptp(rest, axis=0).max()
    # Then Generate Motion drives it.
    activate(arm)
    done = bpy.ops.kirin.generate_motion(prompt="a dog trotting forward", frames=16, variants=1)
    assert done == {"FINISHED"}
    assert arm.animation_data.action.name == "Kirin: a dog trotting forward"


def test_auto_bind_binds_every_selected_piece_to_one_rig(creature):
    """A character in pieces (body, an eye, armour) is bound as one: one fit on all of them, each piece
    skinned to the one new rig; a selected mesh without faces is left out and named. The panel's
    weights are the learned ones here (the shipped network, models/weights/bind/)."""
    _, body = creature
    body = unrigged(body)
    rest = read_surface(body)[0]
    top = rest[np.argmax(rest[:, 2])]  # an eye (or a horn) where the body is highest
    bpy.ops.mesh.primitive_ico_sphere_add(radius=0.02 * np.ptp(rest, axis=0).max(), location=tuple(top))
    eye = bpy.context.active_object
    eye.name = "Eye"
    loose = bpy.data.meshes.new("Points")
    loose.vertices.add(3)
    points = bpy.data.objects.new("Points", loose)
    bpy.context.scene.collection.objects.link(points)
    activate(body)
    eye.select_set(True)
    points.select_set(True)
    bpy.context.scene.kirin.bind_weights = "LEARNED"
    report = reported(bpy.ops.kirin.auto_bind, family="QUADRUPED")
    arm = bpy.data.objects[report["armature"]]
    assert report["meshes"] == [body.name, "Eye"] and report["left_out"] == {"Points": "no faces"}
    assert report["method"] == "learned"
    assert report["vertices"] == len(body.data.vertices) + len(eye.data.vertices)
    for piece in (body, eye):
        assert piece.parent == arm and any(m.type == "ARMATURE" and m.object == arm for m in piece.modifiers)
        names, indices, weights = read_vertex_groups(piece)
        bones = np.isin(indices, [i for i, n in enumerate(names) if n not in MASKS])
        assert np.allclose(np.where(bones, weights, 0.0).sum(axis=1), 1.0, atol=1e-4)
    assert not points.modifiers and points.parent is None and not points.vertex_groups
    # The eye rides on the body: posed, it moves with the body's vertices nearest to it.
    bpy.context.view_layer.update()
    eye_rest = evaluated_mesh_vertices(eye, arm)
    near = np.argsort(np.linalg.norm(rest - eye_rest.mean(axis=0), axis=1))[:20]
    posed_body, posed_eye = posed_vertices(arm, body, seed=4), posed_vertices(arm, eye, seed=4)
    body_move = (posed_body[near] - rest[near]).mean(axis=0)
    eye_move = (posed_eye - eye_rest).mean(axis=0)
    assert np.linalg.norm(eye_move - body_move) < 0.5 * np.linalg.norm(body_move) + 1e-6


def test_auto_bind_undo_and_bad_input(creature):
    arm, body = creature
    before = scene_state()
    activate(body)  # already bound to the creature's armature
    with pytest.raises(RuntimeError, match="already bound"):
        bpy.ops.kirin.auto_bind(family="QUADRUPED")
    activate(arm)  # not a mesh
    assert not bpy.ops.kirin.auto_bind.poll()
    loose = bpy.data.meshes.new("Points")
    loose.vertices.add(3)
    points = bpy.data.objects.new("Points", loose)
    bpy.context.scene.collection.objects.link(points)
    before = scene_state()
    activate(points)  # no faces
    with pytest.raises(RuntimeError, match="no faces"):
        bpy.ops.kirin.auto_bind()
    assert scene_state() == before

    body = unrigged(body)
    activate(body)
    bpy.ops.ed.undo_push(message="before Auto-Bind")
    before = scene_state()
    assert bpy.ops.kirin.auto_bind("EXEC_DEFAULT", True, family="QUADRUPED") == {"FINISHED"}
    assert scene_state() != before
    bpy.ops.ed.undo()
    assert scene_state() == before


def test_show_transfer_mask_opens_weight_paint_on_the_mask(creature):
    arm, body = creature
    target = remeshed_copy(body)
    # Inflate the copy's left half by 3 % of its size: too far from the source (1 %), so inpainted.
    count = len(target.data.vertices)
    co, normal = np.empty(count * 3, np.float32), np.empty(count * 3, np.float32)
    target.data.vertices.foreach_get("co", co)
    target.data.vertices.foreach_get("normal", normal)
    co, normal = co.reshape(-1, 3), normal.reshape(-1, 3)
    left = co[:, 0] > 0.2 * co[:, 0].max()
    co[left] += 0.03 * np.linalg.norm(np.ptp(co, axis=0)) * normal[left]
    target.data.vertices.foreach_set("co", co.ravel())
    target.data.update()
    activate(target)
    body.select_set(True)
    bpy.context.view_layer.objects.active = body
    bpy.context.scene.kirin.max_distance = 0.01
    assert bpy.ops.kirin.transfer_weights() == {"FINISHED"}
    inpainted = target.vertex_groups.get("Kirin Inpainted")
    assert inpainted is not None
    marked = np.array([any(g.group == inpainted.index for g in v.groups) for v in target.data.vertices])
    assert marked[left].mean() > 0.9 and marked[~left].mean() < 0.1
    group = target.vertex_groups.get("Kirin Rejected")
    assert group is not None
    activate(target)
    assert bpy.ops.kirin.show_transfer_mask(mask="REJECTED") == {"FINISHED"}
    assert target.vertex_groups.active.name == "Kirin Rejected"
    bpy.ops.object.mode_set(mode="OBJECT")


# ----------------------------------------------------------------------------- the command line
def test_cli_bind_then_generate(tmp_path):
    out, report = tmp_path / "bound.blend", tmp_path / "bind.json"
    kirin = Path(sys.executable).with_name("kirin")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([str(kirin), "bind", "--template", "quadruped", "--prompt", "a dog walking",
                          "--frames", "16", "--out", str(out), "--json", str(report), "--threads", "1",
                          "--device", "cpu"], capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads(report.read_text())
    assert summary["family"] == "quadruped" and summary["bones"] > 10
    assert summary["rest_matches"] < 1e-4
    assert summary["generated"]["variants"][0]["frames"] == 16
    bpy.ops.wm.open_mainfile(filepath=str(out))
    arm = bpy.data.objects[summary["armature"]]
    assert arm.animation_data.action is not None
    bpy.ops.wm.read_factory_settings(use_empty=True)


SHIBA = ROOT.parent / "shared" / "assets" / "quaternius" / "animals_pack" / "ShibaInu.glb"


@pytest.mark.skipif(not SHIBA.is_file(), reason="needs ../shared/assets")
def test_cli_binds_the_shiba_inus_body(tmp_path):
    """A new user's first try: the dog's body is bound (as a quadruped), not glTF's bone shape."""
    out, report = tmp_path / "shiba.blend", tmp_path / "shiba.json"
    kirin = Path(sys.executable).with_name("kirin")
    run = subprocess.run([str(kirin), "bind", "--mesh", str(SHIBA), "--out", str(out), "--json", str(report),
                          "--threads", "1", "--device", "cpu"], capture_output=True, text=True, timeout=900,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads(report.read_text())
    assert summary["meshes"] == ["ShibaInu"] and summary["left_out"] == {"Icosphere": "a bone's custom shape"}
    assert summary["vertices"] > 3000 and summary["family"] == "quadruped" and summary["quality"] != "poor"
    assert summary["rest_matches"] < 1e-4


# ----------------------------------------------------------------------------- what a file's character is
ASSETS = ROOT.parent / "shared" / "assets"
CHARACTER_FILES = sorted(p for p in ASSETS.rglob("*") if p.suffix.lower() in (".glb", ".gltf", ".fbx")) \
    if ASSETS.is_dir() else []


@pytest.mark.skipif(not CHARACTER_FILES, reason="needs ../shared/assets")
def test_every_artist_file_binds_its_character_and_nothing_else():
    """`kirin bind --mesh FILE` binds what `character_meshes` picks: on every character file in the
    assets, all the meshes its armature deforms (every piece), never a bone's custom shape (glTF's
    importer adds an 'Icosphere' for them: the Shiba Inu's was bound as a 'bird'). Prints the list."""
    listing, wrong = {}, []
    for path in CHARACTER_FILES:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        headless_bind.MESH_IMPORTERS[path.suffix.lower()](str(path))
        objects = list(bpy.data.objects)
        shapes = headless_bind.bone_shapes()
        skinned = {o.name for o in objects if o.type == "MESH" and o.find_armature() is not None
                   and len(o.data.polygons)}
        bound, left_out = headless_bind.character_meshes(objects)
        names = [o.name for o in bound]
        listing[str(path.relative_to(ASSETS))] = {"bound": names, "left_out": left_out}
        if not bound or any(o in shapes for o in bound) or not skinned <= set(names):
            wrong.append((path.name, names, left_out))
        if any(o.type == "MESH" and o not in bound and o.name not in left_out for o in objects):
            wrong.append((path.name, "a mesh neither bound nor reported", names))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    print(json.dumps(listing, indent=1))
    assert not wrong, wrong
    assert listing["quaternius/animals_pack/ShibaInu.glb"] == {
        "bound": ["ShibaInu"], "left_out": {"Icosphere": "a bone's custom shape"}}
    assert len(listing) >= 100
