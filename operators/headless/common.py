"""Headless jobs for the `kirin` command line, run through the same operators a user clicks.

Blender runs in-process (the `bpy` module). The extension is enabled the way a user enables it
(as an extension repository), so the command line exercises registration, properties and
operators exactly as the N-panel does.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import addon_utils
import bpy
import numpy as np

from ...kirin_addon.io.bvh import frame_rate
from ...kirin_addon.io.clip import save_clip
from ...kirin_addon.library.procedural import default_retarget_pair
from .. import scene_io

REPO_NAME = "kirin_dev"
ROOT = Path(__file__).resolve().parents[2]


def _raise(exc: BaseException) -> None:
    raise exc


def enable_extension(root: Path = ROOT) -> str:
    """Register `root` as a local extension repository and enable Kirin from it; returns the module."""
    parent = Path(tempfile.mkdtemp(prefix="kirin-ext-"))
    (parent / "kirin").symlink_to(root, target_is_directory=True)
    repos = bpy.context.preferences.extensions.repos
    repos.new(name=REPO_NAME, module=REPO_NAME, custom_directory=str(parent), source="USER")
    module = f"bl_ext.{REPO_NAME}.kirin"
    addon_utils.enable(module, default_set=True, handle_error=_raise)
    return module


def disable_extension(module: str) -> None:
    addon_utils.disable(module, default_set=True, handle_error=_raise)


def start_with_backend(backend_python: str | None, device: str, threads: int) -> str:
    """A fresh empty Blender with Kirin enabled and its backend preferences set (the Python of the
    backend environment, device, threads); returns the module, for `disable_extension` at the end."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    module = enable_extension()
    try:
        prefs = bpy.context.preferences.addons[module].preferences
        if backend_python:
            prefs.backend_python = os.path.abspath(backend_python)
        prefs.backend_device, prefs.backend_threads = device, threads
    except BaseException:
        disable_extension(module)
        raise
    return module


def link_blend_objects(path: str) -> None:
    """Append every object of a .blend file into the scene."""
    with bpy.data.libraries.load(path) as (src, dst):
        dst.objects = list(src.objects)
    for obj in dst.objects:
        if obj is not None:
            bpy.context.scene.collection.objects.link(obj)


def import_rig_file(path: str) -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """Import a character file (glTF/GLB, FBX, BVH, .blend); returns its armature and skinned meshes."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such file: {path}")
    before = set(bpy.data.objects)
    ext = Path(path).suffix.lower()
    if ext in {".glb", ".gltf"}:
        bpy.ops.import_scene.gltf(filepath=path)
    elif ext == ".fbx":
        bpy.ops.import_scene.fbx(filepath=path)
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


def _motion_bounds(arm: bpy.types.Object, rig, frames: range, others=()) -> tuple[np.ndarray, np.ndarray]:
    scene = bpy.context.scene
    points = []
    for frame in frames:
        scene.frame_set(frame)
        for obj in (arm, *others):
            world = scene_io.object_matrix(obj)
            heads = scene_io.evaluated_pose(obj, rig)[:, :3, 3]
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
    _video_output(scene, path)


def _video_output(scene, path: str) -> None:
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


def run_retarget(source: str | None, target: str | None, out: str, preview: str | None = None,
                 report: str | None = None, clip: str | None = None, preview_step: int = 2,
                 preview_resolution: tuple[int, int] = (480, 270), fps: int = 30) -> dict:
    """Retarget `source` onto `target` (or the built-in default pair) and save a .blend (+ preview)."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    module = enable_extension()
    timings["start_blender"] = time.perf_counter() - t0
    try:
        t = time.perf_counter()
        if target:
            arm, meshes = import_rig_file(os.path.abspath(target))
        else:
            _, _, target_rig, mesh = default_retarget_pair()
            arm = scene_io.create_armature(target_rig, "Kirin Character")
            meshes = [scene_io.create_skinned_mesh(mesh, arm, target_rig, "Kirin Character Body")]
        if source:
            source_path = os.path.abspath(source)
        else:
            source_rig, motion, _, _ = default_retarget_pair()
            source_path = os.path.join(tempfile.mkdtemp(prefix="kirin-"), "kirin_walk.npz")
            save_clip(source_path, source_rig, motion, captions=["a person walking forward"],
                      metadata={"name": "Kirin walk"})
        timings["load_target"] = time.perf_counter() - t

        activate(arm)
        bpy.context.scene.render.fps = fps
        t = time.perf_counter()
        result = bpy.ops.kirin.apply_motion_file(filepath=source_path, clip=clip or "")
        timings["retarget_and_write_action"] = time.perf_counter() - t
        if result != {"FINISHED"}:
            raise RuntimeError("Applying the motion failed; Blender printed the reason above.")
        rig = scene_io.read_rig(arm)
        action = arm.animation_data.action
        scene = bpy.context.scene
        if preview:
            setup_preview(arm, rig, os.path.abspath(preview), preview_resolution)
        os.makedirs(os.path.dirname(os.path.abspath(out)) or ".", exist_ok=True)
        t = time.perf_counter()
        bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(out))
        timings["save_blend"] = time.perf_counter() - t
        if preview:
            t = time.perf_counter()
            os.makedirs(os.path.dirname(os.path.abspath(preview)) or ".", exist_ok=True)
            scene.frame_step = preview_step
            bpy.ops.render.render(animation=True)
            timings["render_preview"] = time.perf_counter() - t
        summary = {
            "source": source_path,
            "target": os.path.abspath(target) if target else "built-in character",
            "armature": arm.name,
            "action": action.name,
            "frames": int(scene.frame_end - scene.frame_start + 1),
            "fps": scene.render.fps / scene.render.fps_base,
            "bones": rig.joint_count,
            "mapped_bones": sum(bool(i.source) for i in arm.kirin.joint_map) or None,
            "meshes": [m.name for m in meshes],
            "blend": os.path.abspath(out),
            "preview": os.path.abspath(preview) if preview else None,
            "timings_s": {k: round(v, 3) for k, v in timings.items()},
        }
    finally:
        disable_extension(module)
    if report:
        Path(report).write_text(json.dumps(summary, indent=2))
    return summary


