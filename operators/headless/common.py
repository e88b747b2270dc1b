"""What the headless jobs of the `kirin` command line share: the extension enabled the way a user
enables it, the backend options, imports of character files, the built-in creature, previews, timings
and reports.

Blender runs in-process (the `bpy` module). The extension is enabled the way a user enables it
(as an extension repository), so the command line exercises registration, properties and
operators exactly as the N-panel does.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import addon_utils
import bpy
import numpy as np

from ...kirin_addon.io.scratch import scratch_folder
from ..scene_io.arrays import object_matrix
from ..scene_io.mesh import create_skinned_mesh
from ..scene_io.rig import create_armature, evaluated_pose

REPO_NAME = "kirin_dev"
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class BackendOptions:
    """The add-on's backend preferences a job sets: the Python of the backend environment (None: the
    checkout's .venv), its device and CPU threads (0: its default)."""

    python: str | None = None
    device: str = "auto"
    threads: int = 0


@dataclass
class PreviewOptions:
    """What a job renders besides the .blend: `path` a Cycles preview (.mp4, or a PNG path prefix),
    `still` a PNG of the middle frame; every `step`-th frame at `resolution`."""

    path: str | None = None
    still: str | None = None
    resolution: tuple[int, int] = (480, 270)
    step: int = 2


class Stopwatch:
    """Seconds since the job started, and the named laps of its report's `timings_s`."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.laps: dict[str, float] = {}

    @contextmanager
    def lap(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        yield
        self.laps[name] = time.perf_counter() - began

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def rounded(self) -> dict[str, float]:
        return {name: round(seconds, 3) for name, seconds in self.laps.items()}


def _raise(exc: BaseException) -> None:
    raise exc


def enable_extension(root: Path = ROOT) -> str:
    """Register `root` as a local extension repository and enable Kirin from it; returns the module."""
    parent = scratch_folder("kirin-ext-")  # one per process, removed at exit
    link = parent / "kirin"
    if link.is_symlink() and link.resolve() != Path(root).resolve():
        link.unlink()
    if not link.is_symlink():
        link.symlink_to(root, target_is_directory=True)
    repos = bpy.context.preferences.extensions.repos
    repos.new(name=REPO_NAME, module=REPO_NAME, custom_directory=str(parent), source="USER")
    module = f"bl_ext.{REPO_NAME}.kirin"
    addon_utils.enable(module, default_set=True, handle_error=_raise)
    return module


def run_operator(operator, failure: str, error: type[Exception] = RuntimeError, **options) -> dict:
    """Run one of the extension's backend operators (`bpy.ops.kirin.generate_motion`...) with `options`;
    the report of what it made (operators/backend_task.py: `bpy.ops` answers only {'FINISHED'}, and the
    enabled extension is another copy of this package, so the report comes back as a JSON file named
    here). `error(failure)` when it did not finish (an error it reported raises from `bpy.ops` itself)."""
    with tempfile.TemporaryDirectory(prefix="kirin-report-") as folder:
        path = Path(folder) / "report.json"
        if operator(report_file=str(path), **options) != {"FINISHED"}:
            raise error(failure)
        return json.loads(path.read_text())


def disable_extension(module: str) -> None:
    addon_utils.disable(module, default_set=True, handle_error=_raise)


def start_with_backend(backend: BackendOptions) -> str:
    """A fresh empty Blender with Kirin enabled and its backend preferences set (the Python of the
    backend environment, device, threads); returns the module, for `disable_extension` at the end."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    module = enable_extension()
    try:
        prefs = bpy.context.preferences.addons[module].preferences
        if backend.python:
            prefs.backend_python = os.path.abspath(backend.python)
        prefs.backend_device, prefs.backend_threads = backend.device, backend.threads
    except BaseException:
        disable_extension(module)
        raise
    return module


def _make_parent(path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)


def save_blend(out: str) -> None:
    """Save the scene as the .blend `out` (its folder made if missing)."""
    _make_parent(out)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(out))


def write_report(summary: dict, report: str | None) -> None:
    """Write the job's summary as JSON to `report` (its folder made if missing); None: nowhere."""
    if report:
        _make_parent(report)
        Path(report).write_text(json.dumps(summary, indent=2))


def link_blend_objects(path: str) -> None:
    """Append every object of a .blend file into the scene."""
    with bpy.data.libraries.load(path) as (src, dst):
        dst.objects = list(src.objects)
    for obj in dst.objects:
        if obj is not None:
            bpy.context.scene.collection.objects.link(obj)


def _cycles_light_settings() -> type | None:
    """The light settings class of Cycles (an add-on bundled with Blender); None where it is not enabled."""
    if "cycles" not in bpy.types.Light.bl_rna.properties:
        return None
    from cycles.properties import CyclesLightSettings

    return CyclesLightSettings


