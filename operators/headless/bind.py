"""`kirin bind`: Auto-Bind a file's character headless through the same operator a user clicks (its
meshes selected, as a user would: every piece, never a bone's display shape), then optionally Generate
Motion on the new rig, and save a .blend (+ a JSON report naming what was bound and what was left out)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import bpy
import numpy as np

from ..scene_io.arrays import object_matrix
from ..scene_io.mesh import evaluated_mesh_vertices, read_surface
from . import common as headless

MESH_IMPORTERS = {
    ".glb": lambda path: bpy.ops.import_scene.gltf(filepath=path),
    ".gltf": lambda path: bpy.ops.import_scene.gltf(filepath=path),
    ".fbx": headless.import_fbx,
    ".obj": lambda path: bpy.ops.wm.obj_import(filepath=path),
    ".ply": lambda path: bpy.ops.wm.ply_import(filepath=path),
    ".stl": lambda path: bpy.ops.wm.stl_import(filepath=path),
}


def strip_rig(meshes: list[bpy.types.Object]) -> None:
    """Unparent the meshes (keeping where they are), drop their vertex groups and Armature modifiers,
    and delete the armatures: what an unrigged mesh is."""
    armatures = {m.object for o in meshes for m in o.modifiers if m.type == "ARMATURE" and m.object}
    armatures |= {o.parent for o in meshes if o.parent is not None and o.parent.type == "ARMATURE"}
    for obj in meshes:
        world = obj.matrix_world.copy()
        obj.parent = None
        obj.matrix_world = world
        for modifier in [m for m in obj.modifiers if m.type == "ARMATURE"]:
            obj.modifiers.remove(modifier)
        obj.vertex_groups.clear()
    for arm in armatures:
        bpy.data.objects.remove(arm)
    bpy.context.view_layer.update()  # else the view layer still lists the removed objects (as None)


def bone_shapes() -> set[bpy.types.Object]:
    """Objects drawn as bones' custom shapes (glTF's importer adds an 'Icosphere' for them): display
    helpers, never a character's skin."""
    return {bone.custom_shape for arm in bpy.data.objects if arm.type == "ARMATURE"
            for bone in arm.pose.bones if bone.custom_shape is not None}


def character_meshes(objects: list[bpy.types.Object]) -> tuple[list[bpy.types.Object], dict[str, str]]:
    """What of a file's new objects is the character to bind: its meshes with faces, visible, not a
    bone's custom shape, and, where some are rigged (skinned or parented to an armature), those only:
    all pieces of the character (body, eyes, horns, armour), the largest first. And what was left out,
    with why."""
    shapes = bone_shapes()
    meshes = sorted((o for o in objects if o.type == "MESH"), key=lambda o: o.name)
    left_out: dict[str, str] = {}
    kept = []
    for obj in meshes:
        if obj in shapes:
            left_out[obj.name] = "a bone's custom shape"
        elif len(obj.data.polygons) == 0:
            left_out[obj.name] = "no faces"
        elif obj.hide_render or obj.hide_viewport:
            left_out[obj.name] = "hidden"
        else:
            kept.append(obj)
    rigged = [o for o in kept if o.find_armature() is not None
              or (o.parent is not None and o.parent.type == "ARMATURE")]
    if rigged:
        for obj in kept:
            if obj not in rigged:
                left_out[obj.name] = "not part of the rigged character"
        kept = rigged
    kept.sort(key=lambda o: -len(o.data.vertices))
    return kept, left_out


def import_mesh(path: str | None, creature_seed: int = 0) -> tuple[list[bpy.types.Object], dict[str, str]]:
    """The meshes to bind, the body first (`character_meshes`: rig and weights stripped), and those of
    the file left out with why; or the built-in procedural creature's body without its rig."""
    before = set(bpy.data.objects)
    if path is None:
        _, meshes = headless.builtin_creature(creature_seed)
        left_out: dict[str, str] = {}
    else:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"No such file: {path}")
        ext = Path(path).suffix.lower()
        if ext == ".blend":
            headless.link_blend_objects(path)
        elif ext in MESH_IMPORTERS:
            MESH_IMPORTERS[ext](path)
        else:
            known = ", ".join(sorted(MESH_IMPORTERS))
            raise ValueError(f"Unsupported mesh file '{ext}' (use {known} or .blend)")
        meshes, left_out = character_meshes([o for o in bpy.data.objects if o not in before])
    if not meshes:
        raise ValueError(f"'{path}' contains no mesh to bind"
                         + (f" (left out: {', '.join(f'{k}: {v}' for k, v in left_out.items())})." if left_out
                            else "."))
    strip_rig(meshes)
    return meshes, left_out