def builtin_creature(seed: int = 0) -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """The built-in procedural quadruped (rig and skinned mesh made in code) in the scene."""
    from ...kirin_addon.library.families import build_creature

    creature = build_creature("quadruped", seed)
    name = f"Kirin {creature.species.title()}"
    arm = scene_io.create_armature(creature.rig, name)
    body = scene_io.create_skinned_mesh(creature.mesh, arm, creature.rig, f"{name} Body")
    material = bpy.data.materials.new(f"{name} Fur")
    if material.node_tree is None and hasattr(material, "use_nodes"):
        material.use_nodes = True  # 4.x; always on in 5.0
    bsdf = material.node_tree.nodes.get("Principled BSDF") if material.node_tree else None
    if bsdf is not None:
        bsdf.inputs["Base Color"].default_value = (0.55, 0.33, 0.16, 1.0)
    material.diffuse_color = (0.55, 0.33, 0.16, 1.0)
    body.data.materials.append(material)
    return arm, [body]


def variants_side_by_side(arm: bpy.types.Object, meshes, rig, actions) -> list[bpy.types.Object]:
    """Copies of the character, one per further variant, beside the first (for the preview only)."""
    scene = bpy.context.scene
    lo, hi = _motion_bounds(arm, rig, range(scene.frame_start, scene.frame_end + 1, 8))
    rest = rig.heads @ scene_io.object_matrix(arm)[:3, :3].T
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