def import_fbx(path: str) -> None:
    """Blender's FBX importer. Blender 5.0's sets a Cycles light property 5.0 no longer has
    (`cast_shadow`) and fails on any file with a light (the five of Quaternius' FBX animals pack): the
    property is given back first, unused by anything else."""
    settings = _cycles_light_settings()
    if settings is not None and "cast_shadow" not in settings.bl_rna.properties:
        settings.cast_shadow = bpy.props.BoolProperty(name="Cast Shadow", default=True)
    bpy.ops.import_scene.fbx(filepath=path)


def import_rig_file(path: str) -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """Import a character file (glTF/GLB, FBX, BVH, .blend); returns its armature and skinned meshes."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such file: {path}")
    before = set(bpy.data.objects)
    ext = Path(path).suffix.lower()
    if ext in {".glb", ".gltf"}:
        bpy.ops.import_scene.gltf(filepath=path)
    elif ext == ".fbx":
        import_fbx(path)
    elif ext == ".bvh":
        bpy.ops.import_anim.bvh(filepath=path)
    elif ext == ".blend":
        link_blend_objects(path)
    else:
        raise ValueError(f"Unsupported character file '{ext}' (use .glb, .gltf, .fbx, .bvh or .blend)")
    new = [o for o in bpy.data.objects if o not in before]
    armatures = [o for o in new if o.type == "ARMATURE"]
    if not armatures:
        raise ValueError(f"'{path}' contains no armature.")
    arm = max(armatures, key=lambda o: len(o.data.bones))
    meshes = [o for o in new if o.type == "MESH" and o.find_armature() == arm]
    return arm, meshes


def activate(obj: bpy.types.Object) -> None:
    for other in bpy.context.view_layer.objects:
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj


def builtin_creature(seed: int = 0,
                     family: str = "quadruped") -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """A built-in procedural creature of `family` (rig and skinned mesh made in code) in the scene; the
    quadruped, the default, wears brown fur."""
    from ...kirin_addon.library.families.build import build_creature

    creature = build_creature(family, seed)
    name = f"Kirin {creature.species.title()}"
    arm = create_armature(creature.rig, name)
    body = create_skinned_mesh(creature.mesh, arm, creature.rig, f"{name} Body")
    if family == "quadruped":  # the README's creature; the other families stay as they are made
        body.data.materials.append(_fur(f"{name} Fur"))
    return arm, [body]


def _fur(name: str) -> bpy.types.Material:
    material = bpy.data.materials.new(name)
    if material.node_tree is None and hasattr(material, "use_nodes"):
        material.use_nodes = True  # 4.x; always on in 5.0
    bsdf = material.node_tree.nodes.get("Principled BSDF") if material.node_tree else None
    if bsdf is not None:
        bsdf.inputs["Base Color"].default_value = (0.55, 0.33, 0.16, 1.0)
    material.diffuse_color = (0.55, 0.33, 0.16, 1.0)
    return material


def _motion_bounds(arm: bpy.types.Object, rig, frames: range, others=()) -> tuple[np.ndarray, np.ndarray]:
    scene = bpy.context.scene
    points = []
    for frame in frames:
        scene.frame_set(frame)
        for obj in (arm, *others):
            world = object_matrix(obj)
            heads = evaluated_pose(obj, rig)[:, :3, 3]
            points.append(heads @ world[:3, :3].T + world[:3, 3])
    allp = np.concatenate(points)
    return allp.min(0), allp.max(0)


def setup_preview(arm: bpy.types.Object, rig, path: str, resolution: tuple[int, int] = (480, 270),
                  others=(), direction=(1.0, -0.35, 0.25), follow: bool = False) -> None:
    """Camera beside the motion path, a sun and a floor; Cycles CPU writing an MP4 (or PNGs).
    `others`: more armatures of the same rig to keep in the picture; `direction`: from the motion's
    centre towards the camera; `follow`: frame the characters where they stand at the first frame
    and let the camera travel with `arm`'s root (long paths), instead of framing the whole path."""
    scene = bpy.context.scene
    every = range(scene.frame_start, scene.frame_end + 1, 8)
    path_lo, path_hi = _motion_bounds(arm, rig, every, others)
    lo, hi = _motion_bounds(arm, rig, range(scene.frame_start, scene.frame_start + 1), others) if follow \
        else (path_lo, path_hi)
    centre = (lo + hi) / 2
    extent = float(np.max(hi - lo))
    cam_data = bpy.data.cameras.new("Kirin Preview")
    cam_data.lens = 35
    cam_data.clip_start = extent * 1e-3
    cam_data.clip_end = (extent + float(np.max(path_hi - path_lo))) * 10
    camera = bpy.data.objects.new("Kirin Preview", cam_data)
    scene.collection.objects.link(camera)
    direction = np.array(direction, dtype=np.float64)
    direction /= np.linalg.norm(direction)
    position = centre + direction * extent * (2.0 if follow else 1.6)
    camera.rotation_euler = _look_rotation(centre - position)
    if follow:  # ride along with the root bone (horizontally), offset from where it starts
        scene.frame_set(scene.frame_start)
        main = rig.names[rig.main_root]
        start = np.array(arm.matrix_world @ arm.pose.bones[main].head)
        position[:2] -= start[:2]
        constraint = camera.constraints.new("COPY_LOCATION")
        constraint.target, constraint.subtarget = arm, main
        constraint.use_offset, constraint.use_z = True, False
    camera.location = position
    scene.camera = camera
    sun_data = bpy.data.lights.new("Kirin Sun", "SUN")
    sun_data.energy = 3.0
    sun = bpy.data.objects.new("Kirin Sun", sun_data)
    sun.rotation_euler = (0.7, 0.2, 0.6)
    scene.collection.objects.link(sun)
    floor_mesh = bpy.data.meshes.new("Kirin Floor")
    size = extent * 3 + float(np.max(path_hi - path_lo))
    floor_mesh.from_pydata([(-size, -size, 0), (size, -size, 0), (size, size, 0), (-size, size, 0)], [],
                           [(0, 1, 2, 3)])
    floor = bpy.data.objects.new("Kirin Floor", floor_mesh)
    floor.location = ((path_lo[0] + path_hi[0]) / 2, (path_lo[1] + path_hi[1]) / 2, path_lo[2])
    scene.collection.objects.link(floor)
    world = bpy.data.worlds.new("Kirin World")
    world.color = (0.05, 0.05, 0.06)
    scene.world = world

    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 8
    scene.cycles.use_denoising = False
    scene.render.resolution_x, scene.render.resolution_y = resolution
    scene.render.resolution_percentage = 100
    video_output(scene, path)