@dataclass
class BindJob:
    """Auto-Bind `mesh_file` (None: the built-in creature of `creature_seed`'s body) from `template`
    (None: detected), with `weights` and the weight transfer `method`, at most `max_influences` bones a
    vertex; then Generate Motion with `prompt` (if given) for `frames` frames."""

    out: str
    mesh_file: str | None = None
    template: str | None = None
    method: str = "robust"
    weights: str = "blend"
    max_influences: int = 4
    prompt: str | None = None
    frames: int = 48
    creature_seed: int = 0
    report: str | None = None
    backend: headless.BackendOptions = field(default_factory=headless.BackendOptions)


def _generate_on(arm: bpy.types.Object, prompt: str, frames: int) -> dict:
    """Generate Motion (one variant) on the new rig; what of the run the report keeps."""
    headless.activate(arm)
    run = headless.run_operator(bpy.ops.kirin.generate_motion,
                                "Generate Motion on the bound mesh failed; Blender printed the reason.",
                                prompt=prompt, frames=frames, variants=1)
    return {k: run[k] for k in ("device", "seconds_model", "variants")}


def run_bind(job: BindJob) -> dict:
    """Auto-Bind the job's mesh (or the built-in creature's body) from its template (None: detected),
    then Generate Motion with its prompt if given; save the .blend and return (and write) a report."""
    clock = headless.Stopwatch()
    module = headless.start_with_backend(job.backend)
    try:
        with clock.lap("load_mesh"):
            meshes, left_out = import_mesh(os.path.abspath(job.mesh_file) if job.mesh_file else None,
                                           job.creature_seed)
        settings = bpy.context.scene.kirin
        settings.weight_method, settings.max_influences = job.method.upper(), job.max_influences
        settings.bind_weights = job.weights.upper()
        with clock.lap("auto_bind"):
            headless.activate(meshes[0])
            for obj in meshes[1:]:
                obj.select_set(True)
            summary = headless.run_operator(bpy.ops.kirin.auto_bind,
                                            "Auto-Bind failed; Blender printed the reason above.",
                                            family=(job.template or "auto").upper())
        summary["left_out"] = {**left_out, **summary.get("left_out", {})}
        arm = bpy.data.objects[summary["armature"]]
        if job.prompt:
            with clock.lap("generate"):
                summary["generated"] = _generate_on(arm, job.prompt, job.frames)
        headless.save_blend(job.out)
        summary.update({"mesh_file": os.path.abspath(job.mesh_file) if job.mesh_file else "built-in creature",
                        "blend": os.path.abspath(job.out), "seconds_total": round(clock.elapsed(), 3),
                        "timings_s": clock.rounded(),
                        "rest_matches": max(_rest_matches(obj, arm) for obj in meshes)})
    finally:
        headless.disable_extension(module)
    headless.write_report(summary, job.report)
    return summary


def _rest_matches(body: bpy.types.Object, arm: bpy.types.Object) -> float:
    """Largest distance between the bound mesh at the rig's rest pose and the mesh as it was (0 when
    binding changed nothing about the mesh's shape), in scene units."""
    bpy.context.scene.frame_set(bpy.context.scene.frame_start)
    saved = arm.data.pose_position
    arm.data.pose_position = "REST"
    bpy.context.view_layer.update()
    deformed = evaluated_mesh_vertices(body, arm)
    arm.data.pose_position = saved
    rest, _ = read_surface(body, np.linalg.inv(object_matrix(arm)))
    return float(np.abs(deformed - rest).max())