def run_generate(rig_file: str | None, prompt: str, out: str, image: str | None = None, frames: int = 96,
                 variants: int = 3, seed: int = 0, guidance: float = 0.0, loop: bool = False,
                 preview: str | None = None, report: str | None = None, fps: int = 30,
                 preview_step: int = 2, preview_resolution: tuple[int, int] = (480, 270),
                 backend_python: str | None = None, device: str = "auto", threads: int = 0,
                 creature_seed: int = 0, still: str | None = None) -> dict:
    """Generate Motion on `rig_file` (or the built-in creature) through the operator; save a .blend
    (+ a preview of the variants side by side, and/or a still PNG of its middle frame, + a JSON report)."""
    import sys

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    module = start_with_backend(backend_python, device, threads)
    timings["start_blender"] = time.perf_counter() - t0
    generate = sys.modules[f"{module}.operators.generate"]
    try:
        t = time.perf_counter()
        if rig_file:
            arm, meshes = import_rig_file(os.path.abspath(rig_file))
        else:
            arm, meshes = builtin_creature(creature_seed)
        timings["load_rig"] = time.perf_counter() - t
        activate(arm)
        scene = bpy.context.scene
        scene.render.fps, scene.render.fps_base = fps, 1.0
        scene.frame_start = 1
        t = time.perf_counter()
        result = bpy.ops.kirin.generate_motion(prompt=prompt, image=image or "", frames=frames,
                                               variants=variants, seed=seed, guidance=guidance, loop=loop)
        timings["generate"] = time.perf_counter() - t
        if result != {"FINISHED"}:
            raise RuntimeError("Generate Motion failed; Blender printed the reason above.")
        seconds_to_first_action = time.perf_counter() - t0
        run = dict(generate.last_run)
        rig = scene_io.read_rig(arm)
        os.makedirs(os.path.dirname(os.path.abspath(out)) or ".", exist_ok=True)
        t = time.perf_counter()
        bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(out))
        timings["save_blend"] = time.perf_counter() - t
        if preview or still:
            t = time.perf_counter()
            actions = [bpy.data.actions[v["action"]] for v in run["variants"]]
            copies = variants_side_by_side(arm, meshes, rig, actions)
            # Several variants stand in a row across the direction of travel: look from higher up.
            view = (1.0, -0.8, 0.7) if copies else (1.0, -0.35, 0.25)
            setup_preview(arm, rig, os.path.abspath(preview or still), preview_resolution, others=copies,
                          direction=view, follow=True)
            if still:
                os.makedirs(os.path.dirname(os.path.abspath(still)) or ".", exist_ok=True)
                scene.frame_set((scene.frame_start + scene.frame_end) // 2)
                scene.render.image_settings.file_format = "PNG"
                scene.render.filepath = os.path.abspath(still)
                bpy.ops.render.render(write_still=True)
            if preview:
                os.makedirs(os.path.dirname(os.path.abspath(preview)) or ".", exist_ok=True)
                _video_output(scene, os.path.abspath(preview))
                scene.frame_step = preview_step
                bpy.ops.render.render(animation=True)
            timings["render_preview"] = time.perf_counter() - t
        summary = {
            "device": run["device"],
            "seconds_total": round(time.perf_counter() - t0, 3),
            "seconds_to_first_action": round(seconds_to_first_action, 3),
            "seconds_model": round(run["seconds_model"], 3),
            "prompt": prompt,
            "image": os.path.abspath(image) if image else None,
            "rig": os.path.abspath(rig_file) if rig_file else "built-in creature",
            "armature": arm.name,
            "bones": rig.joint_count,
            "meshes": [m.name for m in meshes],
            "fps": fps,
            "variants": [
                {k: v.get(k) for k in ("action", "frames", "seed", "foot_skating", "jitter", "penetration",
                                       "bone_length_error", "within_bounds", "retrieved")}
                for v in run["variants"]
            ],
            "bounds": run.get("bounds"),
            "blend": os.path.abspath(out),
            "preview": os.path.abspath(preview) if preview else None,
            "still": os.path.abspath(still) if still else None,
            "timings_s": {k: round(v, 3) for k, v in timings.items()},
        }
    finally:
        disable_extension(module)
    if report:
        os.makedirs(os.path.dirname(os.path.abspath(report)) or ".", exist_ok=True)
        Path(report).write_text(json.dumps(summary, indent=2))
    return summary


def _bvh_fps(path: Path) -> float:
    """Blender's BVH importer keys one frame per BVH frame; the rate is in the file."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.strip().lower().startswith("frame time"):
                return frame_rate(float(line.split(":")[1]))
    raise ValueError(f"{path.name}: no 'Frame Time' line.")


def world_motion(motion, world: np.ndarray):
    """The motion of a rig moved by the similarity `world`: root path moved, local moves scaled."""
    from ...kirin_addon.core.motion import Motion

    scale = float(np.cbrt(np.linalg.det(world[:3, :3])))
    root = motion.root_positions @ world[:3, :3].T + world[:3, 3]
    moved = None if motion.translations is None else motion.translations * scale
    return Motion(motion.fps, root, motion.rotations, moved)


def armature_actions(arm: bpy.types.Object) -> list:
    """Actions that animate this armature's bones (as left by an importer)."""
    found = []
    for action in bpy.data.actions:
        bag = scene_io.action_channelbag(action, arm)
        if bag is not None and any(fc.data_path.startswith("pose.bones") for fc in bag.fcurves):
            found.append(action)
    return found


def run_ingest(folder: str, out: str, captions_csv: str | None = None, fps: float | None = 30.0,
               test_rigs: tuple[str, ...] = (), seed: int = 0) -> dict:
    """Import every BVH/glTF/FBX under `folder` with Blender's importers and write one clip per
    action (resampled to `fps`; None keeps each file's rate), captioned from the CSV and/or species +
    action name."""
    from ...kirin_addon.library import ingest

    table = ingest.CaptionTable.read(captions_csv) if captions_csv else ingest.CaptionTable()
    files = sorted(p for p in Path(folder).rglob("*") if p.suffix.lower() in ingest.INGEST_EXTENSIONS)
    if not files:
        raise ValueError(f"No BVH, glTF or FBX files under {folder}.")
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    written, skipped = [], []
    for index, path in enumerate(files):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        try:
            arm, _ = import_rig_file(str(path))
            rig = scene_io.read_rig(arm)
        except (ValueError, RuntimeError) as exc:
            skipped.append({"file": path.name, "reason": str(exc)})
            continue
        scene = bpy.context.scene
        scene_fps = scene.render.fps / scene.render.fps_base
        source_fps = _bvh_fps(path) if path.suffix.lower() == ".bvh" else scene_fps
        species = table.species.get(path.stem) or ingest.species_from_file(path)
        family = table.family.get(path.stem) or ingest.guess_family(rig, scene_io.object_matrix(arm))
        split = "test" if path.stem in test_rigs else "train"
        actions = armature_actions(arm)
        # Clips are stored in Blender's world axes (Z-up), whatever the armature object's turn.
        world = scene_io.object_matrix(arm)
        world_rig = rig.transformed(world)
        if not actions:
            skipped.append({"file": path.name, "reason": "no animation"})
        for action in actions:
            motion = world_motion(scene_io.read_action(arm, rig, action, fps=source_fps), world)
            if motion.frame_count < 2:
                skipped.append({"file": path.name, "action": action.name, "reason": "a single frame"})
                continue
            label = ingest.clip_label(action.name)
            if fps:
                motion = motion.resampled(fps)
            clip_path = ingest.write_ingested_clip(
                out_dir, path, action.name, world_rig, motion, species, family, split,
                table.for_clip(path.stem, label), seed + index)
            written.append({"clip": clip_path.name, "file": path.name, "action": action.name,
                            "species": species, "family": family, "split": split,
                            "frames": motion.frame_count, "frame_start": int(action.frame_range[0])})
        print(f"[{index + 1}/{len(files)}] {path.name}: {len(actions)} clips", flush=True)
    return {"clips": written, "skipped": skipped, "out": str(out_dir.resolve())}


def encode_frames(frame_dir: str, out: str, fps: int = 30) -> str:
    """Encode frame_*.png (one size) into an MP4 with Blender's sequencer and FFmpeg."""
    frames = sorted(Path(frame_dir).glob("frame_*.png"))
    if not frames:
        raise ValueError(f"No frames in {frame_dir}.")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    editor = scene.sequence_editor_create()
    strip = editor.strips.new_image("grid", str(frames[0]), 1, 1)
    for frame in frames[1:]:
        strip.elements.append(frame.name)
    from ...kirin_addon.library.render import read_png

    height, width, _ = read_png(frames[0]).shape
    scene.render.resolution_x, scene.render.resolution_y = width, height
    scene.render.resolution_percentage = 100
    scene.render.fps = fps
    scene.frame_start, scene.frame_end = 1, len(frames)
    scene.view_settings.view_transform = "Standard"
    _video_output(scene, os.path.abspath(out))
    bpy.ops.render.render(animation=True)
    return os.path.abspath(out)


def run_preview(library: str, out: str, count: int = 9, frames: int = 90, cell: int = 160) -> dict:
    """`kirin data preview`: a grid of clips of a library folder rendered into an MP4."""
    from ...kirin_addon.io.clip import find_clips
    from ...kirin_addon.library.preview import pick_clips, render_grid_frames

    paths = find_clips(library)
    if not paths:
        raise ValueError(f"No clips (.npz) under {library}.")
    chosen = pick_clips(paths, count)
    frame_dir = Path(tempfile.mkdtemp(prefix="kirin-grid-"))
    n = render_grid_frames(chosen, frame_dir, cell=cell, frames=frames)
    video = encode_frames(str(frame_dir), out)
    return {"video": video, "frames": n, "clips": [str(p) for p in chosen]}