def video_output(scene, path: str) -> None:
    """Render to an H.264 MP4 when the path says so, else to numbered PNGs."""
    scene.render.filepath = path
    if path.lower().endswith((".mp4", ".mkv", ".avi")):
        settings = scene.render.image_settings
        if hasattr(settings, "media_type"):  # 5.0 split images and movies
            settings.media_type = "VIDEO"
        settings.file_format = "FFMPEG"
        scene.render.ffmpeg.format = "MPEG4"
        scene.render.ffmpeg.codec = "H264"
        scene.render.ffmpeg.constant_rate_factor = "MEDIUM"
    else:
        scene.render.image_settings.file_format = "PNG"


def _look_rotation(forward: np.ndarray) -> tuple[float, float, float]:
    """Euler XYZ turning a camera (looking down −Z, up +Y) to look along `forward` with +Z up."""
    from mathutils import Vector

    return tuple(Vector(forward).to_track_quat("-Z", "Y").to_euler())


def variants_side_by_side(arm: bpy.types.Object, meshes, rig, actions) -> list[bpy.types.Object]:
    """Copies of the character, one per further variant, beside the first (for the preview only)."""
    scene = bpy.context.scene
    lo, hi = _motion_bounds(arm, rig, range(scene.frame_start, scene.frame_end + 1, 8))
    rest = rig.heads @ object_matrix(arm)[:3, :3].T
    width = np.ptp(rest, axis=0)
    travel = hi - lo
    side = 0 if travel[0] <= travel[1] else 1  # across the direction of travel
    spacing = max(float(width[side]) * 1.6, float(np.max(width)) * 1.1)
    copies = []
    for k, action in enumerate(actions[1:], start=1):
        twin = arm.copy()
        scene.collection.objects.link(twin)
        offset = [0.0, 0.0, 0.0]
        offset[side] = spacing * k
        twin.location = np.array(arm.location) + np.array(offset)
        anim = twin.animation_data
        while len(anim.nla_tracks):
            anim.nla_tracks.remove(anim.nla_tracks[0])
        anim.action = action
        anim.action_slot = action.slots[0]
        for mesh in meshes:
            body = mesh.copy()
            scene.collection.objects.link(body)
            body.parent = twin
            for modifier in body.modifiers:
                if modifier.type == "ARMATURE":
                    modifier.object = twin
        copies.append(twin)
    bpy.context.view_layer.update()
    return copies


def render_animation(scene: bpy.types.Scene, path: str, step: int) -> None:
    """Render every `step`-th frame; the scene's output is already set to `path` (its folder made here)."""
    _make_parent(path)
    scene.frame_step = step
    bpy.ops.render.render(animation=True)


def render_still(scene: bpy.types.Scene, path: str) -> None:
    """Render the scene's middle frame as the PNG `path`."""
    _make_parent(path)
    scene.frame_set((scene.frame_start + scene.frame_end) // 2)
    scene.render.image_settings.file_format = "PNG"
    scene.render.filepath = os.path.abspath(path)
    bpy.ops.render.render(write_still=True)
